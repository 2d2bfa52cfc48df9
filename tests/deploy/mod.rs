//! `deploy/`, capi2argo unattended in the management cluster: its manifests (rendered by
//! `kubectl kustomize` and, when `$KUSTOMIZE` is set, standalone kustomize, which must agree)
//! validated against the Kubernetes schemas offline, its pod against Pod Security's
//! `restricted` profile, its RBAC for least privilege, and the CronJob's failure handling; the
//! sync script itself runs in its image in `sync`.
//!
//! No Kubernetes API server can be had where these tests run: what needs one runs against the
//! recording stand-in (tests/kube/apiserver.py).

mod pod_security;
mod sync;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{self, TempDir};

/// The two installable variants.
pub const VARIANTS: &[&str] = &["deploy", "deploy/namespaced"];
/// Where the CronJob runs: Argo CD's namespace.
pub const ARGO_NAMESPACE: &str = "argocd";
/// The sync Job's ServiceAccount.
pub const SERVICE_ACCOUNT: &str = "capi2argo-sync";
/// The Kubernetes releases whose schemas every manifest is checked against: from 1.29 (the
/// first whose Job schema takes a podFailurePolicy rule with `onExitCodes` alone) to 1.37, the
/// newest kubernetes-validate 1.37.0 carries.
const SCHEMA_VERSIONS: &[&str] = &[
    "1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0",
];
/// Verbs that change something.
const WRITES: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A YAML stream (or `kubectl get -o yaml` List) as JSON objects, read by capi2argo's own
/// reader.
pub fn to_json(yaml: &[u8]) -> Vec<Value> {
    let json = capi2argo::items_json(yaml, &capi2argo::Limits::default()).expect("YAML reads");
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

/// The CronJob's pod template.
pub fn pod_template(objects: &[Value]) -> &Value {
    &find(objects, "CronJob", "capi2argo-sync")["spec"]["jobTemplate"]["spec"]["template"]
}

/// The sync container's value of the environment variable `name`.
pub fn env(objects: &[Value], name: &str) -> Option<String> {
    pod_template(objects)["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| e["value"].as_str().unwrap_or_default().to_string())
}

/// The RBAC rules the sync ServiceAccount gets from `objects`, each with the namespace it holds
/// in (`null`: every namespace), as the stand-in takes them: a RoleBinding grants its Role's
/// (or ClusterRole's) rules in its namespace, a ClusterRoleBinding its ClusterRole's everywhere.
pub fn rules_for(objects: &[Value]) -> Vec<Value> {
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
                    && s["name"] == SERVICE_ACCOUNT
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

/// What breaks least privilege in `objects`, empty when nothing does: wildcards, verbs that
/// grant more rights, any write outside Argo CD's namespace or to anything but Secrets, any
/// cluster-wide right but reading Secrets and Clusters.
fn rbac_problems(objects: &[Value]) -> Vec<String> {
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
                || subject["name"] != SERVICE_ACCOUNT
                || subject["namespace"] != ARGO_NAMESPACE
            {
                problems.push(format!(
                    "{} {} binds {subject} besides the sync ServiceAccount",
                    binding["kind"], binding["metadata"]["name"]
                ));
            }
        }
    }
    for rule in rules_for(objects) {
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let resources: Vec<&str> = rule["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let groups: Vec<&str> = rule["apiGroups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let writes: Vec<&&str> = verbs.iter().filter(|v| WRITES.contains(v)).collect();
        let scope = match rule["namespace"].as_str() {
            Some(ns) => format!("in {ns}"),
            None => "cluster-wide".to_string(),
        };
        if !writes.is_empty()
            && (rule["namespace"] != ARGO_NAMESPACE || resources != ["secrets"] || groups != [""])
        {
            problems.push(format!(
                "{writes:?} on {groups:?}/{resources:?} {scope}: writes go to Secrets in {ARGO_NAMESPACE} only"
            ));
        }
        for verb in &verbs {
            if !["get", "list"].contains(verb) && !WRITES.contains(verb) {
                problems.push(format!("the verb {verb} on {resources:?} {scope}"));
            }
        }
        for (group, resource) in groups
            .iter()
            .flat_map(|g| resources.iter().map(move |r| (*g, *r)))
        {
            if !matches!(
                (group, resource),
                ("", "secrets") | ("cluster.x-k8s.io", "clusters")
            ) {
                problems.push(format!(
                    "{group}/{resource} {scope}: the sync reads Secrets and Clusters only"
                ));
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
        // Beyond the profile: a read-only root, /tmp in memory, bounded resources, and the
        // token mounted into this pod only.
        let container = &spec["containers"][0];
        assert_eq!(spec["containers"].as_array().map(Vec::len), Some(1));
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(spec["securityContext"]["runAsUser"], 65532);
        // The book's figures.
        assert_eq!(
            container["resources"],
            json!({"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}})
        );
        let tmp = spec["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|v| v["name"] == "tmp")
            .expect("a tmp volume");
        assert_eq!(
            tmp["emptyDir"],
            json!({"medium": "Memory", "sizeLimit": "256Mi"})
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
        assert_eq!(
            mounts,
            BTreeSet::from([("/etc/capi2argo", true), ("/tmp", false)])
        );
        assert_eq!(
            find(&objects, "ServiceAccount", SERVICE_ACCOUNT)["automountServiceAccountToken"],
            false
        );
        assert_eq!(spec["automountServiceAccountToken"], true);
        assert_eq!(spec["serviceAccountName"], SERVICE_ACCOUNT);
    }
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
            "/spec/volumes/1",
            json!({"name": "tmp", "hostPath": {"path": "/tmp"}}),
        ),
        (
            "restrictedVolumes",
            "/spec/volumes/1",
            json!({"name": "tmp", "nfs": {"server": "x", "path": "/"}}),
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
        for verb in ["list", "create", "update", "delete"] {
            assert!(
                granted(Some(ARGO_NAMESPACE), "", "secrets", verb),
                "{variant}: {verb}"
            );
        }
        let namespaces = env(&objects, "NAMESPACES").unwrap_or_default();
        if variant == &"deploy" {
            assert_eq!(
                namespaces, "",
                "the cluster-wide variant reads every namespace"
            );
            assert!(granted(None, "", "secrets", "list"));
            assert!(granted(None, "cluster.x-k8s.io", "clusters", "list"));
        } else {
            // No ClusterRole at all; a Role in each namespace the script reads, and nowhere else.
            assert!(
                !objects
                    .iter()
                    .any(|o| o["kind"] == "ClusterRole" || o["kind"] == "ClusterRoleBinding"),
                "{variant} has cluster-wide RBAC"
            );
            assert!(rules.iter().all(|r| !r["namespace"].is_null()));
            let read: BTreeSet<&str> = namespaces.split(',').collect();
            assert!(!read.is_empty() && !read.contains(""));
            for ns in &read {
                assert!(granted(Some(ns), "", "secrets", "list"), "{ns}");
                assert!(
                    granted(Some(ns), "cluster.x-k8s.io", "clusters", "list"),
                    "{ns}"
                );
            }
            let scoped: BTreeSet<&str> = rules
                .iter()
                .filter_map(|r| r["namespace"].as_str())
                .collect();
            let expected: BTreeSet<&str> = read.iter().copied().chain([ARGO_NAMESPACE]).collect();
            assert_eq!(scoped, expected, "{variant}: Roles beyond NAMESPACES");
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
                   "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ARGO_NAMESPACE}]}),
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
    let script = fs::read_to_string(root().join("deploy/image/sync.sh")).expect("sync.sh");
    for variant in VARIANTS {
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
    }
    assert!(
        script.contains("# Exit codes (the CronJob's podFailurePolicy fails the Job at once on 1 and 2, and retries 3 and\n# 4"),
        "sync.sh documents the exit codes the CronJob acts on"
    );
}

/// `make deploy-image` puts kubectl and BusyBox into an image without libc: it refuses a
/// binary that is not statically linked, before building anything.
#[test]
fn the_deploy_image_takes_static_binaries_only() {
    if !common::available(
        "make",
        &["--version"],
        "the deploy image's input check was NOT run",
    ) || !common::available(
        "file",
        &["--version"],
        "the deploy image's input check was NOT run",
    ) {
        return;
    }
    let check = |kubectl: &Path| {
        Command::new("make")
            .args(["--no-print-directory", "deploy-image-inputs"])
            .arg(format!("KUBECTL={}", kubectl.display()))
            .current_dir(root())
            .output()
            .expect("make runs")
    };
    // This test's own binary links glibc.
    let dynamic = std::env::current_exe().expect("the test binary");
    let out = check(&dynamic);
    assert!(!out.status.success());
    assert!(
        text(&out.stdout).contains("is not statically linked")
            && text(&out.stdout).contains("the image has no libc"),
        "{}",
        text(&out.stdout)
    );
    // The static musl build of capi2argo (`make musl`, which `make test` runs first).
    let fully_static = root().join("target/x86_64-unknown-linux-musl/release/capi2argo");
    if !fully_static.is_file() {
        common::skip(
            "no static musl build of capi2argo (make musl), so a static binary was NOT shown to pass the check",
        );
        return;
    }
    let out = check(&fully_static);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
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
    let dir = TempDir::new("deploy", "namespace");
    let copy = Command::new("cp")
        .arg("-R")
        .arg(root().join("deploy"))
        .arg(dir.path("deploy"))
        .output()
        .expect("cp");
    assert!(copy.status.success());
    let render = |kustomization: &str| {
        fs::write(dir.path("kustomization.yaml"), kustomization).expect("written");
        let out = Command::new("kubectl")
            .args(["kustomize", "."])
            .current_dir(&dir.0)
            .output()
            .expect("kubectl runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        to_json(&out.stdout)
    };
    let subjects = |objects: &[Value]| -> BTreeSet<String> {
        objects
            .iter()
            .flat_map(|o| o["subjects"].as_array().cloned().unwrap_or_default())
            .map(|s| s["namespace"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let objects = render(block);
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
    let bare = block.split("patches:").next().expect("the kustomization");
    assert_eq!(
        subjects(&render(bare)),
        BTreeSet::from(["argocd".to_string()])
    );
}
