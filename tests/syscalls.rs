//! What the binary does to the system, watched with strace: it opens its input and config files only, and spawns and connects nothing.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What the dynamic loader opens before `main` (shared libraries, probed along LD_LIBRARY_PATH
/// too), and std's stack-guard probe.
fn runtime_file(path: &str) -> bool {
    let library = path
        .rsplit('/')
        .next()
        .is_some_and(|f| f.starts_with("lib") && f.contains(".so"));
    path == "/etc/ld.so.cache" || path == "/proc/self/maps" || library
}

#[test]
fn opens_only_its_inputs_and_spawns_nothing() {
    if Command::new("strace").arg("-V").output().is_err() {
        crate::common::skip("strace is not installed, so file and process access was NOT checked");
        return;
    }
    let dir = std::env::temp_dir().join(format!("capi2argo-strace-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    // A kubeconfig pointing at files the function must never touch.
    let bait = dir.join("bait.pem");
    fs::write(&bait, "not read").unwrap();
    let kubeconfig = format!(
        "clusters:\n- {{name: c, cluster: {{server: 'https://a', certificate-authority: {b}}}}}\nusers:\n- {{name: u, user: {{client-certificate: {b}, client-key: {b}, tokenFile: {b}}}}}\n",
        b = bait.display()
    );
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c-kubeconfig\n  namespace: ns\n  labels:\n    cluster.x-k8s.io/cluster-name: c\nstringData:\n  value: |\n{}",
        kubeconfig
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    );
    let input = dir.join("input.yaml");
    fs::write(
        &input,
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n",
    )
    .unwrap();
    let sources = dir.join("capi.yaml");
    fs::write(&sources, &secret).unwrap();
    let config = dir.join("fn.yaml");
    fs::write(&config, "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nspec:\n  resourceFiles: [capi.yaml]\n").unwrap();
    let log = dir.join("strace.log");

    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat,openat2,creat,execve,execveat,socket,connect,clone,clone3,fork,vfork", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_capi2argo"))
        .arg(&input)
        .arg("--fn-config")
        .arg(&config)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("strace runs");
    // The file references are errors: the run fails, having read nothing but its inputs.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("certificate-authority: file references cannot be converted")
    );

    let trace = fs::read_to_string(&log).unwrap();
    let allowed: Vec<PathBuf> = vec![input.clone(), config.clone(), PathBuf::from("capi.yaml")];
    let mut execs = 0;
    for line in trace.lines() {
        // `<pid> <call>(…)`, the pid padded to a width.
        let call = line
            .split_once(' ')
            .map_or(line, |(_, rest)| rest)
            .trim_start();
        if call.starts_with("execve") {
            execs += 1;
            continue;
        }
        assert!(
            ![
                "socket(",
                "connect(",
                "clone(",
                "clone3(",
                "fork(",
                "vfork(",
                "execveat("
            ]
            .iter()
            .any(|c| call.starts_with(c)),
            "unexpected system call: {line}"
        );
        if let Some(path) = call.split('"').nth(1) {
            assert!(
                runtime_file(path) || allowed.iter().any(|a| a.as_os_str() == path),
                "opened a file it has no business with: {line}"
            );
            assert_ne!(path, bait.to_str().unwrap());
        }
    }
    assert_eq!(execs, 1, "only the binary itself is executed:\n{trace}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Regression (issue "Security round 2"): a `resourceFiles` entry that is a symbolic link —
/// to a Secret outside the working directory, to a device, or a FIFO in the directory — is
/// refused without the link's target or the FIFO ever being opened.
#[test]
fn resource_files_never_open_a_links_target_or_a_fifo() {
    if Command::new("strace").arg("-V").output().is_err() {
        crate::common::skip("strace is not installed, so symbolic-link access was NOT checked");
        return;
    }
    let dir = crate::common::TempDir::new("strace", "links");
    let outside = dir.path("outside");
    let work = dir.path("work");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(&work).unwrap();
    let secret = outside.join("secret.yaml");
    fs::write(
        &secret,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: x-kubeconfig}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, work.join("capi.yaml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", work.join("zero.yaml")).unwrap();
    std::os::unix::fs::symlink(&outside, work.join("sub")).unwrap();
    let fifo = Command::new("mkfifo").arg(work.join("fifo.yaml")).status();
    let mut entries = vec!["capi.yaml", "zero.yaml", "sub/secret.yaml"];
    if fifo.is_ok_and(|s| s.success()) {
        entries.push("fifo.yaml");
    }
    for entry in entries {
        let log = dir.path(&format!("{}.log", entry.replace('/', "-")));
        let out = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_capi2argo"))
            .args(["--set", &format!("resourceFiles={entry}")])
            .current_dir(&work)
            .stdin(Stdio::null())
            .output()
            .expect("strace runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{entry}: {stderr}");
        assert!(
            stderr.contains(&format!("resourceFiles: {entry}: ")),
            "{stderr}"
        );
        let trace = fs::read_to_string(&log).unwrap();
        for line in trace.lines() {
            let Some(path) = line.split('"').nth(1) else {
                continue;
            };
            assert!(runtime_file(path), "{entry}: opened {path}: {line}");
        }
    }
}
