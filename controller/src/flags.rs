//! The controller's flags: those controller-runtime operators take, so manifests and habits carry
//! over, and the function's own `--set`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

/// What `--version` prints after the name: the package version and the commit the build came
/// from, as the command's (build/commit.rs): `0.1.0 (abc1234 2026-11-24)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CAPI2ARGO_BUILD_COMMIT"),
    ")"
);

/// capi2argo left running in a management cluster: it watches the kubeconfig Secrets (and
/// Cluster API's Clusters), plans with capi2argo on every change and carries the plan out.
#[derive(Debug, Parser)]
#[command(name = "capi2argo-controller", version = VERSION, args_override_self = true)]
pub struct Flags {
    /// The kubeconfig to reach the API server with (else KUBECONFIG, else the pod's own
    /// ServiceAccount).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The function's settings: a file holding a Capi2Argo object or a ConfigMap, as the function
    /// takes them, or a directory holding one file per setting, named for it (a ConfigMap
    /// mounted as a volume: deploy/controller's). Read at start: a change takes a restart
    /// (deploy/controller generates the ConfigMap's name from its content, so a changed one
    /// rolls the Deployment).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Argo CD's namespace (the pod's own in deploy/controller): the setting argoNamespace,
    /// applied over --config and under --set.
    #[arg(long, env = "ARGO_NAMESPACE", value_name = "NAMESPACE")]
    pub argo_namespace: Option<String>,
    /// A setting over --config, `KEY=VALUE`, as the function takes it (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// One reconcile, then exit: 0 all carried out, 1 the plan had errors, 2 bad flags or
    /// settings, 3 a read failed, 4 a request failed. Binds no port.
    #[arg(long)]
    pub once: bool,
    /// Where Prometheus scrapes /metrics (`0` turns it off).
    #[arg(long, default_value = ":8080", value_name = "ADDRESS")]
    pub metrics_bind_address: String,
    /// Where the kubelet probes /healthz and /readyz (`0` turns it off).
    #[arg(long, default_value = ":8081", value_name = "ADDRESS")]
    pub health_probe_bind_address: String,
    /// Write only while holding a coordination.k8s.io Lease, so two replicas never write at once.
    #[arg(long)]
    pub leader_elect: bool,
    /// The Lease's namespace (default: Argo CD's, the setting argoNamespace, where deploy/
    /// controller runs and its Role grants the Lease).
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// The Lease's name.
    #[arg(long, default_value = "capi2argo-controller", value_name = "NAME")]
    pub leader_election_id: String,
    /// How long a leader's Lease lasts without renewal: a standby takes over within it.
    #[arg(long, default_value = "15s", value_parser = duration, value_name = "DURATION")]
    pub leader_election_lease_duration: Duration,
    /// Logs as text lines or as JSON objects, one per line; both with timestamps.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// A full reconcile this often even when nothing changed: a backstop, not the mechanism.
    #[arg(long, default_value = "10m", value_parser = duration, value_name = "DURATION")]
    pub resync_period: Duration,
    /// After a change, wait this long for more before planning.
    #[arg(long, default_value = "300ms", value_parser = duration, value_name = "DURATION")]
    pub debounce: Duration,
    /// A control plane resource to read too, as `RESOURCE.GROUP` (the Kubernetes version of
    /// clusters without a topology), e.g. kubeadmcontrolplanes.controlplane.cluster.x-k8s.io;
    /// repeatable.
    #[arg(long = "control-plane", value_name = "RESOURCE.GROUP")]
    pub control_planes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// A duration as `300ms`, `30s`, `10m` or `1h`.
pub fn duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?} has no unit: write 300ms, 30s, 10m or 1h"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} does not start with a whole number"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("{text:?}: the unit is one of ms, s, m, h")),
    }
}

/// `:8080` (every address), `127.0.0.1:8080`, or `0` (off).
pub fn bind_address(text: &str) -> Result<Option<std::net::SocketAddr>, String> {
    if text == "0" {
        return Ok(None);
    }
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    full.parse()
        .map(Some)
        .map_err(|_| format!("{text:?} is not an address such as :8080 or 127.0.0.1:8080"))
}
