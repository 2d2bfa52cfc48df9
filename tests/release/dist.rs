//! What `make release` leaves in dist/release, checked as a user meets it: the file list and
//! SHA256SUMS, each tarball's contents and static binary (`--version` included, the aarch64 one
//! under qemu), the WebAssembly modules, the npm package (`npm publish --dry-run` clean), the
//! SBOMs against cargo's own dependency tree, the README's install commands run against a copy
//! of dist/release, and the book's `npm install` of the packed npm package.
//!
//! `make test` builds the release first and names it in CAPI2ARGO_RELEASE_DIR; without it these
//! tests say loudly that they are skipped.

use crate::common::{self, INSTALL, NPM_INSTALL, TempDir, ok, root, text};

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Linux targets, each with its ELF machine.
const TARGETS: [(&str, &str); 2] = [
    ("x86_64-unknown-linux-musl", "x86_64"),
    ("aarch64-unknown-linux-musl", "aarch64"),
];

/// dist/release as make test names it, or `None` after a loud message.
fn release(what: &str) -> Option<PathBuf> {
    match std::env::var_os("CAPI2ARGO_RELEASE_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => {
            let dir = root().join(dir);
            assert!(
                dir.join("SHA256SUMS").is_file(),
                "CAPI2ARGO_RELEASE_DIR={} holds no release: make release",
                dir.display()
            );
            Some(dir)
        }
        None => {
            common::skip(&format!(
                "CAPI2ARGO_RELEASE_DIR is not set (make test sets it after make release), so {what} was NOT checked"
            ));
            None
        }
    }
}

/// qemu's user-mode emulator for aarch64, or `None` after a loud message.
fn qemu_aarch64(what: &str) -> Option<String> {
    let found = ["qemu-aarch64-static", "qemu-aarch64"]
        .into_iter()
        .find(|q| {
            Command::new(q)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        common::skip(&format!(
            "no qemu-aarch64 (apt-get install qemu-user-static), so {what} was NOT run"
        ));
    }
    found.map(String::from)
}

/// The ELF machine of a binary, and whether it asks for a program interpreter (a dynamic
/// loader): a static binary does not.
fn elf(binary: &[u8]) -> (&'static str, bool) {
    assert!(
        binary.starts_with(b"\x7fELF") && binary[4] == 2,
        "not a 64-bit ELF file"
    );
    let u16_at = |at: usize| u16::from_le_bytes([binary[at], binary[at + 1]]) as usize;
    let machine = match u16_at(18) {
        0x3e => "x86_64",
        0xb7 => "aarch64",
        other => panic!("ELF machine {other:#x}"),
    };
    let phoff = u64::from_le_bytes(binary[32..40].try_into().expect("8 bytes")) as usize;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    // PT_INTERP = 3.
    let interp = (0..phnum).any(|i| {
        let at = phoff + i * phentsize;
        u32::from_le_bytes(binary[at..at + 4].try_into().expect("4 bytes")) == 3
    });
    (machine, interp)
}

#[test]
fn the_release_holds_every_artifact_and_sha256sums_checks_them() {
    let Some(dir) = release("the release's file list and SHA256SUMS") else {
        return;
    };
    let mut want: BTreeSet<String> = [
        "SHA256SUMS".to_string(),
        "capi2argo.wasm".to_string(),
        "capi2argo-kpt.wasm".to_string(),
        "capi2argo-policy.wasm".to_string(),
        "capi2argo-raw-policy.wasm".to_string(),
        format!("capi2argo-capi2argo-{VERSION}.tgz"),
        format!("capi2argo-{VERSION}-wasm32-wasip1.cdx.json"),
        format!("capi2argo-wasm-{VERSION}.cdx.json"),
        format!("capi2argo-kpt-{VERSION}.cdx.json"),
        format!("capi2argo-policy-{VERSION}.cdx.json"),
    ]
    .into();
    for (target, _) in TARGETS {
        want.insert(format!("capi2argo-{VERSION}-{target}.tar.gz"));
        want.insert(format!("capi2argo-{VERSION}-{target}.cdx.json"));
    }
    let have: BTreeSet<String> = fs::read_dir(&dir)
        .expect("dist/release")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(have, want);
    // Every file but SHA256SUMS is listed once, and sha256sum agrees with every line.
    let sums = fs::read_to_string(dir.join("SHA256SUMS")).expect("SHA256SUMS");
    let listed: Vec<&str> = sums
        .lines()
        .map(|l| l.split_once("  ").expect("`<hash>  <file>`").1)
        .collect();
    let mut unique = listed.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), listed.len(), "a file listed twice");
    want.remove("SHA256SUMS");
    assert_eq!(
        unique
            .into_iter()
            .map(String::from)
            .collect::<BTreeSet<_>>(),
        want
    );
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&dir)
        .output()
        .expect("sha256sum runs");
    ok(&check, "sha256sum --check");
}

