//! A parameter set as Argo CD's templates and post-selectors read it: its keys flat, a value
//! known or not, maps among them, and whether a generator the plan cannot evaluate may add keys
//! of its own. The template language reads it ([`Lookup`]); the generators build and combine it.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use std::collections::BTreeMap;

#[cfg(test)]
use super::ordered::ordered_map;

/// A parameter looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'p> {
    Found(&'p str),
    /// Not a value but a map (`metadata.labels`): of strings, whose missing keys index to `""`,
    /// or of anything.
    Map {
        strings: bool,
    },
    /// No such parameter.
    Missing,
    /// Its value is one the plan cannot know.
    Unknown,
}

/// One parameter set, its keys flat (`metadata.labels.env`, as Argo CD flattens them for
/// fasttemplate and for post-selectors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Params {
    pub(super) values: BTreeMap<String, Option<String>>,
    /// The maps among the parameters, by flat path, and whether each holds strings (a Go
    /// template walks them).
    pub(super) maps: BTreeMap<String, bool>,
    /// Every key is here: no generator the plan cannot evaluate adds its own.
    pub(super) complete: bool,
}

impl Params {
    /// Known values only.
    #[cfg(test)]
    pub fn known(pairs: impl IntoIterator<Item = (String, String)>) -> Params {
        Params {
            values: ordered_map(pairs.into_iter().map(|(k, v)| (k, Some(v)))),
            maps: BTreeMap::new(),
            complete: true,
        }
    }

    /// What a generator the plan cannot evaluate gives: keys and values unknown.
    pub fn unknown() -> Params {
        Params::default()
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }

    pub fn get(&self, key: &str) -> Lookup<'_> {
        match self.values.get(key) {
            Some(Some(v)) => Lookup::Found(v),
            Some(None) => Lookup::Unknown,
            None => match self.maps.get(key) {
                Some(&strings) => Lookup::Map { strings },
                None if self
                    .values
                    .keys()
                    .any(|k| k.strip_prefix(key).is_some_and(|r| r.starts_with('.'))) =>
                {
                    Lookup::Map { strings: false }
                }
                None if self.complete => Lookup::Missing,
                None => Lookup::Unknown,
            },
        }
    }

    /// The keys whose values differ between two sets (a key only one has included).
    pub fn differing(&self, other: &Params) -> Vec<String> {
        let mut keys: Vec<String> = self
            .values
            .iter()
            .filter(|(k, v)| other.values.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
        keys.extend(
            other
                .values
                .keys()
                .filter(|k| !self.values.contains_key(*k))
                .cloned(),
        );
        keys
    }

    /// A key's value made unknown, when it has one.
    pub(super) fn forget(&mut self, key: &str) {
        if let Some(v) = self.values.get_mut(key) {
            *v = None;
        }
    }

    /// `other`'s keys merged in: where both have a key, `other` wins when `over`.
    pub(super) fn merge(&mut self, other: &Params, over: bool) {
        for (k, v) in &other.values {
            if over || !self.values.contains_key(k) {
                self.values.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in &other.maps {
            self.maps.entry(k.clone()).or_insert(*v);
        }
        self.complete &= other.complete;
    }
}
