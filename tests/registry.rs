//! The images as users get them: both OCI image indexes (linux/amd64 + linux/arm64, built by
//! `make oci-images`) pushed by `make push-images` to a real registry (Debian's docker-registry,
//! started here on a free localhost port with its own configuration and storage), pulled back
//! by digest and run from there: `kpt fn eval --image <registry>/…@sha256:…`, `docker run
//! --platform linux/arm64` under emulation (qemu-user-static's binfmt handler), and the Argo CD
//! plugin on both platforms, each compared byte for byte with the native binary.
//!
//! Everything runs in one test, in order: the engine keeps one image per `name@digest`, so the
//! two platforms of one index are pulled one after the other, never side by side.

use crate::common::{self, TempDir, http_get, ok, root, text};
use crate::container;

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The README's and the book's commands for the image pushed to a registry of one's own, as
/// written; this test's registry stands in for registry.example.com/capi2argo (tests/readme.rs
/// holds the README and the book to them).
pub const README: [&str; 3] = [
    "docker pull registry.example.com/capi2argo/capi2argo:v0.1.0",
    "docker inspect --format '{{index .RepoDigests 0}}' registry.example.com/capi2argo/capi2argo:v0.1.0",
    "kpt fn eval my-package --image registry.example.com/capi2argo/capi2argo:v0.1.0 -- namespacedNames=true",
];

/// The golden cases each image runs: conversion, JSON, exit 1, `validate`, exit 2.
const CASES: [&str; 5] = [
    "provider-kubeadm",
    "json-resource-list",
    "kubeconfig-errors",
    "validate-problems",
    "hostile-not-utf8",
];

fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs")
}

