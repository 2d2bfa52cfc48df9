//! A planner for a host that runs for long (the controller): each object of the fleet read once,
//! when it changes, and every plan made from the objects kept, never from the whole fleet's
//! text read again. Its plan is the plan of the same objects, in the same order, read afresh.
//!
//! The host keeps it and feeds it what changed: [`Planner::keep`] an object at a version,
//! [`Planner::forget`] one that went. It decides nothing itself; [`Planner::plan`] runs the
//! same steps as [`crate::plan`] over the trees it holds.

use std::collections::BTreeMap;

use krm::object::Object;
use krm::{Form, Input, InputError, Item};
use yaml::{Limits, Node};

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

/// An object as the plan reads it, and the version the host gave it.
struct Kept {
    version: String,
    /// New whenever the object is kept again: what the conversions remembered tell objects
    /// apart by.
    stamp: u64,
    node: Node<'static>,
    /// The length of the text it was read from.
    bytes: usize,
}

/// The fleet's objects, each read once, planned from as they stand.
pub struct Planner {
    limits: Limits,
    objects: BTreeMap<ObjectKey, Kept>,
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
            objects: BTreeMap::new(),
            bytes: 0,
            certificates: Memo::default(),
            conversions: ConversionMemo::default(),
            next_stamp: 0,
        }
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Reads one object (JSON or YAML) and keeps it at `version`, in place of the one of its
    /// key; what the plan never reads of it is not kept. Its key, or why it was not kept.
    pub fn keep(&mut self, bytes: &[u8], version: &str) -> Result<ObjectKey, KeepError> {
        let input = krm::parse(bytes, &self.limits)?;
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
        self.next_stamp += 1;
        let kept = Kept {
            version: version.to_string(),
            stamp: self.next_stamp,
            node: node.into_owned(),
            bytes: bytes.len(),
        };
        self.bytes += kept.bytes;
        if let Some(before) = self.objects.insert(key.clone(), kept) {
            self.bytes -= before.bytes;
        }
        Ok(key)
    }

    /// Forgets the object `key`; whether it held it.
    pub fn forget(&mut self, key: &ObjectKey) -> bool {
        let Some(gone) = self.objects.remove(key) else {
            return false;
        };
        self.bytes -= gone.bytes;
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

    /// The objects it holds and their versions, in the plan's order: a host that lists its own
    /// objects in that order compares the two lists in one pass.
    pub fn versions(&self) -> impl Iterator<Item = (&ObjectKey, &str)> {
        self.objects
            .iter()
            .map(|(k, kept)| (k, kept.version.as_str()))
    }

    /// The plan of the objects it holds, as [`crate::plan`] makes it of a `kind: List` of them
    /// in the order of their keys. Each object was read within the limits it was kept under;
    /// all of them together are held to `options`' limits on items and bytes, as one input is.
    pub fn plan(&self, options: &Options, files: &mut dyn Files) -> Result<Finished, RunError> {
        let limits = &options.limits;
        if self.objects.len() > limits.max_items {
            return Err(InputError::TooManyItems {
                count: self.objects.len(),
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
        let items = self
            .objects
            .values()
            .map(|kept| Item::generated(kept.node.borrowed(), false))
            .collect();
        let stamps: Vec<u64> = self.objects.values().map(|kept| kept.stamp).collect();
        let input = Input {
            text: "",
            form: Form::Stream,
            items,
            function_config: None,
            function_config_text: None,
            dash_indent: 0,
        };
        let memory = Memory {
            certificates: &self.certificates,
            conversions: &self.conversions,
            stamps: &stamps,
        };
        let finished = execute_input(
            input,
            options,
            files,
            Output::PlanOnly,
            Some(memory),
            &mut |_| {},
        );
        self.certificates.sweep();
        finished
    }
}
