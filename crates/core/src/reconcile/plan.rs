//! Step 3: the plan. For every Argo CD cluster Secret the function owns (in the input) or would
//! write, one decision — create, update, unchanged, rename, prune, or kept and why — made before
//! anything is written, so the guards can check it and the renderer only carries it out.

use std::collections::{HashMap, HashSet};

use crate::config::Mode;
use crate::convert::argocd::OWNED_LABEL;
use crate::convert::kubeconfig::without_userinfo;
use crate::convert::login::Login;
use crate::convert::meta::label_value;
use krm::finding::Severity;
use krm::object::Object;
use krm::{Out, TextStore};

use super::collide::Outcome;
use super::context::Ctx;
use super::convert::{Conversion, Strength, Unsettled};
use super::decision::{Action, Step, Steps};
use super::draft::{Draft, login_at};
use super::found::{Owned, Scan};
use super::ids::{SecretId, SourceKey};
use super::outcome::ClusterState;

/// Makes the plan: every surviving conversion placed on the Secret of its name, then every owned
/// Secret no conversion placed.
pub(super) fn plan<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    settled: Outcome<'x, 'a>,
    unsettled: Vec<Unsettled>,
    store: TextStore,
) -> Steps<'x, 'a> {
    // Sized once: a fleet's steps are many, and a list that doubles leaves room for as many more.
    let steps = settled.survivors.len() + settled.contested.len() + scan.owned.len();
    let mut planner = Planner {
        steps: Vec::with_capacity(steps),
        unsettled: HashMap::new(),
        login_moves: Vec::new(),
    };
    for held in &scan.held {
        planner.unsettle(std::slice::from_ref(&held.key), held.why);
    }
    for u in unsettled.iter().chain(&settled.unsettled) {
        planner.unsettle(&u.members, &u.why);
    }
    // The Secret two clusters both map to, if the function owns one, stays as it is.
    for contested in settled.contested {
        let step = kept(ctx, scan, contested.at, contested.why);
        planner.steps.push(step);
    }
    for conversion in settled.survivors {
        planner.place(ctx, scan, conversion);
    }
    // Decided now or then, new Secrets go out in the order of conversion.
    planner.steps.sort_unstable_by_key(|s| s.seq);
    planner.match_owned(ctx, scan);
    Steps {
        steps: planner.steps,
        store,
        held: Vec::new(),
        overrides: Vec::new(),
        login_moves: planner.login_moves,
    }
}

struct Planner<'x, 'a> {
    steps: Vec<Step<'x, 'a>>,
    /// Kubeconfig Secrets whose Argo CD Secret this run could not redo, and why: such a Secret
    /// stays as it is, never pruned for it.
    unsettled: HashMap<SourceKey, String>,
    /// See [`Steps::login_moves`].
    login_moves: Vec<(SecretId, usize, String, String)>,
}

impl<'x, 'a> Planner<'x, 'a> {
    /// The cluster made of these kubeconfig Secrets got no conversion this time, for `why`.
    fn unsettle(&mut self, members: &[SourceKey], why: &str) {
        for key in members {
            self.unsettled
                .entry(key.clone())
                .or_insert_with(|| why.to_string());
        }
    }

    /// Decides what a conversion does to the Secret of its name.
    fn place(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan, conversion: Conversion<'x, 'a>) {
        let Conversion {
            seq,
            from,
            source,
            outcome,
            members,
            secret,
            cluster_name,
            entry,
            server,
            made_from,
            strength,
            draft,
            ..
        } = conversion;
        let step = Step {
            action: Action::Create,
            secret,
            cluster: cluster_name,
            entry: Some(entry),
            server: without_userinfo(&server).0,
            source: Some(made_from),
            old: None,
            out: None,
            view: None,
            source_name: ctx.config.sources[source].name.clone(),
            members,
            strength: Some(strength),
            managed: true,
            seq,
            outcome: Some(outcome),
        };
        let Some(at) = scan.secrets.get(&step.secret).copied() else {
            if let Some(draft) = draft {
                self.create(ctx, from, step, draft);
            }
            return;
        };
        match (scan.owned_at(at), draft) {
            (Some(owned), Some(draft)) if owned.held.is_none() => {
                self.replace(ctx, scan, from, step, draft, owned)
            }
            (
                Some(Owned {
                    held: Some(why), ..
                }),
                _,
            ) => {
                let message = format!("{} is kept as it is: {why}", ctx.object(at).resource_ref());
                ctx.report(from, Severity::Error, None, message);
                ctx.outcomes.set(outcome, ClusterState::Kept, *why);
                let step = kept(ctx, scan, at, why.to_string());
                self.steps.push(step);
            }
            _ => {
                let message = format!(
                    "{} already exists and is not owned by capi2argo (no {OWNED_LABEL}: \"true\" label); it is not overwritten",
                    ctx.object(at).resource_ref()
                );
                ctx.report(from, Severity::Error, None, message);
                let why = "an unowned Secret has its name";
                ctx.outcomes.set(
                    outcome,
                    ClusterState::Failed,
                    format!("{why}: {}", step.secret),
                );
                self.unsettle(&step.members, why);
            }
        }
    }

