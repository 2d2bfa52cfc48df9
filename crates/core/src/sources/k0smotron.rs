//! k0smotron: a standalone control plane's `<name>-kubeconfig`, labelled, the kubeconfig under
//! `value` (with Cluster API, the capi source takes the same Secret).

use super::{ClusterName, Identity, Label, Names, Owner, Preset, Shape, Source};

pub const PRESET: Preset = Preset {
    name: "k0smotron",
    build: source,
};

// k0sproject/k0smotron internal/controller/k0smotron.io/k0smotroncluster_kubeconfig.go:
// <name>-kubeconfig, key value, type cluster.x-k8s.io/secret (since v0.6.0, 8fc605f), labels
// app=k0smotron and cluster=<name>, app.kubernetes.io/component=kubeconfig since v1.10.3
// (f67271b); owned by the k0smotron.io Cluster, whose name it carries.
fn source() -> Source {
    let base = |releases| Shape {
        types: Some(vec!["cluster.x-k8s.io/secret".into()]),
        ..Shape::named(releases, Names::Suffix("-kubeconfig".into()))
    };
    Source {
        platform: "k0smotron",
        ..Source::new(
            vec![
                Shape {
                    labels: vec![
                        Label::is("app", "k0smotron"),
                        Label::is("app.kubernetes.io/component", "kubeconfig"),
                        Label::any("cluster"),
                    ],
                    identity: Identity::Labelled,
                    ..base("v1.10.3 and later")
                },
                Shape {
                    labels: vec![Label::is("app", "k0smotron"), Label::any("cluster")],
                    owner: Some(Owner {
                        group: Some("k0smotron.io"),
                        kind: "Cluster",
                        names_cluster: true,
                    }),
                    ..base(
                        "v0.6.0 to v1.10.2 (v2 keeps such a Secret until its certificate rotates)",
                    )
                },
            ],
            &["value"],
            vec![ClusterName::Label("cluster".into())],
        )
    }
}
