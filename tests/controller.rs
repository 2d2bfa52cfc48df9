//! capi2argo-controller, the static binary `make controller` builds, against the API stand-in
//! (tests/kube/apiserver.py) as kube-rs talks to it: watches, pages, conditional writes, Events,
//! the Lease. Each test drives one behaviour of the controller the way a cluster would — a Secret
//! created, changed, deleted; a write refused as stale; a guard that holds; a replica that dies;
//! SIGTERM — and reads the result from the stand-in's record of requests, the controller's
//! metrics and its logs. Timing bounds here are generous ceilings for a behaviour (a Secret
//! registered at all, an exit within SIGTERM's 30 s); how fast it is lives in bench/.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::common::apiserver::{Options, StandIn};
use crate::common::{self, TempDir, free_port, http_get, root, text};

/// How long a behaviour may take before the test calls it missing.
const PATIENCE: Duration = Duration::from_secs(30);

/// The controller binary: CAPI2ARGO_CONTROLLER, else the static x86_64 build `make controller`
/// leaves; `None`, loudly, when there is none.
pub fn binary() -> Option<PathBuf> {
    let path = std::env::var_os("CAPI2ARGO_CONTROLLER")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            root().join("target/x86_64-unknown-linux-musl/controller/capi2argo-controller")
        });
    if path.is_file() {
        Some(path)
    } else {
        common::skip(&format!(
            "{} is missing (`make controller` builds it; make test does, first), so the controller was NOT run",
            path.display()
        ));
        None
    }
}

/// One controller process, killed when dropped.
pub struct Controller {
    child: Child,
    dir: TempDir,
    pub metrics: u16,
    pub health: u16,
}

impl Controller {
    /// Starts the controller against `api`, with `args` after the ports and the kubeconfig.
    pub fn start(name: &str, api: &StandIn, args: &[&str]) -> Option<Controller> {
        let binary = binary()?;
        let dir = TempDir::new("controller", name);
        let (metrics, health) = (free_port(), free_port());
        let log = fs::File::create(dir.path("log")).expect("log");
        let child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(&api.kubeconfig)
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
            .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
            .args(["--debounce=100ms", "--argo-namespace=argocd"])
            .args(args)
            .env("POD_NAME", name)
            .env_remove("KUBECONFIG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the controller starts");
        Some(Controller {
            child,
            dir,
            metrics,
            health,
        })
    }

    pub fn logs(&self) -> String {
        fs::read_to_string(self.dir.path("log")).unwrap_or_default()
    }

    /// `GET path` on the metrics or the health port: the status code and body.
    pub fn get(&self, port: u16, path: &str) -> Option<(u16, String)> {
        http_get(port, path, "").map(|(code, body)| (code, text(&body)))
    }

    /// The value of the metric sample `name{labels}` (as the exposition writes it), if any.
    pub fn metric(&self, sample: &str) -> Option<f64> {
        let (_, body) = self.get(self.metrics, "/metrics")?;
        body.lines().find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == sample).then(|| value.parse().ok())?
        })
    }

    /// Sends SIGTERM, as kubelet does.
    pub fn terminate(&self) {
        let out = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .output()
            .expect("kill runs");
        assert!(out.status.success());
    }

    /// Kills it at once, as a node that dies does.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to end, at most `limit`.
    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits until `done` says so, at most [`PATIENCE`]; `what` names it in the failure, with the
/// controller's log.
pub fn eventually(what: &str, controller: &Controller, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < PATIENCE,
            "{what}: not within {}s; the controller's log:\n{}",
            PATIENCE.as_secs(),
            controller.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A stand-in for these tests: plain HTTP, an administrator's rights, `args` its flags.
fn stand_in(name: &str, objects: &[Value], args: &[&str]) -> Option<StandIn> {
    StandIn::start_with(
        name,
        objects,
        Options {
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Options::default()
        },
    )
}

/// Cluster API's kubeconfig Secret of cluster `name` in `fleet`, logging in with a token.
pub fn kubeconfig_secret(name: &str, server: &str) -> Value {
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server}\nusers:\n- name: admin\n  user:\n    token: token-of-{name}-0123456789abcdef\ncontexts:\n- name: {name}\n  context: {{cluster: {name}, user: admin}}\ncurrent-context: {name}\n"
    );
    json!({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
           "metadata": {"name": format!("{name}-kubeconfig"), "namespace": "fleet",
                        "labels": {"cluster.x-k8s.io/cluster-name": name}},
           "data": {"value": B64.encode(kubeconfig)}})
}

/// Cluster API's Cluster `name` in `fleet`, provisioned.
fn capi_cluster(name: &str) -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
           "metadata": {"name": name, "namespace": "fleet"},
           "spec": {"controlPlaneEndpoint": {"host": format!("{name}.fleet.example.net"), "port": 6443}},
           "status": {"phase": "Provisioned", "controlPlaneReady": true, "infrastructureReady": true}})
}

fn server(name: &str) -> String {
    format!("https://{name}.fleet.example.net:6443")
}

/// Adds cluster `name`'s kubeconfig Secret and waits for its Argo CD Secret (`what`).
fn registered_when_added(api: &StandIn, controller: &Controller, name: &str, what: &str) {
    let (code, _) = api.send(
        "POST",
        "/api/v1/namespaces/fleet/secrets",
        Some(&kubeconfig_secret(name, &server(name))),
    );
    assert_eq!(code, 201);
    eventually(what, controller, || {
        has_argo_secret(api, &format!("cluster-{name}"))
    });
}

/// The Argo CD Secrets in the stand-in now, by name.
fn argo_secrets(api: &StandIn) -> Vec<(String, Value)> {
    api.live_secrets("argocd")
        .into_iter()
        .map(|s| (s["metadata"]["name"].as_str().unwrap_or("").to_string(), s))
        .collect()
}

fn has_argo_secret(api: &StandIn, name: &str) -> bool {
    argo_secrets(api).iter().any(|(n, _)| n == name)
}

fn decoded(secret: &Value, key: &str) -> String {
    text(
        &B64.decode(secret["data"][key].as_str().unwrap_or_default())
            .unwrap_or_default(),
    )
}

/// The writes to Secrets: `(method, path, code)`.
fn secret_writes(api: &StandIn) -> Vec<(String, String, u16)> {
    api.writes()
        .into_iter()
        .filter(|r| r.path.contains("/secrets"))
        .map(|r| (r.method, r.path, r.code))
        .collect()
}

/// The Events the controller recorded, whole.
fn event_objects(api: &StandIn) -> Vec<Value> {
    api.requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.contains("/events"))
        .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok())
        .collect()
}

