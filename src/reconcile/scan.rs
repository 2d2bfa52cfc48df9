//! Step 1: one pass over the items — the kubeconfig Secrets each source takes, the Argo CD
//! Secrets the function owns, the CAPI Clusters and control planes — with a result for every
//! item that looks like one of them but cannot be read.

use std::collections::{HashMap, HashSet};

use crate::convert::argocd::{
    OWNED_LABEL, SECRET_TYPE_LABEL, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
};
use crate::fleet::cluster;
use crate::fleet::source::{self, PRESETS, SOURCE_LABEL, Taken, Variant};
use crate::krm::finding::{Finding, Severity};
use crate::krm::object::Object;
use crate::yaml::{Node, same_content};

use super::{Ctx, source_key};

/// What to do with a kubeconfig given as it is instead of in a Secret.
const BARE_KUBECONFIG_HINT: &str = "this is a kubeconfig, not a Secret holding one; wrap it: kubectl create secret generic <cluster>-kubeconfig --from-file=value=<file> --dry-run=client -o yaml, then label it cluster.x-k8s.io/cluster-name=<cluster>";

/// A kubeconfig Secret found in the input.
pub(super) struct Candidate {
    pub index: usize,
    /// Which of the config's sources took it.
    pub source: usize,
    pub namespace: String,
    pub name: String,
    pub cluster: String,
    pub variant: Variant,
}

/// An Argo CD cluster Secret in the input that is not the function's: never touched, but no
/// Secret of the function's may give Argo CD a second cluster of its server or name.
pub(super) struct Foreign {
    pub index: usize,
    pub name: String,
    pub server: String,
}

/// An owned Argo CD Secret in the input, and the kubeconfig Secret its labels name.
pub(super) struct Owned {
    pub index: usize,
    /// The kubeconfig Secret's namespace and name, as label values.
    pub source: (String, String),
    /// The source (`capi2argo.dev/source`, `capi` when absent) that made it.
    pub kind: String,
}

