//! The Argo CD config management plugin in `kpt-fn/argocd-cmp`: `generate.sh` run the way
//! argocd-cmp-server runs it, and the repo-server sidecar patch built by `kubectl kustomize`.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use capi2argo_yaml::{Document, Node};

const KUBEADM: &str = include_str!("fixtures/providers/kubeadm.yaml");
const EKS: &str = include_str!("fixtures/providers/eks.yaml");

const CONFIG: &str = "apiVersion: fn.capi2argo.dev/v1alpha1
kind: Capi2Argo
metadata:
  name: capi2argo
spec:
  project: fleet
";

/// A directory removed when the test ends, whatever the outcome.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("capi2argo-cmp-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir created");
        TempDir(dir)
    }

    /// Writes `content` to `rel`, creating its directories.
    fn write(&self, rel: &str, content: &str) {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("dir created");
        fs::write(path, content).expect("file written");
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kpt-fn/argocd-cmp")
}

/// An application directory as a repository would hold it: two clusters' CAPI Secrets in one
/// directory per namespace, an unrelated manifest, the plugin's `capi2argo.yaml`, and a hidden
/// directory whose YAML must not be read.
fn app(name: &str, kubeadm: &str) -> TempDir {
    let app = TempDir::new(name);
    app.write("fleet-eu/kubeadm.yaml", kubeadm);
    app.write("aws-prod/eks.yml", EKS);
    app.write(
        "apps/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unrelated\n",
    );
    app.write("capi2argo.yaml", CONFIG);
    app.write(".github/workflow.yaml", "not: [valid\n");
    app
}

/// Runs `generate.sh` as argocd-cmp-server does: executed in the application directory, with the
/// build environment, the Application's plugin env as `ARGOCD_ENV_*`, and the sidecar's PATH
/// (here the built binary's directory first). Its temporary files go to `tmp`.
fn generate(app: &TempDir, tmp: &TempDir, plugin_env: &[(&str, &str)]) -> Output {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_capi2argo"))
        .parent()
        .expect("binary directory");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(plugin_dir().join("generate.sh"));
    command
        .current_dir(&app.0)
        .env_clear()
        .env("PATH", path)
        .env("TMPDIR", &tmp.0)
        .env("ARGOCD_APP_NAME", "fleet-clusters")
        .env("ARGOCD_APP_NAMESPACE", "argocd")
        .env(
            "ARGOCD_APP_REVISION",
            "0b4c1b1e5e5e3f1a6c1d6a1f8d9e2c3b4a5f6e7d",
        )
        .env("ARGOCD_APP_SOURCE_PATH", "clusters")
        .env(
            "ARGOCD_APP_SOURCE_REPO_URL",
            "https://git.example.com/platform/fleet.git",
        )
        .env("ARGOCD_APP_SOURCE_TARGET_REVISION", "main");
    for (name, value) in plugin_env {
        command.env(format!("ARGOCD_ENV_{name}"), value);
    }
    command.output().expect("generate.sh runs")
}

fn documents(stream: &str) -> Vec<Document<'_>> {
    capi2argo_yaml::parse_stream(stream, &capi2argo_core::Limits::default())
        .expect("the output is a YAML stream")
}

fn text<'a>(node: &'a Node, path: &[&str]) -> Option<&'a str> {
    node.path(path)
        .and_then(|n| n.scalar())
        .map(|s| s.text.as_ref())
}

