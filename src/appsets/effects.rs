//! The judgment: for the Argo CD clusters before and after a plan, what each ApplicationSet's
//! controller then does to its Applications, cluster by cluster, and which other Applications
//! lose the cluster they deploy to.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::params::{ClusterKey, Eval, Set, Unjudged};
use super::read::{App, AppSet, ClusterView, GenKind, Generator};
use super::template::{Rendered, Template};
use super::{AppRef, ControllerPolicy, IN_CLUSTER_SERVER, ordered, ordered_map};
use crate::convert::meta::is_dns1123_subdomain;
use crate::krm::object::SecretId;

/// The Argo CD clusters before and after a plan. A cluster after it is known by the Secret it
/// had before (`ClusterView::secret`) when the plan renames its Secret, by its own when new.
#[derive(Debug, Default)]
pub struct Fleets {
    pub before: Vec<ClusterView>,
    pub after: Vec<ClusterView>,
}

/// Why an Application goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaves {
    /// Its cluster's Secret is removed.
    Gone,
    /// Its cluster's Secret no longer matches the generator's selector.
    Deselected,
    /// Its cluster's parameters change its Application's name (a renamed cluster): the
    /// Application is replaced by one of the new name.
    Renamed,
}

impl Leaves {
    /// Why, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Leaves::Gone => "its cluster is removed from Argo CD",
            Leaves::Deselected => "its cluster no longer matches the generator's selector",
            Leaves::Renamed => "its cluster's new parameters give it another name",
        }
    }

    /// Why, in one word (the plan's JSON).
    pub fn word(self) -> &'static str {
        match self {
            Leaves::Gone => "gone",
            Leaves::Deselected => "deselected",
            Leaves::Renamed => "renamed",
        }
    }
}

/// What becomes of a deleted Application's resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resources {
    /// Its resources finalizer undeploys them from the cluster.
    Undeployed,
    /// It has the finalizer, but its destination no longer resolves: the controller removes the
    /// finalizer first, and the resources keep running on the cluster, unmanaged.
    Orphaned,
    /// It has no resources finalizer: they keep running, unmanaged.
    NoFinalizer,
    /// `preserveResourcesOnDeletion`: they keep running, unmanaged.
    Preserved,
}

impl Resources {
    /// What becomes of them, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Resources::Undeployed => "its resources are undeployed (resources finalizer)",
            Resources::Orphaned => {
                "its resources stay on the cluster, unmanaged (its destination is gone, so the finalizer is removed first)"
            }
            Resources::NoFinalizer => "its resources stay, unmanaged (no resources finalizer)",
            Resources::Preserved => "its resources stay, unmanaged (preserveResourcesOnDeletion)",
        }
    }

    /// What becomes of them, in one word (the plan's JSON).
    pub fn word(self) -> &'static str {
        match self {
            Resources::Undeployed => "undeployed",
            Resources::Orphaned => "orphaned",
            Resources::NoFinalizer => "kept",
            Resources::Preserved => "preserved",
        }
    }
}

/// One thing an ApplicationSet does to its Applications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// An Application is deleted.
    Delete {
        /// The Application.
        application: AppRef,
        /// Why it goes.
        leaves: Leaves,
        /// What becomes of its resources.
        resources: Resources,
    },
    /// An Application would be deleted, but the ApplicationSet's policy keeps it.
    Keep {
        /// The Application.
        application: AppRef,
        /// Why it would go.
        leaves: Leaves,
        /// The policy that keeps it (`create-only`, `create-update`).
        policy: String,
    },
    /// An Application is generated: by name where its template's name is computed; else one
    /// (`more: false`) or as many as another generator gives (`more: true`).
    Create {
        /// The Application, when its name is computed.
        application: Option<AppRef>,
        /// As many as another generator gives (else one).
        more: bool,
    },
}

/// An effect, and the cluster it follows from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppChange {
    /// The cluster's Argo CD Secret (as it was, for a cluster the plan renames); `None`: the
    /// local cluster.
    pub cluster: Option<SecretId>,
    /// What the ApplicationSet does.
    pub effect: Effect,
}

/// What the plan makes one ApplicationSet do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSetPlan {
    /// The ApplicationSet.
    pub application_set: AppRef,
    /// The Applications it controls now.
    pub applications: usize,
    /// The policy it is synced with.
    pub policy: String,
    /// Argo CD refuses it (it generates and deletes nothing), and why.
    pub refused: Option<String>,
    /// What of it the plan cannot judge.
    pub beyond: Vec<String>,
    /// What it does, cluster by cluster.
    pub changes: Vec<AppChange>,
}

impl AppSetPlan {
    /// The Applications it deletes.
    pub fn deletes(&self) -> impl Iterator<Item = &AppChange> {
        self.changes
            .iter()
            .filter(|c| matches!(c.effect, Effect::Delete { .. }))
    }
}

