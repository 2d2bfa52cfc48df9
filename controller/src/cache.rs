//! The reflector caches the plan is made from: the kubeconfig Secrets (one watch per source
//! selector and namespace), every Secret of Argo CD's namespace, Cluster API's Clusters in
//! whichever version the server prefers, and the control planes asked for. Every change wakes
//! the reconciler; the input of a plan is built from the caches alone.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use crate::metrics::Metrics;
use crate::settings::Settings;

/// The label Argo CD reads its cluster Secrets by.
const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";

/// Where the watches say what happened: a change, or a failed read.
pub struct Feed {
    pub changed: Notify,
    /// The first error of a watch that has not listed yet, for `--once`.
    first_error: Mutex<Option<String>>,
    metrics: Metrics,
}

impl Feed {
    fn error(&self, what: &str, ready: bool, error: &watcher::Error) {
        tracing::warn!(watch = what, error = %error, "a watch failed; it is retried with backoff");
        self.metrics.watch_error(what);
        if !ready {
            let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(|| format!("reading {what}: {error}"));
        }
        self.changed.notify_one();
    }

    /// A read that failed before its first list completed.
    pub fn read_failure(&self) -> Option<String> {
        self.first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// One watched resource: its cache, and whether its first list is in.
pub struct Watched<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    pub what: String,
    pub store: Store<K>,
    ready: Arc<AtomicBool>,
    /// The apiVersion and kind of what it holds, for objects listed without them.
    types: (String, String),
}

impl<K: Resource + Clone + 'static> Watched<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// Starts a watch whose events fill a cache and wake the reconciler.
fn watch<K>(
    what: String,
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    trim: fn(&mut K),
    feed: Arc<Feed>,
) -> Watched<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let writer = reflector::store::Writer::new(dyntype.clone());
    let store = writer.as_reader();
    let ready = Arc::new(AtomicBool::new(false));
    let (flag, name) = (ready.clone(), what.clone());
    let events = watcher(api, config)
        .default_backoff()
        .modify(trim)
        .reflect(writer);
    tokio::spawn(events.for_each(move |event| {
        let (flag, feed, name) = (flag.clone(), feed.clone(), name.clone());
        async move {
            match event {
                Ok(watcher::Event::InitDone) => {
                    flag.store(true, Ordering::Release);
                    feed.changed.notify_one();
                }
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
                    feed.changed.notify_one();
                }
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => {}
                Err(error) => feed.error(&name, flag.load(Ordering::Acquire), &error),
            }
        }
    }));
    let types = (
        K::api_version(&dyntype).into_owned(),
        K::kind(&dyntype).into_owned(),
    );
    Watched {
        what,
        store,
        ready,
        types,
    }
}

/// What no plan reads: the server's bookkeeping of who wrote which field.
fn trim_secret(secret: &mut Secret) {
    secret.metadata.managed_fields = None;
}

/// Argo CD's namespace holds other Secrets (its own, repository credentials): only their names
/// matter (a Secret of a cluster's name is never overwritten), so their values are not kept.
fn trim_argo_secret(secret: &mut Secret) {
    secret.metadata.managed_fields = None;
    let cluster = secret
        .labels()
        .get(SECRET_TYPE_LABEL)
        .is_some_and(|v| v == "cluster");
    if !cluster {
        secret.data = None;
        secret.string_data = None;
    }
}

fn trim_object(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
}

/// Every cache a plan reads.
pub struct Caches {
    pub kubeconfigs: Vec<Watched<Secret>>,
    pub argo: Watched<Secret>,
    /// Cluster API's Clusters, when the server serves them.
    pub clusters: Mutex<Vec<Watched<DynamicObject>>>,
    pub cluster_api: AtomicBool,
    pub control_planes: Vec<Watched<DynamicObject>>,
    pub feed: Arc<Feed>,
    client: Client,
    namespaces: Option<Vec<String>>,
}

/// Why the caches could not start: discovery failed for another reason than the resource being
/// absent.
#[derive(Debug, thiserror::Error)]
#[error("discovering {what}: {error}")]
pub struct DiscoveryFailed {
    what: String,
    error: kube::Error,
}

