//! The CronJob's pod — `capi2argo-controller --once` in its real image (`make controller-image`)
//! — run the way kubelet runs it: the pod template as installed is turned into `docker run` flags field by field (user,
//! read-only root, dropped capabilities, no privilege escalation, seccomp, memory and CPU
//! limits, the settings ConfigMap as files, /tmp in memory, the ServiceAccount token, CA and
//! namespace where kubelet mounts them, KUBERNETES_SERVICE_HOST/PORT), and a field the runner
//! does not know fails the test rather than being dropped.
//!
//! The API server is the recording stand-in (tests/kube/apiserver.py) over HTTPS, demanding
//! the token, with the RBAC rules the installed Roles and bindings give the ServiceAccount; the
//! manifests get there through the book's own `kubectl apply -k`. The container reaches it on
//! the host's loopback (`--network host`: the engine may have no bridge); for an unreachable
//! API server it has no network at all.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use super::{ARGO_NAMESPACE, find, pod_template, root, rules_for, text, to_json};
use crate::common::apiserver::{Options, Request, StandIn};
use crate::common::{self, TempDir};

const IMAGE: &str = "ghcr.io/capi2argo/capi2argo-controller:v0.1.0";
pub const TOKEN: &str = "stand-in-service-account-token-7f3a";
const KUBEADM: &str = include_str!("../fixtures/providers/kubeadm.yaml");
const CONTROL_PLANES: &str = "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io";

/// What the Job controller does with a pod of `cronjob`'s Jobs that exited with `code`, by its
/// podFailurePolicy (the first rule that matches; none: the failure counts toward
/// backoffLimit): `FailJob`, `Ignore`, or `retry`.
pub fn job_outcome(cronjob: &Value, code: i64) -> &'static str {
    let rules = &cronjob["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"];
    for rule in rules.as_array().into_iter().flatten() {
        let on = &rule["onExitCodes"];
        if on.is_null() {
            continue;
        }
        let listed = on["values"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(code)));
        let matched = match on["operator"].as_str() {
            Some("In") => listed,
            Some("NotIn") => !listed,
            other => panic!("operator {other:?}"),
        };
        if matched {
            return match rule["action"].as_str() {
                Some("FailJob") => "FailJob",
                Some("Ignore") => "Ignore",
                _ => "retry",
            };
        }
    }
    "retry"
}

/// The stand-in's certificate and key, the ServiceAccount's CA, made with openssl; `None`
/// after a loud skip.
pub struct Certs {
    _dir: TempDir,
    /// The stand-in's serving certificate and key, issued by `ca`.
    cert: PathBuf,
    key: PathBuf,
    /// The cluster's CA, as the ServiceAccount's ca.crt holds it. A CA and a leaf apart, as a
    /// cluster has them: rustls (in the controller) refuses a CA certificate that serves as
    /// its own end entity.
    ca: PathBuf,
}

