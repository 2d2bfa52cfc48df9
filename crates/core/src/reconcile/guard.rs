//! Step 4: the guards. A plan that would make Argo CD forget or rename working clusters is held
//! back unless the settings allow it: an ApplicationSet's cluster generator deletes every
//! Application of a cluster whose Secret vanishes or whose name changes, and their finalizers
//! undeploy what they deployed (argo-cd issues 18480, 18780, 12958). A guard that holds keeps
//! the Secrets exactly as they are and says so in one error; the output stays complete.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::access;
use crate::config::MaxPrune;
use krm::finding::Severity;

use super::applications::JudgmentInputs;
use super::changes::ROTATED;
use super::context::Ctx;
use super::decision::{Action, Guard, Held, Step, Steps};
use super::found::Scan;
use super::ids::SecretId;
use super::outcome::ClusterState;
use crate::appsets::{AppRef, AppSetPlan, ApplicationEffect, Applications, ordered};

/// What ApplicationSets do with a cluster that goes: said once, in every guard's error.
const APPLICATIONSET_EFFECT: &str = "ApplicationSets delete the Applications they generated for a cluster whose Secret goes or is renamed, and the Applications' finalizers undeploy what they deployed";

/// Runs the guards over the plan, in order, then announces the prunes and renames that pass.
pub(super) fn check(
    ctx: &mut Ctx,
    scan: &Scan,
    steps: &mut Steps,
    needs: &mut [access::TokenNeed],
    judgment: Option<(&JudgmentInputs, &Applications)>,
) {
    // Judged first, on the whole change: a guard that holds would otherwise hide from the
    // guards after it what the change does, and a deliberate mass change would take one run
    // per guard to find out.
    sealed_package_rerendered(ctx, scan, steps);
    let overrides = overrides(
        ctx,
        scan,
        steps,
        needs,
        judgment.map(|(_, unguarded)| unguarded),
    );
    allow_empty(ctx, scan, steps);
    max_prune(ctx, steps);
    allow_rename(ctx, steps);
    max_credential_changes(ctx, steps, needs);
    if let Some((inputs, unguarded)) = judgment {
        max_application_deletes(ctx, steps, inputs, unguarded);
    }
    hold_twins(ctx, steps);
    if !steps.held.is_empty() {
        if overrides.len() > 1 {
            let held: Vec<&str> = ordered(steps.held.iter().map(|h| h.guard.setting()))
                .into_iter()
                .collect();
            let holding = match held.as_slice() {
                [one] => format!("the guard {one} holds"),
                many => format!("the guards {} hold", many.join(" and ")),
            };
            ctx.report_config(
                Severity::Error,
                None,
                format!(
                    "{holding} this change back; if all of it is meant, one run with {} lets it through, every guard it meets at once (each guard's result says what it holds)",
                    overrides.join(" ")
                ),
            );
        }
        steps.overrides = overrides;
    }
    announce(ctx, steps);
}

/// Every setting the whole change needs to go through in one run, each guard judged on the plan
/// as no guard has held it yet, by the rule the guard holds by (`would_hold_*`): what the user
/// gives once for a deliberate mass change.
fn overrides(
    ctx: &Ctx,
    scan: &Scan,
    steps: &Steps,
    needs: &[access::TokenNeed],
    unguarded: Option<&Applications>,
) -> Vec<String> {
    let mut out = Vec::new();
    let emptied: usize = empty_sources(ctx, scan)
        .iter()
        .map(|source| {
            steps
                .steps
                .iter()
                .filter(|s| s.action == Action::Prune && s.source_name == *source)
                .count()
        })
        .sum();
    if emptied > 0 {
        out.push("allowEmpty=true".to_string());
    }
    let renamed = renames(steps);
    if renamed > 0 && !ctx.config.allow_rename {
        out.push("allowRename=true".to_string());
    }
    // With the renames let through, maxPrune counts them with the prunes.
    let pruned = prunes(steps) + renamed;
    if pruned > ctx.config.max_prune.limit(managed(steps)) {
        out.push(format!("maxPrune={pruned}"));
    }
    let moved = credential_moves(ctx, steps) + rotations(needs);
    if moved > ctx.config.access.max_changes.limit(managed(steps)) {
        out.push(format!("maxCredentialChanges={moved}"));
    }
    if let Some(judged) = unguarded {
        let setting = ctx.config.max_application_deletes;
        let most = judged
            .sets
            .iter()
            .map(|set| (deleted_by(set).len(), setting.limit(set.applications)))
            .filter(|(deleted, limit)| deleted > limit)
            .map(|(deleted, _)| deleted)
            .max();
        if let Some(most) = most {
            out.push(format!("maxApplicationDeletes={most}"));
        }
    }
    out
}

