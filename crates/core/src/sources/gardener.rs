//! Gardener (v1.113 and earlier): a shoot's `<shoot>.kubeconfig`, labelled with its role.

use super::{ClusterName, Identity, Label, Names, Preset, Shape, Source};

pub const PRESET: Preset = Preset {
    name: "gardener",
    build: source,
};

// gardener pkg/gardenlet/operation/botanist/secrets.go before v1.114 (3b181ba stopped writing
// it): <shoot>.kubeconfig, key kubeconfig, label gardener.cloud/role=kubeconfig.
fn source() -> Source {
    Source {
        platform: "Gardener",
        ..Source::new(
            vec![Shape {
                labels: vec![Label::is("gardener.cloud/role", "kubeconfig")],
                identity: Identity::Labelled,
                ..Shape::named("v1.113 and earlier", Names::Suffix(".kubeconfig".into()))
            }],
            &["kubeconfig"],
            vec![ClusterName::SecretName],
        )
    }
}
