//! Kubewarden's WASI policy contract around the core (kubewarden-controller
//! `crates/policy-evaluator/src/runtimes/wasi_cli/runtime.rs`): `validate` gets
//! `{"request": …, "settings": …}` and answers a `ValidationResponse`
//! (`{"accepted", "message", "code", "mutated_object", "warnings"}`); `validate-settings` gets the
//! settings and answers `{"valid", "message"}`.
//!
//! A `kubernetes` policy's request is an AdmissionRequest: its `object`, when an Argo CD cluster
//! Secret, goes through the validator (`action: validate`); anything else is accepted untouched.
//! A `raw` policy's request is the object itself: a ResourceList or List of kubeconfig Secrets is
//! converted, and the Argo CD Secrets come back in `mutated_object`.

use capi2argo_core::{Options, Severity};
use serde_json::{Value, json};

/// The label Argo CD knows cluster Secrets by.
const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";

/// The policy's settings as the functionConfig the core reads (the same keys as everywhere).
fn function_config(settings: &Value) -> Result<String, String> {
    let spec = match settings {
        Value::Null => json!({}),
        Value::Object(_) => settings.clone(),
        other => return Err(format!("settings must be an object, got {other}")),
    };
    Ok(json!({
        "apiVersion": capi2argo_core::API_VERSION,
        "kind": capi2argo_core::KIND,
        "metadata": {"name": "kubewarden-settings"},
        "spec": spec,
    })
    .to_string())
}

fn options(settings: &Value, overrides: &[&str], now: Option<i64>) -> Result<Options, String> {
    Ok(Options {
        function_config: Some(function_config(settings)?),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        now,
        ..Options::default()
    })
}

/// `validate-settings`: the settings checked by the same reader the function uses.
pub fn validate_settings(input: &[u8]) -> String {
    let answer = |valid: bool, message: Option<String>| {
        json!({"valid": valid, "message": message}).to_string()
    };
    let settings: Value = match serde_json::from_slice(input) {
        Ok(v) => v,
        Err(e) => return answer(false, Some(format!("settings are not JSON: {e}"))),
    };
    let options = match options(&settings, &[], None) {
        Ok(o) => o,
        Err(e) => return answer(false, Some(e)),
    };
    match capi2argo_core::run(b"", &options) {
        Ok(outcome) if !outcome.failed() => answer(true, None),
        Ok(outcome) => answer(false, Some(errors(&outcome.results).join("; "))),
        Err(e) => answer(false, Some(e.to_string())),
    }
}

fn errors(results: &[capi2argo_core::Finding]) -> Vec<String> {
    results
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(ToString::to_string)
        .collect()
}

fn warnings(results: &[capi2argo_core::Finding]) -> Vec<String> {
    results
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .map(ToString::to_string)
        .collect()
}

fn accept(warnings: Vec<String>, mutated: Option<Value>) -> String {
    let mut response = json!({"accepted": true});
    if !warnings.is_empty() {
        response["warnings"] = json!(warnings);
    }
    if let Some(object) = mutated {
        response["mutated_object"] = object;
    }
    response.to_string()
}

fn reject(message: String) -> String {
    json!({"accepted": false, "message": message, "code": 400}).to_string()
}

/// `validate`: an admission request (or, for the raw policy, a raw object) with its settings.
/// `now` is the host's time (Unix seconds), which certificates are checked against: Kubewarden's
/// requests carry none, so the WASI clock the policy server gives the module.
pub fn validate(input: &[u8], now: Option<i64>) -> String {
    let params: Value = match serde_json::from_slice(input) {
        Ok(v) => v,
        Err(e) => return reject(format!("the request is not JSON: {e}")),
    };
    let settings = params.get("settings").cloned().unwrap_or(Value::Null);
    let request = params.get("request").cloned().unwrap_or(Value::Null);
    if is_admission_request(&request) {
        admission(&request, &settings, now)
    } else {
        raw(&request, &settings, now)
    }
}

/// An AdmissionRequest carries its `uid`, `operation` and `kind` (a GroupVersionKind).
fn is_admission_request(request: &Value) -> bool {
    request.get("uid").is_some()
        && request.get("operation").is_some()
        && request.get("kind").is_some_and(Value::is_object)
}

fn admission(request: &Value, settings: &Value, now: Option<i64>) -> String {
    let object = match request.get("object") {
        // DELETE has no object: nothing to check.
        None | Some(Value::Null) => return accept(Vec::new(), None),
        Some(o) => o,
    };
    let is_cluster_secret = object.get("kind").and_then(Value::as_str) == Some("Secret")
        && object.pointer(&format!(
            "/metadata/labels/{}",
            SECRET_TYPE_LABEL.replace('~', "~0").replace('/', "~1")
        )) == Some(&json!("cluster"));
    if !is_cluster_secret {
        return accept(Vec::new(), None);
    }
    let options = match options(settings, &["action=validate"], now) {
        Ok(o) => o,
        Err(e) => return reject(e),
    };
    match capi2argo_core::run(object.to_string().as_bytes(), &options) {
        Ok(outcome) => {
            let errors = errors(&outcome.results);
            if errors.is_empty() {
                accept(warnings(&outcome.results), None)
            } else {
                reject(errors.join("; "))
            }
        }
        Err(e) => reject(e.to_string()),
    }
}

