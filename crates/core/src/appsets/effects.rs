//! What a plan makes Argo CD's ApplicationSets do to Applications, as the judgment gives it and
//! the plan shows it: each ApplicationSet's effects ([`AppSetPlan`]) cluster by cluster — an
//! Application deleted (and why, and what becomes of its resources), kept by a policy, or
//! created — and the Applications that lose the cluster they deploy to ([`Stranded`]).

use std::collections::HashMap;

use super::argo::AppRef;
use krm::object::SecretId;

/// Why an Application goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaves {
    /// Its cluster's Secret is removed.
    Gone,
    /// Its cluster's Secret no longer matches the generator's selector.
    Deselected,
    /// Its cluster's parameters change its Application's name (a renamed cluster): the
    /// Application is replaced by one of the new name.
    Renamed,
    /// It was the local cluster's (`in-cluster`), whose entry gives way to a cluster Secret of
    /// its server.
    Replaced,
    /// The ApplicationSet, which Argo CD refused before the plan, works after it and no longer
    /// generates it.
    Ungenerated,
}

impl Leaves {
    /// Why, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Leaves::Gone => "its cluster is removed from Argo CD",
            Leaves::Deselected => "its cluster no longer matches the generator's selector",
            Leaves::Renamed => "its cluster's new parameters give it another name",
            Leaves::Replaced => {
                "a cluster Secret of the local cluster's server replaces the in-cluster entry it was generated for"
            }
            Leaves::Ungenerated => {
                "its ApplicationSet, refused by Argo CD until this run, no longer generates it"
            }
        }
    }

    /// Why, in one word (the plan's JSON).
    pub fn word(self) -> &'static str {
        match self {
            Leaves::Gone => "gone",
            Leaves::Deselected => "deselected",
            Leaves::Renamed => "renamed",
            Leaves::Replaced => "replaced",
            Leaves::Ungenerated => "ungenerated",
        }
    }
}

/// What becomes of a deleted Application's resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplicationResources {
    /// Its resources finalizer undeploys them from the cluster.
    Undeployed,
    /// It has the finalizer, but its destination no longer resolves: the controller removes the
    /// finalizer first, and the resources keep running on the cluster, unmanaged.
    Orphaned,
    /// It has no resources finalizer: they keep running, unmanaged.
    NoFinalizer,
    /// `preserveResourcesOnDeletion`: they keep running, unmanaged.
    Preserved,
}

impl ApplicationResources {
    /// What becomes of them, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            ApplicationResources::Undeployed => {
                "its resources are undeployed (resources finalizer)"
            }
            ApplicationResources::Orphaned => {
                "its resources stay on the cluster, unmanaged (its destination is gone, so the finalizer is removed first)"
            }
            ApplicationResources::NoFinalizer => {
                "its resources stay, unmanaged (no resources finalizer)"
            }
            ApplicationResources::Preserved => {
                "its resources stay, unmanaged (preserveResourcesOnDeletion)"
            }
        }
    }

    /// What becomes of them, in one word (the plan's JSON).
    pub fn word(self) -> &'static str {
        match self {
            ApplicationResources::Undeployed => "undeployed",
            ApplicationResources::Orphaned => "orphaned",
            ApplicationResources::NoFinalizer => "kept",
            ApplicationResources::Preserved => "preserved",
        }
    }
}

/// One thing an ApplicationSet does to its Applications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplicationEffect {
    /// An Application is deleted.
    Delete {
        /// The Application.
        application: AppRef,
        /// Why it goes.
        leaves: Leaves,
        /// What becomes of its resources.
        resources: ApplicationResources,
    },
    /// An Application would be deleted, but the ApplicationSet's policy keeps it.
    Keep {
        /// The Application.
        application: AppRef,
        /// Why it would go.
        leaves: Leaves,
        /// The policy that keeps it (`create-only`, `create-update`).
        policy: String,
    },
    /// An Application is generated: by name where its template's name is computed; else one
    /// (`more: false`) or as many as another generator gives (`more: true`).
    Create {
        /// The Application, when its name is computed.
        application: Option<AppRef>,
        /// As many as another generator gives (else one).
        more: bool,
    },
}

/// An effect, and the cluster it follows from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppChange {
    /// The cluster's Argo CD Secret (as it was, for a cluster the plan renames); `None`: the
    /// local cluster.
    pub cluster: Option<SecretId>,
    /// What the ApplicationSet does.
    pub effect: ApplicationEffect,
}

/// What the plan makes one ApplicationSet do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSetPlan {
    /// The ApplicationSet.
    pub application_set: AppRef,
    /// The Applications it controls now.
    pub applications: usize,
    /// The policy it is synced with.
    pub policy: String,
    /// Argo CD refuses it (it generates and deletes nothing), and why.
    pub refused: Option<String>,
    /// What of it the plan cannot judge.
    pub beyond: Vec<String>,
    /// What it does, cluster by cluster.
    pub changes: Vec<AppChange>,
}

impl AppSetPlan {
    /// The Applications it deletes.
    pub fn deletes(&self) -> impl Iterator<Item = &AppChange> {
        self.changes
            .iter()
            .filter(|c| matches!(c.effect, ApplicationEffect::Delete { .. }))
    }
}

/// An Application no ApplicationSet deletes whose destination no longer resolves once the plan
/// is carried out: it stops syncing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranded {
    /// The Application.
    pub application: AppRef,
    /// Its destination, as written (`name <n>` or `server <url>`).
    pub destination: String,
}

/// What the plan makes Argo CD do to Applications.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applications {
    /// Every ApplicationSet it changes something of, or cannot judge, in the order of their
    /// namespaces and names.
    pub sets: Vec<AppSetPlan>,
    /// Applications that stay but lose the cluster they deploy to.
    pub stranded: Vec<Stranded>,
}

impl Applications {
    /// The changes that follow from each cluster (its Secret as it was, or the new one), in
    /// the order of the ApplicationSets.
    pub fn by_cluster(&self) -> HashMap<&SecretId, Vec<(&AppSetPlan, &AppChange)>> {
        let mut by: HashMap<&SecretId, Vec<(&AppSetPlan, &AppChange)>> = HashMap::new();
        for s in &self.sets {
            for c in &s.changes {
                if let Some(id) = &c.cluster {
                    by.entry(id).or_default().push((s, c));
                }
            }
        }
        by
    }

    /// The Applications deleted, with their ApplicationSets.
    pub fn deletes(&self) -> impl Iterator<Item = (&AppSetPlan, &AppChange)> {
        self.sets
            .iter()
            .flat_map(|s| s.deletes().map(move |c| (s, c)))
    }
}
