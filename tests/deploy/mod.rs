//! `deploy/`, capi2argo unattended in the management cluster: its manifests (rendered by
//! `kubectl kustomize` and, when `$KUSTOMIZE` is set, standalone kustomize, which must agree)
//! validated against the Kubernetes schemas offline, its pod against Pod Security's
//! `restricted` profile, its RBAC for least privilege, and the CronJob's failure handling; the
//! sync script itself runs in its image in `sync`.
//!
//! No Kubernetes API server can be had where these tests run: what needs one runs against the
//! recording stand-in (tests/kube/apiserver.py).

mod controller;
mod lifecycle;
mod network;
mod pod_security;
mod sync;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{self, TempDir};

/// The installable variants: the CronJob (`capi2argo-controller --once` every five minutes) and
/// the controller's Deployment, each reading cluster-wide or in the namespaces it lists.
pub const VARIANTS: &[&str] = &[
    "deploy",
    "deploy/namespaced",
    "deploy/controller",
    "deploy/controller/namespaced",
];
/// Where they run: Argo CD's namespace.
pub const ARGO_NAMESPACE: &str = "argocd";

/// Whether a variant runs the controller (a Deployment) rather than the CronJob.
pub fn is_controller(variant: &str) -> bool {
    variant.starts_with("deploy/controller")
}
/// The Kubernetes releases whose schemas every manifest is checked against: from 1.29 (the
/// first whose Job schema takes a podFailurePolicy rule with `onExitCodes` alone) to 1.37, the
/// newest kubernetes-validate 1.37.0 carries.
const SCHEMA_VERSIONS: &[&str] = &[
    "1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0",
];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A YAML stream (or `kubectl get -o yaml` List) as JSON objects, read by capi2argo's own
/// reader.
pub fn to_json(yaml: &[u8]) -> Vec<Value> {
    let json =
        capi2argo_core::items_json(yaml, &capi2argo_core::Limits::default()).expect("YAML reads");
    serde_json::from_str(&json).expect("JSON")
}

/// A variant's manifests as `kubectl kustomize` renders them: the YAML and the objects.
/// Standalone kustomize (`$KUSTOMIZE`, 4.5.4 under `make test`) must render the same bytes.
/// `None`, after a loud skip, without kubectl.
pub fn render(variant: &str) -> Option<(String, Vec<Value>)> {
    if !common::available(
        "kubectl",
        &["version", "--client"],
        &format!("{variant} was NOT rendered"),
    ) {
        return None;
    }
    // The book's command for deploy/; the same for the namespaced variant.
    let command = format!("kubectl kustomize {variant}");
    crate::readme::listed("kubectl kustomize deploy");
    let out = Command::new("sh")
        .args(["-c", &command])
        .current_dir(root())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {variant}: {}",
        text(&out.stderr)
    );
    if let Some(kustomize) = std::env::var_os("KUSTOMIZE").filter(|p| !p.is_empty()) {
        let standalone = Command::new(kustomize)
            .args(["build", variant])
            .current_dir(root())
            .output()
            .expect("kustomize runs");
        assert!(standalone.status.success(), "{}", text(&standalone.stderr));
        assert_eq!(
            text(&standalone.stdout),
            text(&out.stdout),
            "standalone kustomize renders {variant} differently from kubectl kustomize"
        );
    } else {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            common::skip(
                "KUSTOMIZE is not set, so deploy/ was NOT also rendered by standalone kustomize",
            )
        });
    }
    let yaml = text(&out.stdout);
    let objects = to_json(yaml.as_bytes());
    Some((yaml, objects))
}

/// The one object of `kind` named `name`.
pub fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    found[0]
}

/// The pod template of the CronJob or the Deployment, whichever the objects hold.
pub fn pod_template(objects: &[Value]) -> &Value {
    match objects.iter().find(|o| o["kind"] == "Deployment") {
        Some(deployment) => &deployment["spec"]["template"],
        None => {
            &find(objects, "CronJob", "capi2argo-sync")["spec"]["jobTemplate"]["spec"]["template"]
        }
    }
}

/// The ServiceAccount the pod runs as.
pub fn service_account(objects: &[Value]) -> String {
    pod_template(objects)["spec"]["serviceAccountName"]
        .as_str()
        .expect("serviceAccountName")
        .to_string()
}

/// The container's command and arguments, in order.
pub fn command_line(objects: &[Value]) -> Vec<String> {
    let container = &pod_template(objects)["spec"]["containers"][0];
    ["command", "args"]
        .iter()
        .flat_map(|k| container[*k].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// The namespaces the pod reads (`--set=allowedNamespaces=…`), `None` for all.
pub fn allowed_namespaces(objects: &[Value]) -> Option<Vec<String>> {
    command_line(objects).iter().find_map(|a| {
        a.strip_prefix("--set=allowedNamespaces=")
            .map(|list| list.split(',').map(String::from).collect())
    })
}

/// The RBAC rules the pod's ServiceAccount gets from `objects`, each with the namespace it holds
/// in (`null`: every namespace), as the stand-in takes them: a RoleBinding grants its Role's
/// (or ClusterRole's) rules in its namespace, a ClusterRoleBinding its ClusterRole's everywhere.
pub fn rules_for(objects: &[Value]) -> Vec<Value> {
    let account = service_account(objects);
    let mut rules = Vec::new();
    for binding in objects
        .iter()
        .filter(|o| o["kind"] == "RoleBinding" || o["kind"] == "ClusterRoleBinding")
    {
        let bound = binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == account.as_str()
                    && s["namespace"] == ARGO_NAMESPACE
            });
        if !bound {
            continue;
        }
        let namespace = if binding["kind"] == "RoleBinding" {
            binding["metadata"]["namespace"].clone()
        } else {
            Value::Null
        };
        let role_kind = binding["roleRef"]["kind"].as_str().expect("roleRef.kind");
        let role = objects
            .iter()
            .find(|o| {
                o["kind"] == role_kind
                    && o["metadata"]["name"] == binding["roleRef"]["name"]
                    && (role_kind == "ClusterRole"
                        || o["metadata"]["namespace"] == binding["metadata"]["namespace"])
            })
            .unwrap_or_else(|| {
                panic!(
                    "{} binds a missing {role_kind}",
                    binding["metadata"]["name"]
                )
            });
        for rule in role["rules"].as_array().into_iter().flatten() {
            let mut rule = rule.clone();
            rule["namespace"] = namespace.clone();
            rules.push(rule);
        }
    }
    rules
}

