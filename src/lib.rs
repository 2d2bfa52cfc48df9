//! capi2argo: a KRM function that turns Cluster API kubeconfig Secrets into Argo CD cluster Secrets.
//!
//! The library is pure: bytes in, bytes out. It reads no files, no environment and no clock,
//! spawns nothing and prints nothing, so the same core runs natively and as WebAssembly.
//!
//! ```
//! let input = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
//! let outcome = capi2argo::run(input, &capi2argo::Options::default()).unwrap();
//! assert!(!outcome.failed());
//! assert!(outcome.output.contains("kind: ResourceList"));
//! ```
//!
//! [`run_streaming`] does the same but hands the output to a sink piece by piece (items copied
//! from the input go out as slices of it), so a large fleet's output is never held whole.

pub mod config;
pub mod convert;
pub mod fleet;
pub mod krm;
pub mod limits;
pub mod transform;
pub mod yaml;

pub use config::Config;
pub use krm::finding::{Diagnostic, Severity};
pub use limits::Limits;
pub use transform::{Options, Outcome, RunError, run, run_streaming};
