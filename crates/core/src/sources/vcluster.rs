//! vcluster: `vc-<name>` and the Secrets `exportKubeConfig` writes, the kubeconfig under `config`.

use super::{ClusterName, Identity, Label, Names, Preset, Shape, Source};

pub const PRESET: Preset = Preset {
    name: "vcluster",
    build: source,
};

/// The keys vcluster writes beside the kubeconfig: a set only it writes.
const KEYS: [&str; 4] = [
    "config",
    "certificate-authority",
    "client-certificate",
    "client-key",
];

// loft-sh/vcluster pkg/util/kubeconfig/kubeconfig.go: `vc-<name>` and the
// exportKubeConfig.additionalSecrets, key `config` beside `certificate-authority`,
// `client-certificate`, `client-key`, `token` (since 7fce43f). Labels `app: vcluster`,
// `vcluster-name` since v0.24.0 (b2f5772), set only when the Secret is created, so an
// installation upgraded from an older release keeps its Secret unlabelled.
fn source() -> Source {
    let keys =
        |more: &[&str]| -> Vec<String> { KEYS.iter().chain(more).map(|k| k.to_string()).collect() };
    Source {
        platform: "vcluster",
        ..Source::new(
            vec![
                Shape {
                    labels: vec![Label::is("app", "vcluster"), Label::any("vcluster-name")],
                    identity: Identity::Shared,
                    ..Shape::named(
                        "v0.24.0 and later: vc-<name> and exportKubeConfig.additionalSecrets",
                        Names::Any,
                    )
                },
                Shape {
                    key_set: keys(&[]),
                    ..Shape::named(
                        "v0.20 to v0.23, and later releases upgraded from them",
                        Names::Prefix("vc-".into()),
                    )
                },
                Shape {
                    key_set: keys(&["token"]),
                    ..Shape::named("v0.20 to v0.23: exportKubeConfig.secret", Names::Any)
                },
            ],
            &["config"],
            vec![
                ClusterName::Label("vcluster-name".into()),
                ClusterName::Owner("Service".into()),
                ClusterName::SecretName,
            ],
        )
    }
}
