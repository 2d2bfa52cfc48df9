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
mod profiles;
mod raw;
mod read_set;
mod reconcile;
mod run;
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
        pub use crate::appsets::params::{Lookup, Params, cluster_params};
        pub use crate::appsets::read::ClusterView;
        pub use crate::appsets::selector::Selector;
        pub use crate::appsets::template::{Rendered, Syntax, Template, sanitize_name};
    }

    /// The kubeconfig reader.
    pub mod kubeconfig {
        pub use crate::convert::kubeconfig::{Credentials, read};
    }
}

pub use access::{
    Account as ServiceAccount, AdminAccess, Due, Grant, Granted, Mode as CredentialMode,
    TOKEN_LABEL, TOKEN_LABEL_VALUE, TokenNeed,
};
pub use appsets::{
    AppChange, AppRef, AppSetPlan, Applications, Effect as ApplicationEffect, Leaves,
    Resources as ApplicationResources, Stranded,
};
pub use config::{API_VERSION, KEYS, KIND, Key, help as settings_help};
pub use credentials::{
    PUBLIC_SECRET_KEYS, credential_ranges, credential_ranges_lenient, url_credentials,
};
pub use documents::{Document, documents, items_json};
pub use krm::failure as failure_resource_list;
pub use krm::finding::{FileRef, Finding, ResourceRef, Severity, to_json as results_json};
pub use read_set::{ReadSet, read_set};
pub use reconcile::view::{Format as PlanFormat, Request, Verb};
pub use reconcile::{
    Action, ClusterOutcome, ClusterState, Entry, Guard, Held, Plan, SecretId, TokenDelete,
};
pub use run::{Files, Finished, NoFiles, Options, Outcome, RunError, plan, run, run_streaming};
pub use sources::preset_names as source_presets;
pub use validate::expiry::{instant, parse_instant, time_left};
pub use wrap::{WRAP_NAMESPACE, WrappedKubeconfig, wrap_kubeconfig};
pub use yaml::Limits;