/// Whether everything the image runs need is here: kubectl, python3, openssl, an engine with
/// seccomp and the image (which `make test` builds first). `None` after a loud skip.
pub fn setup(name: &str) -> Option<Certs> {
    let what = format!("the pod was NOT run in its image ({name})");
    if !common::available("kubectl", &["version", "--client"], &what)
        || !common::available("python3", &["--version"], &what)
        || !common::available("openssl", &["version"], &what)
    {
        return None;
    }
    let info = Command::new("docker")
        .args(["info", "--format", "{{json .SecurityOptions}}"])
        .output();
    let Some(info) = info.ok().filter(|o| o.status.success()) else {
        common::skip(&format!(
            "no container engine answers `docker info` (DOCKER_HOST unset or no daemon), so {what}"
        ));
        return None;
    };
    assert!(
        text(&info.stdout).contains("name=seccomp"),
        "the engine runs containers without seccomp, so it cannot stand for RuntimeDefault"
    );
    let image = Command::new("docker")
        .args(["image", "inspect", IMAGE])
        .output()
        .expect("docker");
    assert!(
        image.status.success(),
        "{IMAGE} is not in the engine: `make controller-image` builds it (make test does, first)"
    );
    let dir = TempDir::new("deploy-certs", name);
    let (ca, ca_key) = (dir.path("ca.pem"), dir.path("ca-key.pem"));
    let (cert, key, request) = (
        dir.path("cert.pem"),
        dir.path("key.pem"),
        dir.path("cert.csr"),
    );
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let openssl = |args: &[&std::ffi::OsStr]| {
        let out = Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    let mut args: Vec<std::ffi::OsString> = ["req", "-x509"].map(os).to_vec();
    args.extend(ec.map(os));
    args.extend(["-days", "1", "-subj", "/CN=stand-in-ca", "-keyout"].map(os));
    args.extend([ca_key.clone().into(), os("-out"), ca.clone().into()]);
    openssl(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    let mut args: Vec<std::ffi::OsString> = ["req", "-new"].map(os).to_vec();
    args.extend(ec.map(os));
    args.extend(["-subj", "/CN=stand-in", "-keyout"].map(os));
    args.extend([key.clone().into(), os("-out"), request.clone().into()]);
    openssl(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    let extensions = dir.path("leaf.ext");
    fs::write(
        &extensions,
        "basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .expect("written");
    let mut args: Vec<std::ffi::OsString> = ["x509", "-req", "-days", "1", "-in"].map(os).to_vec();
    args.extend([
        request.into(),
        os("-CA"),
        ca.clone().into(),
        os("-CAkey"),
        ca_key.into(),
    ]);
    args.extend([
        os("-CAcreateserial"),
        os("-extfile"),
        extensions.into(),
        os("-out"),
        cert.clone().into(),
    ]);
    openssl(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    Some(Certs {
        _dir: dir,
        cert,
        key,
        ca,
    })
}

/// A stand-in over HTTPS that demands the token, with `rules` (`None`: an administrator's).
pub fn stand_in(
    name: &str,
    objects: &[Value],
    rules: Option<Vec<Value>>,
    certs: &Certs,
) -> StandIn {
    StandIn::start_with(
        name,
        objects,
        Options {
            rules: rules.map(Value::from),
            token: Some(TOKEN.into()),
            tls: Some((certs.cert.clone(), certs.key.clone())),
            ..Options::default()
        },
    )
    .expect("python3 was checked")
}

/// Runs `command` (a command of the book) with sh in the checkout, kubectl talking to `api`.
fn kubectl_sh(api: &StandIn, command: &str) -> Output {
    Command::new("sh")
        .args(["-c", command])
        .current_dir(root())
        .env("KUBECONFIG", &api.kubeconfig)
        .output()
        .expect("sh runs")
}

/// The book's install command for `variant` against an empty stand-in: the objects it holds
/// afterwards, as a cluster would, and the stand-in (an administrator's: no RBAC).
pub fn install(name: &str, variant: &str, certs: &Certs) -> (StandIn, Vec<Value>) {
    let api = stand_in(&format!("{name}-install"), &[], None, certs);
    let command = format!("kubectl apply -k {variant}");
    // The book installs the controller's variants through a kustomization of one's own over
    // them (registry::the_readmes_controller_install_works_as_written applies that one); the
    // CronJob's as they are.
    if !super::is_controller(variant) {
        crate::readme::listed(&command);
    }
    let out = kubectl_sh(&api, &command);
    assert!(
        out.status.success(),
        "kubectl apply -k {variant}: {}",
        text(&out.stderr)
    );
    let objects = api.objects();
    assert_eq!(
        objects.len(),
        super::render(variant).expect("rendered").1.len()
    );
    (api, objects)
}

/// Where the pod's API server is.
pub enum Api {
    /// The stand-in on the host's loopback, at this port.
    At(u16),
    /// Nowhere: the pod has no network.
    Unreachable,
}

/// Fails on any key of `object` the runner does not turn into a flag.
fn known(object: &Value, what: &str, keys: &[&str]) {
    for key in object.as_object().into_iter().flatten().map(|(k, _)| k) {
        assert!(
            keys.contains(&key.as_str()),
            "{what}.{key}: the pod runner does not know it, so it cannot run the pod faithfully"
        );
    }
}

/// Kubernetes quantity to docker's: 512Mi -> 512m.
fn mebibytes(quantity: &str) -> String {
    let n = quantity
        .strip_suffix("Mi")
        .unwrap_or_else(|| panic!("{quantity}: the runner reads Mi quantities"));
    format!("{n}m")
}

/// Runs the pod `template` (metadata and spec) as its kubelet would, with the ConfigMaps of
/// `objects`, in Argo CD's namespace; `env` replaces variables of the container by name.
fn run_pod(
    name: &str,
    template: &Value,
    objects: &[Value],
    api: Api,
    certs: &Certs,
    overrides: &[(&str, &str)],
) -> Output {
    let (mut docker, _files) = pod(name, template, objects, api, certs, TOKEN, overrides, None);
    docker.output().expect("docker runs")
}

/// How a pod runs the way its kubelet would: the `docker run` command, and the directory its
/// volumes come from (kept while it runs), `token` its ServiceAccount's. `detached`: started in
/// the background under this container name, with these arguments after the pod's own.
#[allow(clippy::too_many_arguments)]
pub fn pod(
    name: &str,
    template: &Value,
    objects: &[Value],
    api: Api,
    certs: &Certs,
    token: &str,
    overrides: &[(&str, &str)],
    detached: Option<(&str, &[String])>,
) -> (Command, TempDir) {
    let dir = TempDir::new("deploy-pod", name);
    let spec = &template["spec"];
    known(
        spec,
        "spec",
        &[
            "serviceAccountName",
            "automountServiceAccountToken",
            "restartPolicy",
            "enableServiceLinks",
            "securityContext",
            "containers",
            "volumes",
            "terminationGracePeriodSeconds",
            "affinity",
        ],
    );
    let containers = spec["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "one container");
    let container = &containers[0];
    known(
        container,
        "container",
        &[
            "name",
            "image",
            "imagePullPolicy",
            "command",
            "args",
            "env",
            "securityContext",
            "resources",
            "volumeMounts",
            "ports",
            "livenessProbe",
            "readinessProbe",
        ],
    );
    let pod_sc = &spec["securityContext"];
    known(
        pod_sc,
        "spec.securityContext",
        &["runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile"],
    );
    let sc = &container["securityContext"];
    known(
        sc,
        "container.securityContext",
        &[
            "allowPrivilegeEscalation",
            "readOnlyRootFilesystem",
            "runAsNonRoot",
            "capabilities",
        ],
    );
    let mut docker = Command::new("docker");
    match detached {
        Some((container, _)) => docker.args(["run", "-d", "--name", container]),
        None => docker.args(["run", "--rm"]),
    };
    let uid = sc["runAsUser"]
        .as_i64()
        .or(pod_sc["runAsUser"].as_i64())
        .expect("a uid");
    let gid = pod_sc["runAsGroup"].as_i64().expect("a gid");
    if pod_sc["runAsNonRoot"] == true || sc["runAsNonRoot"] == true {
        assert_ne!(uid, 0, "runAsNonRoot with uid 0 would not start");
    }
    docker.arg(format!("--user={uid}:{gid}"));
    // RuntimeDefault: the engine's default profile, which setup() checked is on.
    assert_eq!(pod_sc["seccompProfile"]["type"], "RuntimeDefault");
    known(&sc["capabilities"], "capabilities", &["drop"]);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    docker.arg("--cap-drop=ALL");
    if sc["allowPrivilegeEscalation"] == false {
        docker.arg("--security-opt=no-new-privileges");
    }
    if sc["readOnlyRootFilesystem"] == true {
        docker.arg("--read-only");
    }
    let limits = &container["resources"]["limits"];
    known(limits, "limits", &["cpu", "memory"]);
    docker.arg(format!(
        "--memory={}",
        mebibytes(limits["memory"].as_str().expect("memory"))
    ));
    docker.arg(format!("--cpus={}", limits["cpu"].as_str().expect("cpu")));
    // Volumes, as mounted.
    let volumes = spec["volumes"].as_array().expect("volumes");
    for mount in container["volumeMounts"].as_array().into_iter().flatten() {
        known(mount, "volumeMount", &["name", "mountPath", "readOnly"]);
        let path = mount["mountPath"].as_str().expect("mountPath");
        let volume = volumes
            .iter()
            .find(|v| v["name"] == mount["name"])
            .expect("the mounted volume");
        if let Some(config_map) = volume.get("configMap") {
            known(config_map, "configMap", &["name"]);
            let object = objects
                .iter()
                .find(|o| {
                    o["kind"] == "ConfigMap"
                        && o["metadata"]["name"] == config_map["name"]
                        && o["metadata"]["namespace"] == ARGO_NAMESPACE
                })
                .expect("the ConfigMap is installed");
            let files = dir.path(&format!("volume-{}", mount["name"].as_str().expect("name")));
            fs::create_dir_all(&files).expect("dir");
            for (key, value) in object["data"].as_object().into_iter().flatten() {
                fs::write(files.join(key), value.as_str().expect("a string")).expect("written");
            }
            assert_eq!(mount["readOnly"], true);
            docker.arg(format!("--volume={}:{path}:ro", files.display()));
        } else if let Some(empty_dir) = volume.get("emptyDir") {
            known(empty_dir, "emptyDir", &["medium", "sizeLimit"]);
            assert_eq!(empty_dir["medium"], "Memory");
            let size = mebibytes(empty_dir["sizeLimit"].as_str().expect("sizeLimit"));
            docker.arg(format!("--tmpfs={path}:rw,size={size},mode=1777"));
        } else {
            panic!(
                "volume {}: the runner mounts configMap and emptyDir only",
                volume["name"]
            );
        }
    }
    // The ServiceAccount's token, CA and namespace, and the API server's address, as kubelet
    // gives them to a pod that asks for the token.
    assert_eq!(spec["automountServiceAccountToken"], true);
    let account = dir.path("serviceaccount");
    fs::create_dir_all(&account).expect("dir");
    fs::write(account.join("token"), token).expect("token");
    fs::copy(&certs.ca, account.join("ca.crt")).expect("ca.crt");
    fs::write(account.join("namespace"), ARGO_NAMESPACE).expect("namespace");
    docker.arg(format!(
        "--volume={}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
        account.display()
    ));
    let port = match api {
        Api::At(port) => {
            docker.arg("--network=host");
            port
        }
        Api::Unreachable => {
            docker.arg("--network=none");
            443
        }
    };
    docker.args(["--env", "KUBERNETES_SERVICE_HOST=127.0.0.1"]);
    docker.args(["--env", &format!("KUBERNETES_SERVICE_PORT={port}")]);
    let mut variables: Vec<(String, String)> = Vec::new();
    for entry in container["env"].as_array().into_iter().flatten() {
        known(entry, "env", &["name", "value", "valueFrom"]);
        let value = match entry["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            None => entry["value"].as_str().unwrap_or_default().to_string(),
            Some("metadata.namespace") => ARGO_NAMESPACE.to_string(),
            Some("metadata.name") => format!("{name}-pod"),
            Some(other) => panic!("the runner does not know the field {other}"),
        };
        variables.push((entry["name"].as_str().expect("name").into(), value));
    }
    for (name, value) in overrides {
        variables.retain(|(n, _)| n != name);
        variables.push(((*name).into(), (*value).into()));
    }
    for (name, value) in variables {
        docker.args(["--env", &format!("{name}={value}")]);
    }
    // A command replaces the image's entrypoint; the arguments follow it.
    let command: Vec<&str> = container["command"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().expect("a string"))
        .collect();
    if let Some(entrypoint) = command.first() {
        docker.arg(format!("--entrypoint={entrypoint}"));
    }
    docker.arg(container["image"].as_str().expect("image"));
    docker.args(command.iter().skip(1));
    for arg in container["args"].as_array().into_iter().flatten() {
        docker.arg(arg.as_str().expect("a string"));
    }
    if let Some((_, more)) = detached {
        docker.args(more);
    }
    (docker, dir)
}

/// The kubeadm fixture's kubeconfig Secret made into cluster `name`'s in `namespace`, with a
/// server of its own.
pub fn kubeconfig_secret(namespace: &str, name: &str) -> Value {
    let fixture = to_json(KUBEADM.as_bytes());
    let mut secret = fixture
        .into_iter()
        .find(|o| o["metadata"]["name"] == "prod-eu-1-kubeconfig")
        .expect("the fixture's kubeconfig Secret");
    let kubeconfig = B64
        .decode(secret["data"]["value"].as_str().expect("value"))
        .expect("base64");
    let kubeconfig = text(&kubeconfig).replace(
        "https://prod-eu-1-api.example.net:6443",
        &format!("https://{name}.{namespace}.example.net:6443"),
    );
    secret["data"]["value"] = B64.encode(kubeconfig).into();
    secret["metadata"]["name"] = format!("{name}-kubeconfig").into();
    secret["metadata"]["namespace"] = namespace.into();
    secret["metadata"]["labels"] = json!({"cluster.x-k8s.io/cluster-name": name});
    secret
}

fn capi_cluster(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster", "name": name},
            "controlPlaneRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane", "name": format!("{name}-control-plane")},
        },
    })
}

/// An Argo CD Secret an earlier run made for cluster `name` of `namespace`, whose kubeconfig
/// Secret is gone.
fn owned(name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": format!("cluster-{name}"), "namespace": ARGO_NAMESPACE, "labels": {
            "argocd.argoproj.io/secret-type": "cluster", "capi-to-argocd/owned": "true",
            "capi-to-argocd/cluster-secret-name": format!("{name}-kubeconfig"),
            "capi-to-argocd/cluster-namespace": namespace}},
        "data": {"name": B64.encode(name), "server": B64.encode(format!("https://{name}.{namespace}.example.net:6443"))},
    })
}

