//! A bare kubeconfig (YAML or JSON, as `kubectl config view --raw [-o json]` prints it) put into
//! the Secret Cluster API writes for a cluster, so the function converts it as it would one of
//! Cluster API's: for hosts where a person pastes a kubeconfig (the playground).
//!
//! The Secret and its `cluster.x-k8s.io/cluster-name` label are named after the kubeconfig's
//! cluster entry (the one its current context uses), made a DNS-1123 label by apimachinery's
//! rules: an EKS context or cluster named by its 90-character ARN still gives a name and a label
//! the API server accepts (the cluster's name at most 52 characters, so that
//! `<cluster>-kubeconfig` is a label as well as a Secret name).

use crate::convert::kubeconfig::{self, Credentials};
use crate::convert::meta::{dns1123_label, fnv32a};

/// What Cluster API appends to a cluster's name for its kubeconfig Secret.
const SUFFIX: &str = "-kubeconfig";
use crate::sources::CLUSTER_NAME_LABEL;
use krm::object::Object;
use yaml::Limits;
use yaml::{Node, emit, parse_stream};

/// The namespace the Secret is put in (a bare kubeconfig names none).
pub const WRAP_NAMESPACE: &str = "default";

/// A kubeconfig in its Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedKubeconfig {
    /// The Secret, as YAML.
    pub text: String,
    /// `<cluster>-kubeconfig`.
    pub secret_name: String,
    /// The cluster's name, as the label carries it.
    pub cluster: String,
    /// The kubeconfig's cluster entry the name was made from.
    pub cluster_entry: String,
}

/// The Secret for `text` when it is one kubeconfig (`apiVersion: v1`, `kind: Config`, the
/// shape the function itself recognizes and warns about); `None` for anything else.
pub fn wrap_kubeconfig(text: &str, limits: &Limits) -> Option<WrappedKubeconfig> {
    let docs = parse_stream(text, limits).ok()?;
    let mut roots = docs.iter().map(|d| &d.root).filter(|r| !r.is_null());
    let root = roots.next()?;
    if roots.next().is_some() || !Object::new(root).is(Some("v1"), "Config") {
        return None;
    }
    let entry = cluster_entry(text, root, limits);
    // Short enough that the Secret's name is a DNS-1123 label too, as Cluster API's own are.
    let cluster = dns1123_label(&entry, 63 - SUFFIX.len())
        .unwrap_or_else(|| format!("cluster-{:08x}", fnv32a(&entry)));
    let secret_name = format!("{cluster}{SUFFIX}");
    let secret = Node::map(vec![
        ("apiVersion", Node::string("v1")),
        ("kind", Node::string("Secret")),
        (
            "metadata",
            Node::map(vec![
                ("name", Node::string(secret_name.clone())),
                ("namespace", Node::string(WRAP_NAMESPACE)),
                (
                    "labels",
                    Node::map(vec![(CLUSTER_NAME_LABEL, Node::string(cluster.clone()))]),
                ),
            ]),
        ),
        ("type", Node::string("cluster.x-k8s.io/secret")),
        ("stringData", Node::map(vec![("value", Node::string(text))])),
    ]);
    let mut out = String::with_capacity(text.len() + 256);
    emit::write_document(&mut out, &secret);
    Some(WrappedKubeconfig {
        text: out,
        secret_name,
        cluster,
        cluster_entry: entry,
    })
}

/// The cluster entry the kubeconfig's context uses, as the converter picks it; for a
/// kubeconfig it cannot read, the first cluster entry's name (the function then says what is
/// wrong with it).
fn cluster_entry(text: &str, root: &Node, limits: &Limits) -> String {
    let reading = kubeconfig::read(text, None, Credentials::Skip, limits);
    if let Some(connection) = reading.connection {
        return connection.cluster_entry;
    }
    root.get("clusters")
        .and_then(Node::as_seq)
        .and_then(|c| c.first())
        .and_then(|c| c.get("name"))
        .and_then(Node::as_str)
        .unwrap_or("cluster")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::meta::{check_label_value, is_dns1123_subdomain};

    const ARN: &str =
        "arn:aws:eks:eu-west-1:123456789012:cluster/payments-platform-production-eu-west-1-blue";

    fn yaml(cluster: &str, context: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster: {{server: 'https://api.example:6443'}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: {context}\n  context: {{cluster: {cluster}, user: u}}\ncurrent-context: {context}\n"
        )
    }

    #[test]
    fn a_kubeconfig_goes_into_a_secret_named_after_its_cluster_entry() {
        let text = yaml("lab", "admin@lab");
        let wrapped = wrap_kubeconfig(&text, &Limits::default()).unwrap();
        assert_eq!(wrapped.secret_name, "lab-kubeconfig");
        assert_eq!(wrapped.cluster, "lab");
        // The kubeconfig comes out of the Secret as it went in.
        let docs = parse_stream(&wrapped.text, &Limits::default()).unwrap();
        let secret = &docs[0].root;
        assert_eq!(
            secret.path(&["stringData", "value"]).and_then(Node::as_str),
            Some(text.as_str())
        );
        assert_eq!(
            secret
                .path(&["metadata", "labels", CLUSTER_NAME_LABEL])
                .and_then(Node::as_str),
            Some("lab")
        );
    }

    #[test]
    fn an_arn_context_gives_a_valid_name_and_label() {
        let text = yaml(&format!("'{ARN}'"), &format!("'{ARN}'"));
        let wrapped = wrap_kubeconfig(&text, &Limits::default()).unwrap();
        assert_eq!(wrapped.cluster_entry, ARN);
        assert!(wrapped.cluster.len() <= 52);
        assert!(check_label_value(&wrapped.cluster).is_ok());
        assert!(is_dns1123_subdomain(&wrapped.secret_name));
    }

    #[test]
    fn json_kubeconfigs_are_wrapped_too() {
        let json = format!(
            r#"{{"kind": "Config", "apiVersion": "v1", "clusters": [{{"name": "{ARN}", "cluster": {{"server": "https://x.eks.amazonaws.com"}}}}], "users": [{{"name": "u", "user": {{"token": "t"}}}}], "contexts": [{{"name": "{ARN}", "context": {{"cluster": "{ARN}", "user": "u"}}}}], "current-context": "{ARN}"}}"#
        );
        let wrapped = wrap_kubeconfig(&json, &Limits::default()).unwrap();
        assert!(wrapped.cluster.starts_with("arn-aws-eks-eu-west-1"));
        let run = crate::run(wrapped.text.as_bytes(), &crate::Options::default()).unwrap();
        assert!(!run.failed(), "{:?}", run.results);
        assert!(
            run.output.contains("capi-to-argocd/owned: \"true\""),
            "{}",
            run.output
        );
    }

    #[test]
    fn anything_else_is_left_alone() {
        let limits = Limits::default();
        assert_eq!(wrap_kubeconfig("kind: Secret\n", &limits), None);
        assert_eq!(wrap_kubeconfig("a: [", &limits), None);
        let two = format!("{}---\n{}", yaml("a", "a"), yaml("b", "b"));
        assert_eq!(wrap_kubeconfig(&two, &limits), None);
        // A kubeconfig the converter cannot read is still wrapped, named after its first cluster.
        let broken =
            "apiVersion: v1\nkind: Config\nclusters:\n- name: Broken.Cluster\n  cluster: {}\n";
        assert_eq!(
            wrap_kubeconfig(broken, &limits).unwrap().cluster,
            "broken-cluster"
        );
    }
}
