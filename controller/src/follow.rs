//! Following the fleet: the probes and /metrics served, the Lease taken, and a reconcile after
//! every change (debounced), when a token or a backoff asks for one, and at every resync as the
//! backstop — only while leading, until SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hyper::StatusCode;
use kube::Client;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::flags::Flags;
use crate::lease::{Lease, Release};
use crate::reading::Caches;
use crate::reconcile::{Ending, Reconciler, Report};
use crate::reporting::metrics::{Metrics, exposition};
use crate::serve::{Routes, not_found, serve};

/// The longest a change waits for more before the plan is made, however busy the fleet.
/// (kube-runtime's debounced scheduler waits for a quiet period with no ceiling: a fleet whose
/// objects change more often than the debounce would never be planned.)
const DEBOUNCE_AT_MOST: Duration = Duration::from_secs(2);
/// How long the Lease's release may take on the way out.
const RELEASE_DEADLINE: Duration = Duration::from_secs(10);

/// The controller, started: what the loop and `--once` run.
pub struct Started {
    pub client: Client,
    pub caches: Arc<Caches>,
    pub reconciler: Reconciler,
    pub metrics: Metrics,
    pub registry: Registry,
    /// Who this replica is, for the Lease and Events.
    pub identity: String,
    /// Where /metrics and the probes are served (`None`: off).
    pub metrics_at: Option<SocketAddr>,
    pub health_at: Option<SocketAddr>,
}

/// Whether this replica may write: it leads, and is not stopping.
struct Writable {
    leading: AtomicBool,
    stopping: AtomicBool,
}

impl Writable {
    fn now(&self) -> bool {
        self.leading.load(Ordering::Acquire) && !self.stopping.load(Ordering::Acquire)
    }
}

/// Follows the fleet until SIGTERM; how it ended.
pub async fn follow(started: Started, flags: &Flags) -> Ending {
    let Started {
        client,
        caches,
        mut reconciler,
        metrics,
        registry,
        identity,
        metrics_at,
        health_at,
    } = started;
    let writable = Arc::new(Writable {
        leading: AtomicBool::new(!flags.leader_elect),
        stopping: AtomicBool::new(false),
    });
    let stop = stop_on_signal(writable.clone());
    let Some(servers) = serve_all(metrics_at, health_at, registry, &caches, &stop).await else {
        return Ending::Refused;
    };
    let lease = if flags.leader_elect {
        let argo_namespace = reconciler.settings.reads.argo_namespace.clone();
        match take_lease(flags, &client, &identity, &argo_namespace).await {
            Some(lease) => Some(lease),
            None => return Ending::ReadFailed,
        }
    } else {
        None
    };
    metrics
        .leader
        .set(i64::from(writable.leading.load(Ordering::Acquire)));
    let mut follower = Follower {
        caches,
        metrics,
        identity,
        writable,
        resync: tokio::time::interval(flags.resync_period),
        debounce: flags.debounce,
        lease,
    };
    follower
        .resync
        .set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    follower.follow(&mut reconciler, stop).await;
    follower.shut_down().await;
    for server in servers {
        let _ = server.await;
    }
    Ending::Synced
}

/// The loop's state: what wakes it, and whether it may write.
struct Follower {
    caches: Arc<Caches>,
    metrics: Metrics,
    identity: String,
    writable: Arc<Writable>,
    resync: tokio::time::Interval,
    debounce: Duration,
    lease: Option<Lease>,
}

/// Why the loop woke.
enum Woke {
    Stop,
    Dirty,
    LeaderChanged(Option<bool>),
}

impl Follower {
    async fn follow(&mut self, reconciler: &mut Reconciler, mut stop: watch::Receiver<bool>) {
        let mut leader_changes = self.lease.as_ref().map(|l| l.changes.clone());
        let mut dirty = true;
        let mut retry: Option<Instant> = None;
        let mut wait = Duration::ZERO;
        let mut lease_held = true;
        loop {
            let woke = tokio::select! {
                _ = stop.wait_for(|s| *s) => Woke::Stop,
                _ = self.caches.changes.notify.notified() => Woke::Dirty,
                _ = self.resync.tick() => {
                    self.look_for_unserved().await;
                    Woke::Dirty
                }
                changed = changed(&mut leader_changes) => Woke::LeaderChanged(changed),
                _ = sleep_until(retry) => Woke::Dirty,
                // A token due for its age, a workload cluster whose backoff ends: the reconcile
                // that saw it asked to be woken then.
                _ = sleep_until(reconciler.wake) => {
                    // Asked for once: a reconcile that does not come (not the leader) or ends
                    // early (refused) must not find it passed, and wake again at once, forever.
                    reconciler.wake = None;
                    Woke::Dirty
                }
            };
            match woke {
                Woke::Stop => break,
                Woke::Dirty => dirty = true,
                Woke::LeaderChanged(None) => {
                    tracing::error!("the Lease's task ended: no more writes");
                    self.writable.leading.store(false, Ordering::Release);
                    break;
                }
                Woke::LeaderChanged(Some(leading)) => {
                    self.writable.leading.store(leading, Ordering::Release);
                    self.metrics.leader.set(i64::from(leading));
                    if leading {
                        tracing::info!(identity = self.identity, "leading: reconciling");
                        dirty = true;
                    } else {
                        tracing::warn!(
                            identity = self.identity,
                            "lost the Lease: no more writes until it is held again"
                        );
                    }
                }
            }
            if !(dirty && self.caches.ready() && self.writable.leading.load(Ordering::Acquire)) {
                continue;
            }
            debounce(&self.caches, self.debounce).await;
            dirty = false;
            if !self.lease_still_held(&mut lease_held).await {
                dirty = true;
                retry = Some(Instant::now() + Duration::from_secs(1));
                continue;
            }
            let writable = self.writable.clone();
            let report = reconciler.reconcile(&move || writable.now()).await;
            wait = next_wait(&report, wait);
            retry = (!wait.is_zero()).then(|| Instant::now() + wait);
        }
    }

