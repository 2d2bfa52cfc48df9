//! Fleet metadata: the Argo CD fields a cluster Secret carries, and the layered inventory that sets them.

use std::collections::BTreeMap;

use crate::convert::argocd::Fields;
use crate::krm::finding::Finding;
use crate::yaml::{Node, Value};

/// What selects a layer's entry for a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The value of this label on the Cluster (or, without a Cluster, on the kubeconfig Secret).
    Label(String),
    /// The Cluster's `spec.infrastructureRef.kind`, e.g. `AWSCluster`.
    Infrastructure,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub selector: Selector,
    /// Entries in the order written, for stable reports.
    pub values: Vec<(String, Fields)>,
}

impl Layer {
    pub fn entry(&self, value: &str) -> Option<(usize, &Fields)> {
        self.values
            .iter()
            .enumerate()
            .find(|(_, (v, _))| v == value)
            .map(|(i, (_, f))| (i, f))
    }

    pub fn describe(&self) -> String {
        match &self.selector {
            Selector::Label(l) => format!("label {l}"),
            Selector::Infrastructure => "infrastructure".into(),
        }
    }
}

/// A parse problem: the path below the inventory key, and what is wrong.
fn problem(path: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding::error(message).at(path)
}

/// Reads `inventory`: a list of layers.
pub fn parse_inventory(node: &Node) -> Result<Vec<Layer>, Finding> {
    let Some(layers) = node.as_seq() else {
        return Err(problem(
            String::new(),
            format!("expected a list of layers, got {}", node.type_name()),
        ));
    };
    layers
        .iter()
        .enumerate()
        .map(|(i, layer)| parse_layer(layer).map_err(|f| f.under(&format!("[{i}]"))))
        .collect()
}

fn parse_layer(node: &Node) -> Result<Layer, Finding> {
    let Some(entries) = node.as_map() else {
        return Err(problem(
            String::new(),
            format!("expected a mapping, got {}", node.type_name()),
        ));
    };
    let mut label = None;
    let mut infrastructure = false;
    let mut values = None;
    for (key, value) in entries {
        match key.as_str().unwrap_or_default() {
            "label" => {
                label = Some(
                    value
                        .as_str()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| problem(".label", "expected a label key"))?
                        .to_string(),
                )
            }
            "infrastructure" => {
                infrastructure = value
                    .as_bool()
                    .ok_or_else(|| problem(".infrastructure", "expected true or false"))?
            }
            "values" => values = Some(parse_values(value)?),
            other => {
                return Err(problem(
                    format!(".{other}"),
                    "unknown key; a layer has label or infrastructure, and values",
                ));
            }
        }
    }
    let selector = match (label, infrastructure) {
        (Some(l), false) => Selector::Label(l),
        (None, true) => Selector::Infrastructure,
        (Some(_), true) => {
            return Err(problem(
                String::new(),
                "a layer has either label or infrastructure: true, not both",
            ));
        }
        (None, false) => {
            return Err(problem(
                String::new(),
                "a layer needs label or infrastructure: true",
            ));
        }
    };
    Ok(Layer {
        selector,
        values: values.unwrap_or_default(),
    })
}

fn parse_values(node: &Node) -> Result<Vec<(String, Fields)>, Finding> {
    let Some(entries) = node.as_map() else {
        return Err(problem(
            ".values",
            format!(
                "expected a mapping of value to fields, got {}",
                node.type_name()
            ),
        ));
    };
    entries
        .iter()
        .map(|(k, v)| {
            // Label values such as `1` or `true` arrive as YAML numbers or booleans: use their text.
            let name = k.scalar().map(|s| s.text.to_string()).unwrap_or_default();
            let fields = parse_fields(v).map_err(|f| f.under(&format!(".values.{name}")))?;
            Ok((name, fields))
        })
        .collect()
}

/// Reads a layer entry's fields (typed YAML).
pub fn parse_fields(node: &Node) -> Result<Fields, Finding> {
    let mut fields = Fields::default();
    if node.is_null() {
        return Ok(fields);
    }
    let Some(entries) = node.as_map() else {
        return Err(problem(
            String::new(),
            format!("expected a mapping, got {}", node.type_name()),
        ));
    };
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        let at = |m: String| problem(format!(".{key}"), m);
        match key {
            "labels" => fields.labels = string_map(value, true).map_err(at)?,
            "annotations" => fields.annotations = string_map(value, false).map_err(at)?,
            "project" => {
                fields.project = Some(
                    value
                        .as_str()
                        .ok_or_else(|| at(format!("expected a string, got {}", value.type_name())))?
                        .to_string(),
                )
            }
            "namespaces" => fields.namespaces = Some(string_list(value).map_err(at)?),
            "clusterResources" => {
                fields.cluster_resources = Some(
                    value
                        .as_bool()
                        .ok_or_else(|| at("expected true or false".into()))?,
                )
            }
            other => {
                return Err(problem(
                    format!(".{other}"),
                    "unknown key; known keys: labels, annotations, project, namespaces, clusterResources",
                ));
            }
        }
    }
    Ok(fields)
}

