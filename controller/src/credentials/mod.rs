//! Minting and revoking (`credentials: serviceAccount`): the tokens the plan says are due,
//! minted in their workload clusters a few at a time, each within a deadline, an unreachable
//! cluster waiting in a backoff while it keeps its current token; tokens revoked one by one
//! (their binding Secrets deleted) once replaced or when their cluster leaves; and, when the
//! plan deletes a token Secret under `removeServiceAccount`, the ServiceAccount and its RBAC
//! deleted again.

mod backoff;
mod grant;
mod impersonation;
pub mod workload;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use capi2argo_core::{AdminAccess, Due, Plan, SecretId, TokenDelete, TokenNeed};
use futures::StreamExt;

use backoff::Backoff;
pub use grant::Minted;
use workload::Connect;

/// How many workload clusters get their tokens minted at once.
const MINTS_AT_ONCE: usize = 16;

/// How long setting up one workload cluster may take, all its requests together.
const DEADLINE: Duration = Duration::from_secs(60);

/// How long revoking a token Secret's tokens in one workload cluster may take.
const REVOKE_DEADLINE: Duration = Duration::from_secs(15);

/// Why a workload cluster could not be set up, or its setup removed.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// Its admin credential cannot reach it (what the plan says of it).
    #[error("{0}")]
    Unreachable(String),
    #[error("connecting to {server}: {}", crate::cause::describe(.source.as_ref()))]
    Connect {
        server: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{what} in the workload cluster: {}", crate::cause::describe(.source))]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("the TokenRequest for {account} gave no token")]
    NoToken { account: String },
    #[error("no answer within {}s", DEADLINE.as_secs())]
    Timeout,
}

/// A fingerprint of the admin credential a cluster is reached with (or why it cannot be): a
/// changed kubeconfig Secret has another. Only compared, never kept beyond the process.
fn fingerprint(access: &Result<AdminAccess, String>) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    match access {
        Ok(a) => (
            &a.server,
            &a.ca_data,
            &a.server_name,
            a.insecure,
            &a.proxy_url,
            &a.client_certificate_data,
            &a.client_key_data,
            &a.bearer_token,
        )
            .hash(&mut hasher),
        Err(reason) => reason.hash(&mut hasher),
    }
    hasher.finish()
}

/// One token Secret's tokens to revoke.
pub struct Revocation<'r> {
    /// How to reach the workload cluster.
    pub access: &'r AdminAccess,
    /// The binding Secrets, `namespace/name`.
    pub bindings: &'r [String],
    /// The token Secret they were made for.
    pub for_secret: &'r SecretId,
}

/// The workload clusters' credentials.
pub struct Credentials {
    connect: Connect,
    backoff: Backoff,
    /// Revocations that failed, by token Secret: tried again after a wait, not at every
    /// reconcile (an unreachable cluster would hold each one up).
    revoking: Backoff,
    /// What each failing cluster failed with last: a new cause is said again.
    causes: BTreeMap<String, String>,
}

impl Credentials {
    pub fn new(connect: Connect) -> Credentials {
        Credentials {
            connect,
            backoff: Backoff::default(),
            revoking: Backoff::default(),
            causes: BTreeMap::new(),
        }
    }

