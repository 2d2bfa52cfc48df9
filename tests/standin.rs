//! The API-server stand-in (tests/kube/apiserver.py) against its own self-test
//! (tests/kube/selftest.py): resourceVersions, pages, watches and bookmarks, 410 Gone, Leases and
//! their field-manager conflicts, events.k8s.io Events, patches and server-side apply,
//! TokenRequest, whoami and token expiry, latency and a cluster without Cluster API, each as a
//! real kube-apiserver v1.32 answered the same requests; and what the Rust helper
//! (tests/common/apiserver.rs) adds to it.

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

/// One HTTP/1.1 exchange with the stand-in on 127.0.0.1: the status code and the body.
fn exchange(port: u16, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("the stand-in listens");
    stream.write_all(request.as_bytes()).expect("request sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer read");
    let code = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

/// What the Rust helper adds to the stand-in: its flags pass through (`--no-capi`), and each
/// recorded request says its Content-Type, who it was and how it was answered.
#[test]
fn the_helper_passes_flags_through_and_reads_the_request_log() {
    use crate::common::apiserver::{Options, StandIn};
    let options = Options {
        token: Some("helper-token".into()),
        args: vec!["--no-capi".into()],
        ..Options::default()
    };
    let Some(api) = StandIn::start_with("helper", &[], options) else {
        return;
    };
    let auth = "Authorization: Bearer helper-token\r\nConnection: close\r\n";
    let (code, groups) = exchange(
        api.port,
        &format!("GET /apis HTTP/1.1\r\nHost: x\r\n{auth}\r\n"),
    );
    assert_eq!(code, 200);
    assert!(groups.contains("coordination.k8s.io"), "{groups}");
    assert!(!groups.contains("cluster.x-k8s.io"), "{groups}");
    let lease = r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}"#;
    let (code, _) = exchange(
        api.port,
        &format!(
            "PATCH /apis/coordination.k8s.io/v1/namespaces/ops/leases/l?fieldManager=helper HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/apply-patch+yaml\r\nContent-Length: {}\r\n\r\n{lease}",
            lease.len()
        ),
    );
    assert_eq!(code, 201);
    let (code, _) = exchange(
        api.port,
        "GET /api/v1/secrets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 401);
    let requests = api.requests();
    let seen: Vec<(u16, Option<&str>, Option<&str>)> = requests
        .iter()
        .map(|r| (r.code, r.content_type.as_deref(), r.user.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (200, None, Some("admin")),
            (201, Some("application/apply-patch+yaml"), Some("admin")),
            (401, None, None),
        ]
    );
    assert_eq!(requests[1].query["fieldManager"], "helper");
    assert!(api.objects()[0]["metadata"]["managedFields"][0]["operation"] == "Apply");
    // The namespaces every cluster has are there from the start, apart from the objects.
    let namespaces: Vec<String> = api
        .namespaces()
        .iter()
        .map(|n| {
            n["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(namespaces.iter().any(|n| n == name), "{namespaces:?}");
    }
}