fn repository() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "repo-fleet", "namespace": ARGO_NAMESPACE,
                     "labels": {"argocd.argoproj.io/secret-type": "repository"}},
        "data": {"url": B64.encode("https://git.example.com/fleet")},
    })
}

/// Objects with the uid and resourceVersion an API server would have given them.
pub fn stored(objects: Vec<Value>) -> Vec<Value> {
    objects
        .into_iter()
        .enumerate()
        .map(|(i, mut o)| {
            o["metadata"]["uid"] = format!("00000000-0000-4000-8000-{i:012}").into();
            o["metadata"]["resourceVersion"] = (1000 + i).to_string().into();
            o
        })
        .collect()
}

fn is_discovery(r: &Request) -> bool {
    r.method == "GET"
        && (r.path == "/version"
            || r.path.starts_with("/openapi/")
            || r.path.split('/').count() <= 4 && !r.path.ends_with("secrets"))
}

/// The reads that are not discovery: `GET path?labelSelector`.
fn reads(api: &StandIn) -> Vec<String> {
    api.requests()
        .iter()
        .filter(|r| r.method == "GET" && !is_discovery(r))
        .map(|r| match r.query["labelSelector"].as_str() {
            Some(selector) => format!("{}?labelSelector={selector}", r.path),
            None => r.path.clone(),
        })
        .collect()
}

