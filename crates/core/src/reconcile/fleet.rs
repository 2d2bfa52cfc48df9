//! Fleet metadata on a converted cluster's Argo CD Secret: the config's defaults, then the
//! inventory's layers in order, then what the CAPI Cluster (or the ClusterProfile) itself says.

use crate::config::Config;
use crate::convert::argocd::{self, ClusterSecret, PROTECTED_LABELS};
use crate::fleet::cluster;
use crate::fleet::inventory::Selector;
use krm::finding::{Finding, Severity};
use krm::object::Object;
use yaml::Node;

use super::context::Ctx;
use super::ids::ObjectKey;

/// Which inventory entries some cluster used: one that none used is most likely a typo.
pub(super) struct Used(Vec<Vec<bool>>);

impl Used {
    pub fn new(config: &Config) -> Self {
        Used(
            config
                .inventory
                .iter()
                .map(|l| vec![false; l.values.len()])
                .collect(),
        )
    }

    /// Entry `entry` of layer `layer` was used.
    pub fn mark(&mut self, layer: usize, entry: usize) {
        self.0[layer][entry] = true;
    }

    /// An info result for every entry no cluster used.
    pub fn report_unused(&self, ctx: &mut Ctx) {
        for (li, layer) in ctx.config.inventory.iter().enumerate() {
            for (ei, (value, _)) in layer.values.iter().enumerate() {
                if self.0[li][ei] {
                    continue;
                }
                let message = format!(
                    "inventory layer {li} ({}): no cluster has the value {value:?}",
                    layer.describe()
                );
                let field = format!("spec.inventory[{li}].values.{value}");
                ctx.report_config(Severity::Info, Some(field), message);
            }
        }
    }
}

/// The control plane object a Cluster's `spec.controlPlaneRef` names (for its Kubernetes
/// version).
pub(super) fn control_plane_key(cluster: &Node) -> Option<ObjectKey> {
    let r = cluster.path(&["spec", "controlPlaneRef"])?;
    let kind = r.get("kind").and_then(Node::as_str)?;
    let name = r.get("name").and_then(Node::as_str)?;
    Some(ObjectKey::new(Object::new(cluster).namespace(), kind, name))
}

/// Sets the fleet metadata: config defaults, then inventory layers in order, then the Cluster's
/// own (`capi_cluster`: the Cluster and its control plane object, when each is in the input).
/// The inventory entries used go to `marks`, as (layer, entry).
pub(super) fn apply(
    ctx: &mut Ctx,
    secret: &mut ClusterSecret,
    source: usize,
    capi_cluster: Option<(usize, Option<usize>)>,
    profile: Option<usize>,
    marks: &mut Vec<(usize, usize)>,
) {
    let source_node = &ctx.item(source).node;
    let cluster_node = capi_cluster.map(|(i, _)| &ctx.item(i).node);
    let label = |node: &Node, key: &str| {
        cluster::string_entries(node, "labels")
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
    };
    let mut fields = ctx.config.defaults.clone();
    for (li, layer) in ctx.config.inventory.iter().enumerate() {
        let value = match &layer.selector {
            Selector::Label(key) => cluster_node
                .and_then(|c| label(c, key))
                .or_else(|| label(source_node, key)),
            Selector::Infrastructure => cluster_node
                .and_then(cluster::infrastructure_kind)
                .map(String::from),
        };
        if let Some((ei, entry)) = value.and_then(|v| layer.entry(&v)) {
            fields.overlay(entry);
            marks.push((li, ei));
        }
    }
    if let Some(node) = cluster_node {
        let control_plane_version = capi_cluster
            .and_then(|(_, control_plane)| control_plane)
            .and_then(|i| ctx.item(i).node.path(&["spec", "version"]))
            .and_then(Node::as_str);
        fields
            .labels
            .extend(cluster::facts(node, control_plane_version));
        let (own, findings) = cluster::own_metadata(
            node,
            ctx.config.copy_cluster_labels,
            ctx.config.copy_cluster_annotations,
        );
        fields.overlay(&own);
        for finding in findings {
            ctx.results.push(Object::new(node).finding(finding));
        }
        if cluster::lifecycle(node).paused {
            fields
                .annotations
                .insert(argocd::SKIP_RECONCILE_ANNOTATION.into(), "true".into());
            let field = if node.path(&["spec", "paused"]).and_then(Node::as_bool) == Some(true) {
                "spec.paused"
            } else {
                "metadata.annotations"
            };
            ctx.results.push(Object::new(node).finding(
                Finding::info(format!(
                    "the Cluster is paused: its Argo CD Secret gets {}: \"true\" (Argo CD 3.4 and later stop reconciling it)",
                    argocd::SKIP_RECONCILE_ANNOTATION
                ))
                .at(field),
            ));
        }
    }
    if let Some(at) = profile {
        // Every label of the profile, as the reference consumer copies them, whatever their
        // prefix (ApplicationSets select clusters by its cluster manager and cluster set); its
        // annotations as a Cluster's are.
        let node = &ctx.item(at).node;
        let (mut own, findings) =
            cluster::own_metadata(node, false, ctx.config.copy_cluster_annotations);
        for (k, v) in cluster::string_entries(node, "labels") {
            own.labels.insert(k.to_string(), v.to_string());
        }
        fields.overlay(&own);
        for finding in findings {
            ctx.results.push(Object::new(node).finding(finding));
        }
    }
    for key in PROTECTED_LABELS {
        if fields.labels.remove(*key).is_some() {
            let message = format!("label {key} is set by capi2argo and is not overridden");
            ctx.report(source, Severity::Warning, None, message);
        }
    }
    secret.shard = ctx
        .config
        .shards
        .map(|n| argocd::shard(&secret.cluster_name, n));
    secret.fields = fields;
}