/// An Application no ApplicationSet deletes whose destination no longer resolves once the plan
/// is carried out: it stops syncing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranded {
    /// The Application.
    pub application: AppRef,
    /// Its destination, as written (`name <n>` or `server <url>`).
    pub destination: String,
}

/// What the plan makes Argo CD do to Applications.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applications {
    /// Every ApplicationSet it changes something of, or cannot judge, in the order of their
    /// namespaces and names.
    pub sets: Vec<AppSetPlan>,
    /// Applications that stay but lose the cluster they deploy to.
    pub stranded: Vec<Stranded>,
}

impl Applications {
    /// The changes that follow from one cluster (its Secret as it was, or the new one).
    pub fn of_cluster<'a>(
        &'a self,
        cluster: &'a SecretId,
    ) -> impl Iterator<Item = (&'a AppSetPlan, &'a AppChange)> {
        self.sets.iter().flat_map(move |s| {
            s.changes
                .iter()
                .filter(move |c| c.cluster.as_ref() == Some(cluster))
                .map(move |c| (s, c))
        })
    }

    /// The Applications deleted, with their ApplicationSets.
    pub fn deletes(&self) -> impl Iterator<Item = (&AppSetPlan, &AppChange)> {
        self.sets
            .iter()
            .flat_map(|s| s.deletes().map(move |c| (s, c)))
    }
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
    let changed: Vec<ClusterKey> = ordered(
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
    // The local cluster's entry changes only when a Secret of its server comes or goes; then
    // every cluster is looked at, else only the changed ones.
    let local = changed.iter().any(|k| {
        [before.get(k), after.get(k)]
            .into_iter()
            .flatten()
            .any(|v| v.server == IN_CLUSTER_SERVER)
    });
    let pick = |all: &[ClusterView], map: &HashMap<ClusterKey, &ClusterView>| -> Vec<ClusterView> {
        if local {
            all.to_vec()
        } else {
            changed
                .iter()
                .filter_map(|k| map.get(k).map(|v| (*v).clone()))
                .collect()
        }
    };
    let (fleet_before, fleet_after) = (pick(&fleets.before, &before), pick(&fleets.after, &after));
    let reach_before = Reach::of(&fleets.before);
    let reach_after = Reach::of(&fleets.after);
    let judge = Judge {
        changed: &changed,
        before: &before,
        after: &after,
        reach_after: &reach_after,
        policy,
        local,
    };
    let order = ordered_map(appsets.iter().filter(|s| !s.deleting).map(|s| (&s.id, s)));
    let mut sets = Vec::new();
    for appset in order.into_values() {
        let owned: Vec<&App> = apps
            .iter()
            .filter(|a| {
                !a.deleting
                    && a.id.namespace == appset.id.namespace
                    && a.owner.as_deref() == Some(appset.id.name.as_str())
            })
            .collect();
        let plan = judge.appset(appset, &owned, &fleet_before, &fleet_after);
        if plan.refused.is_some() || !plan.beyond.is_empty() || !plan.changes.is_empty() {
            sets.push(plan);
        }
    }
    // Applications that stay but lose the cluster they deploy to.
    let gone: HashSet<&AppRef> = sets
        .iter()
        .flat_map(|s| s.deletes())
        .filter_map(|c| match &c.effect {
            Effect::Delete { application, .. } => Some(application),
            _ => None,
        })
        .collect();
    let stranded: Vec<Stranded> = ordered_map(
        apps.iter()
            .filter(|a| !a.deleting && !gone.contains(&a.id))
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
    reach_after: &'j Reach,
    policy: &'j ControllerPolicy,
    local: bool,
}

/// A generator's parameter sets, each with the name its template gives it (when computed).
struct Named<'s> {
    generator: usize,
    set: &'s Set,
    name: Option<String>,
}

