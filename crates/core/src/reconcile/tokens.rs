//! After the guards: the token Secrets (`credentials: serviceAccount`) no Argo CD Secret uses
//! any more go, with their cluster — their tokens revoked in a workload cluster the controller
//! can still reach (each token's binding deleted), and, with `removeServiceAccount`, the
//! ServiceAccount and its RBAC too.

use std::collections::HashSet;

use crate::access::{self, AdminAccess, Grant};
use krm::finding::Severity;

use super::context::Ctx;
use super::decision::{Action, Steps};
use super::found::Scan;
use super::ids::{SecretId, SourceKey};
use super::outcome::ClusterState;

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
    /// Its tokens, revoked one by one by deleting what each is bound to, before the token
    /// Secret goes; `Err`: why they cannot be (they expire on their own).
    pub unbind: Result<Unbind, String>,
}

/// The bindings of a token Secret's tokens, and how to reach the cluster they are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unbind {
    /// How to reach the workload cluster.
    pub access: AdminAccess,
    /// The binding Secrets, `namespace/name`.
    pub bindings: Vec<String>,
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
    let service_account = ctx.config.access.mode == access::CredentialMode::ServiceAccount;
    // An Argo CD Secret a guard kept, its kubeconfig Secret gone or not: its token stays too.
    let kept: HashSet<&SecretId> = steps
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Kept { .. }))
        .filter_map(|s| s.source.as_ref())
        .collect();
    // Otherwise by what became of its cluster (found by any of the cluster's kubeconfig
    // Secrets): one converted keeps its token in serviceAccount mode only; one kept as it was,
    // failed, skipped or waiting keeps it; one ignored or gone does not.
    let outcomes = &mut ctx.outcomes;
    let mut used = |kubeconfig: &SecretId| {
        if kept.contains(kubeconfig) {
            return true;
        }
        let key = SourceKey::of(&kubeconfig.namespace, &kubeconfig.name);
        outcomes.of_key(&key).is_some_and(|o| match o.state {
            ClusterState::Converted | ClusterState::Paused => service_account,
            ClusterState::Ignored => false,
            ClusterState::Kept
            | ClusterState::Failed
            | ClusterState::Skipped
            | ClusterState::Waiting => true,
        })
    };
    let unused: Vec<(&SecretId, &access::TokenSecret)> = scan
        .tokens
        .iter()
        .filter(|(kubeconfig, _)| !used(kubeconfig))
        .collect();
    // A second token Secret for one kubeconfig Secret is never read: it goes, token and all.
    let extras = scan.token_extras.iter().map(|(k, t)| (k, t));
    let mut deletes: Vec<TokenDelete> = unused
        .into_iter()
        .chain(extras)
        .map(|(kubeconfig, token)| TokenDelete {
            secret: token.id.clone(),
            kubeconfig: kubeconfig.clone(),
            uid: token.uid.clone(),
            resource_version: token.resource_version.clone(),
            revoke: None,
            unbind: Err(String::new()),
        })
        .collect();
    deletes.sort_by(|a, b| a.secret.cmp(&b.secret));
    let remove = ctx.config.access.remove_account;
    for d in &mut deletes {
        // Only the token Secret read stands for what was granted; a duplicate revokes nothing.
        let read = scan
            .tokens
            .get(&d.kubeconfig)
            .is_some_and(|t| t.id == d.secret);
        if remove && read {
            d.revoke = needs
                .iter()
                .find(|n| n.kubeconfig == d.kubeconfig)
                .and_then(|n| Some((n.access.clone().ok()?, n.grant.clone())));
        }
        let token = scan
            .tokens
            .values()
            .chain(scan.token_extras.iter().map(|(_, t)| t))
            .find(|t| t.id == d.secret);
        let index = token.map_or(0, |t| t.index);
        d.unbind = match token {
            Some(t) => unbind(ctx, t, &d.kubeconfig, needs),
            None => Err("its token Secret was not read".into()),
        };
        let revoked = match &d.unbind {
            Ok(u) => format!(
                "; its token{} revoked in the workload cluster first",
                if u.bindings.len() > 1 { "s are" } else { " is" }
            ),
            Err(why) => format!("; its token is not revoked ({why})"),
        };
        let message = if read {
            format!(
                "deleted: token Secret of {}, which no Argo CD Secret logs in with any more{revoked}{}",
                d.kubeconfig,
                if d.revoke.is_some() {
                    "; its ServiceAccount and RBAC are deleted in the workload cluster (removeServiceAccount)"
                } else {
                    ""
                }
            )
        } else {
            format!(
                "deleted: a second token Secret of {}, never read (one token Secret per kubeconfig Secret){revoked}",
                d.kubeconfig
            )
        };
        ctx.report(index, Severity::Info, None, message);
    }
    deletes
}

/// How a token Secret's tokens are revoked as it goes: each binding deleted (an expired one's
/// too, so that nothing is left behind), through the admin credential of its kubeconfig Secret — the one a cluster converted this run gave, else the
/// kubeconfig Secret as the input holds it (a cluster ignored, deselected or moved to `admin`).
fn unbind(
    ctx: &Ctx,
    token: &access::TokenSecret,
    kubeconfig: &SecretId,
    needs: &[access::TokenNeed],
) -> Result<Unbind, String> {
    let mut bindings: Vec<String> = token
        .binding
        .iter()
        .chain(&token.retired)
        .cloned()
        .collect();
    bindings.dedup();
    if bindings.is_empty() {
        return Err("it was minted bound to no object; it expires on its own, or goes with its ServiceAccount".into());
    }
    let access = match needs.iter().find(|n| &n.kubeconfig == kubeconfig) {
        Some(need) => need.access.clone(),
        None => super::convert::admin_access(ctx, kubeconfig),
    };
    access.map(|access| Unbind { access, bindings })
}
