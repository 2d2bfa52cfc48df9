//! One shape of kubeconfig Secret a platform writes — its names, labels, type, owner and keys —
//! and how a Secret is held against it.

use krm::finding::Finding;
use krm::object::Object;
use yaml::Node;

/// Which of a cluster's kubeconfig Secrets this is: a platform may write several for one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// `<cluster>-kubeconfig`, or the Secret a platform writes for the cluster.
    Plain,
    /// `<cluster>-user-kubeconfig` / `<cluster>-kubeconfig-user`: long-lived provider logins (EKS, GKE, AKS).
    User,
    /// Another Secret of the same cluster that only stands in when its main one cannot be
    /// converted (HyperShift's `<hc>-custom-admin-kubeconfig` beside `<hc>-admin-kubeconfig`).
    Sibling,
}

/// Which Secret names a shape takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// Names ending in this; the cluster is what comes before it.
    Suffix(String),
    /// Names starting with this; the cluster is what comes after it.
    Prefix(String),
    /// Any name; the cluster is the whole name.
    Any,
}

impl Names {
    /// The cluster part of a Secret name these names take.
    pub fn split<'n>(&self, name: &'n str) -> Option<&'n str> {
        let cluster = match self {
            Names::Suffix(s) => name.strip_suffix(s.as_str())?,
            Names::Prefix(p) => name.strip_prefix(p.as_str())?,
            Names::Any => name,
        };
        (!cluster.is_empty()).then_some(cluster)
    }

    /// As the book writes it: `-kubeconfig`, `vc-…`, `any name`.
    pub fn describe(&self) -> String {
        match self {
            Names::Suffix(s) => s.clone(),
            Names::Prefix(p) => format!("{p}…"),
            Names::Any => "any name".into(),
        }
    }
}

/// One way to find the cluster's name; a source tries its rules in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterName {
    /// The Secret's name, without the shape's prefix or suffix.
    SecretName,
    /// A label of the Secret.
    Label(String),
    /// The name of the Secret's owner of this kind (an ownerReference).
    Owner(String),
    /// The kubeconfig's cluster entry.
    Kubeconfig,
}

/// What a Secret of a shape without the kubeconfig key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The platform keeps other things in Secrets of this shape: nobody's concern.
    Shared,
    /// Its labels say "a kubeconfig Secret": a near miss worth a warning, not converted.
    Labelled,
    /// The shape alone says "this cluster's kubeconfig Secret": taken, and its conversion fails
    /// with an error naming the key, so an Argo CD Secret made from it earlier stays as it is.
    Certain,
}

/// A Secret a shape takes that the platform does not mean for Argo CD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// A Secret carrying this label; the info says why it is not converted.
    Label {
        key: &'static str,
        why: &'static str,
    },
    /// A second kubeconfig of the cluster the label names, named after it with something more
    /// (K0sControlPlane's `<cluster>-proxied-kubeconfig` beside `<cluster>-kubeconfig`).
    NamedAfterLabel { key: &'static str },
}

/// One label a shape asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub key: String,
    /// The value it must have; `None`: any.
    pub value: Option<String>,
}

impl Label {
    pub fn any(key: &str) -> Self {
        Label {
            key: key.into(),
            value: None,
        }
    }

    pub fn is(key: &str, value: &str) -> Self {
        Label {
            key: key.into(),
            value: Some(value.into()),
        }
    }

    /// Whether the object carries this label (with its value, when one is asked for).
    pub fn holds(&self, object: Object) -> bool {
        let found = object.label(&self.key);
        match &self.value {
            None => found.is_some(),
            Some(v) => found == Some(v.as_str()),
        }
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={v}", self.key),
            None => f.write_str(&self.key),
        }
    }
}

/// An ownerReference a Secret must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Its API group; any when `None`.
    pub group: Option<&'static str>,
    pub kind: &'static str,
    /// The owner's name is the cluster part of the Secret's name (`<owner>-admin-kubeconfig`).
    pub names_cluster: bool,
}

