//! Reporting: what each reconcile says — its results and plan lines in the log (each said once,
//! when it first appears: a fleet's steady warnings are not repeated every reconcile), its
//! metrics, and Events on the objects it is about (a cluster that fails to convert, a certificate
//! about to expire, a guard that holds and the Applications it kept, a token that cannot be
//! renewed).

pub mod events;
pub mod metrics;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use capi2argo_core::{
    Action, ApplicationEffect, ClusterOutcome, ClusterState, Finding, Guard, Plan, SecretId,
    Severity, Verb,
};
use kube::runtime::events::Recorder;

use crate::reading::Caches;
use events::ObjectEvent;
use metrics::{APPLICATION_EFFECTS, GUARDS, Metrics, PlanOutcome, STATES};

/// What the last reconcile said, so logs and Events say what changed, not everything again.
#[derive(Default)]
struct LastReported {
    results: BTreeSet<String>,
    /// The plan's lines (an unchanged Secret's are not said).
    lines: BTreeSet<String>,
    states: States,
    guards: BTreeSet<Guard>,
    expiring: BTreeSet<SecretId>,
}

/// The reconciler's voice: logs, metrics and Events.
pub struct Reporter {
    pub metrics: Metrics,
    recorder: Recorder,
    last: LastReported,
    /// How many days before a certificate stops being valid it is said.
    expiry_days: u32,
}

impl Reporter {
    pub fn new(metrics: Metrics, recorder: Recorder, expiry_days: u32) -> Reporter {
        Reporter {
            metrics,
            recorder,
            last: LastReported::default(),
            expiry_days,
        }
    }

    /// Logs each result once, when it first appears. Results never hold a Secret's value.
    pub fn results(&mut self, results: &[Finding]) {
        let mut now = BTreeSet::new();
        for finding in results {
            // Only the fields a result has: no empty `field=""`, no `Kind /name`.
            let resource = finding
                .resource
                .as_ref()
                .map(|r| match r.namespace.as_deref() {
                    Some(ns) if !ns.is_empty() => format!("{} {ns}/{}", r.kind, r.name),
                    _ => format!("{} {}", r.kind, r.name),
                });
            let field = finding.field.as_deref();
            let key = format!(
                "{:?} {resource:?} {field:?} {}",
                finding.severity, finding.message
            );
            if !self.last.results.contains(&key) {
                let message = finding.message.as_str();
                let resource = resource.as_deref();
                match finding.severity {
                    Severity::Error => tracing::error!(resource, field, "{message}"),
                    Severity::Warning => tracing::warn!(resource, field, "{message}"),
                    Severity::Info => tracing::debug!(resource, field, "{message}"),
                }
            }
            now.insert(key);
        }
        self.last.results = now;
    }

    /// Logs the plan's lines that are new since the last reconcile, one per Argo CD Secret
    /// (never a value), as `capi2argo plan` prints them; unchanged Secrets are not said.
    pub fn plan_lines(&mut self, plan: &Plan) {
        let text = plan.text_of_changes();
        let mut now = BTreeSet::new();
        for line in text.lines() {
            if line.starts_with("unchanged ") || line.starts_with("plan: ") {
                continue;
            }
            if !self.last.lines.contains(line) {
                tracing::info!("{line}");
            }
            now.insert(line.to_string());
        }
        self.last.lines = now;
    }

