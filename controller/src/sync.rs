//! One reconcile: the input from the caches, the plan from capi2argo, what it says turned into
//! metrics, logs and Events, and exactly its conditional requests made, in order, as field
//! manager `capi2argo`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use capi2argo_core::{
    AppRef, ApplicationEffect, ClusterOutcome, ClusterState, Due, Finding, Guard, NoFiles, Plan,
    PlanFormat, Request, SecretId, Severity, TokenNeed, Verb,
};
use futures::StreamExt;

use crate::mint;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Client, ResourceExt};

use crate::cache::Caches;
use crate::metrics::{APPLICATION_EFFECTS, GUARDS, Metrics, PlanOutcome, STATES};
use crate::settings::Settings;

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "capi2argo";

/// At most this many Events per reconcile: a fleet-wide failure says so without flooding.
const EVENTS_PER_RECONCILE: usize = 50;

/// How many workload clusters get their tokens minted at once.
const MINTS_AT_ONCE: usize = 16;

/// How long setting up one workload cluster may take, all its requests together.
const MINT_DEADLINE: Duration = Duration::from_secs(60);

/// How long a reconcile waits for the caches to show its own last writes.
const READ_YOUR_WRITES: Duration = Duration::from_secs(2);

/// How a reconcile ended, as the exit code of `--once` says it (the sync script's codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Everything planned was carried out; the plan had no errors.
    Synced = 0,
    /// Carried out; the plan had errors (a guard held, a cluster failed to convert).
    PlanErrors = 1,
    /// Nothing done: capi2argo refused the input or the settings.
    Refused = 2,
    /// Nothing done: a read failed.
    ReadFailed = 3,
    /// A request was refused or failed: those before it were carried out, none after it.
    RequestFailed = 4,
}

/// What a reconcile did.
#[derive(Debug)]
pub struct Report {
    pub ending: Ending,
    /// A request was refused as stale (409): plan again once the caches catch up.
    pub conflict: bool,
    /// How many requests it made.
    pub writes: usize,
}

/// A write the caches should show before the next plan reads them.
enum Expect {
    Version(SecretId, String),
    Gone(SecretId, String),
}

/// What the last reconcile said, so logs and Events say what changed, not everything again.
#[derive(Default)]
struct Said {
    results: BTreeSet<String>,
    /// The plan's lines (an unchanged Secret's are not said).
    lines: BTreeSet<String>,
    states: BTreeMap<SecretId, ClusterState>,
    guards: BTreeSet<Guard>,
    expiring: BTreeSet<SecretId>,
}

pub struct Reconciler {
    pub client: Client,
    pub caches: Arc<Caches>,
    pub settings: Settings,
    pub metrics: Metrics,
    pub events: Recorder,
    said: Said,
    pending: Vec<Expect>,
    /// Workload clusters whose token could not be minted, and when to try again.
    backoff: mint::Backoff,
    /// When this reconcile wants the next one, though nothing changes (a token due for its
    /// age, a cluster whose backoff ends).
    pub wake: Option<Instant>,
    /// Say how every reconcile ended, not only one that wrote or failed (`--once`).
    pub always_summarise: bool,
}

impl Reconciler {
    pub fn new(
        client: Client,
        caches: Arc<Caches>,
        settings: Settings,
        metrics: Metrics,
        events: Recorder,
    ) -> Reconciler {
        Reconciler {
            client,
            caches,
            settings,
            metrics,
            events,
            said: Said::default(),
            pending: Vec::new(),
            backoff: mint::Backoff::default(),
            wake: None,
            always_summarise: false,
        }
    }

