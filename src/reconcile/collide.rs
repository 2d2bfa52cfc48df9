//! One Argo CD cluster per cluster. Argo CD keys clusters by server (two Secrets of one server
//! fight over one cache entry, argo-cd 2288, 9606) and by `name` (two of one name fail every
//! Application naming it, argo-cd 7287), and a Secret name holds one Secret: conversions that
//! would break one of these are a collision, reported on each, and none of them is written —
//! unless a rule the book states (docs/src/sources.md) picks one, the others then naming it:
//!
//! - across sources, the source listed first in `sources` wins (Kamaji's `<tcp>-admin-kubeconfig`
//!   and the Cluster API copy of the same TenantControlPlane, by server or by the copy's
//!   `kamaji.clastix.io/tcp` label);
//! - a Crossplane claim's Secret wins over its composite's and its managed resource's;
//! - of one source's Secrets that give one name, the only one whose server Argo CD can reach
//!   wins (vcluster's exported Secret in another namespace beside its `vc-<name>`).

use std::collections::BTreeMap;

use crate::convert::argocd::SECRET_TYPE_LABEL;
use crate::convert::kubeconfig::without_userinfo;
use crate::krm::finding::Severity;
use crate::krm::object::Object;
use crate::yaml::Node;

use super::convert::Conversion;
use super::scan::Scan;
use super::{Ctx, source_key};

/// The label the Cluster API provider for Kamaji puts on the kubeconfig Secret it copies from a
/// TenantControlPlane's (cluster-api-control-plane-provider-kamaji
/// `controllers/kamajicontrolplane_controller_resources.go`).
const KAMAJI_TCP_LABEL: &str = "kamaji.clastix.io/tcp";

/// What is left once every collision is settled.
#[derive(Default)]
pub(super) struct Outcome {
    /// The conversions to place, with their order of conversion.
    pub survivors: Vec<(usize, Conversion)>,
    /// Kubeconfig Secrets (label keys) whose Argo CD Secret stays as it is, and why.
    pub unsettled: Vec<(Vec<(String, String)>, String)>,
    /// Owned Argo CD Secrets two clusters both map to, kept as they are, and why.
    pub contested: Vec<(usize, String)>,
}

/// Settles every collision among `conversions`.
pub(super) fn resolve(ctx: &mut Ctx, scan: &Scan, conversions: Vec<Conversion>) -> Outcome {
    let mut alive: Vec<Option<Conversion>> = conversions.into_iter().map(Some).collect();
    let mut out = Outcome::default();
    linked(ctx, &mut alive);
    same_server(ctx, &mut alive, &mut out);
    same_name(ctx, &mut alive, &mut out);
    same_secret(ctx, scan, &mut alive, &mut out);
    foreign(ctx, scan, &mut alive, &mut out);
    out.survivors = alive
        .into_iter()
        .enumerate()
        .filter_map(|(seq, c)| c.map(|c| (seq, c)))
        .collect();
    out
}

/// The conversions still in play, grouped by `key`, in the order of the keys; groups of two
/// or more only.
fn groups(alive: &[Option<Conversion>], key: impl Fn(&Conversion) -> String) -> Vec<Vec<usize>> {
    let mut by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, c) in alive.iter().enumerate() {
        if let Some(c) = c {
            by.entry(key(c)).or_default().push(i);
        }
    }
    by.into_values().filter(|g| g.len() > 1).collect()
}

fn named(c: &Conversion) -> String {
    format!("{}/{}", c.secret.source_namespace, c.secret.source_name)
}

/// `loser` is the same cluster as `winner`: not converted, said on it; its kubeconfig Secrets
/// join the winner's, so an Argo CD Secret made from them earlier is the winner's to rename.
fn yield_to(
    ctx: &mut Ctx,
    alive: &mut [Option<Conversion>],
    loser: usize,
    winner: usize,
    why: &str,
) {
    let Some(lost) = alive[loser].take() else {
        return;
    };
    let Some(won) = alive[winner].as_mut() else {
        return;
    };
    let message = format!(
        "not converted: {why}; {} is converted for this cluster",
        named(won)
    );
    ctx.report(lost.from, Severity::Info, None, message);
    won.members.extend(lost.members);
}

/// A collision: each conversion of `group` is an error, none is converted, and the Argo CD
/// Secrets made from them stay as they are.
fn collision(
    ctx: &mut Ctx,
    alive: &mut [Option<Conversion>],
    out: &mut Outcome,
    group: &[usize],
    message: &str,
    reason: &str,
) {
    for &i in group {
        if let Some(c) = alive[i].take() {
            ctx.report(
                c.from,
                Severity::Error,
                Some("metadata.name"),
                message.to_string(),
            );
            out.unsettled.push((c.members, reason.to_string()));
        }
    }
}

