//! Workload clusters whose setup failed wait before they are tried again, and clusters just
//! minted for cool down: an unreachable cluster never holds every reconcile up.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Workload clusters that failed, and when each may be tried again (a doubling wait, from 10 s
/// to 5 minutes), so an unreachable cluster does not hold every reconcile up; and clusters just
/// minted for, which wait a minute whatever their clocks say (a workload cluster's clock behind
/// the controller's would make a fresh token look due at once).
///
/// A wait holds for the credential it failed with: a kubeconfig Secret fixed (another
/// credential, `tried`) is tried at once.
#[derive(Default)]
pub struct Backoff {
    waits: BTreeMap<String, Wait>,
    cooling: BTreeMap<String, Instant>,
}

/// When a failing cluster may be tried again, the wait that led there, and a fingerprint of
/// the credential it failed with.
struct Wait {
    next: Instant,
    wait: Duration,
    tried: u64,
}

/// How long a cluster just minted for waits before it may be minted for again.
const COOLDOWN: Duration = Duration::from_secs(60);

impl Backoff {
    /// Whether `key` may be tried now; `by_age`: for a token's age, which a fresh token's
    /// cooldown holds back (a rotated kubeconfig, a new grant do not wait).
    /// `tried`: a fingerprint of the credential it would be tried with now.
    pub fn ready(&self, key: &str, tried: u64, by_age: bool) -> bool {
        let now = Instant::now();
        self.waits
            .get(key)
            .is_none_or(|w| now >= w.next || w.tried != tried)
            && (!by_age || self.cooling.get(key).is_none_or(|until| now >= *until))
    }

    /// A token was minted and kept for `key`.
    pub fn minted(&mut self, key: &str) {
        self.waits.remove(key);
        self.cooling
            .insert(key.to_string(), Instant::now() + COOLDOWN);
    }

    /// Minting or keeping a token for `key` failed, with the credential `tried`.
    pub fn failed(&mut self, key: &str, tried: u64) {
        let wait = self
            .waits
            .get(key)
            .filter(|w| w.tried == tried)
            .map_or(Duration::from_secs(10), |w| {
                (w.wait * 2).min(Duration::from_secs(300))
            });
        let next = Instant::now() + wait;
        self.waits
            .insert(key.to_string(), Wait { next, wait, tried });
    }

    /// The next moment a cluster waiting here may be tried again.
    pub fn next(&self) -> Option<Instant> {
        let now = Instant::now();
        self.waits
            .values()
            .map(|w| w.next)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 47): a kubeconfig Secret fixed while its cluster waited in the backoff
    /// got its token only at the next retry, up to five minutes later; another credential is
    /// tried at once, the same one waits, doubling.
    #[test]
    fn a_fixed_credential_is_tried_at_once() {
        let mut backoff = Backoff::default();
        backoff.failed("fleet/a", 1);
        assert!(!backoff.ready("fleet/a", 1, false));
        assert!(backoff.ready("fleet/a", 2, false));
        backoff.failed("fleet/a", 1);
        assert_eq!(backoff.waits["fleet/a"].wait, Duration::from_secs(20));
        backoff.failed("fleet/a", 2);
        assert_eq!(backoff.waits["fleet/a"].wait, Duration::from_secs(10));
    }
}
