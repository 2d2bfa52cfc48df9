//! Reading: the reflector caches a plan is made from, one per read the core lists for the
//! settings (`capi2argo_core::read_set`: the kubeconfig Secrets, Argo CD's Secrets, and the
//! resources a server may not serve yet — Cluster API's Clusters, ClusterProfiles, Argo CD's
//! ApplicationSets and Applications — each watched from the resync that finds it served), the
//! control planes the flags ask for, and the one object read by name at each plan
//! (`argocd-cmd-params-cm`). Each object goes to the planner as it arrives (`arrivals`); a cache
//! keeps who each object is and its version, which a plan compares with what the planner holds.

mod arrivals;
mod trim;
mod watched;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use capi2argo_core::well_known::{
    APPLICATION_SETS, APPLICATIONS, CLUSTER_PROFILES, CLUSTERS, CONFIG_MAPS, SECRETS,
};
use capi2argo_core::{
    AppRef, ObjectKey, Objects, Planner, Read, ReadSet, Resource, SecretId, Values,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::{Client, ResourceExt};

use crate::reporting::metrics::Metrics;
use crate::requests::OwnWrites;
use arrivals::{Arrivals, Handover};
pub use watched::{Changes, ReadFailed, ReadMode, Watched};
use watched::{Source, watch};

/// A resource the server may not serve yet: watched from the moment it is found served.
pub struct Discovered {
    /// The read it serves.
    pub read: Read,
    watched: Mutex<Vec<Watched<DynamicObject>>>,
    served: AtomicBool,
}

impl Discovered {
    fn new(read: Read) -> Discovered {
        Discovered {
            read,
            watched: Mutex::new(Vec::new()),
            served: AtomicBool::new(false),
        }
    }

    /// Whether the server serves it (and it is read).
    pub fn served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    fn watched(&self) -> MutexGuard<'_, Vec<Watched<DynamicObject>>> {
        self.watched.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Found served: its caches join the plan's input from now on.
    fn start(&self, watched: Vec<Watched<DynamicObject>>) {
        self.watched().extend(watched);
        self.served.store(true, Ordering::Release);
    }
}

/// Every cache a plan reads.
pub struct Caches {
    /// The Secrets (the kubeconfig Secrets, Argo CD's), one cache per read and namespace, each
    /// with the values it keeps.
    pub secrets: Vec<(Values, Watched<Secret>)>,
    /// What a server may not serve yet, one per read.
    pub optional: Vec<Discovered>,
    /// The control planes the flags name (those served at start).
    pub control_planes: Vec<Watched<DynamicObject>>,
    /// Where the watches say what changed.
    pub changes: Arc<Changes>,
    /// Objects read by name at each plan.
    named: Vec<Read>,
    client: Client,
    mode: ReadMode,
    /// Said once: a named object could not be read.
    named_unread: AtomicBool,
    /// The objects on their way to the planner, or held by it (the caches keep who each is).
    arrivals: Arc<Arrivals>,
    /// The place among the caches the next cache of objects takes.
    next_origin: AtomicUsize,
    /// The keys of the objects read beside the caches that the last feed gave the planner.
    extra_fed: Mutex<Vec<ObjectKey>>,
}

impl Caches {
    /// Fills every cache `reads` and `control_planes` call for, as `mode` says.
    pub async fn start(
        client: &Client,
        reads: &ReadSet,
        control_planes: &[(String, String)],
        metrics: Metrics,
        mode: ReadMode,
        limits: &capi2argo_core::Limits,
    ) -> Result<Caches, ReadFailed> {
        let changes = Changes::new(metrics);
        let arrivals = Arc::new(Arrivals::new(limits.clone()));
        let (mut secrets, mut optional, mut named) = (Vec::new(), Vec::new(), Vec::new());
        for read in &reads.reads {
            match (read.resource, &read.objects) {
                (_, Objects::Named(_)) => named.push(read.clone()),
                (SECRETS, Objects::Selected(selector)) => {
                    for ns in scopes(&read.namespaces) {
                        let source = Source {
                            what: describe(&SECRETS, &ns, selector.as_deref()),
                            api: match &ns {
                                Some(ns) => Api::namespaced(client.clone(), ns),
                                None => Api::all(client.clone()),
                            },
                            selector: selector.clone().unwrap_or_default(),
                            dyntype: (),
                            trim: trim::secret(read.values),
                            handover: Handover::new(
                                arrivals.clone(),
                                secrets.len(),
                                watched::types_of::<Secret>(&()),
                            ),
                        };
                        let watched = watch(source, changes.clone(), mode).await?;
                        secrets.push((read.values, watched));
                    }
                }
                _ => optional.push(Discovered::new(read.clone())),
            }
        }
        let secrets_read = secrets.len();
        let mut caches = Caches {
            secrets,
            optional,
            control_planes: Vec::new(),
            changes,
            named,
            client: client.clone(),
            mode,
            named_unread: AtomicBool::new(false),
            next_origin: AtomicUsize::new(secrets_read),
            extra_fed: Mutex::new(Vec::new()),
            arrivals,
        };
        for (resource, group) in control_planes {
            let what = format!("{resource}.{group}");
            let found = discover(client, group, &[], |ar| ar.plural == *resource)
                .await
                .map_err(|source| ReadFailed::Discovery {
                    what: what.clone(),
                    source,
                })?;
            match found {
                Some(ar) => {
                    let namespaces = reads.of(CLUSTERS).next().map(|r| r.namespaces.clone());
                    let watched = caches
                        .objects(&ar, &namespaces.unwrap_or(None), &what)
                        .await?;
                    caches.control_planes.extend(watched);
                }
                None => tracing::warn!(
                    resource = what,
                    "the control plane resource is not served: it is not read"
                ),
            }
        }
        caches.discover().await?;
        Ok(caches)
    }

    /// Starts reading every optional resource the server serves now and was not read yet (at
    /// start, and at every resync); what it started.
    pub async fn discover(&self) -> Result<Vec<Resource>, ReadFailed> {
        let mut found = Vec::new();
        for slot in self.optional.iter().filter(|s| !s.served()) {
            let resource = slot.read.resource;
            let what = resource.qualified();
            let ar = discover(&self.client, resource.group, resource.versions, |ar| {
                ar.kind == resource.kind
            })
            .await
            .map_err(|source| ReadFailed::Discovery {
                what: what.clone(),
                source,
            })?;
            let Some(ar) = ar else {
                continue;
            };
            let watched = self.objects(&ar, &slot.read.namespaces, &what).await?;
            slot.start(watched);
            tracing::info!(version = ar.version, "reading {}", named(resource));
            found.push(resource);
        }
        Ok(found)
    }

    /// Whether the server serves `resource` (and it is read); `false` when it is not read.
    pub fn served(&self, resource: Resource) -> bool {
        self.optional
            .iter()
            .any(|s| s.read.resource == resource && s.served())
    }

    /// The optional reads the server does not serve (yet).
    pub fn unserved(&self) -> impl Iterator<Item = &Read> {
        self.optional
            .iter()
            .filter(|s| !s.served())
            .map(|s| &s.read)
    }

    /// A cache per namespace read (one over all when `None`) of the resource `ar`.
    async fn objects(
        &self,
        ar: &ApiResource,
        namespaces: &Option<Vec<String>>,
        what: &str,
    ) -> Result<Vec<Watched<DynamicObject>>, ReadFailed> {
        let is = |r: Resource| ar.kind == r.kind && ar.group == r.group;
        let trim = if is(APPLICATIONS) {
            trim::application()
        } else if is(CLUSTERS) {
            trim::cluster()
        } else if is(APPLICATION_SETS) {
            trim::application_set()
        } else {
            trim::object()
        };
        let mut out = Vec::new();
        for ns in scopes(namespaces) {
            let source = Source {
                what: match &ns {
                    Some(ns) => format!("{what} in {ns}"),
                    None => what.to_string(),
                },
                api: match &ns {
                    Some(ns) => Api::namespaced_with(self.client.clone(), ns, ar),
                    None => Api::all_with(self.client.clone(), ar),
                },
                selector: String::new(),
                dyntype: ar.clone(),
                trim: trim.clone(),
                handover: Handover::new(
                    self.arrivals.clone(),
                    self.next_origin.fetch_add(1, Ordering::Relaxed),
                    (ar.api_version.clone(), ar.kind.clone()),
                ),
            };
            out.push(watch(source, self.changes.clone(), self.mode).await?);
        }
        Ok(out)
    }

    /// Every cache of dynamic objects: the optional ones served, the control planes.
    fn each_object_cache(&self, mut visit: impl FnMut(&Watched<DynamicObject>)) {
        for slot in &self.optional {
            for watched in slot.watched().iter() {
                visit(watched);
            }
        }
        for watched in &self.control_planes {
            visit(watched);
        }
    }

    /// What has not listed yet.
    pub fn unready(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .secrets
            .iter()
            .map(|(_, w)| w)
            .filter(|w| !w.ready())
            .map(|w| w.what.clone())
            .collect();
        self.each_object_cache(|w| {
            if !w.ready() {
                out.push(w.what.clone());
            }
        });
        out
    }

    /// Whether every cache has its first list in.
    pub fn ready(&self) -> bool {
        self.unready().is_empty()
    }

    /// The objects read by name now (a `get` each; `argocd-cmd-params-cm`, which the
    /// ApplicationSet controller reads only when it starts), as JSON; one that is not there, or
    /// cannot be read (said once), is left out.
    pub async fn read_named(&self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for read in &self.named {
            let (Objects::Named(name), Some([namespace])) =
                (&read.objects, read.namespaces.as_deref())
            else {
                continue;
            };
            if read.resource != CONFIG_MAPS {
                continue;
            }
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
            match api.get_opt(name).await {
                Ok(Some(mut map)) => {
                    map.metadata.managed_fields = None;
                    if let Ok(mut value) = serde_json::to_value(&map) {
                        if let Some(object) = value.as_object_mut() {
                            object.insert("apiVersion".into(), "v1".into());
                            object.insert("kind".into(), CONFIG_MAPS.kind.into());
                        }
                        out.push(value);
                    }
                }
                Ok(None) => {}
                Err(error) => {
                    if !self.named_unread.swap(true, Ordering::AcqRel) {
                        tracing::warn!(error = %error, "{name} cannot be read ({}); the plan goes on without it", read.purpose);
                    }
                }
            }
        }
        out
    }

    /// Brings `planner` to what the caches hold, and `extra` (read beside them): each object
    /// whose version it does not hold is kept as it arrived, each it holds that the caches no
    /// longer do is forgotten; an object it already holds costs nothing. Only the objects that
    /// arrived or went since the last feed are looked at (all of them after a watch listed
    /// again, or a feed that failed). How many objects it read, or why one could not be kept
    /// (the plan must not go on without it: a kubeconfig Secret left out would prune its
    /// cluster).
    pub fn feed(
        &self,
        planner: &mut Planner,
        extra: Vec<serde_json::Value>,
        own: &OwnWrites,
    ) -> Result<Fed, FeedError> {
        // What the caches hold and the objects waiting for the planner, taken at one instant.
        let mut gone: Vec<ObjectKey> = Vec::new();
        let mut read: Vec<ToRead> = Vec::new();
        let mut others = 0;
        let items = {
            let mut arrivals = self.arrivals.lock();
            let mut extra_fed = self.extra_fed.lock().unwrap_or_else(|p| p.into_inner());
            let extra_keys: Vec<ObjectKey> = extra.iter().map(extra_key).collect();
            let mut offer = Offer {
                arrivals: &mut arrivals,
                own,
                read: &mut read,
                others: &mut others,
                version: String::new(),
            };
            let touched = offer.arrivals.take_touched();
            // A planner that holds nothing is filled whole (a new one, or one that was emptied):
            // what did not change since the last feed is not in it.
            let touched = touched.filter(|_| !planner.is_empty());
            let items = match touched {
                // Everything, compared with what the planner holds in one pass (both are in
                // the plan's order).
                None => {
                    use std::cmp::Ordering::{Equal, Greater, Less};
                    let items = self.listed(extra);
                    let mut planned = planner.versions().peekable();
                    for (at, (item, origin)) in items.iter().enumerate() {
                        let key = item.key();
                        let mut current = None;
                        while let Some((held, held_version)) = planned.peek() {
                            match held.parts().cmp(&key) {
                                Less => gone.push((*held).clone()),
                                Equal => current = Some(*held_version),
                                Greater => break,
                            }
                            planned.next();
                            if current.is_some() {
                                break;
                            }
                        }
                        offer.offer(at, item, *origin, current);
                    }
                    gone.extend(planned.map(|(held, _)| held.clone()));
                    items
                }
                // What arrived or went since the last feed, and what is read beside the caches.
                Some(touched) => {
                    let mut keys: Vec<ObjectKey> = touched
                        .into_iter()
                        .filter_map(|(origin, namespace, name)| {
                            Some(ObjectKey::new(&namespace, &name, &self.kind_of(origin)?))
                        })
                        .chain(extra_fed.iter().cloned())
                        .collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let mut items: Vec<(Listed, usize)> = keys
                        .iter()
                        .filter(|key| !extra_keys.contains(key))
                        .filter_map(|key| self.holder(key))
                        .collect();
                    items.extend(extra.into_iter().map(|value| (Listed::Extra(value), EXTRA)));
                    let held: std::collections::HashSet<(&str, &str, &str)> =
                        items.iter().map(|(item, _)| item.key()).collect();
                    for key in &keys {
                        if !held.contains(&key.parts()) && planner.version_of(key).is_some() {
                            gone.push(key.clone());
                        }
                    }
                    for (at, (item, origin)) in items.iter().enumerate() {
                        let (namespace, name, kind) = item.key();
                        let current = planner.version_of(&ObjectKey::new(namespace, name, kind));
                        offer.offer(at, item, *origin, current);
                    }
                    items
                }
            };
            *extra_fed = extra_keys;
            items
        };
        for key in &gone {
            planner.forget(key);
            let deleted =
                key.kind == "Secret" && own.deleted(&SecretId::new(&key.namespace, &key.name));
            others += usize::from(!deleted);
        }
        let mut buffer = Vec::new();
        for next in 0..read.len() {
            let (at, version, arrived) = &mut read[next];
            let (item, origin) = &items[*at];
            let (namespace, name, kind) = item.key();
            let key = ObjectKey::new(namespace, name, kind);
            let arrived_apart = matches!(arrived, Some(Some(_)));
            let object = match arrived.take() {
                Some(Some(object)) => object,
                Some(None) => Err("what its watch read is no longer held".into()),
                // Read beside the caches.
                None => {
                    buffer.clear();
                    match item {
                        Listed::Extra(value) => serde_json::to_writer(&mut buffer, value)
                            .map_err(|e| e.to_string())
                            .and_then(|()| self.arrivals.read(&buffer)),
                        _ => Err("it is not read beside the caches".into()),
                    }
                }
            };
            let kept = match object {
                Ok(object) if object.key() == &key => {
                    planner.keep_read(object, version);
                    Ok(())
                }
                Ok(object) => Err(format!("it reads as {}", object.key())),
                Err(reason) => Err(reason),
            };
            let Err(reason) = kept else {
                continue;
            };
            let mut arrivals = self.arrivals.lock();
            // The next feed looks at everything again: what this one took is not all kept.
            arrivals.touch_all();
            if arrived_apart {
                // Said again at the next plan, which fails for the same reason until the
                // Secret changes.
                if let Some(waiting) = arrivals.get_mut(*origin, namespace, name) {
                    waiting.read.get_or_insert(Err(reason.clone()));
                }
            }
            // What was taken for the objects after it waits for the next plan: lost, each
            // would fail it until its Secret changes.
            for (at, _, arrived) in &mut read[next + 1..] {
                if let Some(Some(object)) = arrived.take() {
                    let (item, origin) = &items[*at];
                    let (namespace, name, _) = item.key();
                    if let Some(waiting) = arrivals.get_mut(*origin, namespace, name) {
                        waiting.read.get_or_insert(object);
                    }
                }
            }
            return Err(FeedError {
                object: key.to_string(),
                reason,
            });
        }
        Ok(Fed {
            read: read.len(),
            only_own_writes: others == 0 && !(read.is_empty() && gone.is_empty()),
        })
    }

    /// The kind of the objects the cache at `origin` holds.
    fn kind_of(&self, origin: usize) -> Option<String> {
        if self.secrets.iter().any(|(_, w)| w.origin == origin) {
            return Some(SECRETS.kind.to_string());
        }
        let mut kind = None;
        self.each_object_cache(|w| {
            if w.origin == origin {
                kind = Some(w.types.1.clone());
            }
        });
        kind
    }

    /// The object of `key` as the caches hold it, and where it came from; of a Secret two
    /// reads hold, as [`Caches::listed`] takes it.
    fn holder(&self, key: &ObjectKey) -> Option<(Listed, usize)> {
        let (namespace, name) = (key.namespace.as_str(), key.name.as_str());
        if key.kind == SECRETS.kind {
            let mut secrets: Vec<&(Values, Watched<Secret>)> = self.secrets.iter().collect();
            secrets.sort_by_key(|(values, _)| *values == Values::All);
            return secrets.iter().rev().find_map(|(_, w)| {
                let secret = w.find(namespace, name)?;
                Some((Listed::Secret(secret), w.origin))
            });
        }
        let mut found = None;
        self.each_object_cache(|w| {
            if w.types.1 != key.kind {
                return;
            }
            if let Some(object) = w.find(namespace, name) {
                let types = Arc::new(w.types.clone());
                found = Some((Listed::Object(object, types), w.origin));
            }
        });
        found
    }

    /// Every cached object once, and `extra`, in the order a plan reads them (namespace, name
    /// and kind), with where each came from.
    fn listed(&self, extra: Vec<serde_json::Value>) -> Vec<(Listed, usize)> {
        let mut items = Vec::new();
        // A Secret two reads hold is written by the one that keeps its values: that one comes last.
        let mut secrets: Vec<(usize, &(Values, Watched<Secret>))> =
            self.secrets.iter().enumerate().collect();
        secrets.sort_by_key(|(_, (values, _))| *values == Values::All);
        for (_, (_, w)) in secrets {
            items.extend(
                w.store
                    .state()
                    .into_iter()
                    .map(|o| (Listed::Secret(o), w.origin)),
            );
        }
        self.each_object_cache(|w| {
            let types = Arc::new(w.types.clone());
            for object in w.store.state() {
                items.push((Listed::Object(object, types.clone()), w.origin));
            }
        });
        items.extend(extra.into_iter().map(|value| (Listed::Extra(value), EXTRA)));
        // Each key taken once, not once a comparison; of one key, the last one listed.
        let keep: Vec<usize> = {
            let mut order: Vec<((&str, &str, &str), usize)> = items
                .iter()
                .enumerate()
                .map(|(at, (item, _))| (item.key(), at))
                .collect();
            order.sort_unstable();
            order
                .iter()
                .zip(order.iter().skip(1).map(Some).chain([None]))
                .filter(|((key, _), next)| next.is_none_or(|(next, _)| next != key))
                .map(|((_, at), _)| *at)
                .collect()
        };
        let mut items: Vec<Option<(Listed, usize)>> = items.into_iter().map(Some).collect();
        keep.into_iter().filter_map(|at| items[at].take()).collect()
    }

    /// The cached Secret `id`, from any cache.
    pub fn secret(&self, id: &SecretId) -> Option<Arc<Secret>> {
        self.secrets
            .iter()
            .find_map(|(_, w)| w.find(&id.namespace, &id.name))
    }

    /// The apiVersion and uid of a cached ClusterProfile.
    pub fn profile(&self, id: &SecretId) -> Option<(String, String)> {
        self.cached(CLUSTER_PROFILES, id)
    }

    /// The apiVersion and uid of a cached Cluster API Cluster.
    pub fn cluster(&self, id: &SecretId) -> Option<(String, String)> {
        self.cached(CLUSTERS, id)
    }

    /// The uid of a cached Application.
    pub fn application_uid(&self, app: &AppRef) -> Option<String> {
        let id = SecretId::new(&app.namespace, &app.name);
        self.cached(APPLICATIONS, &id).map(|(_, uid)| uid)
    }

    /// The apiVersion and uid of a cached object of `resource`.
    fn cached(&self, resource: Resource, id: &SecretId) -> Option<(String, String)> {
        let slot = self.optional.iter().find(|s| s.read.resource == resource)?;
        slot.watched().iter().find_map(|w| {
            let object = w.find(&id.namespace, &id.name)?;
            Some((w.types.0.clone(), object.uid()?))
        })
    }
}

/// What a resource's objects are called in a log line.
pub fn named(resource: Resource) -> String {
    match resource {
        CLUSTERS => "Cluster API's Clusters".into(),
        CLUSTER_PROFILES => "ClusterProfiles".into(),
        APPLICATION_SETS => "Argo CD's ApplicationSets".into(),
        APPLICATIONS => "Argo CD's Applications".into(),
        other => other.qualified(),
    }
}

/// One cache per namespace listed, or one over all.
fn scopes(namespaces: &Option<Vec<String>>) -> Vec<Option<String>> {
    match namespaces {
        Some(list) => list.iter().cloned().map(Some).collect(),
        None => vec![None],
    }
}

/// A read in words, as logs and errors say it.
fn describe(resource: &Resource, ns: &Option<String>, selector: Option<&str>) -> String {
    let things = if resource.group.is_empty() {
        format!("{}s", resource.kind)
    } else {
        resource.qualified()
    };
    match (ns, selector) {
        (Some(ns), Some(selector)) => format!("{things} labelled {selector} in {ns}"),
        (Some(ns), None) => format!("{things} in {ns}"),
        (None, Some(selector)) => format!("{things} labelled {selector}"),
        (None, None) => format!("every {}", resource.kind),
    }
}

/// Whether the server serves `resource` (in a version the core reads).
pub async fn serves(client: &Client, resource: Resource) -> Result<bool, kube::Error> {
    let found = discover(client, resource.group, resource.versions, |ar| {
        ar.kind == resource.kind
    })
    .await?;
    Ok(found.is_some())
}

/// The resource of `group` that `pick` chooses, in the first of `versions` the server serves,
/// or (none given) in the version the server prefers; `None` when the group or the resource is
/// not served (in those versions).
async fn discover(
    client: &Client,
    group: &str,
    versions: &[&str],
    pick: impl Fn(&ApiResource) -> bool,
) -> Result<Option<ApiResource>, kube::Error> {
    let served = match kube::discovery::group(client, group).await {
        Ok(g) => g,
        Err(kube::Error::Discovery(kube::error::DiscoveryError::MissingApiGroup(_))) => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if versions.is_empty() {
        return Ok(served
            .recommended_resources()
            .into_iter()
            .map(|(ar, _)| ar)
            .find(|ar| pick(ar)));
    }
    Ok(versions.iter().find_map(|v| {
        served
            .versioned_resources(v)
            .into_iter()
            .map(|(ar, _)| ar)
            .find(|ar| pick(ar))
    }))
}

/// One object of a plan's input, where its cache holds it.
enum Listed {
    Secret(Arc<Secret>),
    /// An object, with the apiVersion and kind of what its cache watches.
    Object(Arc<DynamicObject>, Arc<(String, String)>),
    Extra(serde_json::Value),
}

/// An object the planner reads: its place in the listed objects, its version, and the object
/// read (or why it could not be) when its values arrived apart from its cache (`Some(None)`:
/// taken already).
type ToRead = (
    usize,
    String,
    Option<Option<Result<capi2argo_core::ObjectRead, String>>>,
);

/// The place among the caches of the objects read beside them.
const EXTRA: usize = usize::MAX;

/// What one feed offers the planner: each object compared with the version the planner holds
/// it at, and taken to be read when that is not its own.
struct Offer<'f> {
    arrivals: &'f mut arrivals::Held,
    own: &'f OwnWrites,
    read: &'f mut Vec<ToRead>,
    /// How many of the objects offered (and read) are not the last reconcile's own writes.
    others: &'f mut usize,
    version: String,
}

impl Offer<'_> {
    /// Offers `item` (the `at`th listed, from the cache at `origin`), which the planner holds
    /// at `current`.
    fn offer(&mut self, at: usize, item: &Listed, origin: usize, current: Option<&str>) {
        use std::fmt::Write;
        let key = item.key();
        let arrival = match item {
            Listed::Extra(_) => None,
            _ => self.arrivals.get_mut(origin, key.0, key.1),
        };
        self.version.clear();
        let rv = match &arrival {
            Some(arrived) => Some(arrived.version.as_str()),
            None => item.resource_version(),
        };
        if let Some(rv) = rv {
            let _ = write!(self.version, "{rv} {origin}");
            if current == Some(self.version.as_str()) {
                // Read again by a new list: the planner holds it already.
                if let Some(arrived) = arrival {
                    arrived.read = None;
                }
                return;
            }
        }
        let written = matches!(item, Listed::Secret(_))
            && rv.is_some_and(|rv| self.own.wrote(&SecretId::new(key.0, key.1), rv));
        *self.others += usize::from(!written);
        // Without a version, it is read again every time.
        let taken = match item {
            Listed::Extra(_) => None,
            _ => Some(arrival.and_then(|a| a.read.take())),
        };
        self.read.push((at, self.version.clone(), taken));
    }
}

