//! The controller's life: settings, client, caches, then one reconcile (`--once`) or the loop —
//! debounced reconciles on every change, a resync as the backstop, only while leading, until
//! SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hyper::StatusCode;
use kube::runtime::events::{Recorder, Reporter};
use kube::{Client, Config};
use tokio::sync::watch;

use crate::cache::{Caches, Fill};
use crate::flags::{Flags, bind_address};
use crate::lease::Lease;
use crate::metrics::{Metrics, exposition};
use crate::serve::{Routes, not_found, serve};
use crate::settings::Settings;
use crate::sync::{Ending, Reconciler};

/// The longest a change waits for more before the plan is made, however busy the fleet.
const DEBOUNCE_AT_MOST: Duration = Duration::from_secs(2);
/// How long `--once` waits for its first reads.
const ONCE_READ_DEADLINE: Duration = Duration::from_secs(120);
/// How long the Lease's release may take on the way out.
const RELEASE_DEADLINE: Duration = Duration::from_secs(10);

pub async fn run(flags: Flags) -> u8 {
    let settings = match Settings::load(&flags) {
        Ok(settings) => settings,
        Err(error) => {
            tracing::error!("{error}; nothing was read or changed");
            return Ending::Refused as u8;
        }
    };
    let addresses = (
        bind_address(&flags.metrics_bind_address),
        bind_address(&flags.health_probe_bind_address),
    );
    let (metrics_at, health_at) = match addresses {
        (Ok(m), Ok(h)) => (m, h),
        (Err(e), _) => return usage(&format!("--metrics-bind-address: {e}")),
        (_, Err(e)) => return usage(&format!("--health-probe-bind-address: {e}")),
    };
    let lease_seconds = flags.leader_election_lease_duration.as_secs();
    if flags.leader_elect && lease_seconds < 3 {
        return usage("--leader-election-lease-duration: at least 3s");
    }
    let client = match client(&flags).await {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(error = %error, "no client for the API server; nothing was read or changed");
            return Ending::ReadFailed as u8;
        }
    };
    let (metrics, registry) = Metrics::new();
    let fill = if flags.once {
        Fill::ListOnce
    } else {
        Fill::Watch
    };
    let caches = match Caches::start(&client, &settings, metrics.clone(), fill).await {
        Ok(caches) => Arc::new(caches),
        Err(error) => {
            tracing::error!("{error}; nothing was changed");
            return Ending::ReadFailed as u8;
        }
    };
    let served = caches.clusters.served();
    metrics.cluster_api.set(i64::from(served));
    if settings.reads.clusters && !served {
        tracing::warn!(
            "the API server does not serve Cluster API's Clusters (no clusters.cluster.x-k8s.io): working on the Secrets alone, without the Clusters' labels, pause and ignore markers; looked for again at every resync"
        );
    }
    if settings.reads.profiles && !caches.profiles.served() {
        tracing::warn!(
            "the clusterprofile source: the API server does not serve ClusterProfiles (no clusterprofiles.multicluster.x-k8s.io): none is read, and allowEmpty keeps the Argo CD Secrets made from them (unless it is true); looked for again at every resync"
        );
    }
    if settings.reads.applications && !caches.argo_cd.served() {
        tracing::warn!(
            "readApplications: the API server does not serve Argo CD's ApplicationSets and Applications (argoproj.io): the plans cannot say what they do to Applications, and maxApplicationDeletes guards nothing; looked for again at every resync"
        );
    }
    let identity = identity();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "capi2argo-controller".into(),
            instance: Some(identity.clone()),
        },
    );
    let mut reconciler = Reconciler::new(
        client.clone(),
        caches.clone(),
        settings,
        metrics.clone(),
        recorder,
    );
    if flags.once {
        reconciler.always_summarise = true;
        return once(&caches, &mut reconciler).await;
    }

    let (stop_tx, stop) = watch::channel(false);
    let stopping = Arc::new(AtomicBool::new(false));
    {
        let stopping = stopping.clone();
        tokio::spawn(async move {
            signals().await;
            tracing::info!("stopping: no more writes, releasing the Lease");
            stopping.store(true, Ordering::Release);
            let _ = stop_tx.send(true);
        });
    }
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
        match bind(at, routes, &stop, "metrics").await {
            Some(server) => servers.push(server),
            None => return Ending::Refused as u8,
        }
    }
    if let Some(at) = health_at {
        let caches = caches.clone();
        let routes: Routes = Arc::new(move |path| match path {
            "/healthz" => (StatusCode::OK, "text/plain", "ok\n".into()),
            "/readyz" if caches.ready() => (StatusCode::OK, "text/plain", "ok\n".into()),
            "/readyz" => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "the caches have not listed yet\n".into(),
            ),
            _ => not_found(),
        });
        match bind(at, routes, &stop, "health probe").await {
            Some(server) => servers.push(server),
            None => return Ending::Refused as u8,
        }
    }

    let leading = Arc::new(AtomicBool::new(!flags.leader_elect));
    let mut lease = None;
    let (_always, mut leader_changes) = watch::channel(true);
    if flags.leader_elect {
        let namespace = flags
            .leader_election_namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        let id = &flags.leader_election_id;
        match Lease::start(&client, &namespace, id, &identity, lease_seconds).await {
            Ok(started) => {
                tracing::info!(lease = %id, namespace, identity, "waiting to lead");
                leader_changes = started.changes.clone();
                lease = Some(started);
            }
            Err(error) => {
                tracing::error!(error = %error, "the Lease cannot be used");
                return Ending::ReadFailed as u8;
            }
        }
    }
    metrics
        .leader
        .set(i64::from(leading.load(Ordering::Acquire)));

    let mut stop_loop = stop.clone();
    let mut resync = tokio::time::interval(flags.resync_period);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    let mut backoff = Duration::ZERO;
    let mut lease_held = true;
    loop {
        let retry = async {
            if backoff.is_zero() {
                std::future::pending::<()>().await
            } else {
                tokio::time::sleep(backoff).await
            }
        };
        tokio::select! {
            _ = stop_loop.wait_for(|s| *s) => break,
            _ = caches.feed.changed.notified() => dirty = true,
            _ = resync.tick() => {
                dirty = true;
                if reconciler.settings.reads.clusters && !caches.clusters.served() {
                    match caches.discover_clusters().await {
                        Ok(true) => {
                            metrics.cluster_api.set(1);
                            tracing::info!("Cluster API's Clusters are served now: reading them");
                        }
                        Ok(false) => {}
                        Err(error) => tracing::warn!("{error}"),
                    }
                }
                if reconciler.settings.reads.profiles
                    && !caches.profiles.served()
                    && let Err(error) = caches.discover_profiles().await
                {
                    tracing::warn!("{error}");
                }
                if reconciler.settings.reads.applications
                    && !caches.argo_cd.served()
                    && let Err(error) = caches.discover_applications().await
                {
                    tracing::warn!("{error}");
                }
            }
            changed = leader_changes.changed(), if flags.leader_elect => {
                if changed.is_err() {
                    tracing::error!("the Lease's task ended: no more writes");
                    leading.store(false, Ordering::Release);
                    break;
                }
                let now = *leader_changes.borrow_and_update();
                leading.store(now, Ordering::Release);
                metrics.leader.set(i64::from(now));
                if now {
                    tracing::info!(identity, "leading: reconciling");
                    dirty = true;
                } else {
                    tracing::warn!(identity, "lost the Lease: no more writes until it is held again");
                }
            }
            _ = retry => { dirty = true; }
            // A token due for its age, a workload cluster whose backoff ends: the reconcile that
            // saw it asked to be woken then.
            _ = wake(reconciler.wake) => { dirty = true; }
        }
        if !(dirty && caches.ready() && leading.load(Ordering::Acquire)) {
            continue;
        }
        debounce(&caches, flags.debounce).await;
        backoff = Duration::ZERO;
        dirty = false;
        // The Lease as the server has it: a replica whose renewals failed, or whose Lease was
        // taken, stops writing now, not when the manager next looks.
        if let Some(lease) = &lease {
            let held = lease.held().await;
            metrics.leader.set(i64::from(held));
            if held != lease_held {
                if held {
                    tracing::info!(identity, "the Lease is this replica's again");
                } else {
                    tracing::warn!(
                        identity,
                        "the Lease is not this replica's: no writes until it is"
                    );
                }
                lease_held = held;
            }
            if !held {
                dirty = true;
                backoff = Duration::from_secs(1);
                continue;
            }
        }
        let may_write = || leading.load(Ordering::Acquire) && !stopping.load(Ordering::Acquire);
        let report = reconciler.reconcile(&may_write).await;
        if report.conflict {
            backoff = Duration::from_millis(200);
        } else if report.ending == Ending::RequestFailed {
            backoff = (backoff * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
        }
    }

    leading.store(false, Ordering::Release);
    metrics.leader.set(0);
    drop(leader_changes);
    if let Some(lease) = lease {
        if lease.release(RELEASE_DEADLINE).await {
            tracing::info!("released the Lease");
        } else {
            tracing::warn!("the Lease was not released: it expires on its own");
        }
    }
    for server in servers {
        let _ = server.await;
    }
    0
}