    /// Whether the draft passes the validator; its refusals are said on the kubeconfig Secret,
    /// and the first is why its cluster failed.
    fn passes(ctx: &mut Ctx, from: usize, step: &Step, draft: &Draft) -> bool {
        for message in &draft.invalid {
            ctx.report(from, Severity::Error, None, message.clone());
        }
        if let (Some(first), Some(at)) = (draft.invalid.first(), step.outcome) {
            ctx.outcomes.set(at, ClusterState::Failed, first.clone());
        }
        draft.invalid.is_empty()
    }

    /// A Secret for a cluster that has none: created, when it passes validation.
    fn create(&mut self, ctx: &mut Ctx, from: usize, mut step: Step<'x, 'a>, draft: Draft<'x, 'a>) {
        if !Self::passes(ctx, from, &step, &draft) {
            self.unsettle(&step.members, "its new Argo CD Secret fails validation");
            return;
        }
        step.out = draft.out;
        step.view = draft.view;
        self.steps.push(step);
    }

    /// The owned Secret of the conversion's name: unchanged, updated, renamed in place or taken
    /// over — or kept, when the conversion would weaken it or fails validation.
    fn replace(
        &mut self,
        ctx: &mut Ctx<'x, 'a>,
        scan: &Scan,
        from: usize,
        mut step: Step<'x, 'a>,
        draft: Draft<'x, 'a>,
        owned: &Owned,
    ) {
        let at = owned.index;
        step.old = Some(at);
        let before = draft.replaces.as_ref();
        let weaker = step
            .strength
            .as_ref()
            .and_then(|s| weakens(ctx.config.mode, before.map(|(_, login)| *login), s));
        if let Some(reason) = weaker {
            // Never weaken a working Secret: the existing one stays as it is.
            let message = format!(
                "{} is kept as it is: {reason}",
                ctx.object(at).resource_ref()
            );
            ctx.report(from, Severity::Error, None, message);
            let reason = format!("the new conversion would weaken it: {reason}");
            if let Some(o) = step.outcome {
                ctx.outcomes.set(o, ClusterState::Kept, reason.clone());
            }
            self.steps.push(kept(ctx, scan, at, reason));
            return;
        }
        if !Self::passes(ctx, from, &step, &draft) {
            let reason = "its new conversion fails validation".to_string();
            self.steps.push(kept(ctx, scan, at, reason));
            return;
        }
        if !draft.changed.is_empty() {
            if let Some((field, message)) = step
                .strength
                .as_ref()
                .and_then(|s| changes_hands(ctx.config.mode, draft.replaces.as_ref(), s))
            {
                self.login_moves
                    .push((step.secret.clone(), at, field, message));
            }
        }
        // Made from a kubeconfig Secret that is none of this cluster's: another cluster takes
        // the Secret over (its server changes under the same name).
        let taken_over = owned.made_from_another(&step.members);
        let old_source = taken_over.then(|| scan.source_id(owned));
        if draft.changed.is_empty() && old_source.is_none() {
            // Kept as it stands, to the byte: what a second run over the output must find.
            step.action = Action::Unchanged;
            self.steps.push(step);
            return;
        }
        let old_cluster = secret_value(ctx.object(at), "name");
        // An empty name was never a name: writing one renames nothing.
        let renamed = !old_cluster.is_empty() && old_cluster != step.cluster;
        step.action = if renamed || old_source.is_some() {
            Action::Rename {
                from: step.secret.clone(),
                from_cluster: old_cluster,
                from_source: old_source,
            }
        } else {
            Action::Update {
                changed: draft.changed,
            }
        };
        step.view = draft.view;
        // Taken over as it stands: the Secret is written as it is.
        step.out = Some(draft.out.unwrap_or(Out::Keep(ctx.item(at))));
        self.steps.push(step);
    }

