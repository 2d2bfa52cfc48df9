//! Step 1: one pass over the items — the kubeconfig Secrets each source takes, the Argo CD
//! Secrets the function owns, the CAPI Clusters and control planes — with a result for every
//! item that looks like one of them but cannot be read.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::access;
use crate::appsets;
use crate::convert::argocd::{
    OWNED_LABEL, SECRET_TYPE_LABEL, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
};
use crate::fleet::cluster;
use crate::profiles::{self, PROFILE_SOURCE};
use crate::seal;
use crate::sources::{self, PRESETS, Refusal, SOURCE_LABEL, Taken, Variant};
use krm::finding::{Finding, Severity};
use krm::object::Object;
use yaml::{Node, same_content};

use super::context::Ctx;
use super::found::{Candidate, Foreign, Owned, Scan, SecondCopy, Untaken};
use super::ids::{ObjectKey, SecretId, SourceKey};

/// What to do with a kubeconfig given as it is instead of in a Secret.
const BARE_KUBECONFIG_HINT: &str = "this is a kubeconfig, not a Secret holding one; capi2argo wrap <file> puts it into the Secret Cluster API would write for it";

/// Finds kubeconfig Secrets, owned Argo CD Secrets and Clusters; reports items that are not
/// objects at all, or cannot be read.
pub(super) fn scan(ctx: &mut Ctx) -> Scan {
    let mut scanner = Scanner::default();
    // Sized for the input at once: grown from empty, these tables were hashed again and
    // again, a tenth of a large fleet's plan.
    let items = ctx.input.items.len();
    scanner.first.reserve(items);
    scanner.scan.secrets.reserve(items);
    for index in 0..items {
        scanner.item(ctx, index);
    }
    if ctx.config.reads_profiles() {
        scanner.one_per_member(ctx);
        scanner.not_of_another_profile(ctx);
    }
    scanner.finish(ctx)
}

/// The scan under way: what it found, and the identities of what it reads.
#[derive(Default)]
struct Scanner {
    scan: Scan,
    /// The first item of each identity the function reads.
    first: HashMap<ObjectKey, usize>,
    /// The identities given twice with different content (which it takes neither of).
    twice: HashSet<ObjectKey>,
}