/// Sleeps until `at`, or forever without one.
async fn wake(at: Option<std::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending::<()>().await,
    }
}

/// `--once`: the first reads, one reconcile, its ending as the exit code.
async fn once(caches: &Caches, reconciler: &mut Reconciler) -> u8 {
    let waited = tokio::time::timeout(ONCE_READ_DEADLINE, async {
        loop {
            if let Some(failure) = caches.feed.read_failure() {
                return Err(failure);
            }
            if caches.ready() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await;
    match waited {
        Ok(Ok(())) => {}
        Ok(Err(failure)) => {
            tracing::error!("{failure}; nothing was planned or changed");
            return Ending::ReadFailed as u8;
        }
        Err(_) => {
            tracing::error!(
                "reading {} did not complete within {}s; nothing was planned or changed",
                caches.unready().join(", "),
                ONCE_READ_DEADLINE.as_secs()
            );
            return Ending::ReadFailed as u8;
        }
    }
    let report = reconciler.reconcile(&|| true).await;
    tracing::info!(requests = report.writes, "done");
    report.ending as u8
}

/// Waits until no change has come for `quiet` (a burst of changes makes one plan), at most
/// [`DEBOUNCE_AT_MOST`].
async fn debounce(caches: &Caches, quiet: Duration) {
    let deadline = tokio::time::Instant::now() + DEBOUNCE_AT_MOST;
    loop {
        tokio::select! {
            _ = caches.feed.changed.notified() => {
                if tokio::time::Instant::now() >= deadline {
                    return;
                }
            }
            _ = tokio::time::sleep(quiet) => return,
            _ = tokio::time::sleep_until(deadline) => return,
        }
    }
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

fn usage(message: &str) -> u8 {
    tracing::error!("{message}; nothing was read or changed");
    Ending::Refused as u8
}

/// The client: --kubeconfig, else KUBECONFIG or ~/.kube/config, else the pod's ServiceAccount.
async fn client(flags: &Flags) -> Result<Client, Box<dyn std::error::Error>> {
    let config = match &flags.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
            Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await?
        }
        None => Config::infer().await?,
    };
    Ok(Client::try_from(config)?)
}

/// Who this replica is, for the Lease and Events: the pod's name.
fn identity() -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("capi2argo-controller-{}", std::process::id()))
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