    /// Every owned Secret no conversion placed: renamed away when its kubeconfig Secret now
    /// makes a Secret of another name (unless that weakens it), kept when it is another run's or
    /// could not be decided, else pruned.
    fn match_owned(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan) {
        let mut placed: HashSet<usize> = HashSet::with_capacity(self.steps.len());
        placed.extend(self.steps.iter().filter_map(|s| s.old));
        let mut by_source: HashMap<&SourceKey, usize> = HashMap::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            for key in &step.members {
                by_source.entry(key).or_insert(i);
            }
        }
        let mut renamed: Vec<(usize, &Owned)> = Vec::new();
        let mut rest = Vec::new();
        for o in scan.owned.iter().filter(|o| !placed.contains(&o.index)) {
            match (o.held, by_source.get(&o.source)) {
                (Some(why), _) => rest.push((o, Some(why.to_string()))),
                (None, Some(&i)) => renamed.push((i, o)),
                (None, None) => rest.push((o, None)),
            }
        }
        self.renamed_away(ctx, scan, renamed);
        for (o, held) in rest {
            let reason = held.or_else(|| self.why_kept(ctx, scan, o));
            let mut step = kept(ctx, scan, o.index, String::new());
            step.action = match reason {
                Some(reason) => Action::Kept { reason },
                None => Action::Prune,
            };
            self.steps.push(step);
        }
    }

    /// Owned Secrets whose kubeconfig Secret now makes a Secret of another name (the step at
    /// index `i`). The first renamed away takes the new Secret along; any other of the same
    /// cluster (left from an earlier name) only goes. A weaker conversion keeps the old Secret,
    /// and is not created in its place either.
    fn renamed_away(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan, renamed: Vec<(usize, &Owned)>) {
        let mut taken: HashSet<usize> = HashSet::new();
        let mut dropped: HashSet<usize> = HashSet::new();
        let mut leftovers = Vec::new();
        for (i, o) in renamed {
            let old = ctx.object(o.index);
            let step = &self.steps[i];
            let weaker = step
                .strength
                .as_ref()
                .and_then(|s| weakens(ctx.config.mode, login_at(ctx, o.index).map(|(_, l)| l), s));
            let action = if let Action::Kept { .. } = &step.action {
                Action::Kept {
                    reason: format!("its cluster's Secret is now {}, which is kept", step.secret),
                }
            } else if let Some(reason) = weaker {
                // Renamed or not, a working Secret is not weakened.
                let message = format!("kept as it is, not renamed: {reason}");
                ctx.report(o.index, Severity::Error, None, message);
                if step.action == Action::Create {
                    dropped.insert(i);
                }
                let reason = format!("the new conversion would weaken it: {reason}");
                if let Some(o) = step.outcome {
                    ctx.outcomes.set(o, ClusterState::Kept, reason.clone());
                }
                Action::Kept { reason }
            } else {
                Action::Rename {
                    from: SecretId::of(old),
                    from_cluster: secret_value(old, "name"),
                    from_source: None,
                }
            };
            let renames = matches!(action, Action::Rename { .. });
            if renames && step.action == Action::Create && taken.insert(i) {
                let step = &mut self.steps[i];
                step.action = action;
                step.old = Some(o.index);
                continue;
            }
            let mut leftover = kept(ctx, scan, o.index, String::new());
            leftover.action = action;
            if renames {
                leftover.secret = step.secret.clone();
                leftover.cluster = step.cluster.clone();
                leftover.server = step.server.clone();
                leftover.source = step.source.clone();
            }
            leftovers.push(leftover);
        }
        let mut index = 0;
        self.steps.retain(|_| {
            let keep = !dropped.contains(&index);
            index += 1;
            keep
        });
        self.steps.extend(leftovers);
    }

    /// Why an owned Secret that no conversion placed stays: it is another run's, its cluster
    /// could not be redone this time, or pruning is off. `None`: it is pruned.
    fn why_kept(&self, ctx: &Ctx, scan: &Scan, o: &Owned) -> Option<String> {
        unmanaged(ctx, scan, o).or_else(|| {
            if let Some(why) = self.unsettled.get(&o.source) {
                Some(why.clone())
            } else if !ctx.config.prune {
                Some("prune=false".into())
            } else {
                None
            }
        })
    }
}

