//! The container images, run by a real engine: the function image under `kpt fn eval --image`,
//! `kpt fn render` with `image:` in a Kptfile, standalone kustomize 4.5.4 and `kubectl kustomize`
//! with a `container:` function (each compared byte for byte with the native binary), and the
//! Argo CD plugin image running both of its plugins as argocd-cmp-server would.
//!
//! The engine is the one `docker` reaches (DOCKER_HOST); `make test` starts none itself, `.ci/run`
//! does. Without an engine the tests say loudly that they are skipped. With one, the images must
//! exist: `make test` builds them first (`make image cmp-image`), offline.

use crate::common::{self, TempDir, ok, root, text};

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const IMAGE: &str = "ghcr.io/capi2argo/capi2argo:v0.1.0";
const CMP_IMAGE: &str = "ghcr.io/capi2argo/argocd-cmp:v0.1.0";
const KUBEADM: &str = include_str!("fixtures/providers/kubeadm.yaml");

/// Whether an engine answers and the images are there; `false` (after a loud message) when no
/// engine can be reached. An engine without the images is a failure: `make image` was skipped.
fn engine_with_images() -> bool {
    let reachable = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !reachable {
        common::skip(
            "no container engine answers `docker version` (DOCKER_HOST unset or no daemon), so the images were NOT run",
        );
        return false;
    }
    for image in [IMAGE, CMP_IMAGE] {
        let found = Command::new("docker")
            .args(["image", "inspect", image])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{image} is not in the engine: `make image cmp-image` builds it (make test does, first)"
        );
    }
    true
}

fn command(program: &str) -> Command {
    common::with_binary_on_path(program)
}