/// The requests that wrote Secrets (Events are said apart).
fn secret_writes(api: &StandIn) -> Vec<Request> {
    api.writes()
        .into_iter()
        .filter(|r| r.path.contains("/secrets"))
        .collect()
}

/// The writes to Secrets: method and path.
pub fn writes(api: &StandIn) -> Vec<(String, String)> {
    secret_writes(api)
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect()
}

/// The reasons of the Events recorded, in order.
pub fn event_reasons(api: &StandIn) -> Vec<String> {
    api.writes()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.contains("/events"))
        .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok())
        .map(|e| e["reason"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The pod's output, which must hold no credential of the fleet's or the token.
pub fn logs(out: &Output, fleet: &[Value]) -> String {
    let logs = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!logs.contains(TOKEN), "the token was printed:\n{logs}");
    assert!(
        !logs.contains("PRIVATE KEY") && !logs.contains("LS0tLS1CRUdJTi"),
        "a key was printed:\n{logs}"
    );
    for secret in fleet.iter().filter(|o| o["kind"] == "Secret") {
        for value in secret["data"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, v)| v.as_str())
        {
            if value.len() > 16 {
                assert!(
                    !logs.contains(value),
                    "a Secret's value was printed:\n{logs}"
                );
            }
        }
    }
    logs
}

/// `value` without the fields kubectl leaves out when it serialises an object (empty strings,
/// nulls), so that two objects compare by what they say.
fn without_empty_fields(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null() && v != "")
                .map(|(k, v)| (k, without_empty_fields(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_empty_fields).collect()),
        other => other,
    }
}

fn created(api: &StandIn) -> Vec<Value> {
    secret_writes(api)
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| serde_json::from_str(&r.body).expect("a Secret"))
        .collect()
}

