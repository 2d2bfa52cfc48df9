//! Minting and revoking (`credentials: serviceAccount`): the tokens the plan says are due,
//! minted in their workload clusters a few at a time, each within a deadline, an unreachable
//! cluster waiting in a backoff while it keeps its current token; and, when the plan deletes a
//! token Secret under `removeServiceAccount`, the ServiceAccount and its RBAC deleted again.

mod backoff;
mod grant;
pub mod workload;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use capi2argo_core::{Due, Plan, TokenDelete, TokenNeed};
use futures::StreamExt;

use backoff::Backoff;
pub use grant::Minted;
use workload::Connect;

/// How many workload clusters get their tokens minted at once.
const MINTS_AT_ONCE: usize = 16;

/// How long setting up one workload cluster may take, all its requests together.
const DEADLINE: Duration = Duration::from_secs(60);

/// Why a workload cluster could not be set up, or its setup removed.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// Its admin credential cannot reach it (what the plan says of it).
    #[error("{0}")]
    Unreachable(String),
    #[error("connecting to {server}: {source}")]
    Connect {
        server: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{what} in the workload cluster: {source}")]
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

/// The workload clusters' credentials.
pub struct Credentials {
    connect: Connect,
    backoff: Backoff,
}

impl Credentials {
    pub fn new(connect: Connect) -> Credentials {
        Credentials {
            connect,
            backoff: Backoff::default(),
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
        plan.tokens
            .iter()
            .filter(|t| t.due.is_some() && t.access.is_ok())
            .filter(|t| {
                let by_age = matches!(t.due, Some(Due::Renew | Due::Expired));
                self.backoff.ready(&t.kubeconfig.to_string(), by_age)
            })
            .collect()
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
                    grant::mint(&client, &need.grant, need.ttl).await
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

    /// A token was minted and kept for `need`'s cluster.
    pub fn kept(&mut self, need: &TokenNeed) {
        self.backoff.minted(&need.kubeconfig.to_string());
    }

    /// No token could be minted or kept for `need`'s cluster: it waits. Whether it is the first
    /// failure in a row (the one to say in an Event).
    pub fn failed(&mut self, need: &TokenNeed) -> bool {
        let key = need.kubeconfig.to_string();
        let first = !self.backoff.failing().contains(&key);
        self.backoff.failed(&key);
        first
    }

    /// How many workload clusters are failing now.
    pub fn failing(&self) -> usize {
        self.backoff.failing().len()
    }

    /// When the next cluster waiting in the backoff may be tried.
    pub fn next_try(&self) -> Option<Instant> {
        self.backoff.next()
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