impl Caches {
    /// Starts every watch the settings call for.
    pub async fn start(
        client: &Client,
        settings: &Settings,
        metrics: Metrics,
    ) -> Result<Caches, DiscoveryFailed> {
        let feed = Arc::new(Feed {
            changed: Notify::new(),
            first_error: Mutex::new(None),
            metrics,
        });
        let reads = &settings.reads;
        let namespaces = reads.namespaces.clone();
        let mut kubeconfigs = Vec::new();
        for selector in &reads.secret_selectors {
            for ns in scopes(&namespaces) {
                let mut config = watcher::Config::default();
                if !selector.is_empty() {
                    config = config.labels(selector);
                }
                let what = match (&ns, selector.is_empty()) {
                    (Some(ns), false) => format!("Secrets labelled {selector} in {ns}"),
                    (Some(ns), true) => format!("Secrets in {ns}"),
                    (None, false) => format!("Secrets labelled {selector}"),
                    (None, true) => "every Secret".to_string(),
                };
                let api = match &ns {
                    Some(ns) => Api::namespaced(client.clone(), ns),
                    None => Api::all(client.clone()),
                };
                kubeconfigs.push(watch(what, api, config, (), trim_secret, feed.clone()));
            }
        }
        let argo = watch(
            format!("Secrets in {}", reads.argo_namespace),
            Api::namespaced(client.clone(), &reads.argo_namespace),
            watcher::Config::default(),
            (),
            trim_argo_secret,
            feed.clone(),
        );
        let mut control_planes = Vec::new();
        for (resource, group) in &settings.control_planes {
            let what = format!("{resource}.{group}");
            let found = discover(client, group, |ar| ar.plural == *resource).await;
            match found {
                Ok(Some(ar)) => {
                    control_planes.extend(objects(client, &ar, &namespaces, &what, &feed))
                }
                Ok(None) => tracing::warn!(
                    resource = what,
                    "the control plane resource is not served: it is not read"
                ),
                Err(error) => return Err(DiscoveryFailed { what, error }),
            }
        }
        let caches = Caches {
            kubeconfigs,
            argo,
            clusters: Mutex::new(Vec::new()),
            cluster_api: AtomicBool::new(false),
            control_planes,
            feed,
            client: client.clone(),
            namespaces,
        };
        if reads.clusters {
            caches.discover_clusters().await?;
        }
        Ok(caches)
    }

    /// Starts watching Cluster API's Clusters once the server serves them (at start, and at
    /// every resync until then); whether it does.
    pub async fn discover_clusters(&self) -> Result<bool, DiscoveryFailed> {
        if self.cluster_api.load(Ordering::Acquire) {
            return Ok(true);
        }
        let what = "clusters.cluster.x-k8s.io".to_string();
        let found = discover(&self.client, "cluster.x-k8s.io", |ar| ar.kind == "Cluster")
            .await
            .map_err(|error| DiscoveryFailed {
                what: what.clone(),
                error,
            })?;
        let Some(ar) = found else {
            return Ok(false);
        };
        tracing::info!(version = ar.version, "reading Cluster API's Clusters");
        let watched = objects(&self.client, &ar, &self.namespaces, &what, &self.feed);
        self.clusters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(watched);
        self.cluster_api.store(true, Ordering::Release);
        Ok(true)
    }

    /// What has not listed yet.
    pub fn unready(&self) -> Vec<String> {
        let clusters = self.clusters.lock().unwrap_or_else(|p| p.into_inner());
        let secrets = self.kubeconfigs.iter().chain(std::iter::once(&self.argo));
        let objects = clusters.iter().chain(&self.control_planes);
        let mut out: Vec<String> = secrets
            .filter(|w| !w.ready())
            .map(|w| w.what.clone())
            .collect();
        out.extend(objects.filter(|w| !w.ready()).map(|w| w.what.clone()));
        out
    }

    /// Whether every watch has its first list in.
    pub fn ready(&self) -> bool {
        self.kubeconfigs.iter().all(Watched::ready)
            && self.argo.ready()
            && self.control_planes.iter().all(Watched::ready)
            && self
                .clusters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .all(Watched::ready)
    }