/// A docker-registry of this test's own, stopped when dropped.
struct Registry {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Registry {
    fn start() -> Registry {
        let dir = TempDir::new("registry", "server");
        // A port the kernel just gave out is free unless someone takes it first: then try another.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let config = dir.path("config.yml");
            fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                    dir.path("storage").display()
                ),
            )
            .expect("config written");
            let log = fs::File::create(dir.path("registry.log")).expect("log");
            let mut child = Command::new("docker-registry")
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("docker-registry starts");
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if child.try_wait().expect("registry status").is_some() {
                    break;
                }
                if http_get(port, "/v2/", "").is_some_and(|(status, _)| status == 200) {
                    return Registry {
                        child,
                        port,
                        _dir: dir,
                    };
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "docker-registry did not answer on localhost:\n{}",
            fs::read_to_string(dir.path("registry.log")).unwrap_or_default()
        );
    }

    /// `127.0.0.1:<port>/capi2argo`, the REGISTRY given to `make push-images`.
    fn namespace(&self) -> String {
        format!("127.0.0.1:{}/capi2argo", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What must be there for the round trip; `false` after a loud message when something is
/// missing that a machine may lack, a failure when the images were not built.
fn prerequisites() -> bool {
    let engine = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !engine {
        common::skip(
            "no container engine answers `docker version`, so the image indexes were NOT pushed, pulled or run",
        );
        return false;
    }
    if std::env::var("DOCKER_HOST").is_ok_and(|h| !h.is_empty() && !h.starts_with("unix://")) {
        common::skip(
            "DOCKER_HOST is not a local socket, so the engine could not reach a registry on this machine's localhost: the image indexes were NOT pushed, pulled or run",
        );
        return false;
    }
    for (program, args, package) in [
        ("skopeo", &["--version"][..], "skopeo"),
        ("docker-registry", &["--version"][..], "docker-registry"),
        ("make", &["--version"][..], "make"),
    ] {
        if !common::available(
            program,
            args,
            &format!(
                "the image indexes were NOT pushed, pulled or run (apt-get install {package})"
            ),
        ) {
            return false;
        }
    }
    for name in ["capi2argo", "argocd-cmp", "capi2argo-controller"] {
        assert!(
            root()
                .join("target/oci")
                .join(name)
                .join("index.json")
                .is_file(),
            "target/oci/{name} is missing: `make oci-images` builds it (make test does, first)"
        );
    }
    true
}

/// Whether the engine runs linux/arm64 images (a binfmt handler for aarch64 with the F flag, as
/// Debian's qemu-user-static registers it), said loudly when it does not.
fn runs_arm64(image: &str) -> bool {
    let out = docker(&[
        "run",
        "--rm",
        "--platform",
        "linux/arm64",
        "--network",
        "none",
        image,
        "--version",
    ]);
    if !out.status.success() {
        common::skip(&format!(
            "the engine cannot run linux/arm64 images (no qemu-aarch64 binfmt handler: apt-get install qemu-user-static, and binfmt_misc mounted), so the arm64 images were NOT run: {}",
            text(&out.stderr).trim()
        ));
    }
    out.status.success()
}

/// One golden case through `docker run -i` of `image` for `platform`: stdout, stderr and exit
/// code as the case expects.
fn golden_in_container(image: &str, platform: &str, case: &str) {
    let dir = root().join("tests/golden").join(case);
    let input = fs::read(dir.join("input.yaml")).expect("input");
    let args = fs::read_to_string(dir.join("args")).unwrap_or_default();
    let mut child = Command::new("docker")
        .args(["run", "--rm", "-i", "--network", "none", "--platform"])
        .arg(format!("linux/{platform}"))
        // The clock the expected outputs were made at, as every golden run has it.
        .arg("--env")
        .arg(format!(
            "{}={}",
            capi2argo_core::host::NOW_VARIABLE,
            common::pinned_now()
        ))
        .arg(image)
        .args(args.lines())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("input written");
    let out = child.wait_with_output().expect("docker finishes");
    let read = |name: &str| fs::read(dir.join("expected").join(name)).unwrap_or_default();
    let code: i32 = text(&read("exit-code")).trim().parse().unwrap_or(0);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{case} on {platform}: {}",
        text(&out.stderr)
    );
    assert!(
        out.stdout == read("output.yaml"),
        "{case} on {platform}: stdout differs"
    );
    assert_eq!(
        text(&out.stderr),
        text(&read("stderr.txt")),
        "{case} on {platform}: stderr"
    );
}

/// The image `reference` pulled for `platform` (and any other platform's copy dropped first).
fn pull(reference: &str, platform: &str) {
    let _ = docker(&["image", "rm", reference]);
    ok(
        &docker(&[
            "pull",
            "--quiet",
            "--platform",
            &format!("linux/{platform}"),
            reference,
        ]),
        "docker pull",
    );
    let arch = docker(&[
        "image",
        "inspect",
        "--format",
        "{{.Os}}/{{.Architecture}}",
        reference,
    ]);
    assert_eq!(text(&arch.stdout).trim(), format!("linux/{platform}"));
}

/// The machine the image's binary is built for, read from its ELF header (`docker cp` out of a
/// created container): an image labelled arm64 that carried an x86_64 binary would run here
/// without emulation and prove nothing.
fn binary_machine(reference: &str, platform: &str) -> &'static str {
    let created = docker(&[
        "create",
        "--platform",
        &format!("linux/{platform}"),
        reference,
    ]);
    ok(&created, "docker create");
    let id = text(&created.stdout).trim().to_string();
    let copied = docker(&["cp", &format!("{id}:/usr/local/bin/capi2argo"), "-"]);
    let _ = docker(&["rm", &id]);
    ok(&copied, "docker cp");
    // A tar stream: one 512-byte header, then the file.
    let elf = copied.stdout.get(512..).unwrap_or_default();
    assert!(
        elf.starts_with(b"\x7fELF") && elf.len() > 20,
        "not an ELF file"
    );
    match u16::from_le_bytes([elf[18], elf[19]]) {
        0x3e => "x86_64",
        0xb7 => "aarch64",
        other => panic!("ELF machine {other:#x}"),
    }
}