#[test]
fn each_tarball_holds_a_static_binary_the_license_and_the_readme() {
    let Some(dir) = release("the release tarballs") else {
        return;
    };
    let qemu = qemu_aarch64("the aarch64 release binary's --version");
    for (target, machine) in TARGETS {
        let name = format!("capi2argo-{VERSION}-{target}");
        let tarball = dir.join(format!("{name}.tar.gz"));
        let listing = Command::new("tar")
            .args(["-tvzf"])
            .arg(&tarball)
            .output()
            .expect("tar runs");
        ok(&listing, "tar -t");
        let mut entries = Vec::new();
        for line in text(&listing.stdout).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields[1], "0/0", "{target}: owned by root: {line}");
            entries.push((fields[0].to_string(), fields[5].to_string()));
        }
        entries.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            entries,
            [
                ("drwxr-xr-x".to_string(), format!("{name}/")),
                ("-rw-r--r--".to_string(), format!("{name}/LICENSE")),
                ("-rw-r--r--".to_string(), format!("{name}/README.md")),
                ("-rwxr-xr-x".to_string(), format!("{name}/capi2argo")),
            ],
            "{target}"
        );
        let unpacked = TempDir::new("release", target);
        ok(
            &Command::new("tar")
                .arg("-xzf")
                .arg(&tarball)
                .arg("-C")
                .arg(&unpacked.0)
                .output()
                .expect("tar runs"),
            "tar -x",
        );
        let inside = unpacked.path(&name);
        for file in ["LICENSE", "README.md"] {
            assert!(
                fs::read(inside.join(file)).expect(file)
                    == fs::read(root().join(file)).expect(file),
                "{target}: {file} is not the repository's"
            );
        }
        let binary = inside.join("capi2argo");
        let (found, interp) = elf(&fs::read(&binary).expect("binary"));
        assert_eq!(found, machine, "{target}");
        assert!(!interp, "{target}: the binary asks for a dynamic loader");
        let version = match machine {
            "x86_64" => Command::new(&binary).arg("--version").output(),
            _ => match &qemu {
                Some(qemu) => Command::new(qemu).arg(&binary).arg("--version").output(),
                None => continue,
            },
        }
        .expect("binary runs");
        ok(&version, "--version");
        assert_eq!(
            text(&version.stdout),
            format!("capi2argo {}\n", capi2argo::args::VERSION),
            "{target}: built from another commit than these tests"
        );
    }
}

#[test]
fn the_webassembly_modules_are_the_ones_make_wasm_built() {
    let Some(dir) = release("the release's WebAssembly modules") else {
        return;
    };
    for module in [
        "capi2argo.wasm",
        "capi2argo-kpt.wasm",
        "capi2argo-policy.wasm",
        "capi2argo-raw-policy.wasm",
    ] {
        assert!(
            fs::read(dir.join(module)).expect(module)
                == fs::read(root().join("dist").join(module)).expect(module),
            "{module} differs from dist/{module}"
        );
    }
}

/// Every file below `dir`, by path relative to it.
fn walk(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        let name = format!(
            "{prefix}{}",
            path.file_name().expect("name").to_string_lossy()
        );
        if path.is_dir() {
            walk(&path, &format!("{name}/"), out);
        } else {
            out.insert(name);
        }
    }
}