/// The key of an object read beside the caches.
fn extra_key(value: &serde_json::Value) -> ObjectKey {
    let text = |key: &str| {
        value
            .pointer(key)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    };
    ObjectKey::new(
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind"),
    )
}

/// What [`Caches::feed`] gave the planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fed {
    /// How many objects it read.
    pub read: usize,
    /// Something changed, and all of it was the last reconcile's own writes, as written.
    pub only_own_writes: bool,
}

/// An object the planner could not keep: no plan is made without it.
#[derive(Debug, thiserror::Error)]
#[error("{object} cannot be planned from: {reason}")]
pub struct FeedError {
    object: String,
    reason: String,
}

impl Listed {
    /// Its namespace, name and kind: where a plan reads it.
    fn key(&self) -> (&str, &str, &str) {
        fn meta(m: &kube::api::ObjectMeta) -> (&str, &str) {
            (
                m.namespace.as_deref().unwrap_or_default(),
                m.name.as_deref().unwrap_or_default(),
            )
        }
        match self {
            Listed::Secret(secret) => {
                let (namespace, name) = meta(&secret.metadata);
                (namespace, name, "Secret")
            }
            Listed::Object(object, types) => {
                let (namespace, name) = meta(&object.metadata);
                (namespace, name, types.1.as_str())
            }
            Listed::Extra(value) => {
                let text = |key: &str| {
                    value
                        .pointer(key)
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                };
                (
                    text("/metadata/namespace"),
                    text("/metadata/name"),
                    text("/kind"),
                )
            }
        }
    }

