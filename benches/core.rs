//! Criterion micro-benchmarks of the core stages (issue 6): `cargo bench --bench core`.
//!
//! - `scan/1000`: `krm::parse` of a 1000-item kpt ResourceList (item spans and the
//!   YAML tree of the whole input);
//! - `kubeconfig/kcp`, `kubeconfig/eks-exec`: `kubeconfig::read` of one realistic kubeconfig
//!   (the KubeadmControlPlane admin kubeconfig with RSA-2048 certificates, and CAPA's
//!   aws-iam-authenticator exec kubeconfig);
//! - `emit/1000`: `krm::render` of the same list with every item kept (the verbatim
//!   copy path that every untouched item takes);
//! - `run/1000`: `capi2argo_core::run` on the same list, everything included.
//!
//! The inputs are built here from the checked-in fixtures (tests/fixtures/providers), so the
//! benchmark needs nothing generated: each round of the list holds the kubeadm fixture's
//! Secrets (its kubeconfig plus the -ca/-etcd/-sa/-proxy/bootstrap Secrets that are skipped),
//! the EKS and GKE fixtures' Secrets, and an unrelated ConfigMap, with the cluster names made
//! unique per round, wrapped with the annotations kpt adds. The end-to-end figures at fleet
//! scale come from bench/run.py.

use std::hint::black_box;
use std::time::Duration;

use base64::Engine;
use capi2argo_core::Limits;
use capi2argo_core::internals::kubeconfig::{self, Credentials};
use capi2argo_krm::{self as krm, Out};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const KUBEADM: &str = include_str!("../tests/fixtures/providers/kubeadm.yaml");
const EKS: &str = include_str!("../tests/fixtures/providers/eks.yaml");
const GKE: &str = include_str!("../tests/fixtures/providers/gke.yaml");

/// The YAML documents of a fixture file, comments dropped.
fn documents(text: &str) -> Vec<String> {
    text.split("\n---\n")
        .map(|d| {
            d.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|d| !d.trim().is_empty())
        .collect()
}

/// One resource as a kpt ResourceList item: indented, with kpt's annotations at the end of `metadata`.
fn kpt_item(doc: &str, path: &str, index: usize, id: usize) -> String {
    let annotations = format!(
        "  annotations:\n    config.kubernetes.io/index: '{index}'\n    config.kubernetes.io/path: '{path}'\n    \
         internal.config.kubernetes.io/index: '{index}'\n    internal.config.kubernetes.io/path: '{path}'\n    \
         internal.config.kubernetes.io/seqindent: 'compact'\n    internal.config.kubernetes.io/id: '{id}'\n    \
         config.k8s.io/id: '{id}'\n"
    );
    let mut out = String::new();
    let mut in_metadata = false;
    let mut done = false;
    for line in doc.lines() {
        if in_metadata && !done && !line.starts_with("  ") {
            out.push_str(&annotations);
            done = true;
        }
        in_metadata |= line == "metadata:";
        out.push_str(line);
        out.push('\n');
    }
    if in_metadata && !done {
        out.push_str(&annotations);
    }
    let mut item = String::new();
    for (i, line) in out.lines().enumerate() {
        item.push_str(if i == 0 { "- " } else { "  " });
        item.push_str(line);
        item.push('\n');
    }
    item
}

/// A kpt ResourceList of `count` items built from the fixtures (see the module docs).
fn fleet(count: usize) -> String {
    let mut templates: Vec<(String, &str)> = Vec::new();
    for doc in documents(KUBEADM) {
        templates.push((doc, "prod-eu-1"));
    }
    for doc in documents(EKS) {
        templates.push((doc, "payments-eks"));
    }
    for doc in documents(GKE) {
        templates.push((doc, "gke-analytics"));
    }
    templates.push((
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: apps\ndata:\n  \
         settings.yaml: |\n    port: 8080\n    upstreams: [db, cache]\n"
            .to_string(),
        "app",
    ));
    let mut out = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    for i in 0..count {
        let (doc, name) = &templates[i % templates.len()];
        let round = i / templates.len();
        let doc = doc.replace(name, &format!("{name}-r{round:04}"));
        out.push_str(&kpt_item(
            &doc,
            &format!("fleet/r{round:04}.yaml"),
            i % templates.len(),
            i + 1,
        ));
    }
    out
}

/// The decoded `data.value` of the first Secret in `fixture` whose name ends in `suffix`.
fn kubeconfig_of(fixture: &str, suffix: &str) -> String {
    let doc = documents(fixture)
        .into_iter()
        .find(|d| {
            d.lines()
                .any(|l| l.starts_with("  name: ") && l.ends_with(suffix))
        })
        .expect("fixture Secret");
    let value = doc
        .lines()
        .find_map(|l| l.strip_prefix("  value: "))
        .expect("data.value");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value)
        .expect("base64");
    String::from_utf8(bytes).expect("UTF-8")
}

fn benches(c: &mut Criterion) {
    let limits = Limits::default();
    let list = fleet(1000);
    let options = capi2argo_core::Options::default();

    // The inputs must be what the stages expect, or the figures mean nothing.
    let parsed = krm::parse(list.as_bytes(), &limits).expect("the list parses");
    assert_eq!(parsed.items.len(), 1000);
    let outcome = capi2argo_core::run(list.as_bytes(), &options).expect("the list runs");
    assert!(!outcome.failed(), "the list converts without errors");
    let kcp = kubeconfig_of(KUBEADM, "prod-eu-1-kubeconfig");
    let eks_exec = kubeconfig_of(EKS, "payments-eks-user-kubeconfig");
    for text in [&kcp, &eks_exec] {
        let reading = kubeconfig::read(text, None, Credentials::Read, &limits);
        assert!(reading.connection.is_some(), "the kubeconfig converts");
    }

    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes(list.len() as u64));
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function("1000", |b| {
        b.iter(|| krm::parse(black_box(list.as_bytes()), &limits))
    });
    g.finish();

    let mut g = c.benchmark_group("kubeconfig");
    for (name, text) in [("kcp", &kcp), ("eks-exec", &eks_exec)] {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| kubeconfig::read(black_box(text), None, Credentials::Read, &limits))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("emit");
    g.throughput(Throughput::Bytes(list.len() as u64));
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    let keep: Vec<Out> = parsed.items.iter().map(Out::Keep).collect();
    g.bench_function("1000", |b| {
        b.iter(|| {
            let mut out = String::new();
            krm::render(
                black_box(&parsed),
                &keep,
                &krm::TextStore::default(),
                &[],
                &mut |s| out.push_str(s),
            );
            out
        })
    });
    g.finish();

    let mut g = c.benchmark_group("run");
    g.throughput(Throughput::Bytes(list.len() as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("1000", |b| {
        b.iter(|| capi2argo_core::run(black_box(list.as_bytes()), &options))
    });
    g.finish();
}

criterion_group!(core, benches);
criterion_main!(core);