/// The sources of which the input holds nothing, while `allowEmpty` is false: their owned
/// Secrets are what an empty or broken input would prune.
fn empty_sources(ctx: &Ctx, scan: &Scan) -> Vec<String> {
    if ctx.config.allow_empty {
        return Vec::new();
    }
    ctx.config
        .sources
        .iter()
        .enumerate()
        .filter(|(index, _)| scan.taken_by(*index) == 0)
        .map(|(_, source)| source.name.clone())
        .collect()
}

/// A new Secret of the server of one a guard kept is held with it: Argo CD would otherwise
/// hold two clusters of one server (a kubeconfig Secret moved to another namespace under
/// `namespacedNames` is a prune and a create, not a rename).
fn hold_twins(ctx: &mut Ctx, steps: &mut Steps) {
    let mut kept: HashMap<String, (usize, SecretId)> = HashMap::new();
    for (h, held) in steps.held.iter().enumerate() {
        let secrets: HashSet<&SecretId> = held.secrets.iter().collect();
        for step in steps.steps.iter().filter(|s| secrets.contains(&s.secret)) {
            if matches!(step.action, Action::Kept { .. }) && step.old.is_some() {
                let server = step.server.trim_end_matches('/').to_string();
                kept.entry(server).or_insert((h, step.secret.clone()));
            }
        }
    }
    if kept.is_empty() {
        return;
    }
    for step in &mut steps.steps {
        if step.action != Action::Create {
            continue;
        }
        let Some((h, twin)) = kept.get(step.server.trim_end_matches('/')) else {
            continue;
        };
        let guard = steps.held[*h].guard.setting();
        let reason = format!("held back with {twin}, of the same server, which {guard} keeps");
        if let Some(at) = step.outcome {
            ctx.outcomes.set(at, ClusterState::Kept, reason.clone());
        }
        step.action = Action::Kept { reason };
        step.out = None;
        step.view = None;
        steps.held[*h].secrets.push(step.secret.clone());
    }
}

