//! A Secret's values on their way to the planner: taken out of each Secret as its watch reads
//! it, read at once into the form the planner keeps (held so until the next plan takes them),
//! and never kept by the cache, which holds the Secret's name, labels and version only. So the
//! fleet's kubeconfigs are in memory once, and a fleet listed whole waits for its first plan
//! as the trees the planner keeps, not also as text.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use capi2argo_core::{Limits, ObjectKey, ObjectRead};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;

/// A Secret whose values its cache does not keep: its version, and until a plan takes it, the
/// Secret read for the planner (or why it could not be).
pub struct Arrived {
    pub version: String,
    pub read: Option<Result<ObjectRead, String>>,
}

/// The Secrets whose values wait for the planner or are held by it, by the cache that read
/// them (two caches may read one Secret), namespace and name.
pub struct Arrivals {
    held: Mutex<Held>,
    /// What each Secret is read within: the planner's limits.
    limits: Limits,
}

/// What [`Arrivals`] holds: looked up by borrowed names, as a plan's input is taken without
/// copying ten thousand names.
#[derive(Default)]
pub struct Held(HashMap<usize, HashMap<String, HashMap<String, Arrived>>>);

impl Held {
    pub fn get_mut(&mut self, origin: usize, namespace: &str, name: &str) -> Option<&mut Arrived> {
        self.0.get_mut(&origin)?.get_mut(namespace)?.get_mut(name)
    }

    fn insert(&mut self, origin: usize, key: ObjectKey, arrived: Arrived) {
        let names = self.0.entry(origin).or_default();
        names
            .entry(key.namespace)
            .or_default()
            .insert(key.name, arrived);
    }

    fn remove(&mut self, origin: usize, key: &ObjectKey) {
        if let Some(names) = self
            .0
            .get_mut(&origin)
            .and_then(|n| n.get_mut(&key.namespace))
        {
            names.remove(&key.name);
        }
    }

    /// Every Secret held, for tests.
    #[cfg(test)]
    pub fn values(&self) -> impl Iterator<Item = &Arrived> {
        self.0
            .values()
            .flat_map(|n| n.values())
            .flat_map(|n| n.values())
    }
}

impl Arrivals {
    /// Nothing held yet; each Secret to be read within `limits`.
    pub fn new(limits: Limits) -> Arrivals {
        Arrivals {
            held: Mutex::new(Held::default()),
            limits,
        }
    }

    /// Held while a plan's input is taken: no watch changes a cache and what waits for the
    /// planner in between, so what a cache holds and what the planner is given agree.
    pub fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How one Secret cache hands its Secrets' values over: its place among the caches, and the
/// Secrets of a list under way (the cache takes them all at once when the list is done).
pub struct Handover {
    pub arrivals: std::sync::Arc<Arrivals>,
    pub origin: usize,
    listing: Vec<(ObjectKey, Arrived)>,
}

impl Handover {
    pub fn new(arrivals: std::sync::Arc<Arrivals>, origin: usize) -> Handover {
        Handover {
            arrivals,
            origin,
            listing: Vec::new(),
        }
    }
}

/// How a watch's events reach its cache.
pub trait Apply<K: kube::Resource + Clone + 'static>: Send
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    fn apply(&mut self, writer: &mut Writer<K>, event: Event<K>);
}

/// As they are: the cache keeps each object whole (as trimmed).
pub struct Whole;

impl<K: kube::Resource + Clone + 'static> Apply<K> for Whole
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    fn apply(&mut self, writer: &mut Writer<K>, event: Event<K>) {
        writer.apply_watcher_event(&event);
    }
}

impl Apply<Secret> for Handover {
    /// Applies `event` to the cache, the values of each Secret it brings held for the planner
    /// instead of the cache.
    fn apply(&mut self, writer: &mut Writer<Secret>, mut event: Event<Secret>) {
        match &mut event {
            Event::Apply(secret) => {
                let arrived = take_values(secret, &self.arrivals.limits);
                let key = key(secret);
                let mut held = self.arrivals.lock();
                match arrived {
                    Some(arrived) => held.insert(self.origin, key, arrived),
                    None => held.remove(self.origin, &key),
                }
                writer.apply_watcher_event(&event);
            }
            Event::Delete(secret) => {
                let key = key(secret);
                let mut held = self.arrivals.lock();
                held.remove(self.origin, &key);
                writer.apply_watcher_event(&event);
            }
            Event::Init => {
                self.listing.clear();
                writer.apply_watcher_event(&event);
            }
            Event::InitApply(secret) => {
                if let Some(arrived) = take_values(secret, &self.arrivals.limits) {
                    self.listing.push((key(secret), arrived));
                }
                writer.apply_watcher_event(&event);
            }
            Event::InitDone => {
                // The cache takes the list's Secrets now, and with them their values arrive.
                let mut held = self.arrivals.lock();
                held.0.remove(&self.origin);
                for (key, arrived) in self.listing.drain(..) {
                    held.insert(self.origin, key, arrived);
                }
                writer.apply_watcher_event(&event);
            }
        }
    }
}

/// The key a plan knows a Secret by.
pub fn key(secret: &Secret) -> ObjectKey {
    ObjectKey::new(
        secret.metadata.namespace.as_deref().unwrap_or_default(),
        secret.metadata.name.as_deref().unwrap_or_default(),
        "Secret",
    )
}

/// Takes a Secret's values out: the Secret, values and all, read for the planner within
/// `limits`, and the Secret left without them; `None` for one without values (or one that
/// cannot be written, left as it is).
fn take_values(secret: &mut Secret, limits: &Limits) -> Option<Arrived> {
    if secret.data.is_none() && secret.string_data.is_none() {
        return None;
    }
    let json = serde_json::to_vec(&*secret).ok()?;
    secret.data = None;
    secret.string_data = None;
    Some(Arrived {
        version: secret.metadata.resource_version.clone().unwrap_or_default(),
        read: Some(ObjectRead::new(&json, limits).map_err(|e| e.to_string())),
    })
}
