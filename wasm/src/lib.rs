//! JavaScript bindings (wasm-bindgen) over the capi2argo core: the same transformation, errors as JS `Error`s.

mod text;

use capi2argo_core::host::{self, Exit, Report};
use capi2argo_core::{NoFiles, Options, PlanFormat};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** A KRM function result, as in a ResourceList's `results`. */
export interface Result {
  message: string;
  severity: "error" | "warning" | "info";
  resourceRef?: { apiVersion: string; kind: string; name: string; namespace?: string };
  field?: { path: string };
  file?: { path: string; index?: number };
}

/** One setting of the function, from its key table (what `--help` and the book's settings table list). */
export interface Setting {
  name: string;
  /** The default, as a reader would write it (`none` when unset). */
  default: string;
  doc: string;
  /** `bool`, `text`, `list`, `map`, `number`, `choice:a|b`, `yaml`. */
  kind: string;
}

/** The whole outcome of a run. */
export interface Outcome {
  /** The output ResourceList or YAML stream, exactly as the native binary prints it. */
  output: string;
  results: Result[];
  /** True when an error result exists: the native binary exits 1 then. */
  failed: boolean;
}

/** A bare kubeconfig put into the Secret Cluster API writes for it. */
export interface WrappedKubeconfig {
  /** The Secret, as YAML. */
  text: string;
  secretName: string;
  namespace: string;
  /** The cluster's name, as the `cluster.x-k8s.io/cluster-name` label carries it. */
  cluster: string;
  /** The kubeconfig's cluster entry the name was made from. */
  clusterEntry: string;
}

/** An Argo CD cluster Secret of a text, as a YAML document of its own. */
export interface ClusterSecret {
  name: string;
  namespace?: string | null;
  /** Whether capi2argo owns it (`capi-to-argocd/owned: "true"`). */
  owned: boolean;
  text: string;
}

/**
 * A functionConfig: YAML/JSON text, a ConfigMap or Capi2Argo object, or a plain settings
 * object such as `{ namespacedNames: true }` (read as a Capi2Argo `spec`).
 */
export type Config = string | Record<string, unknown>;
"#;

/// Turns a JS config into functionConfig text (JSON is YAML).
fn config_text(config: &JsValue) -> Result<Option<String>, JsError> {
    if config.is_undefined() || config.is_null() {
        return Ok(None);
    }
    if let Some(text) = config.as_string() {
        return Ok(Some(text));
    }
    let json = js_sys_json(config)?;
    let value: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| JsError::new(&format!("config: {e}")))?;
    let document = match &value {
        serde_json::Value::Object(map) if map.contains_key("kind") => value,
        serde_json::Value::Object(_) => serde_json::json!({
            "apiVersion": capi2argo_core::API_VERSION,
            "kind": capi2argo_core::KIND,
            "spec": value,
        }),
        _ => return Err(JsError::new("config must be a string or an object")),
    };
    Ok(Some(document.to_string()))
}

#[wasm_bindgen]
extern "C" {
    /// The `config` argument, typed as `Config` for TypeScript.
    #[wasm_bindgen(typescript_type = "Config")]
    pub type ConfigArg;

    #[wasm_bindgen(js_namespace = JSON, js_name = stringify, catch)]
    fn json_stringify(value: &JsValue) -> Result<JsValue, JsValue>;
}

fn js_sys_json(value: &JsValue) -> Result<String, JsError> {
    json_stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| JsError::new("config is not JSON-serializable"))
}

#[wasm_bindgen]
extern "C" {
    /// The page's clock, in milliseconds: certificates are checked against it.
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;
}

#[wasm_bindgen]
extern "C" {
    /// The host's randomness (Web Crypto, in browsers, Node 19 and later, Deno): 32 bytes per
    /// run, for sealing.
    #[wasm_bindgen(catch, js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(bytes: &mut [u8]) -> Result<JsValue, JsValue>;
}

