//! Beside the plan: what it makes Argo CD do to Applications. The Argo CD clusters before the
//! plan are the input's cluster Secrets in Argo CD's namespace; after it, the same with every
//! step carried out. The ApplicationSets and Applications of the input are judged against both
//! ([`crate::appsets`]), for the plan to show and for `maxApplicationDeletes` to guard.

use std::collections::HashMap;

use crate::appsets::{
    self, App, AppRef, AppSet, ApplicationEffect, Applications, ClusterView, ControllerPolicy,
    Fleets,
};
use crate::convert::argocd::SECRET_TYPE_LABEL;
use krm::finding::Severity;
use krm::object::SecretId;

use super::context::{Ctx, Output};
use super::decision::{Action, Steps};
use super::found::Scan;

/// What the judgment of a plan's effect on Applications is made from, taken from the scan: the
/// input's ApplicationSets and Applications, the Argo CD clusters before the plan, and the
/// ApplicationSet controller's policy.
pub(super) struct JudgmentInputs {
    appsets: Vec<AppSet>,
    apps: Vec<App>,
    before: Vec<ClusterView>,
    policy: ControllerPolicy,
}

impl JudgmentInputs {
    /// The input's ApplicationSets and Applications, the clusters Argo CD knows now, and the
    /// ApplicationSet controller's policy; `None` when the input holds neither kind (nothing to
    /// judge, nothing spent). Says when the input reads as less than it should — unless the host
    /// `listed` them itself ([`crate::Options::host_listed`]), and none is none.
    pub fn of(
        ctx: &mut Ctx,
        scan: &mut Scan,
        output: Output,
        listed: bool,
    ) -> Option<JudgmentInputs> {
        let appsets = std::mem::take(&mut scan.appsets);
        let apps = std::mem::take(&mut scan.apps);
        if appsets.is_empty() && apps.is_empty() {
            if ctx.config.read_applications && !listed && !ctx.input.items.is_empty() {
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
        // A sealed Secret's name and server cannot be read: the fleet before the plan is not
        // known, so nothing is judged rather than judged wrong.
        let sealed = scan
            .owned
            .iter()
            .filter(|o| crate::seal::is_sealed_secret(ctx.object(o.index)))
            .count();
        if sealed > 0 {
            let message = format!(
                "{sealed} of the Argo CD cluster Secrets are sealed (SealedSecrets): their cluster names and servers cannot be read, so what the plan does to Applications is not judged and maxApplicationDeletes guards nothing (maxPrune and allowRename still hold); plan with the Secrets the Sealed Secrets controller opened them to (kubectl get secrets -n <argoNamespace>) to judge it"
            );
            ctx.report_config(Severity::Warning, None, message);
            return None;
        }
        let argo = &ctx.config.argo_namespace;
        let before = ctx
            .input
            .items
            .iter()
            .map(|item| krm::object::Object::new(&item.node))
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
        Some(JudgmentInputs {
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
        // Each cluster's place, by the Secret it is known by: a removed one leaves a hole.
        let mut after: Vec<Option<ClusterView>> = self.before.iter().cloned().map(Some).collect();
        let mut at: HashMap<SecretId, usize> = self
            .before
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.secret.clone()?, i)))
            .collect();
        fn put(
            after: &mut Vec<Option<ClusterView>>,
            at: &mut HashMap<SecretId, usize>,
            id: &SecretId,
            view: Option<ClusterView>,
        ) {
            match at.get(id) {
                Some(&i) => after[i] = view,
                None => {
                    at.insert(id.clone(), after.len());
                    after.push(view);
                }
            }
        }
        for step in &steps.steps {
            let id = step.secret_before(ctx);
            let known = at.contains_key(&id);
            let view = |secret: &SecretId| {
                step.view.as_deref().map(|v| ClusterView {
                    secret: Some(secret.clone()),
                    ..v.clone()
                })
            };
            match &step.action {
                Action::Create => {
                    if let Some(v) = view(&step.secret) {
                        put(&mut after, &mut at, &step.secret, Some(v));
                    }
                }
                // A Secret Argo CD did not take for a cluster's (its secret-type label lost)
                // becomes one again: a new cluster to the ApplicationSets.
                Action::Update { .. } => {
                    if let Some(v) = view(&id) {
                        put(&mut after, &mut at, &id, Some(v));
                    }
                }
                Action::Rename { .. } => {
                    if known {
                        put(&mut after, &mut at, &id, None);
                    }
                    let to = if known { &id } else { &step.secret };
                    if let Some(v) = view(to) {
                        put(&mut after, &mut at, to, Some(v));
                    }
                }
                Action::Prune if known => put(&mut after, &mut at, &id, None),
                _ => {}
            }
        }
        after.into_iter().flatten().collect()
    }

    /// Each Application the plan makes an ApplicationSet delete, said on it: kpt and kustomize
    /// show results, not plans.
    pub fn report(&self, ctx: &mut Ctx, applications: &Applications) {
        let apps: HashMap<&AppRef, &App> = self.apps.iter().map(|a| (&a.id, a)).collect();
        let appsets: HashMap<&AppRef, &AppSet> = self.appsets.iter().map(|a| (&a.id, a)).collect();
        for (set, change) in applications.deletes() {
            let ApplicationEffect::Delete {
                application,
                leaves,
                resources,
            } = &change.effect
            else {
                continue;
            };
            let Some(app) = apps.get(application) else {
                continue;
            };
            let severity = match resources {
                appsets::ApplicationResources::Undeployed => Severity::Warning,
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
            let Some(appset) = appsets.get(&set.application_set) else {
                continue;
            };
            let message = format!(
                "Argo CD refuses this ApplicationSet: {}",
                set.refused.as_deref().unwrap_or_default()
            );
            ctx.report(appset.index, Severity::Warning, None, message);
        }
        for s in &applications.stranded {
            let Some(app) = apps.get(&s.application) else {
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

#[cfg(test)]
mod tests {
    use super::super::tests::{TOKEN, kubeconfig_secret, owned_secret, run_plan};
    use crate::appsets::{ApplicationEffect, ApplicationResources, Leaves};
    use crate::config::Config;
    use crate::reconcile::Plan;

    /// An ApplicationSet of one generator and a name template.
    fn appset(name: &str, go: bool, generator: &str, template: &str, extra: &str) -> String {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: {name}, namespace: argocd}}\nspec:\n  goTemplate: {go}\n  generators:\n  - {generator}\n  template:\n    metadata:\n      name: '{template}'\n    spec:\n      project: default\n      destination: {{server: '{{{{{}server}}}}', namespace: x}}\n{extra}---\n",
            if go { "." } else { "" }
        )
    }

    /// An Application an ApplicationSet owns, deploying to `server`.
    fn app(name: &str, owner: &str, server: &str, finalizer: bool) -> String {
        let finalizers = if finalizer {
            "  finalizers: [resources-finalizer.argocd.argoproj.io]\n"
        } else {
            ""
        };
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n{finalizers}  ownerReferences:\n  - {{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: {owner}, controller: true}}\nspec:\n  destination: {{server: '{server}', namespace: x}}\n---\n"
        )
    }

    fn server(c: &str) -> String {
        format!("https://{c}.fleet.example:6443")
    }

    /// Each change as `(ApplicationSet, what, Application)`.
    fn effects(plan: &Plan) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for set in &plan.applications.sets {
            for c in &set.changes {
                let (what, app) = match &c.effect {
                    ApplicationEffect::Delete {
                        application,
                        leaves,
                        resources,
                    } => (
                        format!("delete {} {}", leaves.word(), resources.word()),
                        application.name.clone(),
                    ),
                    ApplicationEffect::Keep { application, .. } => {
                        ("keep".into(), application.name.clone())
                    }
                    ApplicationEffect::Create {
                        application, more, ..
                    } => (
                        format!("create{}", if *more { " more" } else { "" }),
                        application
                            .as_ref()
                            .map(|a| a.name.clone())
                            .unwrap_or_default(),
                    ),
                };
                out.push((set.application_set.name.clone(), what, app));
            }
        }
        out
    }

    /// A cluster generator that leaves the local cluster out.
    const SELECTED: &str =
        "clusters: {selector: {matchLabels: {argocd.argoproj.io/secret-type: cluster}}}";

    /// The Secret the first ApplicationSet's change `i` follows from.
    fn cause(plan: &Plan, i: usize) -> Option<String> {
        plan.applications.sets[0].changes[i]
            .cluster
            .clone()
            .map(|c| c.name)
    }

    fn triple(set: &str, what: &str, app: &str) -> (String, String, String) {
        (set.into(), what.into(), app.into())
    }

    #[test]
    fn a_pruned_cluster_loses_its_applications_but_not_their_resources() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-a", "a", &server("a"))
            + &owned_secret("cluster-gone", "gone", &server("gone"))
            + &appset("gb", true, "clusters: {}", "{{.name}}-gb", "")
            + &app("a-gb", "gb", &server("a"), true)
            + &app("gone-gb", "gb", &server("gone"), true)
            + "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: by-hand, namespace: argocd}\nspec:\n  destination: {name: gone, namespace: x}\n";
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(
            effects(&plan),
            [triple("gb", "delete gone orphaned", "gone-gb")]
        );
        assert_eq!(plan.applications.stranded.len(), 1);
        assert_eq!(plan.applications.stranded[0].application.name, "by-hand");
    }

