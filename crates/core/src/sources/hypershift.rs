//! HyperShift: a HostedCluster's `<hc>-admin-kubeconfig` (and `<hc>-custom-admin-kubeconfig`),
//! owned by the HostedCluster, the kubeconfig under `kubeconfig`.

use super::{ClusterName, Names, Owner, Preset, Shape, Source, Variant};

pub const PRESET: Preset = Preset {
    name: "hypershift",
    build: source,
};

// openshift/hypershift hypershift-operator/controllers/manifests/manifests.go and
// hostedcluster_controller.go: <hc>-admin-kubeconfig, key kubeconfig, owned by the HostedCluster;
// <hc>-custom-admin-kubeconfig beside it when kubeAPIServerDNSName is set (v0.1.58, 712c702), a
// sibling of the same cluster.
fn source() -> Source {
    let owned = |releases, suffix: &str, variant| Shape {
        owner: Some(Owner {
            group: Some("hypershift.openshift.io"),
            kind: "HostedCluster",
            names_cluster: true,
        }),
        types: Some(vec!["Opaque".into(), String::new()]),
        variant,
        ..Shape::named(releases, Names::Suffix(suffix.into()))
    };
    Source {
        platform: "HyperShift",
        ..Source::new(
            vec![
                owned(
                    "v0.1.58 and later, with kubeAPIServerDNSName",
                    "-custom-admin-kubeconfig",
                    Variant::Sibling,
                ),
                owned("every release", "-admin-kubeconfig", Variant::Plain),
            ],
            &["kubeconfig"],
            vec![
                ClusterName::Owner("HostedCluster".into()),
                ClusterName::SecretName,
            ],
        )
    }
}