/// The Events the controller recorded: `(reason, regarding namespace/name, note)`.
fn events(api: &StandIn) -> Vec<(String, String, String)> {
    event_objects(api)
        .into_iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or_default().to_string(),
                format!(
                    "{}/{}",
                    e["regarding"]["namespace"].as_str().unwrap_or_default(),
                    e["regarding"]["name"].as_str().unwrap_or_default()
                ),
                e["note"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// No log line holds a kubeconfig's token or any Secret value.
fn no_credentials(logs: &str) {
    assert!(!logs.contains("token-of-"), "a token was logged:\n{logs}");
    assert!(!logs.contains("PRIVATE KEY"), "a key was logged:\n{logs}");
}

/// A new kubeconfig Secret is registered, a changed one followed, a deleted one's Argo CD Secret
/// pruned; each write conditional and as field manager capi2argo; every metric the book lists
/// is served; idle, it writes nothing and asks for nothing but its watches.
#[test]
fn a_cluster_is_registered_followed_and_pruned_as_its_secret_changes() {
    let fleet = [
        kubeconfig_secret("alpha", &server("alpha")),
        capi_cluster("alpha"),
        capi_cluster("beta"),
    ];
    let Some(api) = stand_in("follow", &fleet, &[]) else {
        return;
    };
    let Some(controller) = Controller::start("follow", &api, &[]) else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    eventually("ready", &controller, || {
        controller.get(controller.health, "/readyz").map(|r| r.0) == Some(200)
    });
    assert_eq!(
        controller.get(controller.health, "/healthz").map(|r| r.0),
        Some(200)
    );
    // A second cluster appears.
    registered_when_added(&api, &controller, "beta", "beta registered");
    // alpha's server moves.
    let (_, mut alpha) = api.send(
        "GET",
        "/api/v1/namespaces/fleet/secrets/alpha-kubeconfig",
        None,
    );
    let moved = kubeconfig_secret("alpha", "https://alpha.elsewhere.example.net:6443");
    alpha["data"] = moved["data"].clone();
    let (code, _) = api.send(
        "PUT",
        "/api/v1/namespaces/fleet/secrets/alpha-kubeconfig",
        Some(&alpha),
    );
    assert_eq!(code, 200);
    eventually("alpha's new server followed", &controller, || {
        argo_secrets(&api).iter().any(|(n, s)| {
            n == "cluster-alpha"
                && decoded(s, "server") == "https://alpha.elsewhere.example.net:6443"
        })
    });
    // beta goes.
    let (code, _) = api.send(
        "DELETE",
        "/api/v1/namespaces/fleet/secrets/beta-kubeconfig",
        None,
    );
    assert_eq!(code, 200);
    eventually("beta pruned", &controller, || {
        !has_argo_secret(&api, "cluster-beta")
    });

    let writes: Vec<(String, String)> = secret_writes(&api)
        .into_iter()
        .filter(|(_, path, _)| path.starts_with("/api/v1/namespaces/argocd/"))
        .map(|(m, p, c)| (m, format!("{p} {c}")))
        .collect();
    assert_eq!(
        writes,
        [
            (
                "POST".into(),
                "/api/v1/namespaces/argocd/secrets 201".into()
            ),
            (
                "POST".into(),
                "/api/v1/namespaces/argocd/secrets 201".into()
            ),
            (
                "PUT".into(),
                "/api/v1/namespaces/argocd/secrets/cluster-alpha 200".into()
            ),
            (
                "DELETE".into(),
                "/api/v1/namespaces/argocd/secrets/cluster-beta 200".into()
            ),
        ]
    );
    for write in api
        .writes()
        .iter()
        .filter(|r| r.path.contains("/argocd/secrets"))
    {
        match write.method.as_str() {
            "DELETE" => {
                let options: Value = serde_json::from_str(&write.body).expect("DeleteOptions");
                assert!(options["preconditions"]["uid"].is_string(), "{options}");
                assert!(options["preconditions"]["resourceVersion"].is_string());
            }
            _ => assert_eq!(write.query["fieldManager"], "capi2argo"),
        }
        if write.method == "PUT" {
            let body: Value = serde_json::from_str(&write.body).expect("a Secret");
            assert!(body["metadata"]["resourceVersion"].is_string());
        }
    }
    assert_eq!(
        controller.metric(r#"capi2argo_writes_total{verb="create",outcome="ok"}"#),
        Some(2.0)
    );
    assert_eq!(
        controller.metric(r#"capi2argo_clusters{state="converted"}"#),
        Some(1.0)
    );
    assert_eq!(controller.metric("capi2argo_leader"), Some(1.0));
    assert_eq!(controller.metric("capi2argo_cluster_api_served"), Some(1.0));
    // Every metric is in the book's table, and every one the table names is served.
    let (_, exposition) = controller
        .get(controller.metrics, "/metrics")
        .expect("metrics");
    let served: std::collections::BTreeSet<String> = exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    let book = common::chapter("controller.md");
    let documented: std::collections::BTreeSet<String> = book
        .lines()
        .filter_map(|l| l.strip_prefix("| `capi2argo_"))
        .map(|l| {
            let name = l.split('`').next().unwrap_or_default();
            let name = name.split('{').next().unwrap_or_default();
            format!("capi2argo_{name}")
        })
        .map(|n| {
            // The exposition's TYPE line names a counter without `_total`, a histogram without
            // its suffixes.
            n.trim_end_matches("_total").to_string()
        })
        .collect();
    // Three have a series only when there is something to say: an expiry, a failed watch.
    let quiet = [
        "capi2argo_credential_expiry_timestamp_seconds",
        "capi2argo_watch_errors",
        "capi2argo_token_expiry_timestamp_seconds",
    ];
    let unsaid: Vec<&String> = documented.difference(&served).collect();
    assert!(
        served.is_subset(&documented) && unsaid.iter().all(|n| quiet.contains(&n.as_str())),
        "docs/src/controller.md's metrics table: served {served:?}, documented {documented:?}"
    );

    // Regression (issue 47): "registered in Argo CD" was visible nowhere a user looks first.
    // Each write is an Event on the Cluster API Cluster, naming the Argo CD Secret.
    eventually("an Event on each Cluster", &controller, || {
        event_objects(&api)
            .iter()
            .any(|e| e["reason"] == "Unregistered")
    });
    let on_clusters: Vec<(String, String)> = event_objects(&api)
        .iter()
        .filter(|e| {
            ["Registered", "Updated", "Unregistered"]
                .contains(&e["reason"].as_str().unwrap_or_default())
        })
        .map(|e| {
            assert_eq!(e["regarding"]["kind"], "Cluster", "{e}");
            assert_eq!(e["type"], "Normal", "{e}");
            let name = e["regarding"]["name"].as_str().unwrap_or_default();
            let note = e["note"].as_str().unwrap_or_default();
            assert!(note.contains(&format!("argocd/cluster-{name}")), "{e}");
            (
                e["reason"].as_str().unwrap_or_default().to_string(),
                name.to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("Registered", "alpha"),
        ("Registered", "beta"),
        ("Updated", "alpha"),
        ("Unregistered", "beta"),
    ]
    .iter()
    .map(|(r, n)| (r.to_string(), n.to_string()))
    .collect();
    assert_eq!(on_clusters, expected);

    // Idle: no write, and no request but the watches' own.
    let before = api.requests().len();
    std::thread::sleep(Duration::from_secs(3));
    let idle: Vec<String> = api.requests()[before..]
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        idle.iter().all(|r| r.starts_with("GET ")) && idle.len() <= 3,
        "idle requests: {idle:?}"
    );
    no_credentials(&controller.logs());
}

/// A write refused as stale (another client changed the Secret after the controller read it)
/// is planned again from fresh caches, and the second write goes through.
#[test]
fn a_write_refused_as_stale_is_planned_again() {
    let mut owned = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "cluster-alpha", "namespace": "argocd", "labels": {
            "argocd.argoproj.io/secret-type": "cluster", "capi-to-argocd/owned": "true",
            "capi-to-argocd/cluster-secret-name": "alpha-kubeconfig",
            "capi-to-argocd/cluster-namespace": "fleet"}},
        "data": {"name": B64.encode("alpha"), "server": B64.encode("https://old.example.net:6443")}});
    owned["data"]["config"] = B64.encode("{}").into();
    let fleet = [kubeconfig_secret("alpha", &server("alpha")), owned];
    let path = "/api/v1/namespaces/argocd/secrets/cluster-alpha";
    let Some(api) = stand_in("stale", &fleet, &["--interfere", "PUT", path]) else {
        return;
    };
    let Some(controller) = Controller::start("stale", &api, &[]) else {
        return;
    };
    eventually("alpha updated", &controller, || {
        argo_secrets(&api)
            .iter()
            .any(|(n, s)| n == "cluster-alpha" && decoded(s, "server") == server("alpha"))
    });
    let puts: Vec<u16> = secret_writes(&api)
        .into_iter()
        .filter(|(m, p, _)| m == "PUT" && p == path)
        .map(|(_, _, c)| c)
        .collect();
    assert_eq!(puts, [409, 200], "{}", controller.logs());
    assert_eq!(
        controller.metric(r#"capi2argo_writes_total{verb="replace",outcome="conflict"}"#),
        Some(1.0)
    );
    assert!(
        controller
            .logs()
            .contains("refused as stale: planning again"),
        "{}",
        controller.logs()
    );
}

/// A mass delete (half the fleet's kubeconfig Secrets gone at once) is held by maxPrune: nothing
/// is deleted, the guard's metric is 1, and each Argo CD Secret it keeps gets an Event.
#[test]
fn a_mass_delete_is_held_with_its_metric_and_events() {
    let names: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    let fleet: Vec<Value> = names
        .iter()
        .map(|n| kubeconfig_secret(n, &server(n)))
        .collect();
    let Some(api) = stand_in("held", &fleet, &[]) else {
        return;
    };
    let Some(controller) = Controller::start("held", &api, &[]) else {
        return;
    };
    eventually("the fleet registered", &controller, || {
        argo_secrets(&api).len() == 10
    });
    assert_eq!(
        controller.metric(r#"capi2argo_guard_held{guard="maxPrune"}"#),
        Some(0.0)
    );
    for name in &names[..5] {
        let (code, _) = api.send(
            "DELETE",
            &format!("/api/v1/namespaces/fleet/secrets/{name}-kubeconfig"),
            None,
        );
        assert_eq!(code, 200);
    }
    eventually("the guard holds", &controller, || {
        controller.metric(r#"capi2argo_guard_held{guard="maxPrune"}"#) == Some(1.0)
    });
    eventually("its Events", &controller, || {
        events(&api).iter().filter(|e| e.0 == "GuardHeld").count() == 5
    });
    assert!(
        !secret_writes(&api)
            .iter()
            .any(|(m, p, _)| m == "DELETE" && p.contains("/argocd/")),
        "{:?}",
        secret_writes(&api)
    );
    assert_eq!(argo_secrets(&api).len(), 10);
    let held: Vec<(String, String, String)> = events(&api)
        .into_iter()
        .filter(|e| e.0 == "GuardHeld")
        .collect();
    assert_eq!(held[0].1, "argocd/cluster-c0");
    assert!(held[0].2.contains("maxPrune=10%"), "{held:?}");
    eventually("a plan with errors counted", &controller, || {
        controller
            .metric(r#"capi2argo_plans_total{outcome="errors"}"#)
            .is_some_and(|v| v >= 1.0)
    });
    assert!(controller.logs().contains("a guard holds"));
}

/// readApplications: a run that would make an ApplicationSet delete most of its Applications
/// (a label its selector reads, put on the Argo CD Secrets by hand, which the plan writes them
/// without) writes nothing; the guard's metrics say so and each Application kept gets an Event,
/// which Argo CD shows. Without the setting, nothing of Argo CD's is read.
#[test]
fn applications_a_plan_would_delete_are_kept_with_events_and_metrics() {
    let names: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    let fleet: Vec<Value> = names
        .iter()
        .map(|n| kubeconfig_secret(n, &server(n)))
        .collect();
    let Some(api) = stand_in("applications", &fleet, &[]) else {
        return;
    };
    {
        let Some(controller) = Controller::start("applications-first", &api, &[]) else {
            return;
        };
        eventually("the fleet registered", &controller, || {
            argo_secrets(&api).len() == 10
        });
    }
    // Discovery may say whether Argo CD's ApplicationSets are served (to warn that the guard
    // sees nothing); no object of Argo CD's is read.
    let read: Vec<String> = api
        .requests()
        .iter()
        .map(|r| r.path.clone())
        .filter(|p| p.contains("/namespaces/") || p.ends_with('s'))
        .filter(|p| p.contains("argoproj.io") || p.contains("configmaps"))
        .collect();
    assert!(
        read.is_empty(),
        "Argo CD's objects were read without readApplications: {read:?}"
    );
    // Labels put on the Argo CD Secrets by hand, an ApplicationSet selecting on them, and the
    // Applications it generated.
    for (name, mut secret) in argo_secrets(&api) {
        secret["metadata"]["labels"]["env"] = json!("prod");
        let path = format!("/api/v1/namespaces/argocd/secrets/{name}");
        assert_eq!(api.send("PUT", &path, Some(&secret)).0, 200);
    }
    let appset = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "prod", "namespace": "argocd"},
        "spec": {"generators": [{"clusters": {"selector": {"matchLabels": {"env": "prod"}}}}],
                 "template": {"metadata": {"name": "{{name}}-prod"},
                              "spec": {"project": "default", "destination": {"server": "{{server}}", "namespace": "x"}}}}});
    let path = "/apis/argoproj.io/v1alpha1/namespaces/argocd";
    assert_eq!(
        api.send("POST", &format!("{path}/applicationsets"), Some(&appset))
            .0,
        201
    );
    for n in &names {
        let app = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": format!("{n}-prod"), "namespace": "argocd",
                         "finalizers": ["resources-finalizer.argocd.argoproj.io"],
                         "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                              "name": "prod", "uid": "5e7a", "controller": true}]},
            "spec": {"project": "default", "destination": {"server": server(n), "namespace": "x"}},
            "status": {"sync": {"status": "Synced"}}});
        assert_eq!(
            api.send("POST", &format!("{path}/applications"), Some(&app))
                .0,
            201
        );
    }
    let before = secret_writes(&api).len();
    let Some(controller) =
        Controller::start("applications", &api, &["--set", "readApplications=true"])
    else {
        return;
    };
    let guard = r#"{guard="maxApplicationDeletes"}"#;
    eventually("the guard holds", &controller, || {
        controller.metric(&format!("capi2argo_guard_held{guard}")) == Some(1.0)
    });
    assert_eq!(
        controller.metric(&format!("capi2argo_applications_protected{guard}")),
        Some(10.0)
    );
    assert_eq!(
        controller.metric(r#"capi2argo_applications{effect="delete"}"#),
        Some(0.0)
    );
    eventually("an Event on each Application kept", &controller, || {
        events(&api)
            .iter()
            .filter(|e| e.0 == "ApplicationKept")
            .count()
            == 10
    });
    let kept = events(&api);
    let kept: Vec<&(String, String, String)> =
        kept.iter().filter(|e| e.0 == "ApplicationKept").collect();
    assert_eq!(kept[0].1, "argocd/c0-prod");
    assert!(kept[0].2.contains("maxApplicationDeletes"), "{kept:?}");
    assert_eq!(
        secret_writes(&api).len(),
        before,
        "the guard held, yet Secrets were written"
    );
    assert!(
        argo_secrets(&api)
            .iter()
            .all(|(_, s)| s["metadata"]["labels"]["env"] == "prod")
    );
    // It read them, and the controller's policy from argocd-cmd-params-cm (absent: 404).
    let reads: Vec<String> = api.requests().into_iter().map(|r| r.path).collect();
    assert!(
        reads.iter().any(|p| p.contains("/applicationsets")),
        "{reads:?}"
    );
    assert!(
        reads
            .iter()
            .any(|p| p.ends_with("/configmaps/argocd-cmd-params-cm")),
        "{reads:?}"
    );
    no_credentials(&controller.logs());
}

/// A cluster that fails to convert gets a ConvertFailed Event on its kubeconfig Secret, once,
/// and counts as failed; a certificate within expiryWarningDays gets a CredentialExpiring Event
/// and sets the expiry metric.
#[test]
fn failures_and_expiring_credentials_are_events_and_metrics() {
    let kubeadm = crate::deploy::to_json(
        fs::read(root().join("tests/fixtures/providers/kubeadm.yaml"))
            .expect("fixture")
            .as_slice(),
    );
    let mut with_certificates = kubeadm
        .into_iter()
        .find(|o| o["metadata"]["name"] == "prod-eu-1-kubeconfig")
        .expect("the fixture's kubeconfig Secret");
    with_certificates["metadata"]["namespace"] = "fleet".into();
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "ownerReferences",
    ] {
        with_certificates["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove(key);
    }
    let mut broken = kubeconfig_secret("broken", &server("broken"));
    broken["data"]["value"] = B64.encode("not: [a kubeconfig").into();
    let Some(api) = stand_in("events", &[with_certificates, broken], &[]) else {
        return;
    };
    let Some(controller) = Controller::start("events", &api, &["--set", "expiryWarningDays=36500"])
    else {
        return;
    };
    eventually("prod-eu-1 registered", &controller, || {
        has_argo_secret(&api, "cluster-prod-eu-1")
    });
    eventually("the Events", &controller, || {
        let e = events(&api);
        e.iter().any(|e| e.0 == "ConvertFailed") && e.iter().any(|e| e.0 == "CredentialExpiring")
    });
    let all = events(&api);
    let failed: Vec<&(String, String, String)> =
        all.iter().filter(|e| e.0 == "ConvertFailed").collect();
    assert_eq!(failed.len(), 1, "{all:?}");
    assert_eq!(failed[0].1, "fleet/broken-kubeconfig");
    let expiring: Vec<&(String, String, String)> =
        all.iter().filter(|e| e.0 == "CredentialExpiring").collect();
    assert_eq!(expiring[0].1, "fleet/prod-eu-1-kubeconfig");
    assert_eq!(
        controller.metric(r#"capi2argo_clusters{state="failed"}"#),
        Some(1.0)
    );
    let expiry = controller
        .metric(
            r#"capi2argo_credential_expiry_timestamp_seconds{secret="fleet/prod-eu-1-kubeconfig"}"#,
        )
        .expect("the expiry metric");
    assert!(expiry > 1.7e9, "{expiry}");
    no_credentials(&controller.logs());
}

/// Two replicas with --leader-elect and a Lease of `duration`: the first has registered alpha
/// and leads, the second is ready, standing by.
fn leader_and_standby(name: &str, duration: &str) -> Option<(StandIn, Controller, Controller)> {
    let api = stand_in(name, &[kubeconfig_secret("alpha", &server("alpha"))], &[])?;
    // No --leader-election-namespace. Regression (issue 47): a replica run outside a pod took
    // its Lease in its kubeconfig's namespace (`default`), where no Role grants it; it is Argo
    // CD's, as the Lease's checks below read it.
    let lease = [
        "--leader-elect".to_string(),
        format!("--leader-election-lease-duration={duration}"),
    ];
    let lease: Vec<&str> = lease.iter().map(String::as_str).collect();
    let first = Controller::start(&format!("{name}-first"), &api, &lease)?;
    eventually("alpha registered by the first", &first, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    let second = Controller::start(&format!("{name}-second"), &api, &lease)?;
    eventually("the second is ready, standing by", &second, || {
        second.get(second.health, "/readyz").map(|r| r.0) == Some(200)
    });
    Some((api, first, second))
}

/// Two replicas with --leader-elect: one holds the Lease and writes; killed, the other takes
/// over within the Lease's duration and registers the next cluster.
#[test]
fn the_standby_takes_over_when_the_leader_dies() {
    let Some((api, mut first, second)) = leader_and_standby("failover", "3s") else {
        return;
    };
    assert_eq!(first.metric("capi2argo_leader"), Some(1.0));
    assert_eq!(second.metric("capi2argo_leader"), Some(0.0));
    let (_, lease_object) = api.send(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/argocd/leases/capi2argo-controller",
        None,
    );
    assert_eq!(lease_object["spec"]["holderIdentity"], "failover-first");
    first.kill();
    registered_when_added(&api, &second, "beta", "beta registered by the second");
    assert_eq!(second.metric("capi2argo_leader"), Some(1.0));
    let creates = secret_writes(&api)
        .into_iter()
        .filter(|(m, p, _)| m == "POST" && p == "/api/v1/namespaces/argocd/secrets")
        .count();
    assert_eq!(creates, 2, "each cluster created once");
}

/// Regression (issue 47): a standby took the Lease about 10 s after the leader released it on
/// SIGTERM; it watches the Lease and takes it as soon as it is let go (the Lease of 15 s, the
/// deploy/controller default, not waited out), and registers what comes next.
#[test]
fn a_standby_takes_over_within_two_seconds_of_a_graceful_stop() {
    let Some((api, mut first, second)) = leader_and_standby("handover", "15s") else {
        return;
    };
    assert_eq!(second.metric("capi2argo_leader"), Some(0.0));
    first.terminate();
    let stopped = Instant::now();
    let status = first.wait(Duration::from_secs(30));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", first.logs());
    let holder = || {
        let (_, lease) = api.send(
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/argocd/leases/capi2argo-controller",
            None,
        );
        lease["spec"]["holderIdentity"].as_str().map(String::from)
    };
    while holder().as_deref() != Some("handover-second") {
        assert!(
            stopped.elapsed() < Duration::from_secs(2),
            "the standby did not take the Lease within 2s of the leader's stop:\n{}",
            second.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    registered_when_added(&api, &second, "beta", "beta registered by the second");
}

/// A leader whose Lease is taken from it (its renewals failed, another replica holds it now)
/// stops writing at its next reconcile, before its Lease manager notices: never two writers.
#[test]
fn a_leader_whose_lease_is_taken_stops_writing() {
    let Some(api) = stand_in(
        "taken",
        &[kubeconfig_secret("alpha", &server("alpha"))],
        &[],
    ) else {
        return;
    };
    let lease_args = [
        "--leader-elect",
        "--leader-election-namespace=argocd",
        "--leader-election-lease-duration=30s",
    ];
    let Some(controller) = Controller::start("taken", &api, &lease_args) else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    let path = "/apis/coordination.k8s.io/v1/namespaces/argocd/leases/capi2argo-controller";
    let (_, mut lease) = api.send("GET", path, None);
    lease["spec"]["holderIdentity"] = "another-replica".into();
    let (code, _) = api.send("PUT", path, Some(&lease));
    assert_eq!(code, 200, "{lease}");
    let (code, _) = api.send(
        "POST",
        "/api/v1/namespaces/fleet/secrets",
        Some(&kubeconfig_secret("beta", &server("beta"))),
    );
    assert_eq!(code, 201);
    eventually("it says it no longer leads", &controller, || {
        controller.metric("capi2argo_leader") == Some(0.0)
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !has_argo_secret(&api, "cluster-beta"),
        "a replica that no longer holds the Lease wrote: {}",
        controller.logs()
    );
    assert!(
        controller
            .logs()
            .contains("the Lease is not this replica's: no writes until it is")
    );
}

/// SIGTERM: it stops, releases the Lease (its holder cleared, so a standby need not wait out
/// the duration) and exits 0 within the 30 s kubelet gives.
#[test]
fn sigterm_releases_the_lease_and_exits() {
    let Some(api) = stand_in(
        "sigterm",
        &[kubeconfig_secret("alpha", &server("alpha"))],
        &[],
    ) else {
        return;
    };
    let lease = ["--leader-elect", "--leader-election-namespace=argocd"];
    let Some(mut controller) = Controller::start("sigterm", &api, &lease) else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    let (code, held) = api.send(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/argocd/leases/capi2argo-controller",
        None,
    );
    assert_eq!(
        (code, &held["spec"]["holderIdentity"]),
        (200, &json!("sigterm"))
    );
    controller.terminate();
    let status = controller.wait(Duration::from_secs(30));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        controller.logs()
    );
    let (_, lease) = api.send(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/argocd/leases/capi2argo-controller",
        None,
    );
    assert!(
        lease["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{lease}"
    );
    assert!(controller.logs().contains("released the Lease"));
}

/// Where Cluster API's Clusters are not served, it works on the Secrets alone, says so once in
/// its log and in a metric, and is ready.
#[test]
fn without_cluster_api_it_works_on_the_secrets_alone() {
    let Some(api) = stand_in(
        "no-capi",
        &[kubeconfig_secret("alpha", &server("alpha"))],
        &["--no-capi"],
    ) else {
        return;
    };
    let Some(controller) = Controller::start("no-capi", &api, &[]) else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    eventually("ready", &controller, || {
        controller.get(controller.health, "/readyz").map(|r| r.0) == Some(200)
    });
    assert_eq!(controller.metric("capi2argo_cluster_api_served"), Some(0.0));
    let logs = controller.logs();
    assert_eq!(
        logs.matches("does not serve Cluster API's Clusters")
            .count(),
        1,
        "{logs}"
    );
}

/// Regression: with `readApplications` (deploy/'s default), a cluster without any
/// ApplicationSet or Application got a warning that the input held none — a first install's
/// log said something was missing when nothing was. The controller lists them itself: none is none.
#[test]
fn read_applications_with_none_in_the_cluster_is_no_warning() {
    let Some(api) = stand_in(
        "no-appsets",
        &[kubeconfig_secret("alpha", &server("alpha"))],
        &[],
    ) else {
        return;
    };
    let Some(controller) =
        Controller::start("no-appsets", &api, &["--set", "readApplications=true"])
    else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    assert!(
        api.requests()
            .iter()
            .any(|r| r.path == "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets"),
        "the ApplicationSets were not listed"
    );
    let logs = controller.logs();
    assert!(!logs.contains("holds no ApplicationSet"), "{logs}");
    assert!(!logs.contains("WARN"), "{logs}");
}

/// Regression (issue 47): settings that turn `readApplications` off where Argo CD's
/// ApplicationSets are served leave `maxApplicationDeletes` nothing to see; the controller says
/// so when it starts, in its log and in an Event on its pod.
#[test]
fn a_guard_the_settings_leave_blind_is_said_at_start() {
    let Some(api) = stand_in(
        "unguarded",
        &[kubeconfig_secret("alpha", &server("alpha"))],
        &[],
    ) else {
        return;
    };
    let Some(controller) =
        Controller::start("unguarded", &api, &["--set", "readApplications=false"])
    else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    let logs = controller.logs();
    assert!(
        logs.contains("readApplications is false") && logs.contains("maxApplicationDeletes"),
        "{logs}"
    );
    eventually("the Event on the pod", &controller, || {
        api.objects().iter().any(|o| {
            o["kind"] == "Event"
                && o["reason"] == "GuardUnguarded"
                && o["regarding"]["kind"] == "Pod"
        })
    });
}

/// Regression (issue 47): `/readyz` said only "the caches have not listed yet" when the reason
/// was a 403; it says what was refused, in the words of the Role that lacks it.
#[test]
fn readiness_says_which_read_was_refused() {
    // Every resource the controller reads but Secrets.
    let rules = json!([{"apiGroups": ["*"], "resources": ["configmaps", "events", "leases",
        "namespaces", "clusters", "clusterprofiles", "applicationsets", "applications"],
        "verbs": ["*"]}]);
    let Some(api) = StandIn::start_with(
        "refused",
        &[kubeconfig_secret("alpha", &server("alpha"))],
        Options {
            rules: Some(rules),
            ..Options::default()
        },
    ) else {
        return;
    };
    let Some(controller) = Controller::start("refused", &api, &[]) else {
        return;
    };
    eventually("not ready, saying why", &controller, || {
        controller
            .get(controller.health, "/readyz")
            .is_some_and(|(code, body)| code == 503 && body.contains("forbidden to list Secrets"))
    });
    let (_, body) = controller
        .get(controller.health, "/readyz")
        .expect("/readyz");
    assert!(
        body.starts_with("not ready: forbidden to list Secrets"),
        "{body}"
    );
    assert!(body.contains("cannot list resource \"secrets\""), "{body}");
    assert!(api.writes().iter().all(|w| !w.path.contains("/secrets")));
}

/// A ClusterProfile of SIG Multicluster's Cluster Inventory API.
fn cluster_profile(name: &str, providers: Value) -> Value {
    json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
           "metadata": {"name": name, "namespace": "fleet", "creationTimestamp": "2026-11-01T00:00:00Z",
                        "labels": {"x-k8s.io/cluster-manager": "open-cluster-management"}},
           "spec": {"displayName": name, "clusterManager": {"name": "open-cluster-management"}},
           "status": {"conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                                      "message": "", "lastTransitionTime": "2026-11-01T00:00:00Z"}],
                      "accessProviders": providers}})
}

/// The clusterprofile source: the controller watches ClusterProfiles, registers each with the
/// login its access provider gives, puts a failure's Event on the profile, and prunes the
/// cluster of a profile whose access is withdrawn.
#[test]
fn cluster_profiles_are_watched_registered_and_withdrawn() {
    let access = |provider: &str, name: &str| json!([{"name": provider, "cluster": {"server": server(name)}}]);
    let profiles = [
        cluster_profile("spoke-1", access("secretreader", "spoke-1")),
        cluster_profile("spoke-2", access("argo-cd-builtin-gcp", "spoke-2")),
        cluster_profile("spoke-3", access("no-plugin-for-it", "spoke-3")),
    ];
    let Some(api) = stand_in("profiles", &profiles, &[]) else {
        return;
    };
    let providers = "accessProviders=[{name: secretreader, execConfig: {command: /plugins/secretreader, apiVersion: client.authentication.k8s.io/v1}}]";
    let Some(controller) = Controller::start(
        "profiles",
        &api,
        &["--set", "sources=clusterprofile", "--set", providers],
    ) else {
        return;
    };
    eventually("both profiles registered", &controller, || {
        has_argo_secret(&api, "cluster-spoke-1") && has_argo_secret(&api, "cluster-spoke-2")
    });
    let config = |name: &str| -> Value {
        let secret = argo_secrets(&api)
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s);
        serde_json::from_str(&decoded(&secret.unwrap_or_default(), "config")).unwrap_or_default()
    };
    assert_eq!(
        config("cluster-spoke-1")["execProviderConfig"]["command"],
        "/plugins/secretreader"
    );
    assert_eq!(
        config("cluster-spoke-2")["execProviderConfig"]["args"],
        json!(["gcp"])
    );
    assert!(!has_argo_secret(&api, "cluster-spoke-3"));
    eventually(
        "the failure's Event is on the ClusterProfile",
        &controller,
        || {
            event_objects(&api).iter().any(|e| {
                e["reason"] == "ConvertFailed"
                    && e["regarding"]["kind"] == "ClusterProfile"
                    && e["regarding"]["name"] == "spoke-3"
            })
        },
    );
    // Access withdrawn: the reference consumer deletes the Secret, here a prune.
    let path = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/fleet/clusterprofiles/spoke-2";
    let (code, mut withdrawn) = api.send("GET", path, None);
    assert_eq!(code, 200);
    withdrawn["status"]["accessProviders"] = json!([]);
    assert_eq!(
        api.send("PUT", &format!("{path}/status"), Some(&withdrawn))
            .0,
        200
    );
    eventually("the withdrawn cluster pruned", &controller, || {
        !has_argo_secret(&api, "cluster-spoke-2")
    });
    assert!(has_argo_secret(&api, "cluster-spoke-1"));
}

/// Where the server serves ClusterProfiles in v1alpha2 beside v1alpha1 (cluster-inventory-api's
/// main branch, 2c9add11), the controller reads and watches v1alpha2 only, says so, registers
/// its profiles, and its Events name the version it read.
#[test]
fn cluster_profiles_are_read_in_v1alpha2_where_it_is_served() {
    let access = |provider: &str, name: &str| json!([{"name": provider, "cluster": {"server": server(name)}}]);
    let v1alpha2 = |mut profile: Value| {
        profile["apiVersion"] = json!("multicluster.x-k8s.io/v1alpha2");
        profile
    };
    let profiles = [
        v1alpha2(cluster_profile(
            "spoke-1",
            access("argo-cd-builtin-gcp", "spoke-1"),
        )),
        v1alpha2(cluster_profile(
            "spoke-2",
            access("no-plugin-for-it", "spoke-2"),
        )),
    ];
    let Some(api) = stand_in(
        "profiles-v1alpha2",
        &profiles,
        &["--profiles", "v1alpha2,v1alpha1"],
    ) else {
        return;
    };
    let Some(controller) = Controller::start(
        "profiles-v1alpha2",
        &api,
        &["--set", "sources=clusterprofile"],
    ) else {
        return;
    };
    eventually("the v1alpha2 profile registered", &controller, || {
        has_argo_secret(&api, "cluster-spoke-1")
    });
    eventually("the failure's Event names v1alpha2", &controller, || {
        event_objects(&api).iter().any(|e| {
            e["reason"] == "ConvertFailed"
                && e["regarding"]["name"] == "spoke-2"
                && e["regarding"]["apiVersion"] == "multicluster.x-k8s.io/v1alpha2"
        })
    });
    let profile_reads: Vec<String> = api
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/clusterprofiles"))
        .map(|r| r.path.clone())
        .collect();
    assert!(!profile_reads.is_empty());
    assert!(
        profile_reads
            .iter()
            .all(|p| p.starts_with("/apis/multicluster.x-k8s.io/v1alpha2/")),
        "{profile_reads:?}"
    );
    let logs = controller.logs();
    assert!(
        logs.contains("reading ClusterProfiles") && logs.contains("v1alpha2"),
        "{logs}"
    );
}

/// `--once`: one plan carried out, then exit with the sync script's codes; over a synced fleet
/// it writes nothing; it binds no port, opens no watch, and logs JSON with timestamps when asked.
#[test]
fn once_carries_out_one_plan_and_exits_with_its_code() {
    let Some(binary) = binary() else {
        return;
    };
    let Some(api) = stand_in("once", &[kubeconfig_secret("alpha", &server("alpha"))], &[]) else {
        return;
    };
    let once = |args: &[&str]| {
        Command::new(&binary)
            .arg("--kubeconfig")
            .arg(&api.kubeconfig)
            .args(["--once", "--argo-namespace=argocd", "--log-format=json"])
            .args(args)
            .env_remove("RUST_LOG")
            .output()
            .expect("the controller runs")
    };
    let first = once(&[]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(has_argo_secret(&api, "cluster-alpha"));
    for line in text(&first.stderr).lines() {
        let entry: Value = serde_json::from_str(line).expect("a JSON log line");
        assert!(
            entry["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
    }
    assert!(
        !api.requests().iter().any(|r| r.query["watch"] == "true"),
        "--once opened a watch"
    );
    let writes = secret_writes(&api).len();
    let again = once(&[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(
        secret_writes(&api).len(),
        writes,
        "a synced fleet: no write"
    );
    // A guard that holds: exit 1, nothing deleted.
    let (code, _) = api.send(
        "DELETE",
        "/api/v1/namespaces/fleet/secrets/alpha-kubeconfig",
        None,
    );
    assert_eq!(code, 200);
    let held = once(&[]);
    assert_eq!(held.status.code(), Some(1), "{}", text(&held.stderr));
    assert!(has_argo_secret(&api, "cluster-alpha"));
    // The one-off run's setting lets it through.
    let through = once(&["--set", "allowEmpty=true"]);
    assert_eq!(through.status.code(), Some(0), "{}", text(&through.stderr));
    assert!(!has_argo_secret(&api, "cluster-alpha"));
    // One cluster that will not convert fails every run (exit 1), the rest still carried out;
    // strict=false makes it a warning (exit 0), as the book says for unattended runs.
    let mut broken = kubeconfig_secret("broken", &server("broken"));
    broken["data"]["value"] = B64.encode("not: [a kubeconfig").into();
    let (code, _) = api.send("POST", "/api/v1/namespaces/fleet/secrets", Some(&broken));
    assert_eq!(code, 201);
    let failing = once(&[]);
    assert_eq!(failing.status.code(), Some(1), "{}", text(&failing.stderr));
    let lenient = once(&["--set", "strict=false"]);
    assert_eq!(lenient.status.code(), Some(0), "{}", text(&lenient.stderr));
    // A bad setting: exit 2, nothing read.
    let before = api.requests().len();
    let bad = once(&["--set", "maxPrune=lots"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("maxPrune"));
    assert_eq!(api.requests().len(), before);
    no_credentials(&text(&first.stderr));
    // Nobody answers: exit 3.
    let closed = TempDir::new("controller", "closed");
    let kubeconfig = closed.path("kubeconfig");
    fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'http://127.0.0.1:{}'}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
            free_port()
        ),
    )
    .expect("kubeconfig");
    let unreachable = Command::new(&binary)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--once")
        .output()
        .expect("the controller runs");
    assert_eq!(
        unreachable.status.code(),
        Some(3),
        "{}",
        text(&unreachable.stderr)
    );
}

/// The static binaries the image holds: no interpreter, no libc; the aarch64 one runs under
/// qemu where there is one.
#[test]
fn the_controller_binaries_are_static_for_both_platforms() {
    if binary().is_none()
        || !common::available(
            "file",
            &["--version"],
            "the controller binaries were NOT checked",
        )
    {
        return;
    }
    for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        let path = root().join(format!("target/{target}/controller/capi2argo-controller"));
        let out = Command::new("file")
            .arg("-L")
            .arg(&path)
            .output()
            .expect("file");
        let what = text(&out.stdout);
        assert!(
            what.contains("statically linked") || what.contains("static-pie linked"),
            "{what}"
        );
    }
    let qemu = ["qemu-aarch64-static", "qemu-aarch64"]
        .into_iter()
        .find(|q| {
            Command::new(q)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(qemu) = qemu else {
        common::skip("no qemu-aarch64, so the aarch64 controller was NOT run");
        return;
    };
    let out = Command::new(qemu)
        .arg(root().join("target/aarch64-unknown-linux-musl/controller/capi2argo-controller"))
        .arg("--version")
        .output()
        .expect("qemu runs");
    // The commit it was built from, as the command says its own (build/commit.rs).
    let line = text(&out.stdout).replace("capi2argo-controller ", "capi2argo ");
    assert!(
        common::well_formed(&line, env!("CARGO_PKG_VERSION")).is_some(),
        "{line}"
    );
}

/// Flags as controller-runtime operators write them, and what it refuses, before anything is
/// read (exit 2).
#[test]
fn flags_take_what_operators_write_and_refuse_the_rest() {
    let Some(binary) = binary() else {
        return;
    };
    let run = |args: &[&str]| {
        Command::new(&binary)
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("the controller runs")
    };
    for (args, message) in [
        (&["--debounce=10"][..], "has no unit"),
        (
            &["--resync-period=1d"][..],
            "the unit is one of ms, s, m, h",
        ),
        (
            &["--metrics-bind-address=localhost"][..],
            "is not an address such as :8080",
        ),
        (
            &["--leader-elect", "--leader-election-lease-duration=2s"][..],
            "at least 3s",
        ),
        (&["--log-format=yaml"][..], "invalid value 'yaml'"),
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // A flag given twice: the last wins, as controller-runtime's flag package has it.
    let help = run(&["--help"]);
    assert!(text(&help.stdout).contains("--metrics-bind-address"));
    let twice = run(&["--debounce=1s", "--debounce=2s", "--version"]);
    assert_eq!(twice.status.code(), Some(0), "{}", text(&twice.stderr));
    // `--version` names the commit, as the command's does.
    let line = text(&twice.stdout).replace("capi2argo-controller ", "capi2argo ");
    assert!(
        common::well_formed(&line, env!("CARGO_PKG_VERSION")).is_some(),
        "{line}"
    );
}

/// The book's size table of the static binaries is what the build made (within 3 %), and the
/// function's binary compiles none of the controller's crates: the controller costs the
/// function nothing.
#[test]
fn the_size_table_is_what_was_built_and_the_function_stays_lean() {
    let book = common::chapter("controller.md");
    for marker in book.split("<!-- size:").skip(1) {
        let (path, rest) = marker.split_once(" -->").expect("a marker");
        let shown: f64 = rest
            .split(" MiB")
            .next()
            .and_then(|n| n.trim().parse().ok())
            .expect("N.N MiB");
        let Ok(meta) = fs::metadata(root().join(path)) else {
            common::skip(&format!(
                "{path} is not built (make musl, make controller), so its size was NOT checked"
            ));
            continue;
        };
        let built = meta.len() as f64 / (1024.0 * 1024.0);
        assert!(
            (built - shown).abs() <= shown * 0.03 + 0.05,
            "docs/src/controller.md says {path} is {shown} MiB, built {built:.1} MiB"
        );
    }
    assert!(book.matches("<!-- size:").count() >= 3);
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "tree",
            "--quiet",
            "--locked",
            "--offline",
            "-e",
            "normal",
            "-p",
            "capi2argo",
        ])
        .args([
            "--target",
            "x86_64-unknown-linux-musl",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tree = text(&out.stdout);
    for crate_name in [
        "kube ",
        "tokio ",
        "hyper ",
        "rustls ",
        "ring ",
        "k8s-openapi ",
    ] {
        assert!(
            !tree.lines().any(|l| l.starts_with(crate_name)),
            "the function's binary compiles {crate_name}"
        );
    }
}

/// A workload cluster's stand-in, its administrator logging in with `admin_token`.
fn workload_stand_in(name: &str, objects: &[Value], admin_token: &str) -> Option<StandIn> {
    StandIn::start_with(
        name,
        objects,
        Options {
            token: Some(admin_token.into()),
            ..Options::default()
        },
    )
}

/// A kubeconfig Secret of cluster `name` whose admin token reaches the workload stand-in `api`.
fn workload_kubeconfig_secret(name: &str, api: &StandIn, admin_token: &str) -> Value {
    let mut secret = kubeconfig_secret(name, &format!("http://127.0.0.1:{}", api.port));
    let text = decoded(&secret, "value")
        .replace(&format!("token-of-{name}-0123456789abcdef"), admin_token);
    secret["data"]["value"] = B64.encode(text).into();
    secret
}

/// The Argo CD Secret's `config`, parsed.
fn argo_config(api: &StandIn, name: &str) -> Option<Value> {
    argo_secrets(api)
        .into_iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, s)| serde_json::from_str(&decoded(&s, "config")).ok())
}

/// Who a bearer token authenticates as at `api` (a SelfSubjectReview, `kubectl auth whoami`).
fn whoami(api: &StandIn, token: &str) -> Option<String> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, answer) = common::http_send(
        api.port,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &body.to_string(),
        &format!("Bearer {token}"),
    )?;
    (code == 201).then(|| {
        answer["status"]["userInfo"]["username"]
            .as_str()
            .map(String::from)
    })?
}

/// credentials=serviceAccount: the controller sets up a ServiceAccount and its RBAC in the
/// workload cluster with the admin credential, mints a bound token with the TokenRequest API, and
/// Argo CD's Secret logs in with that token and the CA alone; no Secret of Argo CD's namespace
/// holds the admin credential; a later reconcile keeps the token; a workload cluster that
/// cannot be reached keeps its token, with an Event and a metric; a narrower grant removes the
/// wider one; the logs hold no token.
#[test]
fn service_account_tokens_replace_the_admin_credential() {
    const ADMIN: &str = "admin-of-workload-0123456789abcdef";
    let Some(workload) = workload_stand_in("workload", &[], ADMIN) else {
        return;
    };
    let kubeconfig = workload_kubeconfig_secret("wl", &workload, ADMIN);
    let Some(api) = stand_in("least", &[kubeconfig], &[]) else {
        return;
    };
    let args = ["--set=credentials=serviceAccount", "--set=tokenTTL=1h"];
    let Some(mut controller) = Controller::start("least", &api, &args) else {
        return;
    };
    eventually("the cluster registered with a token", &controller, || {
        argo_config(&api, "cluster-wl").is_some_and(|c| c["bearerToken"].is_string())
    });
    let config = argo_config(&api, "cluster-wl").expect("config");
    let token = config["bearerToken"].as_str().expect("token").to_string();
    assert_ne!(token, ADMIN);
    assert!(
        config["tlsClientConfig"].get("certData").is_none(),
        "{config}"
    );
    assert!(
        config["tlsClientConfig"].get("keyData").is_none(),
        "{config}"
    );
    assert_eq!(
        whoami(&workload, &token).as_deref(),
        Some("system:serviceaccount:kube-system:argocd-manager")
    );
    // What was set up in the workload cluster, server-side applied as capi2argo.
    let objects = workload.objects();
    let find = |kind: &str, name: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .cloned()
    };
    assert!(find("ServiceAccount", "argocd-manager").is_some());
    let binding = find("ClusterRoleBinding", "capi2argo-argocd-manager").expect("binding");
    assert_eq!(binding["roleRef"]["name"], "capi2argo-argocd-manager");
    assert_eq!(binding["subjects"][0]["namespace"], "kube-system");
    let writes = workload.writes();
    assert!(
        writes
            .iter()
            .filter(|w| w.method == "PATCH")
            .all(|w| w.query["fieldManager"] == "capi2argo"
                && w.content_type.as_deref() == Some("application/apply-patch+yaml")),
        "{writes:?}"
    );
    let requests: Vec<&common::apiserver::Request> = writes
        .iter()
        .filter(|w| w.path.ends_with("/serviceaccounts/argocd-manager/token"))
        .collect();
    assert_eq!(requests.len(), 1, "one TokenRequest");
    let asked: Value = serde_json::from_str(&requests[0].body).expect("a TokenRequest");
    assert_eq!(asked["spec"]["expirationSeconds"], 3600);
    // No long-lived token Secret in the workload cluster; no admin credential in Argo CD's.
    assert!(
        !objects
            .iter()
            .any(|o| o["type"] == "kubernetes.io/service-account-token"),
        "a long-lived token Secret was made"
    );
    for (name, secret) in argo_secrets(&api) {
        for value in secret["data"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(_, v)| v)
        {
            let value = text(&B64.decode(value.as_str().unwrap_or("")).unwrap_or_default());
            assert!(!value.contains(ADMIN), "{name} holds the admin token");
        }
    }
    let stored = argo_secrets(&api)
        .into_iter()
        .find(|(n, _)| n == "token-cluster-wl")
        .expect("the token Secret")
        .1;
    assert_eq!(stored["type"], "capi2argo.dev/serviceaccount-token");
    assert_eq!(
        stored["metadata"]["annotations"]["capi2argo.dev/kubeconfig-secret"],
        "fleet/wl-kubeconfig"
    );
    let expires = capi2argo_core::parse_instant(
        stored["metadata"]["annotations"]["capi2argo.dev/token-expires"]
            .as_str()
            .expect("expiry"),
    )
    .expect("an instant");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    assert!(expires <= now + 3600 && expires > now + 3000, "{expires}");
    // A later reconcile keeps the token: a resync mints nothing.
    std::thread::sleep(Duration::from_millis(1500));
    let tokens = |api: &StandIn| {
        api.writes()
            .iter()
            .filter(|w| w.path.ends_with("/token"))
            .count()
    };
    assert_eq!(tokens(&workload), 1, "a later reconcile minted again");
    assert_eq!(
        controller.metric(r#"capi2argo_tokens_minted_total{outcome="ok"}"#),
        Some(1.0)
    );
    let logs = controller.logs();
    assert!(!logs.contains(&token), "the minted token was logged");
    assert!(!logs.contains(ADMIN), "the admin token was logged");

    // Unreachable: the workload cluster goes; its kubeconfig Secret changes (a rotation), so a
    // new token is due and cannot be had: the current one stays, with an Event and a metric.
    drop(workload);
    let mut rotated = api
        .live_secrets("fleet")
        .into_iter()
        .find(|s| s["metadata"]["name"] == "wl-kubeconfig")
        .expect("the kubeconfig Secret");
    rotated["metadata"]["labels"]["rotated"] = "yes".into();
    let (code, _) = api.send(
        "PUT",
        "/api/v1/namespaces/fleet/secrets/wl-kubeconfig",
        Some(&rotated),
    );
    assert_eq!(code, 200);
    eventually("the failure's Event", &controller, || {
        events(&api).iter().any(|e| e.0 == "TokenRefreshFailed")
    });
    assert_eq!(
        controller.metric("capi2argo_token_failing_clusters"),
        Some(1.0)
    );
    let kept = argo_config(&api, "cluster-wl").expect("config");
    assert_eq!(
        kept["bearerToken"],
        token.as_str(),
        "the token was not kept"
    );
    controller.kill();
}

/// A grant narrowed from admin to namespaced leaves no ClusterRoleBinding of capi2argo's behind
/// (and never touches one `argocd cluster add` made): a Role and a RoleBinding in each of the
/// cluster's namespaces instead.
#[test]
fn a_narrower_grant_removes_the_wider_one() {
    const ADMIN: &str = "admin-of-narrow-0123456789abcdef";
    let labels = json!({"app.kubernetes.io/managed-by": "capi2argo",
                        "capi2argo.dev/service-account-namespace": "kube-system",
                        "capi2argo.dev/service-account": "argocd-manager"});
    // What an earlier run with serviceAccountRole=admin left.
    let earlier = [
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "argocd-manager", "namespace": "kube-system", "labels": labels}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "capi2argo-argocd-manager", "labels": labels},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "capi2argo-argocd-manager"},
               "subjects": [{"kind": "ServiceAccount", "name": "argocd-manager", "namespace": "kube-system"}]}),
        // What `argocd cluster add` made: not capi2argo's, never touched.
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "argocd-manager-role-binding"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "argocd-manager-role"},
               "subjects": [{"kind": "ServiceAccount", "name": "argocd-manager", "namespace": "kube-system"}]}),
    ];
    let Some(workload) = workload_stand_in("narrow-workload", &earlier, ADMIN) else {
        return;
    };
    let kubeconfig = workload_kubeconfig_secret("nw", &workload, ADMIN);
    let Some(api) = stand_in("narrow", &[kubeconfig], &[]) else {
        return;
    };
    let args = [
        "--set=credentials=serviceAccount",
        "--set=serviceAccountRole=namespaced",
        "--set=namespaces=apps",
    ];
    let Some(controller) = Controller::start("narrow", &api, &args) else {
        return;
    };
    eventually("the cluster registered with a token", &controller, || {
        argo_config(&api, "cluster-nw").is_some_and(|c| c["bearerToken"].is_string())
    });
    let objects = workload.objects();
    let kinds: Vec<String> = objects
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["namespace"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let cluster_bindings: Vec<&String> = kinds
        .iter()
        .filter(|k| k.starts_with("ClusterRoleBinding"))
        .collect();
    assert_eq!(
        cluster_bindings,
        ["ClusterRoleBinding /argocd-manager-role-binding"],
        "only the binding capi2argo did not make is left"
    );
    assert!(
        kinds.contains(&"Role apps/capi2argo-argocd-manager".to_string()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"RoleBinding apps/capi2argo-argocd-manager".to_string()),
        "{kinds:?}"
    );
    let stored = argo_secrets(&api)
        .into_iter()
        .find(|(n, _)| n == "token-cluster-nw")
        .expect("the token Secret")
        .1;
    assert_eq!(
        stored["metadata"]["annotations"]["capi2argo.dev/grant"],
        "kube-system/argocd-manager namespaced apps"
    );
}

