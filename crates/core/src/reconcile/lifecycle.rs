//! Where a cluster stands in its life, as its Cluster or ClusterProfile says (being deleted,
//! not initialised, its control plane unhealthy): reported on it, and whether `skipNotReady`
//! leaves it without an Argo CD Secret this run.

use crate::fleet::cluster;
use crate::profiles;
use krm::finding::Severity;

use super::context::Ctx;

/// Reports where the Cluster stands in its life; whether it gets no Argo CD Secret this time.
pub(super) fn lifecycle_skips(ctx: &mut Ctx, at: usize) -> bool {
    let life = cluster::lifecycle(&ctx.item(at).node);
    let skip = ctx.config.skip_not_ready && life.not_ready();
    let outcome = if skip {
        "skipped (skipNotReady): no Argo CD Secret this time, an existing one is kept"
    } else {
        "Argo CD may fail to reach it (skipNotReady=true waits)"
    };
    let conditions = if cluster::is_v1beta2(&ctx.item(at).node) {
        "status.conditions"
    } else {
        "status.v1beta2.conditions"
    };
    if life.deleting {
        let marked = ctx
            .item(at)
            .node
            .path(&["metadata", "deletionTimestamp"])
            .is_some_and(|t| !t.is_null());
        let field = if marked {
            "metadata.deletionTimestamp"
        } else {
            conditions
        };
        let message = format!("the Cluster is being deleted: {outcome}");
        ctx.report(at, Severity::Warning, Some(field), message);
    }
    if life.initialized == Some(false) {
        let message = format!("the Cluster's control plane is not initialised yet: {outcome}");
        ctx.report(at, Severity::Warning, Some("status"), message);
    }
    for c in &life.unavailable {
        let why = match (c.reason.is_empty(), c.message.is_empty()) {
            (false, false) => format!(" ({}: {})", c.reason, c.message),
            (false, true) => format!(" ({})", c.reason),
            _ => String::new(),
        };
        let message = format!(
            "the Cluster's condition {} is False{why}: {outcome}",
            c.type_
        );
        ctx.report(at, Severity::Warning, Some(conditions), message);
    }
    skip
}

/// Reports where a ClusterProfile's cluster stands (being deleted, its control plane not
/// healthy as its cluster manager says); whether it gets no Argo CD Secret this time.
pub(super) fn profile_skips(ctx: &mut Ctx, at: usize) -> bool {
    let node = &ctx.item(at).node;
    let deleting = node
        .path(&["metadata", "deletionTimestamp"])
        .is_some_and(|t| !t.is_null());
    let unhealthy = profiles::condition(node, profiles::CONTROL_PLANE_HEALTHY)
        .filter(|(healthy, _, _)| !healthy)
        .map(
            |(_, reason, message)| match (reason.is_empty(), message.is_empty()) {
                (false, false) => format!(" ({reason}: {message})"),
                (false, true) => format!(" ({reason})"),
                _ => String::new(),
            },
        );
    let skip = ctx.config.skip_not_ready && (deleting || unhealthy.is_some());
    let outcome = if skip {
        "skipped (skipNotReady): no Argo CD Secret this time, an existing one is kept"
    } else {
        "Argo CD may fail to reach it (skipNotReady=true waits)"
    };
    if deleting {
        let message = format!("the ClusterProfile is being deleted: {outcome}");
        ctx.report(
            at,
            Severity::Warning,
            Some("metadata.deletionTimestamp"),
            message,
        );
    }
    if let Some(why) = unhealthy {
        let message = format!(
            "the ClusterProfile's condition {} is False{why}: {outcome}",
            profiles::CONTROL_PLANE_HEALTHY
        );
        ctx.report(at, Severity::Warning, Some("status.conditions"), message);
    }
    skip
}