/// What a workload may do with one resource: the verbs anywhere it reads, the verbs only in
/// Argo CD's namespace, and the names a verb is narrowed to there.
struct Allowed {
    group: &'static str,
    resource: &'static str,
    reads: &'static [&'static str],
    in_argocd: &'static [&'static str],
    /// Verbs allowed only with `resourceNames` exactly this.
    named: Option<(&'static [&'static str], &'static [&'static str])>,
}

/// The CronJob lists (it opens no watch); the controller lists and watches, and holds its
/// Lease. Both write Secrets in Argo CD's namespace only, and record Events; both read Argo CD's
/// ApplicationSets and Applications there (readApplications), and its one ConfigMap
/// `argocd-cmd-params-cm` by name; the controller also its AppProjects and `argocd-cm`
/// (serviceAccountRole=impersonate).
fn allowed(controller: bool) -> Vec<Allowed> {
    let reads: &'static [&'static str] = if controller {
        &["list", "watch"]
    } else {
        &["list"]
    };
    let mut out = vec![
        Allowed {
            group: "",
            resource: "secrets",
            reads,
            in_argocd: &["create", "update", "delete"],
            named: None,
        },
        Allowed {
            group: "cluster.x-k8s.io",
            resource: "clusters",
            reads,
            in_argocd: &[],
            named: None,
        },
        Allowed {
            group: "multicluster.x-k8s.io",
            resource: "clusterprofiles",
            reads,
            in_argocd: &[],
            named: None,
        },
        Allowed {
            group: "events.k8s.io",
            resource: "events",
            reads: &["create", "patch"],
            in_argocd: &[],
            named: None,
        },
        Allowed {
            group: "argoproj.io",
            resource: "applicationsets",
            reads: &[],
            in_argocd: reads,
            named: None,
        },
        Allowed {
            group: "argoproj.io",
            resource: "applications",
            reads: &[],
            in_argocd: reads,
            named: None,
        },
        Allowed {
            group: "",
            resource: "configmaps",
            reads: &[],
            in_argocd: &[],
            named: Some((
                &["get"],
                if controller {
                    &["argocd-cmd-params-cm", "argocd-cm"]
                } else {
                    &["argocd-cmd-params-cm"]
                },
            )),
        },
    ];
    if controller {
        // serviceAccountRole=impersonate: the AppProjects' destinationServiceAccounts.
        out.push(Allowed {
            group: "argoproj.io",
            resource: "appprojects",
            reads: &[],
            in_argocd: reads,
            named: None,
        });
        out.push(Allowed {
            group: "coordination.k8s.io",
            resource: "leases",
            reads: &[],
            in_argocd: &["create"],
            // list and watch by name (a metadata.name field selector): a standby sees the
            // Lease let go at once.
            named: Some((
                &["get", "list", "watch", "patch"],
                &["capi2argo-controller"],
            )),
        });
    }
    out
}

