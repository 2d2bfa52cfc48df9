//! `capi2argo --version`: the package version and the commit the build came from, by the rules
//! of build/commit.rs (held here) and as the built binary prints it.

use std::process::Command;

use crate::common::well_formed;

#[path = "../build/commit.rs"]
mod commit;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Built from this checkout, the binary names HEAD's commit and date as git gives them (unless
/// the build was told otherwise through CAPI2ARGO_COMMIT).
#[test]
fn the_binary_names_the_commit_it_was_built_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_capi2argo"))
        .arg("--version")
        .output()
        .expect("binary runs");
    assert!(out.status.success());
    let line = text(&out.stdout);
    let inner = well_formed(&line, env!("CARGO_PKG_VERSION"))
        .unwrap_or_else(|| panic!("not `capi2argo <version> (<commit> <date>)`: {line:?}"));
    if std::env::var_os("CAPI2ARGO_COMMIT").is_some() {
        return;
    }
    let git = Command::new("git")
        .args(["log", "-1", "--format=%H %cs"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    let Some(head) = git.ok().filter(|o| o.status.success()) else {
        crate::common::skip(
            "git is not available here, so the commit in --version was NOT compared with HEAD",
        );
        return;
    };
    let head = text(&head.stdout);
    let (hash, date) = head.trim().split_once(' ').expect("hash and date");
    assert_eq!(inner, format!("{} {date}", &hash[..7]));
}

#[test]
fn the_override_wins_and_is_shortened() {
    let full = "0123456789abcdef0123456789abcdef01234567";
    assert_eq!(
        commit::describe(
            Some(full),
            Some("2026-01-02"),
            Some(&format!("{full} 2020-01-01")),
            None
        ),
        "0123456 2026-01-02"
    );
    assert_eq!(
        commit::describe(Some("v0.1.0-tarball"), None, None, None),
        "v0.1.0-tarball"
    );
    // An empty override is no override.
    assert_eq!(
        commit::describe(Some(" "), Some("2026-01-02"), None, None),
        "commit unknown"
    );
}

#[test]
fn git_then_the_packaged_commit_then_unknown() {
    let git = "89abcdef0123456789abcdef0123456789abcdef 2026-11-24";
    let vcs = r#"{
  "git": {
    "sha1": "fedcba9876543210fedcba9876543210fedcba98",
    "dirty": true
  },
  "path_in_vcs": ""
}"#;
    assert_eq!(
        commit::describe(None, None, Some(git), Some(vcs)),
        "89abcde 2026-11-24"
    );
    assert_eq!(commit::describe(None, None, None, Some(vcs)), "fedcba9");
    // git's answer is used only when it is a hash and a date.
    assert_eq!(
        commit::describe(None, None, Some("fatal: not a git repository"), Some(vcs)),
        "fedcba9"
    );
    assert_eq!(commit::describe(None, None, None, None), "commit unknown");
    assert_eq!(
        commit::describe(None, None, None, Some("{}")),
        "commit unknown"
    );
    assert_eq!(commit::vcs_info_sha1(r#"{"git":{"sha1":"abc"}}"#), None);
}

#[test]
fn the_formats_the_tests_accept() {
    for (line, ok) in [
        ("capi2argo 0.1.0 (abc1234 2026-11-24)\n", true),
        ("capi2argo 0.1.0 (abc1234)\n", true),
        ("capi2argo 0.1.0 (commit unknown)\n", true),
        ("capi2argo 0.1.0\n", false),
        ("capi2argo 0.1.0 (abc12345 2026-11-24)\n", false),
        ("capi2argo 0.1.0 (abc1234 24-11-2026)\n", false),
    ] {
        assert_eq!(well_formed(line, "0.1.0").is_some(), ok, "{line:?}");
    }
}
