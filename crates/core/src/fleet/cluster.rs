//! What a Cluster API `Cluster` object adds: the ignore label, take-along and copied metadata, and facts as labels.

use std::collections::BTreeMap;

use crate::convert::argocd::Fields;
use crate::convert::meta::{check_label_value, check_qualified_name, key_name, label_value};
use krm::finding::Finding;
use yaml::{Node, Value};

/// A Cluster with this label gets no Argo CD Secret (CACO's marker).
pub const IGNORE_LABEL: &str = "ignore-cluster.capi-to-argocd";
const TAKE_ALONG_LABEL: &str = "take-along-label.capi-to-argocd.";
const TAKEN_LABEL: &str = "taken-from-cluster-label.capi-to-argocd.";
const TAKE_ALONG_ANNOTATION: &str = "take-along-annotation.capi-to-argocd.";
const TAKEN_ANNOTATION: &str = "taken-from-cluster-annotation.capi-to-argocd.";

/// Prefix of the labels capi2argo derives from the Cluster.
pub const FACT_PREFIX: &str = "capi2argo.dev/";

/// Whether `node` is a Cluster API `Cluster`.
pub fn is_cluster(node: &Node) -> bool {
    node.get("kind").and_then(Node::as_str) == Some("Cluster")
        && node
            .get("apiVersion")
            .and_then(Node::as_str)
            .is_some_and(|v| v.starts_with("cluster.x-k8s.io/"))
}

/// A metadata map of strings (labels or annotations); entries of other types are skipped.
pub fn string_entries<'n>(node: &'n Node, field: &str) -> Vec<(&'n str, &'n str)> {
    let Some(Value::Map(entries)) = node.path(&["metadata", field]).map(|n| &n.value) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?, v.scalar().map(|s| s.text.as_ref())?)))
        .collect()
}

/// Whether a Cluster is Cluster API's v1beta2 (1.11 and later; v1beta1 is to be unserved in 1.16).
pub fn is_v1beta2(cluster: &Node) -> bool {
    cluster.get("apiVersion").and_then(Node::as_str) == Some("cluster.x-k8s.io/v1beta2")
}

pub fn is_ignored(cluster: &Node) -> bool {
    string_entries(cluster, "labels")
        .iter()
        .any(|(k, _)| *k == IGNORE_LABEL)
}

/// CAPI's pause marker (`cluster.x-k8s.io/paused`, api/core/v1beta2/common_types.go): present means paused.
const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

/// Where a Cluster stands in its life, as far as its Argo CD Secret is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lifecycle {
    /// `spec.paused: true`, the pause annotation, or the v1beta2 condition `Paused` True.
    pub paused: bool,
    /// `metadata.deletionTimestamp` is set, or the v1beta2 condition `Deleting` is True.
    pub deleting: bool,
    /// Whether the control plane is initialised, when the Cluster has a status to say so
    /// (v1beta2 `status.initialization.controlPlaneInitialized`, v1beta1 `status.controlPlaneReady`).
    pub initialized: Option<bool>,
    /// The v1beta2 conditions `Available` and `RemoteConnectionProbe` that are False, with their
    /// reason and message: Argo CD may not reach the cluster (at most a warning).
    pub unavailable: Vec<Condition>,
}

/// A Cluster condition, as `status.conditions` (v1beta2) or `status.v1beta2.conditions` (a
/// v1beta1 object of Cluster API 1.11 and later) holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Condition {
    pub type_: String,
    pub reason: String,
    pub message: String,
}

/// The v1beta2 conditions the lifecycle reads (cluster-api api/core/v1beta2/cluster_types.go,
/// the same from v1.11 to v1.14).
const AVAILABLE: &str = "Available";
const REMOTE_CONNECTION_PROBE: &str = "RemoteConnectionProbe";
const DELETING: &str = "Deleting";
const PAUSED: &str = "Paused";