fn sh(dir: &Path, script: &str) -> Output {
    command("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .expect("sh runs")
}

/// Every file below `dir`, by relative path.
pub(crate) fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in fs::read_dir(dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .expect("below")
                    .display()
                    .to_string();
                out.push((rel, fs::read(&path).expect("file")));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A kpt package holding the kubeadm fixture, as the README's `my-package`.
pub(crate) fn package(dir: &Path) {
    fs::create_dir_all(dir).expect("package dir");
    fs::write(
        dir.join("Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: my-package\n",
    )
    .expect("Kptfile");
    fs::write(dir.join("capi-secrets.yaml"), KUBEADM).expect("fixture");
}

fn kpt_available() -> bool {
    common::available("kpt", &["version"], "the function image was NOT run by kpt")
}

/// The README's command, as written, against the same package run with `--exec`.
#[test]
fn kpt_fn_eval_image_as_written() {
    if !kpt_available() || !engine_with_images() {
        return;
    }
    let dir = TempDir::new("container", "kpt-eval");
    package(&dir.path("my-package"));
    package(&dir.path("native/my-package"));
    let image = sh(
        &dir.0,
        "kpt fn eval my-package --image ghcr.io/capi2argo/capi2argo:v0.1.0 --image-pull-policy never -- namespacedNames=true",
    );
    ok(&image, "kpt fn eval --image");
    let native = sh(
        &dir.path("native"),
        "kpt fn eval my-package --exec capi2argo -- namespacedNames=true",
    );
    ok(&native, "kpt fn eval --exec");
    let written = files(&dir.path("my-package"));
    assert!(
        written
            .iter()
            .any(|(p, _)| p == "argocd/cluster-fleet-eu-prod-eu-1.yaml"),
        "{:?}",
        written.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert_eq!(written, files(&dir.path("native/my-package")));
}

/// `image:` in a Kptfile pipeline: every Kptfile-examples package renders to its snapshot.
#[test]
fn kpt_fn_render_with_the_image_in_the_kptfile() {
    if !kpt_available() || !engine_with_images() {
        return;
    }
    let dir = TempDir::new("container", "kpt-render");
    for name in ["kcp-cluster", "layered-fleet"] {
        let from = root().join("Kptfile-examples").join(name);
        let pkg = dir.path(name);
        let copy = Command::new("cp")
            .args([
                "-R",
                from.to_str().expect("utf-8"),
                pkg.to_str().expect("utf-8"),
            ])
            .output()
            .expect("cp");
        ok(&copy, "copy");
        fs::remove_dir_all(pkg.join(".expected")).expect("snapshot removed from the copy");
        let kptfile = pkg.join("Kptfile");
        let text = fs::read_to_string(&kptfile).expect("Kptfile");
        fs::write(
            &kptfile,
            text.replace("exec: capi2argo", &format!("image: {IMAGE}")),
        )
        .expect("Kptfile written");
        let out = command("kpt")
            .args([
                "fn",
                "render",
                pkg.to_str().expect("utf-8"),
                "--image-pull-policy",
                "never",
            ])
            .output()
            .expect("kpt runs");
        ok(&out, "kpt fn render");
        let mut rendered = files(&pkg);
        rendered.retain(|(p, _)| p != "Kptfile");
        let mut expected = files(&from.join(".expected"));
        expected.retain(|(p, _)| p != "Kptfile");
        assert_eq!(rendered, expected, "{name}");
    }
}

/// A kustomization running the image as a `container:` transformer, and the same with the
/// native binary as an `exec:` one.
fn kustomization(dir: &Path, function: &str) {
    fs::create_dir_all(dir).expect("dir");
    fs::write(dir.join("capi.yaml"), KUBEADM).expect("capi.yaml");
    fs::write(
        dir.join("fn.yaml"),
        format!(
            "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: capi2argo\n  annotations:\n    config.kubernetes.io/function: |\n{function}spec:\n  namespacedNames: true\n"
        ),
    )
    .expect("fn.yaml");
    fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n- capi.yaml\ntransformers:\n- fn.yaml\n",
    )
    .expect("kustomization.yaml");
}

fn kustomize_outputs(run: impl Fn(&Path, bool) -> Output) {
    let dir = TempDir::new("container", "kustomize");
    let image_dir = dir.path("image");
    kustomization(
        &image_dir,
        &format!("      container:\n        image: {IMAGE}\n"),
    );
    let native_dir = dir.path("native");
    kustomization(&native_dir, "      exec:\n        path: ./capi2argo\n");
    fs::copy(
        env!("CARGO_BIN_EXE_capi2argo"),
        native_dir.join("capi2argo"),
    )
    .expect("binary copied");
    let image = run(&image_dir, false);
    ok(&image, "kustomize with the container function");
    let native = run(&native_dir, true);
    ok(&native, "kustomize with the exec function");
    assert!(text(&image.stdout).contains("name: cluster-fleet-eu-prod-eu-1\n"));
    assert_eq!(text(&image.stdout), text(&native.stdout));
}

#[test]
fn standalone_kustomize_runs_the_container_function() {
    let Some(kustomize) = std::env::var_os("KUSTOMIZE").filter(|p| !p.is_empty()) else {
        common::skip(
            "KUSTOMIZE is not set (`make test` installs kustomize 4.5.4), so the container function was NOT run under it",
        );
        return;
    };
    if !engine_with_images() {
        return;
    }
    kustomize_outputs(|dir, exec| {
        let mut cmd = command(kustomize.to_str().expect("utf-8"));
        cmd.args(["build", "--enable-alpha-plugins"]);
        if exec {
            cmd.arg("--enable-exec");
        }
        cmd.arg(dir).output().expect("kustomize runs")
    });
}

/// The README's `kubectl kustomize --enable-alpha-plugins DIR` (kubectl's built-in kustomize
/// runs container functions; it runs no exec functions, so the native side is standalone
/// kustomize when present, else the function run directly on the same resources).
#[test]
fn kubectl_kustomize_runs_the_container_function() {
    if !common::available(
        "kubectl",
        &["version", "--client"],
        "the container function was NOT run by kubectl kustomize",
    ) || !engine_with_images()
    {
        return;
    }
    let dir = TempDir::new("container", "kubectl");
    kustomization(
        &dir.0,
        &format!("      container:\n        image: {IMAGE}\n"),
    );
    let out = sh(&dir.0, "kubectl kustomize --enable-alpha-plugins .");
    ok(&out, "kubectl kustomize");
    let stdout = text(&out.stdout);
    // What the function writes for the same input, read through kustomize's writer: the Argo
    // CD Secret's name, namespace, labels and data.
    for line in [
        "  name: cluster-fleet-eu-prod-eu-1\n",
        "  namespace: argocd\n",
        "    capi-to-argocd/cluster-secret-name: prod-eu-1-kubeconfig\n",
        "  name: fleet-eu-prod-eu-1\n",
    ] {
        assert!(stdout.contains(line), "{line:?} in:\n{stdout}");
    }
    if let Some(kustomize) = std::env::var_os("KUSTOMIZE").filter(|p| !p.is_empty()) {
        let native_dir = dir.path("native");
        kustomization(&native_dir, "      exec:\n        path: ./capi2argo\n");
        fs::copy(
            env!("CARGO_BIN_EXE_capi2argo"),
            native_dir.join("capi2argo"),
        )
        .expect("copy");
        let native = command(kustomize.to_str().expect("utf-8"))
            .args(["build", "--enable-alpha-plugins", "--enable-exec"])
            .arg(&native_dir)
            .output()
            .expect("kustomize runs");
        ok(&native, "kustomize exec");
        assert_eq!(stdout, text(&native.stdout));
    }
}

#[test]
fn the_function_image_is_non_root_with_no_shell() {
    if !engine_with_images() {
        return;
    }
    let user = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Config.User}}", IMAGE])
        .output()
        .expect("docker");
    assert_eq!(text(&user.stdout).trim(), "65532:65532");
    let shell = Command::new("docker")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            "/bin/sh",
            IMAGE,
            "-c",
            "true",
        ])
        .output()
        .expect("docker");
    assert!(!shell.status.success(), "the function image has no shell");
    // `--user nobody`, as kpt and kustomize run it, resolves in the image.
    let nobody = Command::new("docker")
        .args([
            "run",
            "--rm",
            "-i",
            "--network",
            "none",
            "--user",
            "nobody",
            IMAGE,
            "--version",
        ])
        .output()
        .expect("docker");
    ok(&nobody, "docker run --user nobody");
}

