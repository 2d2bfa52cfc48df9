//! After the guards: the token Secrets (`credentials: serviceAccount`) no Argo CD Secret uses
//! any more go, with their cluster — and, with `removeServiceAccount`, what the controller
//! revokes in a workload cluster it can still reach.

use std::collections::HashSet;

use crate::access::{self, AdminAccess, Grant};
use crate::krm::finding::Severity;

use super::Ctx;
use super::ids::SecretId;
use super::outcome::ClusterState;
use super::plan::{Action, Steps};
use super::scan::Scan;

/// A token Secret the plan deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenDelete {
    /// The token Secret.
    pub secret: SecretId,
    /// The kubeconfig Secret it was for.
    pub kubeconfig: SecretId,
    /// Its `metadata.uid` and `metadata.resourceVersion` as read: the deletion's preconditions.
    pub uid: Option<String>,
    /// See `uid`.
    pub resource_version: Option<String>,
    /// `removeServiceAccount`: the ServiceAccount and RBAC to delete in the workload cluster,
    /// and how to reach it, where its kubeconfig Secret is still there to read.
    pub revoke: Option<(AdminAccess, Grant)>,
}

/// The token Secrets to delete: one whose kubeconfig Secret has no cluster that keeps or gets
/// an Argo CD Secret logging in with it.
pub(super) fn deletes(
    ctx: &mut Ctx,
    scan: &Scan,
    steps: &Steps,
    needs: &[access::TokenNeed],
) -> Vec<TokenDelete> {
    if scan.tokens.is_empty() || !ctx.config.prune {
        return Vec::new();
    }
    let service_account = ctx.config.access.mode == access::Mode::ServiceAccount;
    let mut used: HashSet<&SecretId> = HashSet::new();
    let clusters = ctx.outcomes.all();
    for o in clusters {
        let keeps = matches!(
            o.state,
            ClusterState::Kept
                | ClusterState::Waiting
                | ClusterState::Failed
                | ClusterState::Skipped
        );
        let converted = matches!(o.state, ClusterState::Converted | ClusterState::Paused);
        if keeps || (converted && service_account) {
            used.insert(&o.source);
        }
    }
    // An Argo CD Secret a guard kept, its kubeconfig Secret gone or not: its token stays too.
    for step in &steps.steps {
        if let (Action::Kept { .. }, Some(source)) = (&step.action, &step.source) {
            used.insert(source);
        }
    }
    let mut deletes: Vec<TokenDelete> = scan
        .tokens
        .iter()
        .filter(|(kubeconfig, _)| !used.contains(kubeconfig))
        .map(|(kubeconfig, token)| TokenDelete {
            secret: token.id.clone(),
            kubeconfig: kubeconfig.clone(),
            uid: token.uid.clone(),
            resource_version: token.resource_version.clone(),
            revoke: None,
        })
        .collect();
    deletes.sort_by(|a, b| a.secret.cmp(&b.secret));
    let remove = ctx.config.access.remove_account;
    for d in &mut deletes {
        if remove {
            d.revoke = needs
                .iter()
                .find(|n| n.kubeconfig == d.kubeconfig)
                .and_then(|n| Some((n.access.clone().ok()?, n.grant.clone())));
        }
        let index = scan.tokens[&d.kubeconfig].index;
        let message = format!(
            "deleted: token Secret of {}, which no Argo CD Secret logs in with any more{}",
            d.kubeconfig,
            if d.revoke.is_some() {
                "; its ServiceAccount and RBAC are deleted in the workload cluster (removeServiceAccount)"
            } else {
                ""
            }
        );
        ctx.report(index, Severity::Info, None, message);
    }
    deletes
}
