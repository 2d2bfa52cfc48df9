//! Which host handed the function its input, told from what the host writes into it: kpt prints
//! a function's results itself, kustomize and a pipe show only its standard error.
//!
//! Measured with kpt 1.0.0-beta.56, kustomize 4.5.4 and kubectl 1.32's kustomize (v5.5.0): the
//! function runner both tools share (kyaml's) marks every item it sends with an id annotation;
//! kustomize marks items with its resource id too and sends its transformer or generator
//! config, which carries the annotation that made kustomize run the function; `kpt fn eval`
//! and a Kptfile `configMap:` send a ConfigMap named `function-input`. A pipe (`kpt fn source`,
//! `kubectl get`) carries none of these.

use super::input::{Form, Input};
use super::object::Object;
use yaml::Node;

/// Where the function's input came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// `kpt fn eval` or `kpt fn render`: kpt prints the ResourceList's results, in order.
    Kpt,
    /// kustomize (standalone or kubectl's): it never prints results, only standard error.
    Kustomize,
    /// Anything else: a shell pipe, a file, an unknown host.
    Pipe,
}

/// The annotation kyaml's function runner puts on every item it sends, in kpt and kustomize.
const RUNNER_ID_ANNOTATIONS: [&str; 2] = ["internal.config.kubernetes.io/id", "config.k8s.io/id"];
/// Where kpt read each item from, which it writes on every item it sends (kustomize writes none).
const KPT_PATH_ANNOTATIONS: [&str; 2] = [
    "internal.config.kubernetes.io/path",
    "config.kubernetes.io/path",
];
/// The resource id kustomize adds to every item it sends.
const KUSTOMIZE_ID_ANNOTATION: &str = "kustomize.config.k8s.io/id";
/// The annotation of kustomize's function config: how kustomize knows to run the function.
const KUSTOMIZE_FUNCTION_ANNOTATION: &str = "config.kubernetes.io/function";
/// The name of the ConfigMap kpt makes from `key=value` arguments or a Kptfile's `configMap:`.
const KPT_CONFIG_MAP_NAME: &str = "function-input";

impl Caller {
    /// Whether the host prints the ResourceList's results itself, so standard error need not
    /// repeat them.
    pub fn shows_results(self) -> bool {
        self == Caller::Kpt
    }
}

/// The host that sent `input`.
pub fn caller(input: &Input) -> Caller {
    if !matches!(input.form, Form::ResourceList { .. }) {
        return Caller::Pipe;
    }
    let config = input.function_config.as_ref().map(Object::new);
    let items = || input.items.iter().map(|i| Object::new(&i.node));
    let marked = |o: Object, keys: &[&str]| keys.iter().any(|k| o.annotation(k).is_some());
    let run = items().any(|o| marked(o, &RUNNER_ID_ANNOTATIONS));
    // The items say it first: a config file kustomize would run can be given to kpt too.
    if items().any(|o| marked(o, &[KUSTOMIZE_ID_ANNOTATION])) {
        Caller::Kustomize
    } else if run && items().any(|o| marked(o, &KPT_PATH_ANNOTATIONS)) {
        Caller::Kpt
    } else if config.is_some_and(|c| marked(c, &[KUSTOMIZE_FUNCTION_ANNOTATION])) {
        Caller::Kustomize
    } else if run || config.is_some_and(|c| is_kpt_config_map(c.node)) {
        Caller::Kpt
    } else {
        Caller::Pipe
    }
}

fn is_kpt_config_map(node: &Node) -> bool {
    let config = Object::new(node);
    config.is(Some("v1"), "ConfigMap") && config.name() == Some(KPT_CONFIG_MAP_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;

    fn of(text: &str) -> Caller {
        caller(&super::super::parse(text.as_bytes(), &Limits::default()).expect("parses"))
    }

    const SECRET: &str = "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s1\n";

    #[test]
    fn kpt_eval_marks_items_with_the_runners_id() {
        let input = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{SECRET}    annotations:\n      config.kubernetes.io/path: s1.yaml\n      internal.config.kubernetes.io/id: '1'\n      config.k8s.io/id: '1'\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: function-input\n"
        );
        assert_eq!(of(&input), Caller::Kpt);
    }

    #[test]
    fn kpt_over_an_empty_package_is_told_by_its_config_map() {
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: function-input\n  data: {}\n";
        assert_eq!(of(input), Caller::Kpt);
    }

    #[test]
    fn kustomize_sends_its_function_config_and_its_resource_ids() {
        let transformer = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{SECRET}    annotations:\n      kustomize.config.k8s.io/id: |\n        kind: Secret\n      config.k8s.io/id: '1'\n"
        );
        assert_eq!(of(&transformer), Caller::Kustomize);
        let generator = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: fn.capi2argo.dev/v1alpha1\n  kind: Capi2Argo\n  metadata:\n    name: c\n    annotations:\n      config.kubernetes.io/function: |\n        exec:\n          path: ./capi2argo\n";
        assert_eq!(of(generator), Caller::Kustomize);
    }

    #[test]
    fn kpt_given_a_config_file_written_for_kustomize_is_still_kpt() {
        let input = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{SECRET}    annotations:\n      config.kubernetes.io/path: s1.yaml\n      config.k8s.io/id: '1'\nfunctionConfig:\n  apiVersion: fn.capi2argo.dev/v1alpha1\n  kind: Capi2Argo\n  metadata:\n    name: c\n    annotations:\n      config.kubernetes.io/function: |\n        exec:\n          path: ./capi2argo\n"
        );
        assert_eq!(of(&input), Caller::Kpt);
    }

    #[test]
    fn a_pipe_of_kpt_fn_source_or_kubectl_is_no_host() {
        let source = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{SECRET}    annotations:\n      config.kubernetes.io/path: s1.yaml\n      internal.config.kubernetes.io/seqindent: compact\n"
        );
        assert_eq!(of(&source), Caller::Pipe);
        assert_eq!(of("apiVersion: v1\nkind: List\nitems: []\n"), Caller::Pipe);
        assert_eq!(
            of(&SECRET.replace("- ", "").replace("\n  ", "\n")),
            Caller::Pipe
        );
    }
}