/// `maxApplicationDeletes`: a run that would make an ApplicationSet delete more of its
/// Applications than the setting allows makes none of the changes that cause it — whatever
/// they are: a prune or rename the other guards let through, or an update that relabels a
/// cluster out of a selector, which no other guard counts. One Application always passes.
fn max_application_deletes(
    ctx: &mut Ctx,
    steps: &mut Steps,
    inputs: &JudgmentInputs,
    unguarded: &Applications,
) {
    // Judged again only when an earlier guard changed the plan.
    let again;
    let judged = if steps.held.is_empty() {
        unguarded
    } else {
        again = inputs.judge(ctx, steps);
        &again
    };
    let setting = ctx.config.max_application_deletes;
    let mut over = Vec::new();
    let mut clusters: BTreeSet<SecretId> = BTreeSet::new();
    let mut most = 0;
    for set in &judged.sets {
        let deleted = deleted_by(set);
        let limit = setting.limit(set.applications);
        if deleted.len() <= limit {
            continue;
        }
        most = most.max(deleted.len());
        clusters.extend(set.deletes().filter_map(|c| c.cluster.clone()));
        let names: Vec<String> = deleted.iter().map(|a| a.name.clone()).collect();
        over.push(format!(
            "ApplicationSet {} would delete {} of its {} Applications ({}), more than {limit}",
            set.application_set,
            deleted.len(),
            set.applications,
            listed_names(&names)
        ));
    }
    if over.is_empty() {
        return;
    }
    let why = format!("held back: maxApplicationDeletes={setting}");
    let mut held = Vec::new();
    let mut relabelled: BTreeSet<String> = BTreeSet::new();
    for step in &mut steps.steps {
        let id = step.secret_before(ctx);
        if !clusters.contains(&id) {
            continue;
        }
        if let Action::Update { changed } = &step.action {
            relabelled.extend(
                changed
                    .iter()
                    .filter_map(|c| c.strip_prefix("metadata.labels."))
                    .map(String::from),
            );
        }
        match step.action {
            // A new Secret of the local cluster's server replaces its in-cluster entry.
            Action::Update { .. } | Action::Prune | Action::Create => {
                step.action = Action::Kept {
                    reason: why.clone(),
                };
                step.out = None;
                step.view = None;
            }
            Action::Rename { .. } => keep_as_it_was(step, why.clone()),
            _ => continue,
        }
        if let Some(at) = step.outcome {
            ctx.outcomes.set(at, ClusterState::Kept, why.clone());
        }
        held.push(id);
    }
    // The likely cause of a mass relabel: labels put on Argo CD Secrets by hand, which a run
    // writes the Secrets without.
    let cause = if relabelled.is_empty() {
        String::new()
    } else {
        format!(
            " The run changes label(s) {} of these Secrets: a label added to an Argo CD Secret by hand goes with the next run that writes it; if the ApplicationSets select on it, write it through the settings (labels, inventory, copyClusterLabels or a Cluster's take-along labels).",
            relabelled.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    let message = format!(
        "{}: none of the Argo CD Secret changes that cause it is made, each Secret stays as it is ({}). An ApplicationSet deletes the Applications it generated for a cluster that goes, is renamed or stops matching its selector, and their finalizers undeploy what they deployed.{cause} If these Applications are meant to go, run once with maxApplicationDeletes={most} (or a percentage)",
        over.join("; "),
        listed(&held)
    );
    said(ctx, steps, Guard::MaxApplicationDeletes, message, held);
}

/// The Applications an ApplicationSet's plan deletes, each once.
fn deleted_by(set: &AppSetPlan) -> Vec<&AppRef> {
    ordered(set.deletes().filter_map(|c| match &c.effect {
        ApplicationEffect::Delete { application, .. } => Some(application),
        _ => None,
    }))
    .into_iter()
    .collect()
}

/// A guard held: its error, said on the configuration, and what it kept.
fn said(ctx: &mut Ctx, steps: &mut Steps, guard: Guard, message: String, secrets: Vec<SecretId>) {
    ctx.report_config(Severity::Error, None, message.clone());
    steps.held.push(Held {
        guard,
        message,
        secrets,
        applications: Vec::new(),
    });
}

/// For each guard that held, the Applications its held Secrets kept from deletion: deleted by
/// the plan before the guards, not by the plan after them.
pub(super) fn protected(steps: &mut Steps, before: &Applications, after: &Applications) {
    let still = ordered(after.deletes().filter_map(|(_, c)| match &c.effect {
        ApplicationEffect::Delete { application, .. } => Some(application),
        _ => None,
    }));
    for held in &mut steps.held {
        let secrets: HashSet<&SecretId> = held.secrets.iter().collect();
        let apps = ordered(
            before
                .deletes()
                .filter(|(_, c)| c.cluster.as_ref().is_some_and(|id| secrets.contains(id)))
                .filter_map(|(_, c)| match &c.effect {
                    ApplicationEffect::Delete { application, .. }
                        if !still.contains(application) =>
                    {
                        Some(application)
                    }
                    _ => None,
                }),
        );
        held.applications = apps.into_iter().cloned().collect();
    }
}

/// `maxCredentialChanges`: a run that would move more Argo CD Secrets between the admin
/// credential and a ServiceAccount token than the setting allows moves none. A change of
/// `credentials` is a change to every cluster's login at once; one that does not work (RBAC the
/// workload clusters refuse, a NetworkPolicy in the way) would cut Argo CD off the whole fleet.
fn max_credential_changes(ctx: &mut Ctx, steps: &mut Steps, needs: &mut [access::TokenNeed]) {
    let service_account = ctx.config.access.mode == access::CredentialMode::ServiceAccount;
    let moved = credential_moves(ctx, steps);
    let rotated = rotations(needs);
    let owned = managed(steps);
    let setting = ctx.config.access.max_changes;
    let limit = setting.limit(owned);
    if moved + rotated <= limit {
        return;
    }
    let (from, to) = if service_account {
        ("the admin credential", "a ServiceAccount token")
    } else {
        ("a ServiceAccount token", "the admin credential")
    };
    // What to check first depends on the way the move goes.
    let check = if service_account {
        "Check first that Argo CD reaches the clusters with their tokens (`capi2argo plan` lists each; the docs' rollout)"
    } else {
        "Check first that Argo CD is meant to hold each cluster's admin credential again (the kubeconfig Secrets' own; the token Secrets then go)"
    };
    let change = match (moved, rotated) {
        (0, r) => format!(
            "rotate the tokens of {r} of the {owned} owned Argo CD cluster Secrets ({})",
            access::ROTATE_ANNOTATION
        ),
        (m, 0) => {
            format!("move {m} of the {owned} owned Argo CD cluster Secrets from {from} to {to}")
        }
        (m, r) => format!(
            "move {m} of the {owned} owned Argo CD cluster Secrets from {from} to {to} and rotate the tokens of {r} ({})",
            access::ROTATE_ANNOTATION
        ),
    };
    let total = moved + rotated;
    let message = if moved == 0 {
        format!(
            "this run would {change}, more than maxCredentialChanges={setting} allows ({limit}): no token is rotated (each is still renewed as it ages). If a fleet-wide rotation is meant, let it through with maxCredentialChanges={total} (or a percentage)"
        )
    } else {
        format!(
            "this run would {change}, more than maxCredentialChanges={setting} allows ({limit}): none is moved, each keeps what it logs in with. {check}, then let the {} through with maxCredentialChanges={total} (or a percentage)",
            if rotated == 0 { "move" } else { "change" }
        )
    };
    ctx.report_config(Severity::Error, None, message.clone());
    let mut held = Vec::new();
    for i in 0..steps.steps.len() {
        if !moves_credential(ctx, &steps.steps[i]) {
            continue;
        }
        let step = &mut steps.steps[i];
        let reason = format!("held back: maxCredentialChanges={setting}");
        if let Some(at) = step.outcome {
            ctx.outcomes.set(at, ClusterState::Kept, reason.clone());
        }
        step.action = Action::Kept { reason };
        step.out = None;
        held.push(step.secret.clone());
    }
    for need in needs.iter_mut().filter(|n| n.requested()) {
        need.hold_rotation();
        held.push(need.secret.clone());
    }
    steps.held.push(Held {
        guard: Guard::MaxCredentialChanges,
        message,
        secrets: held,
        applications: Vec::new(),
    });
}

/// How many tokens a rotation asked for would mint again.
fn rotations(needs: &[access::TokenNeed]) -> usize {
    needs.iter().filter(|n| n.requested()).count()
}

/// Whether a step moves an owned Secret between the admin credential and a ServiceAccount
/// token: its old Secret carries a token's expiry, and the settings' mode says the other.
fn moves_credential(ctx: &Ctx, step: &Step) -> bool {
    let service_account = ctx.config.access.mode == access::CredentialMode::ServiceAccount;
    matches!(step.action, Action::Update { .. } | Action::Rename { .. })
        && step.old.is_some_and(|old| {
            let had = ctx
                .object(old)
                .annotation(access::EXPIRES_ANNOTATION)
                .is_some();
            had != service_account
        })
}

/// How many steps move a Secret's credential.
fn credential_moves(ctx: &Ctx, steps: &Steps) -> usize {
    steps
        .steps
        .iter()
        .filter(|s| moves_credential(ctx, s))
        .count()
}

/// A sealed package rendered again without its kubeconfig Secrets (CI re-rendering what was
/// committed: sealing never writes them back): with `seal` on, an input that holds no
/// kubeconfig Secret at all keeps every owned Secret as it is, said once as information
/// rather than held as an error, so that the render passes and changes nothing. A run that
/// holds even one kubeconfig Secret is judged by `allowEmpty` as any other.
fn sealed_package_rerendered(ctx: &mut Ctx, scan: &Scan, steps: &mut Steps) {
    if ctx.sealer.is_none()
        || ctx.config.allow_empty
        || !scan.kubeconfigs.is_empty()
        || !scan.candidates.is_empty()
    {
        return;
    }
    let mut kept = 0;
    for step in steps.steps.iter_mut().filter(|s| s.action == Action::Prune) {
        step.action = Action::Unchanged;
        kept += 1;
    }
    if kept > 0 {
        ctx.report_config(
            Severity::Info,
            Some("seal".into()),
            format!(
                "the input holds no kubeconfig Secret: {kept} owned Argo CD cluster {} kept as {} (a sealed package rendered again without the Secrets it was made from; allowEmpty=true prunes them)",
                secrets(kept),
                if kept == 1 { "it is" } else { "they are" }
            ),
        );
    }
}

/// `allowEmpty`: owned Secrets of a source, and not one kubeconfig Secret of that source in the
/// input, is what an empty or broken input looks like (a failed `kubectl get`, a selector with
/// a typo, a package rendered without its Secrets): none of them is pruned.
fn allow_empty(ctx: &mut Ctx, scan: &Scan, steps: &mut Steps) {
    let emptied = empty_sources(ctx, scan);
    let mut empty: BTreeMap<String, (&str, Vec<SecretId>)> = BTreeMap::new();
    for source in ctx
        .config
        .sources
        .iter()
        .filter(|s| emptied.contains(&s.name))
    {
        let held = hold(
            steps,
            |name| name == source.name,
            || {
                format!(
                    "allowEmpty=false: the input holds no {} of source {}",
                    source.reads_from(),
                    source.name
                )
            },
        );
        if !held.is_empty() {
            empty.insert(source.name.clone(), (source.reads_from(), held));
        }
    }
    // Letting them through takes maxPrune too when all the prunes then are more than it allows.
    let all = prunes(steps) + empty.values().map(|(_, h)| h.len()).sum::<usize>();
    let limit = ctx.config.max_prune.limit(managed(steps));
    let let_through = if all > limit {
        format!("allowEmpty=true and maxPrune={all}")
    } else {
        "allowEmpty=true".into()
    };
    for (source, (what, held)) in empty {
        let count = held.len();
        let message = format!(
            "{count} owned Argo CD cluster {} of source {source} would be pruned ({}), and the input holds no {what} of that source at all: none is pruned (allowEmpty=false: an empty or broken input must not empty Argo CD; {APPLICATIONSET_EFFECT}). If every one of these clusters is really gone, run once with {let_through}",
            secrets(count),
            listed(&held)
        );
        said(ctx, steps, Guard::AllowEmpty, message, held);
    }
}

/// How many prunes the plan holds.
fn prunes(steps: &Steps) -> usize {
    steps
        .steps
        .iter()
        .filter(|s| s.action == Action::Prune)
        .count()
}

/// How many owned Secrets this run manages (of a source it reads, in its Argo CD namespace and
/// `allowedNamespaces`): what `maxPrune`'s percentage is of.
fn managed(steps: &Steps) -> usize {
    steps
        .steps
        .iter()
        .filter(|s| s.managed && s.old.is_some())
        .count()
}

/// `maxPrune`: a run that would prune more of the owned Secrets than the setting allows
/// prunes none. One cluster always passes: decommissioning a cluster is routine.
fn max_prune(ctx: &mut Ctx, steps: &mut Steps) {
    let renamed = if ctx.config.allow_rename {
        renames(steps)
    } else {
        0
    };
    let pruned = prunes(steps) + renamed;
    let owned = managed(steps);
    let limit = ctx.config.max_prune.limit(owned);
    if pruned <= limit {
        return;
    }
    let setting = ctx.config.max_prune;
    let why = || {
        format!(
            "maxPrune={setting}: the run would prune or rename {pruned} of {owned}, more than {limit}"
        )
    };
    let mut held = hold(steps, |_| true, why);
    for step in steps
        .steps
        .iter_mut()
        .filter(|s| matches!(s.action, Action::Rename { .. }))
    {
        if let Action::Rename { from, .. } = &step.action {
            held.push(from.clone());
        }
        keep_as_it_was(step, why());
    }
    let what = if renamed > 0 {
        format!("prune or rename {pruned} (renames {renamed})")
    } else {
        format!("prune {pruned}")
    };
    let message = format!(
        "this run would {what} of the {owned} owned Argo CD cluster Secrets ({}), more than maxPrune={setting} allows ({limit}): none is pruned or renamed ({APPLICATIONSET_EFFECT}). If these clusters are really gone or meant to be renamed, run once with maxPrune={pruned} (or a percentage) for this run",
        listed(&held)
    );
    said(ctx, steps, Guard::MaxPrune, message, held);
}

/// `allowRename`: a cluster whose Argo CD name would change, whose Secret would be replaced by
/// one of another name, or that another kubeconfig Secret would take over, keeps its Secret as
/// it is.
fn allow_rename(ctx: &mut Ctx, steps: &mut Steps) {
    if ctx.config.allow_rename {
        return;
    }
    for step in &mut steps.steps {
        let Action::Rename {
            from,
            from_cluster,
            from_source,
        } = &step.action
        else {
            continue;
        };
        let renamed = *from_cluster != step.cluster;
        let mut what = Vec::new();
        if *from != step.secret {
            what.push(format!("it would be replaced by {}", step.secret));
        }
        if renamed {
            what.push(format!(
                "its Argo CD cluster name would change from {from_cluster} to {}",
                step.cluster
            ));
        }
        if let (Some(was), Some(now)) = (from_source, &step.source) {
            what.push(format!(
                "it would be made from {now} instead of {was}, so its server becomes {}",
                step.server
            ));
        }
        let effect = if from_source.is_some() && !renamed && *from == step.secret {
            "every Application that deploys to the cluster by this name would deploy to the other server from then on".to_string()
        } else if renamed {
            format!("{APPLICATIONSET_EFFECT}; Applications that name the cluster stop resolving")
        } else {
            APPLICATIONSET_EFFECT.to_string()
        };
        // The likely cause and its safe fix first; the override, which does what was held, last.
        let argo = &ctx.config.argo_namespace;
        let cause = if from.namespace != step.secret.namespace {
            format!(
                " It is in namespace {}, and argoNamespace is {argo}: if Argo CD runs in {}, the fix is argoNamespace={} (allowRename=true would move the cluster to {argo}, where that Argo CD does not look).",
                from.namespace, from.namespace, from.namespace
            )
        } else if renamed
            && ctx.config.name_from == crate::config::NameFrom::Secret
            && !ctx.config.namespaced_names
            && step.entry.as_deref() == Some(from_cluster.as_str())
        {
            format!(
                " Its name {from_cluster} is the kubeconfig's cluster entry, as CACO names clusters: nameFrom=kubeconfig keeps it."
            )
        } else {
            String::new()
        };
        let message = format!(
            "kept as it is (allowRename=false): {} ({effect}).{cause} Only if the change is meant: allowRename=true lets it through",
            what.join(", and ")
        );
        let reason = format!(
            "{} held back: allowRename=false",
            if from_source.is_some() && !renamed && *from == step.secret {
                format!(
                    "a switch to {}",
                    step.source
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                )
            } else {
                format!("rename to {} ({})", step.secret, step.cluster)
            }
        );
        if let Some(old) = step.old {
            ctx.report(old, Severity::Error, None, message.clone());
        }
        if let Some(at) = step.outcome {
            ctx.outcomes.set(at, ClusterState::Kept, reason.clone());
        }
        steps.held.push(Held {
            guard: Guard::AllowRename,
            message,
            secrets: vec![from.clone()],
            applications: Vec::new(),
        });
        keep_as_it_was(step, reason);
    }
}

/// A rename held: what the entry shows is the Secret as it stays.
fn keep_as_it_was(step: &mut Step, reason: String) {
    let Action::Rename {
        from,
        from_cluster,
        from_source,
    } = &step.action
    else {
        return;
    };
    step.secret = from.clone();
    step.cluster = from_cluster.clone();
    if let Some(was) = from_source {
        step.source = Some(was.clone());
    }
    step.action = Action::Kept { reason };
    step.out = None;
}

/// Renames the plan holds (let through by `allowRename`): to an ApplicationSet, a rename is a
/// prune and a create, so `maxPrune` bounds them with the prunes.
fn renames(steps: &Steps) -> usize {
    steps
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Rename { .. }))
        .count()
}

