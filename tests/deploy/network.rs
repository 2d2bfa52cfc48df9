//! deploy/controller's NetworkPolicy, evaluated as a CNI that enforces NetworkPolicies reads it
//! (networking.k8s.io/v1: peers — ipBlock, namespaceSelector and podSelector alone or together
//! — ports by number, name or range, protocols): every connection each documented mode makes is
//! allowed, and what none makes is not.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde_json::Value;

use super::{ARGO_NAMESPACE, find, pod_template, render};

/// One end of a connection: an address, and the pod there, if it is one.
struct Peer {
    ip: Ipv4Addr,
    /// The pod's namespace's labels and its own labels and named container ports; `None`
    /// outside the cluster's pods (an API server, a workload cluster).
    pod: Option<Pod>,
}

struct Pod {
    namespace: String,
    namespace_labels: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    ports: BTreeMap<String, u16>,
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn outside(ip: [u8; 4]) -> Peer {
    Peer {
        ip: Ipv4Addr::from(ip),
        pod: None,
    }
}

/// A pod in `namespace` (whose `kubernetes.io/metadata.name` label the API server sets).
fn pod(ip: [u8; 4], namespace: &str, pod_labels: &[(&str, &str)]) -> Peer {
    Peer {
        ip: Ipv4Addr::from(ip),
        pod: Some(Pod {
            namespace: namespace.to_string(),
            namespace_labels: labels(&[("kubernetes.io/metadata.name", namespace)]),
            labels: labels(pod_labels),
            ports: BTreeMap::new(),
        }),
    }
}

/// apimachinery's label selector: matchLabels and matchExpressions, all of them; `{}` matches
/// everything.
fn selects(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let match_labels = selector["matchLabels"].as_object();
    let all_labels = match_labels.is_none_or(|m| {
        m.iter()
            .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str())
    });
    let expressions = selector["matchExpressions"].as_array();
    let all_expressions = expressions.is_none_or(|list| {
        list.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let value = labels.get(key);
            match e["operator"].as_str().unwrap_or_default() {
                "In" => value.is_some_and(|v| values.contains(&v.as_str())),
                "NotIn" => value.is_none_or(|v| !values.contains(&v.as_str())),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                other => panic!("no such operator {other}"),
            }
        })
    });
    all_labels && all_expressions
}

/// An address within `cidr` (IPv4).
fn within(ip: Ipv4Addr, cidr: &str) -> bool {
    let (base, bits) = cidr.split_once('/').expect("a CIDR");
    let base: Ipv4Addr = base.parse().expect("an IPv4 address");
    let bits: u32 = bits.parse().expect("a prefix length");
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    u32::from(ip) & mask == u32::from(base) & mask
}

/// Whether one entry of a rule's `to`/`from` is `peer`, for a policy in `namespace`.
fn is_peer(entry: &Value, peer: &Peer, namespace: &str) -> bool {
    if let Some(block) = entry.get("ipBlock") {
        let cidr = block["cidr"].as_str().expect("cidr");
        let except = block["except"].as_array().cloned().unwrap_or_default();
        return within(peer.ip, cidr)
            && !except
                .iter()
                .any(|e| within(peer.ip, e.as_str().expect("a CIDR")));
    }
    // Selectors name pods only.
    let Some(pod) = &peer.pod else {
        return false;
    };
    let namespace_ok = match entry.get("namespaceSelector") {
        Some(selector) => selects(selector, &pod.namespace_labels),
        // A podSelector alone: pods of the policy's own namespace.
        None => pod.namespace == namespace,
    };
    let pod_ok = entry
        .get("podSelector")
        .is_none_or(|selector| selects(selector, &pod.labels));
    namespace_ok && pod_ok
}

/// Whether one entry of a rule's `ports` lets `port`/`protocol` to `peer` through (a named port
/// is the destination pod's container port of that name).
fn is_port(entry: &Value, peer: &Peer, port: u16, protocol: &str) -> bool {
    if entry["protocol"].as_str().unwrap_or("TCP") != protocol {
        return false;
    }
    let first = match &entry["port"] {
        Value::Null => return true,
        Value::Number(n) => n.as_u64().expect("a port") as u16,
        Value::String(name) => match peer.pod.as_ref().and_then(|p| p.ports.get(name)) {
            Some(number) => *number,
            None => return false,
        },
        other => panic!("a port is a number or a name: {other}"),
    };
    let last = entry["endPort"].as_u64().map_or(first, |e| e as u16);
    (first..=last).contains(&port)
}

