//! One reconcile: the plan made from the caches by the pure core, said (logs, metrics, Events),
//! the tokens it finds due minted, and exactly its conditional requests made, in order.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use capi2argo_core::{NoFiles, Plan, Planner, Severity};

use crate::credentials::{Credentials, MintError, Revocation};
use crate::reading::Caches;
use crate::reporting::Reporter;
use crate::reporting::events::{self, ObjectEvent};
use crate::reporting::metrics::PlanOutcome;
use crate::requests::{OwnWrites, Refusal, Writer};
use crate::settings::Settings;

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
    /// Plan again at once: a request was refused as stale (the caches will catch up), or new
    /// tokens change what the plan writes.
    pub replan: bool,
    /// How many requests it made.
    pub writes: usize,
}

/// The reconciler: what one reconcile needs, and what it remembers for the next.
pub struct Reconciler {
    pub caches: Arc<Caches>,
    pub settings: Settings,
    /// The objects of the caches as the core reads them: each read again only when it changes.
    planner: Planner,
    writer: Writer,
    credentials: Credentials,
    reporter: Reporter,
    /// When a reconcile wants the next one, though nothing changes (a token due for its age, a
    /// cluster whose backoff ends).
    pub wake: Option<Instant>,
    /// Say how every reconcile ended, not only one that wrote or failed (`--once`).
    pub always_summarise: bool,
    /// The last reconcile's writes, when the plan of what they leave does nothing more
    /// ([`Plan::settled_when_carried_out`]): their echoes alone wake no plan at once.
    own_writes: OwnWrites,
}

/// How long the echoes of a reconcile's own writes wait for their plan when nothing else
/// changes: that plan does nothing (the function is idempotent) but say so, so it waits for
/// the next change, which plans them too, or for this long. Under steady change it is never
/// made on its own, and half the plans of a fleet taking new clusters are saved.
const OWN_WRITES_WAIT: Duration = Duration::from_secs(5);

/// What came of asking for a plan.
enum Planned {
    /// The plan, and whether it has errors.
    Plan(Box<Plan>, bool),
    /// Nothing but the echoes of the last reconcile's own writes changed: planned later.
    Deferred,
    /// The core refused the input or the settings, or an object could not be read (said).
    Refused,
}

/// What minting did in one reconcile.
#[derive(Default)]
struct Minting {
    /// Token Secrets written (or tried).
    writes: usize,
    /// Tokens minted and kept.
    kept: usize,
}

impl Reconciler {
    pub fn new(
        caches: Arc<Caches>,
        settings: Settings,
        writer: Writer,
        credentials: Credentials,
        reporter: Reporter,
    ) -> Reconciler {
        Reconciler {
            caches,
            planner: Planner::new(settings.options.limits.clone()),
            settings,
            writer,
            credentials,
            reporter,
            wake: None,
            always_summarise: false,
            own_writes: OwnWrites::default(),
        }
    }