#[test]
fn the_npm_package_is_dist_npm_and_publishes_clean() {
    let Some(dir) = release("the npm package") else {
        return;
    };
    let tgz = dir.join(format!("capi2argo-capi2argo-{VERSION}.tgz"));
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&tgz)
        .output()
        .expect("tar runs");
    ok(&listing, "tar -t");
    let packed: BTreeSet<String> = text(&listing.stdout).lines().map(String::from).collect();
    let mut built = BTreeSet::new();
    walk(&root().join("dist/npm"), "package/", &mut built);
    assert_eq!(packed, built, "the tarball holds dist/npm, all of it");
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(root().join("wasm/package.json")).expect("package.json"))
            .expect("JSON");
    assert_eq!(
        manifest["version"], VERSION,
        "wasm/package.json and Cargo.toml"
    );
    assert_eq!(manifest["license"], "Apache-2.0");

    let (Some(node), Some(npm)) = (
        std::env::var_os("CAPI2ARGO_NODE").filter(|v| !v.is_empty()),
        std::env::var_os("CAPI2ARGO_NPM_CLI").filter(|v| !v.is_empty()),
    ) else {
        common::skip(
            "CAPI2ARGO_NODE or CAPI2ARGO_NPM_CLI is not set (make test sets both), so npm publish --dry-run was NOT run",
        );
        return;
    };
    // npm on its own configuration: the machine's ~/.npmrc is not the package's business. A
    // placeholder token stands in for the login a real publish has (a dry run sends nothing:
    // with it, npm's only remark would be that no one is logged in).
    let home = TempDir::new("release", "npm");
    fs::write(
        home.path("npmrc"),
        "//registry.npmjs.org/:_authToken=placeholder-for-the-dry-run\n",
    )
    .expect("npmrc");
    let out = Command::new(node)
        .arg(npm)
        .args(["publish", "--dry-run", "--no-update-notifier"])
        .arg(&tgz)
        .env("npm_config_userconfig", home.path("npmrc"))
        .env("npm_config_cache", home.path("cache"))
        .current_dir(&home.0)
        .output()
        .expect("npm runs");
    ok(&out, "npm publish --dry-run");
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("npm warn") && !stderr.contains("npm error"),
        "npm publish --dry-run is not clean:\n{stderr}"
    );
    assert!(
        stderr.contains("with tag latest and public access (dry-run)"),
        "{stderr}"
    );
    assert_eq!(
        text(&out.stdout).trim(),
        format!("+ @capi2argo/capi2argo@{VERSION}")
    );

    // The book's `npm install` of the packed package, as written, from a project next to the
    // checkout (no registry: the package has no dependencies), then the package converts.
    let project = home.path("project");
    fs::create_dir_all(&project).expect("project");
    fs::create_dir_all(home.path("capi2argo/dist")).expect("checkout");
    std::os::unix::fs::symlink(&dir, home.path("capi2argo/dist/release")).expect("symlink");
    let mut words = NPM_INSTALL.split_whitespace();
    assert_eq!(words.next(), Some("npm"));
    let out = Command::new(std::env::var_os("CAPI2ARGO_NODE").expect("node"))
        .arg(std::env::var_os("CAPI2ARGO_NPM_CLI").expect("npm"))
        .args(words)
        .args([
            "--offline",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
        ])
        .env("npm_config_userconfig", home.path("npmrc"))
        .env("npm_config_cache", home.path("cache"))
        .current_dir(&project)
        .output()
        .expect("npm runs");
    ok(&out, NPM_INSTALL);
    let kubeadm = root().join("tests/fixtures/providers/kubeadm.yaml");
    let out = Command::new(std::env::var_os("CAPI2ARGO_NODE").expect("node"))
        .args([
            "-e",
            "const fs = require('fs'); process.stdout.write(require('@capi2argo/capi2argo').transform(fs.readFileSync(process.argv[1], 'utf8')))",
        ])
        .arg(&kubeadm)
        .current_dir(&project)
        .output()
        .expect("node runs");
    ok(&out, "require('@capi2argo/capi2argo')");
    assert!(
        text(&out.stdout).contains("name: cluster-prod-eu-1"),
        "{}",
        text(&out.stdout)
    );
}

/// `name@version` of every crate `cargo tree` says a package's build for `target` compiles
/// (normal dependencies, proc-macros included; build scripts' dependencies not).
fn cargo_tree(package: &str, target: &str) -> BTreeSet<String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["tree", "--quiet", "--locked", "--offline", "-e", "normal"])
        .args(["--target", target, "-p", package])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    ok(&out, "cargo tree");
    text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some(format!(
                "{}@{}",
                words.next()?,
                words.next()?.strip_prefix('v')?
            ))
        })
        .filter(|c| c != &format!("{package}@{VERSION}"))
        .collect()
}

