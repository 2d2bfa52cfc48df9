//! The settings of an installed controller, read beside the fleet: where no other settings are
//! given, a plan over what `kubectl` read of a management cluster is made with the settings the
//! controller there runs with, so that it says what the controller will do (token mode too).

use krm::Item;
use krm::object::Object;
use yaml::Node;

/// The labels deploy/controller's settings ConfigMap carries (its generator gives them): a
/// ConfigMap with both is capi2argo's settings.
pub const SETTINGS_LABELS: [(&str, &str); 2] = [
    ("app.kubernetes.io/part-of", "capi2argo"),
    ("app.kubernetes.io/component", "settings"),
];

/// The label deploy/controller's Deployment carries.
pub const CONTROLLER_LABEL: (&str, &str) = ("app.kubernetes.io/name", "capi2argo-controller");

/// Whether an item is a settings ConfigMap of capi2argo's.
pub fn is_settings(object: Object) -> bool {
    object.is(Some("v1"), "ConfigMap")
        && SETTINGS_LABELS
            .iter()
            .all(|(k, v)| object.label(k) == Some(*v))
}

/// Whether an item is deploy/controller's Deployment.
pub fn is_controller(object: Object) -> bool {
    object.is(Some("apps/v1"), "Deployment")
        && object.label(CONTROLLER_LABEL.0) == Some(CONTROLLER_LABEL.1)
}

/// The settings ConfigMap taken, and why that one (said in an info result).
pub struct Installed<'n, 'a> {
    pub settings: &'n Node<'a>,
    pub note: String,
}

/// The controller's settings among `items`: the ConfigMap its Deployment mounts when the
/// Deployment came too; else the only one; else the newest (an older one lingers after a change
/// of the settings, which names a new one).
pub fn find<'n, 'a>(items: &'n [Item<'a>]) -> Option<Installed<'n, 'a>> {
    let settings: Vec<&Node> = items
        .iter()
        .map(|i| &i.node)
        .filter(|n| is_settings(Object::new(n)))
        .collect();
    let first = *settings.first()?;
    let id = |n: &Node| {
        let o = Object::new(n);
        format!("{}/{}", o.namespace(), o.name().unwrap_or_default())
    };
    let mounted: Vec<(String, String)> = items
        .iter()
        .map(|i| &i.node)
        .filter(|n| is_controller(Object::new(n)))
        .flat_map(|n| {
            let namespace = Object::new(n).namespace().to_string();
            let deployment = id(n);
            n.path(&["spec", "template", "spec", "volumes"])
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v.path(&["configMap", "name"]).and_then(Node::as_str))
                .map(|name| (format!("{namespace}/{name}"), deployment.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let by_deployment = settings.iter().find_map(|n| {
        let this = id(n);
        mounted
            .iter()
            .find(|(name, _)| *name == this)
            .map(|(_, deployment)| (*n, format!("the one Deployment {deployment} mounts")))
    });
    let (taken, why) = match by_deployment {
        Some(found) => found,
        None if settings.len() == 1 => (first, "the only one in the input".to_string()),
        None => {
            let newest = settings
                .iter()
                .copied()
                .max_by_key(|n| {
                    n.path(&["metadata", "creationTimestamp"])
                        .and_then(Node::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .unwrap_or(first);
            let why = format!(
                "the newest of {} in the input: read the controller's Deployment too, and the one it mounts is taken",
                settings.len()
            );
            (newest, why)
        }
    };
    Some(Installed {
        settings: taken,
        note: format!(
            "settings: the installed controller's ({why}), so the plan is what the controller will do; --set adds to them, --fn-config replaces them"
        ),
    })
}
