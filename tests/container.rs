//! The function image as a kustomize `container:` function, the form most kustomize users run:
//! `kubectl kustomize --enable-alpha-plugins` (kubectl's built-in kustomize) with a test-only
//! `docker` first on PATH that runs the built binary for the image and records its arguments.

use crate::common;
use crate::common::TempDir;

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

const IMAGE: &str = "ghcr.io/capi2argo/capi2argo:v0.1.0";
const KUBEADM: &str = include_str!("fixtures/providers/kubeadm.yaml");

fn repo_file(rel: &str) -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect(rel)
}

/// `docker` for `docker run [flags] IMAGE`: writes its arguments to `args_log`, one per line;
/// for IMAGE, runs the built binary on the same stdin and stdout; anything else fails like
/// docker does for an image it cannot find.
fn docker_stand_in(bin: &Path, args_log: &Path) {
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$@" >'{log}'
[ "$1" = run ] || {{ echo "docker stand-in: only 'run' is supported" >&2; exit 125; }}
for arg; do
  [ "$arg" = '{IMAGE}' ] && exec '{binary}'
done
echo "docker stand-in: Unable to find image in: $*" >&2
exit 125
"#,
        log = args_log.display(),
        binary = env!("CARGO_BIN_EXE_capi2argo"),
    );
    let path = bin.join("docker");
    fs::write(&path, script).expect("stand-in written");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("stand-in executable");
}

/// The value of `--flag VALUE` or `--flag=VALUE`.
fn flag<'a>(args: &'a [&'a str], name: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, arg)| {
        if *arg == name {
            args.get(i + 1).copied()
        } else {
            arg.strip_prefix(name)?.strip_prefix('=')
        }
    })
}

fn kubectl_available() -> bool {
    common::available(
        "kubectl",
        &["version", "--client"],
        "the container function was NOT run.",
    )
}

#[test]
fn kubectl_kustomize_runs_the_image_offline_as_non_root() {
    if !kubectl_available() {
        return;
    }
    let dir = TempDir::new("container", "build");
    let bin = dir.0.join("bin");
    let pkg = dir.0.join("pkg");
    fs::create_dir_all(&bin).expect("bin");
    fs::create_dir_all(&pkg).expect("pkg");
    let args_log = dir.0.join("docker-args");
    docker_stand_in(&bin, &args_log);
    fs::write(pkg.join("capi.yaml"), KUBEADM).expect("capi.yaml");
    fs::write(
        pkg.join("capi2argo.yaml"),
        format!(
            "apiVersion: fn.capi2argo.dev/v1alpha1
kind: Capi2Argo
metadata:
  name: capi2argo
  annotations:
    config.kubernetes.io/function: |
      container:
        image: {IMAGE}
spec:
  namespacedNames: true
"
        ),
    )
    .expect("capi2argo.yaml");
    fs::write(
        pkg.join("kustomization.yaml"),
        "resources:\n- capi.yaml\ntransformers:\n- capi2argo.yaml\n",
    )
    .expect("kustomization.yaml");

    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("kubectl")
        .args(["kustomize", "--enable-alpha-plugins"])
        .arg(&pkg)
        .env("PATH", path)
        .output()
        .expect("kubectl runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(
        output.status.success(),
        "kubectl kustomize failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let docs = capi2argo::yaml::parse_stream(&stdout, &capi2argo::Limits::default())
        .expect("the build is YAML");
    let argo = docs
        .iter()
        .find(|d| {
            d.root.path(&["metadata", "name"]).and_then(|n| n.as_str())
                == Some("cluster-fleet-eu-prod-eu-1")
        })
        .unwrap_or_else(|| panic!("no Argo CD Secret in:\n{stdout}"));
    let label = ["metadata", "labels", "argocd.argoproj.io/secret-type"];
    assert_eq!(
        argo.root.path(&label).and_then(|n| n.as_str()),
        Some("cluster")
    );

    let logged = fs::read_to_string(&args_log).expect("the stand-in recorded its arguments");
    let args: Vec<&str> = logged.lines().collect();
    assert_eq!(args.first(), Some(&"run"), "{args:?}");
    assert_eq!(
        args.last(),
        Some(&IMAGE),
        "no arguments after the image: {args:?}"
    );
    assert_eq!(flag(&args, "--network"), Some("none"), "{args:?}");
    let user = flag(&args, "--user").unwrap_or_else(|| panic!("no --user in {args:?}"));
    let uid = user.split(':').next().unwrap_or(user);
    assert!(uid != "root" && uid != "0", "runs as root: --user {user}");
}

/// kustomize (and kpt) pass `--user nobody`, which Docker looks up in the image's /etc/passwd: the
/// final stage must have one (distroless has; `scratch` has not), and must not default to root.
#[test]
fn the_image_knows_the_user_it_is_run_as() {
    let dockerfile = repo_file("kpt-fn/Dockerfile");
    let last = |keyword: &str| {
        dockerfile
            .lines()
            .rev()
            .find(|l| l.starts_with(keyword))
            .unwrap_or_else(|| panic!("no {keyword} in kpt-fn/Dockerfile"))
            .to_owned()
    };
    assert!(
        last("FROM ").starts_with("FROM gcr.io/distroless/static"),
        "final stage: {}",
        last("FROM ")
    );
    assert_eq!(last("USER "), "USER 65532:65532");
    assert_eq!(
        last("ENTRYPOINT "),
        r#"ENTRYPOINT ["/usr/local/bin/capi2argo"]"#
    );
    assert!(
        repo_file("kpt-fn/metadata.yaml").contains(&format!("\nimage: {IMAGE}\n")),
        "kpt-fn/metadata.yaml names another image than the one tested"
    );
}
