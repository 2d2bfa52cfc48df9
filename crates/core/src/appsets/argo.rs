//! What the ApplicationSet rules know Argo CD's objects by: an Application or ApplicationSet by
//! namespace and name ([`AppRef`]), the local cluster's server, and the value of the secret-type
//! label on a cluster Secret.

use std::fmt;

use krm::object::Object;

/// The value of Argo CD's secret-type label on a cluster Secret.
pub(crate) const SECRET_TYPE_CLUSTER: &str = "cluster";

/// The local cluster's server: Argo CD knows it without a Secret.
pub(crate) const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";

/// An Application or ApplicationSet, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppRef {
    /// Its namespace (`default` when none is written).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl AppRef {
    pub(crate) fn of(object: Object) -> AppRef {
        AppRef {
            namespace: object.namespace().to_string(),
            name: object.name().unwrap_or_default().to_string(),
        }
    }
}

impl fmt::Display for AppRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}
