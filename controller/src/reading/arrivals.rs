//! Each watched object on its way to the planner: read at once into the form the planner keeps
//! (held so until the next plan takes it), while its cache keeps only who it is and its version.
//! So the fleet is in memory once, as the planner's trees, and a fleet listed whole waits for its
//! first plan as those trees, not also as text or as typed copies.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use capi2argo_core::{Limits, ObjectKey, ObjectRead};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use serde::Serialize;

/// A watched object as the planner will read it: its version, a digest of what its cache was
/// given of it but its version (an object written again with nothing kept changed wakes
/// nothing), and until a plan takes it, the object read for the planner (or why it could not
/// be).
pub struct Arrived {
    pub version: String,
    digest: u64,
    pub read: Option<Result<ObjectRead, String>>,
}

/// The objects that wait for the planner or are held by it, by the cache that read them (two
/// caches may read one Secret), namespace and name.
pub struct Arrivals {
    held: Mutex<Held>,
    /// What each object is read within: the planner's limits, which a watch reads with on its
    /// own task (the planner is the reconciler's alone).
    limits: Limits,
}

/// What [`Arrivals`] holds: looked up by borrowed names, as a plan's input is taken without
/// copying ten thousand names; and what arrived or went since the last feed took it.
#[derive(Default)]
pub struct Held {
    by_origin: HashMap<usize, HashMap<String, HashMap<String, Arrived>>>,
    /// The origin, namespace and name of each object that arrived or went since the last
    /// feed; `None`: look at everything (at first, after a list, or a feed that failed).
    touched: Option<Vec<(usize, String, String)>>,
}

/// More objects touched than this between two feeds, and the next looks at everything: a
/// controller that does not plan (a standby) holds no list that grows without end.
const TOUCHED_AT_MOST: usize = 4096;

impl Held {
    /// What arrived or went since the last time it was asked (`None`: everything may have),
    /// from now on recorded anew.
    pub fn take_touched(&mut self) -> Option<Vec<(usize, String, String)>> {
        self.touched.replace(Vec::new())
    }

    /// The next feed looks at everything.
    pub fn touch_all(&mut self) {
        self.touched = None;
    }

    fn touch(&mut self, origin: usize, key: &ObjectKey) {
        if let Some(touched) = &mut self.touched {
            if touched.len() < TOUCHED_AT_MOST {
                touched.push((origin, key.namespace.clone(), key.name.clone()));
            } else {
                self.touched = None;
            }
        }
    }

    pub fn get_mut(&mut self, origin: usize, namespace: &str, name: &str) -> Option<&mut Arrived> {
        self.by_origin
            .get_mut(&origin)?
            .get_mut(namespace)?
            .get_mut(name)
    }

    fn insert(&mut self, origin: usize, key: ObjectKey, arrived: Arrived) {
        self.touch(origin, &key);
        let names = self.by_origin.entry(origin).or_default();
        names
            .entry(key.namespace)
            .or_default()
            .insert(key.name, arrived);
    }

    fn remove(&mut self, origin: usize, key: &ObjectKey) -> Option<Arrived> {
        self.touch(origin, key);
        let names = self.by_origin.get_mut(&origin)?.get_mut(&key.namespace)?;
        names.remove(&key.name)
    }

    /// Every object held, for tests.
    #[cfg(test)]
    pub fn values(&self) -> impl Iterator<Item = &Arrived> {
        self.by_origin
            .values()
            .flat_map(|n| n.values())
            .flat_map(|n| n.values())
    }
}

impl Arrivals {
    /// Nothing held yet; each object to be read within `limits`.
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
    /// An object read beside the caches, for the planner, within the same limits.
    pub fn read(&self, json: &[u8]) -> Result<ObjectRead, String> {
        ObjectRead::new(json, &self.limits).map_err(|e| e.to_string())
    }
}

/// What a cache hands over of each object it watches, and what it keeps.
pub trait Handed:
    kube::Resource<DynamicType: Eq + std::hash::Hash + Clone> + Clone + 'static
{
    /// Writes it as JSON, with `types` (its cache's apiVersion and kind) when it was listed
    /// without them.
    fn write(&self, types: &(String, String), out: impl std::io::Write) -> serde_json::Result<()>;

    /// Cuts it to what its cache keeps: who it is, its version, and what an Event about it
    /// reads.
    fn cut_to_identity(&mut self);
}

/// The metadata a cache keeps of every object: its namespace, name, uid and version.
fn identity(meta: &mut ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.take(),
        namespace: meta.namespace.take(),
        uid: meta.uid.take(),
        resource_version: meta.resource_version.take(),
        ..ObjectMeta::default()
    }
}

impl Handed for Secret {
    fn write(&self, _: &(String, String), out: impl std::io::Write) -> serde_json::Result<()> {
        // k8s-openapi writes a Secret's apiVersion and kind itself.
        serde_json::to_writer(out, self)
    }

    /// Of a Secret, also the label an Event names its Cluster API Cluster by.
    fn cut_to_identity(&mut self) {
        use capi2argo_core::well_known::CLUSTER_NAME_LABEL;
        let cluster = self
            .metadata
            .labels
            .as_mut()
            .and_then(|l| l.remove_entry(CLUSTER_NAME_LABEL));
        let mut metadata = identity(&mut self.metadata);
        metadata.labels = cluster.map(|entry| [entry].into());
        *self = Secret {
            metadata,
            ..Secret::default()
        };
    }
}

/// An object listed without its apiVersion and kind, written with those of its cache.
#[derive(Serialize)]
struct Typed<'o> {
    #[serde(rename = "apiVersion")]
    api_version: &'o str,
    kind: &'o str,
    #[serde(flatten)]
    object: &'o DynamicObject,
}

