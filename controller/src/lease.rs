//! Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection keeps it: the
//! holder renews it every third of its duration; a replica that does not hold it watches it, and
//! takes it the moment it is free — released by a leader on its way out (the holder cleared), or
//! expired — with a write conditional on the version it read, so two never both take it. Every
//! write is a merge patch carrying that `resourceVersion`; a refused one (409) means another
//! replica wrote first. Before each reconcile that would write, the loop reads the Lease again
//! ([`Lease::held`]): a replica whose renewals failed stops writing at once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use capi2argo_core::well_known::MANAGED_BY;

/// How soon a replica tries again after the API server did not answer: short, so leadership
/// comes back within seconds of the server's return.
const RETRY: Duration = Duration::from_secs(1);

/// This replica's Lease.
pub struct Lease {
    api: Api<LeaseObject>,
    name: String,
    identity: String,
    /// Whether this replica holds it, as the last try found.
    pub changes: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Why the Lease cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the Lease {namespace}/{name}: {}", crate::cause::describe(.source))]
pub struct LeaseError {
    namespace: String,
    name: String,
    #[source]
    source: kube::Error,
}

/// Unix time now, in seconds.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// What a try found.
enum Found {
    /// This replica holds it, renewed now.
    Held,
    /// Another holds it until then (Unix seconds).
    HeldBy(i64),
}

impl Lease {
    /// Starts taking and renewing the Lease `name` in `namespace`, lasting `seconds`: reads it
    /// once (an error here, a 403, is the caller's to say), then keeps at it in a task.
    pub async fn start(
        client: &Client,
        namespace: &str,
        name: &str,
        identity: &str,
        seconds: u64,
    ) -> Result<Lease, LeaseError> {
        let api: Api<LeaseObject> = Api::namespaced(client.clone(), namespace);
        api.get_opt(name).await.map_err(|source| LeaseError {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        })?;
        let (changes_tx, changes) = watch::channel(false);
        let (stop, stopped) = watch::channel(false);
        let keeper = Keeper {
            api: api.clone(),
            name: name.to_string(),
            identity: identity.to_string(),
            duration: Duration::from_secs(seconds),
        };
        let task = tokio::spawn(keeper.run(changes_tx, stopped));
        Ok(Lease {
            api,
            name: name.to_string(),
            identity: identity.to_string(),
            changes,
            stop,
            task,
        })
    }

    /// Whether the Lease, as the API server has it now, is this replica's and not expired.
    pub async fn held(&self) -> bool {
        let lease = match self.api.get_opt(&self.name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return false,
            Err(error) => {
                tracing::warn!(error = %error, "the Lease could not be read: not writing");
                return false;
            }
        };
        holder(&lease).is_some_and(|(who, until)| who == self.identity && until > now())
    }

    /// Gives the Lease up at once (the holder cleared, so a standby takes it without waiting
    /// out its duration), waiting at most `limit`; what became of it.
    pub async fn release(self, limit: Duration) -> Release {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(limit, self.task).await;
        let work = async {
            let lease = self.api.get_opt(&self.name).await.ok()??;
            let mine = holder(&lease).is_some_and(|(who, _)| who == self.identity);
            if !mine {
                return Some(Release::NotHeld);
            }
            let patch = serde_json::json!({
                "metadata": {"resourceVersion": lease.resource_version()},
                "spec": {"holderIdentity": null, "leaseDurationSeconds": 1, "renewTime": micro_time(now())},
            });
            let params = PatchParams::default();
            self.api
                .patch(&self.name, &params, &Patch::Merge(&patch))
                .await
                .ok()
                .map(|_| Release::LetGo)
        };
        match tokio::time::timeout(limit, work).await {
            Ok(Some(released)) => released,
            _ => Release::Failed,
        }
    }
}

/// What became of the Lease when this replica stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// It held the Lease and let it go: a standby takes it at once.
    LetGo,
    /// It did not hold the Lease: nothing to let go.
    NotHeld,
    /// It could not be read or let go in time: it expires on its own.
    Failed,
}