/// The API server cannot be reached: the first read fails, the run says which and that
/// nothing was changed, exits 3 (the Job tries again), and never plans.
#[test]
fn sync_fails_clearly_and_changes_nothing_when_the_api_server_is_unreachable() {
    let Some(certs) = setup("unreachable") else {
        return;
    };
    let Some((_, objects)) = super::render("deploy") else {
        return;
    };
    let out = run_pod(
        "unreachable",
        pod_template(&objects),
        &objects,
        Api::Unreachable,
        &certs,
        &[],
    );
    let logs = logs(&out, &[]);
    assert_eq!(out.status.code(), Some(3), "{logs}");
    // Regression (issue 47): the cause in words, and no line of kube's that names neither the
    // read nor the cause (`failed with error client error (Connect)`).
    assert!(
        logs.contains(
            "could not list Secrets labelled cluster.x-k8s.io/cluster-name: connection refused"
        ),
        "{logs}"
    );
    assert!(logs.contains("; nothing was changed"), "{logs}");
    assert!(!logs.contains("failed with error"), "{logs}");
    for never in ["reconciled", "done", "create ", "delete "] {
        assert!(!logs.contains(never), "{never:?} in:\n{logs}");
    }
    assert_eq!(
        job_outcome(find(&objects, "CronJob", "capi2argo-sync"), 3),
        "retry"
    );
}