/// What breaks least privilege in `objects`, empty when nothing does: wildcards, verbs that
/// grant more rights, any right [`allowed`] does not list, in a scope it does not list.
fn rbac_problems(objects: &[Value]) -> Vec<String> {
    let account = service_account(objects);
    let controller = objects.iter().any(|o| o["kind"] == "Deployment");
    let mut problems = Vec::new();
    for role in objects
        .iter()
        .filter(|o| o["kind"] == "Role" || o["kind"] == "ClusterRole")
    {
        let who = format!("{} {}", role["kind"], role["metadata"]["name"]);
        if !role["aggregationRule"].is_null() {
            problems.push(format!("{who} aggregates other roles"));
        }
        for rule in role["rules"].as_array().into_iter().flatten() {
            for field in ["apiGroups", "resources", "verbs", "resourceNames"] {
                if rule[field]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| v.as_str().is_some_and(|s| s.contains('*')))
                {
                    problems.push(format!("{who}: a wildcard in {field}"));
                }
            }
            if !rule["nonResourceURLs"].is_null() {
                problems.push(format!("{who}: nonResourceURLs"));
            }
            for verb in rule["verbs"].as_array().into_iter().flatten() {
                if ["escalate", "bind", "impersonate", "approve", "sign"]
                    .contains(&verb.as_str().unwrap_or_default())
                {
                    problems.push(format!("{who}: the verb {verb}"));
                }
            }
        }
    }
    for binding in objects
        .iter()
        .filter(|o| o["kind"] == "RoleBinding" || o["kind"] == "ClusterRoleBinding")
    {
        for subject in binding["subjects"].as_array().into_iter().flatten() {
            if subject["kind"] != "ServiceAccount"
                || subject["name"] != account.as_str()
                || subject["namespace"] != ARGO_NAMESPACE
            {
                problems.push(format!(
                    "{} {} binds {subject} besides the pod's ServiceAccount",
                    binding["kind"], binding["metadata"]["name"]
                ));
            }
        }
    }
    let table = allowed(controller);
    for rule in rules_for(objects) {
        let strings = |field: &str| -> Vec<&str> {
            rule[field]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect()
        };
        let (verbs, resources, groups, names) = (
            strings("verbs"),
            strings("resources"),
            strings("apiGroups"),
            strings("resourceNames"),
        );
        let in_argocd = rule["namespace"] == ARGO_NAMESPACE;
        let scope = match rule["namespace"].as_str() {
            Some(ns) => format!("in {ns}"),
            None => "cluster-wide".to_string(),
        };
        for group in &groups {
            for resource in &resources {
                let Some(entry) = table
                    .iter()
                    .find(|a| a.group == *group && a.resource == *resource)
                else {
                    problems.push(format!(
                        "{group}/{resource} {scope}: not a resource the pod needs"
                    ));
                    continue;
                };
                for verb in &verbs {
                    let fine = entry.reads.contains(verb)
                        || (in_argocd && entry.in_argocd.contains(verb))
                        || entry.named.is_some_and(|(narrowed, to)| {
                            in_argocd && narrowed.contains(verb) && names == to
                        });
                    if !fine {
                        problems.push(format!(
                            "{verb} on {group}/{resource} {scope}{}: not what the pod needs",
                            if names.is_empty() {
                                String::new()
                            } else {
                                format!(" (names {names:?})")
                            }
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// Whether `python -m kubernetes_validate` can run: the venv `make test` exports as
/// CAPI2ARGO_PYTHON.
fn kubernetes_validate() -> Option<PathBuf> {
    let python = std::env::var_os("CAPI2ARGO_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let Some(python) = python.filter(|p| {
        Command::new(p)
            .args(["-c", "import kubernetes_validate"])
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        common::skip(
            "CAPI2ARGO_PYTHON is unset or lacks kubernetes-validate (`make test` installs it), so deploy/ was NOT validated against the Kubernetes schemas",
        );
        return None;
    };
    Some(python)
}

/// Runs kubernetes-validate with the network cut off (`unshare -rn`) where that works, so a
/// pass shows it needed none.
fn validate(python: &Path, file: &Path, version: &str) -> Output {
    let offline = Command::new("unshare")
        .args(["-rn", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut command = if offline {
        let mut c = Command::new("unshare");
        c.args(["-rn"]).arg(python);
        c
    } else {
        Command::new(python)
    };
    command
        .args([
            "-m",
            "kubernetes_validate",
            "--strict",
            "--kubernetes-version",
            version,
        ])
        .arg(file);
    let out = command.output().expect("kubernetes-validate runs");
    if !offline {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            common::skip(
                "`unshare -rn` does not work here, so kubernetes-validate ran with the network reachable",
            )
        });
    }
    out
}

#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let Some(python) = kubernetes_validate() else {
        return;
    };
    let dir = TempDir::new("deploy", "schemas");
    for variant in VARIANTS {
        let Some((yaml, objects)) = render(variant) else {
            return;
        };
        let file = dir.path("manifests.yaml");
        fs::write(&file, &yaml).expect("written");
        for version in SCHEMA_VERSIONS {
            let out = validate(&python, &file, version);
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "{variant} against Kubernetes {version}:\n{stdout}{}",
                text(&out.stderr)
            );
            let minor = version.trim_end_matches(".0");
            for object in &objects {
                let line = format!(
                    "passed for resource {}/{} against version {minor}",
                    object["kind"].as_str().expect("kind").to_lowercase(),
                    object["metadata"]["name"].as_str().expect("name")
                );
                assert!(
                    stdout.contains(&line),
                    "{variant}: no `{line}` in:\n{stdout}"
                );
            }
        }
    }
    // The same check fails on a misspelt field (strict: unknown fields are errors) and on a
    // value of the wrong type.
    let Some((yaml, _)) = render("deploy") else {
        return;
    };
    for (from, to) in [
        ("      backoffLimit: 2\n", "      backofLimit: 2\n"),
        (
            "  startingDeadlineSeconds: 120\n",
            "  startingDeadlineSeconds: soon\n",
        ),
    ] {
        assert!(yaml.contains(from), "{from:?}");
        let file = dir.path("broken.yaml");
        fs::write(&file, yaml.replace(from, to)).expect("written");
        let out = validate(&python, &file, "1.37.0");
        assert!(
            !out.status.success() && text(&out.stdout).contains("ERROR"),
            "kubernetes-validate passed {to:?}: {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn the_pod_passes_pod_security_restricted() {
    for variant in VARIANTS {
        let Some((_, objects)) = render(variant) else {
            return;
        };
        let template = pod_template(&objects);
        let spec = &template["spec"];
        let violations = pod_security::restricted_violations(&template["metadata"], spec);
        assert!(violations.is_empty(), "{variant}: {violations:#?}");
        // Beyond the profile: a read-only root, bounded resources, nothing written anywhere,
        // and the token mounted into this pod only.
        let container = &spec["containers"][0];
        assert_eq!(spec["containers"].as_array().map(Vec::len), Some(1));
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(spec["securityContext"]["runAsUser"], 65532);
        // The book's figures.
        assert_eq!(
            container["resources"],
            json!({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}}),
            "{variant}"
        );
        let mounts: BTreeSet<(&str, bool)> = container["volumeMounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .map(|m| {
                (
                    m["mountPath"].as_str().expect("path"),
                    m["readOnly"] == true,
                )
            })
            .collect();
        assert_eq!(mounts, BTreeSet::from([("/etc/capi2argo", true)]));
        let account = service_account(&objects);
        assert_eq!(
            find(&objects, "ServiceAccount", &account)["automountServiceAccountToken"],
            false
        );
        assert_eq!(spec["automountServiceAccountToken"], true);
        assert_eq!(
            container["image"],
            "ghcr.io/capi2argo/capi2argo-controller:v0.1.0"
        );
    }
}

/// The controller's Deployment as the book describes it: two replicas behind a Lease, probes on
/// the health port, metrics on their own, a disruption budget, a NetworkPolicy, the settings
/// in a ConfigMap whose name follows its content; only built-in kinds, so it applies on a
/// cluster with no CRD; the monitoring component adds exactly the Prometheus Operator's two.
#[test]
fn the_controller_runs_two_replicas_behind_a_lease() {
    for variant in ["deploy/controller", "deploy/controller/namespaced"] {
        let Some((_, objects)) = render(variant) else {
            return;
        };
        let deployment = find(&objects, "Deployment", "capi2argo-controller");
        assert_eq!(deployment["spec"]["replicas"], 2);
        let spec = &deployment["spec"]["template"]["spec"];
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        let command = command_line(&objects);
        assert!(
            command.contains(&"--leader-elect".to_string()),
            "{command:?}"
        );
        assert!(!command.contains(&"--once".to_string()));
        let container = &spec["containers"][0];
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        let ports: Vec<(&str, i64)> = container["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or_default(),
                    p["containerPort"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(ports, [("metrics", 8080), ("health", 8081)]);
        let budget = find(&objects, "PodDisruptionBudget", "capi2argo-controller");
        assert_eq!(budget["spec"]["minAvailable"], 1);
        let policy = find(&objects, "NetworkPolicy", "capi2argo-controller");
        assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        // Every port names its protocol, which the API server would otherwise fill in: without
        // it a second `kubectl apply` reports the policy "configured" (seen on a real server).
        for direction in ["ingress", "egress"] {
            for rule in policy["spec"][direction].as_array().expect(direction) {
                for port in rule["ports"].as_array().expect("ports") {
                    assert!(
                        port["protocol"] == "TCP" || port["protocol"] == "UDP",
                        "{variant}: {direction} {port}"
                    );
                }
            }
        }
        let settings = spec["volumes"][0]["configMap"]["name"]
            .as_str()
            .expect("a ConfigMap");
        assert!(
            settings.starts_with("capi2argo-controller-settings-")
                && objects
                    .iter()
                    .any(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == settings),
            "{settings}"
        );
        for object in &objects {
            let api = object["apiVersion"].as_str().unwrap_or_default();
            assert!(
                !api.contains("monitoring.coreos.com") && !api.contains("cluster.x-k8s.io"),
                "{variant}: {api} needs a CRD"
            );
        }
    }
    // With the monitoring component: the same objects and the two of the Prometheus Operator.
    if !common::available(
        "kubectl",
        &["version", "--client"],
        "the monitoring component was NOT rendered",
    ) {
        return;
    }
    let book = common::chapter("controller.md");
    let kustomization = book
        .split("```yaml\n")
        .map(|b| b.split("```").next().unwrap_or_default())
        .find(|b| b.contains("components: [deploy/controller/monitoring]"))
        .expect("the book's kustomization with the monitoring component");
    let with = beside_deploy("monitoring", &[kustomization]).remove(0);
    let (_, without) = render("deploy/controller").expect("rendered");
    assert_eq!(with.len(), without.len() + 2);
    let monitor = find(&with, "ServiceMonitor", "capi2argo-controller");
    let service = find(&with, "Service", "capi2argo-controller-metrics");
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
    for (key, value) in monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("labels")
    {
        assert_eq!(&service["metadata"]["labels"][key], value);
    }
    let rules = find(&with, "PrometheusRule", "capi2argo-controller");
    let alerts: Vec<&str> = rules["spec"]["groups"][0]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|r| r["alert"].as_str())
        .collect();
    for alert in &alerts {
        assert!(
            book.contains(&format!("| `{alert}` |")),
            "{alert} is not in the book's table"
        );
        // Every metric an alert reads is one the controller serves (the book's table).
        let expr = rules["spec"]["groups"][0]["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .find(|r| r["alert"] == *alert)
            .expect("rule")["expr"]
            .as_str()
            .expect("expr")
            .to_string();
        for word in expr.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if word.starts_with("capi2argo_") {
                assert!(
                    book.contains(&format!("`{word}")),
                    "{alert} reads {word}, which the book does not list"
                );
            }
        }
    }
    assert_eq!(
        alerts,
        [
            "Capi2ArgoGuardHeld",
            "Capi2ArgoNoSuccessfulReconcile",
            "Capi2ArgoNoLeader",
            "Capi2ArgoCredentialExpiring",
            "Capi2ArgoClustersFailing",
            "Capi2ArgoTokenRefreshFailing"
        ]
    );
}

/// Each rule of the profile, broken once: the checks find it.
#[test]
fn the_restricted_checks_catch_each_violation() {
    let Some((_, objects)) = render("deploy") else {
        return;
    };
    let template = pod_template(&objects).clone();
    let cases: &[(&str, &str, Value)] = &[
        ("hostNamespaces", "/spec/hostNetwork", json!(true)),
        ("hostNamespaces", "/spec/hostPID", json!(true)),
        (
            "privileged",
            "/spec/containers/0/securityContext/privileged",
            json!(true),
        ),
        (
            "capabilities_restricted",
            "/spec/containers/0/securityContext/capabilities/drop",
            json!([]),
        ),
        (
            "capabilities_restricted",
            "/spec/containers/0/securityContext/capabilities/add",
            json!(["NET_RAW"]),
        ),
        (
            "allowPrivilegeEscalation",
            "/spec/containers/0/securityContext/allowPrivilegeEscalation",
            json!(true),
        ),
        (
            "allowPrivilegeEscalation",
            "/spec/containers/0/securityContext/allowPrivilegeEscalation",
            Value::Null,
        ),
        (
            "runAsNonRoot",
            "/spec/securityContext/runAsNonRoot",
            json!(false),
        ),
        (
            "runAsNonRoot",
            "/spec/containers/0/securityContext/runAsNonRoot",
            json!(false),
        ),
        ("runAsUser", "/spec/securityContext/runAsUser", json!(0)),
        (
            "seccompProfile_restricted",
            "/spec/securityContext/seccompProfile",
            Value::Null,
        ),
        (
            "seccompProfile_restricted",
            "/spec/securityContext/seccompProfile/type",
            json!("Unconfined"),
        ),
        (
            "hostPathVolumes",
            "/spec/volumes/0",
            json!({"name": "settings", "hostPath": {"path": "/etc"}}),
        ),
        (
            "restrictedVolumes",
            "/spec/volumes/0",
            json!({"name": "settings", "nfs": {"server": "x", "path": "/"}}),
        ),
        (
            "hostPorts",
            "/spec/containers/0/ports",
            json!([{"containerPort": 80, "hostPort": 80}]),
        ),
        (
            "procMount_restricted",
            "/spec/containers/0/securityContext/procMount",
            json!("Unmasked"),
        ),
        (
            "seLinuxOptions",
            "/spec/securityContext/seLinuxOptions",
            json!({"user": "system_u"}),
        ),
        (
            "appArmorProfile",
            "/spec/containers/0/securityContext/appArmorProfile",
            json!({"type": "Unconfined"}),
        ),
        (
            "sysctls",
            "/spec/securityContext/sysctls",
            json!([{"name": "kernel.msgmax", "value": "1"}]),
        ),
        (
            "windowsHostProcess",
            "/spec/securityContext/windowsOptions",
            json!({"hostProcess": true}),
        ),
        (
            "hostProbesAndHostLifecycle",
            "/spec/containers/0/livenessProbe",
            json!({"httpGet": {"host": "10.0.0.1", "port": 80}}),
        ),
    ];
    for (check, pointer, value) in cases {
        let mut pod = template.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        let target = pod
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("{parent}"));
        if value.is_null() {
            target.as_object_mut().expect("an object").remove(key);
        } else if let Ok(i) = key.parse::<usize>() {
            target.as_array_mut().expect("an array")[i] = value.clone();
        } else {
            target[key] = value.clone();
        }
        let violations = pod_security::restricted_violations(&pod["metadata"], &pod["spec"]);
        assert!(
            violations
                .iter()
                .any(|v| v.starts_with(&format!("{check}:"))),
            "{pointer} = {value}: no {check} violation in {violations:?}"
        );
    }
    // Neither the pod nor the container says runAsNonRoot.
    let mut unsaid = template.clone();
    unsaid["spec"]["securityContext"]
        .as_object_mut()
        .expect("securityContext")
        .remove("runAsNonRoot");
    unsaid["spec"]["containers"][0]["securityContext"]
        .as_object_mut()
        .expect("securityContext")
        .remove("runAsNonRoot");
    assert!(
        pod_security::restricted_violations(&unsaid["metadata"], &unsaid["spec"])
            .iter()
            .any(|v| v.starts_with("runAsNonRoot:"))
    );
    let mut annotated = template.clone();
    annotated["metadata"]["annotations"] =
        json!({"container.apparmor.security.beta.kubernetes.io/sync": "unconfined"});
    assert!(
        pod_security::restricted_violations(&annotated["metadata"], &annotated["spec"])
            .iter()
            .any(|v| v.starts_with("appArmorProfile:"))
    );
}

#[test]
fn rbac_is_least_privilege() {
    for variant in VARIANTS {
        let Some((_, objects)) = render(variant) else {
            return;
        };
        let problems = rbac_problems(&objects);
        assert!(problems.is_empty(), "{variant}: {problems:#?}");
        let rules = rules_for(&objects);
        let granted = |ns: Option<&str>, group: &str, resource: &str, verb: &str| {
            rules.iter().any(|r| {
                r["namespace"].as_str() == ns
                    && r["apiGroups"]
                        .as_array()
                        .is_some_and(|a| a.contains(&json!(group)))
                    && r["resources"]
                        .as_array()
                        .is_some_and(|a| a.contains(&json!(resource)))
                    && r["verbs"]
                        .as_array()
                        .is_some_and(|a| a.contains(&json!(verb)))
            })
        };
        let reads: &[&str] = if is_controller(variant) {
            &["list", "watch"]
        } else {
            &["list"]
        };
        for verb in reads.iter().chain(&["create", "update", "delete"]) {
            assert!(
                granted(Some(ARGO_NAMESPACE), "", "secrets", verb),
                "{variant}: {verb}"
            );
        }
        match allowed_namespaces(&objects) {
            None => {
                assert!(
                    !variant.ends_with("namespaced"),
                    "{variant} reads every namespace"
                );
                for verb in reads {
                    assert!(granted(None, "", "secrets", verb), "{variant}: {verb}");
                    assert!(granted(None, "cluster.x-k8s.io", "clusters", verb));
                    let profiles = granted(None, "multicluster.x-k8s.io", "clusterprofiles", verb);
                    assert!(profiles, "{variant}: {verb} clusterprofiles");
                }
                assert!(granted(None, "events.k8s.io", "events", "create"));
            }
            Some(read) => {
                // No ClusterRole at all; a Role in each namespace it reads, and nowhere else.
                assert!(
                    !objects
                        .iter()
                        .any(|o| o["kind"] == "ClusterRole" || o["kind"] == "ClusterRoleBinding"),
                    "{variant} has cluster-wide RBAC"
                );
                assert!(rules.iter().all(|r| !r["namespace"].is_null()));
                assert!(!read.is_empty() && !read.contains(&String::new()));
                for ns in &read {
                    for verb in reads {
                        assert!(granted(Some(ns), "", "secrets", verb), "{ns}");
                        assert!(
                            granted(Some(ns), "cluster.x-k8s.io", "clusters", verb),
                            "{ns}"
                        );
                        let profiles =
                            granted(Some(ns), "multicluster.x-k8s.io", "clusterprofiles", verb);
                        assert!(profiles, "{ns}: {verb} clusterprofiles");
                    }
                    assert!(
                        granted(Some(ns), "events.k8s.io", "events", "create"),
                        "{ns}"
                    );
                }
                let scoped: BTreeSet<&str> = rules
                    .iter()
                    .filter_map(|r| r["namespace"].as_str())
                    .collect();
                let expected: BTreeSet<&str> = read
                    .iter()
                    .map(String::as_str)
                    .chain([ARGO_NAMESPACE])
                    .collect();
                assert_eq!(
                    scoped, expected,
                    "{variant}: Roles beyond allowedNamespaces"
                );
            }
        }
        if is_controller(variant) {
            assert!(granted(
                Some(ARGO_NAMESPACE),
                "coordination.k8s.io",
                "leases",
                "create"
            ));
        }
    }
}

/// The least-privilege checks find what they look for.
#[test]
fn rbac_checks_catch_excess() {
    let Some((_, objects)) = render("deploy") else {
        return;
    };
    let role = |kind: &str, ns: Option<&str>, rule: Value| {
        let mut metadata = json!({"name": "extra"});
        if let Some(ns) = ns {
            metadata["namespace"] = json!(ns);
        }
        let binding_kind = if kind == "Role" {
            "RoleBinding"
        } else {
            "ClusterRoleBinding"
        };
        vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata, "rules": [rule]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind, "metadata": metadata,
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "extra"},
                   "subjects": [{"kind": "ServiceAccount", "name": "capi2argo-sync", "namespace": ARGO_NAMESPACE}]}),
        ]
    };
    for (what, extra) in [
        (
            "a wildcard",
            role(
                "ClusterRole",
                None,
                json!({"apiGroups": [""], "resources": ["*"], "verbs": ["list"]}),
            ),
        ),
        (
            "Secrets written cluster-wide",
            role(
                "ClusterRole",
                None,
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}),
            ),
        ),
        (
            "Secrets written elsewhere",
            role(
                "Role",
                Some("fleet-eu"),
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}),
            ),
        ),
        (
            "ConfigMaps written in Argo CD's namespace",
            role(
                "Role",
                Some(ARGO_NAMESPACE),
                json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["update"]}),
            ),
        ),
        (
            "another resource read",
            role(
                "ClusterRole",
                None,
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}),
            ),
        ),
        (
            "watch",
            role(
                "ClusterRole",
                None,
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["watch"]}),
            ),
        ),
        (
            "impersonation",
            role(
                "ClusterRole",
                None,
                json!({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}),
            ),
        ),
    ] {
        let with: Vec<Value> = objects.iter().cloned().chain(extra).collect();
        assert!(!rbac_problems(&with).is_empty(), "{what} passed");
    }
}

