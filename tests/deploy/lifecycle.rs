//! The controller's life after its install, as the book tells it (docs/src/controller.md,
//! Upgrade and Uninstall): its commands, run by sh with kubectl against the stand-in, leave
//! what the book says they leave.
//!
//! The stand-in runs no Deployment controller, so `kubectl rollout status` (which waits for
//! one) is not run; every other line of the book's blocks is.

use std::fs;
use std::process::Command;

use capi2argo_core::well_known::{MANAGED_BY, MANAGED_BY_LABEL, TOKEN_LABEL, TOKEN_LABEL_VALUE};
use serde_json::{Value, json};

use super::{ARGO_NAMESPACE, books_directory, pod_template, text};
use crate::common::TempDir;
use crate::common::apiserver::StandIn;

/// The lines of the first `sh` block under `## {section}` of the controller's chapter.
fn book_lines(section: &str) -> Vec<String> {
    let chapter = crate::common::chapter("controller.md");
    let (_, after) = chapter
        .split_once(&format!("\n## {section}\n"))
        .unwrap_or_else(|| panic!("controller.md has a section {section}"));
    let (_, block) = after
        .split_once("```sh\n")
        .unwrap_or_else(|| panic!("{section} has a sh block"));
    let (block, _) = block.split_once("\n```").expect("the block ends");
    block.lines().map(String::from).collect()
}

/// Runs one of the book's lines with sh in `dir`, kubectl talking to `api`.
fn run(api: &StandIn, dir: &TempDir, line: &str) {
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(&dir.0)
        .env("KUBECONFIG", &api.kubeconfig)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{line}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// What an installed controller leaves in Argo CD's namespace besides its install: an Argo CD
/// cluster Secret, a token Secret (`credentials: serviceAccount`), and its Lease.
fn made_by_the_controller() -> Vec<Value> {
    let secret = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": name, "namespace": ARGO_NAMESPACE, "labels": labels},
               "data": {"name": "cHJvZC1ldS0x"}})
    };
    vec![
        secret(
            "cluster-prod-eu-1",
            json!({"argocd.argoproj.io/secret-type": "cluster", MANAGED_BY_LABEL: MANAGED_BY}),
        ),
        secret(
            "token-cluster-prod-eu-1",
            json!({TOKEN_LABEL: TOKEN_LABEL_VALUE, MANAGED_BY_LABEL: MANAGED_BY}),
        ),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "capi2argo-controller", "namespace": ARGO_NAMESPACE,
                            "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
               "spec": {"holderIdentity": "capi2argo-controller-abc", "leaseDurationSeconds": 15}}),
    ]
}

/// Names of the stand-in's objects of `kind`.
fn names(api: &StandIn, kind: &str) -> Vec<String> {
    api.objects()
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Regression (issue 47): the book had no upgrade and no uninstall; the Lease and the settings
/// ConfigMaps of earlier upgrades stayed. A settings change applied as the book says makes a new
/// settings ConfigMap the Deployment mounts, and the book's cleanup leaves only that one;
/// uninstalling as the book says leaves exactly what it says stays: the Argo CD cluster Secrets
/// and the token Secrets.
#[test]
fn the_books_upgrade_and_uninstall_leave_what_they_say() {
    let Some(dir) = books_directory("controller.md", "my-controller") else {
        return;
    };
    let Some(api) = StandIn::start("lifecycle", &made_by_the_controller()) else {
        return;
    };
    let upgrade = book_lines("Upgrade");
    let uninstall = book_lines("Uninstall");
    let [apply, rollout, cleanup] = upgrade.as_slice() else {
        panic!("Upgrade: apply, rollout status, delete the old settings: {upgrade:?}");
    };
    assert!(rollout.contains("rollout status"), "{rollout}");

    run(&api, &dir, apply);
    let settings = |api: &StandIn| {
        let mut found = names(api, "ConfigMap");
        found.retain(|n| n.starts_with("capi2argo-controller-settings-"));
        found
    };
    let first = settings(&api);
    assert_eq!(first.len(), 1, "{first:?}");

    // A setting changed in the kustomization, applied again.
    let kustomization = dir.path("my-controller/kustomization.yaml");
    let before = fs::read_to_string(&kustomization).expect("kustomization");
    let changed = before.replacen("  literals:", "  literals:\n  - maxPrune=20%", 1);
    assert_ne!(before, changed, "the book's kustomization has literals");
    fs::write(&kustomization, changed).expect("written");
    run(&api, &dir, apply);
    assert_eq!(settings(&api).len(), 2, "kustomize leaves the replaced one");
    run(&api, &dir, cleanup);
    let left = settings(&api);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_ne!(left, first, "the new settings stay, the old go");
    let objects = api.objects();
    let mounted = serde_json::to_string(&pod_template(&objects)["spec"]["volumes"]).expect("JSON");
    assert!(mounted.contains(&left[0]), "{mounted}");
    let current = objects
        .iter()
        .find(|o| o["metadata"]["name"] == left[0].as_str())
        .expect("the settings");
    assert_eq!(current["data"]["maxPrune"], "20%");
    assert_eq!(current["data"]["readApplications"], "true");

    for line in &uninstall {
        run(&api, &dir, line);
    }
    let mut left: Vec<String> = api
        .objects()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["Secret cluster-prod-eu-1", "Secret token-cluster-prod-eu-1"],
        "what the book says stays, and nothing else"
    );
}
