//! Where kubeconfigs come from: each platform that writes a cluster's kubeconfig into a Secret is
//! a preset, described as data in a file of its own — the shapes of Secret each of its releases
//! writes, the data keys, where the cluster's name comes from, what else it reads and which of
//! two Secrets of one cluster wins — and the `sources` setting picks and adjusts them
//! ([`setting`]). Cluster API is a preset like the others.

pub(crate) mod capi;
mod clusterprofile;
mod crossplane;
mod gardener;
mod hypershift;
mod k0smotron;
mod kamaji;
mod labelled;
mod setting;
mod shape;
mod vcluster;

pub use capi::CLUSTER_NAME_LABEL;
pub use setting::parse_sources;
pub use shape::{ClusterName, Exclusion, Identity, Label, Names, Owner, Shape, Variant, keys_held};

use krm::finding::Finding;
use krm::object::Object;

/// The label recording which source an Argo CD Secret came from.
pub const SOURCE_LABEL: &str = "capi2argo.dev/source";

/// An annotation on a kubeconfig Secret that replaces the kubeconfig's server (for kubeconfigs
/// that point at an address Argo CD cannot reach, such as vcluster's `https://localhost:8443`).
pub const SERVER_ANNOTATION: &str = "capi2argo.dev/server";

/// A platform's rules under its name.
pub struct Preset {
    pub name: &'static str,
    build: fn() -> Source,
}

impl Preset {
    /// The preset's rules, as a source of its name.
    pub fn source(&self) -> Source {
        Source {
            name: self.name.to_string(),
            ..(self.build)()
        }
    }
}

/// The presets, each checked against the Secrets its project's own code writes, release by
/// release (the table of sources in docs/src/sources.md and the golden cases named `source-*`).
/// The first is the default source.
pub static PRESETS: &[Preset] = &[
    capi::PRESET,
    vcluster::PRESET,
    kamaji::PRESET,
    k0smotron::PRESET,
    hypershift::PRESET,
    crossplane::PRESET,
    gardener::PRESET,
    labelled::PRESET,
    clusterprofile::PRESET,
];

/// The presets' names, in the table's order.
pub fn source_presets() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// A preset by name.
pub fn preset(name: &str) -> Option<Source> {
    PRESETS.iter().find(|p| p.name == name).map(Preset::source)
}

/// The default source: Cluster API's.
pub fn default_sources() -> Vec<Source> {
    vec![PRESETS[0].source()]
}

/// The source an owned Argo CD Secret says it came from: its [`SOURCE_LABEL`], or the default
/// source for a Secret without one (CACO's Secrets, and the default source's own, carry none).
pub fn source_of(label: Option<&str>) -> &str {
    label.unwrap_or(PRESETS[0].name)
}

/// Which of two conversions that are one cluster a source's rules pick (the collision rules
/// apply them; docs/src/sources.md states them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Precedence {
    /// A kubeconfig Secret of another source carrying this label, in the same namespace, is a
    /// copy of the cluster the label names (Kamaji's TenantControlPlane that Cluster API
    /// manages): the two are one cluster, and the source listed first in `sources` converts it.
    pub copied_as: Option<&'static str>,
    /// Among this source's Secrets of one server, the one this rule picks wins.
    pub prefer: Option<Prefer>,
}

/// A rule picking one of a source's Secrets that have one server.
#[derive(Debug, Clone)]
pub struct Prefer {
    /// Why the one it picks wins, said on the others.
    pub why: &'static str,
    /// The index of the Secret that wins, if the rule picks one.
    pub pick: fn(&[Object]) -> Option<usize>,
}

/// Two rules are the same rule when they say the same: a function's address says nothing.
impl PartialEq for Prefer {
    fn eq(&self, other: &Self) -> bool {
        self.why == other.why
    }
}

impl Eq for Prefer {}

/// What a source reads besides its kubeconfig Secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads {
    /// The Cluster API `Cluster` of the Secret's cluster (its name, in the Secret's namespace):
    /// the ignore label, lifecycle, take-along and copied metadata, facts as labels.
    pub clusters: bool,
}

/// Infos for Secrets that nearly are this source's (`Identity` covers a missing key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hints {
    /// A Secret whose name fits a shape but that lacks the shape's labels.
    pub missing_labels: bool,
    /// A Secret whose name and labels fit a shape but whose type does not.
    pub wrong_type: bool,
    /// A Secret with a shape's labels and this word in its name, which no shape's names fit.
    pub misnamed: Option<&'static str>,
}

