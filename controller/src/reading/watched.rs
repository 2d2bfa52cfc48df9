//! One watched resource in some scope: a reflector cache, filled by a watch (every change wakes
//! the reconciler) or by one paged list (`--once`), and what of each object it keeps.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures::{FutureExt, StreamExt};
use kube::Resource;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use super::arrivals::{Handed, Handover};
use super::trim::Trim;
use crate::reporting::metrics::Metrics;

/// How the caches are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Watched: listed, then kept up to date, every change waking the reconciler.
    Watch,
    /// Listed once, page by page (`--once`: no watch is opened, so `list` is all it needs).
    ListOnce,
}

/// Lists are read in pages of this many objects.
const PAGE: u32 = 500;

/// Where the watches say what happened: a change, or a failed read.
pub struct Changes {
    /// Notified on every change (and every failure) of any watch.
    pub notify: Notify,
    /// The first failure of a watch that has not listed yet, for `--once` and `/readyz`.
    first_failure: Mutex<Option<ReadFailed>>,
    /// What each failing watch last failed with, in words: said once, and again when it
    /// changes, not at every retry.
    failing: Mutex<BTreeMap<String, String>>,
    metrics: Metrics,
}

impl Changes {
    pub fn new(metrics: Metrics) -> Arc<Changes> {
        Arc::new(Changes {
            notify: Notify::new(),
            first_failure: Mutex::new(None),
            failing: Mutex::new(BTreeMap::new()),
            metrics,
        })
    }

    fn failed(&self, what: &str, listed: bool, error: watcher::Error) {
        let words = watch_failure(what, &error);
        let said = self
            .failing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(what.to_string(), words.clone());
        if said.as_ref() != Some(&words) {
            tracing::warn!("{words}; tried again with backoff");
        }
        self.metrics.watch_error(what);
        if !listed {
            let mut first = self.first_failure.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(|| ReadFailed::Watch {
                what: what.to_string(),
                source: error,
            });
        }
        self.notify.notify_one();
    }

    /// Why a read failed before its first list completed, in words.
    pub fn first_failure(&self) -> Option<String> {
        self.first_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(ToString::to_string)
    }

    /// A read listed at last: what kept it from listing before is no reason any more.
    fn listed(&self, what: &str) {
        self.first_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let failed = self
            .failing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(what);
        if failed.is_some() {
            tracing::info!("reading {what} again");
        }
    }
}

/// Why a read failed, said as what was refused or what kept the server from answering.
#[derive(Debug, thiserror::Error)]
pub enum ReadFailed {
    /// A list (`--once`) was refused or failed.
    #[error("{}", crate::cause::reading("list", .what, .source))]
    List {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// A watch failed before its first list was in.
    #[error("{}", watch_failure(.what, .source))]
    Watch {
        what: String,
        #[source]
        source: watcher::Error,
    },
    /// The server's resources could not be discovered.
    #[error("{}", crate::cause::reading("discover", &format!("the API server's {}", .what), .source))]
    Discovery {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// A watch's failure in words: its list or its watch refused, or the stream broken.
fn watch_failure(what: &str, error: &watcher::Error) -> String {
    use crate::cause::{reading, refusal};
    match error {
        watcher::Error::InitialListFailed(e) => reading("list", what, e),
        watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            reading("watch", what, e)
        }
        watcher::Error::WatchError(status) => refusal("watch", what, status),
        other => format!("could not watch {what}: {other}"),
    }
}

/// One watched resource in one scope: its cache, and what it holds.
pub struct Watched<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// What it reads, in words: `Secrets labelled … in …`.
    pub what: String,
    pub store: Store<K>,
    /// The apiVersion and kind of what it holds.
    pub types: (String, String),
    /// Its place among the caches, which its objects' arrivals are held by.
    pub origin: usize,
    dyntype: K::DynamicType,
}

impl<K: Resource + Clone + 'static> Watched<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// Whether its first list is in.
    pub fn ready(&self) -> bool {
        self.store
            .wait_until_ready()
            .now_or_never()
            .is_some_and(|r| r.is_ok())
    }
}

/// What to read and how to keep it.
pub struct Source<K: Resource> {
    pub what: String,
    pub api: Api<K>,
    /// A label selector; empty: every object.
    pub selector: String,
    pub dyntype: K::DynamicType,
    /// Drops what no plan reads of each object.
    pub trim: Trim<K>,
    /// How each object reaches the planner, and its cache.
    pub handover: Handover<K>,
}

/// How soon a failed list or watch is tried again: from a quarter second, doubling, never more
/// than 2 s apart (with jitter). kube's default (client-go's, 0.8 s to 30 s, reset only after two
/// quiet minutes) grows during an API server's outage and then keeps the controller blind for up
/// to half a minute after the server is back, or after a 410 that only asks for a list. A
/// controller has a handful of watches: one request each every 2 s is nothing to a server.
fn retry() -> watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(std::time::Duration::from_millis(250))
        .with_max_delay(std::time::Duration::from_secs(2))
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .into()
}