/// The raw policy: the transform on a ResourceList or List; the answer's `mutated_object` is the
/// same object with the function's output items (the input's, and the Argo CD Secrets).
fn raw(request: &Value, settings: &Value, now: Option<i64>) -> String {
    let Some(items) = request.get("items").filter(|i| i.is_array()) else {
        return reject(
            "the raw request is not a ResourceList or List (an object with items): send the List itself as the raw request".into(),
        );
    };
    let options = match options(settings, &[], now) {
        Ok(o) => o,
        Err(e) => return reject(e),
    };
    // A JSON ResourceList in gives a JSON ResourceList out.
    let resource_list = json!({
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
    });
    match capi2argo_core::run(resource_list.to_string().as_bytes(), &options) {
        Ok(outcome) => {
            let errors = errors(&outcome.results);
            if !errors.is_empty() {
                return reject(errors.join("; "));
            }
            match serde_json::from_str::<Value>(&outcome.output) {
                Ok(output) => {
                    let mut mutated = request.clone();
                    mutated["items"] = output["items"].clone();
                    accept(warnings(&outcome.results), Some(mutated))
                }
                Err(e) => reject(format!("the function's output is not JSON: {e}")),
            }
        }
        Err(e) => reject(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(config: &str) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "cluster-a",
                "namespace": "argocd",
                "labels": {SECRET_TYPE_LABEL: "cluster"}
            },
            "stringData": {"name": "a", "server": "https://a.example:6443", "config": config}
        })
    }

    fn admission_request(operation: &str, object: Value) -> Vec<u8> {
        json!({
            "request": {
                "uid": "1299d386-525b-4032-98ae-1949f69f9cfc",
                "kind": {"group": "", "version": "v1", "kind": "Secret"},
                "resource": {"group": "", "version": "v1", "resource": "secrets"},
                "operation": operation,
                "namespace": "argocd",
                "object": object,
            },
            "settings": {}
        })
        .to_string()
        .into_bytes()
    }

    fn answer(bytes: &[u8]) -> Value {
        serde_json::from_str(&validate(bytes, None)).expect("JSON answer")
    }

    #[test]
    fn a_good_cluster_secret_is_accepted_a_bad_one_rejected_with_the_field() {
        let good = answer(&admission_request(
            "CREATE",
            secret(r#"{"tlsClientConfig":{"insecure":false}}"#),
        ));
        assert_eq!(good["accepted"], true, "{good}");
        let bad = answer(&admission_request(
            "UPDATE",
            secret(
                r#"{"tlsClientConfig":{"insecure":false},"execProviderConfig":{"command":"sh","apiVersion":"client.authentication.k8s.io/v1beta1"}}"#,
            ),
        ));
        assert_eq!(bad["accepted"], false, "{bad}");
        assert_eq!(bad["code"], 400);
        let message = bad["message"].as_str().unwrap();
        assert!(message.contains("execProviderConfig.command"), "{message}");
    }

    #[test]
    fn other_secrets_and_deletes_are_accepted_untouched() {
        let mut other = secret("not json");
        other["metadata"]["labels"] = json!({});
        assert_eq!(
            answer(&admission_request("CREATE", other))["accepted"],
            true
        );
        assert_eq!(
            answer(&admission_request("DELETE", Value::Null))["accepted"],
            true
        );
    }

    #[test]
    fn settings_are_read_like_the_functions_config() {
        let ok: Value = serde_json::from_str(&validate_settings(
            br#"{"allowedExecCommands":["argocd-k8s-auth"],"forbidInsecure":true}"#,
        ))
        .unwrap();
        assert_eq!(ok["valid"], true, "{ok}");
        let bad: Value =
            serde_json::from_str(&validate_settings(br#"{"forbidInsecur":true}"#)).unwrap();
        assert_eq!(bad["valid"], false);
        assert!(bad["message"].as_str().unwrap().contains("forbidInsecure"));
    }

    #[test]
    fn the_raw_policy_returns_the_argo_cd_secrets() {
        let kubeconfig = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://c.example:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n";
        let request = json!({
            "request": {"apiVersion": "v1", "kind": "List", "items": [{
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "c-kubeconfig", "namespace": "fleet",
                             "labels": {"cluster.x-k8s.io/cluster-name": "c"}},
                "stringData": {"value": kubeconfig}
            }]},
            "settings": {"argoNamespace": "gitops"}
        });
        let out = answer(request.to_string().as_bytes());
        assert_eq!(out["accepted"], true, "{out}");
        let items = out["mutated_object"]["items"].as_array().expect("items");
        assert!(
            items
                .iter()
                .any(|i| i["metadata"]["name"] == "cluster-c"
                    && i["metadata"]["namespace"] == "gitops"),
            "{out}"
        );
    }
}