/// What the scan found, hashed for lookups.
#[derive(Default)]
pub(super) struct Scan {
    pub candidates: Vec<Candidate>,
    pub owned: Vec<Owned>,
    /// CAPI Clusters by namespace and name.
    pub clusters: HashMap<(String, String), usize>,
    /// Control plane objects by namespace, kind and name (for the Kubernetes version).
    pub control_planes: HashMap<(String, String, String), usize>,
    /// Kubeconfig Secrets the scan could not take (unsound metadata, given twice), and why:
    /// their Argo CD Secrets stay as they are, never pruned for it.
    pub held: Vec<((String, String), &'static str)>,
    /// Second copies of an object (same identity, same content) and the first copy they follow:
    /// replaced or pruned with it, kept with it, so a second run finds one copy and changes nothing.
    pub copies: Vec<(usize, usize)>,
    /// Every Secret of the input by namespace and name (the first of two that share them).
    pub secrets: HashMap<(String, String), usize>,
    /// Owned Argo CD Secrets the scan could not take (unsound metadata, given twice), and why:
    /// kept exactly as they are.
    pub held_owned: Vec<(usize, &'static str)>,
    /// Argo CD cluster Secrets that are not the function's.
    pub foreign: Vec<Foreign>,
    /// Kubeconfig Secrets a source takes in namespaces `allowedNamespaces` leaves out, as the
    /// owned Secrets' labels name them: their Argo CD Secrets are another pipeline's.
    pub excluded: HashSet<(String, String)>,
    /// The kubeconfig Secrets of the input by the key their Argo CD Secrets' labels name them by
    /// (label values: long names are cut and hashed), with their real namespace and name.
    pub real_names: HashMap<(String, String), (String, String)>,
}

impl Scan {
    /// How many kubeconfig Secrets the config's source `source` took.
    pub fn taken_by(&self, source: usize) -> usize {
        self.candidates
            .iter()
            .filter(|c| c.source == source)
            .count()
    }
}

/// Finds kubeconfig Secrets, owned Argo CD Secrets and Clusters; reports items that are not
/// objects at all, or cannot be read.
pub(super) fn scan(ctx: &mut Ctx) -> Scan {
    let mut scan = Scan::default();
    // The first item of each identity the function reads, and the identities given twice
    // with different content (which it takes neither of).
    let mut first: HashMap<(String, String, String), usize> = HashMap::new();
    let mut twice: HashSet<(String, String, String)> = HashSet::new();
    for index in 0..ctx.input.items.len() {
        let node = &ctx.item(index).node;
        let object = Object::new(node);
        if object.is_secret() {
            if let Some(name) = object.name() {
                scan.secrets
                    .entry((object.namespace().to_string(), name.to_string()))
                    .or_insert(index);
            }
        }
        if node.as_map().is_none() {
            let message = format!(
                "item {index} is not a Kubernetes object (got {}); passed through unchanged",
                node.type_name()
            );
            ctx.results.push(Finding::error(message));
            continue;
        }
        // A list that could not be read as one (its items are not a list) is not taken apart.
        if object
            .kind()
            .is_some_and(|k| k.ends_with("List") && k != "ResourceList")
        {
            ctx.results.push(object.finding(
                Finding::warning(
                    "looks like a list, but its items are not a list: passed through unchanged, nothing in it converted",
                )
                .at("items"),
            ));
            continue;
        }
        // A kubeconfig is `apiVersion: v1`, `kind: Config` (what kubectl writes).
        if object.is(Some("v1"), "Config") {
            ctx.results
                .push(object.finding(Finding::warning(BARE_KUBECONFIG_HINT)));
            continue;
        }
        // Only what the function reads must have sound metadata: Clusters, owned Argo CD
        // Secrets and kubeconfig Secrets. Any other Secret is none of its business.
        let relevant = cluster::is_cluster(node)
            || (object.is_secret() && (is_owned(node) || names_a_kubeconfig(ctx, node)));
        if relevant && !metadata_is_sound(ctx, index) {
            if object.is_secret() && is_owned(node) {
                scan.held_owned
                    .push((index, "its metadata cannot be read (see the error on it)"));
            } else if let Some(name) = object.name().filter(|_| object.is_secret()) {
                scan.held.push((
                    source_key(object.namespace(), name),
                    "its kubeconfig Secret's metadata cannot be read",
                ));
            }
            continue;
        }
        let (Some(kind), Some(name)) = (object.kind(), object.name()) else {
            continue;
        };
        let namespace = object.namespace().to_string();
        if relevant {
            let identity = (kind.to_string(), namespace.clone(), name.to_string());
            match first.get(&identity) {
                None => {
                    first.insert(identity, index);
                }
                // The same object twice is one object.
                Some(&at) if same_content(&ctx.item(at).node, node) => {
                    scan.copies.push((index, at));
                    continue;
                }
                Some(&at) => {
                    let message = format!(
                        "{} is given twice with different content (items {at} and {index}); neither is used",
                        object.resource_ref()
                    );
                    ctx.report(index, Severity::Error, None, message);
                    twice.insert(identity);
                    continue;
                }
            }
        }
        if cluster::is_cluster(node) {
            scan.clusters
                .entry((namespace, name.to_string()))
                .or_insert(index);
            continue;
        }
        if kind.ends_with("ControlPlane") {
            scan.control_planes
                .entry((namespace, kind.to_string(), name.to_string()))
                .or_insert(index);
            continue;
        }
        if !object.is_secret() {
            continue;
        }
        if object.label(OWNED_LABEL) == Some("true") {
            let label = |key| object.label(key).unwrap_or_default().to_string();
            scan.owned.push(Owned {
                index,
                source: (label(SOURCE_NAMESPACE_LABEL), label(SOURCE_NAME_LABEL)),
                kind: object.label(SOURCE_LABEL).unwrap_or("capi").to_string(),
            });
            continue;
        }
        if object.label(SECRET_TYPE_LABEL) == Some("cluster") {
            let value = |key| {
                object
                    .secret_value(key)
                    .ok()
                    .flatten()
                    .map(|(_, v)| v.trim_end_matches('/').to_string())
                    .unwrap_or_default()
            };
            scan.foreign.push(Foreign {
                index,
                name: value("name"),
                server: value("server"),
            });
            continue;
        }
        match candidate(ctx, object) {
            Ok(Some((source, taken))) => {
                scan.real_names.insert(
                    source_key(&namespace, name),
                    (namespace.clone(), name.to_string()),
                );
                scan.candidates.push(Candidate {
                    index,
                    source,
                    namespace,
                    name: name.to_string(),
                    cluster: taken.cluster,
                    variant: taken.variant,
                });
            }
            Ok(None) => {}
            // Looks like a kubeconfig Secret but is not converted: say why, so a missing
            // label or an unknown suffix does not pass in silence.
            Err(finding) => {
                if finding.field.as_deref() == Some(NAMESPACE_FIELD) {
                    let key = source_key(&namespace, name);
                    scan.real_names
                        .insert(key.clone(), (namespace.clone(), name.to_string()));
                    scan.excluded.insert(key);
                }
                ctx.results.push(object.finding(finding));
            }
        }
    }
    if !twice.is_empty() {
        let taken = |index: usize| {
            let object = ctx.object(index);
            let identity = (
                object.kind().unwrap_or_default().to_string(),
                object.namespace().to_string(),
                object.name().unwrap_or_default().to_string(),
            );
            !twice.contains(&identity)
        };
        for c in scan.candidates.iter().filter(|c| !taken(c.index)) {
            scan.held.push((
                source_key(&c.namespace, &c.name),
                "its kubeconfig Secret is given twice with different content",
            ));
        }
        scan.candidates.retain(|c| taken(c.index));
        for o in scan.owned.iter().filter(|o| !taken(o.index)) {
            scan.held_owned
                .push((o.index, "it is given twice with different content"));
        }
        scan.owned.retain(|o| taken(o.index));
        scan.clusters.retain(|_, i| taken(*i));
    }
    scan
}

/// Labelled as an Argo CD Secret this function owns (whatever else its metadata holds).
pub(super) fn is_owned(node: &Node) -> bool {
    node.path(&["metadata", "labels", OWNED_LABEL])
        .and_then(Node::scalar)
        .is_some_and(|s| s.text == "true")
}

/// The field of the result that says a kubeconfig Secret's namespace is outside
/// `allowedNamespaces` (the scan keeps the Argo CD Secrets of those).
const NAMESPACE_FIELD: &str = "metadata.namespace";

/// Whether a Secret is a kubeconfig Secret of one of the sources (the first that takes it):
/// the source and what it took; `Err` says why one that looks like it is not converted. A
/// Secret no enabled source takes, but a preset that is not enabled would, gets a hint naming
/// that preset, rather than the near miss of a source it is not meant for.
fn candidate(ctx: &Ctx, object: Object) -> Result<Option<(usize, Taken)>, Finding> {
    let mut near_miss: Option<Finding> = None;
    for (i, source) in ctx.config.sources.iter().enumerate() {
        match source.take(object) {
            Ok(Some(taken)) => {
                if !ctx.config.allows(object.namespace()) {
                    return Err(Finding::info(format!(
                        "not converted: namespace {} is not in allowedNamespaces",
                        object.namespace()
                    ))
                    .at(NAMESPACE_FIELD));
                }
                return Ok(Some((i, taken)));
            }
            Ok(None) => {}
            Err(finding) => {
                // A warning (labels that name a kubeconfig, without the key) outranks an info.
                let stronger = near_miss
                    .as_ref()
                    .is_none_or(|n| finding.severity < n.severity);
                if stronger {
                    near_miss = Some(finding);
                }
            }
        }
    }
    if near_miss
        .as_ref()
        .is_some_and(|n| n.severity == Severity::Warning)
    {
        return near_miss.map_or(Ok(None), Err);
    }
    let enabled: Vec<&str> = ctx.config.sources.iter().map(|s| s.name.as_str()).collect();
    for name in PRESETS.iter().filter(|p| !enabled.contains(p)) {
        let Some(preset) = source::preset(name) else {
            continue;
        };
        if let Ok(Some(taken)) = preset.take(object) {
            let releases = if taken.releases.is_empty() {
                String::new()
            } else {
                format!("; the shape {name} writes in {}", taken.releases)
            };
            return Err(Finding::info(format!(
                "not converted: a {name} kubeconfig Secret (cluster {}{releases}); add {name} to sources to convert it (sources: {},{name})",
                taken.cluster,
                enabled.join(",")
            ))
            .at("metadata.name"));
        }
    }
    near_miss.map_or(Ok(None), Err)
}

/// Named like a kubeconfig Secret of one of the sources.
fn names_a_kubeconfig(ctx: &Ctx, node: &Node) -> bool {
    node.path(&["metadata", "name"])
        .and_then(Node::scalar)
        .is_some_and(|s| ctx.config.sources.iter().any(|src| src.names_it(&s.text)))
}

/// Secrets and Clusters are read, so their metadata must have the shape the API server enforces.
fn metadata_is_sound(ctx: &mut Ctx, index: usize) -> bool {
    let object = ctx.object(index);
    let problems = object.metadata_problems();
    let sound = problems.is_empty();
    for problem in problems {
        let message = format!(
            "{}; the resource is passed through unchanged",
            problem.message
        );
        ctx.results
            .push(object.finding(Finding { message, ..problem }));
    }
    sound
}
