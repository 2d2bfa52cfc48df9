//! The crates as crates.io would get them: `cargo package` and `cargo publish --dry-run` of the
//! command and the three layers under it stay clean, each `.crate` holds what builds it and
//! nothing else, the command builds from the `.crate`s alone (with `--version` from the commit
//! `cargo package` recorded, an override, or `commit unknown`), and `cargo install --locked
//! capi2argo` (the install once they are published) installs it, with crates.io stood in for by
//! a directory holding those `.crate`s and their dependencies (cargo's source replacement).
//!
//! One test, in order: every step writes the same `.crate`s. Its builds use target/package-check
//! and target/crates-io, so they neither wait for nor replace the checkout's own builds.

use crate::common::{TempDir, ok, root, text};

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How the command will install from crates.io once it is published (the README says it is not yet).
pub const CRATES_IO_INSTALL: &str = "cargo install --locked capi2argo";

/// The published crates, bottom layer first (the order crates.io must receive them in), with
/// their directories.
const PACKAGES: [(&str, &str); 4] = [
    ("capi2argo-yaml", "crates/yaml"),
    ("capi2argo-krm", "crates/krm"),
    ("capi2argo-core", "crates/core"),
    ("capi2argo", "."),
];

/// What cargo says about packages whose tests and benchmarks need the repository (fixtures,
/// golden cases, tools) and are therefore not in the `.crate`: expected, and nothing else.
const EXPECTED_WARNINGS: [&str; 5] = [
    "warning: ignoring test `parity` as `tests/parity.rs` is not included in the published package",
    "warning: ignoring test `integration` as `tests/tests.rs` is not included in the published package",
    "warning: ignoring test `release` as `tests/release/main.rs` is not included in the published package",
    "warning: ignoring test `golden` as `tests/golden.rs` is not included in the published package",
    "warning: ignoring benchmark `core` as `benches/core.rs` is not included in the published package",
];

/// `-p` for every published crate.
fn every_package() -> Vec<String> {
    PACKAGES
        .iter()
        .flat_map(|(p, _)| ["-p".to_string(), p.to_string()])
        .collect()
}

/// cargo, with the target directory `target` (below target/).
fn cargo(target: &str) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .env("CARGO_TARGET_DIR", root().join("target").join(target))
        .env_remove("CAPI2ARGO_COMMIT")
        .env_remove("CAPI2ARGO_COMMIT_DATE")
        .current_dir(root());
    command
}

/// The `warning:` lines of cargo's output.
fn warnings(out: &Output) -> Vec<String> {
    text(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .map(String::from)
        .collect()
}

/// `capi2argo --version` of `binary`: what is between the parentheses.
fn commit_of(binary: &Path) -> String {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .expect("binary runs");
    ok(&out, "--version");
    let line = text(&out.stdout);
    crate::common::well_formed(&line, VERSION).unwrap_or_else(|| panic!("--version: {line:?}"))
}

/// HEAD's hash, when git can tell.
fn head() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(text(&out.stdout).trim().to_string())
}