    /// Plans from the caches and, while `may_write` says so, carries the plan out.
    pub async fn reconcile(&mut self, may_write: &(dyn Fn() -> bool + Sync)) -> Report {
        let started = Instant::now();
        self.await_own_writes().await;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let params = if self.settings.reads.applications {
            self.caches.controller_params().await
        } else {
            None
        };
        let input = self.caches.input(params);
        let options = self.settings.plan_options(now);
        let finished = capi2argo_core::plan(&input, &options, &mut NoFiles);
        drop(input);
        let (results, plan) = match finished {
            Ok(capi2argo_core::Finished {
                results,
                plan: Some(plan),
                ..
            }) => (results, plan),
            Ok(finished) => {
                self.log_results(&finished.results);
                return self.end(started, Ending::Refused, PlanOutcome::Failed, 0, false);
            }
            Err(error) => {
                tracing::error!(error = %error, "capi2argo refused the input built from the caches; nothing was changed");
                return self.end(started, Ending::Refused, PlanOutcome::Failed, 0, false);
            }
        };
        self.log_results(&results);
        self.log_plan(&plan);
        self.observe(&plan, now).await;
        let errors = results.iter().any(|f| f.severity == Severity::Error);
        if !may_write() {
            tracing::debug!("not the leader: nothing is written");
            return self.end(started, Ending::Synced, PlanOutcome::Synced, 0, false);
        }
        let minted = self.tokens(&plan, now, may_write).await;
        let (mut writes, mut conflict, mut failed) = (minted.writes, false, false);
        // New tokens change what the plan would write: plan again from them, at once, rather
        // than write Argo CD Secrets about to be replaced. A token that could not be kept waits
        // in the backoff, and the rest of the plan goes on.
        let requests = if minted.kept > 0 {
            conflict = true;
            Vec::new()
        } else {
            plan.requests()
        };
        for request in &requests {
            if !may_write() {
                tracing::info!("stopped writing: no longer the leader, or stopping");
                failed = true;
                break;
            }
            writes += 1;
            match self.carry_out(request).await {
                Ok(()) => {}
                Err(Refusal::Stale(message)) => {
                    tracing::info!(verb = request.verb.word(), secret = %request.secret, reason = message, "refused as stale: planning again from fresh caches");
                    conflict = true;
                    failed = true;
                    break;
                }
                Err(Refusal::Failed(message)) => {
                    tracing::error!(verb = request.verb.word(), secret = %request.secret, error = message, "a request failed: the ones before it were carried out, none after it");
                    failed = true;
                    break;
                }
            }
        }
        // Revoked once its token Secret is gone and Argo CD's Secret no longer uses it.
        if !failed && !requests.is_empty() {
            self.revoke(&plan, may_write).await;
        }
        self.wake = self.next_wake(&plan, now);
        let (ending, outcome) = match (failed, errors) {
            (true, _) => (Ending::RequestFailed, PlanOutcome::Failed),
            (false, true) => (Ending::PlanErrors, PlanOutcome::Errors),
            (false, false) => (Ending::Synced, PlanOutcome::Synced),
        };
        if self.always_summarise || !requests.is_empty() || ending != Ending::Synced {
            let counts: Vec<String> = plan
                .counts()
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(w, n)| format!("{n} {w}"))
                .collect();
            tracing::info!(
                plan = counts.join(", "),
                requests = requests.len(),
                made = writes,
                outcome = outcome.word(),
                "reconciled"
            );
        }
        self.end(started, ending, outcome, writes, conflict)
    }

    fn end(
        &self,
        started: Instant,
        ending: Ending,
        outcome: PlanOutcome,
        writes: usize,
        conflict: bool,
    ) -> Report {
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
        Report {
            ending,
            conflict,
            writes,
        }
    }

    /// Waits, briefly, until the caches show what this controller last wrote: a plan made from
    /// caches that do not yet would create again what was just created.
    async fn await_own_writes(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let deadline = Instant::now() + READ_YOUR_WRITES;
        loop {
            let caches = &self.caches;
            self.pending.retain(|expect| match expect {
                Expect::Version(id, version) => caches
                    .secret(&id.namespace, &id.name)
                    .is_none_or(|s| s.resource_version().as_deref() != Some(version.as_str())),
                Expect::Gone(id, uid) => caches
                    .secret(&id.namespace, &id.name)
                    .is_some_and(|s| s.uid().as_deref() == Some(uid.as_str())),
            });
            if self.pending.is_empty() || Instant::now() >= deadline {
                self.pending.clear();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// One request, as the plan gives it.
    async fn carry_out(&mut self, request: &Request) -> Result<(), Refusal> {
        let id = &request.secret;
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &id.namespace);
        let params = PostParams {
            dry_run: false,
            field_manager: Some(FIELD_MANAGER.to_string()),
        };
        let verb = request.verb.word();
        let result = match request.verb {
            Verb::Create | Verb::Replace => {
                let secret: Secret = serde_json::from_str(&request.body)
                    .map_err(|e| Refusal::Failed(format!("the plan's body: {e}")))?;
                let written = if request.verb == Verb::Create {
                    api.create(&params, &secret).await
                } else {
                    api.replace(&id.name, &params, &secret).await
                };
                written.map(|s| {
                    if let Some(version) = s.resource_version() {
                        self.pending.push(Expect::Version(id.clone(), version));
                    }
                })
            }
            Verb::Delete => {
                let options: serde_json::Value = serde_json::from_str(&request.body)
                    .map_err(|e| Refusal::Failed(format!("the plan's body: {e}")))?;
                let field = |key: &str| {
                    options
                        .pointer(&format!("/preconditions/{key}"))
                        .and_then(|v| v.as_str())
                        .map(String::from)
                };
                let uid = field("uid");
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: uid.clone(),
                        resource_version: field("resourceVersion"),
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&id.name, &params).await.map(|_| {
                    if let Some(uid) = uid {
                        self.pending.push(Expect::Gone(id.clone(), uid));
                    }
                })
            }
        };
        match result {
            Ok(()) => {
                self.metrics.write(verb, "ok");
                tracing::info!(verb, secret = %id, "done");
                Ok(())
            }
            // Changed or gone since it was read, or made meanwhile: the plan is stale.
            Err(kube::Error::Api(status)) if matches!(status.code, 409 | 404) => {
                self.metrics.write(verb, "conflict");
                Err(Refusal::Stale(status.message.clone()))
            }
            Err(error) => {
                self.metrics.write(verb, "error");
                Err(Refusal::Failed(error.to_string()))
            }
        }
    }

    /// `credentials: serviceAccount`: mints the tokens the plan says are due (a few workload
    /// clusters at a time, each within a deadline; one that fails waits, doubling, before it is
    /// tried again, and keeps its current token) and keeps each in its token Secret.
    async fn tokens(
        &mut self,
        plan: &Plan,
        now: i64,
        may_write: &(dyn Fn() -> bool + Sync),
    ) -> Minting {
        let nearest = plan
            .tokens
            .iter()
            .filter_map(|t| t.expires.map(|e| (e, t.secret.to_string())))
            .min();
        self.metrics.nearest_token_expiry(nearest);
        let live: BTreeSet<String> = plan
            .tokens
            .iter()
            .map(|t| t.kubeconfig.to_string())
            .collect();
        self.backoff.forget_all_but(&live);
        let mut done = Minting::default();
        let due: Vec<&TokenNeed> = plan
            .tokens
            .iter()
            .filter(|t| t.due.is_some() && t.access.is_ok())
            .filter(|t| {
                let by_age = matches!(t.due, Some(Due::Renew | Due::Expired));
                self.backoff.ready(&t.kubeconfig.to_string(), by_age)
            })
            .collect();
        if due.is_empty() || !may_write() {
            return done;
        }
        let minted: Vec<(&TokenNeed, Result<mint::Minted, String>)> = futures::stream::iter(due)
            .map(|need| async move {
                let work = async {
                    let access = need.access.as_ref().map_err(|e| e.clone())?;
                    let client = mint::client(access).await.map_err(|e| e.to_string())?;
                    mint::mint(&client, &need.grant, need.ttl)
                        .await
                        .map_err(|e| e.to_string())
                };
                let result = tokio::time::timeout(MINT_DEADLINE, work)
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!("no answer within {}s", MINT_DEADLINE.as_secs()))
                    });
                (need, result)
            })
            .buffer_unordered(MINTS_AT_ONCE)
            .collect()
            .await;
        let mut events = Vec::new();
        for (need, result) in minted {
            let key = need.kubeconfig.to_string();
            let why = need.due.map_or("", |d| d.describe());
            let kept = match result {
                Ok(token) if may_write() => {
                    self.metrics.minted("ok");
                    tracing::info!(cluster = need.cluster, secret = %need.secret, account = %need.grant.account, reason = why, expires = token.expires, "minted a ServiceAccount token");
                    let body =
                        need.secret_body(&token.token, now.min(token.expires), token.expires);
                    let verb = if need.current.is_some() {
                        Verb::Replace
                    } else {
                        Verb::Create
                    };
                    done.writes += 1;
                    match self
                        .carry_out(&Request::of(verb, need.secret.clone(), body))
                        .await
                    {
                        Ok(()) => Ok(()),
                        Err(Refusal::Stale(m) | Refusal::Failed(m)) => Err(format!(
                            "its token Secret {} could not be written: {m}",
                            need.secret
                        )),
                    }
                }
                Ok(_) => continue,
                Err(error) => {
                    self.metrics.minted("error");
                    Err(error)
                }
            };
            match kept {
                Ok(()) => {
                    self.backoff.minted(&key);
                    done.kept += 1;
                }
                Err(error) => {
                    let first = !self.backoff.failing().contains(&key);
                    self.backoff.failed(&key);
                    tracing::warn!(cluster = need.cluster, kubeconfig = %need.kubeconfig, error = %error, "no new ServiceAccount token; the cluster keeps its current one until it expires");
                    if first {
                        let until = need.expires.map_or(String::new(), |e| {
                            format!(" ({})", capi2argo_core::instant(e))
                        });
                        let note = format!(
                            "cluster {}'s ServiceAccount token could not be renewed ({why}): {error}. It keeps its current token until that expires{until}",
                            need.cluster
                        );
                        let event = warning("TokenRefreshFailed", "Mint", &note);
                        events.push((reference(&self.caches, &need.kubeconfig), event));
                    }
                }
            }
        }
        self.metrics
            .token_failing
            .set(self.backoff.failing().len() as i64);
        self.publish(events).await;
        done
    }

    /// `removeServiceAccount`: deletes the ServiceAccount and its RBAC in the workload clusters
    /// whose token Secrets the plan deleted; one that fails says so (its tokens expire on their
    /// own) and is not tried again.
    async fn revoke(&mut self, plan: &Plan, may_write: &(dyn Fn() -> bool + Sync)) {
        let mut events = Vec::new();
        for delete in &plan.token_deletes {
            let Some((access, grant)) = &delete.revoke else {
                continue;
            };
            if !may_write() {
                return;
            }
            let work = async {
                let client = mint::client(access).await?;
                mint::revoke(&client, grant).await
            };
            let revoked = tokio::time::timeout(MINT_DEADLINE, work)
                .await
                .map_err(|_| format!("no answer within {}s", MINT_DEADLINE.as_secs()))
                .and_then(|r| r.map_err(|e| e.to_string()));
            match revoked {
                Ok(()) => {
                    tracing::info!(kubeconfig = %delete.kubeconfig, account = %grant.account, "revoked: the ServiceAccount and its RBAC were deleted in the workload cluster")
                }
                Err(error) => {
                    tracing::warn!(kubeconfig = %delete.kubeconfig, error = %error, "the ServiceAccount could not be deleted in the workload cluster; its tokens expire on their own");
                    let note = format!(
                        "the ServiceAccount {} and its RBAC could not be deleted in the workload cluster: {error}. Its tokens expire on their own; delete it by hand to revoke them now",
                        grant.account
                    );
                    let event = warning("RevokeFailed", "Revoke", &note);
                    events.push((reference(&self.caches, &delete.kubeconfig), event));
                }
            }
        }
        self.publish(events).await;
    }

    /// When the next token is due for its age, or the next cluster waiting in the backoff may
    /// be tried: nothing else would wake the controller before its resync.
    fn next_wake(&self, plan: &Plan, now: i64) -> Option<Instant> {
        let renew = plan
            .tokens
            .iter()
            .filter(|t| t.access.is_ok())
            .filter_map(|t| t.renew_at)
            .min()
            .map(|at| Instant::now() + Duration::from_secs(at.saturating_sub(now).max(1) as u64));
        [renew, self.backoff.next()].into_iter().flatten().min()
    }

    /// Publishes Events, at most [`EVENTS_PER_RECONCILE`].
    async fn publish(&self, events: Vec<(ObjectReference, Event)>) {
        for (reference, event) in events.into_iter().take(EVENTS_PER_RECONCILE) {
            if let Err(error) = self.events.publish(&event, &reference).await {
                tracing::debug!(error = %error, "an Event could not be recorded");
            }
        }
    }

    /// Logs each result once, when it first appears (a fleet's steady warnings are not
    /// repeated every reconcile). Results never hold a Secret's value.
    fn log_results(&mut self, results: &[Finding]) {
        let mut now = BTreeSet::new();
        for finding in results {
            let resource = finding
                .resource
                .as_ref()
                .map(|r| {
                    format!(
                        "{} {}/{}",
                        r.kind,
                        r.namespace.as_deref().unwrap_or(""),
                        r.name
                    )
                })
                .unwrap_or_default();
            let field = finding.field.as_deref().unwrap_or("");
            let key = format!(
                "{:?} {resource} {field} {}",
                finding.severity, finding.message
            );
            if !self.said.results.contains(&key) {
                let message = finding.message.as_str();
                match finding.severity {
                    Severity::Error => tracing::error!(resource, field, "{message}"),
                    Severity::Warning => tracing::warn!(resource, field, "{message}"),
                    Severity::Info => tracing::debug!(resource, field, "{message}"),
                }
            }
            now.insert(key);
        }
        self.said.results = now;
    }

    /// Logs the plan's lines that are new since the last reconcile, one per Argo CD Secret
    /// (never a value), as `capi2argo plan` prints them; unchanged Secrets are not said.
    fn log_plan(&mut self, plan: &Plan) {
        let text = plan.show(PlanFormat::Text);
        let mut now = BTreeSet::new();
        for line in text.lines() {
            if line.starts_with("unchanged ") || line.starts_with("plan: ") {
                continue;
            }
            if !self.said.lines.contains(line) {
                tracing::info!("{line}");
            }
            now.insert(line.to_string());
        }
        self.said.lines = now;
    }

    /// Metrics and Events from what the plan says of each cluster and guard.
    async fn observe(&mut self, plan: &Plan, now: i64) {
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
        for (effect, count) in APPLICATION_EFFECTS.iter().zip(
            effects
                .into_iter()
                .chain([plan.applications.stranded.len()]),
        ) {
            self.metrics.applications(effect, count);
        }
        let nearest = plan
            .clusters
            .iter()
            .filter_map(|c| c.expires.map(|e| (e, c.source.to_string())))
            .min();
        self.metrics.nearest_expiry(nearest);

        let mut events: Vec<(ObjectReference, Event)> = Vec::new();
        let mut states = BTreeMap::new();
        for c in &plan.clusters {
            states.insert(c.source.clone(), c.state);
            let before = self.said.states.get(&c.source).copied();
            if c.state == ClusterState::Failed && before != Some(ClusterState::Failed) {
                let note = format!(
                    "cluster {} gets no Argo CD Secret this time: {}",
                    c.cluster,
                    c.reason.as_deref().unwrap_or("it failed to convert")
                );
                events.push(self.event(c, EventType::Warning, "ConvertFailed", note));
            }
        }
        self.said.states = states;
        let window = i64::from(self.settings.reads.expiry_days) * 86_400;
        let expiring: BTreeSet<SecretId> = plan
            .clusters
            .iter()
            .filter(|c| c.expires.is_some_and(|e| e - now < window))
            .map(|c| c.source.clone())
            .collect();
        for c in plan
            .clusters
            .iter()
            .filter(|c| expiring.contains(&c.source) && !self.said.expiring.contains(&c.source))
        {
            let left = capi2argo_core::time_left(c.expires.unwrap_or(now) - now);
            let note = format!(
                "a certificate of cluster {}'s credentials stops being valid {left}: Argo CD loses the cluster then unless the platform rotates it",
                c.cluster
            );
            events.push(self.event(c, EventType::Warning, "CredentialExpiring", note));
        }
        self.said.expiring = expiring;
        for h in &plan.guards {
            if self.said.guards.contains(&h.guard) {
                continue;
            }
            tracing::warn!(
                guard = h.guard.setting(),
                secrets = h.secrets.len(),
                "a guard holds: {}",
                h.message
            );
            for secret in &h.secrets {
                let reference = reference(&self.caches, secret);
                let event = Event {
                    type_: EventType::Warning,
                    reason: "GuardHeld".into(),
                    note: Some(truncate(&h.message)),
                    action: "Keep".into(),
                    secondary: None,
                };
                events.push((reference, event));
            }
            // On each Application the guard kept: Argo CD shows an Application's Events.
            for app in &h.applications {
                let note = format!(
                    "capi2argo's guard {} kept this Application from deletion by its ApplicationSet: the Argo CD cluster Secret changes that would have deleted it are held back ({})",
                    h.guard.setting(),
                    h.message
                );
                events.push((
                    application_reference(&self.caches, app),
                    warning("ApplicationKept", "Keep", &note),
                ));
            }
        }
        self.said.guards = held;
        self.publish(events).await;
    }

    fn event(
        &self,
        c: &ClusterOutcome,
        type_: EventType,
        reason: &str,
        note: String,
    ) -> (ObjectReference, Event) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(truncate(&note)),
            action: "Convert".into(),
            secondary: None,
        };
        (reference(&self.caches, &c.source), event)
    }
}

