//! The `capi2argo` binary as users call it: arguments, files, exit codes, and what it never prints.

use crate::common;

use std::process::Output;

use base64::Engine;

fn capi2argo(args: &[&str], stdin: &[u8]) -> Output {
    common::capi2argo(args, stdin, None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c1-kubeconfig\n  namespace: ns\n  labels:\n    cluster.x-k8s.io/cluster-name: c1\nstringData:\n  value: |\n    clusters:\n    - {name: c, cluster: {server: 'https://c1:6443'}}\n    users:\n    - {name: u, user: {token: t}}\n";

#[test]
fn version_and_help() {
    let out = capi2argo(&["--version"], b"");
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("capi2argo {}\n", capi2argo::args::VERSION)
    );
    let help = text(&capi2argo(&["--help"], b"").stdout);
    for needle in ["ResourceList", "Exit codes", "--fn-config", "--set"] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
    // Every setting, from the same table the function parses with.
    for key in capi2argo_core::KEYS {
        assert!(
            help.contains(&format!("  {} ", key.name)),
            "--help lacks the setting {}",
            key.name
        );
    }
}

/// Run bare on a terminal, the command says it waits for standard input instead of hanging
/// without a word (a pseudo-terminal from `script`, so the test sees what a user sees).
#[test]
fn a_terminal_on_standard_input_gets_a_hint() {
    if !common::available(
        "script",
        &["--version"],
        "the terminal hint was NOT checked",
    ) {
        return;
    }
    let command = format!("timeout 1 {}", env!("CARGO_BIN_EXE_capi2argo"));
    let out = std::process::Command::new("script")
        .args(["-q", "-c", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script runs");
    let seen = text(&out.stdout);
    assert!(
        seen.contains("reading a ResourceList, a List or YAML documents from standard input"),
        "{seen}"
    );
}

/// Runs the binary on a golden case's input and arguments with `stdout` as its standard output;
/// returns the exit code and standard error.
fn run_case_into(case: &str, stdout: std::process::Stdio) -> (Option<i32>, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(case);
    let args: Vec<String> = std::fs::read_to_string(dir.join("args"))
        .map(|t| t.lines().map(String::from).collect())
        .unwrap_or_default();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capi2argo"))
        .args(&args)
        .arg(dir.join("input.yaml"))
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("binary runs");
    (out.status.code(), text(&out.stderr))
}

/// The golden cases these checks run: conversion and `capi2argo validate`, each with exit 0
/// and exit 1.
const EXIT_CASES: [(&str, i32); 4] = [
    ("provider-kubeadm", 0),
    ("kubeconfig-errors", 1),
    ("validate-providers", 0),
    ("validate-problems", 1),
];

/// /dev/null opened for reading and writing, as Go's os/exec and Python's subprocess.DEVNULL
/// pass it, is a place for output like any other: the exit code is the run's, and the results
/// still go to standard error.
#[test]
fn standard_output_on_dev_null_read_write_exits_by_the_run() {
    for (case, code) in EXIT_CASES {
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .expect("/dev/null");
        let (got, stderr) = run_case_into(case, null.into());
        assert_eq!(got, Some(code), "{case}: {stderr}");
        assert!(!stderr.contains("cannot write output"), "{case}: {stderr}");
        let want = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/golden")
                .join(case)
                .join("expected/stderr.txt"),
        )
        .unwrap_or_default();
        assert_eq!(stderr, want, "{case}: the results on stderr");
    }
    // Opened for writing only, as a shell's `> /dev/null` does.
    let null = std::fs::File::create("/dev/null").expect("/dev/null");
    assert_eq!(run_case_into("provider-kubeadm", null.into()).0, Some(0));
}

/// The same through Python's own subprocess.DEVNULL, the real caller this was reported from.
#[test]
fn python_subprocess_devnull_gets_the_runs_exit_code() {
    if !common::available(
        "python3",
        &["--version"],
        "subprocess.DEVNULL was NOT tried",
    ) {
        return;
    }
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    for (case, code) in EXIT_CASES {
        let dir = golden.join(case);
        let args = std::fs::read_to_string(dir.join("args")).unwrap_or_default();
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(
                "import subprocess, sys\n\
                 r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
                 print(r.returncode)",
            )
            .arg(env!("CARGO_BIN_EXE_capi2argo"))
            .args(args.lines())
            .arg(dir.join("input.yaml"))
            .output()
            .expect("python3 runs");
        assert_eq!(
            text(&out.stdout).trim(),
            code.to_string(),
            "{case}: {}",
            text(&out.stderr)
        );
    }
}

/// A standard output the parent closed cannot be told from /dev/null once Rust's runtime has
/// put /dev/null there (src/main.rs says why): the output is discarded and the exit code is the
/// run's, as with /dev/null.
#[test]
fn a_closed_standard_output_is_taken_as_discarded_output() {
    for (case, code) in EXIT_CASES {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(case);
        let args = std::fs::read_to_string(dir.join("args")).unwrap_or_default();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "\"$0\" {} input.yaml >&-",
                args.lines().collect::<Vec<_>>().join(" ")
            ))
            .arg(env!("CARGO_BIN_EXE_capi2argo"))
            .current_dir(&dir)
            .output()
            .expect("sh runs");
        assert_eq!(
            out.status.code(),
            Some(code),
            "{case}: {}",
            text(&out.stderr)
        );
    }
}

