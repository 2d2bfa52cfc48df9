//! Beside the plan: what it makes Argo CD do to Applications. The Argo CD clusters before the
//! plan are the input's cluster Secrets in Argo CD's namespace; after it, the same with every
//! step carried out. The ApplicationSets and Applications of the input are judged against both
//! ([`crate::appsets`]), for the plan to show and for `maxApplicationDeletes` to guard.

use crate::appsets::{
    self, App, AppSet, Applications, ClusterView, ControllerPolicy, Effect, Fleets,
};
use crate::convert::argocd::SECRET_TYPE_LABEL;
use crate::krm::finding::Severity;
use crate::krm::object::SecretId;

use super::plan::{Action, Step, Steps};
use super::scan::Scan;
use super::{Ctx, Output};

/// What judging needs, taken from the scan.
pub(super) struct Judging {
    appsets: Vec<AppSet>,
    apps: Vec<App>,
    before: Vec<ClusterView>,
    policy: ControllerPolicy,
}

impl Judging {
    /// The input's ApplicationSets and Applications, the clusters Argo CD knows now, and the
    /// ApplicationSet controller's policy; `None` when the input holds neither kind (nothing to
    /// judge, nothing spent). Says when the input reads as less than it should.
    pub fn of(ctx: &mut Ctx, scan: &mut Scan, output: Output) -> Option<Judging> {
        let appsets = std::mem::take(&mut scan.appsets);
        let apps = std::mem::take(&mut scan.apps);
        if appsets.is_empty() && apps.is_empty() {
            if ctx.config.read_applications && !ctx.input.items.is_empty() {
                let message = "readApplications=true, but the input holds no ApplicationSet and no Application (argoproj.io/v1alpha1): what the plan does to Applications is not judged, and maxApplicationDeletes guards nothing; read them too (kubectl get applicationsets,applications -n <argoNamespace> -o yaml)";
                ctx.report_config(Severity::Warning, None, message.into());
            }
            return None;
        }
        if !appsets.is_empty() && apps.is_empty() && output == Output::PlanOnly {
            let message = format!(
                "{} ApplicationSet(s) came without any Application: the plan cannot say which existing Applications they delete (maxApplicationDeletes then guards nothing); read the Applications too",
                appsets.len()
            );
            ctx.report_config(Severity::Warning, None, message);
        }
        let argo = &ctx.config.argo_namespace;
        let before = ctx
            .input
            .items
            .iter()
            .map(|item| crate::krm::object::Object::new(&item.node))
            .filter(|o| {
                o.is_secret()
                    && o.namespace() == argo
                    && o.label(SECRET_TYPE_LABEL) == Some("cluster")
            })
            .map(ClusterView::of)
            .collect();
        let mut policy = ctx.config.appset_policy.clone();
        if let Some(at) = scan.controller_params {
            let (read, differ) = policy.with_params(ctx.object(at));
            for key in differ {
                let message = format!(
                    "{} sets {key} otherwise than the settings (applicationSetPolicy, applicationSetPolicyOverride): the ConfigMap is what the ApplicationSet controller runs with, and what the plan judges by",
                    appsets::CMD_PARAMS
                );
                ctx.report(at, Severity::Warning, Some(&format!("data.{key}")), message);
            }
            policy = read;
        }
        Some(Judging {
            appsets,
            apps,
            before,
            policy,
        })
    }

    /// What the ApplicationSet controller does once the steps are carried out.
    pub fn judge(&self, ctx: &Ctx, steps: &Steps) -> Applications {
        let fleets = Fleets {
            before: self.before.clone(),
            after: self.after(ctx, steps),
        };
        appsets::judge(&self.appsets, &self.apps, &fleets, &self.policy)
    }

    /// The clusters Argo CD knows once the steps are carried out, each known by the Secret it
    /// had before the plan (a new one by its own).
    fn after(&self, ctx: &Ctx, steps: &Steps) -> Vec<ClusterView> {
        let mut after = self.before.clone();
        let at = |after: &[ClusterView], id: &SecretId| {
            after.iter().position(|c| c.secret.as_ref() == Some(id))
        };
        for step in &steps.steps {
            let id = identity(ctx, step);
            let known = self.before.iter().any(|c| c.secret.as_ref() == Some(&id));
            let view = |secret: &SecretId| {
                step.view.as_deref().map(|v| ClusterView {
                    secret: Some(secret.clone()),
                    ..v.clone()
                })
            };
            match &step.action {
                Action::Create => after.extend(view(&step.secret)),
                Action::Update { .. } => {
                    if let (Some(i), Some(v)) = (at(&after, &id), view(&id)) {
                        after[i] = v;
                    }
                }
                Action::Rename { .. } => {
                    if let Some(i) = at(&after, &id) {
                        after.remove(i);
                    }
                    after.extend(view(if known { &id } else { &step.secret }));
                }
                Action::Prune => {
                    if let Some(i) = at(&after, &id) {
                        after.remove(i);
                    }
                }
                Action::Kept { .. } | Action::Unchanged => {}
            }
        }
        after
    }

    /// Each Application the plan makes an ApplicationSet delete, said on it: kpt and kustomize
    /// show results, not plans.
    pub fn report(&self, ctx: &mut Ctx, applications: &Applications) {
        for (set, change) in applications.deletes() {
            let Effect::Delete {
                application,
                leaves,
                resources,
            } = &change.effect
            else {
                continue;
            };
            let Some(app) = self.apps.iter().find(|a| a.id == *application) else {
                continue;
            };
            let severity = match resources {
                appsets::Resources::Undeployed => Severity::Warning,
                _ => Severity::Info,
            };
            let message = format!(
                "ApplicationSet {} will delete this Application once this run's Secrets are applied: {}; {}",
                set.application_set,
                leaves.describe(),
                resources.describe()
            );
            ctx.report(app.index, severity, None, message);
        }
        for set in applications.sets.iter().filter(|s| s.refused.is_some()) {
            let Some(appset) = self.appsets.iter().find(|a| a.id == set.application_set) else {
                continue;
            };
            let message = format!(
                "Argo CD refuses this ApplicationSet: {}; it generates and deletes nothing until that is fixed, whatever this run does",
                set.refused.as_deref().unwrap_or_default()
            );
            ctx.report(appset.index, Severity::Warning, None, message);
        }
        for s in &applications.stranded {
            let Some(app) = self.apps.iter().find(|a| a.id == s.application) else {
                continue;
            };
            let message = format!(
                "its destination ({}) no longer resolves once this run's Secrets are applied: it stops syncing",
                s.destination
            );
            ctx.report(
                app.index,
                Severity::Warning,
                Some("spec.destination"),
                message,
            );
        }
    }
}

/// The cluster a step is about, as the Secret it had before the plan (the Secret the step
/// writes, for a cluster that had none).
pub(super) fn identity(ctx: &Ctx, step: &Step) -> SecretId {
    step.old
        .map(|i| SecretId::of(ctx.object(i)))
        .unwrap_or_else(|| step.secret.clone())
}