    #[test]
    fn a_renamed_cluster_replaces_the_applications_its_name_is_in() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-a", "a", &server("a"))
            + &appset("by-name", false, "clusters: {}", "{{name}}-gb", "")
            + &appset(
                "by-namespace",
                false,
                "clusters: {}",
                "{{metadata.labels.capi-to-argocd/cluster-namespace}}-gb",
                "",
            )
            + &app("a-gb", "by-name", &server("a"), true)
            + &app("fleet-gb", "by-namespace", &server("a"), true);
        let config = Config {
            namespaced_names: true,
            allow_rename: true,
            ..Config::default()
        };
        let (_, _, plan) = run_plan(&input, &config);
        assert_eq!(
            effects(&plan),
            [
                triple("by-name", "delete renamed undeployed", "a-gb"),
                triple("by-name", "create", "fleet-a-gb"),
            ]
        );
        assert_eq!(cause(&plan, 0), Some("cluster-a".into()));
    }

    #[test]
    fn a_policy_that_deletes_nothing_keeps_them_and_preserved_resources_stay() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-b", "b", &server("b"))
            + &appset(
                "create-only",
                false,
                "clusters: {}",
                "{{name}}-co",
                "  syncPolicy:\n    applicationsSync: create-only\n",
            )
            + &appset(
                "preserve",
                false,
                "clusters: {}",
                "{{name}}-p",
                "  syncPolicy:\n    preserveResourcesOnDeletion: true\n",
            )
            + &app("b-co", "create-only", &server("b"), true)
            + &app("b-p", "preserve", &server("b"), false);
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(
            effects(&plan),
            [
                triple("create-only", "create", "a-co"),
                triple("create-only", "keep", "b-co"),
                triple("preserve", "create", "a-p"),
                triple("preserve", "delete gone preserved", "b-p"),
            ]
        );
        // The controller's own policy wins unless it lets ApplicationSets override it.
        let params = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cmd-params-cm, namespace: argocd}\ndata:\n  applicationsetcontroller.policy: sync\n---\n";
        let (_, results, plan) = run_plan(&(input.clone() + params), &Config::default());
        assert_eq!(
            effects(&plan)[1],
            triple("create-only", "delete gone orphaned", "b-co")
        );
        assert!(results.iter().all(|r| !r.message.contains("otherwise")));
        let said = Config {
            appset_policy: crate::appsets::ControllerPolicy {
                policy: Some("create-update".into()),
                allow_override: None,
            },
            ..Config::default()
        };
        let (_, results, _) = run_plan(&(input + params), &said);
        assert!(
            results.iter().any(|r| r
                .message
                .contains("sets applicationsetcontroller.policy otherwise")),
            "{results:?}"
        );
    }

    #[test]
    fn a_matrix_with_git_finds_a_clusters_applications_by_destination() {
        let git = "matrix:\n      generators:\n      - git: {repoURL: 'https://example.com/r.git', revision: HEAD, directories: [{path: 'addons/*'}]}\n      - clusters: {}";
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-gone", "gone", &server("gone"))
            + &appset("addons", true, git, "{{.path.basename}}-{{.name}}", "")
            + &app("metrics-gone", "addons", &server("gone"), true)
            + &app("logs-gone", "addons", &server("gone"), true);
        // Both go: more than maxApplicationDeletes lets through by default.
        let (_, _, held) = run_plan(&input, &Config::default());
        assert_eq!(held.guards[0].applications.len(), 2);
        let config = Config {
            max_application_deletes: crate::config::MaxPrune::Percent(100),
            ..Config::default()
        };
        let (_, _, plan) = run_plan(&input, &config);
        assert_eq!(
            effects(&plan),
            [
                triple("addons", "create more", ""),
                triple("addons", "delete gone orphaned", "metrics-gone"),
                triple("addons", "delete gone orphaned", "logs-gone"),
            ]
        );
        assert!(
            plan.applications.sets[0].beyond[0].contains("git generator"),
            "{:?}",
            plan.applications.sets[0].beyond
        );
    }

    #[test]
    fn a_relabelled_cluster_leaves_one_selector_and_enters_another() {
        let labelled = owned_secret("cluster-a", "a", &server("a")).replace(
            "    capi-to-argocd/owned: \"true\"\n",
            "    capi-to-argocd/owned: \"true\"\n    env: prod\n",
        );
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &labelled
            + &appset(
                "prod",
                false,
                "clusters: {selector: {matchLabels: {env: prod}}}",
                "{{name}}-prod",
                "",
            )
            + &appset(
                "unlabelled",
                false,
                "clusters: {selector: {matchExpressions: [{key: env, operator: DoesNotExist}]}}",
                "{{name}}-plain",
                "",
            )
            + &app("a-prod", "prod", &server("a"), true);
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(
            effects(&plan),
            [
                triple("prod", "delete deselected undeployed", "a-prod"),
                triple("unlabelled", "create", "a-plain"),
            ]
        );
        assert!(matches!(
            plan.applications.sets[0].changes[0].effect,
            ApplicationEffect::Delete {
                leaves: Leaves::Deselected,
                resources: ApplicationResources::Undeployed,
                ..
            }
        ));
    }

    /// Regression: the local cluster's entry was never judged, so a Secret of its server
    /// deleted its Applications unsaid, and no guard could hold it.
    #[test]
    fn regression_a_secret_of_the_local_cluster_s_server_replaces_its_entry() {
        let local = kubeconfig_secret("mgmt-kubeconfig", TOKEN).replace(
            "https://mgmt.fleet.example:6443",
            crate::appsets::IN_CLUSTER_SERVER,
        );
        let input = kubeconfig_secret("b-kubeconfig", TOKEN)
            + &local
            + &owned_secret("cluster-b", "b", &server("b"))
            + &appset("gb", false, "clusters: {}", "{{name}}-gb", "")
            + &app("b-gb", "gb", &server("b"), true)
            + &app(
                "in-cluster-gb",
                "gb",
                crate::appsets::IN_CLUSTER_SERVER,
                true,
            );
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(
            effects(&plan),
            [
                triple("gb", "create", "mgmt-gb"),
                triple("gb", "delete replaced undeployed", "in-cluster-gb"),
            ]
        );
        // Caused by the new Secret, which the guard then holds.
        assert_eq!(cause(&plan, 1), Some("cluster-mgmt".into()));
        // Two of four: more than maxApplicationDeletes lets through; the create is held.
        let addons = "matrix:\n      generators:\n      - clusters: {}\n      - list: {elements: [{addon: x}, {addon: y}]}";
        let input = kubeconfig_secret("b-kubeconfig", TOKEN)
            + &local
            + &owned_secret("cluster-b", "b", &server("b"))
            + &appset("addons", false, addons, "{{name}}-{{addon}}", "")
            + &app("b-x", "addons", &server("b"), true)
            + &app("b-y", "addons", &server("b"), true)
            + &app(
                "in-cluster-x",
                "addons",
                crate::appsets::IN_CLUSTER_SERVER,
                true,
            )
            + &app(
                "in-cluster-y",
                "addons",
                crate::appsets::IN_CLUSTER_SERVER,
                true,
            );
        let (_, _, plan) = run_plan(&input, &Config::default());
        let mgmt = plan
            .entries
            .iter()
            .find(|e| e.secret.name == "cluster-mgmt");
        assert!(
            mgmt.is_some_and(|e| matches!(e.action, crate::reconcile::Action::Kept { .. })),
            "{:?}",
            plan.entries
        );
        assert_eq!(plan.guards[0].applications.len(), 2);
    }

    /// Regression: a cluster's Application was said to be deleted though another set still
    /// generates it: another Secret of the cluster's name, or a list entry.
    #[test]
    fn regression_an_application_another_set_still_generates_is_not_deleted() {
        let by_hand = owned_secret("cluster-a-manual", "a", &server("a"))
            .replace("    capi-to-argocd/owned: \"true\"\n", "");
        let input = kubeconfig_secret("b-kubeconfig", TOKEN)
            + &owned_secret("cluster-b", "b", &server("b"))
            + &owned_secret("cluster-a", "a", &server("a"))
            + &by_hand
            + &appset("gb", false, SELECTED, "{{name}}-gb", "")
            + &app("a-gb", "gb", &server("a"), true)
            + &app("b-gb", "gb", &server("b"), true);
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(effects(&plan), Vec::<(String, String, String)>::new());
        let listed = "clusters: {selector: {matchLabels: {argocd.argoproj.io/secret-type: cluster}}}\n  - list: {elements: [{name: a, server: 'https://a.fleet.example:6443'}]}";
        let input = kubeconfig_secret("b-kubeconfig", TOKEN)
            + &owned_secret("cluster-b", "b", &server("b"))
            + &owned_secret("cluster-a", "a", &server("a"))
            + &appset("gb", false, listed, "{{name}}-gb", "")
            + &app("a-gb", "gb", &server("a"), true)
            + &app("b-gb", "gb", &server("b"), true);
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(effects(&plan), Vec::<(String, String, String)>::new());
    }

    /// Regression: refusals were judged over the changed clusters alone. A value that fails
    /// for a cluster the run leaves alone refuses the ApplicationSet before and after (nothing
    /// is deleted); one that fails only for the cluster the run prunes makes it work again,
    /// and it then deletes every Application it no longer generates.
    #[test]
    fn regression_refusals_are_judged_over_the_whole_fleet() {
        // A selector leaves the local cluster out (it has no metadata: the value fails on it).
        let values = "clusters:\n      selector: {matchLabels: {argocd.argoproj.io/secret-type: cluster}}\n      values: {env: '{{.metadata.labels.env}}'}";
        let labelled = |name: &str, cluster: &str| {
            owned_secret(name, cluster, &server(cluster)).replace(
                "    capi-to-argocd/owned: \"true\"\n",
                "    capi-to-argocd/owned: \"true\"\n    env: prod\n",
            )
        };
        let options = "  goTemplateOptions: [missingkey=error]\n";
        let set = appset("gb", true, values, "{{.name}}-gb", "")
            .replace("  generators:", &format!("{options}  generators:"));
        // `bad` has no env label and stays: refused before and after.
        let stays = kubeconfig_secret("bad-kubeconfig", TOKEN)
            + &owned_secret("cluster-bad", "bad", &server("bad"))
            + &labelled("cluster-gone", "gone")
            + &set
            + &app("gone-gb", "gb", &server("gone"), true);
        let (_, _, plan) = run_plan(&stays, &Config::default());
        assert_eq!(effects(&plan), Vec::<(String, String, String)>::new());
        assert!(plan.applications.sets[0].refused.is_some());
        // `bad` goes: the ApplicationSet works again, and deletes what it does not generate.
        let goes = kubeconfig_secret("x-kubeconfig", TOKEN)
            + &labelled("cluster-x", "x")
            + &owned_secret("cluster-bad", "bad", &server("bad"))
            + &set
            + &app("x-gb", "gb", &server("x"), true)
            + &app("old-gb", "gb", &server("x"), true);
        // The run writes env on every cluster it converts.
        let mut config = Config {
            max_application_deletes: crate::config::MaxPrune::Percent(100),
            ..Config::default()
        };
        config.defaults.labels.insert("env".into(), "prod".into());
        let (_, _, plan) = run_plan(&goes, &config);
        let deleted: Vec<String> = effects(&plan)
            .into_iter()
            .map(|(_, w, a)| format!("{w} {a}"))
            .collect();
        assert!(
            deleted.contains(&"delete ungenerated undeployed old-gb".to_string()),
            "{deleted:?}"
        );
        assert_eq!(cause(&plan, 0), Some("cluster-bad".into()));
    }

    /// Regression: a name another controller's Application holds was said to be created; Argo
    /// CD fails to take it over and stops, creating and deleting nothing.
    #[test]
    fn regression_a_name_another_controller_holds_stops_the_application_set() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-gone", "gone", &server("gone"))
            + &appset("gb", false, SELECTED, "{{name}}-gb", "")
            + &app("gone-gb", "gb", &server("gone"), true)
            + &app("a-gb", "other", &server("a"), true);
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(effects(&plan), Vec::<(String, String, String)>::new());
        let why = plan.applications.sets[0]
            .refused
            .clone()
            .unwrap_or_default();
        assert!(why.contains("argocd/a-gb"), "{why}");
    }

    /// Regression: an Application its ApplicationSet writes again (its destination follows
    /// the cluster's new name) was said to lose its cluster.
    #[test]
    fn regression_an_application_its_set_rewrites_is_not_stranded() {
        let by_name = "    spec:\n      project: default\n      destination: {server: '{{server}}', namespace: x}";
        let set = appset("one", false, "clusters: {}", "app-of-{{metadata.labels.capi-to-argocd/cluster-secret-name}}", "")
            .replace(by_name, "    spec:\n      project: default\n      destination: {name: '{{name}}', namespace: x}");
        let named = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: app-of-a-kubeconfig\n  namespace: argocd\n  ownerReferences:\n  - {apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: one, controller: true}\nspec:\n  destination: {name: a, namespace: x}\n---\n";
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &owned_secret("cluster-a", "a", &server("a"))
            + &set
            + named;
        let config = Config {
            namespaced_names: true,
            allow_rename: true,
            ..Config::default()
        };
        let (_, _, plan) = run_plan(&input, &config);
        assert!(
            plan.applications.stranded.is_empty(),
            "{:?}",
            plan.applications.stranded
        );
    }

    /// Regression: an invalid name a template gave was printed whole, a server URL's password
    /// with it.
    #[test]
    fn regression_an_invalid_name_is_never_printed() {
        let secret = kubeconfig_secret("c-kubeconfig", TOKEN).replace(
            "https://c.fleet.example",
            "https://admin:S3cretPassw0rd@c.fleet.example",
        );
        let input = secret
            + &owned_secret("cluster-b", "b", &server("b"))
            + &appset("gb", false, "clusters: {}", "{{server}}", "");
        // What the run says (its output holds the input's own Secrets as they are).
        let (_, results, plan) = run_plan(&input, &Config::default());
        let said = format!("{results:?}{:?}", plan.applications);
        assert!(!said.contains("S3cretPassw0rd"), "{said}");
        assert!(said.contains("not a valid name"), "{said}");
    }

    /// Regression: a guard held a prune and let the create of the same server through (a
    /// kubeconfig Secret moved to another namespace under namespacedNames): two Argo CD
    /// clusters of one server.
    #[test]
    fn regression_a_create_of_a_held_secret_s_server_is_held_with_it() {
        let moved = |c: &str| {
            kubeconfig_secret(&format!("{c}-kubeconfig"), TOKEN)
                .replace("namespace: fleet", "namespace: fleet2")
        };
        let owned = |c: &str| {
            owned_secret(&format!("cluster-fleet-{c}"), c, &server(c))
                .replace(&format!("  name: {c}\n"), &format!("  name: fleet-{c}\n"))
        };
        let input = moved("a")
            + &moved("b")
            + &owned("a")
            + &owned("b")
            + &kubeconfig_secret("k-kubeconfig", TOKEN)
            + &owned("k");
        let config = Config {
            namespaced_names: true,
            max_prune: crate::config::MaxPrune::Count(1),
            ..Config::default()
        };
        let (_, _, plan) = run_plan(&input, &config);
        let creates: Vec<String> = plan
            .entries
            .iter()
            .filter(|e| matches!(e.action, crate::reconcile::Action::Create))
            .map(|e| e.secret.name.clone())
            .collect();
        assert!(creates.is_empty(), "{creates:?}");
    }

    /// Regression: a Secret whose secret-type label a run puts back is a cluster to Argo CD
    /// again; its Applications were not said to be created.
    #[test]
    fn regression_a_secret_argo_cd_takes_again_enters_the_selectors() {
        let lost = owned_secret("cluster-a", "a", &server("a"))
            .replace("    argocd.argoproj.io/secret-type: cluster\n", "");
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            + &lost
            + &appset("gb", false, "clusters: {}", "{{name}}-gb", "");
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(effects(&plan), [triple("gb", "create", "a-gb")]);
    }

    #[test]
    fn nothing_is_judged_or_said_without_applicationsets_or_applications() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN);
        let (_, results, plan) = run_plan(&input, &Config::default());
        assert!(plan.applications.sets.is_empty());
        assert!(results.iter().all(|r| !r.message.contains("Application")));
        let asked = Config {
            read_applications: true,
            ..Config::default()
        };
        let (_, results, _) = run_plan(&input, &asked);
        assert!(
            results
                .iter()
                .any(|r| r.message.contains("readApplications=true")),
            "{results:?}"
        );
    }
}