/// 32 bytes of the host's randomness, when it has Web Crypto (sealing refuses to run without).
fn random() -> Option<[u8; 32]> {
    let mut bytes = [0u8; 32];
    get_random_values(&mut bytes).ok().map(|_| bytes)
}

/// The time to check certificates against, in Unix seconds: `now` (milliseconds, as
/// `Date.now()` gives them; tests pin it) or the page's clock.
fn unix_seconds(now: Option<f64>) -> i64 {
    (now.unwrap_or_else(date_now) / 1000.0).floor() as i64
}

/// The output (or the plan, in `plan`'s format) and the host driver's report, as the native
/// binary would print and exit.
fn run(
    input: &str,
    config: &JsValue,
    now: Option<f64>,
    plan: Option<PlanFormat>,
) -> Result<(String, Report), JsError> {
    let options = Options {
        function_config: config_text(config)?,
        now: Some(unix_seconds(now)),
        random: random(),
        ..Default::default()
    };
    let (output, report) = match plan {
        None => host::drive_to_string(input.as_bytes(), &options),
        Some(format) => {
            let mut output = String::new();
            let report =
                host::drive_plan(input.as_bytes(), &options, &mut NoFiles, format, &mut |s| {
                    output.push_str(s)
                });
            (output, report)
        }
    };
    if let Some(reason) = report.unusable_reason() {
        // The same message the native binary prints after `capi2argo: `.
        return Err(JsError::new(reason));
    }
    Ok((output, report))
}

/// `{ output, results, failed }` of a run (of the plan, in `plan`'s format), as JavaScript
/// sees it.
fn outcome(
    input: &str,
    config: Option<ConfigArg>,
    now: Option<f64>,
    plan: Option<PlanFormat>,
) -> Result<JsValue, JsError> {
    let (output, report) = run(
        input,
        &config.map_or(JsValue::UNDEFINED, JsValue::from),
        now,
        plan,
    )?;
    let json = format!(
        "{{\"output\":{},\"results\":{},\"failed\":{}}}",
        serde_json::Value::from(output.as_str()),
        capi2argo_core::results_json(&report.results),
        report.exit == Exit::Failure
    );
    json_parse(&json)
}

/// Runs the function: returns the output ResourceList (or YAML stream). Throws on unusable input.
/// `now` (milliseconds since the epoch, `Date.now()` when absent) is what certificates are
/// checked against.
#[wasm_bindgen(unchecked_return_type = "string")]
pub fn transform(
    input: &str,
    config: Option<ConfigArg>,
    now: Option<f64>,
) -> Result<String, JsError> {
    run(
        input,
        &config.map_or(JsValue::UNDEFINED, JsValue::from),
        now,
        None,
    )
    .map(|(output, _)| output)
}

/// Runs the function and returns `{ output, results, failed }` with structured results; `now`
/// as for `transform`.
#[wasm_bindgen(js_name = transformWithResults, unchecked_return_type = "Outcome")]
pub fn transform_with_results(
    input: &str,
    config: Option<ConfigArg>,
    now: Option<f64>,
) -> Result<JsValue, JsError> {
    outcome(input, config, now, None)
}

/// The plan instead of the output (`capi2argo plan`): what the run would do to each Argo CD
/// cluster Secret of the input, as text, with the results and `failed` the conversion would
/// have (a guard that holds is an error). Give it the kubeconfig Secrets together with the
/// Secrets of Argo CD's namespace. `now` as for `transform`. The plan names Secrets, clusters
/// and fields, never a credential.
#[wasm_bindgen(js_name = planWithResults, unchecked_return_type = "Outcome")]
pub fn plan_with_results(
    input: &str,
    config: Option<ConfigArg>,
    now: Option<f64>,
) -> Result<JsValue, JsError> {
    outcome(input, config, now, Some(PlanFormat::Text))
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn json_parse_js(text: &str) -> Result<JsValue, JsValue>;
}

fn json_parse(text: &str) -> Result<JsValue, JsError> {
    json_parse_js(text).map_err(|_| JsError::new("internal: result is not JSON"))
}

