//! One Argo CD cluster per cluster. Argo CD keys clusters by server (two Secrets of one server
//! fight over one cache entry, argo-cd 2288, 9606) and by `name` (two of one name fail every
//! Application naming it, argo-cd 7287), and a Secret name holds one Secret: conversions that
//! would break one of these are a collision, reported on each, and none of them is written —
//! unless a rule the book states (docs/src/sources.md) picks one, the others then naming it:
//!
//! - across sources, the source listed first in `sources` wins (for one server, and for a copy
//!   a source's [`Precedence::copied_as`] names, such as Kamaji's TenantControlPlane that
//!   Cluster API manages);
//! - among one source's Secrets of one server, the one its [`Precedence::prefer`] rule picks
//!   (a Crossplane claim's over its composite's and its managed resource's);
//! - of one source's Secrets that give one name, the only one whose server Argo CD can reach
//!   wins (vcluster's exported Secret in another namespace beside its `vc-<name>`).
//!
//! [`Precedence::copied_as`]: crate::sources::Precedence::copied_as
//! [`Precedence::prefer`]: crate::sources::Precedence::prefer

use std::collections::BTreeMap;

use crate::config::NameFrom;
use crate::convert::argocd::SECRET_TYPE_LABEL;
use crate::convert::kubeconfig::without_userinfo;
use krm::finding::Severity;
use krm::object::Object;

use super::context::Ctx;
use super::convert::{Conversion, Unsettled};
use super::found::Scan;
use super::ids::SecretId;
use super::outcome::ClusterState;

/// An owned Argo CD Secret two clusters both map to: kept as it is, for this reason.
#[derive(Debug)]
pub(super) struct Contested {
    pub at: usize,
    pub why: String,
}

/// What is left once every collision is settled.
pub(super) struct Outcome<'x, 'a> {
    /// The conversions to place, in the order of conversion.
    pub survivors: Vec<Conversion<'x, 'a>>,
    /// Clusters whose Argo CD Secret stays as it is, and why.
    pub unsettled: Vec<Unsettled>,
    pub contested: Vec<Contested>,
}

/// The conversions, and which are still in play: one leaves when it yields or collides.
struct Field<'c, 'x, 'a> {
    ctx: &'c mut Ctx<'x, 'a>,
    all: Vec<Conversion<'x, 'a>>,
    alive: Vec<bool>,
    out: Outcome<'x, 'a>,
}

/// Settles every collision among `conversions`.
pub(super) fn resolve<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    conversions: Vec<Conversion<'x, 'a>>,
) -> Outcome<'x, 'a> {
    let mut field = Field {
        ctx,
        alive: vec![true; conversions.len()],
        all: conversions,
        out: Outcome {
            survivors: Vec::new(),
            unsettled: Vec::new(),
            contested: Vec::new(),
        },
    };
    field.copies();
    field.same_server();
    field.same_name();
    field.same_secret(scan);
    field.foreign(scan);
    let Field {
        mut all,
        alive,
        mut out,
        ..
    } = field;
    let mut alive = alive.into_iter();
    all.retain(|_| alive.next().unwrap_or(false));
    out.survivors = all;
    out
}

fn named(c: &Conversion) -> String {
    c.made_from.to_string()
}

