//! What reconciliation reads of an item, and what it lets go of the rest: cut while the input
//! is read (items of kinds it does not read keep what results name them by; Secrets not its own,
//! what kpt keeps for itself but where they live), and once the scan has looked at everything
//! (kubeconfig Secrets keep what conversion and its results read). A large fleet's trees would
//! otherwise hold memory until the output is written, for nothing. Only items copied from the
//! input are cut: one the emitter writes needs its whole tree (the reader checks, and reads the
//! input again uncut when a cut item turns out to be one).

use crate::appsets;
use crate::config::Config;
use crate::config::installed;
use crate::profiles;
use krm::object::{Object, file_annotations, is_tool_annotation};
use krm::{self, Input, Item, NAMING_KEYS};
use yaml::{Node, Value};

use super::found::Scan;
use super::scan;

/// The kinds conversion reads beyond their metadata: kubeconfig and Argo CD Secrets, CAPI
/// Clusters and control planes (for lifecycle and version).
fn reads_kind(kind: &str) -> bool {
    matches!(kind, "Secret" | "Cluster" | crate::seal::KIND) || kind.ends_with("ControlPlane")
}

/// Metadata fields no step reads of any item.
const UNREAD_METADATA: &[&str] = &[
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
];

/// Cuts from an item what reconciliation never reads of it; whether anything went.
pub fn cut_unread(item: &mut Node) -> bool {
    let object = Object::new(item);
    // An Application is read for its owner, finalizers and destination; an ApplicationSet for
    // its spec; Argo CD's `argocd-cmd-params-cm` for its data. Their status can be most of a
    // fleet's bytes.
    if appsets::is_application(object) {
        let mut cut = item.retain_keys(&["apiVersion", "kind", "metadata", "spec"]);
        if let Some(spec) = item.get_mut("spec") {
            cut |= retain(spec, |k| k == "destination");
        }
        if let Some(metadata) = item.get_mut("metadata") {
            cut |= retain(metadata, |k| {
                matches!(
                    k,
                    "name"
                        | "namespace"
                        | "annotations"
                        | "ownerReferences"
                        | "finalizers"
                        | "deletionTimestamp"
                )
            });
            if let Some(annotations) = metadata.get_mut("annotations") {
                let file = file_annotations(annotations);
                cut |= retain(annotations, |k| file.contains(&k));
            }
        }
        return cut;
    }
    if appsets::is_application_set(object) {
        return item.retain_keys(&["apiVersion", "kind", "metadata", "spec"]);
    }
    // An AppProject is read for its spec (`destinationServiceAccounts`); argocd-cm for its data.
    if crate::projects::is_app_project(object) {
        return item.retain_keys(&["apiVersion", "kind", "metadata", "spec"]);
    }
    if object.name() == Some(appsets::CMD_PARAMS) || crate::projects::is_argocd_cm(object) {
        return item.retain_keys(&["apiVersion", "kind", "metadata", "data"]);
    }
    // An installed controller's settings, and the Deployment that says which of them it mounts
    // (config::installed): where no other settings are given, a plan takes them.
    if installed::is_settings(object) {
        return item.retain_keys(&["apiVersion", "kind", "metadata", "data"]);
    }
    if installed::is_controller(object) {
        let mut cut = item.retain_keys(&["apiVersion", "kind", "metadata", "spec"]);
        for (at, keep) in [
            (&["spec"][..], "template"),
            (&["spec", "template"][..], "spec"),
            (&["spec", "template", "spec"][..], "volumes"),
        ] {
            if let Some(node) = path_mut(item, at) {
                cut |= retain(node, |k| k == keep);
            }
        }
        return cut;
    }
    // A ClusterProfile is read whole (its status says how to reach the cluster), but for what
    // the API server keeps of who wrote which field.
    if profiles::is_cluster_profile(object) {
        return item
            .get_mut("metadata")
            .is_some_and(|m| retain(m, |k| k != "managedFields"));
    }
    if !reads_kind(object.kind().unwrap_or_default()) {
        return naming_only(item);
    }
    let owned = object.is_secret() && scan::is_owned(item);
    let secret = object.is_secret();
    // An owned Secret's identity makes the plan's requests conditional, and its tool
    // annotations go with it to its replacement; anyone else's only say where it lives.
    // A token Secret is replaced on its uid and resourceVersion too; a kubeconfig Secret's
    // resourceVersion says whether its token predates it (access.rs).
    let token = crate::access::is_token_secret(Object::new(item));
    // A Secret the reference ClusterProfile consumer wrote may be adopted: its uid too.
    let adoptable = secret && profiles::written_by_reference(Object::new(item)).is_some();
    let others = secret && !owned && !token && !adoptable;
    let versionless = crate::fleet::cluster::is_cluster(item)
        || object.kind().is_some_and(|k| k.ends_with("ControlPlane"));
    let Some(metadata) = item.get_mut("metadata") else {
        return false;
    };
    // A Cluster's or control plane's version is read by no step: cut, one written again with
    // nothing the plan reads changed (a heartbeat of its status) reads as it did.
    let mut cut = retain(metadata, |k| {
        !(UNREAD_METADATA.contains(&k)
            || others && k == "uid"
            || versionless && k == "resourceVersion")
    });
    if others {
        if let Some(annotations) = metadata.get_mut("annotations") {
            cut |= not_tools(annotations);
        }
    }
    // Owners are read for their kind, group, name and whether they control the object (and,
    // for a Secret the reference ClusterProfile consumer wrote, which profile it was).
    if let Some(Value::Seq(owners)) = metadata.get_mut("ownerReferences").map(|o| &mut o.value) {
        for owner in owners {
            cut |= retain(owner, |k| {
                matches!(k, "apiVersion" | "kind" | "name" | "controller")
                    || (adoptable && k == "uid")
            });
        }
    }
    cut
}