/// Fills a cache from `source`, as `mode` says.
pub async fn watch<K>(
    source: Source<K>,
    changes: Arc<Changes>,
    mode: ReadMode,
) -> Result<Watched<K>, ReadFailed>
where
    K: Handed + DeserializeOwned + Debug + Send + Sync,
    K::DynamicType: Send + Sync,
{
    let Source {
        what,
        api,
        selector,
        dyntype,
        trim,
        mut handover,
    } = source;
    let mut writer = reflector::store::Writer::new(dyntype.clone());
    let store = writer.as_reader();
    let origin = handover.origin;
    let types = types_of::<K>(&dyntype);
    match mode {
        ReadMode::ListOnce => {
            handover.apply(&mut writer, watcher::Event::Init);
            let mut params = ListParams::default().limit(PAGE);
            if !selector.is_empty() {
                params = params.labels(&selector);
            }
            loop {
                let page = api.list(&params).await.map_err(|source| ReadFailed::List {
                    what: what.clone(),
                    source,
                })?;
                let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
                for mut object in page.items {
                    (*trim)(&mut object);
                    handover.apply(&mut writer, watcher::Event::InitApply(object));
                }
                match next {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
            handover.apply(&mut writer, watcher::Event::<K>::InitDone);
        }
        ReadMode::Watch => {
            let mut config = watcher::Config::default().page_size(PAGE);
            if !selector.is_empty() {
                config = config.labels(&selector);
            }
            let kept = store.clone();
            let name = what.clone();
            let events = watcher(api, config)
                .backoff(retry())
                .modify(move |object| (*trim)(object));
            tokio::spawn(events.for_each(move |event| {
                let done = matches!(event, Ok(watcher::Event::InitDone));
                // Whether the plan's input changed: an object written again with nothing kept
                // changed (a Cluster's heartbeat, cut to what the plan reads) wakes nothing.
                let (wake, failed) = match event {
                    Ok(event) => (handover.apply(&mut writer, event), None),
                    Err(error) => (true, Some(error)),
                };
                let (changes, name, ready) = (changes.clone(), name.clone(), kept.clone());
                async move {
                    match failed {
                        None if done => {
                            changes.listed(&name);
                            changes.notify.notify_one();
                        }
                        None if wake => changes.notify.notify_one(),
                        None => {}
                        Some(error) => {
                            let listed = ready.wait_until_ready().now_or_never().is_some();
                            changes.failed(&name, listed, error);
                        }
                    }
                }
            }));
        }
    }
    Ok(Watched {
        what,
        store,
        types,
        origin,
        dyntype,
    })
}

/// The apiVersion and kind of the objects of `dyntype`.
pub fn types_of<K: Resource>(dyntype: &K::DynamicType) -> (String, String) {
    (
        K::api_version(dyntype).into_owned(),
        K::kind(dyntype).into_owned(),
    )
}

/// An empty cache, filled by the events a test applies, as a watch would apply them.
#[cfg(test)]
pub struct Driven<K: Handed> {
    writer: reflector::store::Writer<K>,
    handover: Handover<K>,
}

#[cfg(test)]
impl<K: Handed> Driven<K> {
    /// Applies `event`, as its watch would; whether it woke a plan.
    pub fn apply(&mut self, event: watcher::Event<K>) -> bool {
        self.handover.apply(&mut self.writer, event)
    }
}

/// An empty cache whose objects `handover` hands over, and what fills it.
#[cfg(test)]
pub fn driven<K: Handed>(
    what: &str,
    dyntype: K::DynamicType,
    handover: Handover<K>,
) -> (Driven<K>, Watched<K>) {
    let writer = reflector::store::Writer::new(dyntype.clone());
    let watched = Watched {
        what: what.to_string(),
        store: writer.as_reader(),
        types: types_of::<K>(&dyntype),
        origin: handover.origin,
        dyntype,
    };
    (Driven { writer, handover }, watched)
}

/// A cache filled with `objects` at once, as a list would fill it (the reconciler's tests).
#[cfg(test)]
pub fn filled<K: Handed>(
    what: &str,
    dyntype: K::DynamicType,
    handover: Handover<K>,
    objects: Vec<K>,
) -> Watched<K> {
    let (mut driven, watched) = driven(what, dyntype, handover);
    driven.apply(watcher::Event::Init);
    for object in objects {
        driven.apply(watcher::Event::InitApply(object));
    }
    driven.apply(watcher::Event::<K>::InitDone);
    watched
}

impl<K: Resource + Clone + 'static> Watched<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// The cached object `namespace`/`name` (a lookup, not a scan: a reconcile asks for one per
    /// cluster).
    pub fn find(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let key = ObjectRef::new_with(name, self.dyntype.clone()).within(namespace);
        self.store.get(&key)
    }
}