/// Back to credentials=admin with removeServiceAccount: the token Secret goes, and the
/// ServiceAccount and its RBAC are deleted in the workload cluster; the Argo CD Secret logs in as
/// the kubeconfig does again.
#[test]
fn back_to_admin_revokes_the_service_account() {
    const ADMIN: &str = "admin-of-revoked-0123456789abcdef";
    let Some(workload) = workload_stand_in("revoke-workload", &[], ADMIN) else {
        return;
    };
    let kubeconfig = workload_kubeconfig_secret("rv", &workload, ADMIN);
    let Some(api) = stand_in("revoke", &[kubeconfig], &[]) else {
        return;
    };
    let Some(mut controller) =
        Controller::start("revoke", &api, &["--set=credentials=serviceAccount"])
    else {
        return;
    };
    eventually("the cluster registered with a token", &controller, || {
        argo_config(&api, "cluster-rv").is_some_and(|c| c["bearerToken"].is_string())
    });
    controller.kill();
    let Some(controller) =
        Controller::start("revoke-admin", &api, &["--set=removeServiceAccount=true"])
    else {
        return;
    };
    eventually("the token Secret deleted", &controller, || {
        !has_argo_secret(&api, "token-cluster-rv")
    });
    eventually(
        "the ServiceAccount and its RBAC deleted",
        &controller,
        || {
            !workload
                .objects()
                .iter()
                .any(|o| o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "capi2argo")
        },
    );
    let config = argo_config(&api, "cluster-rv").expect("config");
    assert_eq!(
        config["bearerToken"], ADMIN,
        "back to the kubeconfig's own login"
    );
}