    /// Plans from the caches and, while `may_write` says so, carries the plan out.
    pub async fn reconcile(&mut self, may_write: &(dyn Fn() -> bool + Sync)) -> Report {
        let started = Instant::now();
        self.writer.await_own_writes(&self.caches).await;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let (plan, errors) = match self.plan(now).await {
            Planned::Plan(plan, errors) => (*plan, errors),
            Planned::Deferred => {
                let later = Instant::now() + OWN_WRITES_WAIT;
                self.wake = Some(self.wake.map_or(later, |wake| wake.min(later)));
                tracing::debug!(
                    "only this controller's own writes changed: planned with the next change"
                );
                return Report {
                    ending: Ending::Synced,
                    replan: false,
                    writes: 0,
                };
            }
            Planned::Refused => {
                return self.end(started, Ending::Refused, PlanOutcome::Failed, 0, false);
            }
        };
        if !may_write() {
            tracing::debug!("not the leader: nothing is written");
            return self.end(started, Ending::Synced, PlanOutcome::Synced, 0, false);
        }
        let minted = self.tokens(&plan, now, may_write).await;
        // New tokens change what the plan would write: plan again from them, at once, rather
        // than write Argo CD Secrets about to be replaced. A token that could not be kept waits
        // in the backoff, and the rest of the plan goes on.
        let mut requests = if minted.kept > 0 {
            Vec::new()
        } else {
            plan.requests()
        };
        // The token Secrets go last, each once its tokens are revoked, and those only once Argo
        // CD's Secrets no longer log in with them: the plan's other requests first.
        let leaving: Vec<capi2argo_core::Request> = {
            let is_token = |r: &capi2argo_core::Request| {
                r.verb() == capi2argo_core::Verb::Delete
                    && plan.token_deletes.iter().any(|d| d.secret == r.secret())
            };
            let (tokens, others) = requests.into_iter().partition(is_token);
            requests = others;
            tokens
        };
        let (mut made, mut refusal) = self.carry_out(&requests, may_write).await;
        if refusal.is_none() && !leaving.is_empty() {
            // One that could not be revoked stays, to be tried again.
            let unrevoked = self.revoke_leaving(&plan, &leaving, may_write).await;
            let leaving: Vec<_> = leaving
                .into_iter()
                .filter(|r| !unrevoked.contains(&r.secret()))
                .collect();
            let (more, refused) = self.carry_out(&leaving, may_write).await;
            made += more;
            refusal = refused;
            requests.extend(leaving);
        }
        let stale = matches!(refusal, Some(Some(Refusal::Stale { .. })));
        let failed = refusal.is_some();
        // The requests carried out: all those made, but the one refused.
        let carried = made - usize::from(matches!(refusal, Some(Some(_))));
        let done: Vec<(capi2argo_core::Verb, capi2argo_core::SecretId)> = requests[..carried]
            .iter()
            .map(|r| (r.verb(), r.secret()))
            .collect();
        self.reporter
            .registrations(&plan, &done, &self.caches)
            .await;
        // Revoked once its token Secret is gone and Argo CD's Secret no longer uses it.
        if !failed && !requests.is_empty() {
            self.revoke(&plan, may_write).await;
        }
        let retired = if failed || minted.kept > 0 {
            0
        } else {
            self.retire(&plan, may_write).await
        };
        self.wake = self.next_wake(&plan, now);
        let (ending, outcome) = match (failed, errors) {
            (true, _) => (Ending::RequestFailed, PlanOutcome::Failed),
            (false, true) => (Ending::PlanErrors, PlanOutcome::Errors),
            (false, false) => (Ending::Synced, PlanOutcome::Synced),
        };
        let writes = minted.writes + made + retired;
        let written = self.writer.take_written();
        let settled = !failed
            && !stale
            && minted.writes == 0
            && retired == 0
            && !self.always_summarise
            && plan.settled_when_carried_out();
        self.own_writes = if settled {
            written
        } else {
            OwnWrites::default()
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
        self.end(started, ending, outcome, writes, stale || minted.kept > 0)
    }

    /// The plan of the caches now, said, or why there is none.
    async fn plan(&mut self, now: i64) -> Planned {
        let extra = self.caches.read_named().await;
        let own = std::mem::take(&mut self.own_writes);
        match self.caches.feed(&mut self.planner, extra, &own) {
            Ok(fed) if fed.only_own_writes => return Planned::Deferred,
            Ok(fed) => {
                tracing::debug!(
                    read = fed.read,
                    kept = self.planner.len(),
                    "objects read for the plan"
                )
            }
            Err(error) => {
                tracing::error!(error = %error, "nothing was changed");
                return Planned::Refused;
            }
        }
        let options = self.settings.plan_options(now);
        let finished = self.planner.plan(&options, &mut NoFiles);
        let (results, plan) = match finished {
            Ok(capi2argo_core::Finished {
                results,
                plan: Some(plan),
                ..
            }) => (results, plan),
            Ok(finished) => {
                self.reporter.results(&finished.results);
                return Planned::Refused;
            }
            Err(error) => {
                tracing::error!(error = %error, "capi2argo refused the input built from the caches; nothing was changed");
                return Planned::Refused;
            }
        };
        self.reporter.results(&results);
        self.reporter.plan_lines(&plan);
        self.reporter.observe(&plan, now, &self.caches).await;
        let errors = results.iter().any(|f| f.severity == Severity::Error);
        Planned::Plan(Box::new(plan), errors)
    }

    /// The requests, in order, until one is refused: how many were made, and the refusal
    /// (`Some(None)`: stopped because this replica may no longer write).
    async fn carry_out(
        &mut self,
        requests: &[capi2argo_core::Request],
        may_write: &(dyn Fn() -> bool + Sync),
    ) -> (usize, Option<Option<Refusal>>) {
        let mut made = 0;
        for request in requests {
            if !may_write() {
                tracing::info!("stopped writing: no longer the leader, or stopping");
                return (made, Some(None));
            }
            made += 1;
            match self.writer.carry_out(request).await {
                Ok(()) => {}
                Err(refusal @ Refusal::Stale { .. }) => {
                    tracing::info!(verb = request.verb().word(), secret = %request.secret(), reason = %refusal, "refused as stale: planning again from fresh caches");
                    return (made, Some(Some(refusal)));
                }
                Err(refusal) => {
                    tracing::error!(verb = request.verb().word(), secret = %request.secret(), error = %refusal, "a request failed: the ones before it were carried out, none after it");
                    return (made, Some(Some(refusal)));
                }
            }
        }
        (made, None)
    }

    fn end(
        &self,
        started: Instant,
        ending: Ending,
        outcome: PlanOutcome,
        writes: usize,
        replan: bool,
    ) -> Report {
        self.reporter.ended(started, outcome);
        Report {
            ending,
            replan,
            writes,
        }
    }

    /// `credentials: serviceAccount`: mints the tokens the plan says are due and keeps each in
    /// its token Secret; a cluster that fails waits in the backoff and keeps its current token.
    async fn tokens(
        &mut self,
        plan: &Plan,
        now: i64,
        may_write: &(dyn Fn() -> bool + Sync),
    ) -> Minting {
        let mut done = Minting::default();
        let due = self.credentials.due(plan);
        if may_write() {
            done.writes += self.regrant(plan).await;
        }
        if due.is_empty() || !may_write() {
            return done;
        }
        let minted = self.credentials.mint(due).await;
        let mut said: Vec<ObjectEvent> = Vec::new();
        for (need, result) in minted {
            let why = need.due.map_or("", |d| d.describe());
            let kept = match result {
                Ok(token) if may_write() => {
                    self.reporter.metrics.minted("ok");
                    tracing::info!(cluster = need.cluster, secret = %need.secret, account = %need.grant.account, reason = why, expires = %capi2argo_core::instant(token.expires), "minted a ServiceAccount token");
                    let request = need.request(
                        &token.token,
                        now.min(token.expires),
                        token.expires,
                        &token.binding,
                    );
                    done.writes += 1;
                    let written = self.writer.carry_out(&request).await;
                    // Refused for sure, nothing keeps the new token: it is revoked at once. A
                    // write whose answer was lost may have stored it: it stays.
                    if written.as_ref().is_err_and(Refusal::definite) {
                        self.discard(need, &token.binding).await;
                    }
                    written.map_err(|refusal| {
                        format!(
                            "its token Secret {} could not be written: {refusal}",
                            need.secret
                        )
                    })
                }
                Ok(token) => {
                    // No longer the leader: nothing keeps it.
                    self.discard(need, &token.binding).await;
                    continue;
                }
                Err(error) => {
                    self.reporter.metrics.minted("error");
                    Err(error.to_string())
                }
            };
            match kept {
                Ok(()) => {
                    self.credentials.kept(&need.kubeconfig);
                    done.kept += 1;
                }
                Err(error) => {
                    let say = self.credentials.failed(need, &error);
                    // A cluster with no token yet has nothing to keep: its Argo CD Secret, if
                    // it has one, stays as it is, and a new cluster waits for its token.
                    let keeps = if need.current.is_some() {
                        let until = need.expires.map_or(String::new(), |e| {
                            format!(" ({})", capi2argo_core::instant(e))
                        });
                        format!("It keeps its current token until that expires{until}")
                    } else {
                        "It has no token yet: its Argo CD Secret, if it has one, stays as it is"
                            .to_string()
                    };
                    tracing::warn!(cluster = need.cluster, kubeconfig = %need.kubeconfig, error = %error, "no new ServiceAccount token ({why}). {keeps}");
                    if say {
                        let note = format!(
                            "cluster {}'s ServiceAccount token could not be minted ({why}): {error}. {keeps}",
                            need.cluster
                        );
                        let event = events::warning("TokenRefreshFailed", "Mint", &note);
                        said.push((events::source(&self.caches, &need.kubeconfig), event));
                    }
                }
            }
        }
        self.reporter
            .metrics
            .token_failing
            .set(self.credentials.failing() as i64);
        self.reporter.publish(said).await;
        done
    }

    /// The RBAC of the clusters whose grant changed, and not their token, applied again, and
    /// the new grant recorded in their token Secrets; how many were written. One that fails
    /// waits in the backoff, its RBAC as it was.
    async fn regrant(&mut self, plan: &Plan) -> usize {
        let needs = self.credentials.regrants(plan);
        if needs.is_empty() {
            return 0;
        }
        let mut writes = 0;
        for (need, result) in self.credentials.set_up(needs).await {
            let kept = match result {
                Ok(()) => {
                    tracing::info!(cluster = need.cluster, account = %need.grant.account, "applied what its ServiceAccount may do again; its token is kept");
                    let Some(request) = need.regranted_request() else {
                        continue;
                    };
                    writes += 1;
                    self.writer.carry_out(&request).await.map_err(|refusal| {
                        format!(
                            "its token Secret {} could not be written: {refusal}",
                            need.secret
                        )
                    })
                }
                Err(error) => Err(error.to_string()),
            };
            match kept {
                Ok(()) => self.credentials.kept(&need.kubeconfig),
                Err(error) => {
                    tracing::warn!(cluster = need.cluster, error = %error, "what its ServiceAccount may do could not be applied again; tried again after a wait");
                    self.credentials.failed(need, &error);
                }
            }
        }
        writes
    }

    /// Revokes a token just minted that nothing keeps (its binding deleted).
    async fn discard(&self, need: &capi2argo_core::TokenNeed, binding: &str) {
        let Ok(access) = &need.access else {
            return;
        };
        let bindings = [binding.to_string()];
        if let Err(error) = self
            .credentials
            .unbind(access, &bindings, &need.secret)
            .await
        {
            tracing::warn!(cluster = need.cluster, error = %error, "a token nothing keeps could not be revoked; it expires on its own");
        }
    }

    /// The tokens of the token Secrets the plan deletes, revoked in their workload clusters
    /// (a few at a time); the token Secrets whose tokens were not revoked (said, and kept for a
    /// later reconcile to try again, after a wait).
    async fn revoke_leaving(
        &mut self,
        plan: &Plan,
        requests: &[capi2argo_core::Request],
        may_write: &(dyn Fn() -> bool + Sync),
    ) -> Vec<capi2argo_core::SecretId> {
        let leaving: Vec<(&capi2argo_core::TokenDelete, &capi2argo_core::Unbind)> = plan
            .token_deletes
            .iter()
            .filter(|d| {
                requests
                    .iter()
                    .any(|r| r.verb() == capi2argo_core::Verb::Delete && r.secret() == d.secret)
            })
            .filter_map(|d| Some((d, d.unbind.as_ref().ok()?)))
            .collect();
        if leaving.is_empty() || !may_write() {
            return leaving.iter().map(|(d, _)| d.secret.clone()).collect();
        }
        let revocations: Vec<Revocation> = leaving
            .iter()
            .map(|(d, u)| Revocation {
                access: &u.access,
                bindings: &u.bindings,
                for_secret: &d.secret,
            })
            .collect();
        let done = self.credentials.unbind_all(&revocations).await;
        let mut said: Vec<ObjectEvent> = Vec::new();
        let mut revoked = Vec::new();
        for (i, result) in done {
            let (delete, unbind) = leaving[i];
            match result {
                Ok(()) => {
                    self.reporter.metrics.revoked("ok");
                    tracing::info!(kubeconfig = %delete.kubeconfig, secret = %delete.secret, tokens = unbind.bindings.len(), "revoked: the token's binding was deleted in the workload cluster");
                    revoked.push(i);
                }
                Err(error) => {
                    self.reporter.metrics.revoked("error");
                    tracing::warn!(kubeconfig = %delete.kubeconfig, error = %error, "a token could not be revoked in the workload cluster; its token Secret is kept to try again");
                    let note = format!(
                        "the token of {} could not be revoked in the workload cluster: {error}. Its token Secret {} is kept and revoking is tried again; the token expires on its own otherwise",
                        delete.kubeconfig, delete.secret
                    );
                    let event = events::warning("RevokeFailed", "Revoke", &note);
                    said.push((events::source(&self.caches, &delete.kubeconfig), event));
                }
            }
        }
        self.reporter.publish(said).await;
        (0..leaving.len())
            .filter(|i| !revoked.contains(i))
            .map(|i| leaving[i].0.secret.clone())
            .collect()
    }

    /// Replaced tokens revoked once Argo CD's Secret carries their successor (the plan says
    /// which, a few workload clusters at a time), and dropped from their token Secret; how many
    /// token Secrets were written.
    async fn retire(&mut self, plan: &Plan, may_write: &(dyn Fn() -> bool + Sync)) -> usize {
        let retiring: Vec<(&capi2argo_core::TokenNeed, &capi2argo_core::AdminAccess)> = plan
            .tokens
            .iter()
            .filter(|t| !t.retire.is_empty() && t.retired_request().is_some())
            .filter_map(|t| Some((t, t.access.as_ref().ok()?)))
            .collect();
        if retiring.is_empty() || !may_write() {
            return 0;
        }
        let revocations: Vec<Revocation> = retiring
            .iter()
            .map(|(need, access)| Revocation {
                access,
                bindings: &need.retire,
                for_secret: &need.secret,
            })
            .collect();
        let done = self.credentials.unbind_all(&revocations).await;
        let mut writes = 0;
        for (i, result) in done {
            let need = retiring[i].0;
            if let Err(error) = result {
                self.reporter.metrics.revoked("error");
                tracing::warn!(cluster = need.cluster, error = %error, "a replaced token could not be revoked in the workload cluster yet; tried again after a wait");
                continue;
            }
            self.reporter.metrics.revoked("ok");
            tracing::info!(
                cluster = need.cluster,
                tokens = need.retire.len(),
                "revoked the replaced token: Argo CD's Secret carries its successor"
            );
            let Some(request) = need.retired_request() else {
                continue;
            };
            if !may_write() {
                break;
            }
            writes += 1;
            if let Err(refusal) = self.writer.carry_out(&request).await {
                tracing::info!(secret = %need.secret, reason = %refusal, "the token Secret was not written after revoking; planned again");
            }
        }
        writes
    }

    /// `removeServiceAccount`: deletes the ServiceAccount and its RBAC in the workload clusters
    /// whose token Secrets the plan deleted; one that fails says so (its tokens expire on their
    /// own) and is not tried again.
    async fn revoke(&mut self, plan: &Plan, may_write: &(dyn Fn() -> bool + Sync)) {
        let mut said: Vec<ObjectEvent> = Vec::new();
        for delete in &plan.token_deletes {
            if !may_write() {
                break;
            }
            let Some(revoked) = self.credentials.revoke(delete).await else {
                continue;
            };
            let Some((_, grant)) = &delete.revoke else {
                continue;
            };
            match revoked {
                Ok(()) => {
                    tracing::info!(kubeconfig = %delete.kubeconfig, account = %grant.account, "revoked: the ServiceAccount and its RBAC were deleted in the workload cluster")
                }
                Err(error) => said.push(self.revoke_failed(delete, &grant.account, &error)),
            }
        }
        self.reporter.publish(said).await;
    }

    fn revoke_failed(
        &self,
        delete: &capi2argo_core::TokenDelete,
        account: &capi2argo_core::ServiceAccount,
        error: &MintError,
    ) -> ObjectEvent {
        tracing::warn!(kubeconfig = %delete.kubeconfig, error = %error, "the ServiceAccount could not be deleted in the workload cluster; its tokens expire on their own");
        let note = format!(
            "the ServiceAccount {account} and its RBAC could not be deleted in the workload cluster: {error}. Its tokens expire on their own; delete it by hand to revoke them now"
        );
        let event = events::warning("RevokeFailed", "Revoke", &note);
        (events::source(&self.caches, &delete.kubeconfig), event)
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
        [renew, self.credentials.next_try()]
            .into_iter()
            .flatten()
            .min()
    }
}

/// One reconcile against a mocked API server: each scenario states the requests it expects, in
/// order, with the answers (`fixtures`).
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::Method;
    use serde_json::{Value, json};