/// A run that cannot succeed by trying again fails the Job at once, one that might is tried
/// again; runs never overlap, never pile up, and a run that hangs ends.
#[test]
fn the_cronjob_fails_visibly_and_never_overlaps() {
    let flags = fs::read_to_string(root().join("controller/src/flags.rs")).expect("flags.rs");
    for variant in ["deploy", "deploy/namespaced"] {
        let Some((_, objects)) = render(variant) else {
            return;
        };
        let cronjob = find(&objects, "CronJob", "capi2argo-sync");
        let spec = &cronjob["spec"];
        // The book's figures.
        assert_eq!(spec["schedule"], "*/5 * * * *");
        let period = 300;
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(spec["startingDeadlineSeconds"], 120);
        assert_eq!(spec["successfulJobsHistoryLimit"], 1);
        assert_eq!(spec["failedJobsHistoryLimit"], 3);
        let job = &spec["jobTemplate"]["spec"];
        assert_eq!(job["activeDeadlineSeconds"], 1200);
        assert_eq!(job["backoffLimit"], 2);
        let starting = spec["startingDeadlineSeconds"].as_i64().expect("a number");
        assert!(
            starting < period,
            "a run that could not start is skipped before the next is due"
        );
        assert_eq!(job["template"]["spec"]["restartPolicy"], "Never");
        for (code, outcome) in [(1, "FailJob"), (2, "FailJob"), (3, "retry"), (4, "retry")] {
            assert_eq!(sync::job_outcome(cronjob, code), outcome, "exit {code}");
        }
        // One run, then exit; the flags are the command's, so a one-off Job's arguments follow.
        let container = &job["template"]["spec"]["containers"][0];
        assert!(container["args"].is_null(), "{variant}");
        assert_eq!(
            container["command"][0],
            "/usr/local/bin/capi2argo-controller"
        );
        assert!(command_line(&objects).contains(&"--once".to_string()));
        // No environment entry with an empty value: the API server drops them, and every
        // `kubectl apply` then reports the CronJob configured.
        for entry in container["env"].as_array().into_iter().flatten() {
            assert!(entry["value"] != "", "{variant}: {entry}");
        }
    }
    assert!(
        flags.contains("/// One reconcile, then exit: 0 all carried out, 1 the plan had errors, 2 bad flags or\n    /// settings, 3 a read failed, 4 a request failed."),
        "the --once flag documents the exit codes the CronJob acts on"
    );
}

