//! The reflector caches the plan is made from: the kubeconfig Secrets (one watch per source
//! selector and namespace), every Secret of Argo CD's namespace, Cluster API's Clusters in
//! whichever version the server prefers, the control planes asked for, SIG Multicluster's
//! ClusterProfiles (the `clusterprofile` source), and (readApplications) Argo CD's
//! ApplicationSets and Applications. Every change wakes the reconciler; the input of a
//! plan is built from the caches, and Argo CD's `argocd-cmd-params-cm` read with it.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
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

/// How the caches are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Watched: listed, then kept up to date, every change waking the reconciler.
    Watch,
    /// Listed once, page by page (`--once`: no watch is opened, so `list` is all it needs).
    ListOnce,
}

/// Lists are read in pages of this many objects.
const PAGE: u32 = 500;

/// Fills a cache from `api`, as `fill` says.
async fn cache<K>(
    what: String,
    api: Api<K>,
    selector: &str,
    dyntype: K::DynamicType,
    trim: fn(&mut K),
    feed: Arc<Feed>,
    fill: Fill,
) -> Result<Watched<K>, ReadFailed>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let mut writer = reflector::store::Writer::new(dyntype.clone());
    let store = writer.as_reader();
    let ready = Arc::new(AtomicBool::new(false));
    let types = (
        K::api_version(&dyntype).into_owned(),
        K::kind(&dyntype).into_owned(),
    );
    match fill {
        Fill::ListOnce => {
            writer.apply_watcher_event(&watcher::Event::Init);
            let mut params = ListParams::default().limit(PAGE);
            if !selector.is_empty() {
                params = params.labels(selector);
            }
            loop {
                let page = api.list(&params).await.map_err(|error| ReadFailed {
                    what: what.clone(),
                    error: error.to_string(),
                })?;
                let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
                for mut object in page.items {
                    trim(&mut object);
                    writer.apply_watcher_event(&watcher::Event::InitApply(object));
                }
                match next {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
            writer.apply_watcher_event(&watcher::Event::<K>::InitDone);
            ready.store(true, Ordering::Release);
        }
        Fill::Watch => {
            let mut config = watcher::Config::default().page_size(PAGE);
            if !selector.is_empty() {
                config = config.labels(selector);
            }
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
        }
    }
    Ok(Watched {
        what,
        store,
        ready,
        types,
    })
}

/// What no plan reads: the server's bookkeeping of who wrote which field.
fn trim_secret(secret: &mut Secret) {
    secret.metadata.managed_fields = None;
}

/// Argo CD's namespace holds other Secrets (its own, repository credentials): only their names
/// matter (a Secret of a cluster's name is never overwritten), so their values are not kept —
/// but a cluster Secret's and a token Secret's (`credentials: serviceAccount`), which the plan
/// reads.
fn trim_argo_secret(secret: &mut Secret) {
    secret.metadata.managed_fields = None;
    let labels = secret.labels();
    let read = labels
        .get(SECRET_TYPE_LABEL)
        .is_some_and(|v| v == "cluster")
        || labels
            .get(capi2argo_core::TOKEN_LABEL)
            .is_some_and(|v| v == capi2argo_core::TOKEN_LABEL_VALUE);
    if !read {
        secret.data = None;
        secret.string_data = None;
    }
}

fn trim_object(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
}

/// Of an ApplicationSet, its spec is read; its status (each Application's) is not kept.
fn trim_application_set(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
    if let Some(map) = object.data.as_object_mut() {
        map.remove("status");
    }
}

/// Of an Application, its owner, finalizers and destination are read: its status (every
/// resource it manages, its history) and its sources are not kept.
fn trim_application(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
    object.metadata.annotations = None;
    if let Some(map) = object.data.as_object_mut() {
        map.remove("status");
        if let Some(spec) = map.get_mut("spec").and_then(|s| s.as_object_mut()) {
            spec.retain(|k, _| k == "destination");
        }
    }
}

/// Argo CD's group, whose ApplicationSets and Applications `readApplications` reads.
const ARGO_CD_GROUP: &str = "argoproj.io";

/// The ConfigMap Argo CD's components take their flags from: the ApplicationSet controller's
/// policy is read from it.
const CMD_PARAMS: &str = "argocd-cmd-params-cm";

/// Objects of a resource the server may not serve yet (a CRD installed later): watched from
/// the resync that finds it served.
#[derive(Default)]
pub struct Discovered {
    watched: Mutex<Vec<Watched<DynamicObject>>>,
    served: AtomicBool,
}

impl Discovered {
    /// Whether the server serves it (and it is read).
    pub fn served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    fn watched(&self) -> std::sync::MutexGuard<'_, Vec<Watched<DynamicObject>>> {
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
    pub kubeconfigs: Vec<Watched<Secret>>,
    pub argo: Watched<Secret>,
    /// Cluster API's Clusters, when the server serves them.
    pub clusters: Discovered,
    /// SIG Multicluster's ClusterProfiles (the `clusterprofile` source), when served.
    pub profiles: Discovered,
    pub control_planes: Vec<Watched<DynamicObject>>,
    /// Argo CD's ApplicationSets and Applications (readApplications), once the server serves
    /// them.
    pub argo_cd: Discovered,
    pub feed: Arc<Feed>,
    client: Client,
    namespaces: Option<Vec<String>>,
    argo_namespace: String,
    fill: Fill,
    /// Said once: `argocd-cmd-params-cm` could not be read.
    params_unread: AtomicBool,
}

/// Why the caches could not be filled: a list (`--once`) or a discovery failed.
#[derive(Debug, thiserror::Error)]
#[error("reading {what}: {error}")]
pub struct ReadFailed {
    what: String,
    error: String,
}

impl ReadFailed {
    fn discovering(what: &str, error: kube::Error) -> ReadFailed {
        ReadFailed {
            what: format!("the API server's resources ({what})"),
            error: error.to_string(),
        }
    }
}

impl Caches {
    /// Fills every cache the settings call for, as `fill` says.
    pub async fn start(
        client: &Client,
        settings: &Settings,
        metrics: Metrics,
        fill: Fill,
    ) -> Result<Caches, ReadFailed> {
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
                let watched = cache(what, api, selector, (), trim_secret, feed.clone(), fill);
                kubeconfigs.push(watched.await?);
            }
        }
        let argo = cache(
            format!("Secrets in {}", reads.argo_namespace),
            Api::namespaced(client.clone(), &reads.argo_namespace),
            "",
            (),
            trim_argo_secret,
            feed.clone(),
            fill,
        )
        .await?;
        let mut control_planes = Vec::new();
        for (resource, group) in &settings.control_planes {
            let what = format!("{resource}.{group}");
            let found = discover(client, group, None, |ar| ar.plural == *resource).await;
            match found.map_err(|e| ReadFailed::discovering(&what, e))? {
                Some(ar) => {
                    let watched = objects(client, &ar, &namespaces, &what, &feed, fill);
                    control_planes.extend(watched.await?);
                }
                None => tracing::warn!(
                    resource = what,
                    "the control plane resource is not served: it is not read"
                ),
            }
        }
        let caches = Caches {
            kubeconfigs,
            argo,
            clusters: Discovered::default(),
            profiles: Discovered::default(),
            control_planes,
            argo_cd: Discovered::default(),
            feed,
            client: client.clone(),
            namespaces,
            argo_namespace: reads.argo_namespace.clone(),
            fill,
            params_unread: AtomicBool::new(false),
        };
        if reads.clusters {
            caches.discover_clusters().await?;
        }
        if reads.profiles {
            caches.discover_profiles().await?;
        }
        if reads.applications {
            caches.discover_applications().await?;
        }
        Ok(caches)
    }

    /// Starts reading Argo CD's ApplicationSets and Applications in its namespace once the
    /// server serves them (at start, and at every resync until then); whether it does.
    pub async fn discover_applications(&self) -> Result<bool, ReadFailed> {
        if self.argo_cd.served() {
            return Ok(true);
        }
        let what = "applicationsets.argoproj.io and applications.argoproj.io";
        let group = match kube::discovery::group(&self.client, ARGO_CD_GROUP).await {
            Ok(g) => g,
            Err(kube::Error::Discovery(kube::error::DiscoveryError::MissingApiGroup(_))) => {
                return Ok(false);
            }
            Err(e) => return Err(ReadFailed::discovering(what, e)),
        };
        let resources: Vec<ApiResource> = group
            .recommended_resources()
            .into_iter()
            .map(|(ar, _)| ar)
            .filter(|ar| ar.kind == "ApplicationSet" || ar.kind == "Application")
            .collect();
        if resources.len() < 2 {
            return Ok(false);
        }
        let mut watched = Vec::new();
        for ar in resources {
            let trim = if ar.kind == "Application" {
                trim_application
            } else {
                trim_application_set
            };
            let what = format!("{}.{} in {}", ar.plural, ar.group, self.argo_namespace);
            let api = Api::namespaced_with(self.client.clone(), &self.argo_namespace, &ar);
            watched.push(cache(what, api, "", ar, trim, self.feed.clone(), self.fill).await?);
        }
        tracing::info!("reading Argo CD's ApplicationSets and Applications");
        self.argo_cd.start(watched);
        Ok(true)
    }

    /// Argo CD's `argocd-cmd-params-cm`, read now (a `get` of that one ConfigMap; the
    /// ApplicationSet controller reads it only when it starts); `None` when it is not there or
    /// cannot be read (said once).
    pub async fn controller_params(&self) -> Option<serde_json::Value> {
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.client.clone(), &self.argo_namespace);
        match api.get_opt(CMD_PARAMS).await {
            Ok(Some(mut map)) => {
                map.metadata.managed_fields = None;
                let mut value = serde_json::to_value(&map).ok()?;
                if let Some(object) = value.as_object_mut() {
                    object.insert("apiVersion".into(), "v1".into());
                    object.insert("kind".into(), "ConfigMap".into());
                }
                Some(value)
            }
            Ok(None) => None,
            Err(error) => {
                if !self.params_unread.swap(true, Ordering::AcqRel) {
                    tracing::warn!(error = %error, "{CMD_PARAMS} cannot be read: the ApplicationSet controller's policy is taken from the settings (applicationSetPolicy)");
                }
                None
            }
        }
    }

    /// Starts reading Cluster API's Clusters once the server serves them (at start, and at
    /// every resync until then); whether it does.
    pub async fn discover_clusters(&self) -> Result<bool, ReadFailed> {
        let what = "clusters.cluster.x-k8s.io";
        let found = self
            .discover_into(&self.clusters, ("cluster.x-k8s.io", None), "Cluster", what)
            .await?;
        if let Some(version) = found {
            tracing::info!(version, "reading Cluster API's Clusters");
        }
        Ok(self.clusters.served())
    }

    /// Starts reading ClusterProfiles once the server serves them, in the newest version the
    /// function reads that the server serves (v1alpha2, else v1alpha1); whether it does.
    pub async fn discover_profiles(&self) -> Result<bool, ReadFailed> {
        let what = "clusterprofiles.multicluster.x-k8s.io";
        let mut found = None;
        for version in ["v1alpha2", "v1alpha1"] {
            found = self
                .discover_into(
                    &self.profiles,
                    ("multicluster.x-k8s.io", Some(version)),
                    "ClusterProfile",
                    what,
                )
                .await?;
            if found.is_some() {
                break;
            }
        }
        if let Some(version) = found {
            tracing::info!(version, "reading ClusterProfiles");
        }
        Ok(self.profiles.served())
    }

    /// Watches the `kind` of a group, in the version given or else the one the server
    /// prefers, in the namespaces read, once it is served; the version when it starts now.
    async fn discover_into(
        &self,
        slot: &Discovered,
        (group, version): (&str, Option<&str>),
        kind: &str,
        what: &str,
    ) -> Result<Option<String>, ReadFailed> {
        if slot.served() {
            return Ok(None);
        }
        let found = discover(&self.client, group, version, |ar| ar.kind == kind)
            .await
            .map_err(|e| ReadFailed::discovering(what, e))?;
        let Some(ar) = found else {
            return Ok(None);
        };
        let watched = objects(
            &self.client,
            &ar,
            &self.namespaces,
            what,
            &self.feed,
            self.fill,
        );
        let watched = watched.await?;
        slot.start(watched);
        Ok(Some(ar.version))
    }

    /// What has not listed yet.
    pub fn unready(&self) -> Vec<String> {
        let clusters = self.clusters.watched();
        let profiles = self.profiles.watched();
        let argo_cd = self.argo_cd.watched();
        let secrets = self.kubeconfigs.iter().chain(std::iter::once(&self.argo));
        let objects = clusters
            .iter()
            .chain(profiles.iter())
            .chain(&self.control_planes)
            .chain(argo_cd.iter());
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
            && self.clusters.watched().iter().all(Watched::ready)
            && self.profiles.watched().iter().all(Watched::ready)
            && self.argo_cd.watched().iter().all(Watched::ready)
    }

    /// The input of a plan: every cached object once, and `extra` (read beside the caches), as
    /// a `kind: List` in JSON, in the order of namespace, name and kind (the same caches give the
    /// same bytes).
    pub fn input(&self, extra: Option<serde_json::Value>) -> Vec<u8> {
        let mut items: BTreeMap<(String, String, String), serde_json::Value> = BTreeMap::new();
        // The kubeconfig watches keep values the Argo CD namespace's watch drops: theirs win.
        add(&mut items, &self.argo.store, "Secret");
        for w in &self.kubeconfigs {
            add(&mut items, &w.store, "Secret");
        }
        for w in self
            .clusters
            .watched()
            .iter()
            .chain(self.profiles.watched().iter())
            .chain(&self.control_planes)
            .chain(self.argo_cd.watched().iter())
        {
            add_objects(&mut items, w);
        }
        if let Some(value) = extra {
            let key = (
                self.argo_namespace.clone(),
                CMD_PARAMS.to_string(),
                "ConfigMap".into(),
            );
            items.insert(key, value);
        }
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": items.into_values().collect::<Vec<_>>(),
        });
        serde_json::to_vec(&list).unwrap_or_default()
    }

    /// The uid of a cached Application.
    pub fn application_uid(&self, app: &capi2argo_core::AppRef) -> Option<String> {
        let watched = self.argo_cd.watched();
        watched
            .iter()
            .filter(|w| w.types.1 == "Application")
            .flat_map(|w| w.store.state())
            .find(|o| {
                o.name_any() == app.name && o.namespace().as_deref() == Some(app.namespace.as_str())
            })
            .and_then(|o| o.uid())
    }

    /// The apiVersion and uid of a cached ClusterProfile.
    pub fn profile(&self, namespace: &str, name: &str) -> Option<(String, String)> {
        self.profiles.watched().iter().find_map(|w| {
            w.store
                .state()
                .into_iter()
                .find(|o| o.name_any() == name && o.namespace().as_deref() == Some(namespace))
                .and_then(|o| Some((w.types.0.clone(), o.uid()?)))
        })
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

async fn objects(
    client: &Client,
    ar: &ApiResource,
    namespaces: &Option<Vec<String>>,
    what: &str,
    feed: &Arc<Feed>,
    fill: Fill,
) -> Result<Vec<Watched<DynamicObject>>, ReadFailed> {
    let mut out = Vec::new();
    for ns in scopes(namespaces) {
        let api = match &ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
            None => Api::all_with(client.clone(), ar),
        };
        let what = match &ns {
            Some(ns) => format!("{what} in {ns}"),
            None => what.to_string(),
        };
        let watched = cache(what, api, "", ar.clone(), trim_object, feed.clone(), fill);
        out.push(watched.await?);
    }
    Ok(out)
}

/// The resource of `group` that `pick` chooses, in `version`, else in the version the server
/// prefers; `None` when the group or the resource is not served (in that version).
async fn discover(
    client: &Client,
    group: &str,
    version: Option<&str>,
    pick: impl Fn(&ApiResource) -> bool,
) -> Result<Option<ApiResource>, kube::Error> {
    match kube::discovery::group(client, group).await {
        Ok(g) => Ok(match version {
            Some(v) => g.versioned_resources(v),
            None => g.recommended_resources(),
        }
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
