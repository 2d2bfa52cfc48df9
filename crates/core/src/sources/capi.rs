//! Cluster API: `<cluster>-kubeconfig` (and the providers' user kubeconfigs beside it), labelled
//! with the cluster's name, typed `cluster.x-k8s.io/secret` (or Opaque, or untyped, as RKE2, k3s
//! and CAPZ write it), the kubeconfig under `value`; the `Cluster` object beside it says more.

use super::ClusterName;
use super::{Exclusion, Hints, Identity, Label, Names, Preset, Reads, Shape, Source, Variant};

/// The label Cluster API puts on every kubeconfig Secret it writes.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// The Secret type Cluster API gives the Secrets it writes (util/secret/consts.go).
const SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

pub const PRESET: Preset = Preset {
    name: "capi",
    build: source,
};

// cluster-api util/kubeconfig/kubeconfig.go, util/secret/consts.go: the same Secret from v1.5
// to v1.14 (only its owner's apiVersion moved to v1beta2 in v1.11; v1.13.0 cf3d8f81 and v1.14.0
// 560d4acf changed nothing of it). The user kubeconfigs are the providers': CAPA's and CAPG's
// `<cluster>-user-kubeconfig`, CAPZ's `<cluster>-kubeconfig-user`.
const RELEASES: &str = "v1.5 to v1.14";

fn source() -> Source {
    let shape = |suffix: &str, variant| Shape {
        labels: vec![Label::any(CLUSTER_NAME_LABEL)],
        types: Some(vec![SECRET_TYPE.into(), "Opaque".into(), String::new()]),
        identity: Identity::Certain,
        variant,
        exclusions: vec![
            // K0sControlPlane's `<cluster>-proxied-kubeconfig` and `-tunneled-kubeconfig`:
            // named after the cluster its label names, with something more.
            Exclusion::NamedAfterLabel {
                key: CLUSTER_NAME_LABEL,
            },
            // HyperShift's kubeconfig for its own Cluster API controllers, at an address only
            // its namespace reaches (control-plane-operator `manifests/kas.go`,
            // `KubeconfigScopeLabel`); the HostedCluster's reachable one is
            // `<hc>-admin-kubeconfig`.
            Exclusion::Label {
                key: "hypershift.openshift.io/kubeconfig",
                why: "HyperShift's in-cluster kubeconfig of a hosted control plane, reachable only from its namespace; the hypershift source converts the HostedCluster's <name>-admin-kubeconfig (sources: capi,hypershift)",
            },
        ],
        ..Shape::named(RELEASES, Names::Suffix(suffix.into()))
    };
    Source {
        platform: "Cluster API",
        reads: Reads { clusters: true },
        hints: Hints {
            missing_labels: true,
            wrong_type: true,
            misnamed: Some("kubeconfig"),
        },
        ..Source::new(
            // The user kubeconfigs first: their names end in `-kubeconfig` too.
            vec![
                shape("-user-kubeconfig", Variant::User),
                shape("-kubeconfig-user", Variant::User),
                shape("-kubeconfig", Variant::Plain),
            ],
            &["value"],
            vec![ClusterName::SecretName],
        )
    }
}