/// Whether a policy of `namespace` lets a connection through in `direction` (`egress`, to
/// `peer`; `ingress`, from it to a selected pod, whose named ports `peer.pod` carries).
fn allows(policy: &Value, direction: &str, peer: &Peer, port: u16, protocol: &str) -> bool {
    let namespace = policy["metadata"]["namespace"]
        .as_str()
        .unwrap_or(ARGO_NAMESPACE);
    let (rules, peers) = match direction {
        "egress" => (&policy["spec"]["egress"], "to"),
        _ => (&policy["spec"]["ingress"], "from"),
    };
    rules
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .any(|rule| {
            let peer_ok = match rule[peers].as_array() {
                Some(entries) if !entries.is_empty() => {
                    entries.iter().any(|e| is_peer(e, peer, namespace))
                }
                _ => true,
            };
            let port_ok = match rule["ports"].as_array() {
                Some(entries) if !entries.is_empty() => {
                    entries.iter().any(|e| is_port(e, peer, port, protocol))
                }
                _ => true,
            };
            peer_ok && port_ok
        })
}

/// The controller's own pod as a peer of ingress: its labels and its named container ports.
fn controller_pod(objects: &[Value]) -> Peer {
    let template = pod_template(objects);
    let labels: BTreeMap<String, String> =
        serde_json::from_value(template["metadata"]["labels"].clone()).expect("labels");
    let mut ports = BTreeMap::new();
    for container in template["spec"]["containers"]
        .as_array()
        .expect("containers")
    {
        for port in container["ports"].as_array().cloned().unwrap_or_default() {
            if let (Some(name), Some(number)) =
                (port["name"].as_str(), port["containerPort"].as_u64())
            {
                ports.insert(name.to_string(), number as u16);
            }
        }
    }
    Peer {
        ip: Ipv4Addr::new(10, 244, 1, 7),
        pod: Some(Pod {
            namespace: ARGO_NAMESPACE.to_string(),
            namespace_labels: labels_of_namespace(ARGO_NAMESPACE),
            labels,
            ports,
        }),
    }
}

fn labels_of_namespace(namespace: &str) -> BTreeMap<String, String> {
    labels(&[("kubernetes.io/metadata.name", namespace)])
}

/// The management cluster's API server, a workload cluster's by each provider's port, the DNS
/// pods: every connection the controller makes, by mode.
fn connections(mode: &str) -> Vec<(&'static str, Peer, u16, &'static str)> {
    let mut out = vec![
        (
            "the API server's endpoint (kubeadm)",
            outside([172, 18, 0, 2]),
            6443,
            "TCP",
        ),
        (
            "the API server's endpoint (managed)",
            outside([10, 0, 0, 1]),
            443,
            "TCP",
        ),
    ];
    if mode == "serviceAccount" {
        let dns = |protocol| {
            (
                "a DNS lookup of a workload cluster's host name",
                pod([10, 244, 0, 3], "kube-system", &[("k8s-app", "kube-dns")]),
                53,
                protocol,
            )
        };
        out.extend([
            dns("UDP"),
            dns("TCP"),
            (
                "a kubeadm workload cluster",
                outside([10, 20, 0, 5]),
                6443,
                "TCP",
            ),
            (
                "an EKS, GKE or AKS cluster",
                outside([52, 1, 2, 3]),
                443,
                "TCP",
            ),
            (
                "vcluster or k0smotron behind a NodePort",
                outside([10, 20, 1, 9]),
                31443,
                "TCP",
            ),
            (
                "a load balancer on 8443",
                outside([10, 20, 2, 2]),
                8443,
                "TCP",
            ),
        ]);
    }
    out
}

fn policy(objects: &[Value]) -> &Value {
    let policy = find(objects, "NetworkPolicy", "capi2argo-controller");
    let target = controller_pod(objects);
    assert!(
        selects(
            &policy["spec"]["podSelector"],
            &target.pod.as_ref().expect("a pod").labels
        ),
        "the NetworkPolicy selects the controller's pods"
    );
    policy
}