/// The book's kustomization for another namespace (`docs/src/unattended.md`): every namespaced
/// object and every binding's subject moves there (and `namespace:` alone would leave the
/// subjects behind).
#[test]
fn another_namespace_moves_the_objects_and_the_subjects() {
    let readme = common::chapter("unattended.md");
    let block = readme
        .split("```yaml\n")
        .map(|b| b.split("```").next().unwrap_or_default())
        .find(|b| b.contains("namespace: gitops\nresources:\n- deploy"))
        .expect("the book's kustomization for another namespace");
    if !common::available(
        "kubectl",
        &["version", "--client"],
        "the book's kustomization for another namespace was NOT rendered",
    ) {
        return;
    }
    let subjects = |objects: &[Value]| -> BTreeSet<String> {
        objects
            .iter()
            .flat_map(|o| o["subjects"].as_array().cloned().unwrap_or_default())
            .map(|s| s["namespace"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let bare = block.split("patches:").next().expect("the kustomization");
    let mut rendered = beside_deploy("namespace", &[block, bare]).into_iter();
    let (objects, without_patches) = (
        rendered.next().expect("rendered"),
        rendered.next().expect("rendered"),
    );
    for object in &objects {
        if !["ClusterRole", "ClusterRoleBinding"]
            .contains(&object["kind"].as_str().unwrap_or_default())
        {
            assert_eq!(
                object["metadata"]["namespace"], "gitops",
                "{}",
                object["kind"]
            );
        }
    }
    assert_eq!(subjects(&objects), BTreeSet::from(["gitops".to_string()]));
    assert_eq!(
        subjects(&without_patches),
        BTreeSet::from(["argocd".to_string()])
    );
}

/// Each of `kustomizations` rendered by `kubectl kustomize` beside a copy of deploy/ (as a user's
/// kustomization over this repository sits; kustomize takes relative paths only): the objects.
fn beside_deploy(name: &str, kustomizations: &[&str]) -> Vec<Vec<Value>> {
    let dir = TempDir::new("deploy", name);
    let copy = Command::new("cp")
        .arg("-R")
        .arg(root().join("deploy"))
        .arg(dir.path("deploy"))
        .output()
        .expect("cp");
    assert!(copy.status.success());
    kustomizations
        .iter()
        .map(|kustomization| {
            fs::write(dir.path("kustomization.yaml"), kustomization).expect("written");
            let out = Command::new("kubectl")
                .args(["kustomize", "."])
                .current_dir(&dir.0)
                .output()
                .expect("kubectl runs");
            assert!(out.status.success(), "{}", text(&out.stderr));
            to_json(&out.stdout)
        })
        .collect()
}

/// The book's kustomization over a variant (the YAML block whose first line is `# <dir>/…`,
/// in `page`), written next to a link to this checkout named `capi2argo` as the book lays it
/// out, with every other directory of the page (`my-once` builds on `my-controller`): the
/// scratch directory that holds them; `None` after a loud skip without kubectl.
pub fn books_directory(page: &str, dir: &str) -> Option<TempDir> {
    if !common::available(
        "kubectl",
        &["version", "--client"],
        &format!("the overlay of {page} was NOT rendered"),
    ) {
        return None;
    }
    let markdown = fs::read_to_string(root().join("docs/src").join(page)).expect("page");
    // Tests run at once: each its own scratch directory.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = TempDir::new("deploy", &format!("{dir}-{run}"));
    fs::create_dir_all(scratch.path(dir)).expect("dir");
    // Every file of the directories the page shows, each a block whose first line names it.
    for block in markdown
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
    {
        let Some(path) = block
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# my-"))
            .and_then(|l| l.split(':').next())
        else {
            continue;
        };
        let path = scratch.path(&format!("my-{path}"));
        fs::create_dir_all(path.parent().expect("a directory")).expect("dir");
        fs::write(path, block).expect("write");
    }
    assert!(
        scratch.path(&format!("{dir}/kustomization.yaml")).is_file(),
        "{page} shows {dir}/kustomization.yaml"
    );
    std::os::unix::fs::symlink(root(), scratch.path("capi2argo")).expect("symlink");
    Some(scratch)
}

/// [`books_directory`]'s kustomization rendered by `kubectl kustomize <dir>`: the objects.
pub fn books_overlay(page: &str, dir: &str) -> Option<Vec<Value>> {
    let scratch = books_directory(page, dir)?;
    let out = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(&scratch.0)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir} ({page}): {}",
        text(&out.stderr)
    );
    Some(to_json(&out.stdout))
}

/// Nothing is released yet, so the book's kustomizations point the controller's Deployment and
/// the CronJob at the user's own registry: every container of every pod they make — the
/// Deployment, the CronJob, the one-off Job — runs the pushed image, none the unpublished one.
/// Regression (issue 47): the one-off Job, added one level above the kustomization that sets
/// the image, ran the unpublished one.
#[test]
fn the_books_overlays_run_the_image_from_your_registry() {
    for (page, dir) in [
        ("controller.md", "my-controller"),
        ("controller.md", "my-once"),
        ("controller.md", "my-network"),
        ("unattended.md", "my-sync"),
    ] {
        let Some(objects) = books_overlay(page, dir) else {
            return;
        };
        let templates: Vec<&Value> = objects
            .iter()
            .filter_map(|o| match o["kind"].as_str() {
                Some("Deployment" | "Job") => Some(&o["spec"]["template"]),
                Some("CronJob") => Some(&o["spec"]["jobTemplate"]["spec"]["template"]),
                _ => None,
            })
            .collect();
        assert!(!templates.is_empty(), "{dir} makes a pod");
        for template in templates {
            for container in template["spec"]["containers"]
                .as_array()
                .expect("containers")
            {
                assert_eq!(
                    container["image"],
                    "registry.example.com/capi2argo/capi2argo-controller:v0.1.0",
                    "{dir}"
                );
                // A node that has the image (kind's `kind load`) needs no registry.
                assert_eq!(container["imagePullPolicy"], "IfNotPresent", "{dir}");
            }
        }
    }
}

/// Regression (issue 47): the book's kustomization replaced the controller's settings, so the
/// shipped `readApplications: true` went with it and `maxApplicationDeletes` saw nothing. Its
/// settings now merge: the one it gives, and every one deploy/controller ships; the Deployment
/// mounts that ConfigMap.
#[test]
fn the_books_overlay_keeps_the_shipped_settings_beside_its_own() {
    let Some(objects) = books_overlay("controller.md", "my-controller") else {
        return;
    };
    let settings: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            o["kind"] == "ConfigMap"
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("capi2argo-controller-settings"))
        })
        .collect();
    assert_eq!(settings.len(), 1, "one settings ConfigMap");
    let data = &settings[0]["data"];
    assert_eq!(data["nameFrom"], "kubeconfig");
    let Some((_, shipped)) = render("deploy/controller") else {
        return;
    };
    let shipped = shipped
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the shipped settings");
    for (key, value) in shipped["data"].as_object().expect("settings") {
        assert_eq!(&data[key], value, "{key} as shipped");
    }
    assert_eq!(data["readApplications"], "true");
    let name = settings[0]["metadata"]["name"].as_str().expect("name");
    let mounted = serde_json::to_string(&pod_template(&objects)["spec"]["volumes"]).expect("JSON");
    assert!(
        mounted.contains(name),
        "the Deployment mounts {name}: {mounted}"
    );
}