    /// The version the API server gave it.
    fn resource_version(&self) -> Option<&str> {
        match self {
            Listed::Secret(secret) => secret.metadata.resource_version.as_deref(),
            Listed::Object(object, _) => object.metadata.resource_version.as_deref(),
            Listed::Extra(value) => value
                .pointer("/metadata/resourceVersion")
                .and_then(|v| v.as_str()),
        }
    }
}

/// Caches filled at once, as lists would fill them: the reconciler's tests.
#[cfg(test)]
pub mod fixture {
    use super::*;
    use watched::Driven;

    /// Caches holding the kubeconfig Secrets `kubeconfigs` and Argo CD's Secrets `argo`, served
    /// by `client` for the reads a plan makes by name.
    pub fn caches(client: &Client, kubeconfigs: Vec<Secret>, argo: Vec<Secret>) -> Caches {
        caches_of(
            client,
            kubeconfigs,
            capi2argo_core::Limits::default(),
            |h| watched::filled("Secrets in argocd", (), h, argo),
        )
    }

    /// Caches as [`caches`] makes them, with no Argo CD Secret yet and what brings them: a
    /// test's own watch events.
    pub fn caches_driven(client: &Client, kubeconfigs: Vec<Secret>) -> (Caches, Driven<Secret>) {
        let mut driven = None;
        let caches = caches_of(
            client,
            kubeconfigs,
            capi2argo_core::Limits::default(),
            |h| {
                let (mut argo, watched) = watched::driven("Secrets in argocd", (), h);
                argo.apply(kube::runtime::watcher::Event::Init);
                argo.apply(kube::runtime::watcher::Event::InitDone);
                driven = Some(argo);
                watched
            },
        );
        (caches, driven.expect("made"))
    }