impl Scanner {
    fn item(&mut self, ctx: &mut Ctx, index: usize) {
        let node = &ctx.item(index).node;
        let object = Object::new(node);
        // A SealedSecret stands for the Secret it opens to: its name is taken like one's.
        let sealed = seal::is_sealed_secret(object);
        if object.is_secret() || sealed {
            if let Some(name) = object.name() {
                self.scan
                    .secrets
                    .entry(SecretId::new(object.namespace(), name))
                    .or_insert(index);
            }
        }
        if !readable(ctx, index) {
            return;
        }
        if appsets::is_application_set(object) {
            self.scan.appsets.push(appsets::app_set(object, index));
            return;
        }
        if appsets::is_application(object) {
            self.scan.apps.push(appsets::app(object, index));
            return;
        }
        if appsets::is_controller_params(object, &ctx.config.argo_namespace) {
            self.scan.controller_params.get_or_insert(index);
            return;
        }
        let profile = ctx.config.reads_profiles() && profiles::is_cluster_profile(object);
        // Only what the function reads must have sound metadata: Clusters, ClusterProfiles,
        // owned Argo CD Secrets and kubeconfig Secrets. Any other Secret is none of its business.
        let relevant = cluster::is_cluster(node)
            || profile
            || (object.is_secret() && (is_owned(node) || names_a_kubeconfig(ctx, object)))
            || (sealed && is_owned(node));
        if relevant && !metadata_is_sound(ctx, index) {
            self.unsound(object, index);
            return;
        }
        let (Some(kind), Some(name)) = (object.kind(), object.name()) else {
            return;
        };
        let identity = ObjectKey::new(object.namespace(), kind, name);
        if relevant && !self.first_of(ctx, identity.clone(), index) {
            return;
        }
        if cluster::is_cluster(node) {
            self.scan.clusters.entry(identity).or_insert(index);
            return;
        }
        if profile {
            self.profile(ctx, object, index);
            return;
        }
        if kind.ends_with("ControlPlane") {
            self.scan.control_planes.entry(identity).or_insert(index);
            return;
        }
        if sealed {
            // Only an owned one is read (its labels say whose it is; its values stay sealed).
            // Its own labels first; the template's where the Sealed Secrets controller rebuilt
            // it from the Secret (its key renewal re-encrypts from the template alone).
            let template = node.path(&["spec", "template"]);
            if is_owned(node) {
                self.owned(object, index);
            } else if let Some(template) = template.filter(|t| is_owned(t)) {
                self.owned(Object::new(template), index);
            }
            return;
        }
        if !object.is_secret() {
            return;
        }
        if object.label(sources::capi::CLUSTER_NAME_LABEL).is_some()
            && object.label(SECRET_TYPE_LABEL).is_none()
        {
            self.scan.credential_secrets.push(index);
        }
        if access::is_token_secret(object) {
            self.scan.token_secrets.push(index);
            self.token_secret(ctx, object, index);
            return;
        }
        // What the reference ClusterProfile consumer wrote is adopted as the clusterprofile
        // source's own: its name and data are what this run writes, so nothing is renamed.
        let adopted = (ctx.config.reads_profiles() && object.label(OWNED_LABEL) != Some("true"))
            .then(|| profiles::written_by_reference(object))
            .flatten();
        if let Some((profile, _)) = adopted {
            self.scan.owned.push(Owned {
                index,
                source: SourceKey::of(object.namespace(), profile),
                kind: PROFILE_SOURCE.to_string(),
                held: None,
            });
        } else if object.label(OWNED_LABEL) == Some("true") {
            self.owned(object, index);
        } else if object.label(SECRET_TYPE_LABEL) == Some("cluster") {
            let value = |key| {
                object
                    .secret_value(key)
                    .ok()
                    .flatten()
                    .map(|(_, v)| v.trim_end_matches('/').to_string())
                    .unwrap_or_default()
            };
            self.scan.foreign.push(Foreign {
                index,
                name: value("name"),
                server: value("server"),
            });
        } else {
            self.kubeconfig_secret(ctx, object, index);
        }
    }

    /// An Argo CD Secret of this function's (or the SealedSecret that stands for one): the
    /// source it was made from, by its labels.
    fn owned(&mut self, object: Object, index: usize) {
        let label = |key| object.label(key).unwrap_or_default();
        self.scan.owned.push(Owned {
            index,
            source: SourceKey::labelled(label(SOURCE_NAMESPACE_LABEL), label(SOURCE_NAME_LABEL)),
            kind: sources::source_of(object.label(SOURCE_LABEL)).to_string(),
            held: None,
        });
    }

    /// A Secret that is none of the above: a kubeconfig Secret of a source, or nothing of ours.
    fn kubeconfig_secret(&mut self, ctx: &mut Ctx, object: Object, index: usize) {
        let id = SecretId::of(object);
        let key = SourceKey::of(&id.namespace, &id.name);
        let hashed = key.namespace != id.namespace || key.name != id.name;
        match candidate(ctx, object) {
            Ok(Some((source, taken))) => {
                self.scan.kubeconfigs.push(index);
                if hashed {
                    self.scan.real_names.insert(key, id.clone());
                }
                self.scan.candidates.push(Candidate {
                    index,
                    source,
                    id,
                    cluster: taken.cluster,
                    variant: taken.variant,
                });
            }
            Ok(None) => {}
            // Looks like a kubeconfig Secret but is not converted: say why, so a missing
            // label or an unknown suffix does not pass in silence.
            Err(refusal) => {
                self.scan.kubeconfigs.push(index);
                if let Refusal::LeftOut(_) = refusal {
                    if hashed {
                        self.scan.real_names.insert(key.clone(), id);
                    }
                    self.scan.excluded.insert(key);
                }
                ctx.results.push(object.finding(refusal.into_finding()));
            }
        }
    }

