//! What the scan found (step 1's result, [`Scan`]): the kubeconfig Secrets a source takes, the
//! Argo CD Secrets the function owns and those it does not, the Clusters and control planes,
//! token Secrets, ApplicationSets and Applications, and what could not be taken. Every later
//! step reads it; none of them needs the scanning itself.

use std::collections::{HashMap, HashSet};

use crate::access;
use crate::appsets;
use crate::sources::Variant;

use super::ids::{ObjectKey, SecretId, SourceKey};

/// A kubeconfig Secret found in the input.
#[derive(Debug)]
pub(super) struct Candidate {
    pub index: usize,
    /// Which of the config's sources took it.
    pub source: usize,
    pub id: SecretId,
    pub cluster: String,
    pub variant: Variant,
}

impl Candidate {
    pub fn key(&self) -> SourceKey {
        SourceKey::of(&self.id.namespace, &self.id.name)
    }
}

/// An Argo CD cluster Secret in the input that is not the function's: never touched, but no
/// Secret of the function's may give Argo CD a second cluster of its server or name.
#[derive(Debug)]
pub(super) struct Foreign {
    pub index: usize,
    pub name: String,
    pub server: String,
}

/// An owned Argo CD Secret in the input, and the kubeconfig Secret its labels name.
#[derive(Debug)]
pub(super) struct Owned {
    pub index: usize,
    pub source: SourceKey,
    /// The source (`capi2argo.dev/source`, the default source when absent) that made it.
    pub kind: String,
    /// Why it cannot be decided on (its metadata is unsound, it is given twice): kept as it is.
    pub held: Option<&'static str>,
}

impl Owned {
    /// Whether its labels name a kubeconfig Secret none of `members` is: a conversion of those
    /// takes it over from another cluster.
    pub fn made_from_another(&self, members: &[SourceKey]) -> bool {
        !self.source.name.is_empty() && !members.iter().any(|m| self.source.names(m))
    }
}

/// A kubeconfig Secret the scan could not take, and why: its Argo CD Secrets stay as they are,
/// never pruned for it.
#[derive(Debug)]
pub(super) struct Untaken {
    pub key: SourceKey,
    pub why: &'static str,
}

/// A second copy of an object (same identity, same content) and the first copy it follows:
/// replaced or pruned with it, kept with it, so a second run finds one copy and changes nothing.
#[derive(Debug, Clone, Copy)]
pub(super) struct SecondCopy {
    pub copy: usize,
    pub first: usize,
}

/// The Secret of a name a conversion would write, as the plan may treat it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target<'s> {
    /// There is none.
    Free,
    /// An owned Secret the plan decides on: the conversion replaces it.
    Replaces(&'s Owned),
    /// A Secret the plan does not replace (not the function's, or held as it is), at that input
    /// index.
    Kept(usize),
}

/// What the scan found, hashed for lookups.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub candidates: Vec<Candidate>,
    /// Every input Secret read as a kubeconfig Secret (converted or refused).
    pub kubeconfigs: Vec<usize>,
    /// Every other input Secret Cluster API made for a cluster (its CA, etcd and
    /// service-account keys, bootstrap data: label `cluster.x-k8s.io/cluster-name`): with the
    /// kubeconfig Secrets, what sealing leaves out of the output, which then holds no credential.
    pub credential_secrets: Vec<usize>,
    /// The ServiceAccount token Secrets in the input (Argo CD's namespace): sealing writes each
    /// as a SealedSecret of itself.
    pub token_secrets: Vec<usize>,
    /// The Argo CD Secrets the function owns, in the input's order.
    pub owned: Vec<Owned>,
    /// CAPI Clusters by namespace and name (kind `Cluster`).
    pub clusters: HashMap<ObjectKey, usize>,
    /// Control plane objects by namespace, kind and name (for the Kubernetes version).
    pub control_planes: HashMap<ObjectKey, usize>,
    pub held: Vec<Untaken>,
    pub copies: Vec<SecondCopy>,
    /// Every Secret of the input by namespace and name (the first of two that share them).
    pub secrets: HashMap<SecretId, usize>,
    /// Argo CD cluster Secrets that are not the function's.
    pub foreign: Vec<Foreign>,
    /// Kubeconfig Secrets the settings leave to another run (`allowedNamespaces`, a preset's
    /// `labels`): their Argo CD Secrets are that run's.
    pub excluded: HashSet<SourceKey>,
    /// The kubeconfig Secrets of the input whose names their Argo CD Secrets' labels cannot
    /// hold as they are (cut and hashed to a label value), by that label key.
    pub real_names: HashMap<SourceKey, SecretId>,
    /// Token Secrets of Argo CD's namespace, by the kubeconfig Secret each is for.
    pub tokens: HashMap<SecretId, access::TokenSecret>,
    /// Token Secrets for a kubeconfig Secret that already has one: never read, deleted.
    pub token_extras: Vec<(SecretId, access::TokenSecret)>,
    /// Argo CD's ApplicationSets and Applications: what the plan does to them is judged.
    pub appsets: Vec<appsets::AppSet>,
    pub apps: Vec<appsets::App>,
    /// Argo CD's `argocd-cmd-params-cm` (in its namespace): the ApplicationSet controller's
    /// policy.
    pub controller_params: Option<usize>,
}

impl Scan {
    /// How many kubeconfig Secrets the config's source `source` took.
    pub fn taken_by(&self, source: usize) -> usize {
        self.candidates
            .iter()
            .filter(|c| c.source == source)
            .count()
    }

    /// The owned Argo CD Secret at input index `index`: a binary search, the scan finding them
    /// in the input's order (each conversion asks once or twice, and a search from the start
    /// made a 10,000-cluster plan quadratic).
    pub fn owned_at(&self, index: usize) -> Option<&Owned> {
        let at = self.owned.binary_search_by_key(&index, |o| o.index).ok()?;
        self.owned.get(at)
    }

    /// What the Secret `id` is to a conversion that would write a Secret of that name.
    pub fn target(&self, id: &SecretId) -> Target<'_> {
        match self.secrets.get(id) {
            None => Target::Free,
            Some(&at) => match self.owned_at(at) {
                Some(owned) if owned.held.is_none() => Target::Replaces(owned),
                _ => Target::Kept(at),
            },
        }
    }

    /// The CAPI Cluster `name` in `namespace`.
    pub fn cluster(&self, namespace: &str, name: &str) -> Option<usize> {
        self.clusters
            .get(&ObjectKey::new(namespace, "Cluster", name))
            .copied()
    }

    /// The kubeconfig Secret an owned Secret's labels name: its real namespace and name when it
    /// is in the input (the labels hold long names cut and hashed), else the labels as they are.
    pub fn source_id(&self, owned: &Owned) -> SecretId {
        self.real_names
            .get(&owned.source)
            .cloned()
            .unwrap_or_else(|| SecretId::new(&owned.source.namespace, &owned.source.name))
    }
}