/// What minting did in one reconcile.
#[derive(Default)]
struct Minting {
    /// Token Secrets written (or tried).
    writes: usize,
    /// Tokens minted and kept.
    kept: usize,
}

/// Why a request was not carried out.
enum Refusal {
    /// The Secret changed, went or appeared since it was read.
    Stale(String),
    Failed(String),
}

/// An Event's reference to a cluster's source: its Secret, or the ClusterProfile of that name
/// when no Secret has it (with its uid, when the caches hold it).
fn reference(caches: &Caches, id: &SecretId) -> ObjectReference {
    let secret = caches.secret(&id.namespace, &id.name);
    let profile = secret
        .is_none()
        .then(|| caches.profile(&id.namespace, &id.name))
        .flatten();
    let (api_version, kind, uid) = match profile {
        Some((version, uid)) => (version, "ClusterProfile", Some(uid)),
        None => ("v1".to_string(), "Secret", secret.and_then(|s| s.uid())),
    };
    ObjectReference {
        api_version: Some(api_version),
        kind: Some(kind.into()),
        namespace: Some(id.namespace.clone()),
        name: Some(id.name.clone()),
        uid,
        ..ObjectReference::default()
    }
}

/// An Event's reference to an Application (its uid, when the caches hold it).
fn application_reference(caches: &Caches, app: &AppRef) -> ObjectReference {
    ObjectReference {
        api_version: Some("argoproj.io/v1alpha1".into()),
        kind: Some("Application".into()),
        namespace: Some(app.namespace.clone()),
        name: Some(app.name.clone()),
        uid: caches.application_uid(app),
        ..ObjectReference::default()
    }
}

/// A Warning Event.
fn warning(reason: &str, action: &str, note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some(truncate(note)),
        action: action.into(),
        secondary: None,
    }
}

/// An Event's note holds at most 1 kB.
fn truncate(text: &str) -> String {
    if text.len() <= 1000 {
        return text.to_string();
    }
    let mut end = 1000;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