    /// Metrics and Events from what the plan says of each cluster and guard.
    pub async fn observe(&mut self, plan: &Plan, now: i64, caches: &Caches) {
        self.plan_metrics(plan);
        let mut said: Vec<ObjectEvent> = Vec::new();
        let (failed, states) = newly_failed(&self.last.states, &plan.clusters);
        for c in failed {
            let note = format!(
                "cluster {} gets no Argo CD Secret this time: {}",
                c.cluster,
                c.reason.as_deref().unwrap_or("it failed to convert")
            );
            said.push(on_source(caches, &c.source, "ConvertFailed", note));
        }
        self.last.states = states;
        let window = i64::from(self.expiry_days) * 86_400;
        let expiring: BTreeSet<SecretId> = plan
            .clusters
            .iter()
            .filter(|c| c.expires.is_some_and(|e| e - now < window))
            .map(|c| c.source.clone())
            .collect();
        for c in plan
            .clusters
            .iter()
            .filter(|c| expiring.contains(&c.source) && !self.last.expiring.contains(&c.source))
        {
            let left = capi2argo_core::time_left(c.expires.unwrap_or(now) - now);
            let note = format!(
                "a certificate of cluster {}'s credentials stops being valid {left}: Argo CD loses the cluster then unless the platform rotates it",
                c.cluster
            );
            said.push(on_source(caches, &c.source, "CredentialExpiring", note));
        }
        self.last.expiring = expiring;
        let held: BTreeSet<Guard> = plan.guards.iter().map(|h| h.guard).collect();
        // Every setting the whole change needs, said with each guard: one deliberate mass
        // change is one run (deploy/controller/once), not one per guard.
        let let_through = if plan.overrides.is_empty() {
            String::new()
        } else {
            let given: Vec<String> = plan
                .overrides
                .iter()
                .map(|o| format!("--set={o}"))
                .collect();
            format!(
                ". If all of the change is meant, one run with {} lets it through (deploy/controller/once)",
                given.join(" ")
            )
        };
        for h in plan
            .guards
            .iter()
            .filter(|h| !self.last.guards.contains(&h.guard))
        {
            tracing::warn!(
                guard = h.guard.setting(),
                secrets = h.secrets.len(),
                "a guard holds: {}{let_through}",
                h.message
            );
            let note = format!("{}{let_through}", h.message);
            for secret in &h.secrets {
                let event = events::warning("GuardHeld", "Keep", &note);
                said.push((events::source(caches, secret), event));
            }
            // On each Application the guard kept: Argo CD shows an Application's Events.
            for app in &h.applications {
                let note = format!(
                    "capi2argo's guard {} kept this Application from deletion by its ApplicationSet: the Argo CD cluster Secret changes that would have deleted it are held back ({})",
                    h.guard.setting(),
                    h.message
                );
                let event = events::warning("ApplicationKept", "Keep", &note);
                said.push((events::application(caches, app), event));
            }
        }
        for guard in self.last.guards.difference(&held) {
            tracing::info!(
                guard = guard.setting(),
                "the guard no longer holds: what it held was let through, or is no longer planned"
            );
        }
        self.last.guards = held;
        self.publish(said).await;
    }

    /// Events on each cluster whose Argo CD Secret a request wrote or removed (`done`): on its
    /// Cluster API Cluster where the caches hold it, else its source — `Registered`, `Updated`,
    /// `Unregistered`, naming the Argo CD Secret: what a user looks at first.
    pub async fn registrations(&self, plan: &Plan, done: &[(Verb, SecretId)], caches: &Caches) {
        // A set, not a scan: a fleet's first sync makes one request per cluster.
        let done: BTreeSet<(&str, &SecretId)> = done.iter().map(|(v, d)| (v.word(), d)).collect();
        let made = |verb: Verb, id: &SecretId| done.contains(&(verb.word(), id));
        let mut said = Vec::new();
        for e in &plan.entries {
            let Some(source) = &e.source else {
                continue;
            };
            let (reason, action, note) = match &e.action {
                Action::Create if made(Verb::Create, &e.secret) => (
                    "Registered",
                    "Register",
                    format!(
                        "registered in Argo CD as cluster {} ({}): its Secret {}",
                        e.cluster, e.server, e.secret
                    ),
                ),
                Action::Update { changed } if made(Verb::Replace, &e.secret) => (
                    "Updated",
                    "Update",
                    format!(
                        "its Argo CD Secret {} was updated: {}",
                        e.secret,
                        changed.join(", ")
                    ),
                ),
                Action::Rename {
                    from, from_cluster, ..
                } if made(Verb::Create, &e.secret) || made(Verb::Replace, &e.secret) => (
                    "Updated",
                    "Update",
                    format!(
                        "renamed in Argo CD from {from_cluster} ({from}) to {} ({})",
                        e.cluster, e.secret
                    ),
                ),
                Action::Prune if made(Verb::Delete, &e.secret) => (
                    "Unregistered",
                    "Unregister",
                    format!(
                        "its Argo CD Secret {} was removed: Argo CD no longer knows cluster {}",
                        e.secret, e.cluster
                    ),
                ),
                _ => continue,
            };
            said.push((
                events::cluster(caches, source),
                events::normal(reason, action, &note),
            ));
        }
        self.publish(said).await;
    }

