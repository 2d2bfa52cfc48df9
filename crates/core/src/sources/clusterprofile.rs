//! SIG Multicluster's Cluster Inventory API: a ClusterProfile (`multicluster.x-k8s.io` v1alpha1 and
//! v1alpha2, cluster-inventory-api's `apis/*/clusterprofile_types.go`) per cluster, written
//! by OCM, GKE Fleet and Azure KubeFleet (no Cluster API component writes them). Not a
//! kubeconfig Secret: how Argo CD reaches the cluster comes from the profile's access providers
//! and the consumer's own (the setting `accessProviders`; `crate::profiles`).

use super::{ClusterName, Kind, Preset, Source};

pub const PRESET: Preset = Preset {
    name: "clusterprofile",
    build: source,
};

fn source() -> Source {
    Source {
        kind: Kind::ClusterProfiles,
        platform: "the Cluster Inventory API",
        ..Source::new(Vec::new(), &[], vec![ClusterName::SecretName])
    }
}