/// Kamaji's own Secret of a TenantControlPlane that Cluster API manages stands aside for the one
/// of the source listed first, whatever their servers (the copy may point at `admin.svc`).
fn linked(ctx: &mut Ctx, alive: &mut [Option<Conversion>]) {
    let mut copies: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, c) in alive.iter().enumerate() {
        let Some(c) = c.as_ref().filter(|c| ctx.config.sources[c.kind].capi) else {
            continue;
        };
        if let Some(tcp) = ctx.object(c.from).label(KAMAJI_TCP_LABEL) {
            copies.insert((c.secret.source_namespace.clone(), tcp.to_string()), i);
        }
    }
    for i in 0..alive.len() {
        let Some(c) = alive[i].as_ref() else {
            continue;
        };
        if ctx.config.sources[c.kind].name != "kamaji" {
            continue;
        }
        let key = (c.secret.source_namespace.clone(), c.cluster.clone());
        let Some(&copy) = copies.get(&key) else {
            continue;
        };
        let (kamaji, capi) = (c.kind, alive[copy].as_ref().map_or(0, |c| c.kind));
        let (loser, winner) = if capi < kamaji { (i, copy) } else { (copy, i) };
        let why = format!(
            "TenantControlPlane {} is also a Cluster API cluster (its copy names it in the {KAMAJI_TCP_LABEL} label), and the source listed first in sources converts it",
            key.1
        );
        yield_to(ctx, alive, loser, winner, &why);
    }
}

fn same_server(ctx: &mut Ctx, alive: &mut [Option<Conversion>], out: &mut Outcome) {
    for group in groups(alive, |c| c.secret.server.clone()) {
        let first = group
            .iter()
            .filter_map(|&i| alive[i].as_ref().map(|c| c.kind))
            .min()
            .unwrap_or(0);
        let (winners, losers): (Vec<usize>, Vec<usize>) = group
            .iter()
            .partition(|&&i| alive[i].as_ref().is_some_and(|c| c.kind == first));
        let first_name = ctx.config.sources[first].name.clone();
        for loser in losers {
            let why = format!(
                "the same server as {} (source {first_name}, listed first in sources): one cluster",
                alive[winners[0]].as_ref().map(named).unwrap_or_default()
            );
            yield_to(ctx, alive, loser, winners[0], &why);
        }
        if winners.len() < 2 {
            continue;
        }
        if first_name == "crossplane" {
            if let Some(claim) = crossplane_claim(ctx, alive, &winners) {
                for &other in winners.iter().filter(|&&w| w != claim) {
                    let why = "the same connection details as a Crossplane claim's Secret, which wins over its composite's and its managed resource's";
                    yield_to(ctx, alive, other, claim, why);
                }
                continue;
            }
        }
        let names: Vec<String> = winners
            .iter()
            .filter_map(|&i| alive[i].as_ref().map(named))
            .collect();
        let server = alive[winners[0]]
            .as_ref()
            .map(|c| without_userinfo(&c.secret.server).0)
            .unwrap_or_default();
        let message = format!(
            "clusters {} have the same server {server}: Argo CD keys clusters by server and would use only one of them (argo-cd 2288, 9606); neither is converted",
            names.join(" and ")
        );
        let reason = format!("clusters {} have one server", names.join(" and "));
        collision(ctx, alive, out, &winners, &message, &reason);
    }
}

/// A Crossplane claim's Secret among Secrets of one server: the one whose owner's kind, with an
/// `X` in front, is another one's owner in the same API group (a composite resource definition
/// names its composite `X<claim kind>`, the convention Crossplane's own definitions follow); the
/// managed resource's owner is in a provider's group.
fn crossplane_claim(ctx: &Ctx, alive: &[Option<Conversion>], group: &[usize]) -> Option<usize> {
    let owner = |i: usize| -> Option<(String, String)> {
        let c = alive[i].as_ref()?;
        let refs = ctx
            .object(c.from)
            .node
            .path(&["metadata", "ownerReferences"])?;
        let first = refs
            .as_seq()?
            .iter()
            .find(|r| r.get("controller").and_then(Node::as_bool) == Some(true))?;
        let group = first
            .get("apiVersion")
            .and_then(Node::as_str)?
            .split('/')
            .next()?;
        let kind = first.get("kind").and_then(Node::as_str)?;
        Some((group.to_string(), kind.to_string()))
    };
    let owners: Vec<(usize, Option<(String, String)>)> =
        group.iter().map(|&i| (i, owner(i))).collect();
    owners.iter().find_map(|(i, claim)| {
        let (group, kind) = claim.as_ref()?;
        owners
            .iter()
            .any(|(_, composite)| {
                composite
                    .as_ref()
                    .is_some_and(|(g, k)| g == group && *k == format!("X{kind}"))
            })
            .then_some(*i)
    })
}

