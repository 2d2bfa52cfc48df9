//! The judgment: for the Argo CD clusters before and after a plan, what each ApplicationSet's
//! controller then does to its Applications, cluster by cluster, and which other Applications
//! lose the cluster they deploy to.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::argo::{AppRef, IN_CLUSTER_SERVER};
use super::effects::{
    AppChange, AppSetPlan, ApplicationEffect, ApplicationResources, Applications, Leaves, Stranded,
};
use super::generators::{ClusterKey, Eval, Set, Unjudged};
use super::ordered::{ordered, ordered_map};
use super::params::Lookup;
use super::policy::ControllerPolicy;
use super::read::{App, AppSet, ClusterView, GenKind, Generator};
use super::template::{Rendered, Template};
use crate::convert::meta::is_dns1123_subdomain;
use krm::object::SecretId;

/// The Argo CD clusters before and after a plan. A cluster after it is known by the Secret it
/// had before (`ClusterView::secret`) when the plan renames its Secret, by its own when new.
#[derive(Debug, Default)]
pub struct Fleets {
    pub before: Vec<ClusterView>,
    pub after: Vec<ClusterView>,
}

/// Judges every ApplicationSet against the clusters before and after the plan.
pub(crate) fn judge(
    appsets: &[AppSet],
    apps: &[App],
    fleets: &Fleets,
    policy: &ControllerPolicy,
) -> Applications {
    let before: HashMap<ClusterKey, &ClusterView> = fleets
        .before
        .iter()
        .map(|c| (ClusterKey::of(c), c))
        .collect();
    let after: HashMap<ClusterKey, &ClusterView> = fleets
        .after
        .iter()
        .map(|c| (ClusterKey::of(c), c))
        .collect();
    let mut changed: Vec<ClusterKey> = ordered(
        before
            .iter()
            .filter(|(k, v)| after.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .chain(after.keys().filter(|k| !before.contains_key(*k)).cloned()),
    )
    .into_iter()
    .collect();
    if changed.is_empty() {
        return Applications::default();
    }
    // The local cluster's entry goes when a Secret of its server comes, and comes back when
    // the last one goes (cluster.go): the Secret that moves it is what causes its changes.
    let local_cause = changed
        .iter()
        .find(|k| {
            [before.get(*k), after.get(*k)]
                .into_iter()
                .flatten()
                .any(|v| v.server.trim_end_matches('/') == IN_CLUSTER_SERVER)
        })
        .and_then(|k| match k {
            ClusterKey::Secret(id) => Some(id.clone()),
            ClusterKey::InCluster => None,
        });
    if local_cause.is_some() {
        changed.push(ClusterKey::InCluster);
    }
    let reach_before = Reach::of(&fleets.before);
    let reach_after = Reach::of(&fleets.after);
    // Every Application by name: a name a template gives that another's Application has is a
    // collision, not a create.
    let by_name: HashMap<(&str, &str), &App> = apps
        .iter()
        .map(|a| ((a.id.namespace.as_str(), a.id.name.as_str()), a))
        .collect();
    let judge = Judge {
        changed: &changed,
        before: &before,
        after: &after,
        fleets,
        reach_after: &reach_after,
        policy,
        local_cause: local_cause.as_ref(),
        apps: &by_name,
    };
    let mut owned_by: HashMap<(&str, &str), Vec<&App>> = HashMap::new();
    for a in apps.iter().filter(|a| !a.deleting) {
        if let Some(owner) = &a.owner {
            owned_by
                .entry((a.id.namespace.as_str(), owner.as_str()))
                .or_default()
                .push(a);
        }
    }
    let order = ordered_map(appsets.iter().filter(|s| !s.deleting).map(|s| (&s.id, s)));
    let mut sets = Vec::new();
    // Applications their ApplicationSet writes again after the plan (its template's
    // destination with them): they follow their cluster, never stranded.
    let mut rewritten: HashSet<AppRef> = HashSet::new();
    for appset in order.into_values() {
        let key = (appset.id.namespace.as_str(), appset.id.name.as_str());
        let owned = owned_by.remove(&key).unwrap_or_default();
        let plan = judge.appset(appset, &owned, &mut rewritten);
        if plan.refused.is_some() || !plan.beyond.is_empty() || !plan.changes.is_empty() {
            sets.push(plan);
        }
    }
    // Applications that stay but lose the cluster they deploy to.
    let gone: HashSet<&AppRef> = sets
        .iter()
        .flat_map(|s| s.deletes())
        .filter_map(|c| match &c.effect {
            ApplicationEffect::Delete { application, .. } => Some(application),
            _ => None,
        })
        .collect();
    let stranded: Vec<Stranded> = ordered_map(
        apps.iter()
            .filter(|a| !a.deleting && !gone.contains(&a.id) && !rewritten.contains(&a.id))
            .filter(|a| reach_before.resolves(a) && !reach_after.resolves(a))
            .map(|a| {
                let destination = match (&a.destination_name, &a.server) {
                    (Some(n), _) => format!("name {n}"),
                    (None, Some(s)) => format!("server {s}"),
                    (None, None) => String::new(),
                };
                (&a.id, destination)
            }),
    )
    .into_iter()
    .map(|(application, destination)| Stranded {
        application: application.clone(),
        destination,
    })
    .collect();
    Applications { sets, stranded }
}

/// Which destinations resolve to a cluster Argo CD knows (util/argo's `GetDestinationServer`:
/// a name must be one cluster's; a server must be a cluster's, or the local one's).
struct Reach {
    servers: HashSet<String>,
    names: HashMap<String, usize>,
}

impl Reach {
    fn of(fleet: &[ClusterView]) -> Reach {
        let mut names: HashMap<String, usize> = HashMap::new();
        for c in fleet {
            *names.entry(c.name.clone()).or_default() += 1;
        }
        Reach {
            servers: fleet
                .iter()
                .map(|c| c.server.trim_end_matches('/').to_string())
                .collect(),
            names,
        }
    }

    fn resolves(&self, app: &App) -> bool {
        match (&app.destination_name, &app.server) {
            (Some(_), Some(_)) | (None, None) => true,
            (Some(name), None) => {
                self.names.get(name) == Some(&1)
                    || (name == "in-cluster" && !self.names.contains_key(name))
            }
            (None, Some(server)) => {
                let server = server.trim_end_matches('/');
                server == IN_CLUSTER_SERVER || self.servers.contains(server)
            }
        }
    }
}

struct Judge<'j> {
    changed: &'j [ClusterKey],
    before: &'j HashMap<ClusterKey, &'j ClusterView>,
    after: &'j HashMap<ClusterKey, &'j ClusterView>,
    fleets: &'j Fleets,
    reach_after: &'j Reach,
    policy: &'j ControllerPolicy,
    /// The Secret whose coming or going moves the local cluster's entry.
    local_cause: Option<&'j SecretId>,
    /// Every Application, by namespace and name.
    apps: &'j HashMap<(&'j str, &'j str), &'j App>,
}

