//! What became of each cluster this run, for the plan to say: converted (or paused), its Argo CD
//! Secret kept as it was and why, failed and why, skipped or ignored — a cluster that never had an
//! Argo CD Secret included, so that a plan over a fleet that fails to convert never reads as
//! nothing to do.

use std::collections::HashMap;
use std::fmt;

use super::ids::{SecretId, SourceKey};

/// Where a cluster stands after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClusterState {
    /// Its Argo CD Secret is what its kubeconfig gives (created, updated, renamed or unchanged).
    Converted,
    /// Converted, and its Cluster is paused: the Secret tells Argo CD to stop reconciling it.
    Paused,
    /// Its Argo CD Secret stays as it was (a guard, or a conversion that would weaken it).
    Kept,
    /// It gets no Argo CD Secret this time, for an error.
    Failed,
    /// `skipNotReady`: its Cluster is being deleted or not initialised.
    Skipped,
    /// Its Cluster carries the ignore label.
    Ignored,
    /// `credentials: serviceAccount`: it has no valid token yet (an Argo CD Secret it has is
    /// kept as it is; it never falls back to the admin credential).
    Waiting,
}

impl ClusterState {
    /// Every state, in the order the plan counts them.
    pub const ALL: [ClusterState; 7] = [
        ClusterState::Converted,
        ClusterState::Paused,
        ClusterState::Kept,
        ClusterState::Failed,
        ClusterState::Skipped,
        ClusterState::Ignored,
        ClusterState::Waiting,
    ];

    /// The state's word, as the plan shows it.
    pub fn word(self) -> &'static str {
        match self {
            ClusterState::Converted => "converted",
            ClusterState::Paused => "paused",
            ClusterState::Kept => "kept",
            ClusterState::Failed => "failed",
            ClusterState::Skipped => "skipped",
            ClusterState::Ignored => "ignored",
            ClusterState::Waiting => "waiting",
        }
    }
}

impl fmt::Display for ClusterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// What became of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOutcome {
    /// The kubeconfig Secret its Argo CD Secret is (or would be) made from.
    pub source: SecretId,
    /// The cluster, as its source names it.
    pub cluster: String,
    /// Its Argo CD Secret, when it has one this run (written, or kept as it is).
    pub secret: Option<SecretId>,
    /// Where it stands.
    pub state: ClusterState,
    /// Why, in a few words, for a state other than converted.
    pub reason: Option<String>,
    /// When the first certificate of its credentials (its CA's, its client's) stops being valid,
    /// in Unix seconds.
    pub expires: Option<i64>,
}

/// The outcomes while the steps decide them: one per cluster, found by any of its kubeconfig
/// Secrets; one a collision rule found to be another cluster's is folded into that one.
#[derive(Debug, Default)]
pub(super) struct Outcomes {
    all: Vec<Option<ClusterOutcome>>,
    by_key: HashMap<SourceKey, usize>,
}

impl Outcomes {
    /// Room for `clusters` more, made at once rather than as they come.
    pub fn reserve(&mut self, clusters: usize) {
        self.all.reserve(clusters);
        self.by_key.reserve(clusters);
    }

    /// A cluster made of the kubeconfig Secrets `members`, converted so far; its index.
    pub fn add(&mut self, source: SecretId, cluster: &str, members: &[SourceKey]) -> usize {
        let at = self.all.len();
        self.all.push(Some(ClusterOutcome {
            source,
            cluster: cluster.to_string(),
            secret: None,
            state: ClusterState::Converted,
            reason: None,
            expires: None,
        }));
        for key in members {
            self.by_key.insert(key.clone(), at);
        }
        at
    }

    /// The outcome at `at`, to change.
    pub fn get(&mut self, at: usize) -> Option<&mut ClusterOutcome> {
        self.all.get_mut(at).and_then(Option::as_mut)
    }

    /// The outcome of the cluster the kubeconfig Secret `key` belongs to.
    pub fn of_key(&mut self, key: &SourceKey) -> Option<&mut ClusterOutcome> {
        let at = *self.by_key.get(key)?;
        self.get(at)
    }

    /// The cluster at `at` is now in `state`, for `reason`; a failure is not undone by what a
    /// later step says.
    pub fn set(&mut self, at: usize, state: ClusterState, reason: impl Into<String>) {
        if let Some(o) = self.get(at).filter(|o| o.state != ClusterState::Failed) {
            o.state = state;
            o.reason = Some(reason.into());
        }
    }