#[test]
fn prints_exactly_the_argo_cd_secrets() {
    let app = app("ok", KUBEADM);
    let tmp = TempDir::new("ok-tmp");
    let output = generate(&app, &tmp, &[("NAMESPACED_NAMES", "true")]);
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {}:\n{stderr}", output.status);

    let docs = documents(&stdout);
    let mut names: Vec<_> = docs
        .iter()
        .map(|d| {
            (
                text(&d.root, &["kind"]).unwrap_or("?"),
                text(&d.root, &["metadata", "namespace"]).unwrap_or("?"),
                text(&d.root, &["metadata", "name"]).unwrap_or("?"),
            )
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("Secret", "argocd", "cluster-aws-prod-payments-eks"),
            ("Secret", "argocd", "cluster-fleet-eu-prod-eu-1"),
        ],
        "stdout:\n{stdout}"
    );
    for doc in &docs {
        let labels = ["metadata", "labels", "argocd.argoproj.io/secret-type"];
        assert_eq!(text(&doc.root, &labels), Some("cluster"));
        // capi2argo.yaml is the functionConfig; the plugin env (namespacedNames) is applied on top.
        assert_eq!(text(&doc.root, &["stringData", "project"]), Some("fleet"));
        let name = text(&doc.root, &["stringData", "name"]).expect("Argo CD name");
        assert!(
            name == "fleet-eu-prod-eu-1" || name == "aws-prod-payments-eks",
            "{name}"
        );
    }
    let left: Vec<_> = fs::read_dir(&tmp.0).expect("TMPDIR").collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

#[test]
fn a_broken_kubeconfig_fails_naming_the_secret() {
    let value = KUBEADM
        .lines()
        .find_map(|l| l.strip_prefix("  value: "))
        .expect("the kubeconfig Secret's data.value");
    let broken = KUBEADM.replacen(value, &B64.encode("apiVersion: v1\nclusters: [\n"), 1);
    let app = app("broken", &broken);
    let tmp = TempDir::new("broken-tmp");
    let output = generate(&app, &tmp, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(
        output.stdout.is_empty(),
        "a failed generation printed manifests:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        stderr.contains("fleet-eu/prod-eu-1-kubeconfig") && stderr.contains("data.value"),
        "stderr does not name the Secret and field:\n{stderr}"
    );
}

#[test]
fn a_misspelt_plugin_env_setting_fails() {
    let app = app("typo", KUBEADM);
    let tmp = TempDir::new("typo-tmp");
    let output = generate(&app, &tmp, &[("NAMESPACD_NAMES", "true")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(output.stdout.is_empty());
    assert!(
        stderr.contains("namespacdNames") && stderr.contains("did you mean namespacedNames"),
        "{stderr}"
    );
}

/// Argo CD prunes what the plugin stops generating: a directory that lost its Secrets (here only
/// the unrelated manifest and the config are left) must fail, not empty Argo CD, unless the
/// Application says the clusters are really gone.
#[test]
fn a_generation_with_no_cluster_left_fails_unless_allowed() {
    let app = TempDir::new("empty");
    app.write(
        "apps/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unrelated\n",
    );
    app.write("capi2argo.yaml", CONFIG);
    let tmp = TempDir::new("empty-tmp");
    let output = generate(&app, &tmp, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(output.stdout.is_empty());
    assert!(
        stderr.contains("no Argo CD cluster Secret generated")
            && stderr.contains("ARGOCD_ENV_ALLOW_EMPTY=true"),
        "{stderr}"
    );
    let output = generate(&app, &tmp, &[("ALLOW_EMPTY", "true")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr:\n{stderr}");
    assert!(output.stdout.is_empty());
}

/// The image runs the script where plugin.yaml says, and has plugin.yaml where argocd-cmp-server
/// reads it.
#[test]
fn the_image_matches_plugin_yaml() {
    let dockerfile = fs::read_to_string(plugin_dir().join("Dockerfile")).expect("Dockerfile");
    let patch = fs::read_to_string(plugin_dir().join("patch.yaml")).expect("patch.yaml");
    // Each plugin config: the script its generate command runs is copied there, the config sits
    // where argocd-cmp-server reads it, and the patch points a sidecar at that directory.
    for (config, script, dir, sidecar_command) in [
        (
            "plugin.yaml",
            "generate.sh",
            "/home/argocd/cmp-server/config",
            "[/var/run/argocd/argocd-cmp-server]",
        ),
        (
            "plugin-kpt.yaml",
            "kpt-render.sh",
            "/home/argocd/cmp-server/kpt",
            "[/var/run/argocd/argocd-cmp-server, --config-dir-path, /home/argocd/cmp-server/kpt]",
        ),
    ] {
        let plugin = fs::read_to_string(plugin_dir().join(config)).expect(config);
        let docs = documents(&plugin);
        let command = docs[0]
            .root
            .path(&["spec", "generate", "command"])
            .and_then(|c| c.as_seq())
            .expect("spec.generate.command");
        let command = command[0].as_str().expect("a path");
        for copy in [
            format!("{script} {command}"),
            format!("{config} {dir}/plugin.yaml"),
        ] {
            assert!(
                dockerfile
                    .lines()
                    .any(|l| l.starts_with("COPY") && l.ends_with(&copy)),
                "no `COPY … {copy}` in the Dockerfile"
            );
        }
        assert!(
            patch.contains(&format!("command: {sidecar_command}")),
            "no sidecar runs {config}"
        );
    }
}

fn kubectl_available() -> bool {
    common::available(
        "kubectl",
        &["version", "--client"],
        "kpt-fn/argocd-cmp was NOT built.",
    )
}

fn named<'a, 'n>(list: &'a [Node<'n>], name: &str) -> Option<&'a Node<'n>> {
    list.iter().find(|n| text(n, &["name"]) == Some(name))
}

#[test]
fn the_kustomization_adds_a_locked_down_sidecar() {
    if !kubectl_available() {
        return;
    }
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(plugin_dir())
        .output()
        .expect("kubectl runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(
        output.status.success(),
        "kubectl kustomize failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let docs = documents(&stdout);
    assert_eq!(docs.len(), 1, "one Deployment:\n{stdout}");
    let pod = docs[0]
        .root
        .path(&["spec", "template", "spec"])
        .expect("pod spec");
    let containers = pod
        .get("containers")
        .and_then(|c| c.as_seq())
        .expect("containers");
    assert!(
        named(containers, "argocd-repo-server").is_some(),
        "repo-server kept"
    );
    let sidecar = named(containers, "capi2argo").expect("the capi2argo sidecar");

    let security = sidecar.get("securityContext").expect("securityContext");
    assert_eq!(text(security, &["runAsUser"]), Some("999"));
    assert_eq!(
        security
            .path(&["readOnlyRootFilesystem"])
            .and_then(Node::as_bool),
        Some(true)
    );
    assert_eq!(
        security
            .path(&["allowPrivilegeEscalation"])
            .and_then(Node::as_bool),
        Some(false)
    );
    let drop = security
        .path(&["capabilities", "drop"])
        .and_then(|d| d.as_seq())
        .expect("drop");
    assert!(drop.iter().any(|c| c.as_str() == Some("ALL")));
    let command = sidecar
        .get("command")
        .and_then(|c| c.as_seq())
        .expect("command");
    assert_eq!(
        command[0].as_str(),
        Some("/var/run/argocd/argocd-cmp-server")
    );

    let mounts = sidecar
        .get("volumeMounts")
        .and_then(|m| m.as_seq())
        .expect("volumeMounts");
    for (volume, path) in [
        ("var-files", "/var/run/argocd"),
        ("plugins", "/home/argocd/cmp-server/plugins"),
        ("cmp-tmp", "/tmp"),
    ] {
        let mount = named(mounts, volume).unwrap_or_else(|| panic!("{volume} mounted"));
        assert_eq!(text(mount, &["mountPath"]), Some(path));
    }
    let volumes = pod
        .get("volumes")
        .and_then(|v| v.as_seq())
        .expect("volumes");
    let tmp = named(volumes, "cmp-tmp").expect("the cmp-tmp volume");
    assert!(tmp.get("emptyDir").is_some(), "cmp-tmp is an emptyDir");
    assert!(named(volumes, "var-files").is_some() && named(volumes, "plugins").is_some());
}

/// With `seal: sealedSecrets` (the certificate in capi2argo.yaml, the setting as plugin env),
/// the plugin prints the SealedSecrets capi2argo wrote, one per cluster, and nothing plain.
#[test]
fn a_sealed_generation_prints_the_sealed_secrets() {
    let app = app("sealed", KUBEADM);
    let pem = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sealing/controller.crt"),
    )
    .expect("certificate");
    let indented: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    app.write(
        "capi2argo.yaml",
        &format!("{CONFIG}  sealingCertificate: |\n{indented}"),
    );
    let tmp = TempDir::new("sealed-tmp");
    let out = generate(&app, &tmp, &[("SEAL", "sealedSecrets")]);
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds: Vec<String> = documents(&stdout)
        .iter()
        .map(|d| text(&d.root, &["kind"]).unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds, ["SealedSecret", "SealedSecret"], "{stdout}");
    assert!(!stdout.contains("stringData"), "nothing plain: {stdout}");
}
