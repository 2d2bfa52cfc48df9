//! Build script: records the commit the build comes from, for `capi2argo-controller --version`,
//! as the command's does (build/record.rs, by the rules of build/commit.rs); the repository is
//! the work tree around this package.

#[path = "../build/commit.rs"]
mod commit;
#[path = "../build/record.rs"]
mod record;

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build/commit.rs");
    println!("cargo:rerun-if-changed=../build/record.rs");
    let repository = dir.parent().unwrap_or(&dir).to_path_buf();
    record::record(&dir, &repository);
}
