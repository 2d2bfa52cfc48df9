//! What Argo CD's ApplicationSet controller will do once a plan's cluster Secrets are written:
//! which Applications its cluster generators delete for a cluster that goes, is renamed or stops
//! matching a selector, which it keeps (`applicationsSync`), which it creates, and what becomes
//! of each deleted Application's resources — computed with Argo CD's own rules, read from
//! argo-cd v3.5.1 (commit 109ca7ca71139e514114499d294a492e7910a965):
//! applicationset/generators/cluster.go, matrix.go, merge.go, list.go,
//! generator_spec_processor.go, applicationset/utils/utils.go (templates, finalizers),
//! applicationset/utils/policy.go and applicationset/controllers/applicationset_controller.go
//! (`deleteInCluster`, `removeFinalizerOnInvalidDestination`).
//!
//! Bottom to top, each module importing only those before it: [`ordered`](mod@ordered),
//! [`argo`] (what Argo CD's objects are known by), [`policy`] (the controller's), [`selector`],
//! [`params`] (a parameter set), [`template`] (the name templates, reading parameter sets),
//! [`read`] (ApplicationSets and Applications, their templates' syntax), [`generators`] (their
//! parameter sets for a fleet), [`effects`] (what ApplicationSets do) and [`judgment`] (which
//! computes it). This module only declares and re-exports them.

mod argo;
mod effects;
pub(crate) mod generators;
mod judgment;
mod ordered;
pub(crate) mod params;
mod policy;
pub(crate) mod read;
pub(crate) mod selector;
pub(crate) mod template;

pub use argo::AppRef;
// Reconciliation's tests build cluster Secrets of the local cluster's server.
#[cfg(test)]
pub(crate) use argo::IN_CLUSTER_SERVER;
pub use effects::{
    AppChange, AppSetPlan, ApplicationEffect, ApplicationResources, Applications, Leaves, Stranded,
};
pub(crate) use judgment::{Fleets, judge};
pub(crate) use ordered::ordered;
pub(crate) use policy::is_controller_params;
pub use policy::{CMD_PARAMS, ControllerPolicy};
pub(crate) use read::{App, AppSet, ClusterView, app, app_set, is_application, is_application_set};
