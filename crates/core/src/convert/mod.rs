//! From a kubeconfig to an Argo CD cluster Secret: reading kubeconfigs, mapping exec logins to
//! what Argo CD runs, the Argo CD model itself, and the rules names and metadata must follow.

pub mod argocd;
pub mod exec;
pub mod kubeconfig;
pub mod login;
pub mod meta;
pub mod url;