/// The plugin image as argocd-cmp-server runs a plugin: uid 999, a read-only root, /tmp the
/// only writable place, the application's files as the working directory, its env.
fn cmp_run(app: &Path, env: &[(&str, &str)], command_in_image: &str) -> Output {
    cmp_run_image(CMP_IMAGE, "amd64", app, env, command_in_image)
}

/// [`cmp_run`] with another plugin image (a registry's, by digest) for `platform`.
pub(crate) fn cmp_run_image(
    image: &str,
    platform: &str,
    app: &Path,
    env: &[(&str, &str)],
    command_in_image: &str,
) -> Output {
    let mut cmd = Command::new("docker");
    cmd.args(["run", "--platform", &format!("linux/{platform}")]);
    cmd.args([
        "--rm",
        "--read-only",
        "--tmpfs",
        "/tmp:mode=1777",
        "--user",
        "999",
        "--network",
        "none",
        "--workdir",
        "/app",
        "--volume",
    ]);
    cmd.arg(format!("{}:/app:ro", app.display()));
    for (k, v) in env {
        cmd.args(["--env", &format!("{k}={v}")]);
    }
    cmd.args([image, command_in_image]);
    cmd.output().expect("docker runs")
}

#[test]
fn the_plugin_image_generates_what_generate_sh_does_natively() {
    if !engine_with_images() {
        return;
    }
    let app = TempDir::new("container", "cmp-app");
    fs::create_dir_all(app.path("fleet-eu")).expect("dir");
    fs::write(app.path("fleet-eu/kubeadm.yaml"), KUBEADM).expect("fixture");
    fs::write(
        app.path("capi2argo.yaml"),
        "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: capi2argo\nspec:\n  project: fleet\n",
    )
    .expect("config");
    let env = [
        ("ARGOCD_APP_NAME", "fleet"),
        ("ARGOCD_ENV_NAMESPACED_NAMES", "true"),
    ];
    let image = cmp_run(&app.0, &env, "/usr/local/bin/capi2argo-generate");
    ok(&image, "capi2argo-generate in the image");
    let mut native = command("sh");
    native
        .arg(root().join("kpt-fn/argocd-cmp/generate.sh"))
        .current_dir(&app.0)
        .env("TMPDIR", std::env::temp_dir());
    for (k, v) in env {
        native.env(k, v);
    }
    let native = native.output().expect("generate.sh runs");
    ok(&native, "generate.sh natively");
    assert!(text(&image.stdout).contains("name: cluster-fleet-eu-prod-eu-1\n"));
    assert_eq!(text(&image.stdout), text(&native.stdout));
}

#[test]
fn the_plugin_images_kpt_plugin_renders_a_package() {
    if !engine_with_images() {
        return;
    }
    let app = TempDir::new("container", "cmp-kpt");
    let from = root().join("Kptfile-examples/layered-fleet");
    let copy = Command::new("cp")
        .args([
            "-R",
            &format!("{}/.", from.display()),
            app.0.to_str().expect("utf-8"),
        ])
        .output()
        .expect("cp");
    ok(&copy, "copy");
    fs::remove_dir_all(app.path(".expected")).expect("snapshot removed");
    let out = cmp_run(
        &app.0,
        &[("ARGOCD_APP_NAME", "fleet")],
        "/usr/local/bin/capi2argo-kpt-render",
    );
    ok(&out, "capi2argo-kpt-render in the image");
    let stdout = text(&out.stdout);
    // Every Argo CD Secret of the snapshot, as kpt renders it; no local configuration.
    let expected = files(&from.join(".expected/argocd"));
    assert!(!expected.is_empty());
    for (_, secret) in &expected {
        let name = text(secret)
            .lines()
            .find_map(|l| l.strip_prefix("  name: cluster-").map(String::from))
            .expect("a cluster Secret");
        assert!(
            stdout.contains(&format!("  name: cluster-{name}\n")),
            "{name} in:\n{stdout}"
        );
    }
    assert!(!stdout.contains("kind: Kptfile"), "{stdout}");
    assert!(
        !stdout.contains("config.kubernetes.io/local-config"),
        "{stdout}"
    );
    // The application's files are untouched: the render works on a copy.
    assert!(
        !app.path("argocd").exists(),
        "the render wrote into the application"
    );
}