/// kpt runs the function image from the registry on a package; the same package run with the
/// native binary (`--exec`) comes out identical.
fn kpt_from_registry(reference: &str, pull_policy: &str, what: &str) {
    let dir = TempDir::new("registry", &format!("kpt-{what}"));
    container::package(&dir.path("image/my-package"));
    container::package(&dir.path("native/my-package"));
    let image = common::with_binary_on_path("kpt")
        .args(["fn", "eval", "my-package", "--image", reference])
        .args([
            "--image-pull-policy",
            pull_policy,
            "--",
            "namespacedNames=true",
        ])
        .current_dir(dir.path("image"))
        .output()
        .expect("kpt runs");
    ok(&image, &format!("kpt fn eval --image ({what})"));
    let native = common::with_binary_on_path("kpt")
        .args(["fn", "eval", "my-package", "--exec", "capi2argo"])
        .args(["--", "namespacedNames=true"])
        .current_dir(dir.path("native"))
        .output()
        .expect("kpt runs");
    ok(&native, "kpt fn eval --exec");
    let written = container::files(&dir.path("image/my-package"));
    assert!(
        written
            .iter()
            .any(|(p, _)| p == "argocd/cluster-fleet-eu-prod-eu-1.yaml"),
        "{what}: {:?}",
        written.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert_eq!(
        written,
        container::files(&dir.path("native/my-package")),
        "{what}"
    );
}

/// The Argo CD plugin from the registry for `platform`: its generate command as
/// argocd-cmp-server runs it gives what generate.sh gives natively; its kpt plugin renders a
/// package, or, in an image built without kpt, fails saying so.
fn plugin_from_registry(reference: &str, platform: &str) {
    let app = TempDir::new("registry", &format!("cmp-{platform}"));
    fs::create_dir_all(app.path("fleet-eu")).expect("dir");
    fs::copy(
        root().join("tests/fixtures/providers/kubeadm.yaml"),
        app.path("fleet-eu/kubeadm.yaml"),
    )
    .expect("fixture");
    fs::write(
        app.path("capi2argo.yaml"),
        "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: capi2argo\nspec:\n  project: fleet\n",
    )
    .expect("config");
    let env = [
        ("ARGOCD_APP_NAME", "fleet"),
        ("ARGOCD_ENV_NAMESPACED_NAMES", "true"),
    ];
    let image = container::cmp_run_image(
        reference,
        platform,
        &app.0,
        &env,
        "/usr/local/bin/capi2argo-generate",
    );
    ok(&image, &format!("capi2argo-generate on {platform}"));
    let mut native = common::with_binary_on_path("sh");
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
    assert_eq!(text(&image.stdout), text(&native.stdout), "{platform}");

    // /bin is BusyBox and a link for each of its applets, no more, no fewer.
    let links = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--platform",
        &format!("linux/{platform}"),
        reference,
        "sh",
        "-c",
        "a=$(busybox --list | grep -vx busybox | sort); b=$(ls /bin | grep -vx busybox | sort); [ -n \"$a\" ] && [ \"$a\" = \"$b\" ] && uname -m",
    ]);
    ok(&links, &format!("BusyBox applets on {platform}"));
    let machine = if platform == "arm64" {
        "aarch64"
    } else {
        "x86_64"
    };
    assert_eq!(text(&links.stdout).trim(), machine);

    let package = TempDir::new("registry", &format!("cmp-kpt-{platform}"));
    let from = root().join("Kptfile-examples/layered-fleet");
    ok(
        &Command::new("cp")
            .arg("-R")
            .arg(format!("{}/.", from.display()))
            .arg(&package.0)
            .output()
            .expect("cp"),
        "copy",
    );
    fs::remove_dir_all(package.path(".expected")).expect("snapshot removed");
    let kpt = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--platform",
        &format!("linux/{platform}"),
        "--entrypoint",
        "/usr/local/bin/kpt",
        reference,
        "version",
    ]);
    let out = container::cmp_run_image(
        reference,
        platform,
        &package.0,
        &[("ARGOCD_APP_NAME", "fleet")],
        "/usr/local/bin/capi2argo-kpt-render",
    );
    if kpt.status.success() {
        ok(&out, &format!("capi2argo-kpt-render on {platform}"));
        for (_, secret) in container::files(&from.join(".expected/argocd")) {
            let name = text(&secret)
                .lines()
                .find_map(|l| l.strip_prefix("  name: cluster-").map(String::from))
                .expect("a cluster Secret");
            assert!(
                text(&out.stdout).contains(&format!("  name: cluster-{name}\n")),
                "{platform}: {name}"
            );
        }
    } else {
        // No registry the images are built from has an arm64 kpt (make cmp-image, KPT_arm64).
        assert!(
            text(&kpt.stderr).contains("kpt is not part of this image"),
            "{}",
            text(&kpt.stderr)
        );
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        assert!(
            text(&out.stderr).contains("kpt is not part of this image"),
            "{}",
            text(&out.stderr)
        );
        common::skip(&format!(
            "the {platform} plugin image has no kpt (no arm64 kpt in any registry it is built from; KPT_arm64=… for make cmp-image), so its capi2argo-kpt plugin was checked to fail saying so, NOT to render"
        ));
    }
}

