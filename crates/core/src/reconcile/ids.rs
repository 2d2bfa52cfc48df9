//! What reconciliation knows things by: a Secret by namespace and name, a kubeconfig Secret as
//! the labels of the Argo CD Secrets made from it name it, a Cluster or control plane by its
//! namespace, kind and name.

use std::fmt;

use crate::convert::meta::label_value;

pub use krm::object::SecretId;

/// A kubeconfig Secret as the labels of the Argo CD Secrets made from it name it: its namespace
/// and name as label values (long ones cut and hashed, the same way every time).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(super) struct SourceKey {
    pub namespace: String,
    pub name: String,
}

impl SourceKey {
    /// The key of the kubeconfig Secret `namespace`/`name`.
    pub fn of(namespace: &str, name: &str) -> Self {
        SourceKey {
            namespace: label_value(namespace),
            name: label_value(name),
        }
    }

    /// The key as the labels hold it (already label values).
    pub fn labelled(namespace: &str, name: &str) -> Self {
        SourceKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// Whether this key names `other`, the key of a Secret in the input: a label left empty
    /// names no Secret, an empty namespace any namespace.
    pub fn names(&self, other: &SourceKey) -> bool {
        !self.name.is_empty()
            && self.name == other.name
            && (self.namespace.is_empty() || self.namespace == other.namespace)
    }
}

impl fmt::Display for SourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A Cluster API object of the input (a `Cluster`, a control plane) by namespace, kind and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct ObjectKey {
    pub namespace: String,
    pub kind: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: &str, kind: &str, name: &str) -> Self {
        ObjectKey {
            namespace: namespace.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
        }
    }
}
