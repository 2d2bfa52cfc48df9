//! JavaScript bindings (wasm-bindgen) over the capi2argo core: the same transformation, errors as JS `Error`s.

use capi2argo::Options;
use capi2argo::host::{self, Exit, Report};
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

/** One setting of the function, from its key table (what `--help` and the README list). */
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
            "apiVersion": capi2argo::API_VERSION,
            "kind": capi2argo::KIND,
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

/// The output and the host driver's report, as the native binary would print and exit.
fn run(input: &str, config: &JsValue) -> Result<(String, Report), JsError> {
    let options = Options {
        function_config: config_text(config)?,
        ..Default::default()
    };
    let (output, report) = host::drive_to_string(input.as_bytes(), &options);
    if report.exit == Exit::Unusable {
        // The same message the native binary prints after `capi2argo: `.
        let message = report.stderr.trim_end().trim_start_matches("capi2argo: ");
        return Err(JsError::new(message));
    }
    Ok((output, report))
}

/// Runs the function: returns the output ResourceList (or YAML stream). Throws on unusable input.
#[wasm_bindgen(unchecked_return_type = "string")]
pub fn transform(input: &str, config: Option<ConfigArg>) -> Result<String, JsError> {
    run(input, &config.map_or(JsValue::UNDEFINED, JsValue::from)).map(|(output, _)| output)
}

/// Runs the function and returns `{ output, results, failed }` with structured results.
#[wasm_bindgen(js_name = transformWithResults, unchecked_return_type = "Outcome")]
pub fn transform_with_results(input: &str, config: Option<ConfigArg>) -> Result<JsValue, JsError> {
    let (output, report) = run(input, &config.map_or(JsValue::UNDEFINED, JsValue::from))?;
    let json = format!(
        "{{\"output\":{},\"results\":{},\"failed\":{}}}",
        serde_json::Value::from(output.as_str()),
        capi2argo::results_json(&report.results),
        report.exit == Exit::Failure
    );
    json_parse(&json)
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
    let keys: Vec<serde_json::Value> = capi2argo::KEYS
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
    let json = capi2argo::items_json(input.as_bytes(), &capi2argo::Limits::default())
        .map_err(|e| JsError::new(&e.to_string()))?;
    json_parse(&json)
}