#[test]
fn images_round_trip_through_a_registry_and_run_on_both_platforms() {
    if !prerequisites() {
        return;
    }
    let registry = Registry::start();
    let namespace = registry.namespace();
    let push = Command::new("make")
        .args(["--no-print-directory", "push-images"])
        .arg(format!("REGISTRY={namespace}"))
        .arg("SKOPEO_FLAGS=--dest-tls-verify=false")
        .current_dir(root())
        .output()
        .expect("make runs");
    ok(&push, "make push-images");

    let mut references = Vec::new();
    for name in ["capi2argo", "argocd-cmp", "capi2argo-controller"] {
        let digest = fs::read_to_string(root().join("target/oci").join(format!("{name}.digest")))
            .expect("make push-images wrote the digest");
        // The registry holds the index that was built, byte for byte.
        let layout: serde_json::Value = serde_json::from_slice(
            &fs::read(root().join("target/oci").join(name).join("index.json")).expect("layout"),
        )
        .expect("index.json");
        assert_eq!(
            layout["manifests"][0]["digest"].as_str(),
            Some(digest.trim()),
            "{name}: pushed digest"
        );
        let (status, body) = http_get(
            registry.port,
            &format!("/v2/capi2argo/{name}/manifests/{}", digest.trim()),
            "application/vnd.oci.image.index.v1+json",
        )
        .expect("registry answers");
        assert_eq!(status, 200, "{name}: {}", text(&body));
        let index: serde_json::Value = serde_json::from_slice(&body).expect("an index");
        assert_eq!(
            index["mediaType"], "application/vnd.oci.image.index.v1+json",
            "{name}"
        );
        let mut platforms: Vec<String> = index["manifests"]
            .as_array()
            .expect("manifests")
            .iter()
            .map(|m| {
                format!(
                    "{}/{}",
                    m["platform"]["os"].as_str().unwrap_or_default(),
                    m["platform"]["architecture"].as_str().unwrap_or_default()
                )
            })
            .collect();
        platforms.sort();
        assert_eq!(platforms, ["linux/amd64", "linux/arm64"], "{name}");
        // The tag is the same index.
        let (status, by_tag) = http_get(
            registry.port,
            &format!(
                "/v2/capi2argo/{name}/manifests/v{}",
                env!("CARGO_PKG_VERSION")
            ),
            "application/vnd.oci.image.index.v1+json",
        )
        .expect("registry answers");
        assert_eq!(status, 200);
        assert_eq!(by_tag, body, "{name}: tag and digest");
        references.push(format!("{namespace}/{name}@{}", digest.trim()));
    }
    let _remove = RemovedAtTheEnd(references.clone());
    let (function, plugin, controller) = (&references[0], &references[1], &references[2]);
    let kpt = common::available(
        "kpt",
        &["version"],
        "the function image from the registry was NOT run by kpt",
    );

    // The README's commands, with this registry in place of the user's: pull by tag, the index's
    // digest, kpt running the image (compared with kpt running the native binary).
    let tag = format!("{namespace}/capi2argo:v{}", env!("CARGO_PKG_VERSION"));
    let _remove_tag = RemovedAtTheEnd(vec![tag.clone()]);
    let _ = docker(&["image", "rm", function]);
    let readme = TempDir::new("registry", "readme");
    container::package(&readme.path("image/my-package"));
    let as_written = |command: &str| {
        common::with_binary_on_path("sh")
            .arg("-c")
            .arg(command.replace("registry.example.com/capi2argo", &namespace))
            .current_dir(readme.path("image"))
            .output()
            .expect("sh runs")
    };
    ok(&as_written(README[0]), README[0]);
    let pinned = as_written(README[1]);
    ok(&pinned, README[1]);
    assert_eq!(
        text(&pinned.stdout).trim(),
        function.as_str(),
        "{}",
        README[1]
    );
    if kpt {
        ok(&as_written(README[2]), README[2]);
        container::package(&readme.path("native/my-package"));
        let native = common::with_binary_on_path("kpt")
            .args(["fn", "eval", "my-package", "--exec", "capi2argo"])
            .args(["--", "namespacedNames=true"])
            .current_dir(readme.path("native"))
            .output()
            .expect("kpt runs");
        ok(&native, "kpt fn eval --exec");
        assert_eq!(
            container::files(&readme.path("image/my-package")),
            container::files(&readme.path("native/my-package")),
            "{}",
            README[2]
        );
    }

    // linux/amd64, this machine's platform, by digest: kpt pulls the image itself.
    let _ = docker(&["image", "rm", &tag]);
    let _ = docker(&["image", "rm", function]);
    if kpt {
        kpt_from_registry(function, "always", "amd64");
    }
    pull(function, "amd64");
    assert_eq!(binary_machine(function, "amd64"), "x86_64");
    for case in CASES {
        golden_in_container(function, "amd64", case);
    }
    pull(plugin, "amd64");
    plugin_from_registry(plugin, "amd64");
    pull(controller, "amd64");
    controller_from_registry(controller, "amd64");

    // linux/arm64, under emulation: the same cases, kpt running the arm64 image it finds.
    pull(function, "arm64");
    assert_eq!(binary_machine(function, "arm64"), "aarch64");
    if runs_arm64(function) {
        for case in CASES {
            golden_in_container(function, "arm64", case);
        }
        if kpt {
            kpt_from_registry(function, "never", "arm64");
        }
        pull(plugin, "arm64");
        plugin_from_registry(plugin, "arm64");
        pull(controller, "arm64");
        controller_from_registry(controller, "arm64");
    }
}

