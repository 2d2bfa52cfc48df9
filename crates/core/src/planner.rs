//! A planner for a host that runs for long (the controller): each object of the fleet read once,
//! when it changes, and every plan made from the objects kept, never from the whole fleet's
//! text read again. Its plan is the plan of the same objects, in the same order, read afresh.
//!
//! The host keeps it and feeds it what changed: [`Planner::keep`] an object at a version,
//! [`Planner::forget`] one that went. It decides nothing itself; [`Planner::plan`] runs the
//! same steps as [`crate::plan`] over the trees it holds.

use std::collections::HashSet;
use std::sync::LazyLock;

use krm::object::Object;
use krm::{Form, Input, InputError, Item};
use yaml::{Limits, Node, same_content};

use crate::reconcile::{ConversionMemo, Memory, Output, cut_unread};
use crate::run::{Files, Finished, Options, RunError, execute_input};
use crate::validate::tls::Memo;

/// Where an object stands in the plan's input: the order of namespace, name and kind, as a
/// host that lists its caches writes them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Its namespace; empty for a cluster-scoped object.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
}

impl ObjectKey {
    /// The key of the object `namespace`/`name` of `kind`.
    pub fn new(namespace: &str, name: &str, kind: &str) -> ObjectKey {
        ObjectKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
            kind: kind.to_string(),
        }
    }

    /// Its namespace, name and kind, borrowed: what a host compares its own objects with.
    pub fn parts(&self) -> (&str, &str, &str) {
        (&self.namespace, &self.name, &self.kind)
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace.as_str() {
            "" => write!(f, "{} {}", self.kind, self.name),
            namespace => write!(f, "{} {namespace}/{}", self.kind, self.name),
        }
    }
}

/// Why an object could not be kept: the planner holds what it held before.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The bytes are not one readable object.
    #[error("{0}")]
    Input(#[from] InputError),
    /// The bytes hold no object, more than one, or a list of them.
    #[error("not one object: {0} found")]
    NotOne(usize),
    /// The object has no kind or no name.
    #[error("an object without a kind or a name cannot be kept")]
    Unnamed,
}

/// An object read for a planner, not kept yet: a host may read objects as they arrive (on the
/// threads that receive them) and hand them to the planner later, holding each in the form the
/// planner keeps instead of as its text.
#[derive(Debug)]
pub struct ObjectRead {
    key: ObjectKey,
    node: Node<'static>,
    /// The length of the text it was read from.
    bytes: usize,
}

impl ObjectRead {
    /// Reads one object (JSON or YAML) within `limits`; what the plan never reads of it is cut.
    pub fn new(bytes: &[u8], limits: &Limits) -> Result<ObjectRead, KeepError> {
        let input = krm::parse(bytes, limits)?;
        if input.form != Form::Stream {
            return Err(KeepError::NotOne(input.items.len()));
        }
        let [item] =
            <[Item; 1]>::try_from(input.items).map_err(|items| KeepError::NotOne(items.len()))?;
        let mut node = item.node;
        cut_unread(&mut node);
        let object = Object::new(&node);
        let (Some(kind), Some(name)) = (object.kind(), object.name()) else {
            return Err(KeepError::Unnamed);
        };
        let key = ObjectKey::new(object.namespace_written().unwrap_or_default(), name, kind);
        Ok(ObjectRead {
            key,
            node: node.into_owned_with(&repeated),
            bytes: bytes.len(),
        })
    }

    /// The key it is kept under.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }
}

