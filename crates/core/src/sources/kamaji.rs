//! Kamaji: a TenantControlPlane's `<tcp>-admin-kubeconfig`, labelled, the kubeconfig under
//! `admin.conf` (the advertised endpoint) or `admin.svc` (the in-cluster Service).

use super::{ClusterName, Identity, Label, Names, Precedence, Preset, Shape, Source};

pub const PRESET: Preset = Preset {
    name: "kamaji",
    build: source,
};

/// The label the Cluster API provider for Kamaji puts on the kubeconfig Secret it copies from a
/// TenantControlPlane's (cluster-api-control-plane-provider-kamaji
/// `controllers/kamajicontrolplane_controller_resources.go`).
const COPY_LABEL: &str = "kamaji.clastix.io/tcp";

// clastix/kamaji internal/resources/kubeconfig.go: <tcp>-admin-kubeconfig, labelled since the
// first release (432c50b), keys admin.conf (the advertised endpoint), super-admin.conf (v0.4.0),
// admin.svc (the in-cluster Service, v0.4.1).
fn source() -> Source {
    Source {
        platform: "Kamaji",
        precedence: Precedence {
            copied_as: Some(COPY_LABEL),
            prefer: None,
        },
        ..Source::new(
            vec![Shape {
                labels: vec![
                    Label::is("kamaji.clastix.io/component", "admin-kubeconfig"),
                    Label::any("kamaji.clastix.io/name"),
                ],
                identity: Identity::Labelled,
                ..Shape::named("every release", Names::Suffix("-admin-kubeconfig".into()))
            }],
            &["admin.conf", "admin.svc"],
            vec![ClusterName::Label("kamaji.clastix.io/name".into())],
        )
    }
}
