//! What the reconciler's unit tests run against: an API server mocked with tower-test behind
//! kube's Client, answering a script — each request a scenario expects, in order, with its
//! answer — and every Event on the side; and the objects the scenarios start from.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{Method, Request, Response};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::client::Body;
use kube::runtime::events::{Recorder, Reporter as EventSource};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tower_test::mock;

use crate::credentials::{Credentials, MintError, workload::Connect};
use crate::reading::fixture;
use crate::reconcile::Reconciler;
use crate::reporting::Reporter;
use crate::reporting::metrics::Metrics;
use crate::requests::Writer;
use crate::settings::Settings;

/// One request a scenario expects, and the server's answer.
pub struct Exchange {
    pub method: Method,
    pub path: String,
    pub status: u16,
    pub answer: Value,
}

impl Exchange {
    /// `method path`, answered `status` with `answer`.
    pub fn new(method: Method, path: &str, status: u16, answer: Value) -> Exchange {
        Exchange {
            method,
            path: path.to_string(),
            status,
            answer,
        }
    }

    /// `method path`, refused as the API server refuses: a `Status` with `code` and `reason`.
    pub fn refused(method: Method, path: &str, code: u16, reason: &str) -> Exchange {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("{reason} (from the scenario)"), "reason": reason, "code": code,
        });
        Exchange::new(method, path, code, status)
    }
}

/// A request the mocked server saw (its method and path are the script's).
#[derive(Debug, Clone)]
pub struct Seen {
    pub body: Value,
}

/// What the mocked server saw: the scripted requests, and the Events.
#[derive(Debug, Default)]
pub struct Log {
    pub requests: Vec<Seen>,
    pub events: Vec<Value>,
}

/// A client whose API server answers `script` in order and records every Event; a request the
/// script does not expect fails the scenario. The task ends, with what it saw, when every
/// client is dropped.
pub fn api(script: Vec<Exchange>) -> (Client, JoinHandle<Log>) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let mut handle = std::pin::pin!(handle);
        let mut script = script.into_iter();
        let mut log = Log::default();
        while let Some((request, send)) = handle.next_request().await {
            let (method, path) = (request.method().clone(), request.uri().path().to_string());
            let bytes = request
                .into_body()
                .collect_bytes()
                .await
                .expect("a request body");
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if path.starts_with("/apis/events.k8s.io/") {
                log.events.push(body.clone());
                send.send_response(response(201, &body));
                continue;
            }
            let Some(expected) = script.next() else {
                panic!("unexpected request {method} {path}: the scenario expects no more");
            };
            assert_eq!(
                (&method, path.as_str()),
                (&expected.method, expected.path.as_str()),
                "the scenario's next request"
            );
            log.requests.push(Seen { body });
            send.send_response(response(expected.status, &expected.answer));
        }
        let left: Vec<String> = script.map(|e| format!("{} {}", e.method, e.path)).collect();
        assert!(
            left.is_empty(),
            "requests the scenario expected and never saw: {left:?}"
        );
        log
    });
    (Client::new(service, "default"), task)
}

fn response(status: u16, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .body(Body::from(serde_json::to_vec(body).expect("JSON")))
        .expect("a response")
}

/// A stand-in for workload clusters: every connection gets a client of `api`.
pub fn workloads(client: Client) -> Connect {
    let client = Arc::new(Mutex::new(client));
    Arc::new(move |_access| {
        let client = client.lock().expect("not poisoned").clone();
        Box::pin(async move { Ok::<_, MintError>(client) })
    })
}

/// Workload clusters none of which can be reached.
pub fn unreachable() -> Connect {
    Arc::new(|access| {
        Box::pin(async move {
            Err(MintError::Connect {
                server: access.server,
                source: "connection refused".into(),
            })
        })
    })
}

/// A reconciler over `kubeconfigs` and Argo CD's `argo` Secrets with these settings, writing
/// through `client`, reaching workload clusters through `connect`.
pub fn reconciler(
    client: &Client,
    settings: &[&str],
    kubeconfigs: Vec<Secret>,
    argo: Vec<Secret>,
    connect: Connect,
) -> (Reconciler, Metrics) {
    let caches = fixture::caches(client, kubeconfigs, argo);
    reconciler_over(client, settings, caches, connect)
}

