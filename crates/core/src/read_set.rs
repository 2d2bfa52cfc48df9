//! What a host that reads from an API server must read for a run under these settings: the
//! kubeconfig Secrets each source takes (as label selectors), in which namespaces, the Argo CD
//! namespace, whether Cluster API's Clusters and SIG Multicluster's ClusterProfiles matter — so a controller watches what the plan
//! will look at, and nothing it would drop.

use crate::config::Config;
use crate::run::{Options, RunError, function_config_override};
use crate::sources::{Kind, Source};

/// What to read for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSet {
    /// The namespace of Argo CD's cluster Secrets: every Secret there is read.
    pub argo_namespace: String,
    /// The kubeconfig Secrets, as label selectors (`key`, `key=value`, comma between them), one
    /// per distinct selector of the sources; an empty selector reads every Secret.
    pub secret_selectors: Vec<String>,
    /// The namespaces the kubeconfig Secrets and Clusters are read in (`allowedNamespaces`);
    /// `None`: all.
    pub namespaces: Option<Vec<String>>,
    /// Whether a source reads Cluster API's Clusters beside its Secrets.
    pub clusters: bool,
    /// How many days before a certificate stops being valid the function warns of it.
    pub expiry_days: u32,
    /// Whether Argo CD's ApplicationSets and Applications (in the Argo CD namespace) and its
    /// `argocd-cmd-params-cm` are read too (`readApplications`).
    pub applications: bool,
    /// Whether SIG Multicluster's ClusterProfiles (`multicluster.x-k8s.io` v1alpha1 and v1alpha2, in
    /// `namespaces`) are read: the `clusterprofile` source.
    pub profiles: bool,
}

/// What to read for a run with these options (the functionConfig and `--set` settings of a
/// run; the input's own functionConfig is not consulted).
pub fn read_set(options: &Options) -> Result<ReadSet, RunError> {
    let fc = function_config_override(options)?;
    let config =
        Config::from_parts(fc.as_ref(), &options.overrides, &options.limits).map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            RunError::FunctionConfig(lines.join("\n"))
        })?;
    let mut selectors: Vec<String> = Vec::new();
    // A ClusterProfile source reads no Secret.
    for source in config.sources.iter().filter(|s| s.kind == Kind::Secrets) {
        let selector = selector(source);
        if !selectors.contains(&selector) {
            selectors.push(selector);
        }
    }
    // Every Secret read already holds every labelled one.
    if selectors.iter().any(String::is_empty) {
        selectors = vec![String::new()];
    }
    Ok(ReadSet {
        argo_namespace: config.argo_namespace.clone(),
        secret_selectors: selectors,
        namespaces: config.allowed_namespaces.clone(),
        clusters: config.sources.iter().any(|s| s.reads.clusters),
        expiry_days: config.policy.expiry_days,
        applications: config.read_applications,
        profiles: config.reads_profiles(),
    })
}

/// The labels every Secret of a source carries: those all its shapes ask for, and those its
/// settings narrow it to.
fn selector(source: &Source) -> String {
    let Some((first, rest)) = source.shapes.split_first() else {
        return String::new();
    };
    let mut labels: Vec<String> = first
        .labels
        .iter()
        .filter(|l| rest.iter().all(|s| s.labels.contains(l)))
        .chain(&source.narrowed_to)
        .map(ToString::to_string)
        .collect();
    labels.dedup();
    labels.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(overrides: &[&str]) -> ReadSet {
        let options = Options {
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        };
        read_set(&options).expect("settings are valid")
    }

    #[test]
    fn the_default_reads_cluster_apis_labelled_secrets_and_its_clusters() {
        let set = reads(&[]);
        assert_eq!(set.argo_namespace, "argocd");
        assert_eq!(set.secret_selectors, ["cluster.x-k8s.io/cluster-name"]);
        assert_eq!(set.namespaces, None);
        assert!(set.clusters);
        assert!(!set.applications);
        assert!(reads(&["readApplications=true"]).applications);
    }

    #[test]
    fn a_source_without_a_label_reads_every_secret() {
        let set = reads(&["sources=capi,crossplane"]);
        assert_eq!(set.secret_selectors, [""]);
    }

    #[test]
    fn labels_that_narrow_a_preset_narrow_its_selector() {
        let options = Options {
            function_config: Some(
                "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: c\nspec:\n  sources:\n  - preset: capi\n    labels:\n      team: blue\n".into(),
            ),
            overrides: vec!["allowedNamespaces=fleet-a,fleet-b".into()],
            ..Options::default()
        };
        let set = read_set(&options).expect("settings are valid");
        assert_eq!(
            set.secret_selectors,
            ["cluster.x-k8s.io/cluster-name,team=blue"]
        );
        assert_eq!(
            set.namespaces,
            Some(vec!["fleet-a".into(), "fleet-b".into()])
        );
    }

    #[test]
    fn cluster_profiles_are_read_beside_secrets_and_never_widen_them() {
        let set = reads(&["sources=clusterprofile"]);
        assert!(set.profiles);
        assert_eq!(set.secret_selectors, Vec::<String>::new());
        let set = reads(&["sources=capi,clusterprofile"]);
        assert!(set.profiles);
        assert_eq!(set.secret_selectors, ["cluster.x-k8s.io/cluster-name"]);
        assert!(!reads(&[]).profiles);
    }

    #[test]
    fn bad_settings_are_refused() {
        let options = Options {
            overrides: vec!["maxPrune=lots".into()],
            ..Options::default()
        };
        assert!(read_set(&options).is_err());
    }
}