/// A parameter set, with the name its generator's template gives it (when computed).
struct Named<'s> {
    generator: usize,
    set: &'s Set,
    name: Option<String>,
}

/// What an ApplicationSet generates for one fleet: its sets, named.
struct Generated<'s> {
    named: Vec<Named<'s>>,
    /// The names computed, of every set (a cluster's or not).
    names: HashSet<String>,
}

impl Generated<'_> {
    /// The sets of each cluster, by their place in `named`.
    fn by_cluster(&self) -> HashMap<&ClusterKey, Vec<usize>> {
        let mut by: HashMap<&ClusterKey, Vec<usize>> = HashMap::new();
        for (i, n) in self.named.iter().enumerate() {
            if let Some(k) = &n.set.cluster {
                by.entry(k).or_default().push(i);
            }
        }
        by
    }
}

impl Judge<'_> {
    fn appset(
        &self,
        appset: &AppSet,
        owned: &[&App],
        rewritten: &mut HashSet<AppRef>,
    ) -> AppSetPlan {
        let (policy, deletes) = self.policy.effective(appset.sync.as_deref());
        let updates = matches!(policy.as_str(), "sync" | "create-update");
        let mut plan = AppSetPlan {
            application_set: appset.id.clone(),
            applications: owned.len(),
            policy,
            refused: None,
            beyond: Vec::new(),
            changes: Vec::new(),
        };
        let templates: Vec<Template> = appset
            .generators
            .iter()
            .map(|g| name_template(appset, g))
            .collect();
        // Every cluster, as the controller sees the whole fleet: a value or a name that fails
        // for any one of them fails the ApplicationSet.
        let sets = |fleet: &[ClusterView], beyond: &mut Vec<String>| {
            let eval = Eval {
                fleet,
                local: true,
                syntax: appset.syntax,
            };
            sets_of(appset, &eval, beyond)
        };
        let sets_before = sets(&self.fleets.before, &mut plan.beyond);
        let sets_after = sets(&self.fleets.after, &mut plan.beyond);
        let owned_names: HashSet<&str> = owned.iter().map(|a| a.id.name.as_str()).collect();
        let (gen_before, gen_after) = (
            self.generate(appset, &sets_before, &templates, &owned_names),
            self.generate(appset, &sets_after, &templates, &owned_names),
        );
        if let Ok(sets) = &sets_before {
            if let Some(note) = unknown_parameters(appset, sets) {
                plan.beyond.push(note);
            }
        }
        let (gen_before, gen_after) = match (gen_before, gen_after) {
            (Ok(b), Ok(a)) => (b, a),
            (Err(why), Err(_)) => {
                plan.refused = Some(format!(
                    "{why}; it generates, updates and deletes nothing, whatever this run does"
                ));
                return plan;
            }
            (Ok(_), Err(why)) => {
                plan.refused = Some(format!(
                    "{why}, once this run's Secrets are applied: it then generates, updates and deletes nothing until that is fixed"
                ));
                return plan;
            }
            (Err(why), Ok(after)) => {
                // This run makes it work again: it then deletes every Application it no longer
                // generates, whatever cluster it deployed to.
                let cause = self.refusal_cause(appset, &templates);
                let note = format!(
                    "Argo CD refuses it before this run ({why}), not after: what it no longer generates is deleted then"
                );
                plan.beyond.push(note);
                let unnamed = after.named.iter().any(|n| n.name.is_none());
                for app in owned {
                    if after.names.contains(app.id.name.as_str()) {
                        if updates {
                            rewritten.insert(app.id.clone());
                        }
                        continue;
                    }
                    if unnamed {
                        continue;
                    }
                    let effect = self.leaving(appset, &plan, app, Leaves::Ungenerated, deletes);
                    plan.changes.push(AppChange {
                        cluster: cause.clone(),
                        effect,
                    });
                }
                return plan;
            }
        };
        if updates {
            rewritten.extend(
                owned
                    .iter()
                    .filter(|a| gen_after.names.contains(a.id.name.as_str()))
                    .map(|a| a.id.clone()),
            );
        }
        // Looked up by cluster, by name and by destination: a fleet's worth of clusters and
        // Applications is judged in one pass each.
        let (by_before, by_after) = (gen_before.by_cluster(), gen_after.by_cluster());
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        let mut by_server: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut by_destination: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, app) in owned.iter().enumerate() {
            by_name.insert(app.id.name.as_str(), i);
            if let Some(server) = &app.server {
                by_server
                    .entry(server.trim_end_matches('/'))
                    .or_default()
                    .push(i);
            }
            if let Some(name) = &app.destination_name {
                by_destination.entry(name.as_str()).or_default().push(i);
            }
        }
        let none = Vec::new();
        for key in self.changed {
            let b: Vec<&Named> = by_before
                .get(key)
                .unwrap_or(&none)
                .iter()
                .map(|&i| &gen_before.named[i])
                .collect();
            let a: Vec<&Named> = by_after
                .get(key)
                .unwrap_or(&none)
                .iter()
                .map(|&i| &gen_after.named[i])
                .collect();
            if b.len() == a.len()
                && b.iter()
                    .zip(&a)
                    .all(|(x, y)| x.generator == y.generator && x.set == y.set)
            {
                continue;
            }
            let cluster = match key {
                ClusterKey::Secret(id) => Some(id.clone()),
                ClusterKey::InCluster => self.local_cause.cloned(),
            };
            let push = |plan: &mut AppSetPlan, effect| {
                plan.changes.push(AppChange {
                    cluster: cluster.clone(),
                    effect,
                })
            };
            let names_before = ordered(b.iter().filter_map(|n| n.name.as_deref()));
            let names_after = ordered(a.iter().filter_map(|n| n.name.as_deref()));
            let unnamed_before = b.iter().any(|n| n.name.is_none());
            let unnamed_after = a.iter().any(|n| n.name.is_none());
            let renames =
                |generator: usize| reads_changed(&templates[generator], generator, &b, &a);
            let view = match key {
                ClusterKey::InCluster => Some(ClusterView::in_cluster()),
                _ => self.before.get(key).map(|v| (*v).clone()),
            };
            let leaves = if !a.is_empty() {
                Leaves::Renamed
            } else if *key == ClusterKey::InCluster {
                Leaves::Replaced
            } else if self.after.contains_key(key) {
                Leaves::Deselected
            } else {
                Leaves::Gone
            };
            // Its Applications: those its sets name, and where a name is not computed, those that
            // deploy to it.
            let mut apps = ordered(names_before.iter().filter_map(|n| by_name.get(n).copied()));
            if let (true, Some(v)) = (unnamed_before, view.as_ref()) {
                let server = by_server.get(v.server.trim_end_matches('/'));
                let name = by_destination.get(v.name.as_str());
                apps.extend(server.into_iter().chain(name).flatten().copied());
            }
            for app in apps.into_iter().map(|i| owned[i]) {
                // Another set still generates it (another Secret of the cluster's name, a list
                // entry, another generator): it is updated, not deleted.
                if names_after.contains(app.id.name.as_str())
                    || gen_after.names.contains(app.id.name.as_str())
                {
                    continue;
                }
                let deleted = a.is_empty()
                    || !unnamed_after
                    || b.iter().any(|n| n.name.is_none() && renames(n.generator));
                if !deleted {
                    continue;
                }
                let effect = self.leaving(appset, &plan, app, leaves, deletes);
                push(&mut plan, effect);
            }
            for n in &a {
                let effect = match &n.name {
                    Some(name) if gen_before.names.contains(name.as_str()) => continue,
                    Some(name) if owned_names.contains(name.as_str()) => continue,
                    // Another Application of that name, controlled by nothing: taken over.
                    Some(name)
                        if self
                            .apps
                            .contains_key(&(appset.id.namespace.as_str(), name.as_str())) =>
                    {
                        continue;
                    }
                    // The controller's validation refuses it: it is never created.
                    Some(name) if !is_dns1123_subdomain(name) => {
                        // The name itself is not said: it may hold what the cluster's server
                        // URL holds, a password included.
                        let cluster = match n.set.params.get("name") {
                            Lookup::Found(c) => format!(" for cluster {c}"),
                            _ => String::new(),
                        };
                        let note = format!(
                            "its template's metadata.name gives an Application name{cluster} that is not a valid name: Argo CD does not create it"
                        );
                        if !plan.beyond.contains(&note) {
                            plan.beyond.push(note);
                        }
                        continue;
                    }
                    Some(name) => ApplicationEffect::Create {
                        application: Some(AppRef {
                            namespace: appset.id.namespace.clone(),
                            name: name.clone(),
                        }),
                        more: false,
                    },
                    None => {
                        let entering = !b.iter().any(|x| x.generator == n.generator);
                        if !entering && !renames(n.generator) {
                            continue;
                        }
                        ApplicationEffect::Create {
                            application: None,
                            more: !n.set.params.is_complete(),
                        }
                    }
                };
                push(&mut plan, effect);
            }
        }
        plan
    }

    /// What the ApplicationSet does to an Application it no longer generates: deletes it, or
    /// keeps it under a policy that deletes nothing.
    fn leaving(
        &self,
        appset: &AppSet,
        plan: &AppSetPlan,
        app: &App,
        leaves: Leaves,
        deletes: bool,
    ) -> ApplicationEffect {
        if deletes {
            ApplicationEffect::Delete {
                application: app.id.clone(),
                leaves,
                resources: self.resources(appset, app),
            }
        } else {
            ApplicationEffect::Keep {
                application: app.id.clone(),
                leaves,
                policy: plan.policy.clone(),
            }
        }
    }

    /// What the ApplicationSet generates from these sets: named, and no name another
    /// controller's Application has; `Err`: why Argo CD refuses it.
    fn generate<'s>(
        &self,
        appset: &AppSet,
        sets: &'s Result<Vec<(usize, Vec<Set>)>, String>,
        templates: &[Template],
        owned: &HashSet<&str>,
    ) -> Result<Generated<'s>, String> {
        let sets = sets.as_ref().map_err(Clone::clone)?;
        let g = generated(sets, templates)?;
        self.collision(appset, &g, owned)?;
        Ok(g)
    }

    /// A name the ApplicationSet generates that an Application of another controller has:
    /// the controller fails to take it over (`SetControllerReference`) and stops there,
    /// deleting nothing.
    fn collision(
        &self,
        appset: &AppSet,
        g: &Generated,
        owned: &HashSet<&str>,
    ) -> Result<(), String> {
        let ns = appset.id.namespace.as_str();
        let taken = ordered(
            g.names
                .iter()
                .filter(|n| !owned.contains(n.as_str()))
                .filter_map(|n| {
                    let other = self.apps.get(&(ns, n.as_str()))?;
                    other.controlled.then_some(other)
                })
                .map(|a| &a.id),
        );
        match taken.into_iter().next() {
            None => Ok(()),
            Some(id) => Err(format!(
                "its template names Application {id}, which another controller (ApplicationSet or not) controls: Argo CD fails to take it over"
            )),
        }
    }

    /// The changed cluster whose Secret as it was made Argo CD refuse the ApplicationSet (a
    /// value or a name that fails for it): what a guard holds to keep it refused.
    fn refusal_cause(&self, appset: &AppSet, templates: &[Template]) -> Option<SecretId> {
        self.changed.iter().find_map(|k| {
            let ClusterKey::Secret(id) = k else {
                return None;
            };
            let view = (*self.before.get(k)?).clone();
            let fleet = [view];
            let eval = Eval {
                fleet: &fleet,
                local: false,
                syntax: appset.syntax,
            };
            let fails = match sets_of(appset, &eval, &mut Vec::new()) {
                Err(_) => true,
                Ok(sets) => generated(&sets, templates).is_err(),
            };
            fails.then(|| id.clone())
        })
    }

    /// What becomes of a deleted Application's resources.
    fn resources(&self, appset: &AppSet, app: &App) -> ApplicationResources {
        if !app.undeploys() {
            return if appset.preserve {
                ApplicationResources::Preserved
            } else {
                ApplicationResources::NoFinalizer
            };
        }
        if self.reach_after.resolves(app) {
            ApplicationResources::Undeployed
        } else {
            ApplicationResources::Orphaned
        }
    }
}