/// Turns every prune whose source's name `kind` matches into a kept Secret, for the reason
/// `why` gives; which.
fn hold(steps: &mut Steps, kind: impl Fn(&str) -> bool, why: impl Fn() -> String) -> Vec<SecretId> {
    let mut held = Vec::new();
    for step in &mut steps.steps {
        if step.action == Action::Prune && kind(&step.source_name) {
            step.action = Action::Kept { reason: why() };
            held.push(step.secret.clone());
        }
    }
    held
}

/// An info result for every Secret the plan removes or renames, on that Secret.
fn announce(ctx: &mut Ctx, steps: &Steps) {
    for step in &steps.steps {
        let (Some(old), Some(source)) = (step.old, &step.source) else {
            continue;
        };
        let message = match &step.action {
            Action::Prune => {
                let profiled = ctx.config.sources.iter().any(|s| {
                    s.name == step.source_name && s.kind == crate::sources::Kind::ClusterProfiles
                });
                let what = if profiled { "ClusterProfile" } else { "Secret" };
                format!(
                    "pruned: owned Argo CD cluster Secret whose source {what} {source} is not in the input (or no longer converted)"
                )
            }
            // Kubernetes renews certificates on its own; an Argo CD Secret that follows says so.
            Action::Update { changed } if changed.iter().any(|c| c.contains(ROTATED)) => {
                let rotated: Vec<&str> = changed
                    .iter()
                    .filter(|c| c.contains(ROTATED))
                    .map(String::as_str)
                    .collect();
                format!("certificate rotated from {source}: {}", rotated.join(", "))
            }
            Action::Rename {
                from,
                from_cluster,
                from_source,
            } => match from_source {
                Some(was) => format!(
                    "renamed (allowRename=true): {from} ({from_cluster}), made from {was} until now, becomes {} ({}) made from {source}",
                    step.secret, step.cluster
                ),
                None => format!(
                    "renamed (allowRename=true): {from} ({from_cluster}) becomes {} ({})",
                    step.secret, step.cluster
                ),
            },
            _ => continue,
        };
        ctx.report(old, Severity::Info, None, message);
    }
}