/// The controller's image from the registry, on `platform`: its binary answers `--version`, and
/// `--once` with no API server fails as a read (exit 3), having bound no port.
fn controller_from_registry(reference: &str, platform: &str) {
    let platform = format!("linux/{platform}");
    let version = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--platform",
        &platform,
        reference,
        "--version",
    ]);
    ok(&version, "the controller's --version");
    // The commit it was built from, as the command says its own.
    let line = text(&version.stdout).replace("capi2argo-controller ", "capi2argo ");
    assert!(
        crate::common::well_formed(&line, env!("CARGO_PKG_VERSION")).is_some(),
        "{platform}: {line}"
    );
    let once = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--platform",
        &platform,
        "--env",
        "KUBERNETES_SERVICE_HOST=127.0.0.1",
        "--env",
        "KUBERNETES_SERVICE_PORT=6443",
        reference,
        "--once",
    ]);
    assert_eq!(
        once.status.code(),
        Some(3),
        "{platform}: {}",
        text(&once.stderr)
    );
}

/// The images this test pulled, removed from the engine when it ends, passed or failed.
struct RemovedAtTheEnd(Vec<String>);

impl Drop for RemovedAtTheEnd {
    fn drop(&mut self) {
        for reference in &self.0 {
            let _ = docker(&["image", "rm", reference]);
        }
    }
}