/// Regression (issue 47): the shipped policy let the controller out on 443 and 6443 alone, "no
/// DNS needed": with `credentials: serviceAccount` every mint failed on a CNI that enforces
/// policies (workload clusters by host name, on their providers' ports).
#[test]
fn the_shipped_policy_lets_every_documented_mode_through() {
    for variant in ["deploy/controller", "deploy/controller/namespaced"] {
        let Some((_, objects)) = render(variant) else {
            return;
        };
        let policy = policy(&objects);
        for mode in ["admin", "serviceAccount"] {
            for (what, peer, port, protocol) in connections(mode) {
                assert!(
                    allows(policy, "egress", &peer, port, protocol),
                    "{variant}, credentials: {mode}: {what} ({} {port}/{protocol}) is refused",
                    peer.ip
                );
            }
        }
        // What no mode makes stays shut: DNS elsewhere than the cluster's DNS pods, UDP to
        // anything else.
        let elsewhere = pod([10, 244, 2, 2], "default", &[("k8s-app", "kube-dns")]);
        assert!(!allows(policy, "egress", &elsewhere, 53, "UDP"));
        assert!(!allows(policy, "egress", &outside([8, 8, 8, 8]), 53, "UDP"));
        assert!(!allows(
            policy,
            "egress",
            &outside([10, 20, 0, 5]),
            123,
            "UDP"
        ));
        // In: Prometheus on the metrics port, the kubelet on the probes' port, nothing else.
        let controller = controller_pod(&objects);
        let ports = &controller.pod.as_ref().expect("a pod").ports;
        for name in ["metrics", "health"] {
            let port = *ports.get(name).expect("a named port");
            assert!(
                allows(policy, "ingress", &controller, port, "TCP"),
                "{name}"
            );
        }
        assert!(!allows(policy, "ingress", &controller, 9999, "TCP"));
    }
}

/// The book's narrowed policy (the controller chapter's `my-network` overlay) lets the
/// controller reach the workload clusters it names, and nothing else of theirs.
#[test]
fn the_books_narrowed_policy_keeps_only_the_clusters_it_names() {
    let Some(objects) = super::books_overlay("controller.md", "my-network") else {
        return;
    };
    let policy = policy(&objects);
    let api_server = outside([172, 18, 0, 2]);
    assert!(allows(policy, "egress", &api_server, 6443, "TCP"));
    assert!(allows(
        policy,
        "egress",
        &outside([10, 20, 0, 5]),
        6443,
        "TCP"
    ));
    // Nothing else: another address, another port, another cluster's API server on 443.
    assert!(!allows(
        policy,
        "egress",
        &outside([10, 30, 0, 5]),
        6443,
        "TCP"
    ));
    assert!(!allows(
        policy,
        "egress",
        &outside([10, 20, 0, 5]),
        31443,
        "TCP"
    ));
    assert!(!allows(
        policy,
        "egress",
        &outside([52, 1, 2, 3]),
        443,
        "TCP"
    ));
    let dns = pod([10, 244, 0, 3], "kube-system", &[("k8s-app", "kube-dns")]);
    assert!(allows(policy, "egress", &dns, 53, "UDP"));
}

/// The evaluator itself reads the rules as a CNI does.
#[test]
fn the_evaluator_reads_peers_and_ports_as_the_api_documents_them() {
    let policy: Value = serde_json::json!({
        "metadata": {"namespace": "argocd"},
        "spec": {"egress": [
            {"to": [{"namespaceSelector": {"matchLabels": {"team": "a"}},
                     "podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}}],
             "ports": [{"port": 5432}]},
            {"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
             "ports": [{"port": 1000, "endPort": 2000, "protocol": "UDP"}]},
            {"to": [{"podSelector": {}}]}
        ]}
    });
    let mut db = pod([10, 244, 0, 1], "team-a", &[("app", "db")]);
    if let Some(pod) = db.pod.as_mut() {
        pod.namespace_labels.insert("team".into(), "a".into());
    }
    assert!(allows(&policy, "egress", &db, 5432, "TCP"));
    assert!(!allows(&policy, "egress", &db, 5433, "TCP"));
    assert!(allows(
        &policy,
        "egress",
        &outside([10, 2, 0, 1]),
        1500,
        "UDP"
    ));
    assert!(!allows(
        &policy,
        "egress",
        &outside([10, 1, 0, 1]),
        1500,
        "UDP"
    ));
    assert!(!allows(
        &policy,
        "egress",
        &outside([10, 2, 0, 1]),
        1500,
        "TCP"
    ));
    // A podSelector alone: any port, but only pods of the policy's own namespace.
    assert!(allows(
        &policy,
        "egress",
        &pod([10, 244, 0, 9], "argocd", &[]),
        1,
        "TCP"
    ));
    assert!(!allows(
        &policy,
        "egress",
        &pod([10, 244, 0, 9], "other", &[]),
        1,
        "TCP"
    ));
}
