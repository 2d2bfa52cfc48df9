//! capi2argo: a KRM function that turns Cluster API kubeconfig Secrets into Argo CD cluster Secrets.
//!
//! The library is pure: bytes in, bytes out. It reads no files, no environment and no clock,
//! spawns nothing and prints nothing, so the same core runs natively and as WebAssembly.
//!
//! ```
//! let input = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
//! let outcome = capi2argo_core::run(input, &capi2argo_core::Options::default()).unwrap();
//! assert!(!outcome.failed());
//! assert!(outcome.output.contains("kind: ResourceList"));
//! ```
//!
//! [`run_streaming`] does the same but hands the output to a sink piece by piece (items copied
//! from the input go out as slices of it), so a large fleet's output is never held whole.

#![warn(missing_docs)]

mod access;
mod appsets;
mod config;
mod convert;
mod credentials;
mod documents;
mod fleet;
pub mod host;
mod planner;
mod profiles;
mod projects;
mod raw;
mod read_set;
mod reconcile;
mod request;
mod run;
mod seal;
mod sources;
mod validate;
mod wrap;

/// What this workspace's benchmarks, fuzz targets and tests reach below the public API (feature
/// `internals`), named here one by one so that the surface stays deliberate: Argo CD's
/// ApplicationSet rules and the kubeconfig reader. Not a stable interface; private in every other
/// build. (The YAML reader and KRM input and output are crates of their own, capi2argo-yaml and
/// capi2argo-krm.)
#[cfg(feature = "internals")]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod internals {
    /// Argo CD's ApplicationSet rules: label selectors, name templates, the cluster generator's
    /// parameters.
    pub mod appsets {
        pub use crate::appsets::generators::cluster_params;
        pub use crate::appsets::params::{Lookup, Params};
        pub use crate::appsets::read::ClusterView;
        pub use crate::appsets::selector::Selector;
        pub use crate::appsets::template::{Rendered, Syntax, Template, sanitize_name};
    }

    /// Argo CD's glob, as AppProjects' `destinationServiceAccounts` match with it.
    pub mod projects {
        pub use crate::projects::glob::{Glob, GlobError};
    }

    /// The kubeconfig reader.
    pub mod kubeconfig {
        pub use crate::convert::kubeconfig::{Credentials, read};
    }
}

/// The names capi2argo and its hosts know things by on an API server: the labels it reads and
/// writes, Argo CD's ConfigMap, the resources it reads (group, versions, kind). A host takes them
/// from here and never writes them again.
pub mod well_known {
    pub use crate::access::{
        BINDING_LABEL_VALUE, BINDING_SECRET_TYPE, BOUND_FOR_ANNOTATION, MANAGED_BY,
        MANAGED_BY_LABEL, TOKEN_LABEL, TOKEN_LABEL_VALUE,
    };
    pub use crate::appsets::CMD_PARAMS;
    pub use crate::config::installed::{CONTROLLER_LABEL, SETTINGS_LABELS};
    pub use crate::convert::argocd::{OWNED_LABEL, SECRET_TYPE_LABEL};
    pub use crate::fleet::cluster::keep_read_status as keep_read_cluster_status;
    pub use crate::projects::{ARGOCD_CM, IMPERSONATION_KEY};
    pub use crate::read_set::{
        APP_PROJECTS, APPLICATION_SETS, APPLICATIONS, CLUSTER_PROFILES, CLUSTERS, CONFIG_MAPS,
        SECRETS,
    };
    pub use crate::sources::capi::CLUSTER_NAME_LABEL;
}

pub use access::{
    AdminAccess, CredentialMode, Due, Grant, Granted, ServiceAccount, TokenNeed, binding_parts,
};
pub use appsets::{
    AppChange, AppRef, AppSetPlan, ApplicationEffect, ApplicationResources, Applications, Leaves,
    Stranded,
};
pub use config::{API_VERSION, KEYS, KIND, Key, settings_help};
pub use credentials::{
    PUBLIC_SECRET_KEYS, credential_ranges, credential_ranges_lenient, url_credentials,
};
pub use documents::{Document, documents, items_json};
pub use krm::finding::{FileRef, Finding, ResourceRef, Severity, results_json};
pub use krm::{Preconditions, Secret, failure_resource_list};
pub use planner::{KeepError, ObjectKey, ObjectRead, Planner};
pub use projects::Impersonated;
pub use read_set::{Objects, Read, ReadSet, Resource, Values, read_set};
pub use reconcile::view::PlanFormat;
pub use reconcile::{
    Action, ClusterOutcome, ClusterState, Entry, Guard, Held, Plan, SecretId, TokenDelete, Unbind,
};
pub use request::{Request, Verb};
pub use run::{Files, Finished, NoFiles, Options, Outcome, RunError, plan, run, run_streaming};
pub use sources::source_presets;
pub use validate::expiry::{instant, parse_instant, time_left};
pub use wrap::{WRAP_NAMESPACE, WrappedKubeconfig, wrap_kubeconfig};
pub use yaml::Limits;

#[cfg(test)]
mod tests {
    use super::well_known::*;

    /// Every name a host takes from [`well_known`] is the one upstream uses, pinned here once.
    #[test]
    fn well_known_names_are_upstreams() {
        // argo-cd common/common.go: LabelKeySecretType, and the value its cluster Secrets carry.
        assert_eq!(SECRET_TYPE_LABEL, "argocd.argoproj.io/secret-type");
        // CACO's (capi2argo-cluster-operator) ownership label, kept for a move from it.
        assert_eq!(OWNED_LABEL, "capi-to-argocd/owned");
        // argo-cd common/common.go: ArgoCDCmdParamsConfigMapName.
        assert_eq!(CMD_PARAMS, "argocd-cmd-params-cm");
        // cluster-api api/core/v1beta2 (ClusterNameLabel): what a kubeconfig Secret names its
        // Cluster by.
        assert_eq!(CLUSTER_NAME_LABEL, "cluster.x-k8s.io/cluster-name");
        // Kubernetes' recommended labels (app.kubernetes.io/managed-by).
        assert_eq!(MANAGED_BY_LABEL, "app.kubernetes.io/managed-by");
        assert_eq!(MANAGED_BY, "capi2argo");
        assert_eq!(TOKEN_LABEL, "capi2argo.dev/credential");
        assert_eq!(TOKEN_LABEL_VALUE, "serviceaccount-token");
        // cluster-api api/core/v1beta2 (and v1beta1): group cluster.x-k8s.io, kind Cluster.
        assert_eq!(
            (CLUSTERS.group, CLUSTERS.kind),
            ("cluster.x-k8s.io", "Cluster")
        );
        // cluster-inventory-api apis/v1alpha1 and v1alpha2: multicluster.x-k8s.io ClusterProfile.
        assert_eq!(
            (
                CLUSTER_PROFILES.group,
                CLUSTER_PROFILES.versions,
                CLUSTER_PROFILES.kind
            ),
            (
                "multicluster.x-k8s.io",
                &["v1alpha2", "v1alpha1"][..],
                "ClusterProfile"
            )
        );
        // argo-cd pkg/apis/application/v1alpha1: argoproj.io/v1alpha1.
        for (resource, kind) in [
            (APPLICATION_SETS, "ApplicationSet"),
            (APPLICATIONS, "Application"),
        ] {
            assert_eq!(
                (resource.group, resource.versions, resource.kind),
                ("argoproj.io", &["v1alpha1"][..], kind)
            );
        }
        assert_eq!(
            (SECRETS.qualified(), CONFIG_MAPS.qualified()),
            ("secrets".to_string(), "configmaps".to_string())
        );
    }
}