    /// A ClusterProfile: a candidate of the clusterprofile source, unless it advertises no
    /// access at all (the reference consumer removes its Secret then) or is left out.
    fn profile(&mut self, ctx: &mut Ctx, object: Object, index: usize) {
        if !profiles::is_readable(object) {
            let message = format!(
                "not read: {} is not a version of ClusterProfile this reads ({}); an Argo CD Secret made from it is kept as it is",
                object.api_version().unwrap_or_default(),
                profiles::API_VERSIONS.join(", ")
            );
            ctx.results
                .push(object.finding(Finding::warning(message).at("apiVersion")));
            self.scan.held.push(Untaken {
                key: SourceKey::of(object.namespace(), object.name().unwrap_or_default()),
                why: "its ClusterProfile is of a version this does not read",
            });
            return;
        }
        let Some(source) = ctx
            .config
            .sources
            .iter()
            .position(|s| s.kind == sources::Kind::ClusterProfiles)
        else {
            return;
        };
        let id = SecretId::of(object);
        let key = SourceKey::of(&id.namespace, &id.name);
        if !ctx.config.allows(object.namespace()) {
            let message = format!(
                "not converted: namespace {} is not in allowedNamespaces",
                object.namespace()
            );
            ctx.results
                .push(object.finding(Finding::info(message).at("metadata.namespace")));
            self.scan.excluded.insert(key);
            return;
        }
        if let Some(list) = profiles::misshapen(object.node) {
            let message = format!(
                "{list} is not a list of access providers: the ClusterProfile is not read, and an Argo CD Secret made from it is kept as it is"
            );
            let field = format!("status.{list}");
            ctx.results
                .push(object.finding(Finding::error(message).at(field)));
            self.scan.held.push(Untaken {
                key,
                why: "its ClusterProfile's access providers cannot be read",
            });
            return;
        }
        if !profiles::advertises(object.node) {
            let message = "advertises no access provider (status.accessProviders, status.credentialProviders): no Argo CD Secret, and one it had goes, as access withdrawn";
            ctx.results
                .push(object.finding(Finding::info(message).at("status.accessProviders")));
            return;
        }
        self.scan.candidates.push(Candidate {
            index,
            source,
            cluster: id.name.clone(),
            id,
            variant: Variant::Plain,
        });
    }

    /// A Secret the reference wrote for another ClusterProfile of the same name (its owner's uid
    /// is not the one in the input) is not adopted: the reference would not take it either.
    fn not_of_another_profile(&mut self, ctx: &Ctx) {
        let uids: HashMap<(&str, &str), &str> = ctx
            .input
            .items
            .iter()
            .map(|item| Object::new(&item.node))
            .filter(|o| profiles::is_cluster_profile(*o))
            .filter_map(|o| {
                let uid = o.node.path(&["metadata", "uid"]).and_then(Node::as_str)?;
                Some(((o.namespace(), o.name()?), uid))
            })
            .collect();
        self.scan.owned.retain(|owned| {
            let object = ctx.object(owned.index);
            if owned.kind != PROFILE_SOURCE || object.label(OWNED_LABEL) == Some("true") {
                return true;
            }
            let Some((name, Some(uid))) = profiles::written_by_reference(object) else {
                return true;
            };
            uids.get(&(owned.source.namespace.as_str(), name))
                .is_none_or(|profile| *profile == uid)
        });
    }