/// The Secrets a guard kept, by name: the first few, and how many more (kpt shows a result's
/// first lines only).
fn listed(held: &[SecretId]) -> String {
    let names: Vec<String> = held.iter().map(ToString::to_string).collect();
    listed_names(&names)
}

/// The first few names, and how many more.
pub(super) fn listed_names(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let shown = names[..names.len().min(SHOWN)].join(", ");
    match names.len().saturating_sub(SHOWN) {
        0 => shown,
        more => format!("{shown}, and {more} more"),
    }
}

fn secrets(count: usize) -> &'static str {
    if count == 1 { "Secret" } else { "Secrets" }
}

impl MaxPrune {
    /// How many of `owned` Secrets a run may prune: never fewer than one.
    pub(super) fn limit(self, owned: usize) -> usize {
        let limit = match self {
            MaxPrune::Count(n) => n,
            MaxPrune::Percent(p) => owned * p / 100,
        };
        limit.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_prune_always_passes_and_percentages_round_down() {
        let ten = MaxPrune::Percent(10);
        assert_eq!(ten.limit(0), 1);
        assert_eq!(ten.limit(3), 1);
        assert_eq!(ten.limit(19), 1);
        assert_eq!(ten.limit(20), 2);
        assert_eq!(ten.limit(3000), 300);
        assert_eq!(MaxPrune::Percent(100).limit(7), 7);
        assert_eq!(MaxPrune::Count(3).limit(1000), 3);
    }
}