    /// At a resync: starts reading what the server did not serve before and serves now.
    async fn look_for_unserved(&self) {
        match self.caches.discover().await {
            Ok(found) => {
                if found.contains(&capi2argo_core::well_known::CLUSTERS) {
                    self.metrics.cluster_api.set(1);
                }
            }
            Err(error) => tracing::warn!("{error}"),
        }
    }

    /// The Lease as the server has it: a replica whose renewals failed, or whose Lease was
    /// taken, stops writing now, not when the manager next looks.
    async fn lease_still_held(&self, was: &mut bool) -> bool {
        let Some(lease) = &self.lease else {
            return true;
        };
        let held = lease.held().await;
        self.metrics.leader.set(i64::from(held));
        if held != *was {
            if held {
                tracing::info!(
                    identity = self.identity,
                    "the Lease is this replica's again"
                );
            } else {
                tracing::warn!(
                    identity = self.identity,
                    "the Lease is not this replica's: no writes until it is"
                );
            }
            *was = held;
        }
        held
    }

    /// No more writes; the Lease released.
    async fn shut_down(self) {
        self.writable.leading.store(false, Ordering::Release);
        self.metrics.leader.set(0);
        if let Some(lease) = self.lease {
            match lease.release(RELEASE_DEADLINE).await {
                Release::LetGo => tracing::info!("released the Lease"),
                Release::NotHeld => {}
                Release::Failed => {
                    tracing::warn!("the Lease was not released: it expires on its own");
                }
            }
        }
    }
}

/// How long to wait before reconciling again though nothing changes: a moment after a stale
/// request or new tokens, longer and longer while requests fail (`last`: the wait before),
/// not at all once they succeed.
fn next_wait(report: &Report, last: Duration) -> Duration {
    if report.replan {
        Duration::from_millis(200)
    } else if report.ending == Ending::RequestFailed {
        (last * 2).clamp(Duration::from_secs(1), Duration::from_secs(60))
    } else {
        Duration::ZERO
    }
}

/// The next change of leadership; `None` when the Lease's task ended. Never, without a Lease.
async fn changed(changes: &mut Option<watch::Receiver<bool>>) -> Option<bool> {
    match changes {
        Some(changes) => match changes.changed().await {
            Ok(()) => Some(*changes.borrow_and_update()),
            Err(_) => None,
        },
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending::<()>().await,
    }
}

