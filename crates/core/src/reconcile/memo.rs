//! What each cluster's conversion gave, kept between the plans of a host that plans again and
//! again (the planner), and given back while nothing it was made from has changed: the same
//! settings, the same kubeconfig Secrets, the same objects it looked up (its Cluster, control
//! plane, token Secret, the Argo CD Secret of its name, each found or not), and a host's time
//! before the first at which what it said of certificates or tokens changes.
//!
//! The host tells objects apart by a stamp it gives each one it keeps, new whenever the object
//! changes: an object without one (read from the settings' own files) is never remembered.

use std::collections::HashMap;
use std::sync::Mutex;

use krm::finding::ResourceRef;
use yaml::Limits;

use crate::config::Config;
use crate::projects::Projects;

use super::found::{Scan, Target};
use super::ids::{ObjectKey, SecretId, SourceKey};

/// Everything a conversion reads that is the same for every cluster: when any of it differs,
/// nothing remembered is given back.
#[derive(Clone, PartialEq)]
pub(super) struct Settings {
    pub config: Config,
    pub projects: Option<(Projects, bool)>,
    pub judges_applications: bool,
    /// The host gives its time.
    pub timed: bool,
    /// The input is a ResourceList (a new Secret gets kpt's path).
    pub resource_list: bool,
    pub limits: Limits,
    pub function_config: Option<ResourceRef>,
}

/// A cluster, as the conversion groups its kubeconfig Secrets: the source that took them, their
/// namespace and the cluster's name.
pub(super) type Group = (usize, String, String);

/// An object a conversion looked up, found or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lookup {
    /// The Cluster of a namespace and name.
    Cluster(String, String),
    /// A control plane object.
    ControlPlane(ObjectKey),
    /// The token Secret for a kubeconfig Secret.
    Token(SecretId),
    /// The Secret of a namespace and name (an Argo CD Secret a conversion would replace).
    Secret(SecretId),
}

/// What a lookup found: the object's stamp and what the scan made of it; `None` for nothing.
type Seen = Option<(u64, u8)>;

impl Lookup {
    /// What the lookup finds now; `Err` when it finds an object without a stamp.
    fn seen(&self, scan: &Scan, stamps: &[u64]) -> Result<Seen, Unstamped> {
        let (at, role) = match self {
            Lookup::Cluster(namespace, name) => (scan.cluster(namespace, name), 0),
            Lookup::ControlPlane(key) => (scan.control_planes.get(key).copied(), 0),
            Lookup::Token(id) => (scan.tokens.get(id).map(|t| t.index), 0),
            // Whether the plan may replace it is the scan's word, beside the object's own.
            Lookup::Secret(id) => match scan.target(id) {
                Target::Free => (None, 0),
                Target::Replaces(owned) => (Some(owned.index), 1),
                Target::Kept(at) => (Some(at), 2),
            },
        };
        at.map(|at| Ok((stamp(stamps, at)?, role))).transpose()
    }
}

/// The settings a plan began under, as the memo counts them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Generation(u64);

/// An object the host gave no stamp.
#[derive(Debug)]
pub(super) struct Unstamped;

/// The stamp of input item `at`.
pub(super) fn stamp(stamps: &[u64], at: usize) -> Result<u64, Unstamped> {
    stamps.get(at).copied().ok_or(Unstamped)
}

/// What one conversion was made from, as the memo compares it.
#[derive(Debug, PartialEq)]
pub(super) struct Made {
    /// The cluster's kubeconfig Secrets and their stamps.
    pub members: Vec<(SourceKey, u64)>,
    /// What it looked up, and what it found.
    pub lookups: Vec<(Lookup, Seen)>,
}

impl Made {
    /// What `lookups` find now, for the members given.
    pub fn now(
        members: Vec<(SourceKey, u64)>,
        lookups: Vec<Lookup>,
        scan: &Scan,
        stamps: &[u64],
    ) -> Result<Made, Unstamped> {
        let lookups = lookups
            .into_iter()
            .map(|l| {
                let seen = l.seen(scan, stamps)?;
                Ok((l, seen))
            })
            .collect::<Result<_, Unstamped>>()?;
        Ok(Made { members, lookups })
    }

    /// Whether every lookup finds what it found, the members being the same.
    fn holds(&self, members: &[(SourceKey, u64)], scan: &Scan, stamps: &[u64]) -> bool {
        self.members == members
            && self
                .lookups
                .iter()
                .all(|(l, seen)| l.seen(scan, stamps).is_ok_and(|now| now == *seen))
    }
}

/// A remembered conversion: what it was made from, when, until when it holds, and what it gave.
struct Entry<T> {
    made: Made,
    /// The host's time it was made at, and the first time after it at which it may differ.
    made_at: Option<i64>,
    until: Option<i64>,
    kept: T,
    /// Asked for since the last sweep.
    used: bool,
}

struct Inner<T> {
    settings: Option<Settings>,
    /// Counts the settings it was cleared for: a plan that began under other settings (two
    /// plans of one planner at once) neither reads nor writes what these keep.
    generation: u64,
    /// Boxed: the table keeps room for more entries than it holds, and a conversion is a
    /// kilobyte.
    entries: HashMap<Group, Box<Entry<T>>>,
    /// Of the plan under way (or the last one): conversions given back, and made and kept.
    recalled: usize,
    made: usize,
}