/// What the plan says of a cluster's sets that another generator adds unknown parameters to.
fn unknown_parameters(appset: &AppSet, sets: &[(usize, Vec<Set>)]) -> Option<String> {
    let mut kinds = BTreeSet::new();
    for (i, sets) in sets {
        if sets
            .iter()
            .any(|s| s.cluster.is_some() && !s.params.is_complete())
        {
            other_kinds(&appset.generators[*i], &mut kinds);
        }
    }
    (!kinds.is_empty()).then(|| {
        format!(
            "the parameters its {} generator gives are not known here: a cluster's Applications are found by their destination, and a new cluster's are counted, not named",
            kinds.into_iter().collect::<Vec<_>>().join(" and ")
        )
    })
}

/// The kinds of generator whose parameters the plan cannot know, within a generator.
fn other_kinds<'g>(generator: &'g Generator, out: &mut BTreeSet<&'g str>) {
    match &generator.kind {
        GenKind::Other(kind) => {
            out.insert(kind);
        }
        GenKind::List { more: true, .. } => {
            out.insert("list (elementsYaml)");
        }
        GenKind::Matrix(children) => children.iter().for_each(|c| other_kinds(c, out)),
        GenKind::Merge { generators, .. } => generators.iter().for_each(|c| other_kinds(c, out)),
        _ => {}
    }
}

