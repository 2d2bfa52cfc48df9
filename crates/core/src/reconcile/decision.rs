//! The plan's vocabulary: what happens to one Argo CD cluster Secret ([`Action`]), one decision
//! with what carrying it out needs ([`Step`]), all of them ([`Steps`]), and what a guard held
//! back ([`Guard`], [`Held`]). The plan makes them, the guards change them and the steps after
//! them read them: kept below all of those, so that no step imports another that comes later.

use krm::finding::Severity;
use krm::{Out, TextStore};

use crate::appsets::{AppRef, ClusterView};

use super::context::Ctx;
use super::convert::Strength;
use super::ids::{SecretId, SourceKey};

/// What happens to one Argo CD cluster Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A new Secret for a cluster seen for the first time.
    Create,
    /// The Secret is rewritten in place; what changed (data keys and `config` fields by path,
    /// labels and annotations by key — never a value).
    Update {
        /// What changed, by path.
        changed: Vec<String>,
    },
    /// The Secret is already what the conversion gives.
    Unchanged,
    /// The cluster's Secret changes identity: its Argo CD `name` changes in place, it is replaced
    /// by a Secret of another name (`from`) made from the same kubeconfig Secret, or another
    /// kubeconfig Secret takes it over (`from_source`).
    Rename {
        /// The Secret as it is now (the same as the entry's own Secret for a rename in place).
        from: SecretId,
        /// Its Argo CD cluster name now.
        from_cluster: String,
        /// The kubeconfig Secret it was made from, when another one now makes it.
        from_source: Option<SecretId>,
    },
    /// The Secret is removed: its kubeconfig Secret is gone or no longer converted.
    Prune,
    /// The Secret stays exactly as it is, for this reason.
    Kept {
        /// Why, in a few words.
        reason: String,
    },
}

impl Action {
    /// The action's word, as the plan view prints it.
    pub fn word(&self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update { .. } => "update",
            Action::Unchanged => "unchanged",
            Action::Rename { .. } => "rename",
            Action::Prune => "prune",
            Action::Kept { .. } => "kept",
        }
    }
}

/// One decision, with what carrying it out needs.
pub(super) struct Step<'x, 'a> {
    pub action: Action,
    pub secret: SecretId,
    pub cluster: String,
    pub server: String,
    pub source: Option<SecretId>,
    /// The kubeconfig's cluster entry, for a conversion (a guard's hint: `nameFrom`).
    pub entry: Option<String>,
    /// The owned Secret in the input this step updates, keeps, renames away or prunes.
    pub old: Option<usize>,
    /// The new Secret, for a create, an update or a rename.
    pub out: Option<Out<'x, 'a>>,
    /// The new Secret as Argo CD's ApplicationSet controller sees it, when the input holds
    /// ApplicationSets or Applications to judge.
    pub view: Option<Box<ClusterView>>,
    /// The name of the source that made (or would make) the Secret.
    pub source_name: String,
    /// The kubeconfig Secrets of the cluster (none for an owned Secret alone).
    pub members: Vec<SourceKey>,
    pub strength: Option<Strength>,
    /// An owned Secret this run manages (of a source it reads, in its Argo CD namespace and
    /// `allowedNamespaces`): what `maxPrune` counts.
    pub managed: bool,
    /// The order of conversion: new Secrets go out in it, whenever their step was decided.
    pub seq: usize,
    /// The outcome of the cluster whose conversion this step places.
    pub outcome: Option<usize>,
}

/// The decisions, and the text of the new Secrets they write.
pub(super) struct Steps<'x, 'a> {
    pub steps: Vec<Step<'x, 'a>>,
    pub store: TextStore,
    /// The guards that held part of the plan back.
    pub held: Vec<Held>,
    /// When a guard held: every setting the whole change needs to go through in one run
    /// (`maxPrune=5`, …), judged on the plan before any guard held it.
    pub overrides: Vec<String>,
    /// Owned Secrets whose login would move to Argo CD's pods' cloud identity (the Secret the
    /// step writes, the owned one at its input index, and the warning's field and message):
    /// said once the guards have decided, for the steps that still write.
    pub login_moves: Vec<(SecretId, usize, String, String)>,
}

impl Steps<'_, '_> {
    /// Warns of each login move a step still carries out after the guards.
    pub fn report_login_moves(&mut self, ctx: &mut Ctx) {
        for (secret, at, field, message) in std::mem::take(&mut self.login_moves) {
            let writes = self.steps.iter().any(|s| {
                s.secret == secret
                    && s.old == Some(at)
                    && matches!(s.action, Action::Update { .. } | Action::Rename { .. })
            });
            if writes {
                ctx.report(at, Severity::Warning, Some(&field), message);
            }
        }
    }
}

impl Step<'_, '_> {
    /// The cluster the step is about, as the Secret it had before the plan (the Secret the step
    /// writes, for a cluster that had none).
    pub fn secret_before(&self, ctx: &Ctx) -> SecretId {
        self.old
            .map(|i| SecretId::of(ctx.object(i)))
            .unwrap_or_else(|| self.secret.clone())
    }
}

/// A guard: the setting that lets through what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Guard {
    /// `allowEmpty`: prunes of a source the input holds no kubeconfig Secret of.
    AllowEmpty,
    /// `maxPrune`: more prunes than it allows.
    MaxPrune,
    /// `allowRename`: renames, replacements and take-overs.
    AllowRename,
    /// `maxCredentialChanges`: more Argo CD Secrets moved between `admin` and `serviceAccount`
    /// credentials than it allows.
    MaxCredentialChanges,
    /// `maxApplicationDeletes`: an ApplicationSet would delete more of its Applications than it
    /// allows.
    MaxApplicationDeletes,
}

impl Guard {
    /// The setting's name.
    pub fn setting(self) -> &'static str {
        match self {
            Guard::AllowEmpty => "allowEmpty",
            Guard::MaxPrune => "maxPrune",
            Guard::AllowRename => "allowRename",
            Guard::MaxCredentialChanges => "maxCredentialChanges",
            Guard::MaxApplicationDeletes => "maxApplicationDeletes",
        }
    }

    /// Every guard, in the order they run.
    pub const ALL: [Guard; 5] = [
        Guard::AllowEmpty,
        Guard::MaxPrune,
        Guard::AllowRename,
        Guard::MaxCredentialChanges,
        Guard::MaxApplicationDeletes,
    ];
}

/// A guard that held part of the plan back: what it said, and the Argo CD Secrets it kept as
/// they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Which guard.
    pub guard: Guard,
    /// Its error, as the results hold it.
    pub message: String,
    /// The Secrets it kept, in the plan's order.
    pub secrets: Vec<SecretId>,
    /// The Applications an ApplicationSet would have deleted had it not held (judged from the
    /// ApplicationSets and Applications of the input).
    pub applications: Vec<AppRef>,
}