/// Regression (issue 47): a controller-only install had no one-off run for a deliberate mass
/// change (the book's `create job --from=cronjob` needs the CronJob). The book's `my-once`
/// overlay over the user's install, applied with its selector, makes one Job: the install's
/// image, ServiceAccount and settings, `--once` and the overrides, Pod Security `restricted`.
#[test]
fn the_books_one_off_run_is_one_job_of_the_installs_own() {
    let Some(objects) = books_overlay("controller.md", "my-once") else {
        return;
    };
    let applied: Vec<&Value> = objects
        .iter()
        .filter(|o| o["metadata"]["labels"]["app.kubernetes.io/component"] == "once")
        .collect();
    assert_eq!(applied.len(), 1, "the selector applies the Job alone");
    let job = applied[0];
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["namespace"], ARGO_NAMESPACE);
    let template = &job["spec"]["template"];
    let spec = &template["spec"];
    let deployment = pod_template(&objects);
    assert_eq!(
        spec["serviceAccountName"],
        deployment["spec"]["serviceAccountName"]
    );
    assert_eq!(
        spec["volumes"], deployment["spec"]["volumes"],
        "the install's own settings ConfigMap"
    );
    // Regression (issue 47): over the shipped install, the Job mounted the shipped settings,
    // not the user's (which the book's Upgrade then deletes). It mounts my-controller's.
    let mounted = &spec["volumes"][0]["configMap"]["name"];
    let settings = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && &o["metadata"]["name"] == mounted)
        .expect("the mounted settings are installed");
    assert_eq!(
        settings["data"]["nameFrom"], "kubeconfig",
        "my-controller's"
    );
    assert_eq!(
        spec["containers"][0]["image"],
        deployment["spec"]["containers"][0]["image"]
    );
    assert_eq!(
        spec["containers"][0]["args"],
        json!([
            "--config=/etc/capi2argo",
            "--once",
            "--set=maxPrune=5",
            "--set=maxApplicationDeletes=5"
        ])
    );
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let violations = pod_security::restricted_violations(&template["metadata"], spec);
    assert!(violations.is_empty(), "{violations:#?}");
}

/// What a plan over the fleet finds the installed controller by (`capi2argo plan` takes its
/// settings: docs/src/running.md): the settings ConfigMap and the Deployment carry the labels
/// the core names, in every controller variant.
#[test]
fn the_installed_settings_carry_the_labels_a_plan_finds_them_by() {
    use capi2argo_core::well_known::{CONTROLLER_LABEL, SETTINGS_LABELS};
    for variant in ["deploy/controller", "deploy/controller/namespaced"] {
        let Some((_, objects)) = render(variant) else {
            return;
        };
        let settings = objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap")
            .expect("the settings ConfigMap");
        for (key, value) in SETTINGS_LABELS {
            assert_eq!(settings["metadata"]["labels"][key], value, "{variant}");
        }
        let deployment = find(&objects, "Deployment", "capi2argo-controller");
        assert_eq!(
            deployment["metadata"]["labels"][CONTROLLER_LABEL.0], CONTROLLER_LABEL.1,
            "{variant}"
        );
        let mounted = &pod_template(&objects)["spec"]["volumes"][0]["configMap"]["name"];
        assert_eq!(mounted, &settings["metadata"]["name"], "{variant}");
    }
}