/// Output that cannot be written is lost output, never a success (issue "Security round 2"):
/// a full disk (/dev/full) is exit 2, whatever the run's result would have been.
#[test]
fn a_full_disk_is_exit_2() {
    for (case, _) in EXIT_CASES {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let (got, stderr) = run_case_into(case, full.into());
        assert_eq!(got, Some(2), "{case}: {stderr}");
        assert!(
            stderr.contains("capi2argo: cannot write output: "),
            "{case}: {stderr}"
        );
    }
}

/// A reader that went away (a closed pipe) is output lost too: exit 2. The input arrives only
/// after the read end is closed, so the write cannot come first.
#[test]
fn a_closed_pipe_is_exit_2() {
    let input = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/providers/kubeadm.yaml"),
    )
    .expect("fixture");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_capi2argo"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary starts");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut stdin, &input).expect("input written");
    drop(stdin);
    let out = child.wait_with_output().expect("binary finishes");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("capi2argo: cannot write output: "),
        "{}",
        text(&out.stderr)
    );
}

/// Reading stops at the limit: an endless input is refused at once, not read into memory.
#[test]
fn an_endless_input_stops_at_the_limit() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} --max-input-bytes 1000 < /dev/zero",
            env!("CARGO_BIN_EXE_capi2argo")
        ))
        .output()
        .expect("sh runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("over the limit of 1000 bytes"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn reads_a_file_argument_and_reports_unreadable_ones() {
    let dir = std::env::temp_dir().join(format!("capi2argo-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("in.yaml");
    std::fs::write(&file, SECRET).unwrap();
    let out = capi2argo(&[file.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("name: cluster-c1\n"));

    let missing = dir.join("missing.yaml");
    let out = capi2argo(&[missing.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).starts_with("capi2argo: cannot read "),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fn_config_file_and_set_override_the_resource_lists_config() {
    let dir = std::env::temp_dir().join(format!("capi2argo-fncfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("fn.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nspec:\n  argoNamespace: gitops\n",
    )
    .unwrap();
    let input = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data:\n    argoNamespace: ignored\n",
        SECRET
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
            .collect::<String>()
    );
    let out = capi2argo(
        &[
            "--fn-config",
            cfg.to_str().unwrap(),
            "--set",
            "namespacedNames=true",
        ],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  name: cluster-ns-c1\n    namespace: gitops\n"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unusable_input_is_one_line_on_stderr_and_exit_2() {
    for input in [
        &b"\xff\xfe not utf-8"[..],
        b"items: [",
        b"kind: ResourceList\nitems: {a: b}\n",
    ] {
        let out = capi2argo(&[], input);
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("capi2argo: "), "{stderr}");
    }
    let out = capi2argo(&["--set", "novalue"], SECRET.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected key=value"));
}

/// Distinctive credentials pushed through every error and warning path must never be printed.
#[test]
fn credentials_never_reach_stderr_or_results() {
    let secrets = [
        "TOKEN-d1st1nct",
        "PASSWORD-d1st1nct",
        "ENV-SECRET-d1st1nct",
        "IDTOKEN-d1st1nct",
        "KEY-d1st1nct",
    ];
    let key_b64 = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN PRIVATE KEY-----\nKEY-d1st1nct\n-----END PRIVATE KEY-----\n");
    let kubeconfigs = [
        // A file reference next to a token: error path.
        format!(
            "clusters:\n- {{name: c, cluster: {{server: 'https://a', certificate-authority: /ca.crt}}}}\nusers:\n- {{name: u, user: {{token: {}}}}}\n",
            secrets[0]
        ),
        // auth-provider with an id-token inside: error path.
        format!(
            "clusters:\n- {{name: c, cluster: {{server: 'https://a'}}}}\nusers:\n- {{name: u, user: {{auth-provider: {{name: oidc, config: {{id-token: {}}}}}}}}}\n",
            secrets[3]
        ),
        // Impersonation with basic auth: error path.
        format!(
            "clusters:\n- {{name: c, cluster: {{server: 'https://a'}}}}\nusers:\n- {{name: u, user: {{username: me, password: {}, as: admin}}}}\n",
            secrets[1]
        ),
        // Unknown exec plugin with a secret in env: warning path.
        format!(
            "clusters:\n- {{name: c, cluster: {{server: 'https://a'}}}}\nusers:\n- {{name: u, user: {{exec: {{command: x, apiVersion: client.authentication.k8s.io/v1, env: [{{name: S, value: {}}}]}}}}}}\n",
            secrets[2]
        ),
        // Key without certificate, and a token of the wrong type: error paths.
        format!(
            "clusters:\n- {{name: c, cluster: {{server: 'https://a'}}}}\nusers:\n- {{name: u, user: {{client-key-data: {key_b64}, token: [{}]}}}}\n",
            secrets[0]
        ),
        // No current-context among several: error path, with secrets elsewhere in the file.
        format!(
            "clusters:\n- {{name: a, cluster: {{server: 'https://a'}}}}\n- {{name: b, cluster: {{server: 'https://b'}}}}\nusers:\n- {{name: u, user: {{token: {}}}}}\ncontexts:\n- {{name: x, context: {{cluster: a, user: u}}}}\n- {{name: y, context: {{cluster: b, user: u}}}}\n",
            secrets[0]
        ),
        // Not YAML at all, right at the secret.
        format!("users: [{{token: {} ", secrets[0]),
    ];
    let mut items = String::new();
    for (i, kc) in kubeconfigs.iter().enumerate() {
        let value = base64::engine::general_purpose::STANDARD.encode(kc);
        items.push_str(&format!(
            "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: c{i}-kubeconfig\n    namespace: ns\n    labels:\n      cluster.x-k8s.io/cluster-name: c{i}\n  data:\n    value: {value}\n"
        ));
    }
    let input = format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}");
    // The same items as `kubectl get` prints them: results on standard error, not in the output.
    let list = format!("apiVersion: v1\nkind: List\nitems:\n{items}");
    for strict in ["true", "false"] {
        let out = capi2argo(&["--set", &format!("strict={strict}")], input.as_bytes());
        let stdout = text(&out.stdout);
        let results =
            &stdout[capi2argo_krm::render::results_start(&stdout).expect("results present")..];
        // A ResourceList carries its results, and says them on standard error too: kustomize
        // shows nothing else. A `kind: List` has its results there only.
        let stderr = text(&out.stderr);
        assert!(stderr.lines().count() >= kubeconfigs.len(), "{stderr}");
        let listed = capi2argo(&["--set", &format!("strict={strict}")], list.as_bytes());
        let listed_stderr = text(&listed.stderr);
        assert_eq!(listed_stderr, stderr);
        for secret in secrets {
            let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
            for (place, printed) in [("stderr", &stderr), ("results", &results.to_string())] {
                assert!(
                    !printed.contains(secret),
                    "{secret} printed in {place}:\n{printed}"
                );
                assert!(
                    !printed.contains(&encoded),
                    "base64 of {secret} printed in {place}"
                );
            }
        }
        assert!(!results.contains(&key_b64));
    }
}

/// kustomize generators name their Secrets in `resourceFiles`: the CLI reads them from the working
/// directory (and nowhere else); they are converted but not echoed.
#[test]
fn resource_files_are_read_relative_to_the_working_directory() {
    let dir = std::env::temp_dir().join(format!("capi2argo-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("capi.yaml"), SECRET).unwrap();
    let input = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
    let run = |args: &[&str]| common::capi2argo(args, input, Some(&dir));
    let out = run(&["--set", "resourceFiles=capi.yaml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("name: cluster-c1\n"), "{stdout}");
    assert!(
        !stdout.contains("metadata:\n    name: c1-kubeconfig\n"),
        "the source is not echoed:\n{stdout}"
    );

    for bad in ["../capi.yaml", "/etc/hostname"] {
        let out = run(&["--set", &format!("resourceFiles={bad}")]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("relative paths inside the working directory"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = run(&["--set", "resourceFiles=missing.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("resourceFiles: missing.yaml: "),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `capi2argo wrap` puts a bare kubeconfig into the Secret Cluster API writes, which the
/// function then converts; anything else is refused with exit 2 and nothing on stdout.
#[test]
fn wrap_puts_a_kubeconfig_into_its_secret_for_the_conversion() {
    let kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {server: 'https://api.lab.example:6443'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: admin@lab\n  context: {cluster: lab, user: u}\ncurrent-context: admin@lab\n";
    let wrapped = capi2argo(&["wrap"], kubeconfig.as_bytes());
    assert_eq!(wrapped.status.code(), Some(0), "{}", text(&wrapped.stderr));
    let secret = text(&wrapped.stdout);
    assert!(secret.contains("name: lab-kubeconfig"), "{secret}");
    let converted = capi2argo(&[], &wrapped.stdout);
    assert_eq!(
        converted.status.code(),
        Some(0),
        "{}",
        text(&converted.stderr)
    );
    let out = text(&converted.stdout);
    assert!(
        out.contains("name: cluster-lab\n") && out.contains("server: https://api.lab.example:6443"),
        "{out}"
    );
    for refused in [
        &b"apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"[..],
        b"a: [",
    ] {
        let out = capi2argo(&["wrap"], refused);
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        assert!(
            text(&out.stderr).contains("not one kubeconfig"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// Issue "The first hour": a YAML syntax error in a file named on the command line names the
/// file, as editors and CI logs link it; from standard input it names none.
#[test]
fn a_yaml_error_names_its_file() {
    let dir = common::TempDir::new("cli", "yaml-error");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, "apiVersion: v1\nkind: [\n").expect("written");
    let named = capi2argo(&[file.to_str().expect("UTF-8 path")], b"");
    assert_eq!(named.status.code(), Some(2));
    assert!(
        text(&named.stderr).starts_with(&format!(
            "capi2argo: {}: invalid YAML at line 3",
            file.display()
        )),
        "{}",
        text(&named.stderr)
    );
    let piped = capi2argo(&[], b"apiVersion: v1\nkind: [\n");
    assert!(
        text(&piped.stderr).starts_with("capi2argo: invalid YAML at line 3"),
        "{}",
        text(&piped.stderr)
    );
}
