//! What a host that reads from an API server must read for a run under these settings: a list
//! of reads, each a resource type (group, the versions the core reads, kind), where (the
//! namespaces), which objects (a label selector, or one name) and whether the server may not
//! serve it yet — so a controller watches what the plan will look at, and nothing it would drop.

use crate::appsets::CMD_PARAMS;
use crate::config::Config;
use crate::run::{Options, RunError, function_config_override};
use crate::sources::{Kind, Source};

/// A resource type a host reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    /// Its API group (`""`: the core group).
    pub group: &'static str,
    /// The versions the core reads, the one to prefer first; empty: any, the one the server
    /// prefers (the core reads every version the project has served).
    pub versions: &'static [&'static str],
    /// Its kind.
    pub kind: &'static str,
    /// Its resource name (the URL's plural).
    pub plural: &'static str,
}

impl Resource {
    /// `plural.group`, as kubectl names it (`secrets` for the core group).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Secrets: the kubeconfig Secrets, and Argo CD's.
pub const SECRETS: Resource = Resource {
    group: "",
    versions: &["v1"],
    kind: "Secret",
    plural: "secrets",
};
/// ConfigMaps: Argo CD's `argocd-cmd-params-cm`.
pub const CONFIG_MAPS: Resource = Resource {
    group: "",
    versions: &["v1"],
    kind: "ConfigMap",
    plural: "configmaps",
};
/// Cluster API's Clusters, in whichever version the server prefers (v1beta1 or v1beta2: the
/// core reads both).
pub const CLUSTERS: Resource = Resource {
    group: "cluster.x-k8s.io",
    versions: &[],
    kind: "Cluster",
    plural: "clusters",
};
/// SIG Multicluster's ClusterProfiles, in the newest version the core reads that the server
/// serves.
pub const CLUSTER_PROFILES: Resource = Resource {
    group: crate::profiles::GROUP,
    versions: &["v1alpha2", "v1alpha1"],
    kind: crate::profiles::KIND,
    plural: "clusterprofiles",
};
/// Argo CD's ApplicationSets.
pub const APPLICATION_SETS: Resource = Resource {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: "ApplicationSet",
    plural: "applicationsets",
};
/// Argo CD's AppProjects (`serviceAccountRole: impersonate`).
pub const APP_PROJECTS: Resource = Resource {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: crate::projects::KIND,
    plural: "appprojects",
};
/// Argo CD's Applications.
pub const APPLICATIONS: Resource = Resource {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: "Application",
    plural: "applications",
};

/// Which objects of a resource a read takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Objects {
    /// Every object, or those a label selector (`key`, `key=value`, comma between them) picks.
    Selected(Option<String>),
    /// The one object of this name (a get).
    Named(&'static str),
}

/// Which objects' values (a Secret's `data`) the plan reads; the rest are read for their names
/// and labels alone, and a host need not keep their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// Every object's.
    All,
    /// Those of objects that carry one of these labels, with its value.
    Labelled(&'static [(&'static str, &'static str)]),
}

impl Values {
    /// Whether the values of an object with `labels` are read.
    pub fn read<'a>(&self, mut labels: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
        match self {
            Values::All => true,
            Values::Labelled(wanted) => labels.any(|l| wanted.contains(&l)),
        }
    }
}

/// The Secrets of Argo CD's namespace whose values a plan reads: its cluster Secrets and the
/// token Secrets (`credentials: serviceAccount`). Every other Secret there is read for its name
/// alone: a cluster's Secret never takes the name of one that is not the function's.
const ARGO_CD_VALUES: &[(&str, &str)] = &[
    (crate::convert::argocd::SECRET_TYPE_LABEL, "cluster"),
    (crate::access::TOKEN_LABEL, crate::access::TOKEN_LABEL_VALUE),
];

