//! Crossplane: the connection Secrets of managed resources, composites and claims, typed
//! `connection.crossplane.io/v1alpha1`, the kubeconfig under `kubeconfig`.

use super::{ClusterName, Names, Precedence, Prefer, Preset, Shape, Source};
use krm::object::Object;
use yaml::Node;

pub const PRESET: Preset = Preset {
    name: "crossplane",
    build: source,
};

/// Crossplane's connection Secrets' type.
pub const SECRET_TYPE: &str = "connection.crossplane.io/v1alpha1";

// crossplane-runtime pkg/resource/resource.go (SecretTypeConnection) and the connection
// publishers of managed resources, composites and claims: the name is the user's (or the
// composite's UID), key kubeconfig.
fn source() -> Source {
    Source {
        platform: "Crossplane",
        precedence: Precedence {
            copied_as: None,
            prefer: Some(Prefer {
                why: "the same connection details as a Crossplane claim's Secret, which wins over its composite's and its managed resource's",
                pick: claim,
            }),
        },
        ..Source::new(
            vec![Shape {
                types: Some(vec![SECRET_TYPE.into()]),
                ..Shape::named("every release", Names::Any)
            }],
            &["kubeconfig"],
            vec![ClusterName::SecretName],
        )
    }
}

/// A claim's Secret among Secrets of one server: the one whose controller owner's kind, with an
/// `X` in front, is another one's owner in the same API group (a composite resource definition
/// names its composite `X<claim kind>`, the convention Crossplane's own definitions follow); the
/// managed resource's owner is in a provider's group.
fn claim(secrets: &[Object]) -> Option<usize> {
    let owner = |object: &Object| -> Option<(String, String)> {
        let refs = object.node.path(&["metadata", "ownerReferences"])?;
        let first = refs
            .as_seq()?
            .iter()
            .find(|r| r.get("controller").and_then(Node::as_bool) == Some(true))?;
        let group = first
            .get("apiVersion")
            .and_then(Node::as_str)?
            .split('/')
            .next()?;
        let kind = first.get("kind").and_then(Node::as_str)?;
        Some((group.to_string(), kind.to_string()))
    };
    let owners: Vec<Option<(String, String)>> = secrets.iter().map(owner).collect();
    owners.iter().position(|claim| {
        claim.as_ref().is_some_and(|(group, kind)| {
            owners
                .iter()
                .flatten()
                .any(|(g, k)| g == group && *k == format!("X{kind}"))
        })
    })
}