/// The keys and values that most kept objects repeat: Kubernetes' own, Cluster API's, Argo CD's
/// and the function's labels. A kept tree borrows these instead of owning a copy of each: at
/// ten thousand clusters, several hundred thousand small strings.
static REPEATED: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    use crate::access::{KUBECONFIG_ANNOTATION, KUBECONFIG_VERSION_ANNOTATION, TOKEN_LABEL};
    use crate::convert::argocd::{
        OWNED_LABEL, SECRET_TYPE_LABEL, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
    };
    use crate::sources::{SOURCE_LABEL, capi::CLUSTER_NAME_LABEL};
    [
        // Every object's.
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "controller",
        "blockOwnerDeletion",
        "spec",
        "status",
        "true",
        "false",
        "v1",
        // A Secret's.
        "Secret",
        "Opaque",
        "type",
        "data",
        "stringData",
        "value",
        "config",
        "server",
        "cluster.x-k8s.io/secret",
        CLUSTER_NAME_LABEL,
        SECRET_TYPE_LABEL,
        "cluster",
        OWNED_LABEL,
        SOURCE_NAME_LABEL,
        SOURCE_NAMESPACE_LABEL,
        SOURCE_LABEL,
        TOKEN_LABEL,
        KUBECONFIG_ANNOTATION,
        KUBECONFIG_VERSION_ANNOTATION,
        "capi2argo.dev/cluster-class",
        "capi2argo.dev/control-plane-kind",
        "capi2argo.dev/kubernetes-minor",
        "capi2argo.dev/kubernetes-version",
        // A Cluster's.
        "Cluster",
        "cluster.x-k8s.io/v1beta1",
        "cluster.x-k8s.io/v1beta2",
        "controlPlaneRef",
        "infrastructureRef",
        "controlPlaneEndpoint",
        "host",
        "port",
        "topology",
        "class",
        "classRef",
        "version",
        "paused",
        "phase",
        "Provisioned",
        "KubeadmControlPlane",
        "controlplane.cluster.x-k8s.io/v1beta1",
        "controlplane.cluster.x-k8s.io/v1beta2",
    ]
    .into_iter()
    .collect()
});

/// The longest of [`REPEATED`]: a longer text is not looked up.
const REPEATED_LONGEST: usize = 40;

/// `text` as the static string [`REPEATED`] holds, if it is one.
fn repeated(text: &str) -> Option<&'static str> {
    if text.len() > REPEATED_LONGEST {
        return None;
    }
    REPEATED.get(text).copied()
}

/// What the planner knows of a kept object besides its tree.
struct Entry {
    key: ObjectKey,
    version: String,
    /// The length of the text it was read from.
    bytes: usize,
}

/// The fleet's objects, each read once, planned from as they stand.
///
/// The objects are held as the plan's input items, in the plan's order, so that a plan reads
/// them where they are: a plan of ten thousand objects copies none of their trees.
pub struct Planner {
    limits: Limits,
    /// The kept objects' keys and versions, in the order of their keys.
    entries: Vec<Entry>,
    /// Their trees, as the plan's input items, in the same order.
    items: Vec<Item<'static>>,
    /// Their stamps, in the same order: new whenever an object is kept again, what the
    /// conversions remembered tell objects apart by.
    stamps: Vec<u64>,
    /// Whether each one's metadata has the shape the API server enforces, in the same order:
    /// found once, when it is kept, not walked again by every plan's scan.
    sound: Vec<bool>,
    /// The length of every kept object's text: the input a whole plan would read, bounded as
    /// that input is.
    bytes: usize,
    /// The certificates of the last plan, each read once.
    certificates: Memo,
    /// The conversions of the last plan, each kept while what it was made from stays.
    conversions: ConversionMemo,
    /// The stamp the next object kept gets.
    next_stamp: u64,
}