/// One read of several refused (here RBAC without Clusters): exit 3 naming it, nothing read
/// after it, nothing written.
#[test]
fn sync_fails_clearly_when_any_read_is_refused() {
    let Some(certs) = setup("read-refused") else {
        return;
    };
    let (_admin, installed) = install("read-refused", "deploy", &certs);
    let rules: Vec<Value> = rules_for(&installed)
        .into_iter()
        .filter(|r| r["apiGroups"] != json!(["cluster.x-k8s.io"]))
        .collect();
    let fleet = stored(vec![
        kubeconfig_secret("fleet-eu", "prod-eu-1"),
        owned("retired", "fleet-eu"),
    ]);
    let api = stand_in("read-refused", &fleet, Some(rules), &certs);
    let out = run_pod(
        "read-refused",
        pod_template(&installed),
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    let logs = logs(&out, &fleet);
    assert_eq!(out.status.code(), Some(3), "{logs}");
    assert!(
        logs.contains("forbidden to list clusters.cluster.x-k8s.io: "),
        "{logs}"
    );
    assert!(writes(&api).is_empty(), "{:?}", writes(&api));
    assert_eq!(
        reads(&api),
        [
            "/api/v1/secrets?labelSelector=cluster.x-k8s.io/cluster-name",
            "/api/v1/namespaces/argocd/secrets",
            "/apis/cluster.x-k8s.io/v1beta1/clusters"
        ]
    );
}

/// The whole life of the cluster-wide variant, installed with the book's command: a run
/// creates the Secret the plan creates (with the Cluster's facts) and deletes the one it
/// prunes, each conditional, and touches nothing else; a second run writes nothing; a Secret
/// edited by hand is replaced, conditional on what was read; with the
/// kubeconfig Secrets gone the allowEmpty guard holds, nothing is deleted and the Job fails at
/// once; a refused request stops the run before the next.
#[test]
fn sync_carries_out_the_plan_and_nothing_else() {
    let Some(certs) = setup("plan") else {
        return;
    };
    let (_admin, installed) = install("plan", "deploy", &certs);
    let cronjob = find(&installed, "CronJob", "capi2argo-sync");
    let rules = rules_for(&installed);
    let unrelated = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "database", "namespace": "payments"}, "data": {"password": B64.encode("do-not-read-me-0123456789")}});
    let fleet = stored(vec![
        kubeconfig_secret("fleet-eu", "prod-eu-1"),
        capi_cluster("fleet-eu", "prod-eu-1"),
        owned("retired", "fleet-eu"),
        repository(),
        unrelated,
    ]);
    let api = stand_in("plan", &fleet, Some(rules.clone()), &certs);
    let run = |api: &StandIn, name: &str, rules_note: &str| {
        let out = run_pod(
            name,
            pod_template(&installed),
            &installed,
            Api::At(api.port),
            &certs,
            &[],
        );
        let logs = logs(&out, &fleet);
        assert!(
            api.requests().iter().all(|r| r.authenticated),
            "{rules_note}: a request without the token"
        );
        (out.status.code(), logs)
    };
    let (code, logs) = run(&api, "plan-first", "first");
    assert_eq!(code, Some(0), "{logs}");
    assert_eq!(
        reads(&api),
        [
            "/api/v1/secrets?labelSelector=cluster.x-k8s.io/cluster-name",
            "/api/v1/namespaces/argocd/secrets",
            "/apis/cluster.x-k8s.io/v1beta1/clusters",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications",
            "/api/v1/namespaces/argocd/configmaps/argocd-cmd-params-cm",
        ]
    );
    assert_eq!(
        writes(&api),
        [
            ("POST".into(), "/api/v1/namespaces/argocd/secrets".into()),
            (
                "DELETE".into(),
                "/api/v1/namespaces/argocd/secrets/cluster-retired".into()
            ),
        ]
    );
    for write in secret_writes(&api) {
        let manager = if write.method == "DELETE" {
            Value::Null
        } else {
            json!("capi2argo")
        };
        assert_eq!(
            write.query["fieldManager"], manager,
            "{} {}",
            write.method, write.path
        );
    }
    let new = &created(&api)[0];
    assert_eq!(new["metadata"]["name"], "cluster-prod-eu-1");
    assert_eq!(
        new["metadata"]["labels"]["capi2argo.dev/infrastructure-provider"],
        "aws"
    );
    let options: Value = serde_json::from_str(&secret_writes(&api)[1].body).expect("DeleteOptions");
    let retired = fleet
        .iter()
        .find(|o| o["metadata"]["name"] == "cluster-retired")
        .expect("retired");
    assert_eq!(
        options["preconditions"],
        json!({"uid": retired["metadata"]["uid"], "resourceVersion": retired["metadata"]["resourceVersion"]})
    );
    for line in [
        "create    argocd/cluster-prod-eu-1 (prod-eu-1) from fleet-eu/prod-eu-1-kubeconfig",
        "prune     argocd/cluster-retired (retired)",
        r#"done verb="create" secret=argocd/cluster-prod-eu-1"#,
        r#"done verb="delete" secret=argocd/cluster-retired"#,
        "done requests=2",
    ] {
        assert!(logs.contains(line), "{line:?} in:\n{logs}");
    }
    let mut names = api.secret_names();
    names.sort();
    assert_eq!(
        names,
        [
            "argocd/cluster-prod-eu-1",
            "argocd/repo-fleet",
            "fleet-eu/prod-eu-1-kubeconfig",
            "payments/database",
        ]
    );

    // Again: the Secret as the API server stores it is unchanged; nothing is written.
    let (code, logs) = run(&api, "plan-again", "second");
    assert_eq!(code, Some(0), "{logs}");
    assert_eq!(writes(&api).len(), 2, "{:?}", writes(&api));
    assert!(logs.contains("plan=\"1 unchanged\""), "{logs}");
    assert!(logs.contains("done requests=0"), "{logs}");

    // Someone edited the Argo CD Secret: it is replaced, conditional on the resourceVersion
    // read.
    let mut edited = api.objects();
    let mut version = Value::Null;
    for object in &mut edited {
        if object["metadata"]["name"] == "cluster-prod-eu-1" {
            object["data"]["server"] = B64.encode("https://elsewhere.example.net:6443").into();
            version = object["metadata"]["resourceVersion"].clone();
        }
    }
    drop(api);
    let api = stand_in("plan-edited", &edited, Some(rules.clone()), &certs);
    let (code, logs) = run(&api, "plan-edited", "edited");
    assert_eq!(code, Some(0), "{logs}");
    assert_eq!(
        writes(&api),
        [(
            "PUT".into(),
            "/api/v1/namespaces/argocd/secrets/cluster-prod-eu-1".into()
        )]
    );
    assert_eq!(secret_writes(&api)[0].query["fieldManager"], "capi2argo");
    let replaced: Value = serde_json::from_str(&secret_writes(&api)[0].body).expect("a Secret");
    assert_eq!(replaced["metadata"]["resourceVersion"], version);
    assert!(
        logs.contains("update    argocd/cluster-prod-eu-1 (prod-eu-1): server"),
        "{logs}"
    );
    assert!(
        logs.contains(r#"done verb="replace" secret=argocd/cluster-prod-eu-1"#),
        "{logs}"
    );

    // The kubeconfig Secrets are gone (a selector that matches nothing looks the same): the
    // allowEmpty guard holds, nothing is deleted, the Job fails at once.
    let now: Vec<Value> = api
        .objects()
        .into_iter()
        .filter(|o| o["metadata"]["name"] != "prod-eu-1-kubeconfig")
        .collect();
    drop(api);
    let api = stand_in("plan-guard", &now, Some(rules.clone()), &certs);
    let (code, logs) = run(&api, "plan-guard", "guard");
    assert_eq!(code, Some(1), "{logs}");
    assert!(writes(&api).is_empty(), "{:?}", writes(&api));
    assert!(logs.contains("allowEmpty=false"), "{logs}");
    assert_eq!(
        event_reasons(&api),
        ["GuardHeld"],
        "an Event on the Secret kept"
    );
    assert!(logs.contains("outcome=\"errors\""), "{logs}");
    assert_eq!(job_outcome(cronjob, 1), "FailJob");
    drop(api);

    // The first request is refused (here: the role cannot create): the run stops there, the
    // prune after it is not made, and the Job tries again.
    let no_create: Vec<Value> = rules
        .iter()
        .cloned()
        .map(|mut r| {
            if let Some(verbs) = r["verbs"].as_array_mut() {
                verbs.retain(|v| v != "create");
            }
            r
        })
        .collect();
    let api = stand_in("plan-refused", &fleet, Some(no_create), &certs);
    let (code, logs) = run(&api, "plan-refused", "refused");
    assert_eq!(code, Some(4), "{logs}");
    assert_eq!(
        writes(&api),
        [("POST".into(), "/api/v1/namespaces/argocd/secrets".into())]
    );
    assert!(
        logs.contains("a request failed: the ones before it were carried out, none after it verb=\"create\" secret=argocd/cluster-prod-eu-1"),
        "{logs}"
    );
    assert!(logs.contains("requests=2 made=1"), "{logs}");
    assert_eq!(
        api.secret_names().len(),
        fleet.iter().filter(|o| o["kind"] == "Secret").count()
    );
    assert_eq!(job_outcome(cronjob, 4), "retry");
}

