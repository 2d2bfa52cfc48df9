//! The metrics, all named `capi2argo_*`, in Prometheus' exposition format.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use capi2argo_core::{ClusterState, Guard};

type Labels = Vec<(&'static str, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// Every state a cluster can be in, so each has a series from the start.
pub const STATES: [ClusterState; 7] = ClusterState::ALL;

/// Every guard, so each has a series from the start.
pub const GUARDS: [Guard; 5] = Guard::ALL;

/// How a plan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOutcome {
    /// Everything it decided was carried out, and it had no errors.
    Synced,
    /// Carried out, but it had errors (a cluster that failed to convert, a guard that held).
    Errors,
    /// Not carried out (a read or a request failed, or one was refused as stale).
    Failed,
}

impl PlanOutcome {
    pub fn word(self) -> &'static str {
        match self {
            PlanOutcome::Synced => "synced",
            PlanOutcome::Errors => "errors",
            PlanOutcome::Failed => "failed",
        }
    }
}

#[derive(Clone)]
pub struct Metrics {
    pub writes: Family<Labels, Counter>,
    pub plans: Family<Labels, Counter>,
    pub guard_held: Family<Labels, Gauge>,
    pub clusters: Family<Labels, Gauge>,
    pub last_success: FloatGauge,
    pub duration: Histogram,
    pub expiry: Family<Labels, FloatGauge>,
    pub cluster_api: Gauge,
    pub leader: Gauge,
    pub watch_errors: Family<Labels, Counter>,
    pub tokens: Family<Labels, Counter>,
    pub revoked: Family<Labels, Counter>,
    pub token_failing: Gauge,
    pub token_expiry: Family<Labels, FloatGauge>,
    pub applications: Family<Labels, Gauge>,
    pub applications_protected: Family<Labels, Gauge>,
}

/// What a plan makes ApplicationSets do to Applications, as the metric labels them.
pub const APPLICATION_EFFECTS: [&str; 4] = ["delete", "kept", "create", "stranded"];

impl Metrics {
    /// The metrics, registered, every state and guard at zero.
    pub fn new() -> (Metrics, Registry) {
        let mut registry = Registry::with_prefix("capi2argo");
        let metrics = Metrics {
            writes: Family::default(),
            plans: Family::default(),
            guard_held: Family::default(),
            clusters: Family::default(),
            last_success: FloatGauge::default(),
            duration: Histogram::new(exponential_buckets(0.005, 2.0, 14)),
            expiry: Family::default(),
            cluster_api: Gauge::default(),
            leader: Gauge::default(),
            watch_errors: Family::default(),
            tokens: Family::default(),
            revoked: Family::default(),
            token_failing: Gauge::default(),
            token_expiry: Family::default(),
            applications: Family::default(),
            applications_protected: Family::default(),
        };
        registry.register(
            "writes",
            "Requests made to carry out plans, by verb (create, replace, delete) and outcome (ok, conflict, error)",
            metrics.writes.clone(),
        );
        registry.register(
            "plans",
            "Plans made, by outcome: synced (carried out, no errors), errors (carried out, with errors), failed (not carried out)",
            metrics.plans.clone(),
        );
        registry.register(
            "guard_held",
            "1 while the guard (allowEmpty, maxPrune, allowRename, maxCredentialChanges, maxApplicationDeletes) holds part of the plan back",
            metrics.guard_held.clone(),
        );
        registry.register(
            "clusters",
            "Clusters by state at the last plan: converted, paused, kept, failed, skipped, ignored, waiting",
            metrics.clusters.clone(),
        );
        registry.register(
            "last_success_timestamp_seconds",
            "When a plan was last carried out in full (Unix time)",
            metrics.last_success.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "How long a reconcile took: building the input, planning, the requests",
            metrics.duration.clone(),
        );
        registry.register(
            "credential_expiry_timestamp_seconds",
            "When the first certificate of any converted cluster's credentials stops being valid (Unix time), labelled with its cluster's kubeconfig Secret",
            metrics.expiry.clone(),
        );
        registry.register(
            "cluster_api_served",
            "1 when the API server serves Cluster API's Clusters (they are read), 0 when the Secrets are read alone",
            metrics.cluster_api.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the Lease and writes (always 1 without --leader-elect)",
            metrics.leader.clone(),
        );
        registry.register(
            "watch_errors",
            "Watch and list failures, by what was watched (each is retried with backoff)",
            metrics.watch_errors.clone(),
        );
        registry.register(
            "tokens_minted",
            "credentials=serviceAccount: ServiceAccount tokens minted in workload clusters, by outcome (ok, error)",
            metrics.tokens.clone(),
        );
        registry.register(
            "tokens_revoked",
            "credentials=serviceAccount: tokens revoked in workload clusters (their binding Secrets deleted: replaced, or their cluster left Argo CD), by outcome (ok, error)",
            metrics.revoked.clone(),
        );
        registry.register(
            "token_failing_clusters",
            "credentials=serviceAccount: workload clusters whose token could not be minted at the last try (each keeps its current token until it expires)",
            metrics.token_failing.clone(),
        );
        registry.register(
            "token_expiry_timestamp_seconds",
            "credentials=serviceAccount: when the first ServiceAccount token Argo CD holds stops being valid (Unix time), labelled with its token Secret",
            metrics.token_expiry.clone(),
        );
        registry.register(
            "applications",
            "readApplications: Applications the last plan makes ApplicationSets delete, keep (their policy deletes none), create, and Applications left without their cluster (stranded)",
            metrics.applications.clone(),
        );
        registry.register(
            "applications_protected",
            "readApplications: Applications an ApplicationSet would have deleted but for the guard that holds, by guard",
            metrics.applications_protected.clone(),
        );
        for effect in APPLICATION_EFFECTS {
            let _ = metrics
                .applications
                .get_or_create(&vec![("effect", effect.to_string())]);
        }
        for guard in GUARDS {
            let _ = metrics
                .applications_protected
                .get_or_create(&vec![("guard", guard.setting().to_string())]);
        }
        for outcome in ["ok", "error"] {
            let _ = metrics
                .tokens
                .get_or_create(&vec![("outcome", outcome.to_string())]);
            let _ = metrics
                .revoked
                .get_or_create(&vec![("outcome", outcome.to_string())]);
        }
        for state in STATES {
            let _ = metrics
                .clusters
                .get_or_create(&vec![("state", state.word().to_string())]);
        }
        for guard in GUARDS {
            let _ = metrics
                .guard_held
                .get_or_create(&vec![("guard", guard.setting().to_string())]);
        }
        for outcome in [
            PlanOutcome::Synced,
            PlanOutcome::Errors,
            PlanOutcome::Failed,
        ] {
            let _ = metrics
                .plans
                .get_or_create(&vec![("outcome", outcome.word().to_string())]);
        }
        (metrics, registry)
    }