/// Why an owned Secret is another run's business, not this one's: made from a source this run
/// does not read, from a namespace `allowedNamespaces` leaves out, from a kubeconfig Secret a
/// source's `labels` leave out, or outside its Argo CD namespace.
fn unmanaged(ctx: &Ctx, scan: &Scan, o: &Owned) -> Option<String> {
    let config = ctx.config;
    if !config.sources.iter().any(|s| s.name == o.kind) {
        return Some(format!(
            "made from source {}, which this run does not read (sources)",
            o.kind
        ));
    }
    if let Some(allowed) = &config.allowed_namespaces {
        if !allowed.iter().any(|n| label_value(n) == o.source.namespace) {
            return Some(format!(
                "made from a kubeconfig Secret in namespace {}, which allowedNamespaces leaves out",
                o.source.namespace
            ));
        }
    }
    if scan.excluded.contains(&o.source) {
        return Some(format!(
            "made from {}, which the settings leave to another run (a source's labels)",
            scan.source_id(o)
        ));
    }
    let namespace = ctx.object(o.index).namespace();
    (namespace != config.argo_namespace).then(|| {
        format!(
            "in namespace {namespace}, not this run's argoNamespace {}",
            config.argo_namespace
        )
    })
}

/// A step keeping the owned Secret at input index `at` as it is.
fn kept<'x, 'a>(ctx: &Ctx, scan: &Scan, at: usize, reason: String) -> Step<'x, 'a> {
    let object = ctx.object(at);
    let owned = scan.owned_at(at).filter(|o| o.held.is_none());
    Step {
        action: Action::Kept { reason },
        secret: SecretId::of(object),
        cluster: secret_value(object, "name"),
        server: without_userinfo(&secret_value(object, "server")).0,
        source: owned.map(|o| scan.source_id(o)),
        entry: None,
        old: Some(at),
        out: None,
        view: None,
        source_name: owned.map(|o| o.kind.clone()).unwrap_or_default(),
        members: Vec::new(),
        strength: None,
        managed: owned.is_some_and(|o| unmanaged(ctx, scan, o).is_none()),
        seq: usize::MAX,
        outcome: None,
    }
}