    /// The cluster at `loser` is the one at `winner` (a collision rule picked the other).
    pub fn fold(&mut self, loser: usize, winner: usize) {
        if let Some(slot) = self.all.get_mut(loser) {
            *slot = None;
        }
        for at in self.by_key.values_mut().filter(|at| **at == loser) {
            *at = winner;
        }
    }

    /// Every cluster's outcome, in the order of their kubeconfig Secrets.
    pub fn finish(self) -> Vec<ClusterOutcome> {
        let mut all: Vec<ClusterOutcome> = self.all.into_iter().flatten().collect();
        all.sort_by(|a, b| a.source.cmp(&b.source));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{TOKEN, kubeconfig_secret, owned_secret, run_plan};
    use super::*;
    use crate::config::Config;
    use crate::reconcile::Guard;
    use crate::reconcile::view::PlanFormat;

    fn cluster(name: &str, extra: &str) -> String {
        format!(
            "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: fleet\n{extra}spec: {{}}\n---\n"
        )
    }

    fn states(plan: &crate::reconcile::Plan) -> Vec<(String, ClusterState, Option<String>)> {
        plan.clusters
            .iter()
            .map(|c| {
                let secret = c.secret.as_ref().map(ToString::to_string);
                (c.cluster.clone(), c.state, secret)
            })
            .collect()
    }

    #[test]
    fn every_cluster_has_an_outcome_one_that_never_had_a_secret_included() {
        let broken = kubeconfig_secret("broken-kubeconfig", TOKEN)
            .replace("current-context: x", "current-context: none");
        let input = kubeconfig_secret("fine-kubeconfig", TOKEN)
            + &broken
            + &kubeconfig_secret("calm-kubeconfig", TOKEN)
            + &cluster(
                "calm",
                "  annotations:\n    cluster.x-k8s.io/paused: \"\"\n",
            )
            + &kubeconfig_secret("quiet-kubeconfig", TOKEN)
            + &cluster(
                "quiet",
                "  labels:\n    ignore-cluster.capi-to-argocd: \"\"\n",
            );
        let (_, _, plan) = run_plan(&input, &Config::default());
        let argocd = |name: &str| Some(format!("argocd/cluster-{name}"));
        assert_eq!(
            states(&plan),
            [
                ("broken".into(), ClusterState::Failed, None),
                ("calm".into(), ClusterState::Paused, argocd("calm")),
                ("fine".into(), ClusterState::Converted, argocd("fine")),
                ("quiet".into(), ClusterState::Ignored, None),
            ]
        );
        let broken = &plan.clusters[0];
        assert!(
            broken
                .reason
                .as_deref()
                .unwrap_or_default()
                .contains("none"),
            "{broken:?}"
        );
        // The plan's text lists the cluster that failed, and counts it.
        let text = plan.show(PlanFormat::Text);
        assert!(
            text.contains("failed    fleet/broken-kubeconfig (broken): "),
            "{text}"
        );
        assert!(
            text.ends_with(", 1 failed without an Argo CD Secret\n"),
            "{text}"
        );
    }

    #[test]
    fn a_cluster_that_fails_keeps_its_secret_and_says_so() {
        let broken = kubeconfig_secret("gone-kubeconfig", TOKEN)
            .replace("current-context: x", "current-context: none");
        let input = owned_secret("cluster-gone", "gone", "https://gone.example:6443") + &broken;
        let (_, _, plan) = run_plan(&input, &Config::default());
        assert_eq!(
            states(&plan),
            [(
                "gone".into(),
                ClusterState::Failed,
                Some("argocd/cluster-gone".into())
            )]
        );
        // It has an entry (kept), so no line of its own.
        let text = plan.show(PlanFormat::Text);
        assert!(!text.contains("failed "), "{text}");
    }

    #[test]
    fn a_guard_that_holds_says_which_secrets_it_kept() {
        let input = owned_secret("cluster-a", "a", "https://a.example:6443")
            + &owned_secret("cluster-b", "b", "https://b.example:6443")
            + &kubeconfig_secret("c-kubeconfig", TOKEN).replace("fleet", "other");
        let config = Config {
            max_prune: crate::config::MaxPrune::Count(1),
            ..Config::default()
        };
        let (_, _, plan) = run_plan(&input, &config);
        let held: Vec<(Guard, Vec<String>)> = plan
            .guards
            .iter()
            .map(|h| (h.guard, h.secrets.iter().map(ToString::to_string).collect()))
            .collect();
        assert_eq!(
            held,
            [(
                Guard::MaxPrune,
                vec![
                    "argocd/cluster-a".to_string(),
                    "argocd/cluster-b".to_string()
                ]
            )]
        );
        assert!(plan.guards[0].message.contains("maxPrune=1"), "{plan:?}");
    }
}