/// Every file below `dir` of the package in `package_dir` (both relative to the repository), as
/// cargo lists it: relative to the package.
fn files_below(package_dir: &str, dir: &str) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in fs::read_dir(dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("below");
                out.insert(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = BTreeSet::new();
    let package = root().join(package_dir);
    walk(&package, &package.join(dir), &mut out);
    out
}

/// Unpacks the `.crate` of `package` into `into`; returns the package directory.
fn unpack(package: &str, into: &Path) -> PathBuf {
    let crate_file = crate_file(package);
    fs::create_dir_all(into).expect("dir");
    ok(
        &Command::new("tar")
            .arg("-xzf")
            .arg(&crate_file)
            .arg("-C")
            .arg(into)
            .output()
            .expect("tar runs"),
        "tar -x",
    );
    into.join(format!("{package}-{VERSION}"))
}

/// The `.crate` `cargo package` wrote for `package`.
fn crate_file(package: &str) -> PathBuf {
    root().join(format!(
        "target/package-check/package/{package}-{VERSION}.crate"
    ))
}

#[test]
fn the_crates_package_publish_and_install_clean() {
    // --allow-dirty: the checks are about the packages, and a checkout being worked on has
    // changes; make test runs on a clean one. --no-verify: each .crate is built below from the
    // .crates alone, with crates.io stood in for (cargo's own verification resolves against the
    // real index, and keeps a crate it extracted once by name and version: a change of these
    // crates, still 0.1.0, would be verified as the old ones).
    let package = cargo("package-check")
        .args(["package", "--locked", "--allow-dirty", "--no-verify"])
        .args(every_package())
        .output()
        .expect("cargo runs");
    ok(&package, "cargo package");
    assert_eq!(warnings(&package), EXPECTED_WARNINGS, "cargo package");

    for (name, dir) in PACKAGES {
        let list = cargo("package-check")
            .args(["package", "--locked", "--allow-dirty", "--list", "-p", name])
            .output()
            .expect("cargo runs");
        ok(&list, "cargo package --list");
        let listed: BTreeSet<String> = text(&list.stdout).lines().map(String::from).collect();
        let mut want = files_below(dir, "src");
        let mut around = vec![
            ".cargo_vcs_info.json",
            "Cargo.toml",
            "Cargo.toml.orig",
            "Cargo.lock",
            "LICENSE",
        ];
        if name == "capi2argo" {
            // The command's build script names the commit; its README is the project's.
            around.extend([
                "build.rs",
                "build/commit.rs",
                "build/record.rs",
                "README.md",
                "CHANGELOG.md",
            ]);
        }
        want.extend(around.into_iter().map(String::from));
        assert_eq!(listed, want, "the files of {name}'s .crate");
    }

    // The dry run of a publish: the .crates were verified above, so not built again here.
    let publish = cargo("package-check")
        .args([
            "publish",
            "--dry-run",
            "--locked",
            "--allow-dirty",
            "--no-verify",
        ])
        .args(every_package())
        .output()
        .expect("cargo runs");
    ok(&publish, "cargo publish --dry-run");
    let said = warnings(&publish);
    let mut want = EXPECTED_WARNINGS.map(String::from).to_vec();
    want.extend(std::iter::repeat_n(
        "warning: aborting upload due to dry run".to_string(),
        PACKAGES.len(),
    ));
    let mut sorted = said.clone();
    sorted.sort();
    want.sort();
    assert_eq!(sorted, want, "cargo publish --dry-run: {said:?}");

    let stand_in = crates_io_stand_in(&crates_io_vendor());
    let home = root().join("target/package-check/home");
    let _ = fs::remove_dir_all(&home);
    stand_in_home(&home, &stand_in);

    // The command built from its .crate alone, its layers from theirs (as crates.io would serve
    // them): its --version names the commit `cargo package` recorded; where git cannot tell,
    // CAPI2ARGO_COMMIT wins; with no record at all, `commit unknown`.
    let scratch = TempDir::new("package", "unpacked");
    let unpacked = unpack("capi2argo", &scratch.0);
    let verified = root().join("target/package-check/debug/capi2argo");
    // A build of an earlier .crate would keep the commit its build script read then (the
    // unpacked files carry the archive's times), and a build of its layers' earlier .crates
    // would stand (cargo takes a registry package of one version as unchanging): the local
    // rerun after a change to crates/krm built the new core against the old krm.
    let mut specs = Vec::new();
    for (name, _) in PACKAGES {
        specs.extend(["-p", name]);
    }
    let clean = cargo("package-check")
        .args(["clean", "--offline"])
        .args(&specs)
        .env("CARGO_HOME", &home)
        .current_dir(&unpacked)
        .output()
        .expect("cargo runs");
    ok(&clean, "cargo clean -p (the four packages)");
    let build = |env: &[(&str, &str)]| {
        let mut command = cargo("package-check");
        command
            .args(["build", "--locked", "--offline", "--bin", "capi2argo"])
            .env("CARGO_HOME", &home)
            .current_dir(&unpacked);
        for (k, v) in env {
            command.env(k, v);
        }
        let out = command.output().expect("cargo runs");
        ok(&out, "cargo build from the .crate");
        commit_of(&verified)
    };
    let recorded = build(&[]);
    match head() {
        Some(hash) => assert_eq!(recorded, hash[..7], "the packaged build's commit"),
        None => assert!(recorded.len() == 7, "{recorded}"),
    }
    assert_eq!(
        build(&[
            (
                "CAPI2ARGO_COMMIT",
                "0123456789abcdef0123456789abcdef01234567"
            ),
            ("CAPI2ARGO_COMMIT_DATE", "2026-01-02"),
        ]),
        "0123456 2026-01-02"
    );
    fs::remove_file(unpacked.join(".cargo_vcs_info.json")).expect("vcs info removed");
    assert_eq!(build(&[]), "commit unknown");

    crates_io_install(&stand_in);
}

/// A cargo home in `home` whose configuration replaces crates.io with the directory `stand_in`.
fn stand_in_home(home: &Path, stand_in: &Path) {
    fs::create_dir_all(home).expect("dir");
    fs::write(
        home.join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"stand-in\"\n\n[source.stand-in]\ndirectory = \"{}\"\n\n[net]\noffline = true\n",
            stand_in.display()
        ),
    )
    .expect("config");
}