impl Planner {
    /// An empty planner that reads objects within `limits`.
    pub fn new(limits: Limits) -> Planner {
        Planner {
            limits,
            entries: Vec::new(),
            items: Vec::new(),
            stamps: Vec::new(),
            sound: Vec::new(),
            bytes: 0,
            certificates: Memo::default(),
            conversions: ConversionMemo::default(),
            next_stamp: 0,
        }
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where `key` stands among the kept objects, or where it would.
    fn place(&self, key: &ObjectKey) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| e.key.cmp(key))
    }

    /// Reads one object (JSON or YAML) and keeps it at `version`, in place of the one of its
    /// key; what the plan never reads of it is not kept. Its key, or why it was not kept.
    pub fn keep(&mut self, bytes: &[u8], version: &str) -> Result<ObjectKey, KeepError> {
        let read = ObjectRead::new(bytes, &self.limits)?;
        let key = read.key.clone();
        self.keep_read(read, version);
        Ok(key)
    }

    /// Keeps an object read already at `version`, in place of the one of its key.
    pub fn keep_read(&mut self, read: ObjectRead, version: &str) {
        self.next_stamp += 1;
        let ObjectRead { key, node, bytes } = read;
        let item = Item::generated(node, false);
        self.bytes += bytes;
        // Objects come in the order of their keys mostly (a host feeds what it lists in that
        // order): most keys are new at the end, or kept again in place.
        let at = match self.entries.last() {
            Some(last) if last.key < key => Err(self.entries.len()),
            _ => self.place(&key),
        };
        let entry = Entry {
            key,
            version: version.to_string(),
            bytes,
        };
        match at {
            // Read as it was (written again with nothing the plan reads changed): what was
            // remembered of it holds, so it keeps its stamp.
            Ok(at) if same_content(&self.items[at].node, &item.node) => {
                self.bytes -= self.entries[at].bytes;
                self.entries[at] = entry;
            }
            Ok(at) => {
                self.bytes -= self.entries[at].bytes;
                self.entries[at] = entry;
                self.sound[at] = crate::reconcile::has_sound_metadata(&item.node);
                self.items[at] = item;
                self.stamps[at] = self.next_stamp;
            }
            Err(at) => {
                self.entries.insert(at, entry);
                self.sound
                    .insert(at, crate::reconcile::has_sound_metadata(&item.node));
                self.items.insert(at, item);
                self.stamps.insert(at, self.next_stamp);
            }
        }
    }

    /// Forgets the object `key`; whether it held it.
    pub fn forget(&mut self, key: &ObjectKey) -> bool {
        let Ok(at) = self.place(key) else {
            return false;
        };
        self.bytes -= self.entries.remove(at).bytes;
        self.items.remove(at);
        self.stamps.remove(at);
        self.sound.remove(at);
        true
    }

    /// How many clusters' conversions it keeps from its last plan.
    pub fn conversions_kept(&self) -> usize {
        self.conversions.len()
    }

    /// Of its last plan: how many clusters' conversions it gave back as they were, and how many
    /// it made (a cluster that changed, or one new to it).
    pub fn conversions_of_last_plan(&self) -> (usize, usize) {
        self.conversions.last_plan()
    }

    /// The version it holds the object of `key` at, if it holds it: a host that knows what
    /// changed compares only that.
    pub fn version_of(&self, key: &ObjectKey) -> Option<&str> {
        let at = self.place(key).ok()?;
        Some(self.entries[at].version.as_str())
    }

    /// The objects it holds and their versions, in the plan's order: a host that lists its own
    /// objects in that order compares the two lists in one pass.
    pub fn versions(&self) -> impl Iterator<Item = (&ObjectKey, &str)> {
        self.entries.iter().map(|e| (&e.key, e.version.as_str()))
    }

    /// The plan of the objects it holds, as [`crate::plan`] makes it of a `kind: List` of them
    /// in the order of their keys. Each object was read within the limits it was kept under;
    /// all of them together are held to `options`' limits on items and bytes, as one input is.
    pub fn plan(&mut self, options: &Options, files: &mut dyn Files) -> Result<Finished, RunError> {
        let limits = &options.limits;
        if self.entries.len() > limits.max_items {
            return Err(InputError::TooManyItems {
                count: self.entries.len(),
                limit: limits.max_items,
            }
            .into());
        }
        if self.bytes > limits.max_input_bytes {
            return Err(InputError::TooLarge {
                limit: limits.max_input_bytes,
            }
            .into());
        }
        // The plan reads the items where they are kept: they are lent to its input and taken
        // back after it. It changes none of them (it cuts only what it copies verbatim, and
        // every kept item is written anew), and the items the settings bring along come after
        // them, so what comes back past their number is the plan's own.
        let kept = self.items.len();
        let mut input = Input {
            text: "",
            form: Form::Stream,
            items: std::mem::take(&mut self.items),
            function_config: None,
            function_config_text: None,
            dash_indent: 0,
        };
        let memory = Memory {
            certificates: &self.certificates,
            conversions: &self.conversions,
            stamps: &self.stamps,
            sound: &self.sound,
        };
        let finished = execute_input(
            &mut input,
            options,
            files,
            Output::PlanOnly,
            Some(memory),
            &mut |_| {},
        );
        input.items.truncate(kept);
        self.items = input.items;
        self.certificates.sweep();
        finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_repeated_string_is_looked_up() {
        for text in REPEATED.iter() {
            assert!(
                text.len() <= REPEATED_LONGEST,
                "{text} is longer than REPEATED_LONGEST"
            );
            let copy = String::from(*text);
            assert_eq!(repeated(&copy), Some(*text));
        }
        assert_eq!(repeated("bench-fleet"), None);
    }
}