impl Lifecycle {
    /// Being deleted, known not to be initialised yet, or said unavailable or unreachable.
    pub fn not_ready(&self) -> bool {
        self.deleting || self.initialized == Some(false) || !self.unavailable.is_empty()
    }
}

pub fn lifecycle(cluster: &Node) -> Lifecycle {
    let is_true = |path: &[&str]| cluster.path(path).and_then(Node::as_bool) == Some(true);
    let paused = is_true(&["spec", "paused"])
        || string_entries(cluster, "annotations")
            .iter()
            .any(|(k, _)| *k == PAUSED_ANNOTATION);
    let deleting = cluster
        .path(&["metadata", "deletionTimestamp"])
        .is_some_and(|t| !t.is_null());
    let v1beta2 = is_v1beta2(cluster);
    let initialized = cluster
        .get("status")
        .filter(|s| s.as_map().is_some())
        .map(|_| {
            if v1beta2 {
                is_true(&["status", "initialization", "controlPlaneInitialized"])
            } else {
                is_true(&["status", "controlPlaneReady"])
            }
        });
    // v1beta2 conditions: the object's own in v1beta2, under `status.v1beta2` in a v1beta1 one.
    let conditions = if v1beta2 {
        cluster.path(&["status", "conditions"])
    } else {
        cluster.path(&["status", "v1beta2", "conditions"])
    };
    let condition = |type_: &str| {
        conditions
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .find(|c| c.get("type").and_then(Node::as_str) == Some(type_))
            .map(|c| {
                let text = |k| {
                    c.get(k)
                        .and_then(Node::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                (
                    text("status"),
                    Condition {
                        type_: type_.to_string(),
                        reason: text("reason"),
                        message: text("message"),
                    },
                )
            })
    };
    let holds = |type_: &str| condition(type_).is_some_and(|(status, _)| status == "True");
    let unavailable = [AVAILABLE, REMOTE_CONNECTION_PROBE]
        .into_iter()
        .filter_map(condition)
        .filter(|(status, _)| status == "False")
        .map(|(_, c)| c)
        .collect();
    Lifecycle {
        paused: paused || holds(PAUSED),
        deleting: deleting || holds(DELETING),
        initialized,
        unavailable,
    }
}

/// What [`lifecycle`] reads of a Cluster's conditions.
const READ_CONDITION_FIELDS: [&str; 4] = ["type", "status", "reason", "message"];

/// Keeps of a Cluster's `status` (as JSON) only what a plan reads: whether the control plane is
/// initialised, and the type, status, reason and message of each v1beta2 condition. What Cluster
/// API rewrites every few seconds (a condition's `lastTransitionTime`, `observedGeneration`,
/// replica counts, failure domains) goes, so a host that keeps Clusters holds less, and one that
/// compares what it keeps sees a heartbeat as no change at all.
pub fn keep_read_status(status: &mut serde_json::Value) {
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = |list: &mut serde_json::Value| {
        if let Some(list) = list.as_array_mut() {
            for condition in list.iter_mut().filter_map(|c| c.as_object_mut()) {
                condition.retain(|k, _| READ_CONDITION_FIELDS.contains(&k.as_str()));
            }
        }
    };
    status.retain(|k, _| {
        matches!(
            k.as_str(),
            "initialization" | "controlPlaneReady" | "conditions" | "v1beta2"
        )
    });
    if let Some(init) = status
        .get_mut("initialization")
        .and_then(|i| i.as_object_mut())
    {
        init.retain(|k, _| k == "controlPlaneInitialized");
    }
    if let Some(v1beta2) = status.get_mut("v1beta2").and_then(|v| v.as_object_mut()) {
        v1beta2.retain(|k, _| k == "conditions");
        if let Some(list) = v1beta2.get_mut("conditions") {
            conditions(list);
        }
    }
    if let Some(list) = status.get_mut("conditions") {
        conditions(list);
    }
}

/// The infrastructure provider's kind, e.g. `AWSCluster`.
pub fn infrastructure_kind<'n>(cluster: &'n Node) -> Option<&'n str> {
    cluster
        .path(&["spec", "infrastructureRef", "kind"])
        .and_then(Node::as_str)
}