    /// The tokens of `plan` due now that may be tried: not waiting in the backoff, and (for a
    /// token's age) not just minted. Clusters the plan no longer has a token for are forgotten.
    pub fn due<'p>(&mut self, plan: &'p Plan) -> Vec<&'p TokenNeed> {
        let live: BTreeSet<String> = plan
            .tokens
            .iter()
            .map(|t| t.kubeconfig.to_string())
            .collect();
        self.backoff.forget_all_but(&live);
        self.causes.retain(|k, _| live.contains(k));
        plan.tokens
            .iter()
            .filter(|t| t.due.is_some() && t.access.is_ok())
            .filter(|t| {
                let by_age = matches!(t.due, Some(Due::Renew | Due::Expired));
                self.backoff
                    .ready(&t.kubeconfig.to_string(), fingerprint(&t.access), by_age)
            })
            .collect()
    }

    /// The clusters of `plan` whose RBAC is to be applied again, their tokens kept, that may be
    /// tried now (not waiting in the backoff).
    pub fn regrants<'p>(&self, plan: &'p Plan) -> Vec<&'p TokenNeed> {
        plan.tokens
            .iter()
            .filter(|t| t.reapply && t.access.is_ok())
            .filter(|t| {
                self.backoff
                    .ready(&t.kubeconfig.to_string(), fingerprint(&t.access), false)
            })
            .collect()
    }

    /// Applies the RBAC of each of `needs` again, a few workload clusters at a time.
    pub async fn set_up<'p>(
        &self,
        needs: Vec<&'p TokenNeed>,
    ) -> Vec<(&'p TokenNeed, Result<(), MintError>)> {
        futures::stream::iter(needs)
            .map(|need| async move {
                let work = async {
                    let access = need.access.clone().map_err(MintError::Unreachable)?;
                    let client = (self.connect)(access).await?;
                    grant::set_up(&client, &need.grant).await
                };
                let done = tokio::time::timeout(DEADLINE, work)
                    .await
                    .unwrap_or(Err(MintError::Timeout));
                (need, done)
            })
            .buffer_unordered(MINTS_AT_ONCE)
            .collect()
            .await
    }

    /// Mints a token for each of `due`, a few workload clusters at a time.
    pub async fn mint<'p>(
        &self,
        due: Vec<&'p TokenNeed>,
    ) -> Vec<(&'p TokenNeed, Result<Minted, MintError>)> {
        futures::stream::iter(due)
            .map(|need| async move {
                let work = async {
                    let access = need.access.clone().map_err(MintError::Unreachable)?;
                    let client = (self.connect)(access).await?;
                    grant::mint(&client, &need.grant, need.ttl, &need.secret).await
                };
                let minted = tokio::time::timeout(DEADLINE, work)
                    .await
                    .unwrap_or(Err(MintError::Timeout));
                (need, minted)
            })
            .buffer_unordered(MINTS_AT_ONCE)
            .collect()
            .await
    }

    /// A token was minted and kept for the cluster of the kubeconfig Secret `kubeconfig`.
    pub fn kept(&mut self, kubeconfig: &SecretId) {
        let key = kubeconfig.to_string();
        self.causes.remove(&key);
        self.backoff.minted(&key);
    }

    /// No token could be minted or kept for the cluster of `kubeconfig`, for `cause`: it waits.
    /// Whether to say so in an Event: the first failure in a row, or one whose cause is not the
    /// last one's (an Event that still said the fixed cause would mislead).
    pub fn failed(&mut self, need: &TokenNeed, cause: &str) -> bool {
        self.failed_with(&need.kubeconfig, &need.access, cause)
    }

    /// [`Credentials::failed`], for the cluster of `kubeconfig` reached with `access`.
    fn failed_with(
        &mut self,
        kubeconfig: &SecretId,
        access: &Result<AdminAccess, String>,
        cause: &str,
    ) -> bool {
        let key = kubeconfig.to_string();
        self.backoff.failed(&key, fingerprint(access));
        self.causes.insert(key, cause.to_string()).as_deref() != Some(cause)
    }

    /// How many workload clusters are failing now.
    pub fn failing(&self) -> usize {
        self.backoff.failing().len()
    }

    /// When the next cluster (or revocation) waiting in a backoff may be tried.
    pub fn next_try(&self) -> Option<Instant> {
        [self.backoff.next(), self.revoking.next()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Revokes the tokens bound to `bindings` in the cluster `access` reaches: each binding
    /// Secret made for the token Secret `for_secret` deleted.
    pub async fn unbind(
        &self,
        access: &AdminAccess,
        bindings: &[String],
        for_secret: &SecretId,
    ) -> Result<(), MintError> {
        let work = async {
            let client = (self.connect)(access.clone()).await?;
            grant::unbind(&client, bindings, for_secret).await
        };
        tokio::time::timeout(REVOKE_DEADLINE, work)
            .await
            .unwrap_or(Err(MintError::Timeout))
    }

    /// Revokes each of `revocations` (a few workload clusters at a time), but those waiting
    /// after a failure: what became of each tried, by its index. A failure waits 10 s, doubling
    /// to 5 minutes, before the same token Secret is tried again.
    pub async fn unbind_all(
        &mut self,
        revocations: &[Revocation<'_>],
    ) -> Vec<(usize, Result<(), MintError>)> {
        let ready: Vec<usize> = (0..revocations.len())
            .filter(|&i| {
                let r = &revocations[i];
                self.revoking.ready(
                    &r.for_secret.to_string(),
                    fingerprint(&Ok(r.access.clone())),
                    false,
                )
            })
            .collect();
        let this = &*self;
        let done: Vec<(usize, Result<(), MintError>)> = futures::stream::iter(ready)
            .map(|i| async move {
                let r = &revocations[i];
                (i, this.unbind(r.access, r.bindings, r.for_secret).await)
            })
            .buffer_unordered(MINTS_AT_ONCE)
            .collect()
            .await;
        for (i, result) in &done {
            let r = &revocations[*i];
            let key = r.for_secret.to_string();
            match result {
                Ok(()) => self.revoking.minted(&key),
                Err(_) => self
                    .revoking
                    .failed(&key, fingerprint(&Ok(r.access.clone()))),
            }
        }
        done
    }

    /// Deletes the ServiceAccount and its RBAC that `delete` revokes (`removeServiceAccount`);
    /// `None` when it revokes nothing.
    pub async fn revoke(&self, delete: &TokenDelete) -> Option<Result<(), MintError>> {
        let (access, grant) = delete.revoke.as_ref()?;
        let work = async {
            let client = (self.connect)(access.clone()).await?;
            grant::revoke(&client, grant).await
        };
        Some(
            tokio::time::timeout(DEADLINE, work)
                .await
                .unwrap_or(Err(MintError::Timeout)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 47): the Event kept saying a cause that had been fixed; a failure whose
    /// cause changed is said again, one that repeats is not.
    #[test]
    fn a_failure_is_said_again_when_its_cause_changes() {
        let mut credentials = Credentials::new(workload::connector());
        let cluster = SecretId::new("fleet", "a-kubeconfig");
        let access = Err("unreachable".to_string());
        let mut failed = |cause: &str| credentials.failed_with(&cluster, &access, cause);
        assert!(failed("TLS: the client certificate is X.509 v1"));
        assert!(!failed("TLS: the client certificate is X.509 v1"));
        assert!(failed("connection refused"));
        assert_eq!(credentials.failing(), 1);
        credentials.kept(&cluster);
        assert_eq!(credentials.failing(), 0);
        assert!(credentials.failed_with(&cluster, &access, "connection refused"));
    }
}
