//! Workload clusters whose setup failed wait before they are tried again, and clusters just
//! minted for cool down: an unreachable cluster never holds every reconcile up.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Workload clusters that failed, and when each may be tried again (a doubling wait, from 10 s
/// to 5 minutes), so an unreachable cluster does not hold every reconcile up; and clusters just
/// minted for, which wait a minute whatever their clocks say (a workload cluster's clock behind
/// the controller's would make a fresh token look due at once).
#[derive(Default)]
pub struct Backoff {
    waits: BTreeMap<String, (Instant, Duration)>,
    cooling: BTreeMap<String, Instant>,
}

/// How long a cluster just minted for waits before it may be minted for again.
const COOLDOWN: Duration = Duration::from_secs(60);

impl Backoff {
    /// Whether `key` may be tried now; `by_age`: for a token's age, which a fresh token's
    /// cooldown holds back (a rotated kubeconfig, a new grant do not wait).
    pub fn ready(&self, key: &str, by_age: bool) -> bool {
        let now = Instant::now();
        self.waits.get(key).is_none_or(|(next, _)| now >= *next)
            && (!by_age || self.cooling.get(key).is_none_or(|until| now >= *until))
    }

    /// A token was minted and kept for `key`.
    pub fn minted(&mut self, key: &str) {
        self.waits.remove(key);
        self.cooling
            .insert(key.to_string(), Instant::now() + COOLDOWN);
    }

    /// Minting or keeping a token for `key` failed.
    pub fn failed(&mut self, key: &str) {
        let wait = self
            .waits
            .get(key)
            .map_or(Duration::from_secs(10), |(_, w)| {
                (*w * 2).min(Duration::from_secs(300))
            });
        self.waits
            .insert(key.to_string(), (Instant::now() + wait, wait));
    }

    /// The next moment a cluster waiting here may be tried again.
    pub fn next(&self) -> Option<Instant> {
        let now = Instant::now();
        self.waits
            .values()
            .map(|(next, _)| *next)
            .chain(self.cooling.values().copied())
            .filter(|t| *t > now)
            .min()
    }

    /// Forgets clusters the plan no longer has a token for.
    pub fn forget_all_but(&mut self, live: &BTreeSet<String>) {
        self.waits.retain(|k, _| live.contains(k));
        self.cooling.retain(|k, _| live.contains(k));
    }

    /// The clusters failing now.
    pub fn failing(&self) -> BTreeSet<String> {
        self.waits.keys().cloned().collect()
    }
}