/// A value of a Secret's data, empty when it has none or it cannot be read.
fn secret_value(object: Object, key: &str) -> String {
    object
        .secret_value(key)
        .ok()
        .flatten()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Why a conversion of `strength` may not replace the owned Secret at input index `at`: it is a
/// fallback, or it logs in more weakly than that Secret does (read from its `config`). Pull mode
/// carries no logins.
fn weakens(mode: Mode, before: Option<Login>, strength: &Strength) -> Option<String> {
    if mode == Mode::Pull {
        return None;
    }
    let after = strength.login;
    match (strength.degraded.as_deref(), before) {
        (Some(reason), Some(before)) if after <= before => Some(format!(
            "{reason} ({}); the Secret already has {}",
            after.describe(),
            before.describe()
        )),
        (_, Some(before)) if after < before => Some(format!(
            "the new conversion has {}, weaker than the {} the Secret has",
            after.describe(),
            before.describe()
        )),
        _ => None,
    }
}

/// What an update does to whose identity Argo CD logs in with: from credentials the Secret
/// carries (a token, a certificate) to a login Argo CD renews itself (`awsAuthConfig`, an exec
/// plugin), which logs in as the cloud identity of Argo CD's own pods. Not weaker, but it works
/// only once that identity is set up and let into the cluster, so the plan says so before the
/// switch (moving from CACO, whose EKS Secrets carry the kubeconfig's token, is the common case).
fn changes_hands(
    mode: Mode,
    before: Option<&(String, Login)>,
    strength: &Strength,
) -> Option<(String, String)> {
    if mode == Mode::Pull || !strength.pod_identity {
        return None;
    }
    let (field, before) = before.cloned()?;
    matches!(before, Login::Static | Login::Expiring).then(|| {
        let message = format!(
            "the login changes from {} to {}: Argo CD will log in as its own pods' cloud identity (EKS: IRSA or EKS Pod Identity, with an access entry on the cluster; GKE: Workload Identity; AKS: Azure Workload Identity), which must be set up before this update is applied",
            before.describe(),
            strength.login.describe()
        );
        (field, message)
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{TOKEN, kubeconfig_secret, owned_secret, run_plan};
    use super::*;
    use crate::config::Config;
    use crate::reconcile::Plan;

    fn actions(plan: &Plan) -> Vec<(String, &'static str)> {
        plan.entries
            .iter()
            .map(|e| (e.secret.to_string(), e.action.word()))
            .collect()
    }

    #[test]
    fn each_owned_secret_gets_one_decision() {
        let input = kubeconfig_secret("new-kubeconfig", TOKEN)
            + &kubeconfig_secret("same-kubeconfig", TOKEN)
            + &kubeconfig_secret("moved-kubeconfig", TOKEN)
            + &owned_secret("cluster-same", "same", "https://same.fleet.example:6443")
            + &owned_secret("cluster-moved", "moved", "https://old.example:6443")
            + &owned_secret("cluster-gone", "gone", "https://gone.example:6443");
        let (_, results, plan) = run_plan(&input, &Config::default());
        assert!(
            results.iter().all(|r| r.severity != Severity::Error),
            "{results:?}"
        );
        assert_eq!(
            actions(&plan),
            [
                ("argocd/cluster-gone".to_string(), "prune"),
                ("argocd/cluster-moved".to_string(), "update"),
                ("argocd/cluster-new".to_string(), "create"),
                ("argocd/cluster-same".to_string(), "unchanged"),
            ]
        );
        let moved = plan
            .entries
            .iter()
            .find(|e| e.secret.name == "cluster-moved")
            .unwrap();
        assert_eq!(
            moved.action,
            Action::Update {
                changed: vec!["server".into()]
            }
        );
    }

    #[test]
    fn a_new_name_is_a_rename_and_the_guard_keeps_it() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-a", "a", "https://a.fleet.example:6443");
        let namespaced = Config {
            namespaced_names: true,
            ..Config::default()
        };
        let (_, results, plan) = run_plan(&input, &namespaced);
        assert_eq!(actions(&plan), [("argocd/cluster-a".to_string(), "kept")]);
        assert!(
            results
                .iter()
                .any(|r| r.message.contains("allowRename=false")),
            "{results:?}"
        );
        let allowed = Config {
            allow_rename: true,
            ..namespaced
        };
        let (_, _, plan) = run_plan(&input, &allowed);
        assert_eq!(
            actions(&plan),
            [("argocd/cluster-fleet-a".to_string(), "rename")]
        );
    }

    #[test]
    fn a_cluster_that_fails_to_convert_keeps_its_secret() {
        let broken = kubeconfig_secret("a-kubeconfig", TOKEN)
            .replace("current-context: x", "current-context: none");
        let input = broken + &owned_secret("cluster-a", "a", "https://a.fleet.example:6443");
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(
            plan.entries[0].action,
            Action::Kept {
                reason: "its kubeconfig Secret could not be converted".into()
            }
        );
    }

    #[test]
    fn another_runs_secret_is_never_pruned() {
        let other = owned_secret("cluster-b", "b", "https://b.example")
            .replace("namespace: fleet", "namespace: other")
            .replace("cluster-namespace: fleet", "cluster-namespace: other");
        let input = kubeconfig_secret("a-kubeconfig", TOKEN) + &other;
        let config = Config {
            allowed_namespaces: Some(vec!["fleet".into()]),
            ..Config::default()
        };
        let (_, _, plan) = run_plan(&input, &config);
        let kept = plan
            .entries
            .iter()
            .find(|e| e.secret.name == "cluster-b")
            .unwrap();
        assert!(
            matches!(&kept.action, Action::Kept { reason } if reason.contains("allowedNamespaces")),
            "{kept:?}"
        );
    }
}
