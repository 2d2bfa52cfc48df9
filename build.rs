//! Build script: records the commit the build comes from, for `capi2argo --version`
//! (`capi2argo 0.1.0 (abc1234 2026-11-24)`), by build/record.rs and the rules of build/commit.rs.

#[path = "build/commit.rs"]
mod commit;
#[path = "build/record.rs"]
mod record;

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/commit.rs");
    println!("cargo:rerun-if-changed=build/record.rs");
    record::record(&dir, &dir);
}
