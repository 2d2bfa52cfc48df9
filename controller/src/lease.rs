//! Leader election on a coordination.k8s.io/v1 Lease: kube-lease-manager takes and renews it and
//! says when this replica holds it; before each reconcile that would write, the Lease itself is
//! read again, so a replica whose renewals failed, or whose Lease was taken or deleted, stops
//! writing at once instead of when the manager next notices.

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::Client;
use kube::api::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// This replica's Lease.
pub struct Lease {
    api: Api<LeaseObject>,
    name: String,
    identity: String,
    /// Whether this replica holds it, as the manager says.
    pub changes: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
}

impl Lease {
    /// Starts taking and renewing the Lease `name` in `namespace`, lasting `seconds`.
    pub async fn start(
        client: &Client,
        namespace: &str,
        name: &str,
        identity: &str,
        seconds: u64,
    ) -> Result<Lease, kube_lease_manager::LeaseManagerError> {
        // Renewed a third of its duration before it ends (at least a second).
        let grace = (seconds / 3).max(1);
        let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), name)
            .with_namespace(namespace)
            .with_identity(identity)
            .with_duration(seconds)
            .with_grace(grace)
            .build()
            .await?;
        let (changes, task) = manager.watch().await;
        Ok(Lease {
            api: Api::namespaced(client.clone(), namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            changes,
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
        let Some(spec) = lease.spec else {
            return false;
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return false;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        match (spec.renew_time, spec.lease_duration_seconds) {
            (Some(renewed), Some(seconds)) => renewed.0.as_second() + i64::from(seconds) > now,
            _ => true,
        }
    }

    /// Gives the Lease up (the manager releases it when its channel closes), waiting at most
    /// `limit`; whether it was released.
    pub async fn release(self, limit: std::time::Duration) -> bool {
        drop(self.changes);
        matches!(tokio::time::timeout(limit, self.task).await, Ok(Ok(Ok(_))))
    }
}