    /// The input of a plan: every cached object once, as a `kind: List` in JSON, in the order of
    /// namespace, name and kind (the same caches give the same bytes).
    pub fn input(&self) -> Vec<u8> {
        let mut items: BTreeMap<(String, String, String), serde_json::Value> = BTreeMap::new();
        // The kubeconfig watches keep values the Argo CD namespace's watch drops: theirs win.
        add(&mut items, &self.argo.store, "Secret");
        for w in &self.kubeconfigs {
            add(&mut items, &w.store, "Secret");
        }
        for w in self
            .clusters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .chain(&self.control_planes)
        {
            add_objects(&mut items, w);
        }
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": items.into_values().collect::<Vec<_>>(),
        });
        serde_json::to_vec(&list).unwrap_or_default()
    }

    /// The cached Secret `namespace`/`name`, from any watch.
    pub fn secret(&self, namespace: &str, name: &str) -> Option<Arc<Secret>> {
        let key = reflector::ObjectRef::new(name).within(namespace);
        self.kubeconfigs
            .iter()
            .chain(std::iter::once(&self.argo))
            .find_map(|w| w.store.get(&key))
    }
}

/// One watch per namespace listed, or one over all.
fn scopes(namespaces: &Option<Vec<String>>) -> Vec<Option<String>> {
    match namespaces {
        Some(list) => list.iter().cloned().map(Some).collect(),
        None => vec![None],
    }
}

fn objects(
    client: &Client,
    ar: &ApiResource,
    namespaces: &Option<Vec<String>>,
    what: &str,
    feed: &Arc<Feed>,
) -> Vec<Watched<DynamicObject>> {
    scopes(namespaces)
        .into_iter()
        .map(|ns| {
            let api = match &ns {
                Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
                None => Api::all_with(client.clone(), ar),
            };
            let what = match &ns {
                Some(ns) => format!("{what} in {ns}"),
                None => what.to_string(),
            };
            let config = watcher::Config::default();
            watch(what, api, config, ar.clone(), trim_object, feed.clone())
        })
        .collect()
}

/// The resource of `group` that `pick` chooses, in the version the server prefers; `None`
/// when the group or the resource is not served.
async fn discover(
    client: &Client,
    group: &str,
    pick: impl Fn(&ApiResource) -> bool,
) -> Result<Option<ApiResource>, kube::Error> {
    match kube::discovery::group(client, group).await {
        Ok(g) => Ok(g
            .recommended_resources()
            .into_iter()
            .map(|(ar, _)| ar)
            .find(|ar| pick(ar))),
        Err(kube::Error::Discovery(kube::error::DiscoveryError::MissingApiGroup(_))) => Ok(None),
        Err(e) => Err(e),
    }
}

fn add<K>(
    items: &mut BTreeMap<(String, String, String), serde_json::Value>,
    store: &Store<K>,
    kind: &str,
) where
    K: Resource + Clone + Serialize + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    for object in store.state() {
        let key = (
            object.meta().namespace.clone().unwrap_or_default(),
            object.meta().name.clone().unwrap_or_default(),
            kind.to_string(),
        );
        if let Ok(value) = serde_json::to_value(&*object) {
            items.insert(key, value);
        }
    }
}

/// Objects as the server lists them may carry no apiVersion and kind each: they come from the
/// resource watched.
fn add_objects(
    items: &mut BTreeMap<(String, String, String), serde_json::Value>,
    watched: &Watched<DynamicObject>,
) {
    let (api_version, kind) = &watched.types;
    for object in watched.store.state() {
        let Ok(mut value) = serde_json::to_value(&*object) else {
            continue;
        };
        if let Some(map) = value.as_object_mut() {
            map.entry("apiVersion")
                .or_insert_with(|| api_version.clone().into());
            map.entry("kind").or_insert_with(|| kind.clone().into());
        }
        let key = (
            object.namespace().unwrap_or_default(),
            object.name_any(),
            kind.clone(),
        );
        items.insert(key, value);
    }
}