    /// Caches of the kubeconfig Secrets `kubeconfigs` (the first) and of Argo CD's Secrets
    /// (the second, as `argo` makes it of its handover), their objects read within `limits`.
    pub fn caches_of(
        client: &Client,
        kubeconfigs: Vec<Secret>,
        limits: capi2argo_core::Limits,
        argo: impl FnOnce(Handover<Secret>) -> Watched<Secret>,
    ) -> Caches {
        let metrics = Metrics::new().0;
        let argo_values = capi2argo_core::read_set(&capi2argo_core::Options::default())
            .expect("the default settings")
            .reads[1]
            .values;
        let arrivals = Arc::new(Arrivals::new(limits));
        let types = watched::types_of::<Secret>(&());
        let handover = |origin| Handover::new(arrivals.clone(), origin, types.clone());
        let kubeconfigs = watched::filled("kubeconfig Secrets", (), handover(0), kubeconfigs);
        let argo = argo(handover(1));
        Caches {
            secrets: vec![(Values::All, kubeconfigs), (argo_values, argo)],
            optional: Vec::new(),
            control_planes: Vec::new(),
            changes: Changes::new(metrics),
            named: Vec::new(),
            client: client.clone(),
            mode: ReadMode::ListOnce,
            named_unread: AtomicBool::new(false),
            next_origin: AtomicUsize::new(2),
            extra_fed: Mutex::new(Vec::new()),
            arrivals,
        }
    }