    fn plan_metrics(&self, plan: &Plan) {
        for state in STATES {
            let count = plan.clusters.iter().filter(|c| c.state == state).count();
            self.metrics.clusters_in(state, count as i64);
        }
        let held: BTreeSet<Guard> = plan.guards.iter().map(|h| h.guard).collect();
        for guard in GUARDS {
            let protected: usize = plan
                .guards
                .iter()
                .filter(|h| h.guard == guard)
                .map(|h| h.applications.len())
                .sum();
            self.metrics.guard(guard, held.contains(&guard), protected);
        }
        let mut effects = [0usize; 3];
        for change in plan.applications.sets.iter().flat_map(|s| &s.changes) {
            effects[match change.effect {
                ApplicationEffect::Delete { .. } => 0,
                ApplicationEffect::Keep { .. } => 1,
                ApplicationEffect::Create { .. } => 2,
            }] += 1;
        }
        let stranded = plan.applications.stranded.len();
        for (effect, count) in APPLICATION_EFFECTS
            .iter()
            .zip(effects.into_iter().chain([stranded]))
        {
            self.metrics.applications(effect, count);
        }
        let nearest = plan
            .clusters
            .iter()
            .filter_map(|c| c.expires.map(|e| (e, c.source.to_string())))
            .min();
        self.metrics.nearest_expiry(nearest);
        let nearest_token = plan
            .tokens
            .iter()
            .filter_map(|t| t.expires.map(|e| (e, t.secret.to_string())))
            .min();
        self.metrics.nearest_token_expiry(nearest_token);
    }

    /// Publishes Events.
    pub async fn publish(&self, said: Vec<ObjectEvent>) {
        events::publish(&self.recorder, said).await;
    }

    /// The metrics of a reconcile that ended, started at `started`.
    pub fn ended(&self, started: Instant, outcome: PlanOutcome) {
        self.metrics.plan(outcome);
        self.metrics
            .duration
            .observe(started.elapsed().as_secs_f64());
        if outcome != PlanOutcome::Failed {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            self.metrics.last_success.set(now);
        }
    }
}

/// Each cluster's state and why, as a reconcile saw them.
type States = BTreeMap<SecretId, (ClusterState, Option<String>)>;

/// The clusters that failed and were not failing before, or fail for another reason now (a
/// stale note misleads more than none), and the states to compare the next reconcile with.
fn newly_failed<'a>(
    last: &States,
    clusters: &'a [ClusterOutcome],
) -> (Vec<&'a ClusterOutcome>, States) {
    let mut failed = Vec::new();
    let mut states = States::new();
    for c in clusters {
        let now = (c.state, c.reason.clone());
        if c.state == ClusterState::Failed && last.get(&c.source) != Some(&now) {
            failed.push(c);
        }
        states.insert(c.source.clone(), now);
    }
    (failed, states)
}

/// A Warning Event on a cluster's source, about its conversion.
fn on_source(caches: &Caches, source: &SecretId, reason: &str, note: String) -> ObjectEvent {
    (
        events::source(caches, source),
        events::warning(reason, "Convert", &note),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(state: ClusterState, reason: &str) -> ClusterOutcome {
        ClusterOutcome {
            source: SecretId::new("fleet", "prod-eu-1-kubeconfig"),
            cluster: "prod-eu-1".into(),
            secret: None,
            state,
            reason: Some(reason.into()),
            expires: None,
        }
    }

    /// Regression (issue 47): an Event kept a cause that had been fixed. A failure is said when
    /// it begins and again when its reason changes, not at every reconcile.
    #[test]
    fn a_conversion_failure_is_said_again_when_its_reason_changes() {
        let said = |last: &mut States, c: ClusterOutcome| {
            let clusters = [c];
            let (failed, now) = newly_failed(last, &clusters);
            *last = now;
            failed.len()
        };
        let mut last = States::new();
        let v1 = "the client certificate is X.509 v1";
        assert_eq!(said(&mut last, outcome(ClusterState::Failed, v1)), 1);
        assert_eq!(said(&mut last, outcome(ClusterState::Failed, v1)), 0);
        assert_eq!(
            said(&mut last, outcome(ClusterState::Failed, "no server")),
            1
        );
        assert_eq!(said(&mut last, outcome(ClusterState::Converted, "")), 0);
        assert_eq!(
            said(&mut last, outcome(ClusterState::Failed, "no server")),
            1
        );
    }
}
