//! The `capi2argo` command's parts besides `main`: its arguments ([`args`]) and its bounded,
//! confined reads ([`read`]), a library so that the golden tests run the core exactly as the
//! command does.

pub mod args;
pub mod read;