fn same_name(ctx: &mut Ctx, alive: &mut [Option<Conversion>], out: &mut Outcome) {
    for group in groups(alive, |c| c.secret.cluster_name.clone()) {
        let members: Vec<&Conversion> = group.iter().filter_map(|&i| alive[i].as_ref()).collect();
        let one_source = members.windows(2).all(|w| w[0].kind == w[1].kind);
        let reachable: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&i| alive[i].as_ref().is_some_and(|c| c.reachable))
            .collect();
        if one_source && reachable.len() == 1 {
            let winner = reachable[0];
            for &other in group.iter().filter(|&&i| i != winner) {
                let why = "the same Argo CD cluster name, and only the other's server is one Argo CD can reach";
                yield_to(ctx, alive, other, winner, why);
            }
            continue;
        }
        let names: Vec<String> = members.iter().map(|c| named(c)).collect();
        let cluster = members[0].secret.cluster_name.clone();
        let from_kubeconfig = members.iter().any(|c| {
            ctx.config.name_from == crate::config::NameFrom::Kubeconfig
                || ctx.config.sources[c.kind].names_from_kubeconfig()
        });
        let hint = if from_kubeconfig {
            "their kubeconfigs name their clusters alike: nameFrom=secret names them after their Secrets"
        } else {
            "namespacedNames=true puts each namespace in the name"
        };
        let message = format!(
            "clusters {} would both be Argo CD cluster {cluster:?}: Argo CD refuses two clusters of one name, and every Application naming it fails (argo-cd 7287); neither is converted; {hint}",
            names.join(" and ")
        );
        let reason = format!("clusters {} share one Argo CD name", names.join(" and "));
        collision(ctx, alive, out, &group, &message, &reason);
    }
}

fn same_secret(ctx: &mut Ctx, scan: &Scan, alive: &mut [Option<Conversion>], out: &mut Outcome) {
    let ns = ctx.config.argo_namespace.clone();
    for group in groups(alive, |c| c.secret.secret_name.clone()) {
        let members: Vec<&Conversion> = group.iter().filter_map(|&i| alive[i].as_ref()).collect();
        let name = members[0].secret.secret_name.clone();
        let names: Vec<String> = members.iter().map(|c| named(c)).collect();
        let message = format!(
            "clusters {} all map to Argo CD Secret {ns}/{name}; set namespacedNames=true to keep them apart",
            names.join(" and ")
        );
        let reason = format!("clusters {} collide over its name", names.join(" and "));
        if let Some(&at) = scan.secrets.get(&(ns.clone(), name.clone())) {
            let owned = scan.owned.iter().any(|o| o.index == at)
                || scan.held_owned.iter().any(|&(i, _)| i == at);
            if owned {
                out.contested.push((at, reason.clone()));
            }
        }
        collision(ctx, alive, out, &group, &message, &reason);
    }
}

/// An Argo CD cluster Secret that is not the function's, with the server or the name a
/// conversion would give: a second Secret would be the same collision in Argo CD.
fn foreign(ctx: &mut Ctx, scan: &Scan, alive: &mut [Option<Conversion>], out: &mut Outcome) {
    for slot in alive.iter_mut() {
        let Some(c) = slot.as_ref() else {
            continue;
        };
        let clash = scan.foreign.iter().find_map(|f| {
            let what = if !f.server.is_empty() && f.server == c.secret.server {
                format!("has the server {}", without_userinfo(&f.server).0)
            } else if !f.name.is_empty() && f.name == c.secret.cluster_name {
                format!("is Argo CD cluster {}", f.name)
            } else {
                return None;
            };
            Some((f.index, what))
        });
        let Some((at, what)) = clash else {
            continue;
        };
        let Some(c) = slot.take() else {
            continue;
        };
        let other = Object::new(&ctx.item(at).node).resource_ref();
        let message = format!(
            "{other} (labelled {SECRET_TYPE_LABEL}=cluster, not capi2argo's) already {what}: a second Secret would give Argo CD two clusters for one; not converted (remove that Secret, or label it capi-to-argocd/owned=\"true\" for capi2argo to manage)"
        );
        ctx.report(c.from, Severity::Error, None, message);
        let key = source_key(&c.secret.source_namespace, &c.secret.source_name);
        out.unsettled.push((
            c.members,
            format!("{other} already has its cluster ({key:?})"),
        ));
    }
}