/// deploy/namespaced, installed with the book's command: it reads only the namespaces it
/// lists (its RBAC allows nothing else), creates their clusters' Secrets, and leaves the Argo
/// CD Secret of a cluster in another namespace alone (another run's, not a prune).
#[test]
fn namespaced_sync_reads_and_writes_only_its_namespaces() {
    let Some(certs) = setup("namespaced") else {
        return;
    };
    let (_admin, installed) = install("namespaced", "deploy/namespaced", &certs);
    assert_eq!(
        super::allowed_namespaces(&installed),
        Some(vec!["fleet-eu".to_string(), "fleet-us".to_string()])
    );
    let fleet = stored(vec![
        kubeconfig_secret("fleet-eu", "eu-1"),
        kubeconfig_secret("fleet-us", "us-1"),
        kubeconfig_secret("other-team", "theirs"),
        capi_cluster("fleet-eu", "eu-1"),
        owned("theirs", "other-team"),
        repository(),
    ]);
    let api = stand_in("namespaced", &fleet, Some(rules_for(&installed)), &certs);
    let out = run_pod(
        "namespaced",
        pod_template(&installed),
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    let logs = logs(&out, &fleet);
    assert_eq!(out.status.code(), Some(0), "{logs}");
    assert_eq!(
        reads(&api),
        [
            "/api/v1/namespaces/fleet-eu/secrets?labelSelector=cluster.x-k8s.io/cluster-name",
            "/api/v1/namespaces/fleet-us/secrets?labelSelector=cluster.x-k8s.io/cluster-name",
            "/api/v1/namespaces/argocd/secrets",
            "/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet-eu/clusters",
            "/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet-us/clusters",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications",
            "/api/v1/namespaces/argocd/configmaps/argocd-cmd-params-cm",
        ]
    );
    let names: Vec<Value> = created(&api)
        .iter()
        .map(|s| s["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("cluster-eu-1"), json!("cluster-us-1")]);
    assert!(
        secret_writes(&api).iter().all(|r| r.method == "POST"),
        "{:?}",
        writes(&api)
    );
    assert!(
        api.secret_names()
            .contains(&"argocd/cluster-theirs".to_string())
    );
}

/// The book's one-off run: a Job made from the CronJob with `--set maxPrune=100%` lets a
/// deliberate mass decommissioning through that the scheduled run holds back.
#[test]
fn a_one_off_run_lets_a_mass_change_through() {
    let Some(certs) = setup("one-off") else {
        return;
    };
    let (admin, installed) = install("one-off", "deploy", &certs);
    let rules = rules_for(&installed);
    let clusters = ["a", "b", "c", "d"];
    let fleet = stored(
        clusters
            .iter()
            .map(|c| kubeconfig_secret("fleet-eu", c))
            .collect(),
    );
    let api = stand_in("one-off-start", &fleet, Some(rules.clone()), &certs);
    let out = run_pod(
        "one-off-start",
        pod_template(&installed),
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", logs(&out, &fleet));
    assert_eq!(created(&api).len(), 4);
    // Three of the four clusters are decommissioned at once.
    let now: Vec<Value> = api
        .objects()
        .into_iter()
        .filter(|o| {
            !["b-kubeconfig", "c-kubeconfig", "d-kubeconfig"]
                .contains(&o["metadata"]["name"].as_str().unwrap_or_default())
        })
        .collect();
    drop(api);
    let api = stand_in("one-off-held", &now, Some(rules.clone()), &certs);
    let out = run_pod(
        "one-off-held",
        pod_template(&installed),
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    let held = logs(&out, &fleet);
    assert_eq!(out.status.code(), Some(1), "{held}");
    assert!(held.contains("maxPrune"), "{held}");
    assert!(writes(&api).is_empty());
    drop(api);
    // The book's command, run by an administrator: a Job from the CronJob, with the setting.
    let command = crate::readme::command_containing("create job capi2argo-once");
    let out = kubectl_sh(&admin, command);
    assert!(out.status.success(), "{command}: {}", text(&out.stderr));
    let job = admin
        .objects()
        .into_iter()
        .find(|o| o["kind"] == "Job" && o["metadata"]["name"] == "capi2argo-once")
        .expect("the Job was created");
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["--set", "maxPrune=100%"])
    );
    let mut expected =
        find(&installed, "CronJob", "capi2argo-sync")["spec"]["jobTemplate"]["spec"].clone();
    expected["template"]["spec"]["containers"][0]["args"] = json!(["--set", "maxPrune=100%"]);
    assert_eq!(
        without_empty_fields(job["spec"].clone()),
        without_empty_fields(expected),
        "the Job is the CronJob's but for the setting"
    );
    let api = stand_in("one-off-job", &now, Some(rules), &certs);
    let out = run_pod(
        "one-off-job",
        &job["spec"]["template"],
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    let logs = logs(&out, &fleet);
    assert_eq!(out.status.code(), Some(0), "{logs}");
    let deleted: Vec<String> = api
        .writes()
        .iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(deleted, ["cluster-b", "cluster-c", "cluster-d"]);
    assert_eq!(secret_writes(&api).len(), 3);
}

/// `--control-plane` and a second source, as the book describes them: the control plane's
/// Kubernetes version reaches the Argo CD Secret once the read role may list control planes
/// (before, the read is refused and nothing changes), and the second source's Secrets are read
/// with the selector its labels give.
#[test]
fn sync_reads_control_planes_and_every_selector_when_asked() {
    let Some(certs) = setup("selectors") else {
        return;
    };
    let (_admin, installed) = install("selectors", "deploy", &certs);
    let mut labelled = kubeconfig_secret("platform", "edge-1");
    labelled["metadata"]["name"] = "edge-1".into();
    labelled["metadata"]["labels"] = json!({"capi2argo.dev/kubeconfig": "true"});
    labelled["type"] = "Opaque".into();
    let value = labelled["data"]["value"].take();
    labelled["data"] = json!({"kubeconfig": value});
    let fleet = stored(vec![
        kubeconfig_secret("fleet-eu", "prod-eu-1"),
        capi_cluster("fleet-eu", "prod-eu-1"),
        json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
               "metadata": {"name": "prod-eu-1-control-plane", "namespace": "fleet-eu"},
               "spec": {"version": "v1.31.4"}}),
        labelled,
    ]);
    let mut template = pod_template(&installed).clone();
    template["spec"]["containers"][0]["args"] = json!([
        "--set",
        "sources=capi,labelled",
        format!("--control-plane={CONTROL_PLANES}")
    ]);
    // The read role as installed cannot list control planes: refused, nothing written.
    let api = stand_in(
        "selectors-refused",
        &fleet,
        Some(rules_for(&installed)),
        &certs,
    );
    let out = run_pod(
        "selectors-refused",
        &template,
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    let logs_refused = logs(&out, &fleet);
    assert_eq!(out.status.code(), Some(3), "{logs_refused}");
    assert!(
        logs_refused.contains(&format!("forbidden to list {CONTROL_PLANES}: ")),
        "{logs_refused}"
    );
    assert!(writes(&api).is_empty());
    drop(api);
    // With the rule the book gives.
    let mut rules = rules_for(&installed);
    rules.push(json!({"namespace": null, "apiGroups": ["controlplane.cluster.x-k8s.io"], "resources": ["kubeadmcontrolplanes"], "verbs": ["list"]}));
    let api = stand_in("selectors", &fleet, Some(rules), &certs);
    let out = run_pod(
        "selectors",
        &template,
        &installed,
        Api::At(api.port),
        &certs,
        &[],
    );
    let logs = logs(&out, &fleet);
    assert_eq!(out.status.code(), Some(0), "{logs}");
    assert_eq!(
        reads(&api),
        [
            "/api/v1/secrets?labelSelector=cluster.x-k8s.io/cluster-name",
            "/api/v1/secrets?labelSelector=capi2argo.dev/kubeconfig=true",
            "/api/v1/namespaces/argocd/secrets",
            "/apis/controlplane.cluster.x-k8s.io/v1beta1/kubeadmcontrolplanes",
            "/apis/cluster.x-k8s.io/v1beta1/clusters",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications",
            "/api/v1/namespaces/argocd/configmaps/argocd-cmd-params-cm",
        ]
    );
    let made = created(&api);
    let names: Vec<&Value> = made.iter().map(|s| &s["metadata"]["name"]).collect();
    assert_eq!(
        names,
        [&json!("cluster-prod-eu-1"), &json!("cluster-edge-1")]
    );
    assert_eq!(
        made[0]["metadata"]["labels"]["capi2argo.dev/kubernetes-version"],
        "v1.31.4"
    );
}

/// Flags the controller does not take, and settings that make no sense, end the run before
/// anything is read (exit 2: the Job fails at once).
#[test]
fn sync_refuses_bad_arguments_and_settings() {
    let Some(certs) = setup("arguments") else {
        return;
    };
    let (_admin, installed) = install("arguments", "deploy", &certs);
    let api = stand_in("arguments", &[], Some(rules_for(&installed)), &certs);
    // Arguments, environment overrides, and what the log says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (
            &["--fn-config", "/etc/passwd"],
            &[],
            "unexpected argument '--fn-config'",
        ),
        (
            &["--set", "maxPrune"],
            &[],
            "invalid setting \"maxPrune\": expected key=value; nothing was read or changed",
        ),
        (
            &["--set", "maxPrune=lots"],
            &[],
            "maxPrune: expected a number of Secrets",
        ),
        (
            &["--control-plane=kubeadmcontrolplanes"],
            &[],
            "--control-plane kubeadmcontrolplanes: expected RESOURCE.GROUP",
        ),
        (&[], &[("ARGO_NAMESPACE", "Argo CD")], "argoNamespace"),
    ];
    for (args, env, message) in cases {
        let mut template = pod_template(&installed).clone();
        template["spec"]["containers"][0]["args"] = json!(args);
        let out = run_pod(
            "arguments",
            &template,
            &installed,
            Api::At(api.port),
            &certs,
            env,
        );
        let logs = logs(&out, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {logs}");
        assert!(logs.contains(message), "{message:?} in {logs}");
    }
    assert!(api.requests().is_empty(), "{:?}", api.requests());
    assert_eq!(
        job_outcome(find(&installed, "CronJob", "capi2argo-sync"), 2),
        "FailJob"
    );
}