    /// One Argo CD cluster per inventory member: of the ClusterProfiles of one member in one
    /// namespace, the oldest is converted (a tie: none), the others are reported; the same
    /// member in two namespaces would be two Argo CD clusters in one namespace: none is
    /// converted, each reported.
    fn one_per_member(&mut self, ctx: &mut Ctx) {
        let mut members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, c) in self.scan.candidates.iter().enumerate() {
            if ctx.config.sources[c.source].kind != sources::Kind::ClusterProfiles {
                continue;
            }
            if let Some(member) = ctx.object(c.index).label(profiles::MEMBER_LABEL) {
                members.entry(member.to_string()).or_default().push(i);
            }
        }
        let mut out: Vec<(usize, String)> = Vec::new();
        for (member, group) in members.into_iter().filter(|(_, g)| g.len() > 1) {
            let namespaces: std::collections::BTreeSet<&str> = group
                .iter()
                .map(|&i| self.scan.candidates[i].id.namespace.as_str())
                .collect();
            let names = |group: &[usize]| {
                group
                    .iter()
                    .map(|&i| self.scan.candidates[i].id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if namespaces.len() > 1 {
                for &i in &group {
                    out.push((i, format!(
                        "inventory member {member:?} is profiled in more than one namespace ({}): every Argo CD cluster Secret lands in one namespace, so none of them is converted",
                        names(&group)
                    )));
                }
                continue;
            }
            let created =
                |i: usize| profiles::created(&ctx.item(self.scan.candidates[i].index).node);
            let oldest = group.iter().filter_map(|&i| created(i)).min();
            let winners: Vec<usize> = group
                .iter()
                .copied()
                .filter(|&i| oldest.is_some() && created(i) == oldest)
                .collect();
            for &i in &group {
                let message = if winners.len() != 1 {
                    format!(
                        "inventory member {member:?} has {} ClusterProfiles ({}) and no one oldest among them (metadata.creationTimestamp): none is converted",
                        group.len(),
                        names(&group)
                    )
                } else if winners[0] == i {
                    continue;
                } else {
                    format!(
                        "inventory member {member:?} is {}'s, the oldest of its ClusterProfiles: this one gets no Argo CD Secret",
                        self.scan.candidates[winners[0]].id
                    )
                };
                out.push((i, message));
            }
        }
        let mut dropped: Vec<usize> = Vec::new();
        for (i, message) in out {
            let c = &self.scan.candidates[i];
            let object = ctx.object(c.index);
            let finding =
                Finding::warning(message).at(format!("metadata.labels.{}", profiles::MEMBER_LABEL));
            ctx.results.push(object.finding(finding));
            self.scan.held.push(Untaken {
                key: c.key(),
                why: "another ClusterProfile stands for its inventory member",
            });
            dropped.push(i);
        }
        let mut i = 0;
        self.scan.candidates.retain(|_| {
            let keep = !dropped.contains(&i);
            i += 1;
            keep
        });
    }

    /// A token Secret (`credentials: serviceAccount`) in Argo CD's namespace, by the kubeconfig
    /// Secret it is for; one elsewhere is none of the function's.
    fn token_secret(&mut self, ctx: &mut Ctx, object: Object, index: usize) {
        if object.namespace() != ctx.config.argo_namespace {
            return;
        }
        match access::token_for(object) {
            Ok(kubeconfig) => {
                let token = access::read_token(object, index);
                match self.scan.tokens.entry(kubeconfig) {
                    Entry::Occupied(first) => {
                        let kubeconfig = first.key().clone();
                        self.scan.token_extras.push((kubeconfig, token));
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(token);
                    }
                }
            }
            Err(finding) => ctx.results.push(object.finding(finding)),
        }
    }

    /// Whether the item is the first of its identity; a second copy with the same content is
    /// noted as a copy, one with other content is an error and neither copy is used.
    fn first_of(&mut self, ctx: &mut Ctx, identity: ObjectKey, index: usize) -> bool {
        let Some(&at) = self.first.get(&identity) else {
            self.first.insert(identity, index);
            return true;
        };
        if same_content(&ctx.item(at).node, &ctx.item(index).node) {
            self.scan.copies.push(SecondCopy {
                copy: index,
                first: at,
            });
        } else {
            let object = ctx.object(index);
            let message = format!(
                "{} is given twice with different content (items {at} and {index}); neither is used",
                object.resource_ref()
            );
            ctx.report(index, Severity::Error, None, message);
            self.twice.insert(identity);
        }
        false
    }

    /// An owned Secret or a kubeconfig Secret whose metadata cannot be read: held as it is.
    fn unsound(&mut self, object: Object, index: usize) {
        // A ClusterProfile that cannot be read is no withdrawn access: its Secret is kept.
        if profiles::is_cluster_profile(object) {
            if let Some(name) = object.name() {
                self.scan.held.push(Untaken {
                    key: SourceKey::of(object.namespace(), name),
                    why: "its ClusterProfile's metadata cannot be read",
                });
            }
            return;
        }
        if !object.is_secret() {
            return;
        }
        if is_owned(object.node) {
            self.scan.owned.push(Owned {
                index,
                source: SourceKey::default(),
                kind: String::new(),
                held: Some("its metadata cannot be read (see the error on it)"),
            });
        } else if let Some(name) = object.name() {
            self.scan.held.push(Untaken {
                key: SourceKey::of(object.namespace(), name),
                why: "its kubeconfig Secret's metadata cannot be read",
            });
        }
    }

    /// Objects given twice with different content are taken as neither copy.
    fn finish(mut self, ctx: &Ctx) -> Scan {
        // Found item by item, in the input's order: looked up by a binary search.
        debug_assert!(self.scan.owned.is_sorted_by_key(|o| o.index));
        if self.twice.is_empty() {
            return self.scan;
        }
        let twice = &self.twice;
        let taken = |index: usize| {
            let object = ctx.object(index);
            !twice.contains(&ObjectKey::new(
                object.namespace(),
                object.kind().unwrap_or_default(),
                object.name().unwrap_or_default(),
            ))
        };
        let scan = &mut self.scan;
        for c in scan.candidates.iter().filter(|c| !taken(c.index)) {
            scan.held.push(Untaken {
                key: c.key(),
                why: "its kubeconfig Secret is given twice with different content",
            });
        }
        scan.candidates.retain(|c| taken(c.index));
        for o in scan.owned.iter_mut().filter(|o| !taken(o.index)) {
            o.held = Some("it is given twice with different content");
        }
        scan.clusters.retain(|_, i| taken(*i));
        self.scan
    }
}

/// Whether the item can be read as an object at all; a result says why not.
fn readable(ctx: &mut Ctx, index: usize) -> bool {
    let node = &ctx.item(index).node;
    let object = Object::new(node);
    if node.as_map().is_none() {
        let message = format!(
            "item {index} is not a Kubernetes object (got {}); passed through unchanged",
            node.type_name()
        );
        ctx.results.push(Finding::error(message));
        return false;
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
        return false;
    }
    // A kubeconfig is `apiVersion: v1`, `kind: Config` (what kubectl writes).
    if object.is(Some("v1"), "Config") {
        ctx.results
            .push(object.finding(Finding::warning(BARE_KUBECONFIG_HINT)));
        return false;
    }
    true
}

/// Labelled as an Argo CD Secret this function owns (whatever else its metadata holds).
pub(super) fn is_owned(node: &Node) -> bool {
    node.path(&["metadata", "labels", OWNED_LABEL])
        .and_then(Node::scalar)
        .is_some_and(|s| s.text == "true")
}

/// Whether a Secret is a kubeconfig Secret of one of the sources (the first that takes it):
/// the source and what it took; `Err` says why one that looks like it is not converted. A
/// Secret no enabled source takes, but a preset that is not enabled would, gets a hint naming
/// that preset, rather than the near miss of a source it is not meant for.
fn candidate(ctx: &Ctx, object: Object) -> Result<Option<(usize, Taken)>, Refusal> {
    let mut near_miss: Option<Finding> = None;
    for (i, source) in ctx.config.sources.iter().enumerate() {
        match source.take(object) {
            Ok(Some(_)) if !ctx.config.allows(object.namespace()) => {
                return Err(Refusal::LeftOut(
                    Finding::info(format!(
                        "not converted: namespace {} is not in allowedNamespaces",
                        object.namespace()
                    ))
                    .at("metadata.namespace"),
                ));
            }
            Ok(Some(taken)) => return Ok(Some((i, taken))),
            Ok(None) => {}
            Err(refusal @ Refusal::LeftOut(_)) => return Err(refusal),
            Err(Refusal::NotMeant(finding)) => {
                // A warning (labels that name a kubeconfig, without the key) outranks an info.
                if near_miss
                    .as_ref()
                    .is_none_or(|n| finding.severity < n.severity)
                {
                    near_miss = Some(finding);
                }
            }
        }
    }
    let warned = near_miss
        .as_ref()
        .is_some_and(|n| n.severity == Severity::Warning);
    if !warned {
        if let Some(hint) = preset_hint(ctx, object) {
            return Err(Refusal::NotMeant(hint));
        }
    }
    near_miss.map_or(Ok(None), |f| Err(Refusal::NotMeant(f)))
}

/// A hint naming the preset that is not enabled but would take the Secret.
fn preset_hint(ctx: &Ctx, object: Object) -> Option<Finding> {
    let enabled: Vec<&str> = ctx.config.sources.iter().map(|s| s.name.as_str()).collect();
    PRESETS
        .iter()
        .filter(|p| !enabled.contains(&p.name))
        .find_map(|preset| {
            let Ok(Some(taken)) = preset.source().take(object) else {
                return None;
            };
            let name = preset.name;
            let releases = if taken.releases.is_empty() {
                String::new()
            } else {
                format!("; the shape {name} writes in {}", taken.releases)
            };
            Some(
                Finding::info(format!(
                    "not converted: a {name} kubeconfig Secret (cluster {}{releases}); add {name} to sources to convert it (sources: {},{name})",
                    taken.cluster,
                    enabled.join(",")
                ))
                .at("metadata.name"),
            )
        })
}

/// Named like a kubeconfig Secret of one of the sources (a name of any scalar type: one that is
/// not a string is then reported as unsound metadata).
fn names_a_kubeconfig(ctx: &Ctx, object: Object) -> bool {
    object
        .node
        .path(&["metadata", "name"])
        .and_then(Node::scalar)
        .is_some_and(|s| ctx.config.sources.iter().any(|src| src.names_it(&s.text)))
}

/// Secrets and Clusters are read, so their metadata must have the shape the API server enforces.
fn metadata_is_sound(ctx: &mut Ctx, index: usize) -> bool {
    // Found so when the host kept it: the tree is not walked again.
    if ctx.sound.and_then(|s| s.get(index)) == Some(&true) {
        return true;
    }
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

/// Whether `node`'s metadata has the shape the API server enforces (what the scan requires of
/// the objects it reads), said of the node alone: a host that keeps objects finds it once.
pub(crate) fn has_sound_metadata(node: &Node) -> bool {
    Object::new(node).metadata_problems().is_empty()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{TOKEN, kubeconfig_secret, owned_secret, scan_of};
    use super::*;
    use crate::config::Config;
    use crate::sources::preset;

    const FOREIGN: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: by-hand\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: hand\n  server: https://hand.example/\n---\n";
    const CLUSTER: &str = "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: a\n  namespace: fleet\n---\napiVersion: controlplane.cluster.x-k8s.io/v1beta2\nkind: KubeadmControlPlane\nmetadata:\n  name: a-cp\n  namespace: fleet\n---\n";

    #[test]
    fn each_kind_of_item_lands_where_the_steps_look_for_it() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &kubeconfig_secret("a-user-kubeconfig", TOKEN)
            + &owned_secret("cluster-b", "b", "https://b.example")
            + FOREIGN
            + CLUSTER
            + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n";
        let (scan, results) = scan_of(&input, &Config::default());
        assert!(results.is_empty(), "{results:?}");
        let taken: Vec<(&str, &str, Variant)> = scan
            .candidates
            .iter()
            .map(|c| (c.id.name.as_str(), c.cluster.as_str(), c.variant))
            .collect();
        assert_eq!(
            taken,
            [
                ("a-kubeconfig", "a", Variant::Plain),
                ("a-user-kubeconfig", "a", Variant::User)
            ]
        );
        assert_eq!(scan.owned.len(), 1);
        assert_eq!(scan.owned[0].source, SourceKey::of("fleet", "b-kubeconfig"));
        assert_eq!(scan.owned[0].kind, "capi");
        assert_eq!(
            (
                scan.foreign[0].name.as_str(),
                scan.foreign[0].server.as_str()
            ),
            ("hand", "https://hand.example")
        );
        assert!(scan.cluster("fleet", "a").is_some());
        assert_eq!(scan.control_planes.len(), 1);
        assert_eq!(scan.secrets.len(), 4);
    }

    #[test]
    fn one_object_twice_is_a_copy_and_two_contents_under_one_name_are_neither() {
        let one = kubeconfig_secret("a-kubeconfig", TOKEN);
        let (scan, results) = scan_of(&(one.clone() + &one), &Config::default());
        assert!(results.is_empty(), "{results:?}");
        assert_eq!((scan.candidates.len(), scan.copies.len()), (1, 1));
        let other = one.replace("static-token", "another-token");
        let (scan, results) = scan_of(&(one + &other), &Config::default());
        assert!(scan.candidates.is_empty());
        assert_eq!(scan.held.len(), 1, "its Argo CD Secret is held as it is");
        assert!(
            results[0]
                .message
                .contains("given twice with different content"),
            "{results:?}"
        );
    }

    /// Regression (issue 36): a preset's labels were accepted and ignored; a Secret without them
    /// is now left to another run, like one outside allowedNamespaces.
    #[test]
    fn what_the_settings_leave_out_is_another_runs() {
        let mut narrowed = preset("capi").unwrap();
        narrowed.narrowed_to = vec![crate::sources::Label::is("team", "platform")];
        let config = Config {
            sources: vec![narrowed],
            ..Config::default()
        };
        let mine = kubeconfig_secret("a-kubeconfig", TOKEN).replace(
            "    cluster.x-k8s.io/cluster-name: a\n",
            "    cluster.x-k8s.io/cluster-name: a\n    team: platform\n",
        );
        let input = mine + &kubeconfig_secret("b-kubeconfig", TOKEN);
        let (scan, results) = scan_of(&input, &config);
        assert_eq!(scan.candidates.len(), 1);
        assert!(
            scan.excluded
                .contains(&SourceKey::of("fleet", "b-kubeconfig"))
        );
        assert!(
            results[0]
                .message
                .contains("takes only Secrets labelled team=platform"),
            "{results:?}"
        );
        let config = Config {
            allowed_namespaces: Some(vec!["elsewhere".into()]),
            ..Config::default()
        };
        let (scan, results) = scan_of(&kubeconfig_secret("b-kubeconfig", TOKEN), &config);
        assert!(scan.candidates.is_empty());
        assert!(
            scan.excluded
                .contains(&SourceKey::of("fleet", "b-kubeconfig"))
        );
        assert!(
            results[0].message.contains("allowedNamespaces"),
            "{results:?}"
        );
    }

    #[test]
    fn a_secret_a_preset_not_enabled_would_take_gets_a_hint_naming_it() {
        let kamaji = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tcp-admin-kubeconfig\n  namespace: t\n  labels:\n    kamaji.clastix.io/component: admin-kubeconfig\n    kamaji.clastix.io/name: tcp\nstringData:\n  admin.conf: x\n";
        let (scan, results) = scan_of(kamaji, &Config::default());
        assert!(scan.candidates.is_empty());
        assert!(
            results[0].message.contains("add kamaji to sources"),
            "{results:?}"
        );
    }
}
