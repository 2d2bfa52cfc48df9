//! The controller's life after its install, as the book tells it (docs/src/controller.md,
//! Upgrade and Uninstall): its commands, run by sh with kubectl against the stand-in, leave
//! what the book says they leave.
//!
//! The stand-in runs no Deployment or Job controller and no pods, so `kubectl rollout status`
//! (which waits for one) and `kubectl logs` are not run; every other line of the book's blocks
//! is.

use std::fs;
use std::process::Command;

use capi2argo_core::well_known::{
    MANAGED_BY, MANAGED_BY_LABEL, OWNED_LABEL, SECRET_TYPE_LABEL, TOKEN_LABEL, TOKEN_LABEL_VALUE,
};
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

/// Runs one of the book's lines with sh in `dir`, kubectl talking to `api`: whether it
/// succeeded, and what it said.
fn try_run(api: &StandIn, dir: &TempDir, line: &str) -> (bool, String) {
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(&dir.0)
        .env("KUBECONFIG", &api.kubeconfig)
        .output()
        .expect("sh runs");
    (
        out.status.success(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

/// [`try_run`], which must succeed.
fn run(api: &StandIn, dir: &TempDir, line: &str) {
    let (ok, said) = try_run(api, dir, line);
    assert!(ok, "{line}: {said}");
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
            json!({SECRET_TYPE_LABEL: "cluster", OWNED_LABEL: "true"}),
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

/// Regression (issue 47): the book had no upgrade and no uninstall, so the Lease and the
/// settings ConfigMaps of earlier upgrades stayed; a second one-off run within the hour was
/// refused. Two one-off runs as the book says each make their Job, with the install's image; a
/// settings change applied as the book says makes a new settings ConfigMap the Deployment
/// mounts, and the book's cleanup leaves only that one; uninstalling as the book says leaves
/// exactly what it says stays: the Argo CD cluster Secrets and the token Secrets.
#[test]
fn the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say() {
    let Some(dir) = books_directory("controller.md", "my-controller") else {
        return;
    };
    let Some(api) = StandIn::start("lifecycle", &made_by_the_controller()) else {
        return;
    };
    let once = book_lines("One deliberate change");
    let [delete_job, apply_once, logs] = once.as_slice() else {
        panic!("One deliberate change: delete the last Job, apply, logs: {once:?}");
    };
    assert!(logs.contains("logs"), "{logs}");
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

    // A one-off run past the guards, and another with other settings: a Job's template cannot
    // change, so the second goes through only because the book deletes the first Job.
    let job_args = |api: &StandIn| {
        let jobs: Vec<Value> = api
            .objects()
            .into_iter()
            .filter(|o| o["kind"] == "Job")
            .collect();
        assert_eq!(jobs.len(), 1, "one Job");
        let container = &jobs[0]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            container["image"],
            "registry.example.com/capi2argo/capi2argo-controller:v0.1.0"
        );
        container["args"].clone()
    };
    run(&api, &dir, delete_job);
    run(&api, &dir, apply_once);
    assert!(job_args(&api).to_string().contains("--set=maxPrune=5"));
    let once_file = dir.path("my-once/kustomization.yaml");
    let book = fs::read_to_string(&once_file).expect("my-once");
    fs::write(&once_file, book.replace("maxPrune=5", "maxPrune=7")).expect("written");
    let (ok, said) = try_run(&api, &dir, apply_once);
    assert!(!ok && said.contains("field is immutable"), "{said}");
    run(&api, &dir, delete_job);
    run(&api, &dir, apply_once);
    assert!(job_args(&api).to_string().contains("--set=maxPrune=7"));

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