/// Nothing changes, and a token reaches 80 % of its life: the controller wakes for it and mints
/// a new one, without waiting for its resync.
#[test]
fn a_token_is_renewed_when_it_is_due_though_nothing_changes() {
    const ADMIN: &str = "admin-of-renewed-0123456789abcdef";
    let Some(workload) = workload_stand_in("renew-workload", &[], ADMIN) else {
        return;
    };
    let kubeconfig = workload_kubeconfig_secret("rn", &workload, ADMIN);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    // 1,000 seconds of life, 80 % of it passed three seconds from now.
    let token = json!({"apiVersion": "v1", "kind": "Secret", "type": "capi2argo.dev/serviceaccount-token",
        "metadata": {"name": "token-cluster-rn", "namespace": "argocd",
            "labels": {"capi2argo.dev/credential": "serviceaccount-token"},
            "annotations": {"capi2argo.dev/kubeconfig-secret": "fleet/rn-kubeconfig",
                            "capi2argo.dev/grant": "kube-system/argocd-manager admin",
                            "capi2argo.dev/token-binding": "kube-system/argocd-manager-token-older",
                            "capi2argo.dev/token-issued": capi2argo_core::instant(now - 797),
                            "capi2argo.dev/token-expires": capi2argo_core::instant(now + 203)}},
        "data": {"token": B64.encode("an-older-token-0123456789")}});
    let Some(api) = stand_in("renew", &[kubeconfig, token], &[]) else {
        return;
    };
    let args = ["--set=credentials=serviceAccount", "--resync-period=10m"];
    let Some(controller) = Controller::start("renew", &api, &args) else {
        return;
    };
    eventually("registered with the current token", &controller, || {
        argo_config(&api, "cluster-rn")
            .is_some_and(|c| c["bearerToken"] == "an-older-token-0123456789")
    });
    assert!(
        !workload.writes().iter().any(|w| w.path.ends_with("/token")),
        "a token was minted before it was due"
    );
    eventually("renewed when due", &controller, || {
        argo_config(&api, "cluster-rn").is_some_and(|c| {
            c["bearerToken"].is_string() && c["bearerToken"] != "an-older-token-0123456789"
        })
    });
    let logs = controller.logs();
    assert!(logs.contains("80% of its life has passed"), "{logs}");
}

