//! The Kptfile-examples packages, rendered by the real `kpt` with the built binary as the `exec` function.
//!
//! Each package's `.expected/` is the package after `kpt fn render` (minus the Kptfile, which must
//! not change). `UPDATE_GOLDEN=1 cargo test --test kpt` rewrites it; review the diff before committing.

use crate::common;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn kpt_available() -> bool {
    Command::new("kpt")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A loud skip: the suite still passes where kpt is missing, but says so.
fn skip_without_kpt() -> bool {
    if kpt_available() {
        return false;
    }
    common::skip("`kpt` is not on PATH, so the Kptfile-examples packages were NOT rendered");
    true
}

fn packages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("Kptfile-examples");
    let mut packages: Vec<PathBuf> = fs::read_dir(root)
        .expect("Kptfile-examples exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("Kptfile").is_file())
        .collect();
    packages.sort();
    assert!(!packages.is_empty(), "no packages in Kptfile-examples");
    packages
}

/// Every file below `dir` (relative path → content), except the `.expected/` snapshot.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).expect("readable dir") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("below root")
                .to_string_lossy()
                .into_owned();
            if rel == ".expected" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, fs::read(&path).expect("readable file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn copy_package(from: &Path, to: &Path) {
    for (rel, content) in files(from) {
        let target = to.join(rel);
        fs::create_dir_all(target.parent().expect("parent")).expect("dir created");
        fs::write(target, content).expect("file copied");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capi2argo-kpt-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// kpt resolves `exec: capi2argo` from PATH: put the freshly built binary first.
fn kpt(args: &[&str]) -> std::process::Output {
    common::with_binary_on_path("kpt")
        .args(args)
        .output()
        .expect("kpt runs")
}

fn render(dir: &Path) {
    let out = kpt(&[
        "fn",
        "render",
        dir.to_str().expect("utf-8 path"),
        "--allow-exec",
    ]);
    assert!(
        out.status.success(),
        "kpt fn render failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn differences(want: &BTreeMap<String, Vec<u8>>, got: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut problems = Vec::new();
    for (rel, content) in want {
        match got.get(rel) {
            None => problems.push(format!("missing after render: {rel}")),
            Some(c) if c != content => problems.push(format!("differs: {rel}")),
            Some(_) => {}
        }
    }
    problems.extend(
        got.keys()
            .filter(|k| !want.contains_key(*k))
            .map(|k| format!("unexpected file: {k}")),
    );
    problems
}

#[test]
fn packages_render_to_their_snapshot_and_render_again_unchanged() {
    if skip_without_kpt() {
        return;
    }
    for package in packages() {
        let name = package
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let work = scratch(&name);
        copy_package(&package, &work);
        render(&work);
        let mut rendered = files(&work);
        let kptfile = rendered.remove("Kptfile").expect("Kptfile kept");
        assert_eq!(
            kptfile,
            fs::read(package.join("Kptfile")).expect("Kptfile"),
            "{name}: render changed the Kptfile"
        );
        let expected_dir = package.join(".expected");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            let _ = fs::remove_dir_all(&expected_dir);
            for (rel, content) in &rendered {
                let target = expected_dir.join(rel);
                fs::create_dir_all(target.parent().expect("parent")).expect("dir");
                fs::write(target, content).expect("snapshot written");
            }
        }
        // Every file the package had comes out byte-for-byte as it was: the function only
        // adds, but for a sealed package's Cluster API Secrets, which it leaves out (their
        // file is then in neither the render nor `.expected/`).
        for (rel, content) in files(&package) {
            let left_out = !rendered.contains_key(&rel) && !expected_dir.join(&rel).exists();
            if rel != "Kptfile" && !left_out && rendered.get(&rel) != Some(&content) {
                panic!(
                    "{name}: render changed {rel}:\n{}",
                    String::from_utf8_lossy(rendered.get(&rel).map_or(&[][..], |c| c))
                );
            }
        }
        let expected = files(&expected_dir);
        let problems = differences(&expected, &rendered);
        assert!(
            problems.is_empty(),
            "{name}: rendered package differs from .expected/:\n{}",
            problems.join("\n")
        );

        render(&work);
        let mut again = files(&work);
        again.remove("Kptfile");
        let problems = differences(&rendered, &again);
        assert!(
            problems.is_empty(),
            "{name}: a second render changed the package:\n{}",
            problems.join("\n")
        );
        let _ = fs::remove_dir_all(&work);
    }
}

/// `kpt fn eval --exec … -- k=v`: settings arrive as a ConfigMap, untouched files stay as they were.
#[test]
fn eval_with_key_value_settings() {
    if skip_without_kpt() {
        return;
    }
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("Kptfile-examples/layered-fleet");
    let work = scratch("eval");
    copy_package(&package, &work);
    let before = files(&work);
    let out = kpt(&[
        "fn",
        "eval",
        work.to_str().expect("utf-8"),
        "--exec",
        "capi2argo",
        "--",
        "argoNamespace=gitops",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = files(&work);
    let generated: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert_eq!(
        generated,
        vec![
            "gitops/cluster-aks-weu-prod.yaml",
            "gitops/cluster-payments-eks.yaml",
            "gitops/cluster-prod-eu-1.yaml"
        ]
    );
    for (rel, content) in &before {
        assert_eq!(after.get(rel), Some(content), "eval changed {rel}");
    }
    let _ = fs::remove_dir_all(&work);
}

/// As a Kptfile validator (`action: validate`): a Secret the policy refuses fails the render,
/// naming the Secret and the field, and nothing is written.
#[test]
fn validator_in_a_kptfile_fails_the_render_on_a_policy_error() {
    if skip_without_kpt() {
        return;
    }
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("Kptfile-examples/kcp-cluster");
    let dir = scratch("validator");
    copy_package(&package, &dir);
    let kptfile = dir.join("Kptfile");
    let text = fs::read_to_string(&kptfile).expect("Kptfile");
    fs::write(
        &kptfile,
        text.replace(
            "      action: validate\n",
            "      action: validate\n      requiredLabels: team\n",
        ),
    )
    .expect("Kptfile written");
    let before = files(&dir);
    let out = kpt(&[
        "fn",
        "render",
        dir.to_str().expect("utf-8 path"),
        "--allow-exec",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the render should fail:\n{stderr}");
    assert!(
        stderr.contains("policy: the label team is required"),
        "the result names the rule:\n{stderr}"
    );
    assert_eq!(files(&dir), before, "a failed render writes nothing");
    fs::remove_dir_all(&dir).ok();
}

/// The guards in a Kptfile pipeline, on a rendered fleet of three clusters (layered-fleet after
/// its first render): a package rendered without its `clusters/` folder, and one that lost two of
/// its three clusters' Secrets, each fail the render and leave every file as it was; the setting
/// given for one render lets the deliberate change through, deleting the two clusters' files.
#[test]
fn guards_hold_a_render_that_would_empty_or_gut_the_fleet() {
    if skip_without_kpt() {
        return;
    }
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("Kptfile-examples/layered-fleet");
    let render_in = |dir: &Path| {
        kpt(&[
            "fn",
            "render",
            dir.to_str().expect("utf-8 path"),
            "--allow-exec",
            "--truncate-output=false",
        ])
    };
    let rendered = |name: &str| {
        let dir = scratch(name);
        copy_package(&package.join(".expected"), &dir);
        fs::copy(package.join("Kptfile"), dir.join("Kptfile")).expect("Kptfile copied");
        dir
    };

    let dir = rendered("guard-empty");
    fs::remove_dir_all(dir.join("clusters")).expect("clusters/ removed");
    let before = files(&dir);
    let out = render_in(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the render should fail:\n{stderr}");
    assert!(stderr.contains("allowEmpty=false"), "{stderr}");
    assert_eq!(files(&dir), before, "a held render writes nothing");
    fs::remove_dir_all(&dir).ok();

    let dir = rendered("guard-max-prune");
    for gone in ["aks-secrets.yaml", "eks-secrets.yaml"] {
        fs::remove_file(dir.join("clusters").join(gone)).expect("removed");
    }
    let before = files(&dir);
    let out = render_in(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the render should fail:\n{stderr}");
    assert!(stderr.contains("more than maxPrune=10% allows"), "{stderr}");
    assert_eq!(files(&dir), before, "a held render writes nothing");
    // Regression (a held render showed four info lines, then "...(1 line(s) truncated)", and
    // every result twice, under Results and Stderr): with kpt's own truncation, the guard's
    // error is the first result, and each result is shown once.
    let out = kpt(&[
        "fn",
        "render",
        dir.to_str().expect("utf-8 path"),
        "--allow-exec",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr
        .lines()
        .skip_while(|l| l.trim() != "Results:")
        .nth(1)
        .unwrap_or_default();
    assert!(
        first.trim_start().starts_with("[error]")
            && first.contains("more than maxPrune=10% allows"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("more than maxPrune").count(), 1, "{stderr}");
    // Standard error says only that the function failed, and where to look.
    let section: Vec<&str> = stderr
        .lines()
        .skip_while(|l| l.trim() != "Stderr:")
        .skip(1)
        .map(str::trim)
        .take_while(|l| l.starts_with('"'))
        .filter(|l| *l != "\"\"")
        .collect();
    assert_eq!(
        section,
        ["\"capi2argo: 1 error, in the function's results\""],
        "{stderr}"
    );
    // The deliberate change, for one render: the two clusters' Secrets go, their files with them.
    let config = dir.join("fleet-config.yaml");
    let text = fs::read_to_string(&config).expect("config");
    fs::write(
        &config,
        text.replace("spec:\n", "spec:\n  maxPrune: \"100%\"\n"),
    )
    .expect("written");
    let out = render_in(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let argocd: Vec<String> = files(&dir)
        .into_keys()
        .filter(|k| k.starts_with("argocd/"))
        .collect();
    assert_eq!(argocd, ["argocd/cluster-fleet-eu-prod-eu-1.yaml"]);
    fs::remove_dir_all(&dir).ok();
}

/// The book's way to see a kpt package's plan before rendering it: `kpt fn source` gives the
/// package as a ResourceList, and the Kptfile's `configMap` keys go to `capi2argo plan` as
/// `--set` (issue "The first hour": kpt hid the error that explained a failure).
#[test]
fn a_packages_plan_before_rendering() {
    if skip_without_kpt() {
        return;
    }
    let dir = scratch("plan-before-render");
    copy_package(&common::root().join("Kptfile-examples/mixed-fleet"), &dir);
    let script = format!(
        "kpt fn source {} | capi2argo plan --set namespacedNames=true --set argoNamespace=argocd",
        dir.display()
    );
    let out = common::with_binary_on_path("sh")
        .args(["-c", &script])
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        plan.contains("create    argocd/cluster-stores-retail-k3s-07 (stores-retail-k3s-07)")
            && plan.ends_with(
                "plan: 4 to create, 0 to update, 0 to rename, 0 to prune, 0 kept, 0 unchanged\n"
            ),
        "{plan}"
    );
    // Nothing was written: the package is as it was.
    assert_eq!(
        files(&dir),
        files(&common::root().join("Kptfile-examples/mixed-fleet"))
    );
}