/// The README's install of the controller, as a user with one machine and Docker runs it:
/// `make controller-image` (this machine's platform only: no cross compiler, no qemu, no skopeo,
/// no kpt), the image pushed to a registry of one's own, `kubectl apply -k` of the README's
/// kustomization (against the API stand-in), and `kubectl rollout status` once the Deployment's
/// replicas are ready (set on the stand-in as the Deployment controller would).
#[test]
fn the_readmes_controller_install_works_as_written() {
    use crate::common::apiserver::StandIn;
    let engine = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output();
    if !engine.is_ok_and(|o| o.status.success()) {
        common::skip(
            "no container engine answers docker version, so the README's controller install was NOT run",
        );
        return;
    }
    if !common::available(
        "docker-registry",
        &["--version"],
        "the README's controller install was NOT pushed",
    ) || !common::available(
        "kubectl",
        &["version", "--client"],
        "the README's controller install was NOT applied",
    ) {
        return;
    }
    let registry = Registry::start();
    let namespace = registry.namespace();
    let readme = fs::read_to_string(root().join("README.md")).expect("README");
    let section = readme
        .split("### The controller, in a management cluster")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("the README's controller install");
    let commands: Vec<&str> = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("its commands")
        .lines()
        .map(|l| l.split("  #").next().unwrap_or(l).trim())
        .collect();
    assert_eq!(commands.len(), 5, "{commands:?}");
    let as_written =
        |command: &str, dir: &std::path::Path, kubeconfig: Option<&std::path::Path>| {
            let mut run = Command::new("sh");
            run.arg("-c")
                .arg(command.replace("registry.example.com/capi2argo", &namespace))
                .current_dir(dir);
            if let Some(kubeconfig) = kubeconfig {
                run.env("KUBECONFIG", kubeconfig);
            }
            run.output().expect("sh runs")
        };
    // The image, for this machine's platform: the binary is the one make test built.
    let built = as_written(commands[0], &root(), None);
    ok(&built, commands[0]);
    let image = format!(
        "ghcr.io/capi2argo/capi2argo-controller:v{}",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        text(&built.stdout).contains(&format!(
            "controller-image: {image} (linux/amd64) is in the local engine"
        )),
        "{}",
        text(&built.stdout)
    );
    for command in &commands[1..3] {
        ok(&as_written(command, &root(), None), command);
    }
    let pushed = format!(
        "{namespace}/capi2argo-controller:v{}",
        env!("CARGO_PKG_VERSION")
    );
    let _remove = RemovedAtTheEnd(vec![pushed.clone()]);
    let (status, _) = http_get(
        registry.port,
        &format!(
            "/v2/capi2argo/capi2argo-controller/manifests/v{}",
            env!("CARGO_PKG_VERSION")
        ),
        "application/vnd.docker.distribution.manifest.v2+json",
    )
    .expect("registry answers");
    assert_eq!(status, 200, "the pushed image is in the registry");
    // The README's kustomization, beside a checkout named capi2argo.
    let scratch = TempDir::new("registry", "readme-install");
    let kustomization = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("its kustomization");
    fs::create_dir_all(scratch.path("my-controller")).expect("dir");
    fs::write(
        scratch.path("my-controller/kustomization.yaml"),
        kustomization.replace("registry.example.com/capi2argo", &namespace),
    )
    .expect("written");
    std::os::unix::fs::symlink(root(), scratch.path("capi2argo")).expect("symlink");
    let Some(api) = StandIn::start("readme-install", &[]) else {
        return;
    };
    ok(
        &as_written(commands[3], &scratch.0, Some(&api.kubeconfig)),
        commands[3],
    );
    let deployment = api
        .objects()
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the Deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        pushed.as_str()
    );
    // Both replicas ready, as the Deployment controller would say it.
    let generation = deployment["metadata"]["generation"].as_i64().unwrap_or(1);
    let status = serde_json::json!({"status": {
        "observedGeneration": generation, "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}});
    let patched = Command::new("kubectl")
        .args([
            "-n",
            "argocd",
            "patch",
            "deployment",
            "capi2argo-controller",
            "--subresource=status",
            "--type=merge",
            "-p",
        ])
        .arg(status.to_string())
        .env("KUBECONFIG", &api.kubeconfig)
        .output()
        .expect("kubectl runs");
    ok(&patched, "the Deployment's status");
    ok(
        &as_written(commands[4], &scratch.0, Some(&api.kubeconfig)),
        commands[4],
    );
}
