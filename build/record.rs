//! The build scripts' I/O around build/commit.rs's rules: reads what says which commit a build
//! comes from (the overrides, git, cargo's record) and hands it to the crate being built as
//! `CAPI2ARGO_BUILD_COMMIT`. Shared by the command's build script and the controller's. A build
//! without git never fails for it.

use std::path::Path;
use std::process::Command;

use super::commit;

/// Records the commit of the package in `package` (a package directory) for its `--version`;
/// `top` is the git work tree the package belongs to (the package itself, or the repository
/// around a workspace member), which names the commit only when it is its top.
pub fn record(package: &Path, top: &Path) {
    println!("cargo:rerun-if-env-changed=CAPI2ARGO_COMMIT");
    println!("cargo:rerun-if-env-changed=CAPI2ARGO_COMMIT_DATE");
    let override_commit = std::env::var("CAPI2ARGO_COMMIT").ok();
    let override_date = std::env::var("CAPI2ARGO_COMMIT_DATE").ok();
    let git = git_commit(top);
    let vcs_info_path = package.join(".cargo_vcs_info.json");
    let vcs_info = std::fs::read_to_string(&vcs_info_path).ok();
    if vcs_info.is_some() {
        println!("cargo:rerun-if-changed={}", vcs_info_path.display());
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