    /// A cache of Cluster API's Clusters in `caches`, filled with `clusters`.
    pub fn with_clusters(caches: &mut Caches, clusters: Vec<DynamicObject>) {
        let mut driven = clusters_driven(caches);
        driven.apply(kube::runtime::watcher::Event::Init);
        for cluster in clusters {
            driven.apply(kube::runtime::watcher::Event::InitApply(cluster));
        }
        driven.apply(kube::runtime::watcher::Event::InitDone);
    }

    /// An empty cache of Cluster API's Clusters in `caches`, and what fills it: a test's own
    /// watch events.
    pub fn clusters_driven(caches: &mut Caches) -> Driven<DynamicObject> {
        let read = capi2argo_core::read_set(&capi2argo_core::Options::default())
            .expect("the default settings")
            .reads
            .into_iter()
            .find(|r| r.resource == CLUSTERS)
            .expect("Clusters are read");
        let ar = cluster_resource();
        let handover = Handover::new(
            caches.arrivals.clone(),
            caches.next_origin.fetch_add(1, Ordering::Relaxed),
            watched::types_of::<DynamicObject>(&ar),
        );
        let (driven, watched) = watched::driven("Clusters", ar, handover);
        let slot = Discovered::new(read);
        slot.start(vec![watched]);
        caches.optional.push(slot);
        driven
    }