/// `AWSManagedCluster` → `aws`: the cloud or platform, for ApplicationSet selectors.
fn provider_of(kind: &str) -> String {
    let base = ["ManagedCluster", "ManagedControlPlane", "Cluster"]
        .iter()
        .find_map(|suffix| kind.strip_suffix(suffix))
        .filter(|b| !b.is_empty())
        .unwrap_or(kind);
    base.to_ascii_lowercase()
}

/// Facts about the cluster as labels under `capi2argo.dev/`, when the Cluster (or its control plane) states them.
///
/// `control_plane_version` is the `spec.version` of the control plane object the Cluster refers to, if in the input.
pub fn facts(cluster: &Node, control_plane_version: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let version = cluster
        .path(&["spec", "topology", "version"])
        .and_then(Node::as_str)
        .or(control_plane_version);
    if let Some(version) = version {
        labels.insert(
            format!("{FACT_PREFIX}kubernetes-version"),
            label_value(version),
        );
        let mut parts = version.trim_start_matches('v').split('.');
        if let (Some(major), Some(minor)) = (parts.next(), parts.next()) {
            labels.insert(
                format!("{FACT_PREFIX}kubernetes-minor"),
                label_value(&format!("{major}.{minor}")),
            );
        }
    }
    if let Some(kind) = infrastructure_kind(cluster) {
        labels.insert(
            format!("{FACT_PREFIX}infrastructure-kind"),
            label_value(kind),
        );
        labels.insert(
            format!("{FACT_PREFIX}infrastructure-provider"),
            label_value(&provider_of(kind)),
        );
    }
    // v1beta2 (Cluster API 1.11+) moved spec.topology.class to spec.topology.classRef.name.
    let class = cluster
        .path(&["spec", "topology", "classRef", "name"])
        .or_else(|| cluster.path(&["spec", "topology", "class"]))
        .and_then(Node::as_str);
    if let Some(class) = class {
        labels.insert(format!("{FACT_PREFIX}cluster-class"), label_value(class));
    }
    if let Some(kind) = cluster
        .path(&["spec", "controlPlaneRef", "kind"])
        .and_then(Node::as_str)
    {
        labels.insert(
            format!("{FACT_PREFIX}control-plane-kind"),
            label_value(kind),
        );
    }
    labels
}

/// Keys never copied: CACO's list (system, CAPI, its own bookkeeping), plus the annotations kpt and
/// kustomize attach to every resource they pass to a function (they name the Cluster's file, not the Secret's).
fn copyable(key: &str, annotation: bool) -> bool {
    let system = ["kubernetes.io/", "cluster.x-k8s.io/", "capi-to-argocd/"];
    !(system.iter().any(|p| key.starts_with(p))
        || krm::object::is_tool_annotation(key)
        || key.starts_with(TAKE_ALONG_LABEL)
        || key.starts_with(TAKE_ALONG_ANNOTATION)
        || key == IGNORE_LABEL
        || (annotation && key.starts_with("kubectl.kubernetes.io/")))
}

/// The key recording that `key` was taken along (`taken-from-cluster-label.capi-to-argocd.<key>`),
/// its name part shortened with a stable hash when over 63 characters (the API server would
/// refuse the whole Secret otherwise), and whether it was shortened.
fn taken_key(taken: &str, key: &str) -> (String, bool) {
    let full = format!("{taken}{key}");
    let (prefix, name) = match full.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, full.as_str()),
    };
    let short = key_name(name, &full);
    let shortened = short != name;
    match prefix {
        Some(prefix) => (format!("{prefix}/{short}"), shortened),
        None => (short, shortened),
    }
}

