//! The ApplicationSet controller's policy: what its flags and Argo CD's `argocd-cmd-params-cm`
//! say, over the settings, and whether an ApplicationSet's own `applicationsSync` counts.

use krm::object::Object;
use yaml::Node;

/// The ConfigMap Argo CD's components read their flags from.
pub const CMD_PARAMS: &str = "argocd-cmd-params-cm";
const POLICY_PARAM: &str = "applicationsetcontroller.policy";
const OVERRIDE_PARAM: &str = "applicationsetcontroller.enable.policy.override";

/// Whether an item is Argo CD's `argocd-cmd-params-cm` in its namespace.
pub(crate) fn is_controller_params(object: Object, argo_namespace: &str) -> bool {
    object.is(Some("v1"), "ConfigMap")
        && object.name() == Some(CMD_PARAMS)
        && object.namespace() == argo_namespace
}

/// The ApplicationSet controller's own policy (its `--policy` flag, or
/// `applicationsetcontroller.policy` in `argocd-cmd-params-cm`), and whether an
/// ApplicationSet's `syncPolicy.applicationsSync` may override it (`--enable-policy-override`,
/// on by default only when no policy is set).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ControllerPolicy {
    /// `sync`, `create-only`, `create-update` or `create-delete`; `None`: not set (`sync`).
    pub policy: Option<String>,
    /// `None`: the controller's default.
    pub allow_override: Option<bool>,
}

impl ControllerPolicy {
    /// What `argocd-cmd-params-cm` says, over what the settings say; the keys it sets that
    /// the settings set otherwise.
    pub(crate) fn with_params(&self, object: Object) -> (ControllerPolicy, Vec<&'static str>) {
        let get = |key| object.node.path(&["data", key]).and_then(Node::as_str);
        let mut policy = self.clone();
        let mut differ = Vec::new();
        if let Some(p) = get(POLICY_PARAM).map(str::trim) {
            let p = (!p.is_empty()).then(|| p.to_string());
            if self.policy.is_some() && self.policy != p {
                differ.push(POLICY_PARAM);
            }
            policy.policy = p;
        }
        if let Some(o) = get(OVERRIDE_PARAM).and_then(go_bool) {
            let o = Some(o);
            if self.allow_override.is_some() && self.allow_override != o {
                differ.push(OVERRIDE_PARAM);
            }
            policy.allow_override = o;
        }
        (policy, differ)
    }

    /// The policy an ApplicationSet is synced with (utils.DefaultPolicy), and whether it lets
    /// Applications be deleted.
    pub fn effective(&self, appset: Option<&str>) -> (String, bool) {
        let controller = self.policy.clone().unwrap_or_default();
        let allow = self.allow_override.unwrap_or(controller.is_empty());
        let word = match appset {
            Some(own) if allow => own.to_string(),
            _ if controller.is_empty() => "sync".to_string(),
            _ => controller,
        };
        let deletes = !matches!(word.as_str(), "create-only" | "create-update");
        (word, deletes)
    }
}

/// A boolean as argo-cd's `env.ParseBoolFromEnv` reads the variable a ConfigMap key becomes:
/// `true` or `false` in any case (`strings.EqualFold`, whose folding also takes U+017F `ſ` for
/// `s`); anything else, the empty string included, is no value and leaves the default.
fn go_bool(value: &str) -> Option<bool> {
    let folded: String = value
        .chars()
        .map(|c| match c {
            '\u{17f}' => 's',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    match folded.as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `"True"` was read as false, and a value Argo CD ignores as false rather than
    /// as the default.
    #[test]
    fn the_override_is_read_as_argo_cd_reads_it() {
        for (value, want) in [
            ("true", Some(true)),
            ("True", Some(true)),
            ("TRUE", Some(true)),
            ("False", Some(false)),
            ("fal\u{17f}e", Some(false)),
            ("", None),
            ("yes", None),
            (" true", None),
        ] {
            assert_eq!(go_bool(value), want, "{value:?}");
        }
    }

    #[test]
    fn an_application_sets_policy_counts_only_where_the_controller_lets_it() {
        let default = ControllerPolicy::default();
        assert_eq!(default.effective(None), ("sync".into(), true));
        assert_eq!(
            default.effective(Some("create-only")),
            ("create-only".into(), false)
        );
        let strict = ControllerPolicy {
            policy: Some("sync".into()),
            allow_override: None,
        };
        assert_eq!(strict.effective(Some("create-only")), ("sync".into(), true));
        let open = ControllerPolicy {
            policy: Some("create-delete".into()),
            allow_override: Some(true),
        };
        assert_eq!(
            open.effective(Some("create-update")),
            ("create-update".into(), false)
        );
        assert_eq!(open.effective(None), ("create-delete".into(), true));
    }
}
