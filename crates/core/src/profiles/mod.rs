//! SIG Multicluster's ClusterProfiles (`multicluster.x-k8s.io` v1alpha1 and v1alpha2, KEP-4322; access through
//! consumer-side exec plugins, KEP-5339) as the reference consumer,
//! argoproj-labs/clusterprofile-integration-for-argocd (commit
//! f49fb2285b63bda03681796e5e44aaab89c9f140, `controller.go`), turns them into Argo CD cluster
//! Secrets: which access provider, what login and connection, and the Secret's name and labels.
//! The types follow kubernetes-sigs/cluster-inventory-api: v1alpha1 at v0.1.2 (commit
//! 2b5fcd138906cd0ea0c1dcac5aae14f1876b23a4; `apis/v1alpha1/clusterprofile_types.go`,
//! `pkg/access/config.go`) and v1alpha2 (commit 2c9add11d437cd535d559a6d636800f4aa69a1cc,
//! `apis/v1alpha2/clusterprofile_types.go`: the same fields under the same JSON names, its
//! `cluster` a type of its own rather than clientcmd's, no `credentialProviders`, and the
//! inventory member label defined).

pub(crate) mod access;
pub(crate) mod names;
pub(crate) mod providers;

use krm::object::Object;
use yaml::Node;

pub use providers::Provider;

/// The ClusterProfile's API group.
pub const GROUP: &str = "multicluster.x-k8s.io";
/// The versions of ClusterProfile the function reads, newest first.
pub const API_VERSIONS: [&str; 2] = [
    "multicluster.x-k8s.io/v1alpha2",
    "multicluster.x-k8s.io/v1alpha1",
];
pub const KIND: &str = "ClusterProfile";

/// The condition a cluster manager reports on its control plane (`ClusterConditionControlPlaneHealthy`).
pub const CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";

/// One Argo CD cluster per inventory member: v1alpha2's `LabelInventoryMemberIDKey` ("correlates
/// ClusterProfiles that represent the same member cluster"), which OCM sets
/// (`pkg/registration/hub/clusterprofile/member_id.go`) and the
/// kahirokunn/clusterprofile-integration-for-argocd fork dedupes by (commit 319dafb6).
pub const MEMBER_LABEL: &str = "multicluster.x-k8s.io/inventory-member-id";

/// The label and annotation the reference consumer names the profile by on its Secret.
pub const PROFILE_NAME_KEY: &str = "argocd.argoproj.io/cluster-profile-name";

/// The preset's name, recorded on its Argo CD Secrets.
pub const PROFILE_SOURCE: &str = "clusterprofile";

/// Whether a ClusterProfile advertises any access provider (`status.accessProviders` or the
/// deprecated `status.credentialProviders`).
pub fn advertises(node: &Node) -> bool {
    ["accessProviders", "credentialProviders"]
        .iter()
        .any(|list| {
            node.path(&["status", list])
                .and_then(Node::as_seq)
                .is_some_and(|s| !s.is_empty())
        })
}

/// The list of access providers a ClusterProfile holds as something else than a list (the API
/// server's schema prevents it; a file may hold anything).
pub fn misshapen(node: &Node) -> Option<&'static str> {
    ["accessProviders", "credentialProviders"]
        .into_iter()
        .find(|list| {
            node.path(&["status", list])
                .is_some_and(|l| !l.is_null() && l.as_seq().is_none())
        })
}

/// The profile an Argo CD cluster Secret was written for by the reference consumer: the
/// annotation naming it (whole) and a controller owner reference to a ClusterProfile.
/// Its controller owner reference's uid, when it gives one, says which ClusterProfile of that
/// name it was (the reference's `IsControlledBy`).
pub fn written_by_reference<'n>(object: Object<'n, '_>) -> Option<(&'n str, Option<&'n str>)> {
    let name = object.annotation(PROFILE_NAME_KEY)?;
    let owner = object.owner_references(Some(GROUP), KIND).find(|o| {
        o.get("name").and_then(Node::as_str) == Some(name)
            && o.get("controller").and_then(Node::as_bool) == Some(true)
    })?;
    let uid = owner.get("uid").and_then(Node::as_str);
    (object.label(crate::convert::argocd::SECRET_TYPE_LABEL) == Some("cluster"))
        .then_some((name, uid))
}

/// Whether an item is a ClusterProfile of any version (only those of `API_VERSIONS` are read).
pub fn is_cluster_profile(object: Object) -> bool {
    object.kind() == Some(KIND)
        && object
            .api_version()
            .is_some_and(|v| v.split('/').next() == Some(GROUP))
}

/// Whether it is of a version this reads.
pub fn is_readable(object: Object) -> bool {
    object
        .api_version()
        .is_some_and(|v| API_VERSIONS.contains(&v))
}

/// A ClusterProfile's condition, when it has it: whether it is True, and its reason and message.
pub fn condition<'n>(node: &'n Node, type_: &str) -> Option<(bool, &'n str, &'n str)> {
    let found = node
        .path(&["status", "conditions"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .find(|c| c.get("type").and_then(Node::as_str) == Some(type_))?;
    let text = |k| found.get(k).and_then(Node::as_str).unwrap_or_default();
    Some((text("status") == "True", text("reason"), text("message")))
}

/// When it was created (`metadata.creationTimestamp`, RFC 3339 as the API server writes it).
pub fn created<'n>(node: &'n Node) -> Option<&'n str> {
    node.path(&["metadata", "creationTimestamp"])
        .and_then(Node::as_str)
        .filter(|t| !t.is_empty())
}
