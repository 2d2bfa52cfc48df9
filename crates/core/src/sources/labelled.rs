//! Any Secret a person labels `capi2argo.dev/kubeconfig: "true"`, the kubeconfig under `kubeconfig`.

use super::{ClusterName, Identity, Label, Names, Preset, Shape, Source};

pub const PRESET: Preset = Preset {
    name: "labelled",
    build: source,
};

fn source() -> Source {
    Source {
        platform: "a person",
        ..Source::new(
            vec![Shape {
                labels: vec![Label::is("capi2argo.dev/kubeconfig", "true")],
                identity: Identity::Labelled,
                ..Shape::named("", Names::Any)
            }],
            &["kubeconfig"],
            vec![ClusterName::SecretName],
        )
    }
}
