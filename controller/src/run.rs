//! The controller's life, composed: settings and a client, the caches the settings read, the
//! reconciler; then one reconcile (`--once`), or the probes, the Lease and the loop until SIGTERM.

use std::sync::Arc;
use std::time::Duration;

use capi2argo_core::well_known::{APPLICATION_SETS, APPLICATIONS, CLUSTER_PROFILES, CLUSTERS};
use kube::runtime::events::{Recorder, Reporter as EventSource};
use kube::{Client, Config};

use crate::credentials::{Credentials, workload};
use crate::flags::{Flags, bind_address};
use crate::follow::{self, Started};
use crate::reading::{Caches, ReadFailed, ReadMode};
use crate::reconcile::{Ending, Reconciler};
use crate::reporting::Reporter;
use crate::reporting::metrics::Metrics;
use crate::requests::Writer;
use crate::settings::{Settings, SettingsError};

/// How long `--once` waits for its first reads.
const ONCE_READ_DEADLINE: Duration = Duration::from_secs(120);

/// Why the controller could not start: nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("{flag}: {reason}")]
    Flag { flag: &'static str, reason: String },
    #[error("no client for the API server: {0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Read(#[from] ReadFailed),
}

impl StartError {
    /// The exit code it ends with.
    pub fn ending(&self) -> Ending {
        match self {
            StartError::Settings(_) | StartError::Flag { .. } => Ending::Refused,
            StartError::Client(_) | StartError::Read(_) => Ending::ReadFailed,
        }
    }

    /// What was left undone, as the log line ends.
    fn undone(&self) -> &'static str {
        match self {
            StartError::Read(_) => "nothing was changed",
            _ => "nothing was read or changed",
        }
    }
}

/// Runs the controller as the flags say; how it ended.
pub async fn run(flags: Flags) -> Ending {
    let started = match start(&flags).await {
        Ok(started) => started,
        Err(error) => {
            tracing::error!("{error}; {}", error.undone());
            return error.ending();
        }
    };
    if flags.once {
        once(started).await
    } else {
        follow::follow(started, &flags).await
    }
}

/// Everything before the first reconcile.
async fn start(flags: &Flags) -> Result<Started, StartError> {
    let settings = Settings::load(flags)?;
    let address =
        |flag, text: &str| bind_address(text).map_err(|reason| StartError::Flag { flag, reason });
    let metrics_at = address("--metrics-bind-address", &flags.metrics_bind_address)?;
    let health_at = address(
        "--health-probe-bind-address",
        &flags.health_probe_bind_address,
    )?;
    if flags.leader_elect && flags.leader_election_lease_duration.as_secs() < 3 {
        return Err(StartError::Flag {
            flag: "--leader-election-lease-duration",
            reason: "at least 3s".into(),
        });
    }
    let client = client(flags).await.map_err(StartError::Client)?;
    let (metrics, registry) = Metrics::new();
    let mode = if flags.once {
        ReadMode::ListOnce
    } else {
        ReadMode::Watch
    };
    let caches = Caches::start(
        &client,
        &settings.reads,
        &settings.control_planes,
        metrics.clone(),
        mode,
        &settings.options.limits,
    )
    .await?;
    let caches = Arc::new(caches);
    metrics.cluster_api.set(i64::from(caches.served(CLUSTERS)));
    say_unserved(&caches);
    let identity = identity();
    let recorder = Recorder::new(
        client.clone(),
        EventSource {
            controller: "capi2argo-controller".into(),
            instance: Some(identity.clone()),
        },
    );
    if !flags.once {
        say_unguarded(&client, &settings, &recorder, &identity).await;
    }
    let reporter = Reporter::new(metrics.clone(), recorder, settings.reads.expiry_days);
    let writer = Writer::new(client.clone(), metrics.clone());
    let credentials = Credentials::new(workload::connector());
    let reconciler = Reconciler::new(caches.clone(), settings, writer, credentials, reporter);
    Ok(Started {
        client,
        caches,
        reconciler,
        metrics,
        registry,
        identity,
        metrics_at,
        health_at,
    })
}

/// Says what the settings read that the server does not serve, and what that costs.
pub fn say_unserved(caches: &Caches) {
    for read in caches.unserved() {
        match read.resource {
            CLUSTERS => tracing::warn!(
                "the API server does not serve Cluster API's Clusters (no clusters.cluster.x-k8s.io): working on the Secrets alone, without the Clusters' labels, pause and ignore markers; looked for again at every resync"
            ),
            CLUSTER_PROFILES => tracing::warn!(
                "the clusterprofile source: the API server does not serve ClusterProfiles (no clusterprofiles.multicluster.x-k8s.io): none is read, and allowEmpty keeps the Argo CD Secrets made from them (unless it is true); looked for again at every resync"
            ),
            // Said once for the two.
            APPLICATION_SETS => tracing::warn!(
                "readApplications: the API server does not serve Argo CD's ApplicationSets and Applications (argoproj.io): the plans cannot say what they do to Applications, and maxApplicationDeletes guards nothing; looked for again at every resync"
            ),
            APPLICATIONS => {}
            other => tracing::warn!(
                "the API server does not serve {}: {} go unread; looked for again at every resync",
                other.qualified(),
                read.purpose
            ),
        }
    }
}

/// Says (log and an Event on this pod) when a guard the controller ships with cannot work under
/// these settings: Argo CD's ApplicationSets are served, and `readApplications` is off, so
/// `maxApplicationDeletes` sees none of the Applications a change would make them delete (a
/// kustomization that replaced the shipped settings drops it without a word otherwise).
async fn say_unguarded(client: &Client, settings: &Settings, recorder: &Recorder, pod: &str) {
    if settings.reads.reads(APPLICATION_SETS) {
        return;
    }
    match crate::reading::serves(client, APPLICATION_SETS).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(error) => {
            tracing::debug!(error = %error, "whether ApplicationSets are served is not known");
            return;
        }
    }
    let note = "readApplications is false, and this cluster serves Argo CD's ApplicationSets: maxApplicationDeletes sees none of the Applications a change would make them delete. Set readApplications=true (deploy/controller ships it; a kustomization that replaces the settings drops it: merge instead)";
    tracing::warn!("{note}");
    let event = crate::reporting::events::warning("GuardUnguarded", "Start", note);
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(settings.reads.argo_namespace.clone()),
        name: Some(pod.to_string()),
        ..Default::default()
    };
    crate::reporting::events::publish(recorder, vec![(reference, event)]).await;
}

/// `--once`: the first reads, one reconcile, its ending as the exit code.
async fn once(mut started: Started) -> Ending {
    let caches = started.caches.clone();
    let waited = tokio::time::timeout(ONCE_READ_DEADLINE, async {
        loop {
            if let Some(failure) = caches.changes.first_failure() {
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
            return Ending::ReadFailed;
        }
        Err(_) => {
            tracing::error!(
                "reading {} did not complete within {}s; nothing was planned or changed",
                caches.unready().join(", "),
                ONCE_READ_DEADLINE.as_secs()
            );
            return Ending::ReadFailed;
        }
    }
    started.reconciler.always_summarise = true;
    let report = started.reconciler.reconcile(&|| true).await;
    tracing::info!(requests = report.writes, "done");
    report.ending
}

/// The client: --kubeconfig, else KUBECONFIG or ~/.kube/config, else the pod's ServiceAccount.
async fn client(flags: &Flags) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
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