impl<'x, 'a> Field<'_, 'x, 'a> {
    /// The conversions still in play, grouped by `key`, in the order of the keys; groups of two
    /// or more only.
    fn groups(&self, key: impl Fn(&Conversion) -> String) -> Vec<Vec<usize>> {
        let mut by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, c) in self.all.iter().enumerate().filter(|&(i, _)| self.alive[i]) {
            by.entry(key(c)).or_default().push(i);
        }
        by.into_values().filter(|g| g.len() > 1).collect()
    }

    fn get(&self, i: usize) -> Option<&Conversion<'x, 'a>> {
        self.alive[i].then(|| &self.all[i])
    }

    /// `loser` is the same cluster as `winner`: not converted, said on it; its kubeconfig
    /// Secrets join the winner's, so an Argo CD Secret made from them earlier is the winner's to
    /// rename.
    fn yield_to(&mut self, loser: usize, winner: usize, why: &str) {
        if !(self.alive[loser] && self.alive[winner]) {
            return;
        }
        self.alive[loser] = false;
        let members = std::mem::take(&mut self.all[loser].members);
        let won = &mut self.all[winner];
        let message = format!(
            "not converted: {why}; {} is converted for this cluster",
            named(won)
        );
        won.members.extend(members);
        let into = won.outcome;
        let (from, folded) = (self.all[loser].from, self.all[loser].outcome);
        self.ctx.outcomes.fold(folded, into);
        self.ctx.report(from, Severity::Info, None, message);
    }

    /// A collision: each conversion of `group` is an error, none is converted, and the Argo CD
    /// Secrets made from them stay as they are.
    /// `in_kubeconfig`: what collides comes from the kubeconfig (its server, its cluster entry's
    /// name), so the error names the kubeconfig's field; otherwise the Secret's name.
    fn collision(&mut self, group: &[usize], message: &str, why: &str, in_kubeconfig: bool) {
        for &i in group {
            if std::mem::take(&mut self.alive[i]) {
                let c = &mut self.all[i];
                let members = std::mem::take(&mut c.members);
                let message = message.to_string();
                let field = if in_kubeconfig {
                    c.field.clone()
                } else {
                    "metadata.name".to_string()
                };
                self.ctx
                    .report(c.from, Severity::Error, Some(&field), message);
                self.ctx.outcomes.set(c.outcome, ClusterState::Failed, why);
                self.out.unsettled.push(Unsettled {
                    members,
                    why: why.to_string(),
                });
            }
        }
    }

    /// A source's Secret that another source's copy names (by the source's `copied_as` label,
    /// in the same namespace) stands aside for the source listed first, whatever their servers
    /// (the copy may point at another address of the same control plane).
    fn copies(&mut self) {
        let config = self.ctx.config;
        let sources = &config.sources;
        let mut pairs = Vec::new();
        for (i, c) in self.all.iter().enumerate().filter(|&(i, _)| self.alive[i]) {
            let Some(label) = sources[c.source].precedence.copied_as else {
                continue;
            };
            for (j, d) in self.all.iter().enumerate() {
                if !self.alive[j] || d.source == c.source {
                    continue;
                }
                let copy = self.ctx.object(d.from);
                if d.made_from.namespace == c.made_from.namespace
                    && copy.label(label) == Some(c.cluster.as_str())
                {
                    pairs.push((i, j, label, c.cluster.clone()));
                }
            }
        }
        for (original, copy, label, cluster) in pairs {
            let (Some(o), Some(c)) = (self.get(original), self.get(copy)) else {
                continue;
            };
            let (loser, winner) = if c.source < o.source {
                (original, copy)
            } else {
                (copy, original)
            };
            let why = format!(
                "{cluster} of source {} is also the cluster of source {} (its copy names it in the {label} label), and the source listed first in sources converts it",
                sources[o.source].name, sources[c.source].name
            );
            self.yield_to(loser, winner, &why);
        }
    }

    fn same_server(&mut self) {
        for group in self.groups(|c| c.server.clone()) {
            let first = group
                .iter()
                .filter_map(|&i| self.get(i).map(|c| c.source))
                .min()
                .unwrap_or(0);
            let (winners, losers): (Vec<usize>, Vec<usize>) = group
                .iter()
                .partition(|&&i| self.get(i).is_some_and(|c| c.source == first));
            let first_name = self.ctx.config.sources[first].name.clone();
            for loser in losers {
                let why = format!(
                    "the same server as {} (source {first_name}, listed first in sources): one cluster",
                    self.get(winners[0]).map(named).unwrap_or_default()
                );
                self.yield_to(loser, winners[0], &why);
            }
            if winners.len() < 2 {
                continue;
            }
            if let Some(prefer) = self.ctx.config.sources[first].precedence.prefer.clone() {
                let objects: Vec<Object> = winners
                    .iter()
                    .filter_map(|&i| self.get(i).map(|c| self.ctx.object(c.from)))
                    .collect();
                if let Some(pick) = (prefer.pick)(&objects).map(|p| winners[p]) {
                    for &other in winners.iter().filter(|&&w| w != pick) {
                        self.yield_to(other, pick, prefer.why);
                    }
                    continue;
                }
            }
            let names: Vec<String> = winners
                .iter()
                .filter_map(|&i| self.get(i).map(named))
                .collect();
            let server = self
                .get(winners[0])
                .map(|c| without_userinfo(&c.server).0)
                .unwrap_or_default();
            let message = format!(
                "clusters {} have the same server {server}: Argo CD keys clusters by server and would use only one of them (argo-cd 2288, 9606); neither is converted",
                names.join(" and ")
            );
            let why = format!("clusters {} have one server", names.join(" and "));
            self.collision(&winners, &message, &why, true);
        }
    }

    fn same_name(&mut self) {
        for group in self.groups(|c| c.cluster_name.clone()) {
            let members: Vec<&Conversion<'x, 'a>> =
                group.iter().filter_map(|&i| self.get(i)).collect();
            let one_source = members.windows(2).all(|w| w[0].source == w[1].source);
            let reachable: Vec<usize> = group
                .iter()
                .copied()
                .filter(|&i| self.get(i).is_some_and(|c| c.reachable))
                .collect();
            if one_source && reachable.len() == 1 {
                let winner = reachable[0];
                for &other in group.iter().filter(|&&i| i != winner) {
                    let why = "the same Argo CD cluster name, and only the other's server is one Argo CD can reach";
                    self.yield_to(other, winner, why);
                }
                continue;
            }
            let names: Vec<String> = members.iter().map(|c| named(c)).collect();
            let cluster = members[0].cluster_name.clone();
            let config = self.ctx.config;
            let from_kubeconfig = members.iter().any(|c| {
                config.name_from == NameFrom::Kubeconfig
                    || config.sources[c.source].names_from_kubeconfig()
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
            let why = format!("clusters {} share one Argo CD name", names.join(" and "));
            self.collision(&group, &message, &why, from_kubeconfig);
        }
    }

    fn same_secret(&mut self, scan: &Scan) {
        let ns = self.ctx.config.argo_namespace.clone();
        for group in self.groups(|c| c.secret.name.clone()) {
            let members: Vec<&Conversion<'x, 'a>> =
                group.iter().filter_map(|&i| self.get(i)).collect();
            let name = members[0].secret.name.clone();
            let names: Vec<String> = members.iter().map(|c| named(c)).collect();
            let message = format!(
                "clusters {} all map to Argo CD Secret {ns}/{name}; set namespacedNames=true to keep them apart",
                names.join(" and ")
            );
            let why = format!("clusters {} collide over its name", names.join(" and "));
            if let Some(&at) = scan.secrets.get(&SecretId::new(&ns, &name)) {
                if scan.owned_at(at).is_some() {
                    self.out.contested.push(Contested {
                        at,
                        why: why.clone(),
                    });
                }
            }
            self.collision(&group, &message, &why, false);
        }
    }

    /// An Argo CD cluster Secret that is not the function's, with the server or the name a
    /// conversion would give: a second Secret would be the same collision in Argo CD.
    fn foreign(&mut self, scan: &Scan) {
        for i in 0..self.alive.len() {
            let Some(c) = self.get(i) else {
                continue;
            };
            let clash = scan.foreign.iter().find_map(|f| {
                let what = if !f.server.is_empty() && f.server == c.server {
                    format!("has the server {}", without_userinfo(&f.server).0)
                } else if !f.name.is_empty() && f.name == c.cluster_name {
                    format!("is Argo CD cluster {}", f.name)
                } else {
                    return None;
                };
                Some((f.index, what))
            });
            let Some((at, what)) = clash else {
                continue;
            };
            self.alive[i] = false;
            let c = &mut self.all[i];
            let other = self.ctx.object(at).resource_ref();
            let message = format!(
                "{other} (labelled {SECRET_TYPE_LABEL}=cluster, not capi2argo's) already {what}: a second Secret would give Argo CD two clusters for one; not converted (remove that Secret, or label it capi-to-argocd/owned=\"true\" for capi2argo to manage)"
            );
            self.ctx.report(c.from, Severity::Error, None, message);
            let why = format!("{other} already has its server or name");
            self.ctx.outcomes.set(c.outcome, ClusterState::Failed, why);
            let source = c.made_from.to_string();
            self.out.unsettled.push(Unsettled {
                members: std::mem::take(&mut c.members),
                why: format!("{other} already has its cluster ({source})"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{TOKEN, kubeconfig_secret, run};
    use crate::config::Config;
    use krm::finding::Severity;

    fn errors(results: &[krm::finding::Finding]) -> Vec<String> {
        results
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.message.clone())
            .collect()
    }

    #[test]
    fn two_clusters_of_one_server_are_both_errors_none_written() {
        let a = kubeconfig_secret("a-kubeconfig", TOKEN);
        let b = kubeconfig_secret("b-kubeconfig", TOKEN).replace("https://b.", "https://a.");
        let (out, results) = run(&(a + &b), &Config::default());
        let errors = errors(&results);
        assert_eq!(errors.len(), 2, "{results:?}");
        assert!(errors[0].contains("the same server"), "{errors:?}");
        assert!(!out.contains("argocd.argoproj.io/secret-type"), "{out}");
    }

    #[test]
    fn the_source_listed_first_wins_a_shared_server() {
        let capi = kubeconfig_secret("a-kubeconfig", TOKEN);
        let labelled = kubeconfig_secret("x-kubeconfig", TOKEN)
            .replace("https://x.", "https://a.")
            .replace(
                "    cluster.x-k8s.io/cluster-name: x\n",
                "    capi2argo.dev/kubeconfig: \"true\"\n",
            )
            .replace("  value: |", "  kubeconfig: |");
        let config = |sources: &str| Config {
            sources: sources
                .split(',')
                .map(|s| crate::sources::preset(s).unwrap())
                .collect(),
            ..Config::default()
        };
        let (out, results) = run(&(capi.clone() + &labelled), &config("capi,labelled"));
        assert!(errors(&results).is_empty(), "{results:?}");
        assert!(out.contains("name: cluster-a\n"), "{out}");
        assert!(!out.contains("name: cluster-x-kubeconfig"), "{out}");
        let (out, _) = run(&(capi + &labelled), &config("labelled,capi"));
        assert!(out.contains("name: cluster-x-kubeconfig"), "{out}");
    }

    #[test]
    fn one_argo_cd_name_from_two_namespaces_is_a_collision_namespaced_names_parts_them() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN).replace("fleet", "one")
            + &kubeconfig_secret("a-kubeconfig", TOKEN).replace("fleet", "two");
        let (_, results) = run(&input, &Config::default());
        let errors = errors(&results);
        assert_eq!(errors.len(), 2, "{results:?}");
        assert!(
            errors.iter().all(|e| e.contains("namespacedNames=true")),
            "{errors:?}"
        );
    }
}