/// Every setting the function reads, from the same key table the function parses with: a form
/// built from it cannot drift from the function.
#[wasm_bindgen(unchecked_return_type = "Setting[]")]
pub fn settings() -> Result<JsValue, JsError> {
    let keys: Vec<serde_json::Value> = capi2argo_core::KEYS
        .iter()
        .map(|k| {
            serde_json::json!({
                "name": k.name,
                "default": k.default,
                "doc": k.doc,
                "kind": k.kind,
            })
        })
        .collect();
    json_parse(&serde_json::Value::from(keys).to_string())
}

/// The items of any input the function reads (ResourceList, List, YAML stream), as an array:
/// what a page shows of an output without a YAML reader of its own.
#[wasm_bindgen(js_name = itemsJson, unchecked_return_type = "unknown[]")]
pub fn items_json(input: &str) -> Result<JsValue, JsError> {
    let json = capi2argo_core::items_json(input.as_bytes(), &capi2argo_core::Limits::default())
        .map_err(|e| JsError::new(&e.to_string()))?;
    json_parse(&json)
}

/// Where the credentials of `text` stand (any text the function reads or writes, or a paste
/// being edited): a flat array of start and end offsets, pair by pair, counted in UTF-16 code
/// units as JavaScript strings are. The same rule the function keeps secrets by
/// (`credential_ranges_lenient` of the core): a page that hides these ranges hides every
/// credential the function knows, and past a YAML error it hides the broken document but for
/// the key of the line the error names.
#[wasm_bindgen(js_name = credentialRanges)]
pub fn credential_ranges(text: &str) -> Vec<u32> {
    let ranges =
        capi2argo_core::credential_ranges_lenient(text, &capi2argo_core::Limits::default());
    text::flat(text, &ranges)
}

/// Where the `user:password` of a URL stands, as `[start, end]` in UTF-16 code units (empty
/// when it carries none): the same rule, for a server shown on its own.
#[wasm_bindgen(js_name = urlCredentials)]
pub fn url_credentials(url: &str) -> Vec<u32> {
    capi2argo_core::url_credentials(url)
        .map(|r| text::flat(url, &[r]))
        .unwrap_or_default()
}

/// A bare kubeconfig (YAML or JSON) put into the Secret Cluster API writes for it:
/// `{ text, secretName, namespace, cluster, clusterEntry }`, or `undefined` when `text` is not
/// one kubeconfig.
#[wasm_bindgen(js_name = wrapKubeconfig, unchecked_return_type = "WrappedKubeconfig | undefined")]
pub fn wrap_kubeconfig(text: &str) -> Result<JsValue, JsError> {
    let Some(w) = capi2argo_core::wrap_kubeconfig(text, &capi2argo_core::Limits::default()) else {
        return Ok(JsValue::UNDEFINED);
    };
    let json = serde_json::json!({
        "text": w.text,
        "secretName": w.secret_name,
        "namespace": capi2argo_core::WRAP_NAMESPACE,
        "cluster": w.cluster,
        "clusterEntry": w.cluster_entry,
    });
    json_parse(&json.to_string())
}

/// The Argo CD cluster Secrets of a text (what the validator checks), each as a YAML document
/// of its own: `[{ name, namespace, owned, text }]`. Throws when the text is unusable.
#[wasm_bindgen(js_name = clusterSecrets, unchecked_return_type = "ClusterSecret[]")]
pub fn cluster_secrets(text: &str) -> Result<JsValue, JsError> {
    let documents = capi2argo_core::documents(text.as_bytes(), &capi2argo_core::Limits::default())
        .map_err(|e| JsError::new(&e.to_string()))?;
    let list: Vec<serde_json::Value> = documents
        .into_iter()
        .filter(|d| d.cluster_secret)
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "namespace": s.namespace,
                "owned": s.owned,
                "text": s.text,
            })
        })
        .collect();
    json_parse(&serde_json::Value::from(list).to_string())
}