/// Every dependency of the lock file as a directory source (`cargo vendor`): what crates.io
/// serves of them, checksums included. Vendored again only when the lock file changed, so the
/// dependencies' builds stay cached.
fn crates_io_vendor() -> PathBuf {
    let dir = root().join("target/crates-io");
    let vendor = dir.join("vendor");
    let lock = fs::read(root().join("Cargo.lock")).expect("Cargo.lock");
    if fs::read(dir.join("Cargo.lock")).ok().as_deref() != Some(&lock[..]) {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("dir");
        let out = cargo("crates-io/build")
            .args(["vendor", "--locked", "--offline", "--versioned-dirs"])
            .arg(&vendor)
            .output()
            .expect("cargo runs");
        ok(&out, "cargo vendor");
        // The workspace's own crates are vendored from their folders: they come from the .crates.
        for (name, _) in PACKAGES {
            let _ = fs::remove_dir_all(vendor.join(format!("{name}-{VERSION}")));
        }
        fs::write(dir.join("Cargo.lock"), &lock).expect("stamp");
    }
    vendor
}

/// crates.io as a directory: the vendored dependencies and the `.crate`s just packaged, as
/// crates.io would serve them.
fn crates_io_stand_in(vendor: &Path) -> PathBuf {
    for (name, _) in PACKAGES {
        // Each package as a directory source entry: its files, and the .crate's checksum.
        let bytes = fs::read(crate_file(name)).expect(".crate");
        let entry = vendor.join(format!("{name}-{VERSION}"));
        let checksum = sha256(&bytes);
        let stamp = entry.join(".cargo-checksum.json");
        let wanted = format!("{{\"files\":{{}},\"package\":\"{checksum}\"}}");
        if fs::read_to_string(&stamp).ok().as_deref() != Some(&wanted) {
            let _ = fs::remove_dir_all(&entry);
            // cargo takes a registry's package as unchanging, and would keep the build of the
            // previous .crate: that one build goes (cargo clean -p, in this test's own target
            // dir).
            let clean = cargo("crates-io/build")
                .args(["clean", "--release", "-p", name])
                .output()
                .expect("cargo runs");
            ok(&clean, "cargo clean -p");
            unpack(name, vendor);
            // Written last: it says the entry and the build are this .crate's.
            fs::write(&stamp, &wanted).expect("checksum");
        }
    }
    vendor.to_path_buf()
}

/// `cargo install --locked capi2argo` from the stand-in for crates.io.
fn crates_io_install(stand_in: &Path) {
    let dir = root().join("target/crates-io");
    // The command runs as written, with a cargo home whose configuration replaces crates.io
    // (`cargo install` reads no project configuration, only the cargo home's).
    let work = TempDir::new("package", "install");
    stand_in_home(&work.path("cargo-home"), stand_in);
    let out = Command::new("sh")
        .arg("-c")
        .arg(CRATES_IO_INSTALL)
        .current_dir(&work.0)
        .env("CARGO_HOME", work.path("cargo-home"))
        .env("CARGO_INSTALL_ROOT", work.path("root"))
        // What is checked is the install from the .crates, not the optimizer: the release
        // profile's whole-program optimization (fat LTO, one codegen unit), which the release
        // binaries get in `make musl`, would take minutes of a test run for nothing it checks.
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
        .env("CARGO_TARGET_DIR", dir.join("build"))
        .output()
        .expect("sh runs");
    ok(&out, CRATES_IO_INSTALL);
    assert!(
        text(&out.stderr).contains(&format!("Installing capi2argo v{VERSION}")),
        "{}",
        text(&out.stderr)
    );
    let recorded = commit_of(&work.path("root/bin/capi2argo"));
    match head() {
        Some(hash) => assert_eq!(recorded, hash[..7], "the installed build's commit"),
        None => assert!(recorded.len() == 7, "{recorded}"),
    }
}

/// SHA-256 of `bytes` through sha256sum (no hashing crate for one checksum).
fn sha256(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("written");
    let out = child.wait_with_output().expect("sha256sum finishes");
    text(&out.stdout)
        .split_whitespace()
        .next()
        .expect("a hash")
        .to_string()
}