/// What a source reads its clusters from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Kubeconfig Secrets of its shapes.
    #[default]
    Secrets,
    /// SIG Multicluster's ClusterProfiles (`multicluster.x-k8s.io` v1alpha1 and v1alpha2), whose access
    /// providers say how to reach each cluster.
    ClusterProfiles,
}

/// One source of kubeconfig Secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Kubeconfig Secrets, or ClusterProfiles.
    pub kind: Kind,
    /// The preset's or the custom source's name, recorded on its Argo CD Secrets.
    pub name: String,
    /// Who writes these Secrets, for messages (`Cluster API`).
    pub platform: &'static str,
    /// The shapes of Secret it takes, the first that fits wins.
    pub shapes: Vec<Shape>,
    /// Data keys that may hold the kubeconfig, the first present wins.
    pub keys: Vec<String>,
    /// Where the cluster's name comes from: the first rule that gives one.
    pub cluster_name: Vec<ClusterName>,
    /// Labels the user asks of every Secret a preset takes (`{preset: capi, labels: …}`): a
    /// Secret without them is left to another run, its Argo CD Secret kept.
    pub narrowed_to: Vec<Label>,
    pub reads: Reads,
    pub precedence: Precedence,
    pub hints: Hints,
}

impl Source {
    /// A source of these shapes, keys and naming rules, reading nothing else.
    pub fn new(shapes: Vec<Shape>, keys: &[&str], cluster_name: Vec<ClusterName>) -> Source {
        Source {
            kind: Kind::Secrets,
            name: String::new(),
            platform: "",
            shapes,
            keys: keys.iter().map(|k| k.to_string()).collect(),
            cluster_name,
            narrowed_to: Vec::new(),
            reads: Reads::default(),
            precedence: Precedence::default(),
            hints: Hints::default(),
        }
    }

    /// The value of [`SOURCE_LABEL`] on its Argo CD Secrets: none for the default source.
    pub fn label(&self) -> Option<&str> {
        (self.name != PRESETS[0].name).then_some(self.name.as_str())
    }