    /// Cluster API's Clusters, as the server serves them.
    pub fn cluster_resource() -> ApiResource {
        ApiResource {
            group: "cluster.x-k8s.io".into(),
            version: "v1beta1".into(),
            api_version: "cluster.x-k8s.io/v1beta1".into(),
            kind: "Cluster".into(),
            plural: "clusters".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use k8s_openapi::ByteString;

    /// Every cached object is fed to the planner once; one listed without apiVersion and kind
    /// (a server may list them so) is read with those of the resource its cache watches.
    #[tokio::test]
    async fn every_cached_object_is_fed_once_with_its_type() {
        let (client, _log) = fixtures::api(Vec::new());
        let mut caches = fixture::caches(
            &client,
            vec![fixtures::kubeconfig_secret("alpha")],
            vec![fixtures::owned_secret(
                "alpha",
                "https://alpha.example.com:6443",
            )],
        );
        let ar = fixture::cluster_resource();
        let untyped = DynamicObject {
            types: None,
            ..DynamicObject::new("alpha", &ar).within("fleet")
        };
        let typed = DynamicObject::new("beta", &ar).within("fleet");
        fixture::with_clusters(&mut caches, vec![untyped, typed]);
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        assert_eq!(fed(&caches, &mut planner), 4);
        let keys: Vec<(String, String)> = planner
            .versions()
            .map(|(k, _)| (k.name.clone(), k.kind.clone()))
            .collect();
        assert!(
            keys.contains(&("alpha".into(), "Cluster".into())),
            "{keys:?}"
        );
        assert!(
            keys.contains(&("beta".into(), "Cluster".into())),
            "{keys:?}"
        );
        assert!(keys.contains(&("alpha-kubeconfig".into(), "Secret".into())));
        assert_eq!(fed(&caches, &mut planner), 0);
    }

    /// A cache keeps who each object is and its version, and nothing the planner holds: a
    /// Cluster its name and uid, a Secret also the label that names its Cluster. An Event still
    /// finds both.
    #[tokio::test]
    async fn a_cache_keeps_who_each_object_is_and_nothing_the_planner_holds() {
        let (client, _log) = fixtures::api(Vec::new());
        let mut caches = fixture::caches(
            &client,
            vec![fixtures::kubeconfig_secret("alpha")],
            Vec::new(),
        );
        let mut cluster = DynamicObject::new("alpha", &fixture::cluster_resource())
            .within("fleet")
            .data(serde_json::json!({"spec": {"topology": {"class": "quick-start"}}}));
        cluster.metadata.uid = Some("uid-of-alpha".into());
        cluster.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
        fixture::with_clusters(&mut caches, vec![cluster]);
        let id = SecretId::new("fleet", "alpha");
        let cached = caches.optional[0].watched()[0]
            .find("fleet", "alpha")
            .expect("cached");
        assert!(cached.data.is_null() && cached.metadata.labels.is_none());
        assert_eq!(
            caches.cluster(&id),
            Some(("cluster.x-k8s.io/v1beta1".into(), "uid-of-alpha".into()))
        );
        let secret = caches
            .secret(&SecretId::new("fleet", "alpha-kubeconfig"))
            .expect("cached");
        assert!(secret.data.is_none() && secret.metadata.annotations.is_none());
        let labels = secret.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.keys().collect::<Vec<_>>(),
            [capi2argo_core::well_known::CLUSTER_NAME_LABEL]
        );
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        assert_eq!(fed(&caches, &mut planner), 2);
    }

    /// A Cluster written again with nothing kept changed (a heartbeat, its status cut to what a
    /// plan reads) wakes no plan, and the next plan keeps what it remembered of it; a change to
    /// its spec wakes one.
    #[tokio::test]
    async fn a_cluster_written_again_unchanged_wakes_nothing() {
        use kube::runtime::watcher::Event;
        let (client, _log) = fixtures::api(Vec::new());
        let mut caches = fixture::caches(&client, Vec::new(), Vec::new());
        let ar = fixture::cluster_resource();
        let mut clusters = fixture::clusters_driven(&mut caches);
        let at = |version: &str, class: &str| {
            let mut cluster = DynamicObject::new("alpha", &ar)
                .within("fleet")
                .data(serde_json::json!({"spec": {"topology": {"class": class}}}));
            cluster.metadata.resource_version = Some(version.into());
            cluster
        };
        clusters.apply(Event::Init);
        clusters.apply(Event::InitApply(at("1", "quick-start")));
        assert!(clusters.apply(Event::InitDone));
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        assert_eq!(fed(&caches, &mut planner), 1);
        assert!(!clusters.apply(Event::Apply(at("2", "quick-start"))));
        assert!(!clusters.apply(Event::Apply(at("2", "quick-start"))));
        assert_eq!(fed(&caches, &mut planner), 1);
        assert!(clusters.apply(Event::Apply(at("3", "bespoke"))));
        assert_eq!(fed(&caches, &mut planner), 1);
        assert!(clusters.apply(Event::Delete(at("3", "bespoke"))));
        assert_eq!(fed(&caches, &mut planner), 0);
        assert!(planner.is_empty());
    }

    /// A plan reads again only what changed: a second feed reads nothing, a new version of one
    /// Secret is read alone, and one the caches no longer hold is forgotten.
    #[tokio::test]
    async fn the_planner_reads_only_the_objects_that_changed() {
        let (client, _log) = fixtures::api(Vec::new());
        let owned = fixtures::owned_secret("alpha", "https://alpha.example.com:6443");
        let caches = fixture::caches(
            &client,
            vec![
                fixtures::kubeconfig_secret("alpha"),
                fixtures::kubeconfig_secret("beta"),
            ],
            vec![owned.clone()],
        );
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        assert_eq!(fed(&caches, &mut planner), 3);
        assert_eq!(fed(&caches, &mut planner), 0);
        let mut changed = fixtures::kubeconfig_secret("beta");
        changed.metadata.resource_version = Some("11".into());
        let caches = fixture::caches(
            &client,
            vec![fixtures::kubeconfig_secret("alpha"), changed],
            Vec::new(),
        );
        assert_eq!(fed(&caches, &mut planner), 1);
        let keys: Vec<String> = planner.versions().map(|(k, _)| k.name.clone()).collect();
        assert_eq!(keys, ["alpha-kubeconfig", "beta-kubeconfig"]);
    }

    /// The caches of `fixture::caches` but for the kubeconfig Secrets, whose cache is filled by
    /// the events the test applies, each read within `limits`.
    fn handed_over(
        client: &Client,
        limits: capi2argo_core::Limits,
    ) -> (Caches, watched::Driven<Secret>) {
        let mut caches = fixture::caches_of(client, Vec::new(), limits, |h| {
            watched::filled("Secrets in argocd", (), h, Vec::new())
        });
        let types = watched::types_of::<Secret>(&());
        let handover = Handover::new(caches.arrivals.clone(), 0, types);
        let (driven, watched) = watched::driven("kubeconfig Secrets", (), handover);
        caches.secrets[0] = (Values::All, watched);
        (caches, driven)
    }

    /// Regression: when one Secret could not be read, the values taken for the Secrets after it
    /// were dropped, and each of those failed every plan ("its values are no longer held")
    /// until it changed, even once the first was fixed.
    #[tokio::test]
    async fn a_secret_that_cannot_be_read_loses_none_after_it() {
        use kube::runtime::watcher::Event;
        let (client, _log) = fixtures::api(Vec::new());
        let limits = capi2argo_core::Limits {
            max_input_bytes: 16_000,
            ..capi2argo_core::Limits::default()
        };
        let (caches, mut kubeconfigs) = handed_over(&client, limits);
        let alpha = fixtures::kubeconfig_secret("alpha");
        let mut padded = alpha.clone();
        let padding = ByteString(vec![b'x'; 16_000]);
        padded
            .data
            .get_or_insert_default()
            .insert("padding".into(), padding);
        kubeconfigs.apply(Event::Init);
        kubeconfigs.apply(Event::InitApply(padded));
        kubeconfigs.apply(Event::InitApply(fixtures::kubeconfig_secret("beta")));
        kubeconfigs.apply(Event::InitDone);
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        let refused = caches.feed(&mut planner, Vec::new(), &OwnWrites::default());
        assert!(refused.is_err_and(|e| e.to_string().contains("alpha-kubeconfig")));
        let mut fixed = alpha;
        fixed.metadata.resource_version = Some("12".into());
        kubeconfigs.apply(Event::Apply(fixed));
        assert_eq!(fed(&caches, &mut planner), 2);
        assert_eq!(planner.len(), 2);
    }

    /// Fed only what arrived or went since the last feed, the planner holds exactly what the
    /// caches hold, at their versions, and what is read beside them, through random sequences
    /// of writes (a Secret in one cache, the other, or both, as its labels say), heartbeats,
    /// deletions, events a watch missed while away and the lists that bring them.
    #[tokio::test]
    async fn fed_what_changed_the_planner_holds_what_the_caches_hold() {
        use kube::runtime::watcher::Event;
        use std::collections::BTreeMap;
        let (client, _log) = fixtures::api(Vec::new());
        let names = ["a", "b", "c", "d", "e"];
        for seed in 1..=40u64 {
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = |below: usize| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % below as u64) as usize
            };
            let mut argo = None;
            let mut caches = fixture::caches_of(
                &client,
                Vec::new(),
                capi2argo_core::Limits::default(),
                |h| {
                    let (driven, watched) = watched::driven("Secrets in argocd", (), h);
                    argo = Some(driven);
                    watched
                },
            );
            let types = watched::types_of::<Secret>(&());
            let handover = Handover::new(caches.arrivals.clone(), 0, types);
            let (kubeconfigs, watched) = watched::driven("kubeconfig Secrets", (), handover);
            caches.secrets[0] = (Values::All, watched);
            let mut secrets = [kubeconfigs, argo.expect("made")];
            let mut clusters = fixture::clusters_driven(&mut caches);
            let ar = fixture::cluster_resource();
            // The server's objects: each Secret's version and the caches its labels put it in;
            // each Cluster's version and class.
            let mut served: BTreeMap<&str, (u64, [bool; 2])> = BTreeMap::new();
            let mut served_clusters: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
            let secret = |name: &str, version: u64| {
                let mut secret = fixtures::kubeconfig_secret(name);
                secret.metadata.resource_version = Some(version.to_string());
                secret
            };
            let cluster = |name: &str, (version, class): (u64, usize)| {
                let mut cluster = DynamicObject::new(name, &ar)
                    .within("fleet")
                    .data(serde_json::json!({"spec": {"topology": {"class": class}}}));
                cluster.metadata.resource_version = Some(version.to_string());
                cluster
            };
            for cache in &mut secrets {
                cache.apply(Event::Init);
                cache.apply(Event::InitDone);
            }
            clusters.apply(Event::Init);
            clusters.apply(Event::InitDone);
            let mut planner = Planner::new(capi2argo_core::Limits::default());
            let mut version = 100;
            for step in 0..80 {
                version += 1;
                let name = names[next(names.len())];
                match next(7) {
                    // A Secret written, in the caches its labels now say.
                    0 | 1 => {
                        let was = served.get(name).map(|(_, i)| *i).unwrap_or_default();
                        let now = [next(3) > 0, next(3) == 0];
                        for c in 0..2 {
                            // A watch away misses it (its next list brings it), unless the
                            // other cache holds the Secret too: that one would then lag.
                            if !was[1 - c] && !now[1 - c] && next(4) == 0 {
                                continue;
                            }
                            match (was[c], now[c]) {
                                (_, true) => secrets[c].apply(Event::Apply(secret(name, version))),
                                (true, false) => {
                                    secrets[c].apply(Event::Delete(secret(name, version)))
                                }
                                (false, false) => false,
                            };
                        }
                        served.insert(name, (version, now));
                    }
                    // A Cluster written: a heartbeat (its class as it was) or a change.
                    2 => {
                        let class = served_clusters.get(name).map_or(0, |c| c.1) + next(2);
                        served_clusters.insert(name, (version, class));
                        if next(4) > 0 {
                            clusters.apply(Event::Apply(cluster(name, (version, class))));
                        }
                    }
                    3 => {
                        if let Some((_, within)) = served.remove(name) {
                            for c in 0..2 {
                                if within[c] && (within[1 - c] || next(4) > 0) {
                                    secrets[c].apply(Event::Delete(secret(name, version)));
                                }
                            }
                        }
                        let was = served_clusters.remove(name);
                        if let Some(was) = was.filter(|_| next(4) > 0) {
                            clusters.apply(Event::Delete(cluster(name, was)));
                        }
                    }
                    // A watch that expired lists again.
                    4 => match next(3) {
                        2 => {
                            clusters.apply(Event::Init);
                            for (n, c) in &served_clusters {
                                clusters.apply(Event::InitApply(cluster(n, *c)));
                            }
                            clusters.apply(Event::InitDone);
                        }
                        c => {
                            secrets[c].apply(Event::Init);
                            for (n, (v, within)) in &served {
                                if within[c] {
                                    secrets[c].apply(Event::InitApply(secret(n, *v)));
                                }
                            }
                            secrets[c].apply(Event::InitDone);
                        }
                    },
                    // A plan, with the object read beside the caches or without it.
                    _ => {
                        let extra: Vec<serde_json::Value> = match next(3) {
                            0 => Vec::new(),
                            n => vec![serde_json::json!({
                                "apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "argocd-cmd-params-cm", "namespace": "argocd",
                                             "resourceVersion": n.to_string()},
                                "data": {"applicationsetcontroller.policy": "sync"},
                            })],
                        };
                        caches
                            .feed(&mut planner, extra.clone(), &OwnWrites::default())
                            .unwrap_or_else(|e| panic!("seed {seed}, step {step}: {e}"));
                        let holds: Vec<(ObjectKey, String)> = planner
                            .versions()
                            .map(|(k, v)| (k.clone(), v.to_string()))
                            .collect();
                        let cached: Vec<(ObjectKey, String)> = caches
                            .listed(extra)
                            .iter()
                            .map(|(item, origin)| {
                                let (namespace, name, kind) = item.key();
                                let rv = item.resource_version().unwrap_or_default();
                                (
                                    ObjectKey::new(namespace, name, kind),
                                    format!("{rv} {origin}"),
                                )
                            })
                            .collect();
                        assert_eq!(holds, cached, "seed {seed}, step {step}");
                    }
                }
            }
        }
    }

    /// A cluster-scoped object (a control plane resource may be one), looked up by an empty
    /// namespace, is found where its cache keeps it: a plan that looks only at what changed
    /// reads its new version, and does not take it for gone.
    #[tokio::test]
    async fn a_cluster_scoped_object_is_fed_as_it_changes() {
        use kube::runtime::watcher::Event;
        let (client, _log) = fixtures::api(Vec::new());
        let mut caches = fixture::caches(&client, Vec::new(), Vec::new());
        let ar = fixture::cluster_resource();
        let mut objects = fixture::clusters_driven(&mut caches);
        let at = |version: &str| {
            let mut object = DynamicObject::new("everywhere", &ar);
            object.metadata.resource_version = Some(version.into());
            object
        };
        objects.apply(Event::Init);
        objects.apply(Event::InitApply(at("1")));
        objects.apply(Event::InitDone);
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        assert_eq!(fed(&caches, &mut planner), 1);
        objects.apply(Event::Apply(at("2")));
        assert_eq!(fed(&caches, &mut planner), 1);
        assert_eq!(planner.len(), 1);
        assert!(
            caches.optional[0].watched()[0]
                .find("", "everywhere")
                .is_some()
        );
    }

    /// How many objects feeding `planner` from `caches` read.
    fn fed(caches: &Caches, planner: &mut Planner) -> usize {
        let fed = caches.feed(planner, Vec::new(), &OwnWrites::default());
        fed.expect("fed").read
    }

    fn kubeconfig_value(planner: &mut Planner) -> Vec<String> {
        let options = capi2argo_core::Options::default();
        let finished = planner
            .plan(&options, &mut capi2argo_core::NoFiles)
            .expect("planned");
        let plan = finished.plan.expect("a plan");
        plan.entries.iter().map(|e| e.server.clone()).collect()
    }

    /// A Secret's values are in memory once: the cache keeps its name, labels and version, the
    /// planner its values; a change brings the new values, and a list that ends while a plan is
    /// made loses nothing.
    #[tokio::test]
    async fn secret_values_are_kept_by_the_planner_not_the_cache() {
        use kube::runtime::watcher::Event;
        let (client, _log) = fixtures::api(Vec::new());
        let (caches, mut kubeconfigs) = handed_over(&client, capi2argo_core::Limits::default());
        let mut planner = Planner::new(capi2argo_core::Limits::default());
        kubeconfigs.apply(Event::Init);
        kubeconfigs.apply(Event::InitApply(fixtures::kubeconfig_secret("alpha")));
        // Listed but not yet in the cache: the planner has nothing yet, and loses nothing.
        assert_eq!(fed(&caches, &mut planner), 0);
        kubeconfigs.apply(Event::InitDone);
        assert_eq!(fed(&caches, &mut planner), 1);
        let cached = caches.secrets[0]
            .1
            .find("fleet", "alpha-kubeconfig")
            .expect("cached");
        assert!(cached.data.is_none() && cached.metadata.labels.is_some());
        let alpha = fixtures::kubeconfig_secret("alpha");
        let text = String::from_utf8(alpha.data.as_ref().expect("data")["value"].0.clone())
            .expect("UTF-8");
        let server = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .expect("a server")
            .to_string();
        assert_eq!(kubeconfig_value(&mut planner), [server.as_str()]);
        // The values went to the planner: none wait any more.
        assert!(caches.arrivals.lock().values().all(|a| a.read.is_none()));
        assert_eq!(fed(&caches, &mut planner), 0);
        // A new version brings its values.
        let mut moved = fixtures::kubeconfig_secret("alpha");
        moved.metadata.resource_version = Some("11".into());
        let text = text.replace(&server, "https://moved.example.com:6443");
        moved.data = Some([("value".to_string(), ByteString(text.into_bytes()))].into());
        kubeconfigs.apply(Event::Apply(moved.clone()));
        assert_eq!(fed(&caches, &mut planner), 1);
        assert_eq!(
            kubeconfig_value(&mut planner),
            ["https://moved.example.com:6443"]
        );
        // Listed again (a watch that expired): nothing is read twice, nothing is lost.
        kubeconfigs.apply(Event::Init);
        kubeconfigs.apply(Event::InitApply(moved.clone()));
        kubeconfigs.apply(Event::InitDone);
        assert!(caches.arrivals.lock().values().all(|a| a.read.is_none()));
        assert_eq!(fed(&caches, &mut planner), 0);
        assert_eq!(
            kubeconfig_value(&mut planner),
            ["https://moved.example.com:6443"]
        );
        kubeconfigs.apply(Event::Delete(moved));
        assert_eq!(fed(&caches, &mut planner), 0);
        assert!(planner.is_empty());
        assert!(caches.arrivals.lock().values().next().is_none());
    }
}