/// One read a host makes: a resource in some namespaces, some of its objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// What it reads.
    pub resource: Resource,
    /// In these namespaces; `None`: in all.
    pub namespaces: Option<Vec<String>>,
    /// Which objects.
    pub objects: Objects,
    /// Which of them the plan reads the values of.
    pub values: Values,
    /// The server may not serve the resource (a CRD not installed, or installed later): the
    /// run goes on without it, and a host reads it once it is served.
    pub optional: bool,
    /// What the plan reads it for, as a host says it in a log line.
    pub purpose: &'static str,
}

/// What to read for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSet {
    /// The namespace of Argo CD's cluster Secrets.
    pub argo_namespace: String,
    /// Every read, the kubeconfig Secrets first.
    pub reads: Vec<Read>,
    /// How many days before a certificate stops being valid the function warns of it.
    pub expiry_days: u32,
    /// The settings seal the output (`seal`): for output that is committed, so a host that
    /// writes Argo CD's Secrets to an API server itself refuses them.
    pub seals: bool,
}

impl ReadSet {
    /// The reads of `resource`.
    pub fn of(&self, resource: Resource) -> impl Iterator<Item = &Read> {
        self.reads.iter().filter(move |r| r.resource == resource)
    }

    /// Whether `resource` is read at all.
    pub fn reads(&self, resource: Resource) -> bool {
        self.of(resource).next().is_some()
    }
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
    let namespaces = config.allowed_namespaces.clone();
    let argo = Some(vec![config.argo_namespace.clone()]);
    let mut reads: Vec<Read> = selectors
        .into_iter()
        .map(|selector| Read {
            resource: SECRETS,
            namespaces: namespaces.clone(),
            objects: Objects::Selected((!selector.is_empty()).then_some(selector)),
            values: Values::All,
            optional: false,
            purpose: "the kubeconfig Secrets",
        })
        .collect();
    reads.push(Read {
        resource: SECRETS,
        namespaces: argo.clone(),
        objects: Objects::Selected(None),
        values: Values::Labelled(ARGO_CD_VALUES),
        optional: false,
        purpose: "Argo CD's Secrets (its cluster Secrets, the token Secrets, and every name taken)",
    });
    if config.sources.iter().any(|s| s.reads.clusters) {
        reads.push(Read {
            resource: CLUSTERS,
            namespaces: namespaces.clone(),
            objects: Objects::Selected(None),
            values: Values::All,
            optional: true,
            purpose: "Cluster API's Clusters (their labels, pause and ignore markers, take-along labels, lifecycle)",
        });
    }
    if config.reads_profiles() {
        reads.push(Read {
            resource: CLUSTER_PROFILES,
            namespaces: namespaces.clone(),
            objects: Objects::Selected(None),
            values: Values::All,
            optional: true,
            purpose: "the clusterprofile source's ClusterProfiles",
        });
    }
    if config.read_applications {
        for resource in [APPLICATION_SETS, APPLICATIONS] {
            reads.push(Read {
                resource,
                namespaces: argo.clone(),
                objects: Objects::Selected(None),
                values: Values::All,
                optional: true,
                purpose: "readApplications: what a plan makes Argo CD's ApplicationSets do (maxApplicationDeletes)",
            });
        }
        reads.push(Read {
            resource: CONFIG_MAPS,
            namespaces: argo,
            objects: Objects::Named(CMD_PARAMS),
            values: Values::All,
            optional: true,
            purpose: "readApplications: the ApplicationSet controller's policy",
        });
    }
    if config.access.mode == crate::access::CredentialMode::ServiceAccount
        && config.access.role == crate::access::Role::Impersonate
    {
        let argo = Some(vec![config.argo_namespace.clone()]);
        reads.push(Read {
            resource: APP_PROJECTS,
            namespaces: argo.clone(),
            objects: Objects::Selected(None),
            values: Values::All,
            optional: true,
            purpose: "serviceAccountRole=impersonate: the ServiceAccounts Argo CD's AppProjects sync as",
        });
        reads.push(Read {
            resource: CONFIG_MAPS,
            namespaces: argo,
            objects: Objects::Named(crate::projects::ARGOCD_CM),
            values: Values::All,
            optional: true,
            purpose: "serviceAccountRole=impersonate: whether Argo CD impersonates",
        });
    }
    Ok(ReadSet {
        argo_namespace: config.argo_namespace.clone(),
        reads,
        expiry_days: config.policy.expiry_days,
        seals: config.seal,
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
    use crate::appsets::read::ARGO_API_VERSION;

    fn reads(overrides: &[&str]) -> ReadSet {
        let options = Options {
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        };
        read_set(&options).expect("settings are valid")
    }

    fn selectors(set: &ReadSet) -> Vec<Option<String>> {
        set.of(SECRETS)
            .filter(|r| r.purpose == "the kubeconfig Secrets")
            .map(|r| match &r.objects {
                Objects::Selected(s) => s.clone(),
                Objects::Named(_) => panic!("kubeconfig Secrets are listed"),
            })
            .collect()
    }

    #[test]
    fn the_default_reads_cluster_apis_labelled_secrets_and_its_clusters() {
        let set = reads(&[]);
        assert_eq!(set.argo_namespace, "argocd");
        assert_eq!(
            selectors(&set),
            [Some("cluster.x-k8s.io/cluster-name".to_string())]
        );
        let kubeconfigs = set.of(SECRETS).next().expect("a read");
        assert_eq!(kubeconfigs.namespaces, None);
        let argo = set.of(SECRETS).nth(1).expect("Argo CD's Secrets");
        assert_eq!(argo.namespaces, Some(vec!["argocd".to_string()]));
        let cluster = [("argocd.argoproj.io/secret-type", "cluster")];
        assert!(argo.values.read(cluster.into_iter()));
        assert!(!argo.values.read([("team", "blue")].into_iter()));
        assert!(kubeconfigs.values.read(std::iter::empty()));
        assert!(set.reads(CLUSTERS));
        assert!(set.of(CLUSTERS).all(|r| r.optional));
        assert!(!set.reads(APPLICATIONS));
        let with = reads(&["readApplications=true"]);
        assert!(with.reads(APPLICATION_SETS) && with.reads(APPLICATIONS));
        let params = with.of(CONFIG_MAPS).next().expect("argocd-cmd-params-cm");
        assert_eq!(params.objects, Objects::Named("argocd-cmd-params-cm"));
        assert_eq!(params.namespaces, Some(vec!["argocd".to_string()]));
    }

    #[test]
    fn a_source_without_a_label_reads_every_secret() {
        let set = reads(&["sources=capi,crossplane"]);
        assert_eq!(selectors(&set), [None]);
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
            selectors(&set),
            [Some("cluster.x-k8s.io/cluster-name,team=blue".to_string())]
        );
        let namespaces = Some(vec!["fleet-a".to_string(), "fleet-b".to_string()]);
        assert_eq!(set.reads[0].namespaces, namespaces);
        assert!(set.of(CLUSTERS).all(|r| r.namespaces == namespaces));
    }

    #[test]
    fn cluster_profiles_are_read_beside_secrets_and_never_widen_them() {
        let set = reads(&["sources=clusterprofile"]);
        assert!(set.reads(CLUSTER_PROFILES));
        assert!(selectors(&set).is_empty());
        let set = reads(&["sources=capi,clusterprofile"]);
        assert!(set.reads(CLUSTER_PROFILES));
        assert_eq!(
            selectors(&set),
            [Some("cluster.x-k8s.io/cluster-name".to_string())]
        );
        assert!(!reads(&[]).reads(CLUSTER_PROFILES));
    }

    #[test]
    fn the_versions_read_are_those_the_core_reads() {
        let profiles: Vec<String> = CLUSTER_PROFILES
            .versions
            .iter()
            .map(|v| format!("{}/{v}", CLUSTER_PROFILES.group))
            .collect();
        assert_eq!(profiles, crate::profiles::API_VERSIONS);
        assert_eq!(
            format!("{}/{}", APPLICATIONS.group, APPLICATIONS.versions[0]),
            ARGO_API_VERSION
        );
        assert_eq!(APPLICATION_SETS.versions, APPLICATIONS.versions);
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