    /// What it reads a cluster from, in a few words: `kubeconfig Secret`, or `ClusterProfile`.
    pub fn reads_from(&self) -> &'static str {
        match self.kind {
            Kind::Secrets => "kubeconfig Secret",
            Kind::ClusterProfiles => "ClusterProfile",
        }
    }

    /// Whether a Secret of this name would be this source's (for reading its metadata).
    pub fn names_it(&self, name: &str) -> bool {
        self.shapes.iter().any(|s| s.names.split(name).is_some())
    }

    /// The Argo CD cluster's name is the kubeconfig's cluster entry.
    pub fn names_from_kubeconfig(&self) -> bool {
        self.cluster_name.first() == Some(&ClusterName::Kubeconfig)
    }

    /// Whether the Secret is this source's, and as which cluster; `Err` says why one that looks
    /// like it is not converted (an info, or a warning when only the kubeconfig key is missing
    /// from a Secret whose labels name it a kubeconfig Secret); `Ok(None)` for anything else.
    pub fn take(&self, object: Object) -> Result<Option<Taken>, Refusal> {
        let name = object.name().unwrap_or_default();
        let mut near_miss = None;
        let mut misnamed = true;
        for shape in &self.shapes {
            let Some(part) = shape.names.split(name) else {
                continue;
            };
            misnamed = false;
            if !shape.labelled(object) {
                if self.hints.missing_labels && !shape.labels.is_empty() {
                    near_miss.get_or_insert_with(|| self.unlabelled(object, shape));
                }
                continue;
            }
            if !shape.typed(object) {
                if self.hints.wrong_type {
                    near_miss.get_or_insert_with(|| self.mistyped(object, shape));
                }
                continue;
            }
            if !shape.owned_and_keyed(object, part) {
                continue;
            }
            if shape.identity != Identity::Certain
                && !self.keys.iter().any(|k| shape::has_key(object, k))
            {
                // Platforms keep other things in Secrets named and labelled like these
                // (vcluster's `<name>-certs`): only labels that name a kubeconfig deserve a word.
                if shape.identity == Identity::Labelled && !shape.labels.is_empty() {
                    near_miss.get_or_insert_with(|| self.missing_key(object, shape));
                }
                continue;
            }
            if let Some(excluded) = shape.excluded(object, part) {
                return Err(Refusal::NotMeant(excluded));
            }
            let missing: Vec<String> = self
                .narrowed_to
                .iter()
                .filter(|l| !l.holds(object))
                .map(ToString::to_string)
                .collect();
            if !missing.is_empty() {
                return Err(Refusal::LeftOut(
                    Finding::info(format!(
                        "not converted: source {} takes only Secrets labelled {}; its Argo CD Secret is another run's",
                        self.name,
                        missing.join(", ")
                    ))
                    .at("metadata.labels"),
                ));
            }
            let cluster = self
                .cluster_name
                .iter()
                .find_map(|rule| match rule {
                    ClusterName::Label(key) => object.label(key).map(String::from),
                    ClusterName::Owner(kind) => {
                        shape::owner_name(object, None, kind).map(String::from)
                    }
                    ClusterName::SecretName | ClusterName::Kubeconfig => Some(part.to_string()),
                })
                .unwrap_or_else(|| part.to_string());
            return Ok(Some(Taken {
                cluster,
                variant: shape.variant,
                releases: shape.releases,
            }));
        }
        if let Some(word) = self.hints.misnamed.filter(|_| misnamed) {
            if name.contains(word) {
                if let Some(shape) = self
                    .shapes
                    .iter()
                    .find(|s| !s.labels.is_empty() && s.labelled(object))
                {
                    near_miss = Some(self.misnamed(object, shape));
                }
            }
        }
        near_miss.map_or(Ok(None), |f| Err(Refusal::NotMeant(f)))
    }

    fn unlabelled(&self, object: Object, shape: &Shape) -> Finding {
        let missing: Vec<String> = shape
            .missing_labels(object)
            .iter()
            .map(|l| l.to_string())
            .collect();
        Finding::info(format!(
            "not converted: no {} label ({} sets it on every kubeconfig Secret it writes)",
            missing.join(", "),
            self.platform
        ))
        .at("metadata.labels")
    }

    fn mistyped(&self, object: Object, shape: &Shape) -> Finding {
        let types: Vec<&str> = shape
            .types
            .iter()
            .flatten()
            .map(|t| if t.is_empty() { "none" } else { t.as_str() })
            .collect();
        Finding::info(format!(
            "not converted: type {} is not a kubeconfig Secret's ({})",
            shape::secret_type(object),
            types.join(", ")
        ))
        .at("type")
    }

    fn misnamed(&self, object: Object, shape: &Shape) -> Finding {
        let names: Vec<String> = self.shapes.iter().map(|s| s.names.describe()).collect();
        let labels: Vec<String> = shape
            .labels
            .iter()
            .map(|l| format!("{}={}", l.key, object.label(&l.key).unwrap_or_default()))
            .collect();
        Finding::info(format!(
            "not converted: labelled {}, but the name ends in none of {}",
            labels.join(", "),
            names.join(", ")
        ))
        .at("metadata.name")
    }

    /// The warning for a Secret this source would take, but for its kubeconfig key.
    fn missing_key(&self, object: Object, shape: &Shape) -> Finding {
        let labels: Vec<String> = shape.labels.iter().map(ToString::to_string).collect();
        let held = shape::keys_held(object);
        let has = if held.is_empty() {
            "it holds no data".to_string()
        } else {
            format!("it holds {}", held.join(", "))
        };
        Finding::warning(format!(
            "not converted: labelled {} for the {} source, but the kubeconfig is not under data.{} ({has}); move it there, or give the source the key: {{preset: {}, key: <key>}}",
            labels.join(", "),
            self.name,
            self.keys.join(" or data."),
            self.name
        ))
        .at(format!("data.{}", self.keys[0]))
    }
}

/// A Secret a source takes: the cluster's name, which of its Secrets this is, and the shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub cluster: String,
    pub variant: Variant,
    pub releases: &'static str,
}

/// Why a Secret that looks like a source's is not converted.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// It is not meant for Argo CD, or nearly fits: said, and nothing else follows.
    NotMeant(Finding),
    /// The settings leave it to another run (`allowedNamespaces`, a source's `labels`): an Argo
    /// CD Secret made from it earlier is that run's, never pruned here.
    LeftOut(Finding),
}

impl Refusal {
    pub fn into_finding(self) -> Finding {
        match self {
            Refusal::NotMeant(f) | Refusal::LeftOut(f) => f,
        }
    }
}
