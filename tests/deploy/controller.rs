//! The controller's Deployment pod in its real image (`make controller-image`), run the way its
//! kubelet runs it (the same runner as the CronJob's pod), against the stand-in over HTTPS with
//! exactly the RBAC `kubectl apply -k deploy/controller` installs: it watches, takes its Lease,
//! registers a cluster created while it runs, records Events, serves its probes and metrics,
//! and on `docker stop` (SIGTERM, 30 s) releases the Lease and exits 0.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::sync::{Api, install, kubeconfig_secret, pod, setup, stand_in, stored, writes};
use super::{pod_template, rules_for, text};
use crate::common::{free_port, http_get};

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    http_get(port, path, "").map(|(code, body)| (code, text(&body)))
}

/// The container, removed when the test ends.
struct Running(String);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.0]).output();
    }
}

fn eventually(what: &str, container: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > Duration::from_secs(60) {
            let logs = Command::new("docker").args(["logs", container]).output();
            panic!(
                "{what}: not within 60s; its log:\n{}",
                logs.map(|o| text(&o.stderr)).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_deployment_pod_registers_a_cluster_and_stops_cleanly() {
    let Some(certs) = setup("controller") else {
        return;
    };
    let (_admin, installed) = install("controller", "deploy/controller", &certs);
    // The pod's token is its ServiceAccount's, minted by TokenRequest, with exactly the rules
    // the installed RBAC gives that account; the test's own client is an administrator.
    let account = "system:serviceaccount:argocd:capi2argo-controller";
    let mut rules: Vec<Value> = rules_for(&installed)
        .into_iter()
        .map(|mut r| {
            r["user"] = account.into();
            r
        })
        .collect();
    rules.push(json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}));
    let service_account = installed
        .iter()
        .find(|o| o["kind"] == "ServiceAccount")
        .expect("the ServiceAccount")
        .clone();
    let fleet = stored(vec![
        kubeconfig_secret("fleet-eu", "prod-eu-1"),
        service_account,
    ]);
    let api = stand_in("controller", &fleet, Some(rules), &certs);
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600}});
    let minted = kubectl(
        &api,
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/argocd/serviceaccounts/capi2argo-controller/token",
            "-f",
            "-",
        ],
        &request.to_string(),
    );
    let minted: Value = serde_json::from_str(&minted).expect("a TokenRequest");
    let token = minted["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let (metrics, health) = (free_port(), free_port());
    let name = format!("capi2argo-controller-test-{}", std::process::id());
    let ports = [
        format!("--metrics-bind-address=127.0.0.1:{metrics}"),
        format!("--health-probe-bind-address=127.0.0.1:{health}"),
    ];
    let (mut docker, _files) = pod(
        "controller",
        pod_template(&installed),
        &installed,
        Api::At(api.port),
        &certs,
        &token,
        &[],
        Some((&name, &ports)),
    );
    let started = docker.output().expect("docker runs");
    assert!(started.status.success(), "{}", text(&started.stderr));
    let _running = Running(name.clone());
    eventually("ready", &name, || {
        get(health, "/readyz").map(|r| r.0) == Some(200)
    });
    eventually("prod-eu-1 registered", &name, || {
        writes(&api)
            .iter()
            .any(|(m, p)| m == "POST" && p == "/api/v1/namespaces/argocd/secrets")
    });
    // A cluster created while it runs.
    let mut another = kubeconfig_secret("fleet-eu", "prod-eu-2");
    another["metadata"]["name"] = "prod-eu-2-kubeconfig".into();
    kubectl(&api, &["create", "-f", "-"], &another.to_string());
    eventually("prod-eu-2 registered", &name, || {
        api.secret_names()
            .contains(&"argocd/cluster-prod-eu-2".to_string())
    });
    // The metric counts a write once its answer is in, which may be a moment after the API
    // server shows the Secret.
    eventually("both creates counted", &name, || {
        get(metrics, "/metrics").is_some_and(|(_, e)| {
            e.contains("capi2argo_writes_total{verb=\"create\",outcome=\"ok\"} 2")
        })
    });
    let (_, exposition) = get(metrics, "/metrics").expect("metrics");
    assert!(exposition.contains("capi2argo_leader 1"));
    // Its Lease, held by its pod, made with the rights the Role gives.
    let lease = api
        .objects()
        .into_iter()
        .find(|o| o["kind"] == "Lease")
        .expect("a Lease");
    assert_eq!(lease["metadata"]["name"], "capi2argo-controller");
    assert_eq!(lease["spec"]["holderIdentity"], "controller-pod");
    // Every request the stand-in refused: none.
    let refused: Vec<String> = api
        .requests()
        .iter()
        .filter(|r| r.code == 403)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        refused.is_empty(),
        "the installed RBAC refused: {refused:?}"
    );
    // SIGTERM, with kubelet's 30 seconds.
    let stopping = Instant::now();
    let stop = Command::new("docker")
        .args(["stop", "-t", "30", &name])
        .output()
        .expect("docker stop");
    assert!(stop.status.success());
    assert!(
        stopping.elapsed() < Duration::from_secs(30),
        "it was killed"
    );
    let inspect = Command::new("docker")
        .args(["inspect", "--format", "{{.State.ExitCode}}", &name])
        .output()
        .expect("docker inspect");
    assert_eq!(text(&inspect.stdout).trim(), "0");
    let logs = Command::new("docker")
        .args(["logs", &name])
        .output()
        .expect("logs");
    let logs = super::sync::logs(&logs, &fleet);
    assert!(logs.contains("released the Lease"), "{logs}");
    let released: Vec<Value> = api
        .objects()
        .into_iter()
        .filter(|o| o["kind"] == "Lease")
        .collect();
    assert!(
        released[0]["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{released:?}"
    );
}

/// Runs kubectl as the test's administrator against `api`, `input` on its standard input; its
/// output.
fn kubectl(api: &crate::common::apiserver::StandIn, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&api.kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("kubectl ends");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}