/// The Cluster's own metadata for its Argo CD Secret: copied, then taken along; plus findings,
/// each naming the Cluster's field. Nothing the API server would refuse is ever returned.
pub fn own_metadata(
    cluster: &Node,
    copy_labels: bool,
    copy_annotations: bool,
) -> (Fields, Vec<Finding>) {
    let mut fields = Fields::default();
    let mut findings = Vec::new();
    for (field, copy, take, taken) in [
        ("labels", copy_labels, TAKE_ALONG_LABEL, TAKEN_LABEL),
        (
            "annotations",
            copy_annotations,
            TAKE_ALONG_ANNOTATION,
            TAKEN_ANNOTATION,
        ),
    ] {
        let entries = string_entries(cluster, field);
        let what = &field[..field.len() - 1];
        let mut chosen: Vec<(String, String)> = Vec::new();
        if copy {
            chosen.extend(
                entries
                    .iter()
                    .filter(|(k, _)| copyable(k, field == "annotations"))
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
        }
        for (marker, _) in &entries {
            let Some(key) = marker.strip_prefix(take) else {
                continue;
            };
            match entries.iter().find(|(k, _)| *k == key) {
                Some((_, value)) if !key.is_empty() => {
                    chosen.push((key.to_string(), value.to_string()));
                    let (record, shortened) = taken_key(taken, key);
                    if shortened {
                        findings.push(
                            Finding::info(format!(
                                "the record of taken-along {what} {key:?} is {record:?}: a key's name holds at most 63 characters"
                            ))
                            .at(format!("metadata.{field}.{marker}")),
                        );
                    }
                    chosen.push((record, String::new()));
                }
                _ => findings.push(
                    Finding::warning(format!(
                        "take-along {what} {key:?} is not set on the Cluster"
                    ))
                    .at(format!("metadata.{field}.{marker}")),
                ),
            }
        }
        let target = if field == "labels" {
            &mut fields.labels
        } else {
            &mut fields.annotations
        };
        for (key, value) in chosen {
            let valid = check_qualified_name(&key).and_then(|()| {
                if field == "labels" {
                    check_label_value(&value)
                } else {
                    Ok(())
                }
            });
            match valid {
                Ok(()) => {
                    target.insert(key, value);
                }
                Err(reason) => findings.push(
                    Finding::warning(format!(
                        "not copied to the Argo CD Secret: {reason} (the API server would refuse the Secret)"
                    ))
                    .at(format!("metadata.{field}.{key}")),
                ),
            }
        }
    }
    (fields, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;
    use yaml::parse_stream;

    fn cluster(yaml: &str) -> Node<'static> {
        let text: &'static str = Box::leak(yaml.to_string().into_boxed_str());
        parse_stream(text, &Limits::default())
            .unwrap()
            .remove(0)
            .root
    }

    /// A status cut to what a plan reads gives the same lifecycle and facts as the whole one,
    /// for a v1beta2 Cluster and a v1beta1 one carrying `status.v1beta2`.
    #[test]
    fn a_status_cut_to_what_is_read_gives_the_same_lifecycle() {
        let conditions = r#"[{"type":"Available","status":"False","reason":"Probe","message":"down","lastTransitionTime":"2026-11-27T00:00:00Z","observedGeneration":4},{"type":"Paused","status":"True","reason":"","lastTransitionTime":"2026-11-27T00:00:00Z"},{"type":"Deleting","status":"False"}]"#;
        for (version, status) in [
            (
                "v1beta2",
                format!(
                    r#"{{"initialization":{{"controlPlaneInitialized":true,"infrastructureProvisioned":true}},"conditions":{conditions},"observedGeneration":4,"phase":"Provisioned","controlPlane":{{"replicas":3}}}}"#
                ),
            ),
            (
                "v1beta1",
                format!(
                    r#"{{"controlPlaneReady":false,"infrastructureReady":true,"phase":"Provisioning","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"2026-11-27T00:00:00Z"}}],"v1beta2":{{"conditions":{conditions},"observedGeneration":3}}}}"#
                ),
            ),
        ] {
            let whole = format!(
                r#"{{"apiVersion":"cluster.x-k8s.io/{version}","kind":"Cluster","metadata":{{"name":"c"}},"spec":{{"topology":{{"version":"v1.32.1","class":"q"}}}},"status":{status}}}"#
            );
            let mut value: serde_json::Value = serde_json::from_str(&whole).unwrap();
            keep_read_status(value.get_mut("status").unwrap());
            let cut = serde_json::to_string(&value).unwrap();
            assert!(cut.len() < whole.len(), "{cut}");
            assert!(!cut.contains("lastTransitionTime") && !cut.contains("observedGeneration"));
            let (whole, cut) = (cluster(&whole), cluster(&cut));
            assert_eq!(lifecycle(&whole), lifecycle(&cut), "{version}");
            assert_eq!(facts(&whole, None), facts(&cut, None), "{version}");
        }
    }

    #[test]
    fn take_along_copies_and_records_markers() {
        let c = cluster(
            "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  labels:\n    team: payments\n    take-along-label.capi-to-argocd.team: ''\n    take-along-label.capi-to-argocd.missing: ''\n  annotations:\n    owner: alice\n    take-along-annotation.capi-to-argocd.owner: ''\n",
        );
        let (fields, warnings) = own_metadata(&c, false, false);
        assert_eq!(
            fields.labels.get("team").map(String::as_str),
            Some("payments")
        );
        assert_eq!(
            fields
                .labels
                .get("taken-from-cluster-label.capi-to-argocd.team")
                .map(String::as_str),
            Some("")
        );
        assert_eq!(
            fields.annotations.get("owner").map(String::as_str),
            Some("alice")
        );
        assert!(
            fields
                .annotations
                .contains_key("taken-from-cluster-annotation.capi-to-argocd.owner")
        );
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            warnings[0].field.as_deref(),
            Some("metadata.labels.take-along-label.capi-to-argocd.missing")
        );
        assert!(warnings[0].message.contains("\"missing\""), "{warnings:?}");
    }

    #[test]
    fn copy_skips_system_and_marker_keys() {
        let c = cluster(
            "metadata:\n  labels:\n    cluster.x-k8s.io/cluster-name: x\n    config.k8s.io/id: '1'\n    kubernetes.io/os: linux\n    topology.kubernetes.io/region: eu\n    env: prod\n    ignore-cluster.capi-to-argocd: ''\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{}'\n    internal.config.kubernetes.io/path: a.yaml\n    note: hi\n",
        );
        let (fields, _) = own_metadata(&c, true, true);
        let labels: Vec<&str> = fields.labels.keys().map(String::as_str).collect();
        assert_eq!(labels, vec!["env", "topology.kubernetes.io/region"]);
        let annotations: Vec<&str> = fields.annotations.keys().map(String::as_str).collect();
        assert_eq!(annotations, vec!["note"]);
    }

    #[test]
    fn facts_from_topology_and_refs() {
        let c = cluster(
            "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nspec:\n  topology: {class: standard, version: v1.31.2}\n  infrastructureRef: {kind: AWSManagedCluster}\n  controlPlaneRef: {kind: AWSManagedControlPlane}\n",
        );
        let f = facts(&c, None);
        assert_eq!(
            f.get("capi2argo.dev/kubernetes-minor").map(String::as_str),
            Some("1.31")
        );
        assert_eq!(
            f.get("capi2argo.dev/infrastructure-provider")
                .map(String::as_str),
            Some("aws")
        );
        assert_eq!(
            f.get("capi2argo.dev/cluster-class").map(String::as_str),
            Some("standard")
        );
        assert_eq!(
            facts(&cluster("spec: {}"), Some("v1.30.1"))
                .get("capi2argo.dev/kubernetes-version")
                .map(String::as_str),
            Some("v1.30.1")
        );
    }
}