    pub fn write(&self, verb: &str, outcome: &str) {
        let labels = vec![("verb", verb.to_string()), ("outcome", outcome.to_string())];
        self.writes.get_or_create(&labels).inc();
    }

    pub fn plan(&self, outcome: PlanOutcome) {
        let labels = vec![("outcome", outcome.word().to_string())];
        self.plans.get_or_create(&labels).inc();
    }

    pub fn clusters_in(&self, state: ClusterState, count: i64) {
        let labels = vec![("state", state.word().to_string())];
        self.clusters.get_or_create(&labels).set(count);
    }

    pub fn guard(&self, guard: Guard, held: bool, protected: usize) {
        let labels = vec![("guard", guard.setting().to_string())];
        self.guard_held.get_or_create(&labels).set(i64::from(held));
        self.applications_protected
            .get_or_create(&labels)
            .set(protected as i64);
    }

    pub fn applications(&self, effect: &str, count: usize) {
        let labels = vec![("effect", effect.to_string())];
        self.applications.get_or_create(&labels).set(count as i64);
    }

    /// The nearest expiry, and whose; none clears the series.
    pub fn nearest_expiry(&self, nearest: Option<(i64, String)>) {
        self.expiry.clear();
        if let Some((when, secret)) = nearest {
            let labels = vec![("secret", secret)];
            self.expiry.get_or_create(&labels).set(when as f64);
        }
    }

    /// The nearest token expiry, and whose; none clears the series.
    pub fn nearest_token_expiry(&self, nearest: Option<(i64, String)>) {
        self.token_expiry.clear();
        if let Some((when, secret)) = nearest {
            let labels = vec![("secret", secret)];
            self.token_expiry.get_or_create(&labels).set(when as f64);
        }
    }

    pub fn minted(&self, outcome: &str) {
        let labels = vec![("outcome", outcome.to_string())];
        self.tokens.get_or_create(&labels).inc();
    }

    pub fn revoked(&self, outcome: &str) {
        let labels = vec![("outcome", outcome.to_string())];
        self.revoked.get_or_create(&labels).inc();
    }

    pub fn watch_error(&self, what: &str) {
        let labels = vec![("watch", what.to_string())];
        self.watch_errors.get_or_create(&labels).inc();
    }
}

/// The registry as Prometheus scrapes it.
pub fn exposition(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut text, registry);
    text
}