/// Whether the workload cluster refuses `token` (401).
fn refused(api: &StandIn, token: &str) -> bool {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    common::http_send(
        api.port,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &body.to_string(),
        &format!("Bearer {token}"),
    )
    .is_some_and(|(code, _)| code == 401)
}

/// The binding Secrets in a workload cluster: what each minted token is bound to.
fn bindings(api: &StandIn) -> Vec<String> {
    api.objects()
        .iter()
        .filter(|o| o["type"] == "capi2argo.dev/token-binding")
        .filter_map(|o| o["metadata"]["name"].as_str().map(String::from))
        .collect()
}

/// Revocable tokens (issue 49): each token is bound to a Secret of its own in the workload
/// cluster. A rotation asked for on the kubeconfig Secret mints a new token, Argo CD's Secret
/// takes it, and then the old token's binding goes: the workload cluster refuses the old token
/// (401) while the new one works; the same asked on the Cluster. A cluster ignored while it runs
/// loses its token at once.
#[test]
fn a_rotated_or_leaving_token_is_refused_by_the_workload_cluster() {
    const ADMIN: &str = "admin-of-bound-0123456789abcdef";
    let Some(workload) = workload_stand_in("bound-workload", &[], ADMIN) else {
        return;
    };
    let kubeconfig = workload_kubeconfig_secret("bd", &workload, ADMIN);
    let Some(api) = stand_in("bound", &[kubeconfig, capi_cluster("bd")], &[]) else {
        return;
    };
    let args = ["--set=credentials=serviceAccount"];
    let Some(mut controller) = Controller::start("bound", &api, &args) else {
        return;
    };
    let token_of = |api: &StandIn| {
        argo_config(api, "cluster-bd").and_then(|c| c["bearerToken"].as_str().map(String::from))
    };
    eventually("the cluster registered with a token", &controller, || {
        token_of(&api).is_some()
    });
    let first = token_of(&api).expect("a token");
    assert!(!refused(&workload, &first));
    assert_eq!(bindings(&workload).len(), 1, "one binding per token");
    let token_secret = |api: &StandIn| {
        argo_secrets(api)
            .into_iter()
            .find(|(n, _)| n == "token-cluster-bd")
            .map(|(_, s)| s)
    };
    let stored = token_secret(&api).expect("the token Secret");
    let binding = format!("kube-system/{}", bindings(&workload)[0]);
    assert_eq!(
        stored["metadata"]["annotations"]["capi2argo.dev/token-binding"],
        binding.as_str()
    );

    // A rotation asked for: a new token, then the old one revoked.
    let mut asked = api
        .live_secrets("fleet")
        .into_iter()
        .find(|s| s["metadata"]["name"] == "bd-kubeconfig")
        .expect("the kubeconfig Secret");
    asked["metadata"]["annotations"] = json!({"capi2argo.dev/rotate-token": "2026-11-27"});
    let (code, _) = api.send(
        "PUT",
        "/api/v1/namespaces/fleet/secrets/bd-kubeconfig",
        Some(&asked),
    );
    assert_eq!(code, 200);
    eventually("Argo CD's Secret carries a new token", &controller, || {
        token_of(&api).is_some_and(|t| t != first)
    });
    let second = token_of(&api).expect("a token");
    eventually("the old token refused", &controller, || {
        refused(&workload, &first)
    });
    assert!(!refused(&workload, &second), "the new token works");
    eventually(
        "the token Secret forgets the revoked binding",
        &controller,
        || {
            token_secret(&api).is_some_and(|s| {
                s["metadata"]["annotations"]
                    .get("capi2argo.dev/token-retired")
                    .is_none()
            })
        },
    );
    assert_eq!(bindings(&workload).len(), 1, "the old binding is gone");
    let stored = token_secret(&api).expect("the token Secret");
    assert_eq!(
        stored["metadata"]["annotations"]["capi2argo.dev/rotate-token"], r#"["2026-11-27"]"#,
        "the request acted on is recorded"
    );
    // The same value again asks for nothing.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(token_of(&api).as_deref(), Some(second.as_str()));
    assert_eq!(
        controller.metric(r#"capi2argo_tokens_revoked_total{outcome="ok"}"#),
        Some(1.0)
    );

    // Asked on the Cluster instead: another token, the second one revoked.
    let cluster = || {
        api.objects()
            .into_iter()
            .find(|o| o["kind"] == "Cluster" && o["metadata"]["name"] == "bd")
            .expect("the Cluster")
    };
    let put_cluster = |cluster: &Value| {
        let path = "/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet/clusters/bd";
        assert_eq!(api.send("PUT", path, Some(cluster)).0, 200);
    };
    let mut asked = cluster();
    asked["metadata"]["annotations"] = json!({"capi2argo.dev/rotate-token": "leak-4711"});
    put_cluster(&asked);
    eventually("a third token", &controller, || {
        token_of(&api).is_some_and(|t| t != first && t != second)
    });
    eventually("the second token refused", &controller, || {
        refused(&workload, &second)
    });
    let second = token_of(&api).expect("a token");
    assert!(!refused(&workload, &second), "the new token works");

    // Ignored while it runs: its Argo CD Secret and token Secret go, its token revoked first.
    let mut ignored = cluster();
    ignored["metadata"]["labels"] = json!({"ignore-cluster.capi-to-argocd": ""});
    put_cluster(&ignored);
    eventually("the token Secret deleted", &controller, || {
        token_secret(&api).is_none()
    });
    assert!(
        refused(&workload, &second),
        "the token of a cluster ignored still works"
    );
    assert!(bindings(&workload).is_empty());
    assert!(!has_argo_secret(&api, "cluster-bd"));
    let logs = controller.logs();
    for token in [&first, &second] {
        assert!(!logs.contains(token.as_str()), "a token was logged");
    }
    controller.kill();
}

/// Argo CD's AppProject `name` in `argocd`, its destinationServiceAccounts `entries`
/// (server, namespace, defaultServiceAccount).
fn app_project(name: &str, entries: &[(&str, &str, &str)]) -> Value {
    let entries: Vec<Value> = entries
        .iter()
        .map(|(s, n, a)| json!({"server": s, "namespace": n, "defaultServiceAccount": a}))
        .collect();
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
           "metadata": {"name": name, "namespace": "argocd"},
           "spec": {"destinations": [{"server": "*", "namespace": "*"}],
                    "destinationServiceAccounts": entries}})
}

