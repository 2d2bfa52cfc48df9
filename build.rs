//! Build script: records the commit the build comes from, for `capi2argo --version`
//! (`capi2argo 0.1.0 (abc1234 2026-11-24)`). A build without git never fails for it.

#[path = "build/commit.rs"]
mod commit;

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/commit.rs");
    println!("cargo:rerun-if-env-changed=CAPI2ARGO_COMMIT");
    println!("cargo:rerun-if-env-changed=CAPI2ARGO_COMMIT_DATE");
    let override_commit = std::env::var("CAPI2ARGO_COMMIT").ok();
    let override_date = std::env::var("CAPI2ARGO_COMMIT_DATE").ok();
    let git = git_commit(&dir);
    let vcs_info_path = dir.join(".cargo_vcs_info.json");
    let vcs_info = std::fs::read_to_string(&vcs_info_path).ok();
    if vcs_info.is_some() {
        println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    }
    let described = commit::describe(
        override_commit.as_deref(),
        override_date.as_deref(),
        git.as_deref(),
        vcs_info.as_deref(),
    );
    println!("cargo:rustc-env=CAPI2ARGO_BUILD_COMMIT={described}");
}

/// `<hash> <date>` of HEAD when `dir` is the top of a git work tree, else `None`. A crate
/// unpacked inside some other repository (a home directory under git, cargo's own package
/// check in target/) is not that repository's commit.
fn git_commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), dir) {
        return None;
    }
    watch_head(dir);
    git(
        dir,
        &["log", "-1", "--no-show-signature", "--format=%H %cs"],
    )
}

/// Runs the build script again when HEAD moves: a commit, a checkout, a reset. Only paths that
/// exist are named (cargo reruns a script on every build for a missing one), and not the refs
/// directory, which every branch's commits touch. A branch whose ref was packed is noticed
/// again once its next commit writes the loose file.
fn watch_head(dir: &Path) {
    let mut paths = Vec::new();
    for name in ["HEAD", "packed-refs"] {
        paths.extend(git(dir, &["rev-parse", "--git-path", name]));
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        paths.extend(git(dir, &["rev-parse", "--git-path", &branch]));
    }
    for path in paths {
        let path = dir.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// `git args…` in `dir`: its trimmed output when it succeeds, `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