/// A reconciler over `caches` as a test made them.
pub fn reconciler_over(
    client: &Client,
    settings: &[&str],
    caches: crate::reading::Caches,
    connect: Connect,
) -> (Reconciler, Metrics) {
    let settings = Settings::new(None, settings.iter().map(|s| s.to_string()).collect(), &[])
        .expect("the scenario's settings");
    let caches = Arc::new(caches);
    let metrics = Metrics::new().0;
    let recorder = Recorder::new(
        client.clone(),
        EventSource {
            controller: "capi2argo-controller".into(),
            instance: Some("test".into()),
        },
    );
    let reporter = Reporter::new(metrics.clone(), recorder, settings.reads.expiry_days);
    let writer = Writer::new(client.clone(), metrics.clone());
    let reconciler = Reconciler::new(
        caches,
        settings,
        writer,
        Credentials::new(connect),
        reporter,
    );
    (reconciler, metrics)
}

/// The kubeconfig the kubeadm fixture holds (a real CA, client certificate and key).
fn kubeconfig() -> String {
    include_str!("../../tests/fixtures/providers/kubeadm.yaml")
        .lines()
        .find_map(|l| l.strip_prefix("  value: "))
        .expect("the fixture's kubeconfig")
        .to_string()
}

/// Cluster API's kubeconfig Secret of the cluster `name`.
pub fn kubeconfig_secret(name: &str) -> Secret {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": format!("{name}-kubeconfig"), "namespace": "fleet",
            "uid": format!("uid-{name}"), "resourceVersion": "10",
            "labels": {"cluster.x-k8s.io/cluster-name": name},
        },
        "type": "cluster.x-k8s.io/secret",
        "data": {"value": kubeconfig()},
    }))
    .expect("a Secret")
}

/// An Argo CD cluster Secret capi2argo made for the kubeconfig Secret of `cluster`.
pub fn owned_secret(cluster: &str, server: &str) -> Secret {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": format!("cluster-{cluster}"), "namespace": "argocd",
            "uid": format!("uid-argo-{cluster}"), "resourceVersion": "20",
            "labels": {
                "argocd.argoproj.io/secret-type": "cluster",
                "capi-to-argocd/owned": "true",
                "capi-to-argocd/cluster-secret-name": format!("{cluster}-kubeconfig"),
                "capi-to-argocd/cluster-namespace": "fleet",
            },
        },
        "type": "Opaque",
        "data": {
            "name": b64(cluster),
            "server": b64(server),
            "config": b64("{\"tlsClientConfig\":{\"insecure\":false}}"),
        },
    }))
    .expect("a Secret")
}

/// A token Secret as the controller keeps it, for the cluster `name`'s kubeconfig Secret,
/// issued `age` ago and valid for `ttl` in all.
pub fn token_secret(name: &str, grant: &str, age: Duration, ttl: Duration) -> Secret {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    let issued = now - age.as_secs() as i64;
    let expires = issued + ttl.as_secs() as i64;
    let annotations = BTreeMap::from([
        (
            "capi2argo.dev/kubeconfig-secret",
            format!("fleet/{name}-kubeconfig"),
        ),
        ("capi2argo.dev/grant", grant.to_string()),
        (
            "capi2argo.dev/token-issued",
            capi2argo_core::instant(issued),
        ),
        (
            "capi2argo.dev/token-expires",
            capi2argo_core::instant(expires),
        ),
        ("capi2argo.dev/kubeconfig-version", "10".to_string()),
        (
            "capi2argo.dev/token-binding",
            format!("kube-system/argocd-manager-token-{name}"),
        ),
    ]);
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": format!("token-cluster-{name}"), "namespace": "argocd",
            "uid": format!("uid-token-{name}"), "resourceVersion": "30",
            "labels": {
                "capi2argo.dev/credential": "serviceaccount-token",
                "app.kubernetes.io/managed-by": "capi2argo",
            },
            "annotations": annotations,
        },
        "type": "capi2argo.dev/serviceaccount-token",
        "data": {"token": b64("the-current-token")},
    }))
    .expect("a Secret")
}

fn b64(text: &str) -> String {
    // Through k8s-openapi's own ByteString, as the API server's JSON carries Secret data.
    serde_json::to_value(k8s_openapi::ByteString(text.as_bytes().to_vec()))
        .expect("JSON")
        .as_str()
        .expect("a string")
        .to_string()
}