/// serviceAccountRole=impersonate (issue 49): Argo CD's own ServiceAccount may read everything
/// and impersonate exactly the ServiceAccounts its AppProjects name for the cluster; those are
/// set up in their namespaces and bound to their project's ClusterRole, and go with their
/// bindings when no project names them any more; argocd-cm without impersonation is an error.
#[test]
fn impersonation_sets_up_the_projects_service_accounts() {
    const ADMIN: &str = "admin-of-impersonated-0123456789abcdef";
    let Some(workload) = workload_stand_in("imp-workload", &[], ADMIN) else {
        return;
    };
    let kubeconfig = workload_kubeconfig_secret("im", &workload, ADMIN);
    let server = format!("http://127.0.0.1:{}", workload.port);
    let project = app_project(
        "team-a",
        &[
            (&server, "guestbook", "deployer"),
            ("*", "guestbook", "never-used"),
            ("*", "shared", "infra:syncer"),
        ],
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "argocd-cm", "namespace": "argocd"},
                    "data": {"application.sync.impersonation.enabled": "true"}});
    let Some(api) = stand_in("imp", &[kubeconfig, project, cm], &[]) else {
        return;
    };
    let args = [
        "--set=credentials=serviceAccount",
        "--set=serviceAccountRole=impersonate",
        "--set=impersonationRoles=team-a=admin",
    ];
    let Some(controller) = Controller::start("imp", &api, &args) else {
        return;
    };
    eventually("the cluster registered with a token", &controller, || {
        argo_config(&api, "cluster-im").is_some_and(|c| c["bearerToken"].is_string())
    });
    let find = |kind: &str, namespace: Option<&str>, name: &str| {
        workload.objects().into_iter().find(|o| {
            o["kind"] == kind
                && o["metadata"]["name"] == name
                && namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns)
        })
    };
    let deployer = find("ServiceAccount", Some("guestbook"), "deployer").expect("deployer");
    assert_eq!(
        deployer["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "capi2argo"
    );
    assert!(find("ServiceAccount", Some("infra"), "syncer").is_some());
    // `infra:syncer` syncs to `shared`: its role is bound there, where Argo CD writes as it.
    let elsewhere = find(
        "RoleBinding",
        Some("shared"),
        "capi2argo-infra.syncer-admin",
    )
    .expect("syncer bound in the destination namespace");
    assert_eq!(elsewhere["subjects"][0]["namespace"], "infra");
    assert!(
        find("ServiceAccount", None, "never-used").is_none(),
        "Argo CD's first-match rule never reaches it"
    );
    let binding = find("RoleBinding", Some("guestbook"), "capi2argo-deployer-admin")
        .expect("the deployer bound to its project's role");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], "admin");
    let role = find(
        "Role",
        Some("guestbook"),
        "capi2argo-argocd-manager-impersonate",
    )
    .expect("the impersonation Role");
    assert_eq!(role["rules"][0]["verbs"], json!(["impersonate"]));
    assert_eq!(role["rules"][0]["resourceNames"], json!(["deployer"]));
    let read = find("ClusterRole", None, "capi2argo-argocd-manager-read").expect("read");
    let verbs: Vec<&Value> = read["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["verbs"].as_array().into_iter().flatten())
        .collect();
    assert!(
        verbs
            .iter()
            .all(|v| ["get", "list", "watch"].contains(&v.as_str().unwrap_or(""))),
        "{verbs:?}"
    );
    assert!(
        find("ClusterRoleBinding", None, "capi2argo-argocd-manager").is_none(),
        "no admin grant"
    );

    // The project no longer names the shared namespace: syncer goes with its binding, and Argo
    // CD's token stays (what a ServiceAccount may do is its RBAC's, applied again).
    let token = argo_config(&api, "cluster-im").expect("config")["bearerToken"].clone();
    let mut project = api
        .objects()
        .into_iter()
        .find(|o| o["kind"] == "AppProject")
        .expect("the AppProject");
    project["spec"]["destinationServiceAccounts"] =
        json!([{"server": server, "namespace": "guestbook", "defaultServiceAccount": "deployer"}]);
    let path = "/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/team-a";
    assert_eq!(api.send("PUT", path, Some(&project)).0, 200);
    eventually("syncer removed", &controller, || {
        find("ServiceAccount", Some("infra"), "syncer").is_none()
    });
    assert!(
        find(
            "RoleBinding",
            Some("shared"),
            "capi2argo-infra.syncer-admin"
        )
        .is_none()
    );
    assert!(find("ServiceAccount", Some("guestbook"), "deployer").is_some());
    eventually("the new grant recorded", &controller, || {
        argo_secrets(&api).iter().any(|(n, s)| {
            n == "token-cluster-im"
                && s["metadata"]["annotations"]["capi2argo.dev/grant"]
                    .as_str()
                    .is_some_and(|g| !g.contains("syncer"))
        })
    });
    assert_eq!(
        argo_config(&api, "cluster-im").expect("config")["bearerToken"],
        token,
        "a project change minted a new token"
    );
    assert_eq!(
        controller.metric(r#"capi2argo_tokens_minted_total{outcome="ok"}"#),
        Some(1.0)
    );

    // argocd-cm turns impersonation off: Argo CD could not sync, and the plan says so.
    let mut cm = api
        .objects()
        .into_iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "argocd-cm")
        .expect("argocd-cm");
    cm["data"] = json!({});
    let path = "/api/v1/namespaces/argocd/configmaps/argocd-cm";
    assert_eq!(api.send("PUT", path, Some(&cm)).0, 200);
    eventually("the error said", &controller, || {
        controller
            .logs()
            .contains("argocd-cm does not set application.sync.impersonation.enabled")
    });
}

