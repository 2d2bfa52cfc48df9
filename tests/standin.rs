//! The API-server stand-in (tests/kube/apiserver.py) against its own self-test
//! (tests/kube/selftest.py): resourceVersions, pages, watches and bookmarks, 410 Gone, Leases and
//! their field-manager conflicts, events.k8s.io Events, patches and server-side apply,
//! TokenRequest, whoami and token expiry, latency and a cluster without Cluster API, each as a
//! real kube-apiserver v1.32 answered the same requests.

use std::process::Command;

use crate::common::{self, root, text};

#[test]
fn the_api_server_stand_in_passes_its_self_test() {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        common::skip(
            "`python3` is not available, so the API-server stand-in's self-test did NOT run",
        );
        return;
    }
    let out = Command::new("python3")
        .arg(root().join("tests/kube/selftest.py"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "tests/kube/selftest.py failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

