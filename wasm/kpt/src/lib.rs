//! capi2argo for kpt's WASM runtime: the shared core behind the Go `js/wasm` ABI kpt's Node glue speaks.
//!
//! kpt (`KPT_FN_WASM_RUNTIME=nodejs`, `--allow-alpha-wasm`) loads the module with Go's
//! `wasm_exec.js` glue, calls the JS function `processResourceList(input)` the module registers,
//! and prints what it returns. `go_abi` is that ABI; this file is plain, host-testable Rust.

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod go_abi;

use capi2argo_core::host::{self, Exit};
use capi2argo_core::{Options, Severity};

/// What the glue gets back: the output ResourceList, and whether the run failed.
pub struct Response {
    pub output: String,
    pub failed: bool,
}

/// Runs the core on the ResourceList kpt sends, with the host's `random` bytes for sealing.
/// kpt's runtime has no exit code of its own, so a failure is an error result in a ResourceList
/// (kpt needs the literal `kind: ResourceList`).
pub fn process(input: &str, random: Option<[u8; 32]>) -> Response {
    let options = Options {
        random,
        ..Options::default()
    };
    let (output, report) = host::drive_to_string(input.as_bytes(), &options);
    match report.unusable_reason() {
        None => Response {
            failed: report.exit == Exit::Failure,
            output,
        },
        // Unusable input: nothing to pass through, only the reason.
        Some(reason) => Response {
            output: capi2argo_core::failure_resource_list(reason),
            failed: true,
        },
    }
}

/// What kpt prints when `processResourceList` gave it something that is not a YAML ResourceList
/// (its Node glue looks for `kind: ResourceList`; its wasmtime runtime appends this to the
/// error): the run's error results in a YAML ResourceList, so kpt shows the reason.
pub fn process_errors(input: &str) -> String {
    let (_, report) = host::drive_to_string(input.as_bytes(), &Options::default());
    let errors: Vec<String> = if let Some(reason) = report.unusable_reason() {
        vec![reason.to_string()]
    } else {
        report
            .results
            .iter()
            .filter(|r| r.severity == Severity::Error)
            .map(ToString::to_string)
            .collect()
    };
    let message = if errors.is_empty() {
        "the function's output is not a YAML ResourceList (kpt sends YAML; this input was another form)".to_string()
    } else {
        errors.join("; ")
    };
    capi2argo_core::failure_resource_list(&message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_like_the_native_binary() {
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: c-kubeconfig\n    namespace: ns\n    labels: {cluster.x-k8s.io/cluster-name: c}\n  stringData:\n    value: |\n      clusters: [{name: c, cluster: {server: 'https://c'}}]\n      users: [{name: u, user: {token: t}}]\n";
        let response = process(input, None);
        assert!(!response.failed);
        assert_eq!(
            response.output,
            capi2argo_core::run(input.as_bytes(), &Options::default())
                .unwrap()
                .output
        );
        assert!(response.output.contains("name: cluster-c\n"));
    }

    #[test]
    fn errors_function_answers_with_a_yaml_resource_list() {
        let out = process_errors("items: [");
        assert!(out.contains("kind: ResourceList\n"), "{out}");
        assert!(out.contains("severity: error\n"), "{out}");
        // JSON in gives JSON out, which kpt's glue does not recognise: it asks for errors.
        let json = r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[]}"#;
        assert!(!process(json, None).output.contains("kind: ResourceList"));
        assert!(process_errors(json).contains("kind: ResourceList\n"));
    }

    #[test]
    fn unusable_input_is_an_error_result_in_a_resource_list() {
        let response = process("items: [", None);
        assert!(response.failed);
        assert!(response.output.contains("kind: ResourceList\n"));
        assert!(
            response.output.contains("severity: error\n"),
            "{}",
            response.output
        );
    }
}