/// The plans made so far, whatever their outcome.
fn plans(controller: &Controller) -> f64 {
    ["synced", "errors", "failed"]
        .iter()
        .filter_map(|o| controller.metric(&format!(r#"capi2argo_plans_total{{outcome="{o}"}}"#)))
        .sum()
}

/// Cluster API rewrites a Cluster's status every few seconds (its conditions' times, its
/// observed generation) with nothing a plan reads changed: at 10,000 clusters each of those
/// rewrites planned the whole fleet again. Now the cache keeps what the plan reads and a write
/// that changes none of it wakes nothing; a change of what it reads still does.
#[test]
fn a_cluster_heartbeat_wakes_nothing_and_a_change_it_reads_does() {
    let Some(api) = stand_in(
        "heartbeat",
        &[
            capi_cluster("alpha"),
            kubeconfig_secret("alpha", &server("alpha")),
        ],
        &[],
    ) else {
        return;
    };
    let Some(controller) = Controller::start("heartbeat", &api, &[]) else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    // The first status with conditions is a change: it is planned, the rest are heartbeats.
    let mut before = plans(&controller);
    for generation in 1..7 {
        if generation == 2 {
            std::thread::sleep(Duration::from_secs(1));
            before = plans(&controller);
        }
        let status = json!({"status": {"phase": "Provisioned", "controlPlaneReady": true,
            "infrastructureReady": true, "observedGeneration": generation,
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": format!("2026-11-27T00:00:0{generation}Z")}]}});
        let (code, _) = api.send_patch(
            "/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet/clusters/alpha/status",
            &status,
        );
        assert_eq!(code, 200);
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(before >= 2.0, "{}", controller.logs());
    assert_eq!(plans(&controller), before, "{}", controller.logs());
    let topology = json!({"spec": {"topology": {"version": "v1.32.1", "class": "quick-start"}}});
    let (code, _) = api.send_patch(
        "/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet/clusters/alpha",
        &topology,
    );
    assert_eq!(code, 200);
    eventually("the version label written", &controller, || {
        argo_secrets(&api).iter().any(|(name, s)| {
            name == "cluster-alpha"
                && s.pointer("/metadata/labels/capi2argo.dev~1kubernetes-version")
                    == Some(&json!("v1.32.1"))
        })
    });
    eventually("the change planned", &controller, || {
        plans(&controller) > before
    });
}

/// An API server that goes away for a while and comes back with its event history gone (a
/// restart over a compacted etcd): the watches, their backoff grown during the outage, used to
/// wait up to half a minute before listing again. Now they retry at most 2 s apart: a cluster
/// added after the server is back is registered within seconds, and the Lease is held again.
#[test]
fn after_the_api_server_restarts_a_new_cluster_is_registered_within_seconds() {
    let Some(mut api) = stand_in(
        "restart",
        &[
            capi_cluster("alpha"),
            kubeconfig_secret("alpha", &server("alpha")),
        ],
        &[],
    ) else {
        return;
    };
    let Some(controller) = Controller::start("restart", &api, &["--leader-elect"]) else {
        return;
    };
    eventually("alpha registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha")
    });
    api.restart(Duration::from_secs(12));
    let back = Instant::now();
    let (code, _) = api.send(
        "POST",
        "/api/v1/namespaces/fleet/secrets",
        Some(&kubeconfig_secret("beta", &server("beta"))),
    );
    assert_eq!(code, 201);
    eventually("beta registered", &controller, || {
        has_argo_secret(&api, "cluster-beta")
    });
    let took = back.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "beta was registered {took:?} after the API server came back (the watches retry at most 2 s apart, so 15 s is far more than it needs); the controller's log:\n{}",
        controller.logs()
    );
    let logs = controller.logs();
    once_agrees(&api);
    // Nothing written twice: alpha's Secret was created once, beta's once.
    let creates = secret_writes(&api)
        .into_iter()
        .filter(|(method, path, _)| method == "POST" && path.contains("/namespaces/argocd/"))
        .count();
    assert_eq!(creates, 2, "{logs}");
}

/// A whole plan made afresh (`--once`) over what a running controller left: it agrees, so it
/// exits 0 and writes nothing but Events.
fn once_agrees(api: &StandIn) {
    let Some(binary) = binary() else {
        return;
    };
    let writes = api.writes().len();
    let once = Command::new(&binary)
        .arg("--kubeconfig")
        .arg(&api.kubeconfig)
        .args(["--once", "--argo-namespace=argocd"])
        .env_remove("RUST_LOG")
        .output()
        .expect("the controller runs");
    assert_eq!(once.status.code(), Some(0), "{}", text(&once.stderr));
    // What the cluster holds, not what is said about it (Events).
    let made: Vec<String> = api.writes()[writes..]
        .iter()
        .filter(|r| !r.path.contains("/events"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        made.is_empty(),
        "--once wrote {made:?}: {}",
        text(&once.stderr)
    );
}

/// A controller stopped (SIGSTOP: a node frozen, a debugger) while clusters come and go, then
/// resumed: its watches read what happened meanwhile, and it registers the new cluster and
/// withdraws the one that left, as a fresh plan would.
#[test]
fn a_paused_controller_catches_up_when_resumed() {
    let Some(api) = stand_in(
        "pause",
        &[
            kubeconfig_secret("alpha", &server("alpha")),
            kubeconfig_secret("beta", &server("beta")),
        ],
        &[],
    ) else {
        return;
    };
    let Some(controller) = Controller::start("pause", &api, &["--set", "maxPrune=1"]) else {
        return;
    };
    eventually("alpha and beta registered", &controller, || {
        has_argo_secret(&api, "cluster-alpha") && has_argo_secret(&api, "cluster-beta")
    });
    let signal = |name: &str| {
        let out = Command::new("kill")
            .args([name, &controller.child.id().to_string()])
            .output()
            .expect("kill runs");
        assert!(out.status.success());
    };
    signal("-STOP");
    let (code, _) = api.send(
        "POST",
        "/api/v1/namespaces/fleet/secrets",
        Some(&kubeconfig_secret("gamma", &server("gamma"))),
    );
    assert_eq!(code, 201);
    let (code, _) = api.send(
        "DELETE",
        "/api/v1/namespaces/fleet/secrets/beta-kubeconfig",
        None,
    );
    assert_eq!(code, 200);
    std::thread::sleep(Duration::from_secs(2));
    signal("-CONT");
    eventually("gamma registered, beta withdrawn", &controller, || {
        has_argo_secret(&api, "cluster-gamma") && !has_argo_secret(&api, "cluster-beta")
    });
    assert!(has_argo_secret(&api, "cluster-alpha"));
    once_agrees(&api);
}