impl Handed for DynamicObject {
    fn write(&self, types: &(String, String), out: impl std::io::Write) -> serde_json::Result<()> {
        if self.types.is_some() {
            return serde_json::to_writer(out, self);
        }
        let typed = Typed {
            api_version: &types.0,
            kind: &types.1,
            object: self,
        };
        serde_json::to_writer(out, &typed)
    }

    fn cut_to_identity(&mut self) {
        *self = DynamicObject {
            types: None,
            metadata: identity(&mut self.metadata),
            data: serde_json::Value::Null,
        };
    }
}

/// How one cache hands its objects over: its place among the caches, the apiVersion and kind
/// of what it watches, and the objects of a list under way (the cache takes them all at once
/// when the list is done).
pub struct Handover<K> {
    pub arrivals: Arc<Arrivals>,
    pub origin: usize,
    types: (String, String),
    listing: Vec<(ObjectKey, Listing)>,
    _kind: std::marker::PhantomData<fn(K)>,
}

/// An object of a list under way: read anew, or held already at the version listed.
enum Listing {
    Read(Arrived),
    Held,
}

impl<K: Handed> Handover<K> {
    pub fn new(arrivals: Arc<Arrivals>, origin: usize, types: (String, String)) -> Handover<K> {
        Handover {
            arrivals,
            origin,
            types,
            listing: Vec::new(),
            _kind: std::marker::PhantomData,
        }
    }

    /// Applies `event` to the cache, each object it brings read for the planner and cut to its
    /// identity for the cache; whether the plan's input changed (an object written again with
    /// nothing kept changed, a Cluster's heartbeat cut to what a plan reads, did not).
    pub fn apply(&mut self, writer: &mut Writer<K>, mut event: Event<K>) -> bool {
        let changed = match &mut event {
            Event::Apply(object) => {
                let (key, was) = self.held(object);
                // Sent again as it is held (a watch resumed): nothing to read. Else it is read
                // without holding the lock (every watch and the feed take it); only this watch
                // writes what is held for its cache, so what was held is still what it read.
                let arrived = match was {
                    Some((true, _)) => None,
                    _ => Some(self.read(object)),
                };
                let mut held = self.arrivals.lock();
                let changed = match arrived {
                    Some(arrived) => {
                        let changed = was.map(|(_, digest)| digest) != Some(arrived.digest);
                        held.insert(self.origin, key, arrived);
                        changed
                    }
                    None => false,
                };
                object.cut_to_identity();
                writer.apply_watcher_event(&event);
                return changed;
            }
            Event::Delete(object) => {
                let key = key(object, &self.types);
                let mut held = self.arrivals.lock();
                held.remove(self.origin, &key);
                object.cut_to_identity();
                writer.apply_watcher_event(&event);
                return true;
            }
            Event::Init => {
                self.listing.clear();
                false
            }
            Event::InitApply(object) => {
                let (key, was) = self.held(object);
                // Listed again at the version held (a watch that expired): not read twice.
                let listing = match was {
                    Some((true, _)) => Listing::Held,
                    _ => Listing::Read(self.read(object)),
                };
                self.listing.push((key, listing));
                object.cut_to_identity();
                false
            }
            Event::InitDone => {
                // The cache takes the list's objects now, and with them they arrive.
                let mut held = self.arrivals.lock();
                // What the planner holds of this cache is compared whole at the next feed.
                held.touch_all();
                let mut before = held.by_origin.remove(&self.origin).unwrap_or_default();
                for (key, listing) in self.listing.drain(..) {
                    let arrived = match listing {
                        Listing::Read(arrived) => Some(arrived),
                        Listing::Held => before
                            .get_mut(&key.namespace)
                            .and_then(|names| names.remove(&key.name)),
                    };
                    if let Some(arrived) = arrived {
                        held.insert(self.origin, key, arrived);
                    }
                }
                writer.apply_watcher_event(&event);
                return true;
            }
        };
        writer.apply_watcher_event(&event);
        changed
    }

    /// The key of `object`, and of what is held under it: whether at `object`'s version, and
    /// its digest.
    fn held(&self, object: &K) -> (ObjectKey, Option<(bool, u64)>) {
        let key = key(object, &self.types);
        let version = object.meta().resource_version.as_deref();
        let was = self
            .arrivals
            .lock()
            .get_mut(self.origin, &key.namespace, &key.name)
            .map(|kept| (version == Some(kept.version.as_str()), kept.digest));
        (key, was)
    }

    /// `object` read for the planner, with the digest of what its cache was given of it.
    fn read(&self, object: &mut K) -> Arrived {
        let version = object.meta_mut().resource_version.take();
        let mut digest = Digest(DefaultHasher::new());
        let written = object.write(&self.types, &mut digest);
        object.meta_mut().resource_version = version;
        let mut json = Vec::new();
        let read = written
            .and_then(|()| object.write(&self.types, &mut json))
            .map_err(|e| format!("it cannot be written as JSON: {e}"))
            .and_then(|()| self.arrivals.read(&json));
        Arrived {
            version: object.meta().resource_version.clone().unwrap_or_default(),
            digest: digest.0.finish(),
            read: Some(read),
        }
    }
}

/// A hash of what is written to it.
struct Digest(DefaultHasher);

impl std::io::Write for Digest {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The key a plan knows an object of a cache of `types` by.
fn key<K: kube::Resource>(object: &K, types: &(String, String)) -> ObjectKey {
    let meta = object.meta();
    ObjectKey::new(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        &types.1,
    )
}