/// Each generator's parameter sets for one fleet; `Err` when Argo CD refuses one (it then
/// generates nothing at all). What the plan cannot judge is noted in `beyond`.
fn sets_of(
    appset: &AppSet,
    eval: &Eval,
    beyond: &mut Vec<String>,
) -> Result<Vec<(usize, Vec<Set>)>, String> {
    let mut out = Vec::new();
    for (i, g) in appset.generators.iter().enumerate() {
        match eval.sets(g) {
            Ok(sets) => out.push((i, sets)),
            Err(Unjudged::Refused(why)) => return Err(why),
            Err(Unjudged::Beyond(why)) => {
                if !beyond.contains(&why) {
                    beyond.push(why);
                }
            }
        }
    }
    Ok(out)
}

/// Every set with the name its generator's template gives it; `Err` when the controller fails
/// to render one (it then generates nothing at all).
fn generated<'s>(
    sets: &'s [(usize, Vec<Set>)],
    templates: &[Template],
) -> Result<Generated<'s>, String> {
    let mut named = Vec::new();
    let mut names = HashSet::new();
    for (i, sets) in sets {
        for set in sets {
            let name = match templates[*i].render(&set.params) {
                Rendered::Text(t) => Some(t),
                Rendered::NotComputed => None,
                Rendered::Failed(why) => {
                    return Err(format!("its template's metadata.name fails: {why}"));
                }
            };
            if let Some(n) = &name {
                names.insert(n.clone());
            }
            named.push(Named {
                generator: *i,
                set,
                name,
            });
        }
    }
    Ok(Generated { named, names })
}

/// Whether a generator's name template reads a parameter whose value differs between the
/// cluster's sets before and after.
fn reads_changed(
    template: &Template,
    generator: usize,
    before: &[&Named],
    after: &[&Named],
) -> bool {
    let reads = template.reads();
    let b = before.iter().filter(|n| n.generator == generator);
    let a = after.iter().filter(|n| n.generator == generator);
    b.zip(a).any(|(x, y)| {
        x.set
            .params
            .differing(&y.set.params)
            .iter()
            .any(|k| reads.reads(k))
    })
}

/// The name template a generator's Applications get: its own template's, else the
/// ApplicationSet's (mergeGeneratorTemplate). A `templatePatch` that writes metadata may change
/// it: not computed then.
fn name_template(appset: &AppSet, generator: &Generator) -> Template {
    if appset.patched {
        return Template::opaque();
    }
    let text = generator
        .name
        .as_deref()
        .or(appset.name.as_deref())
        .unwrap_or_default();
    Template::parse(text, appset.syntax)
}