    use super::*;
    use crate::fixtures::{
        self, Exchange, api, kubeconfig_secret, owned_secret, token_secret, unreachable, workloads,
    };

    const SECRETS: &str = "/api/v1/namespaces/argocd/secrets";

    /// What the API server answers to a write: the object, with a resourceVersion.
    fn written(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": name, "namespace": "argocd", "resourceVersion": "21", "uid": "new"}})
    }

    fn counter(metrics: &crate::reporting::metrics::Metrics, verb: &str, outcome: &str) -> u64 {
        let labels = vec![("verb", verb.to_string()), ("outcome", outcome.to_string())];
        metrics.writes.get_or_create(&labels).get()
    }

    fn reasons(log: &fixtures::Log) -> Vec<String> {
        log.events
            .iter()
            .filter_map(|e| e["reason"].as_str().map(String::from))
            .collect()
    }

    fn decoded(value: &Value) -> String {
        let bytes: k8s_openapi::ByteString =
            serde_json::from_value(value.clone()).expect("base64 data");
        String::from_utf8(bytes.0).expect("UTF-8")
    }

    #[tokio::test]
    async fn a_new_cluster_gets_its_argo_cd_secret() {
        let (client, server) = api(vec![Exchange::new(
            Method::POST,
            SECRETS,
            201,
            written("cluster-prod-eu-1"),
        )]);
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &[],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![],
            unreachable(),
        );
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        let log = server.await.expect("the scenario's requests");
        assert_eq!(report.ending, Ending::Synced);
        assert_eq!((report.writes, report.replan), (1, false));
        assert_eq!(counter(&metrics, "create", "ok"), 1);
        let body = &log.requests[0].body;
        assert_eq!(body["metadata"]["name"], "cluster-prod-eu-1");
        assert_eq!(
            body["metadata"]["labels"]["argocd.argoproj.io/secret-type"],
            "cluster"
        );
        assert_eq!(
            decoded(&body["data"]["server"]),
            "https://prod-eu-1-api.example.net:6443"
        );
        // Said where a user looks first: on the cluster (its kubeconfig Secret here, with no
        // Cluster API Cluster in the caches), naming the Argo CD Secret.
        assert_eq!(reasons(&log), ["Registered"]);
        let note = log.events[0]["note"].as_str().expect("a note");
        assert!(note.contains("argocd/cluster-prod-eu-1"), "{note}");
        assert_eq!(log.events[0]["regarding"]["name"], "prod-eu-1-kubeconfig");
    }

    /// The echo of the controller's own write wakes no plan at once: the plan of it would do
    /// nothing, so it waits for the next change or a few seconds; a change made by anyone else
    /// plans at once, and so does the wake the echo asked for.
    #[tokio::test]
    async fn the_echo_of_its_own_write_waits_for_the_next_change() {
        let replace = |version: &str| {
            let mut rewritten = written("cluster-prod-eu-1");
            rewritten["metadata"]["resourceVersion"] = json!(version);
            Exchange::new(
                Method::PUT,
                &format!("{SECRETS}/cluster-prod-eu-1"),
                200,
                rewritten,
            )
        };
        let (client, server) = api(vec![
            Exchange::new(Method::POST, SECRETS, 201, written("cluster-prod-eu-1")),
            replace("22"),
            replace("24"),
        ]);
        let (caches, mut argo) =
            crate::reading::fixture::caches_driven(&client, vec![kubeconfig_secret("prod-eu-1")]);
        let (mut reconciler, _) = fixtures::reconciler_over(&client, &[], caches, unreachable());
        assert_eq!(reconciler.reconcile(&|| true).await.writes, 1);
        // Its own write comes back as written (a stand-in body: what the server answered).
        let echo = |version: &str| {
            let mut secret = owned_secret("prod-eu-1", "https://elsewhere.example:6443");
            secret.metadata.resource_version = Some(version.into());
            kube::runtime::watcher::Event::Apply(secret)
        };
        argo.apply(echo("21"));
        let before = Instant::now();
        let report = reconciler.reconcile(&|| true).await;
        assert_eq!((report.ending, report.writes), (Ending::Synced, 0));
        let wake = reconciler.wake.expect("a plan is due later");
        assert!(wake > before && wake <= Instant::now() + OWN_WRITES_WAIT);
        // The wake plans: the stand-in body is not what the plan writes, so it is replaced.
        assert_eq!(reconciler.reconcile(&|| true).await.writes, 1);
        argo.apply(echo("22"));
        assert_eq!(reconciler.reconcile(&|| true).await.writes, 0);
        // Someone else's change to it plans at once.
        argo.apply(echo("23"));
        assert_eq!(reconciler.reconcile(&|| true).await.writes, 1);
        drop((reconciler, client));
        server.await.expect("the scenario's requests");
    }

    /// Regression (issue 46): a create refused as stale (409, made meanwhile) plans again at
    /// once, from fresh caches, rather than backing off as a failure does.
    #[tokio::test]
    async fn a_conflict_plans_again() {
        let (client, server) = api(vec![Exchange::refused(
            Method::POST,
            SECRETS,
            409,
            "AlreadyExists",
        )]);
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &[],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![],
            unreachable(),
        );
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        server.await.expect("the scenario's requests");
        assert_eq!(report.ending, Ending::RequestFailed);
        assert!(report.replan, "a stale request plans again");
        assert_eq!(counter(&metrics, "create", "conflict"), 1);
    }

    #[tokio::test]
    async fn a_forbidden_request_is_reported_and_not_replanned() {
        let (client, server) = api(vec![Exchange::refused(
            Method::POST,
            SECRETS,
            403,
            "Forbidden",
        )]);
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &[],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![],
            unreachable(),
        );
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        server.await.expect("the scenario's requests");
        assert_eq!(report.ending, Ending::RequestFailed);
        assert!(!report.replan, "a refusal backs off instead");
        assert_eq!(counter(&metrics, "create", "error"), 1);
    }

    /// An input without kubeconfig Secrets beside Argo CD Secrets capi2argo made looks like a
    /// failed read: allowEmpty holds, nothing is written, and the Secrets say why.
    #[tokio::test]
    async fn a_held_guard_writes_nothing() {
        let (client, server) = api(vec![]);
        let owned = vec![
            owned_secret("a", "https://a.example:6443"),
            owned_secret("b", "https://b.example:6443"),
        ];
        let (mut reconciler, metrics) =
            fixtures::reconciler(&client, &[], vec![], owned, unreachable());
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        let log = server.await.expect("the scenario's requests");
        assert_eq!(report.ending, Ending::PlanErrors);
        assert_eq!(report.writes, 0);
        assert!(log.requests.is_empty());
        assert_eq!(
            reasons(&log),
            ["GuardHeld", "GuardHeld"],
            "an Event on each Secret kept"
        );
        let held = vec![("guard", "allowEmpty".to_string())];
        assert_eq!(metrics.guard_held.get_or_create(&held).get(), 1);
    }

    /// A workload cluster that cannot be reached keeps its current token: the Argo CD Secret is
    /// made with it, the token Secret is not touched, and an Event says so.
    #[tokio::test]
    async fn a_failed_mint_keeps_the_current_token() {
        let (client, server) = api(vec![Exchange::new(
            Method::POST,
            SECRETS,
            201,
            written("cluster-prod-eu-1"),
        )]);
        let hours = |h: u64| Duration::from_secs(h * 3600);
        let token = token_secret(
            "prod-eu-1",
            "kube-system/argocd-manager admin",
            hours(20),
            hours(24),
        );
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &["credentials=serviceAccount"],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![token],
            unreachable(),
        );
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        let log = server.await.expect("the scenario's requests");
        assert_eq!(report.ending, Ending::Synced);
        assert!(!report.replan);
        let config = decoded(&log.requests[0].body["data"]["config"]);
        assert!(config.contains("the-current-token"), "{config}");
        assert_eq!(reasons(&log), ["TokenRefreshFailed", "Registered"]);
        assert_eq!(metrics.token_failing.get(), 1);
        let failed = vec![("outcome", "error".to_string())];
        assert_eq!(metrics.tokens.get_or_create(&failed).get(), 1);
    }

    /// Regression (issue 47): `serviceAccount: argocd-system/…` failed every cluster with
    /// `namespaces "argocd-system" not found`: a missing namespace is created first, labelled
    /// as capi2argo's.
    #[tokio::test]
    async fn a_missing_namespace_is_created_for_the_service_account() {
        let (workload, workload_server) = api(vec![
            Exchange::refused(
                Method::GET,
                "/api/v1/namespaces/argocd-system",
                404,
                "NotFound",
            ),
            Exchange::new(
                Method::PATCH,
                "/api/v1/namespaces/argocd-system",
                200,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd-system"}}),
            ),
            // Then the ServiceAccount, which this scenario refuses: the rest is the test above's.
            Exchange::refused(
                Method::PATCH,
                "/api/v1/namespaces/argocd-system/serviceaccounts/argocd-manager",
                403,
                "Forbidden",
            ),
        ]);
        let (client, server) = api(vec![]);
        let (mut reconciler, _) = fixtures::reconciler(
            &client,
            &[
                "credentials=serviceAccount",
                "serviceAccount=argocd-system/argocd-manager",
            ],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![],
            workloads(workload.clone()),
        );
        drop(workload);
        reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        let log = workload_server
            .await
            .expect("the workload cluster's requests");
        let namespace = &log.requests[1].body;
        assert_eq!(namespace["kind"], "Namespace");
        assert_eq!(
            namespace["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "capi2argo"
        );
        server.await.expect("the management cluster's requests");
    }

    /// What setting up the admin grant asks of a workload cluster: its namespace read, the
    /// ServiceAccount, ClusterRole and binding applied, and what an earlier grant left looked for.
    fn admin_set_up() -> Vec<Exchange> {
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        let applied = |kind: &str, name: &str| {
            let group = if kind == "ServiceAccount" {
                "v1"
            } else {
                "rbac.authorization.k8s.io/v1"
            };
            json!({"apiVersion": group, "kind": kind, "metadata": {"name": name}})
        };
        let list = |kind: &str| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {}, "items": []});
        let role = "capi2argo-argocd-manager";
        vec![
            Exchange::new(
                Method::GET,
                "/api/v1/namespaces/kube-system",
                200,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}),
            ),
            Exchange::new(
                Method::PATCH,
                "/api/v1/namespaces/kube-system/serviceaccounts/argocd-manager",
                200,
                applied("ServiceAccount", "argocd-manager"),
            ),
            Exchange::new(
                Method::PATCH,
                &format!("{rbac}/clusterroles/{role}"),
                200,
                applied("ClusterRole", role),
            ),
            Exchange::new(
                Method::PATCH,
                &format!("{rbac}/clusterrolebindings/{role}"),
                200,
                applied("ClusterRoleBinding", role),
            ),
            Exchange::new(
                Method::GET,
                &format!("{rbac}/clusterrolebindings"),
                200,
                list("ClusterRoleBindingList"),
            ),
            Exchange::new(
                Method::GET,
                &format!("{rbac}/clusterroles"),
                200,
                list("ClusterRoleList"),
            ),
            Exchange::new(
                Method::GET,
                &format!("{rbac}/rolebindings"),
                200,
                list("RoleBindingList"),
            ),
            Exchange::new(Method::GET, &format!("{rbac}/roles"), 200, list("RoleList")),
            Exchange::new(
                Method::GET,
                "/api/v1/serviceaccounts",
                200,
                json!({"apiVersion": "v1", "kind": "ServiceAccountList", "metadata": {}, "items": []}),
            ),
        ]
    }

    /// A token minted in the workload cluster is kept in its token Secret, and the plan is made
    /// again from it at once (the Argo CD Secret is written by that next plan, not this one).
    #[tokio::test]
    async fn a_minted_token_is_kept_and_the_plan_made_again() {
        let mut script = admin_set_up();
        script.extend(vec![
            Exchange::new(
                Method::POST,
                "/api/v1/namespaces/kube-system/secrets",
                201,
                json!({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": "argocd-manager-token-x7k2p", "namespace": "kube-system", "uid": "b1"}}),
            ),
            Exchange::new(
                Method::POST,
                "/api/v1/namespaces/kube-system/serviceaccounts/argocd-manager/token",
                201,
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                       "metadata": {"name": "argocd-manager"}, "spec": {"audiences": []},
                       "status": {"token": "a-fresh-token", "expirationTimestamp": "2099-01-01T00:00:00Z"}}),
            ),
        ]);
        let (workload, workload_server) = api(script);
        let (client, server) = api(vec![Exchange::new(
            Method::POST,
            SECRETS,
            201,
            written("token-cluster-prod-eu-1"),
        )]);
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &["credentials=serviceAccount"],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![],
            workloads(workload.clone()),
        );
        drop(workload);
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        let log = server.await.expect("the management cluster's requests");
        let workload_log = workload_server
            .await
            .expect("the workload cluster's requests");
        // The token is bound to a Secret of its own, which holds nothing: deleting it revokes it.
        let binding = &workload_log.requests[9].body;
        assert_eq!(binding["metadata"]["generateName"], "argocd-manager-token-");
        assert_eq!(binding["type"], "capi2argo.dev/token-binding");
        assert_eq!(
            binding["metadata"]["labels"]["capi2argo.dev/credential"],
            "token-binding"
        );
        assert_eq!(
            binding["metadata"]["annotations"]["capi2argo.dev/token-secret"],
            "argocd/token-cluster-prod-eu-1"
        );
        assert!(binding.get("data").is_none());
        let request = &workload_log.requests[10].body;
        assert_eq!(
            request["spec"]["boundObjectRef"],
            json!({"apiVersion": "v1", "kind": "Secret", "name": "argocd-manager-token-x7k2p", "uid": "b1"})
        );
        assert!(report.replan, "new tokens plan again");
        assert_eq!(report.writes, 1);
        let token = &log.requests[0].body;
        assert_eq!(token["metadata"]["name"], "token-cluster-prod-eu-1");
        assert_eq!(decoded(&token["data"]["token"]), "a-fresh-token");
        assert_eq!(
            token["metadata"]["annotations"]["capi2argo.dev/token-binding"],
            "kube-system/argocd-manager-token-x7k2p"
        );
        assert_eq!(
            token["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "capi2argo"
        );
        let ok = vec![("outcome", "ok".to_string())];
        assert_eq!(metrics.tokens.get_or_create(&ok).get(), 1);
    }

    /// A cluster whose token Secret (bound, a day to live) goes: the settings are back on the
    /// admin credential.
    fn back_on_admin(
        client: &kube::Client,
        connect: crate::credentials::workload::Connect,
    ) -> (Reconciler, crate::reporting::metrics::Metrics) {
        let day = Duration::from_secs(86_400);
        let token = token_secret(
            "prod-eu-1",
            "kube-system/argocd-manager admin",
            Duration::ZERO,
            day,
        );
        let owned = owned_secret("prod-eu-1", "https://prod-eu-1.example:6443");
        let kubeconfigs = vec![kubeconfig_secret("prod-eu-1")];
        fixtures::reconciler(client, &[], kubeconfigs, vec![owned, token], connect)
    }

    /// What the management cluster sees of a cluster back on its admin credential whose token
    /// was revoked: its Argo CD Secret replaced, then its token Secret deleted.
    fn moved_back_and_token_deleted() -> Vec<Exchange> {
        let success = json!({"apiVersion": "v1", "kind": "Status", "status": "Success"});
        let token = format!("{SECRETS}/token-cluster-prod-eu-1");
        vec![
            Exchange::new(
                Method::PUT,
                &format!("{SECRETS}/cluster-prod-eu-1"),
                200,
                written("cluster-prod-eu-1"),
            ),
            Exchange::new(Method::DELETE, &token, 200, success),
        ]
    }

    /// A binding Secret as the workload cluster holds it: `ours`, made for the token Secret of
    /// prod-eu-1, or someone else's Secret of that name.
    fn binding_secret(ours: bool) -> Value {
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "argocd-manager-token-prod-eu-1", "namespace": "kube-system",
                         "uid": "b1",
                         "labels": {"capi2argo.dev/credential": "token-binding",
                                    "app.kubernetes.io/managed-by": "capi2argo"},
                         "annotations": {"capi2argo.dev/token-secret": "argocd/token-cluster-prod-eu-1"}},
            "type": "capi2argo.dev/token-binding"});
        if !ours {
            secret["type"] = "Opaque".into();
        }
        secret
    }

    /// Revocable tokens (issue 49): a cluster back on its admin credential has its token
    /// revoked in the workload cluster (its binding deleted, on its uid) once Argo CD's Secret
    /// no longer logs in with it, and before its token Secret goes.
    #[tokio::test]
    async fn a_token_is_revoked_before_its_token_secret_goes() {
        let binding = "/api/v1/namespaces/kube-system/secrets/argocd-manager-token-prod-eu-1";
        let (workload, workload_server) = api(vec![
            Exchange::new(Method::GET, binding, 200, binding_secret(true)),
            Exchange::new(
                Method::DELETE,
                binding,
                200,
                json!({"apiVersion": "v1", "kind": "Status", "status": "Success"}),
            ),
        ]);
        let (client, server) = api(moved_back_and_token_deleted());
        let (mut reconciler, metrics) = back_on_admin(&client, workloads(workload.clone()));
        drop(workload);
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        server.await.expect("the management cluster's requests");
        let seen = workload_server.await.expect("the binding deleted");
        assert_eq!(report.ending, Ending::Synced);
        assert_eq!(seen.requests[1].body["preconditions"]["uid"], "b1");
        let ok = vec![("outcome", "ok".to_string())];
        assert_eq!(metrics.revoked.get_or_create(&ok).get(), 1);
    }

    /// Regression (review of issue 49): a token Secret naming someone else's Secret as its
    /// binding deletes nothing in the workload cluster.
    #[tokio::test]
    async fn a_binding_capi2argo_did_not_make_is_not_deleted() {
        let binding = "/api/v1/namespaces/kube-system/secrets/argocd-manager-token-prod-eu-1";
        let (workload, workload_server) = api(vec![Exchange::new(
            Method::GET,
            binding,
            200,
            binding_secret(false),
        )]);
        let (client, server) = api(moved_back_and_token_deleted());
        let (mut reconciler, _) = back_on_admin(&client, workloads(workload.clone()));
        drop(workload);
        reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        server.await.expect("the management cluster's requests");
        workload_server.await.expect("read, never deleted");
    }

    /// A token that cannot be revoked (its workload cluster unreachable) keeps its token Secret,
    /// to be tried again, and says so in an Event; the rest of the plan goes on.
    #[tokio::test]
    async fn a_token_that_cannot_be_revoked_keeps_its_token_secret() {
        let update = || {
            Exchange::new(
                Method::PUT,
                &format!("{SECRETS}/cluster-prod-eu-1"),
                200,
                written("cluster-prod-eu-1"),
            )
        };
        let (client, server) = api(vec![update(), update()]);
        let (mut reconciler, _) = back_on_admin(&client, unreachable());
        let report = reconciler.reconcile(&|| true).await;
        assert_eq!(report.ending, Ending::Synced);
        // The next reconcile does not try again at once: the revocation waits in its backoff.
        reconciler.reconcile(&|| true).await;
        let wake = reconciler
            .wake
            .expect("a wake for the revocation's next try");
        assert!(wake > Instant::now() + Duration::from_secs(5), "{wake:?}");
        drop((reconciler, client));
        let log = server.await.expect("no token Secret deleted");
        assert_eq!(
            reasons(&log)
                .iter()
                .filter(|r| *r == "RevokeFailed")
                .count(),
            1
        );
    }

    /// What the ServiceAccount may do changed, not which it is (issue 49): its RBAC is applied
    /// again and the new grant recorded in its token Secret, with the same token; no TokenRequest.
    #[tokio::test]
    async fn a_changed_grant_applies_the_rbac_again_and_keeps_the_token() {
        let (workload, workload_server) = api(admin_set_up());
        let (client, server) = api(vec![
            Exchange::new(
                Method::PUT,
                &format!("{SECRETS}/token-cluster-prod-eu-1"),
                200,
                written("token-cluster-prod-eu-1"),
            ),
            Exchange::new(Method::POST, SECRETS, 201, written("cluster-prod-eu-1")),
        ]);
        let day = Duration::from_secs(86_400);
        let token = token_secret(
            "prod-eu-1",
            "kube-system/argocd-manager clusterrole view",
            Duration::ZERO,
            day,
        );
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &["credentials=serviceAccount"],
            vec![kubeconfig_secret("prod-eu-1")],
            vec![token],
            workloads(workload.clone()),
        );
        drop(workload);
        let report = reconciler.reconcile(&|| true).await;
        drop((reconciler, client));
        let log = server.await.expect("the management cluster's requests");
        workload_server
            .await
            .expect("the RBAC applied, no TokenRequest");
        assert_eq!(report.ending, Ending::Synced);
        let kept = &log.requests[0].body;
        assert_eq!(
            kept["metadata"]["annotations"]["capi2argo.dev/grant"],
            "kube-system/argocd-manager admin"
        );
        assert_eq!(decoded(&kept["data"]["token"]), "the-current-token");
        let ok = vec![("outcome", "ok".to_string())];
        assert_eq!(metrics.tokens.get_or_create(&ok).get(), 0);
    }
}