impl Judge<'_> {
    fn appset(
        &self,
        appset: &AppSet,
        owned: &[&App],
        fleet_before: &[ClusterView],
        fleet_after: &[ClusterView],
    ) -> AppSetPlan {
        let (policy, deletes) = self.policy.effective(appset.sync.as_deref());
        let mut plan = AppSetPlan {
            application_set: appset.id.clone(),
            applications: owned.len(),
            policy,
            refused: None,
            beyond: Vec::new(),
            changes: Vec::new(),
        };
        let eval = |fleet| Eval {
            fleet,
            local: self.local,
            syntax: appset.syntax,
        };
        let (before, after) = (eval(fleet_before), eval(fleet_after));
        let templates: Vec<Template> = appset
            .generators
            .iter()
            .map(|g| name_template(appset, g))
            .collect();
        let mut sets_before = Vec::new();
        let mut sets_after = Vec::new();
        for (i, g) in appset.generators.iter().enumerate() {
            match (before.sets(g), after.sets(g)) {
                (Ok(b), Ok(a)) => {
                    sets_before.push((i, b));
                    sets_after.push((i, a));
                }
                (Err(Unjudged::Refused(why)), _) | (_, Err(Unjudged::Refused(why))) => {
                    plan.refused = Some(why);
                    return plan;
                }
                (Err(Unjudged::Beyond(why)), _) | (_, Err(Unjudged::Beyond(why))) => {
                    plan.beyond.push(why);
                }
            }
        }
        if let Some(note) = unknown_parameters(appset, &sets_before) {
            plan.beyond.push(note);
        }
        let (named_before, named_after) = match (
            named(&sets_before, &templates),
            named(&sets_after, &templates),
        ) {
            (Ok(b), Ok(a)) => (b, a),
            (Err(why), _) | (_, Err(why)) => {
                plan.refused = Some(why);
                return plan;
            }
        };
        let owned_names: HashSet<&str> = owned.iter().map(|a| a.id.name.as_str()).collect();
        // Looked up by cluster, by name and by destination: a fleet's worth of clusters and
        // Applications is judged in one pass each.
        let group = |named: &'_ [(ClusterKey, Named<'_>)]| {
            let mut by: HashMap<ClusterKey, Vec<usize>> = HashMap::new();
            for (i, (k, _)) in named.iter().enumerate() {
                by.entry(k.clone()).or_default().push(i);
            }
            by
        };
        let (by_before, by_after) = (group(&named_before), group(&named_after));
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
                .map(|&i| &named_before[i].1)
                .collect();
            let a: Vec<&Named> = by_after
                .get(key)
                .unwrap_or(&none)
                .iter()
                .map(|&i| &named_after[i].1)
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
                ClusterKey::InCluster => None,
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
            let view = self.before.get(key).copied();
            let leaves = if a.is_empty() {
                if self.after.contains_key(key) {
                    Leaves::Deselected
                } else {
                    Leaves::Gone
                }
            } else {
                Leaves::Renamed
            };
            // Its Applications: those its sets name, and where a name is not computed, those that
            // deploy to it.
            let mut apps = ordered(names_before.iter().filter_map(|n| by_name.get(n).copied()));
            if let (true, Some(v)) = (unnamed_before, view) {
                let server = by_server.get(v.server.trim_end_matches('/'));
                let name = by_destination.get(v.name.as_str());
                apps.extend(server.into_iter().chain(name).flatten().copied());
            }
            for app in apps.into_iter().map(|i| owned[i]) {
                if names_after.contains(app.id.name.as_str()) {
                    continue;
                }
                let deleted = a.is_empty()
                    || !unnamed_after
                    || b.iter().any(|n| n.name.is_none() && renames(n.generator));
                if !deleted {
                    continue;
                }
                let effect = if deletes {
                    Effect::Delete {
                        application: app.id.clone(),
                        leaves,
                        resources: self.resources(appset, app),
                    }
                } else {
                    Effect::Keep {
                        application: app.id.clone(),
                        leaves,
                        policy: plan.policy.clone(),
                    }
                };
                push(&mut plan, effect);
            }
            for n in &a {
                let effect = match &n.name {
                    Some(name) if names_before.contains(name.as_str()) => continue,
                    Some(name) if owned_names.contains(name.as_str()) => continue,
                    // The controller's validation refuses it: it is never created.
                    Some(name) if !is_dns1123_subdomain(name) => {
                        let note = format!(
                            "its template names an Application {name:?}, which is not a valid name: Argo CD does not create it"
                        );
                        if !plan.beyond.contains(&note) {
                            plan.beyond.push(note);
                        }
                        continue;
                    }
                    Some(name) => Effect::Create {
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
                        Effect::Create {
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

    /// What becomes of a deleted Application's resources.
    fn resources(&self, appset: &AppSet, app: &App) -> Resources {
        if !app.undeploys() {
            return if appset.preserve {
                Resources::Preserved
            } else {
                Resources::NoFinalizer
            };
        }
        if self.reach_after.resolves(app) {
            Resources::Undeployed
        } else {
            Resources::Orphaned
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

/// Each set that came from a cluster, with the name its generator's template gives it; `Err`
/// when the controller fails to render one (it then generates nothing at all).
fn named<'s>(
    sets: &'s [(usize, Vec<Set>)],
    templates: &[Template],
) -> Result<Vec<(ClusterKey, Named<'s>)>, String> {
    let mut out = Vec::new();
    for (i, sets) in sets {
        for set in sets {
            let name = match templates[*i].render(&set.params) {
                Rendered::Text(t) => Some(t),
                Rendered::NotComputed => None,
                Rendered::Failed(why) => {
                    return Err(format!("its template's metadata.name fails: {why}"));
                }
            };
            let Some(cluster) = &set.cluster else {
                continue;
            };
            out.push((
                cluster.clone(),
                Named {
                    generator: *i,
                    set,
                    name,
                },
            ));
        }
    }
    Ok(out)
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