#[test]
fn each_sbom_lists_exactly_the_crates_cargo_builds_into_its_artifact() {
    let Some(dir) = release("the SBOMs") else {
        return;
    };
    for (file, package, target) in [
        (
            format!("capi2argo-{VERSION}-x86_64-unknown-linux-musl"),
            "capi2argo",
            "x86_64-unknown-linux-musl",
        ),
        (
            format!("capi2argo-{VERSION}-aarch64-unknown-linux-musl"),
            "capi2argo",
            "aarch64-unknown-linux-musl",
        ),
        (
            format!("capi2argo-{VERSION}-wasm32-wasip1"),
            "capi2argo",
            "wasm32-wasip1",
        ),
        (
            format!("capi2argo-wasm-{VERSION}"),
            "capi2argo-wasm",
            "wasm32-unknown-unknown",
        ),
        (
            format!("capi2argo-kpt-{VERSION}"),
            "capi2argo-kpt",
            "wasm32-unknown-unknown",
        ),
        (
            format!("capi2argo-policy-{VERSION}"),
            "capi2argo-policy",
            "wasm32-wasip1",
        ),
    ] {
        let sbom: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join(format!("{file}.cdx.json"))).expect("SBOM"))
                .expect("JSON");
        assert_eq!(sbom["bomFormat"], "CycloneDX", "{file}");
        assert_eq!(sbom["specVersion"], "1.5", "{file}");
        assert_eq!(sbom["metadata"]["component"]["name"], package, "{file}");
        assert_eq!(sbom["metadata"]["component"]["version"], VERSION, "{file}");
        let components = sbom["components"].as_array().expect("components");
        let listed: BTreeSet<String> = components
            .iter()
            .map(|c| {
                format!(
                    "{}@{}",
                    c["name"].as_str().unwrap_or_default(),
                    c["version"].as_str().unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(listed, cargo_tree(package, target), "{file}");
        // Every crate from crates.io carries its licence and the checksum Cargo.lock pins.
        for c in components.iter().filter(|c| {
            c["purl"]
                .as_str()
                .is_some_and(|p| !p.contains("download_url=file"))
        }) {
            assert!(
                c["licenses"].is_array(),
                "{file}: {} has no licence",
                c["name"]
            );
            assert_eq!(c["hashes"][0]["alg"], "SHA-256", "{file}: {}", c["name"]);
        }
    }
}

/// The README's install commands, as written, run one after the other in `work` (which holds
/// a copy of the release as `dist/release`), with the home directory in `home`.
fn install(commands: &[String], home: &Path, work: &Path) -> Output {
    Command::new("sh")
        .arg("-ec")
        .arg(commands.join("\n"))
        .current_dir(work)
        .env("HOME", home)
        .output()
        .expect("sh runs")
}

/// A copy of the release in `work/dist/release`, so a test may change it.
fn copy_release(dir: &Path, work: &Path) {
    let copy = work.join("dist/release");
    fs::create_dir_all(&copy).expect("dist/release");
    for entry in fs::read_dir(dir).expect("release") {
        let entry = entry.expect("entry");
        fs::copy(entry.path(), copy.join(entry.file_name())).expect("copy");
    }
}

#[test]
fn the_readmes_install_commands_work_against_the_release() {
    let Some(dir) = release("the README's install commands") else {
        return;
    };
    for (target, machine) in TARGETS {
        let scratch = TempDir::new("release", &format!("install-{machine}"));
        let (home, work) = (scratch.path("home"), scratch.path("work"));
        fs::create_dir_all(&home).expect("home");
        copy_release(&dir, &work);
        // On arm64 machines, `aarch64` in place of `x86_64` (the README says so).
        let commands: Vec<String> = INSTALL
            .iter()
            .map(|c| c.replace("x86_64-unknown-linux-musl", target))
            .collect();
        let (run_here, last) = commands.split_at(commands.len() - 1);
        let out = install(run_here, &home, &work);
        ok(&out, &format!("install ({machine})"));
        assert!(
            text(&out.stdout).contains(&format!("capi2argo-{VERSION}-{target}.tar.gz: OK")),
            "{}",
            text(&out.stdout)
        );
        let installed = home.join(".local/bin/capi2argo");
        assert_eq!(
            fs::read_dir(home.join(".local/bin")).expect("bin").count(),
            1,
            "the binary alone lands in ~/.local/bin"
        );
        let version = if machine == "x86_64" {
            install(last, &home, &work)
        } else {
            let Some(qemu) = qemu_aarch64("the installed aarch64 binary") else {
                continue;
            };
            Command::new(qemu)
                .arg(&installed)
                .arg("--version")
                .output()
                .expect("qemu runs")
        };
        ok(&version, "--version");
        assert_eq!(
            text(&version.stdout),
            format!("capi2argo {}\n", capi2argo::args::VERSION)
        );
        // The check is real: a tarball changed by one byte is refused.
        let tarball = work.join(format!("dist/release/capi2argo-{VERSION}-{target}.tar.gz"));
        let mut bytes = fs::read(&tarball).expect("tarball");
        let last_byte = bytes.len() - 1;
        bytes[last_byte] ^= 1;
        fs::write(&tarball, bytes).expect("tarball");
        let check = install(&commands[..1], &home, &work);
        assert!(
            !check.status.success(),
            "a changed tarball passed the check"
        );
    }
}