/// Waits until no change has come for `quiet` (a burst of changes makes one plan), at most
/// [`DEBOUNCE_AT_MOST`].
async fn debounce(caches: &Caches, quiet: Duration) {
    let deadline = tokio::time::Instant::now() + DEBOUNCE_AT_MOST;
    loop {
        tokio::select! {
            _ = caches.changes.notify.notified() => {
                if tokio::time::Instant::now() >= deadline {
                    return;
                }
            }
            _ = tokio::time::sleep(quiet) => return,
            _ = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// A channel that turns true on SIGTERM or SIGINT, when writing stops.
fn stop_on_signal(writable: Arc<Writable>) -> watch::Receiver<bool> {
    let (stop_tx, stop) = watch::channel(false);
    tokio::spawn(async move {
        signals().await;
        tracing::info!("stopping: no more writes, releasing the Lease");
        writable.stopping.store(true, Ordering::Release);
        let _ = stop_tx.send(true);
    });
    stop
}

/// Serves /metrics and the probes where the flags say; `None` when a port cannot be bound.
async fn serve_all(
    metrics_at: Option<SocketAddr>,
    health_at: Option<SocketAddr>,
    registry: Registry,
    caches: &Arc<Caches>,
    stop: &watch::Receiver<bool>,
) -> Option<Vec<tokio::task::JoinHandle<()>>> {
    let mut servers = Vec::new();
    if let Some(at) = metrics_at {
        let registry = Arc::new(registry);
        let routes: Routes = Arc::new(move |path| match path {
            "/metrics" => (
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                exposition(&registry),
            ),
            _ => not_found(),
        });
        servers.push(bind(at, routes, stop, "metrics").await?);
    }
    if let Some(at) = health_at {
        let caches = caches.clone();
        let routes: Routes = Arc::new(move |path| match path {
            "/healthz" => (StatusCode::OK, "text/plain", "ok\n".into()),
            "/readyz" => readiness(&caches),
            _ => not_found(),
        });
        servers.push(bind(at, routes, stop, "health probe").await?);
    }
    Some(servers)
}

/// /readyz: ready once every cache has listed; otherwise why first (a refusal, a server out of
/// reach), then which caches wait.
fn readiness(caches: &Caches) -> crate::serve::Answer {
    let unready = caches.unready();
    if unready.is_empty() {
        return (StatusCode::OK, "text/plain", "ok\n".into());
    }
    let waiting = unready.join(", ");
    let body = match caches.changes.first_failure() {
        Some(why) => format!("not ready: {why}\n(not listed yet: {waiting})\n"),
        None => format!("not ready: the caches have not listed yet: {waiting}\n"),
    };
    (StatusCode::SERVICE_UNAVAILABLE, "text/plain", body)
}

async fn bind(
    at: SocketAddr,
    routes: Routes,
    stop: &watch::Receiver<bool>,
    what: &str,
) -> Option<tokio::task::JoinHandle<()>> {
    match serve(at, routes, stop.clone()).await {
        Ok(server) => {
            tracing::info!(address = %at, "serving {what}");
            Some(server)
        }
        Err(error) => {
            tracing::error!(address = %at, error = %error, "cannot serve {what}");
            None
        }
    }
}

/// The Lease, taken and renewed from now on, in `--leader-election-namespace`, else Argo CD's
/// namespace (where deploy/controller runs, and its Role grants the Lease: a replica run outside
/// a pod, whose kubeconfig names another namespace, finds the same Lease); `None` when it
/// cannot be used (said).
async fn take_lease(
    flags: &Flags,
    client: &Client,
    identity: &str,
    argo_namespace: &str,
) -> Option<Lease> {
    let namespace = flags
        .leader_election_namespace
        .clone()
        .unwrap_or_else(|| argo_namespace.to_string());
    let id = &flags.leader_election_id;
    let seconds = flags.leader_election_lease_duration.as_secs();
    match Lease::start(client, &namespace, id, identity, seconds).await {
        Ok(lease) => {
            tracing::info!(lease = %id, namespace, identity, "waiting to lead");
            Some(lease)
        }
        Err(error) => {
            tracing::error!(error = %error, "the Lease cannot be used");
            None
        }
    }
}

/// SIGTERM or SIGINT.
async fn signals() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn a_stale_request_replans_soon_and_failures_back_off_doubling() {
        let report = |ending, replan| Report {
            ending,
            replan,
            writes: 0,
        };
        let failed = report(Ending::RequestFailed, false);
        assert_eq!(
            next_wait(&report(Ending::RequestFailed, true), Duration::ZERO),
            Duration::from_millis(200)
        );
        let first = next_wait(&failed, Duration::ZERO);
        assert_eq!(first, Duration::from_secs(1));
        assert_eq!(next_wait(&failed, first), Duration::from_secs(2));
        assert_eq!(
            next_wait(&failed, Duration::from_secs(50)),
            Duration::from_secs(60)
        );
        assert_eq!(
            next_wait(&report(Ending::Synced, false), first),
            Duration::ZERO
        );
    }

    /// Regression: a wake that had passed stayed set when no reconcile came to reset it (a
    /// standby, or a refused plan), so every turn of the loop found it passed again: a busy
    /// loop. The loop clears it when it fires.
    #[tokio::test]
    async fn a_wake_that_fires_is_cleared_though_no_reconcile_follows() {
        let (client, _log) = fixtures::api(Vec::new());
        let (mut reconciler, metrics) = fixtures::reconciler(
            &client,
            &[],
            Vec::new(),
            Vec::new(),
            fixtures::unreachable(),
        );
        reconciler.wake = Some(Instant::now());
        let mut follower = Follower {
            caches: reconciler.caches.clone(),
            metrics,
            identity: "standby".into(),
            // A standby: it never reconciles.
            writable: Arc::new(Writable {
                leading: AtomicBool::new(false),
                stopping: AtomicBool::new(false),
            }),
            resync: tokio::time::interval(Duration::from_secs(600)),
            debounce: Duration::from_millis(10),
            lease: None,
        };
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let _ = stop.send(true);
        });
        let ran = tokio::time::timeout(
            Duration::from_secs(10),
            follower.follow(&mut reconciler, stopped),
        )
        .await;
        assert!(ran.is_ok(), "the loop stops when asked");
        assert_eq!(reconciler.wake, None);
    }
}