/// A map of strings from typed YAML; label maps are checked against Kubernetes' label rules.
pub fn string_map(node: &Node, labels: bool) -> Result<BTreeMap<String, String>, String> {
    let Some(entries) = node.as_map() else {
        return Err(format!("expected a mapping, got {}", node.type_name()));
    };
    let mut map = BTreeMap::new();
    for (k, v) in entries {
        let key = k.as_str().ok_or("keys must be strings")?;
        // Numbers and booleans are common label values; Kubernetes stores them as their text.
        let value = match v.scalar() {
            Some(s) if !v.is_null() => s.text.to_string(),
            _ => return Err(format!("{key}: expected a string, got {}", v.type_name())),
        };
        check_key(key)?;
        if labels {
            check_label(key, &value)?;
        }
        map.insert(key.to_string(), value);
    }
    Ok(map)
}

/// `k=v,k2=v2`, as a ConfigMap carries a map.
pub fn parse_pairs(text: &str, labels: bool) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not key=value"))?;
        let (k, v) = (k.trim(), v.trim());
        check_key(k)?;
        if labels {
            check_label(k, v)?;
        }
        map.insert(k.to_string(), v.to_string());
    }
    Ok(map)
}

pub fn string_list(node: &Node) -> Result<Vec<String>, String> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(|s| s.trim().to_string())
                    .ok_or_else(|| format!("list items must be strings, got {}", i.type_name()))
            })
            .collect(),
        _ => node.as_str().map(split_list).ok_or_else(|| {
            format!(
                "expected a list or a comma-separated string, got {}",
                node.type_name()
            )
        }),
    }
}

pub fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A qualified name: optional DNS prefix and `/`, then 1–63 of `[A-Za-z0-9._-]`, alphanumeric at the ends.
/// Annotation prefixes kpt and kustomize own: setting them would move or hide the Secret.
pub const TOOL_ANNOTATION_PREFIXES: &[&str] = &[
    "config.kubernetes.io/",
    "internal.config.kubernetes.io/",
    "config.k8s.io/",
    "kustomize.config.k8s.io/",
];

fn check_key(key: &str) -> Result<(), String> {
    if TOOL_ANNOTATION_PREFIXES.iter().any(|p| key.starts_with(p)) {
        return Err(format!(
            "{key}: keys under {} belong to kpt and kustomize",
            TOOL_ANNOTATION_PREFIXES.join(", ")
        ));
    }
    crate::convert::meta::check_qualified_name(key)
}

fn check_label(key: &str, value: &str) -> Result<(), String> {
    if crate::convert::argocd::PROTECTED_LABELS.contains(&key) {
        return Err(format!("{key}: this label is set by capi2argo itself"));
    }
    crate::convert::meta::check_label_value(value).map_err(|e| format!("{key}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::yaml::parse_stream;

    fn parse(yaml: &str) -> Result<Vec<Layer>, Finding> {
        let docs = parse_stream(yaml, &Limits::default()).unwrap();
        parse_inventory(&docs[0].root)
    }

    #[test]
    fn layers_parse_with_their_entries() {
        let layers = parse("- label: environment\n  values:\n    prod: {labels: {tier: gold}, project: production, namespaces: [a, b], clusterResources: true}\n- infrastructure: true\n  values:\n    AWSCluster: {labels: {cloud: aws}}\n").unwrap();
        assert_eq!(layers[0].selector, Selector::Label("environment".into()));
        let (_, prod) = layers[0].entry("prod").unwrap();
        assert_eq!(prod.project.as_deref(), Some("production"));
        assert_eq!(prod.namespaces, Some(vec!["a".into(), "b".into()]));
        assert_eq!(prod.cluster_resources, Some(true));
        assert_eq!(layers[1].selector, Selector::Infrastructure);
    }

    #[test]
    fn mistakes_name_their_path() {
        let err = |yaml: &str| {
            let f = parse(yaml).unwrap_err();
            (f.field.unwrap_or_default(), f.message)
        };
        assert_eq!(
            err("- label: env\n  values:\n    prod: {labelz: {}}\n").0,
            "[0].values.prod.labelz"
        );
        assert!(err("- values: {}\n").1.contains("needs label"));
        assert_eq!(
            err("- label: env\n  values:\n    prod: {labels: {tier: 'not valid'}}\n"),
            (
                "[0].values.prod.labels".into(),
                "tier: \"not valid\" is not a valid label value".into()
            )
        );
    }

    #[test]
    fn later_overlays_win() {
        let mut base = Fields {
            project: Some("a".into()),
            labels: BTreeMap::from([("x".into(), "1".into()), ("y".into(), "1".into())]),
            ..Default::default()
        };
        base.overlay(&Fields {
            labels: BTreeMap::from([("y".into(), "2".into())]),
            cluster_resources: Some(false),
            ..Default::default()
        });
        assert_eq!(base.project.as_deref(), Some("a"));
        assert_eq!(base.labels.get("y").map(String::as_str), Some("2"));
        assert_eq!(base.cluster_resources, Some(false));
    }

    #[test]
    fn pairs_parse_like_a_config_map_value() {
        let m = parse_pairs("team=platform, tier=gold", true).unwrap();
        assert_eq!(m.len(), 2);
        assert!(parse_pairs("novalue", true).is_err());
        assert!(parse_pairs("Bad Key=v", false).is_err());
        assert!(
            parse_pairs("capi-to-argocd/owned=false", true)
                .unwrap_err()
                .contains("set by capi2argo")
        );
        // Regression (found by fuzzing): a tool annotation set by config doubled up on the second run.
        assert!(
            parse_pairs("config.kubernetes.io/local-config=true", false)
                .unwrap_err()
                .contains("belong to kpt")
        );
    }
}