/// Each cluster's conversion, kept while what it was made from stays (see the module's
/// words). Behind a lock: a plan reads the planner it is made from, and remembers as it goes.
pub struct Memo<T> {
    inner: Mutex<Inner<T>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            inner: Mutex::new(Inner {
                settings: None,
                generation: 0,
                entries: HashMap::new(),
                recalled: 0,
                made: 0,
            }),
        }
    }
}

impl<T: Clone> Memo<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A plan begins under `settings`: what was remembered under others is forgotten. What
    /// the plan then recalls, remembers and sweeps is of these settings alone.
    pub(super) fn begin(&self, settings: &Settings) -> Generation {
        let mut inner = self.lock();
        (inner.recalled, inner.made) = (0, 0);
        if inner.settings.as_ref() != Some(settings) {
            inner.entries.clear();
            inner.settings = Some(settings.clone());
            inner.generation += 1;
        }
        Generation(inner.generation)
    }

    /// A plan that remembers nothing (it writes its output, or seals) begins: it recalls and
    /// makes nothing.
    pub(super) fn pass(&self) {
        let mut inner = self.lock();
        (inner.recalled, inner.made) = (0, 0);
    }

    /// What the conversion of `group` gave, when it was made from `members` and its lookups
    /// find what they found, at a time `now` within its bounds.
    pub(super) fn recall(
        &self,
        generation: Generation,
        group: &Group,
        members: &[(SourceKey, u64)],
        now: Option<i64>,
        scan: &Scan,
        stamps: &[u64],
    ) -> Option<T> {
        let mut inner = self.lock();
        if inner.generation != generation.0 {
            return None;
        }
        let entry = inner.entries.get_mut(group)?;
        let in_time = match now {
            None => true,
            Some(now) => {
                entry.made_at.is_some_and(|made| made <= now)
                    && entry.until.is_none_or(|until| now < until)
            }
        };
        if !in_time || !entry.made.holds(members, scan, stamps) {
            return None;
        }
        entry.used = true;
        let kept = entry.kept.clone();
        inner.recalled += 1;
        Some(kept)
    }

    /// Remembers what the conversion of `group` gave at `now`, made from `made`, holding until
    /// `until`.
    pub(super) fn remember(
        &self,
        generation: Generation,
        group: Group,
        made: Made,
        now: Option<i64>,
        until: Option<i64>,
        kept: T,
    ) {
        let entry = Entry {
            made,
            made_at: now,
            until,
            kept,
            used: true,
        };
        let mut inner = self.lock();
        if inner.generation != generation.0 {
            return;
        }
        inner.entries.insert(group, Box::new(entry));
        inner.made += 1;
    }

    /// Forgets the clusters no plan asked for since the last sweep.
    pub(super) fn sweep(&self, generation: Generation) {
        let mut inner = self.lock();
        if inner.generation == generation.0 {
            inner
                .entries
                .retain(|_, entry| std::mem::take(&mut entry.used));
        }
    }

    /// Of the last plan: how many conversions were given back, and how many made (and kept).
    pub(super) fn last_plan(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.recalled, inner.made)
    }

    /// How many clusters it holds.
    pub(super) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(namespaced_names: bool) -> Settings {
        Settings {
            config: Config {
                namespaced_names,
                ..Config::default()
            },
            projects: None,
            judges_applications: false,
            timed: true,
            resource_list: false,
            limits: Limits::default(),
            function_config: None,
        }
    }

    fn group() -> Group {
        (0, "fleet".into(), "alpha".into())
    }

    fn members() -> Vec<(SourceKey, u64)> {
        vec![(SourceKey::of("fleet", "alpha-kubeconfig"), 7)]
    }

    fn made() -> Made {
        Made {
            members: members(),
            lookups: Vec::new(),
        }
    }

    /// Two plans of one planner at once, under other settings: what the first made under its
    /// settings is neither given to the second nor kept for it.
    #[test]
    fn a_plan_under_other_settings_neither_reads_nor_writes_what_is_kept() {
        let memo: Memo<&str> = Memo::default();
        let scan = Scan::default();
        let first = memo.begin(&settings(false));
        memo.remember(first, group(), made(), Some(100), None, "first");
        assert_eq!(
            memo.recall(first, &group(), &members(), Some(100), &scan, &[]),
            Some("first")
        );
        let second = memo.begin(&settings(true));
        assert_eq!(
            memo.recall(first, &group(), &members(), Some(100), &scan, &[]),
            None
        );
        memo.remember(first, group(), made(), Some(100), None, "late");
        assert_eq!(
            memo.recall(second, &group(), &members(), Some(100), &scan, &[]),
            None
        );
        memo.remember(second, group(), made(), Some(100), None, "second");
        memo.sweep(first);
        assert_eq!(
            memo.recall(second, &group(), &members(), Some(100), &scan, &[]),
            Some("second")
        );
    }

    /// What was remembered holds from the time it was made until the time it said, not before
    /// (a clock set back) nor after.
    #[test]
    fn a_remembered_conversion_holds_within_its_times() {
        let memo: Memo<&str> = Memo::default();
        let scan = Scan::default();
        let at = memo.begin(&settings(false));
        memo.remember(at, group(), made(), Some(100), Some(200), "kept");
        let recall = |now| memo.recall(at, &group(), &members(), Some(now), &scan, &[]);
        assert_eq!(recall(99), None);
        assert_eq!(recall(100), Some("kept"));
        assert_eq!(recall(199), Some("kept"));
        assert_eq!(recall(200), None);
    }
}