/// Who holds a Lease, and until when (Unix seconds); `None` when nobody does.
fn holder(lease: &LeaseObject) -> Option<(String, i64)> {
    let spec = lease.spec.as_ref()?;
    let who = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .map_or(0, |t| t.0.as_second());
    let seconds = i64::from(spec.lease_duration_seconds.unwrap_or(0));
    Some((who, renewed + seconds))
}

fn micro_time(seconds: i64) -> MicroTime {
    MicroTime(
        k8s_openapi::jiff::Timestamp::from_second(seconds)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    )
}

/// The task that takes and keeps the Lease.
struct Keeper {
    api: Api<LeaseObject>,
    name: String,
    identity: String,
    duration: Duration,
}

impl Keeper {
    async fn run(self, changes: watch::Sender<bool>, mut stopped: watch::Receiver<bool>) {
        // Every change of the Lease wakes the replica that waits for it.
        let changed = std::sync::Arc::new(Notify::new());
        let watching = {
            let changed = changed.clone();
            let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
            tokio::spawn(watcher(self.api.clone(), config).for_each(move |_| {
                changed.notify_one();
                async {}
            }))
        };
        let mut leading = false;
        let mut renewed_at = tokio::time::Instant::now();
        loop {
            let wait = match self.try_once().await {
                Ok(Found::Held) => {
                    leading = true;
                    renewed_at = tokio::time::Instant::now();
                    self.duration / 3
                }
                Ok(Found::HeldBy(until)) => {
                    leading = false;
                    // Taken again when it expires, or sooner when its holder lets it go.
                    Duration::from_secs(until.saturating_sub(now()).max(1) as u64)
                }
                Err(error) => {
                    tracing::warn!(error = %error, "the Lease could not be read or written: tried again in a second");
                    // A leader that cannot renew stops leading once its Lease may have expired.
                    if leading && renewed_at.elapsed() >= self.duration {
                        leading = false;
                    }
                    RETRY
                }
            };
            changes.send_if_modified(|held| std::mem::replace(held, leading) != leading);
            tokio::select! {
                _ = stopped.wait_for(|s| *s) => break,
                _ = tokio::time::sleep(wait) => {}
                _ = changed.notified(), if !leading => {}
            }
        }
        watching.abort();
        let _ = changes.send(false);
    }

    /// Takes the Lease when it is free or expired, renews it when it is this replica's; says
    /// who holds it.
    async fn try_once(&self) -> Result<Found, kube::Error> {
        let now = now();
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            let lease: LeaseObject = serde_json::from_value(serde_json::json!({
                "metadata": {"name": self.name, "labels": {"app.kubernetes.io/managed-by": MANAGED_BY}},
                "spec": self.spec(now, now, 0),
            }))
            .map_err(kube::Error::SerdeError)?;
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Found::Held),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Found::HeldBy(now)),
                Err(error) => Err(error),
            };
        };
        let holder = holder(&lease);
        let spec = match &holder {
            Some((who, _)) if *who == self.identity => {
                let acquired = lease
                    .spec
                    .as_ref()
                    .and_then(|s| s.acquire_time.as_ref())
                    .map_or(now, |t| t.0.as_second());
                let transitions = transitions(&lease);
                self.spec(acquired, now, transitions)
            }
            Some((_, until)) if *until > now => return Ok(Found::HeldBy(*until)),
            _ => self.spec(now, now, transitions(&lease) + 1),
        };
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": lease.resource_version()},
            "spec": spec,
        });
        match self
            .api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(Found::Held),
            // Another replica wrote it first: it holds the Lease for a while at least.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Ok(Found::HeldBy(now + self.duration.as_secs() as i64))
            }
            Err(error) => Err(error),
        }
    }

    /// The Lease's spec with this replica holding it.
    fn spec(&self, acquired: i64, renewed: i64, transitions: i32) -> serde_json::Value {
        serde_json::json!({
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.duration.as_secs(),
            "acquireTime": micro_time(acquired),
            "renewTime": micro_time(renewed),
            "leaseTransitions": transitions,
        })
    }
}

fn transitions(lease: &LeaseObject) -> i32 {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0)
}