/// One shape of Secret a platform has written, in some of its releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The releases that write it, as the book's table of sources says (empty for custom sources).
    pub releases: &'static str,
    pub names: Names,
    pub labels: Vec<Label>,
    /// Secret types taken (`""` for none set); `None`: any.
    pub types: Option<Vec<String>>,
    pub owner: Option<Owner>,
    /// Data keys that must all be there: a set only that platform writes.
    pub key_set: Vec<String>,
    pub identity: Identity,
    pub variant: Variant,
    pub exclusions: Vec<Exclusion>,
}

impl Shape {
    /// A shape of these names, asking nothing else.
    pub fn named(releases: &'static str, names: Names) -> Shape {
        Shape {
            releases,
            names,
            labels: Vec::new(),
            types: None,
            owner: None,
            key_set: Vec::new(),
            identity: Identity::Shared,
            variant: Variant::Plain,
            exclusions: Vec::new(),
        }
    }

    /// Whether the Secret's labels are this shape's.
    pub fn labelled(&self, object: Object) -> bool {
        self.labels.iter().all(|l| l.holds(object))
    }

    /// The labels of this shape the Secret lacks.
    pub fn missing_labels(&self, object: Object) -> Vec<&Label> {
        self.labels.iter().filter(|l| !l.holds(object)).collect()
    }

    /// Whether the Secret's type is one this shape takes.
    pub fn typed(&self, object: Object) -> bool {
        self.types
            .as_ref()
            .is_none_or(|types| types.contains(&secret_type(object)))
    }

    /// Whether the Secret's owner and key set are this shape's (`part`: its name's cluster part).
    pub fn owned_and_keyed(&self, object: Object, part: &str) -> bool {
        let owned = self.owner.as_ref().is_none_or(|o| {
            owner_name(object, o.group, o.kind).is_some_and(|name| !o.names_cluster || name == part)
        });
        owned && self.key_set.iter().all(|k| has_key(object, k))
    }

    /// Why a Secret this shape takes is not converted, when one of its exclusions says so.
    pub fn excluded(&self, object: Object, part: &str) -> Option<Finding> {
        self.exclusions.iter().find_map(|rule| match rule {
            Exclusion::Label { key, why } => object.label(key).is_some().then(|| {
                Finding::info(format!("not converted: labelled {key}: {why}")).at("metadata.labels")
            }),
            Exclusion::NamedAfterLabel { key } => {
                if self.variant != Variant::Plain {
                    return None;
                }
                let cluster = object.label(key)?;
                let more = part.strip_prefix(cluster)?.strip_prefix('-')?;
                let beside = match &self.names {
                    Names::Suffix(s) => format!("{cluster}{s}"),
                    Names::Prefix(p) => format!("{p}{cluster}"),
                    Names::Any => cluster.to_string(),
                };
                Some(
                    Finding::info(format!(
                        "not converted: a second kubeconfig of cluster {cluster} ({more}), beside {beside}, which is the cluster's"
                    ))
                    .at("metadata.name"),
                )
            }
        })
    }
}

/// A Secret's `type`, `""` when none is set.
pub fn secret_type(object: Object) -> String {
    object
        .node
        .get("type")
        .filter(|t| !t.is_null())
        .and_then(|t| t.scalar())
        .map(|s| s.text.to_string())
        .unwrap_or_default()
}

/// The name of the Secret's ownerReference of `kind` (of `group`, when given).
pub fn owner_name<'n>(object: Object<'n, '_>, group: Option<&str>, kind: &str) -> Option<&'n str> {
    object
        .owner_references(group, kind)
        .next()
        .and_then(|o| o.get("name").and_then(Node::as_str))
}

/// Whether the Secret holds `key` under `data` or `stringData`.
pub fn has_key(object: Object, key: &str) -> bool {
    ["data", "stringData"]
        .iter()
        .any(|section| object.node.path(&[section, key]).is_some())
}

/// The keys a Secret holds, for messages.
pub fn keys_held<'n>(object: Object<'n, '_>) -> Vec<&'n str> {
    ["data", "stringData"]
        .iter()
        .filter_map(|section| object.node.get(section)?.as_map())
        .flatten()
        .filter_map(|(k, _)| k.as_str())
        .collect()
}