/// Keeps of an item only what results name it by; whether anything went.
fn naming_only(item: &mut Node) -> bool {
    let mut cut = item.retain_keys(NAMING_KEYS);
    if let Some(metadata) = item.get_mut("metadata") {
        cut |= retain(metadata, |k| {
            matches!(k, "name" | "namespace" | "annotations")
        });
        if let Some(annotations) = metadata.get_mut("annotations") {
            let file = file_annotations(annotations);
            cut |= retain(annotations, |k| file.contains(&k));
        }
    }
    cut
}

/// Keeps annotations that are not kpt's or kustomize's own, but for where the item lives.
fn not_tools(annotations: &mut Node) -> bool {
    let file = file_annotations(annotations);
    retain(annotations, |k| !is_tool_annotation(k) || file.contains(&k))
}

/// Keeps the entries of a mapping whose keys `keep` says yes to; whether any went.
fn retain(node: &mut Node, keep: impl Fn(&str) -> bool) -> bool {
    let before = node.as_map().map_or(0, <[_]>::len);
    node.retain_entries(keep);
    node.as_map().map_or(0, <[_]>::len) < before
}

/// Once the scan has looked at every item: the trees of items of kinds it does not read go
/// (they keep their text), and of each kubeconfig Secret what conversion and its results do not
/// read (its owners stay for a source whose rule picks among its Secrets by them).
pub(super) fn cut_unread_after_scan(input: &mut Input, scan: &Scan, config: &Config) {
    if input.form == (krm::Form::ResourceList { json: true }) {
        return;
    }
    let copied = |item: &Item| !matches!(item.text, krm::Text::Rewrite(_));
    for (index, item) in input
        .items
        .iter_mut()
        .enumerate()
        .filter(|(_, i)| copied(i))
    {
        let object = Object::new(&item.node);
        // Read by the scan already; results may still name them.
        if appsets::is_application(object) || appsets::is_application_set(object) {
            naming_only(&mut item.node);
        } else if profiles::is_cluster_profile(object) {
            // Converted (below) or not, results may name it.
            if !scan.candidates.iter().any(|c| c.index == index) {
                naming_only(&mut item.node);
            }
        } else if !reads_kind(object.kind().unwrap_or_default()) {
            item.node.retain_keys(&[]);
        }
    }
    for c in &scan.candidates {
        let item = &mut input.items[c.index];
        if !copied(item) {
            continue;
        }
        let owners = config.sources[c.source].precedence.prefer.is_some();
        // A token is minted again when its kubeconfig Secret changes (access.rs).
        let versions = config.access.mode == crate::access::CredentialMode::ServiceAccount;
        // A ClusterProfile's access is in its status, its health in its conditions.
        let profile = config.sources[c.source].kind == crate::sources::Kind::ClusterProfiles;
        retain(&mut item.node, |k| {
            matches!(
                k,
                "apiVersion" | "kind" | "metadata" | "data" | "stringData"
            ) || (profile && k == "status")
        });
        let Some(metadata) = item.node.get_mut("metadata") else {
            continue;
        };
        retain(metadata, |k| {
            matches!(k, "name" | "namespace" | "labels" | "annotations")
                || (profile && k == "deletionTimestamp")
                || (owners && k == "ownerReferences")
                || (versions && k == "resourceVersion")
        });
        if let Some(annotations) = metadata.get_mut("annotations") {
            not_tools(annotations);
        }
    }
}

/// The node at `path` below `node`, to change.
fn path_mut<'n, 'a>(node: &'n mut Node<'a>, path: &[&str]) -> Option<&'n mut Node<'a>> {
    path.iter().try_fold(node, |n, key| n.get_mut(key))
}
