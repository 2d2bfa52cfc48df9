//! Fleet metadata: the Argo CD fields a cluster Secret carries, and the layered inventory that sets them.

use crate::convert::argocd::Fields;
use crate::raw::Raw;
use krm::finding::Finding;
use yaml::Node;

use super::fields;

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

/// Reads a layer entry's fields (typed YAML), as the config's own keys read them.
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
        match fields::set(&mut fields, key, &Raw::Node(value)) {
            Some(Ok(())) => {}
            Some(Err(message)) => return Err(problem(format!(".{key}"), message)),
            None => {
                return Err(problem(
                    format!(".{key}"),
                    format!("unknown key; known keys: {}", fields::names()),
                ));
            }
        }
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use yaml::Limits;
    use yaml::parse_stream;

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

    /// Regression (issue 36): the config's keys and an inventory entry read the same field two
    /// ways (an empty project, a string clusterResources); one reader now serves both.
    #[test]
    fn entries_read_their_fields_as_the_config_does() {
        let layers = parse("- label: env\n  values:\n    a: {project: '', namespaces: [], clusterResources: 'true'}\n").unwrap();
        let (_, a) = layers[0].entry("a").unwrap();
        assert_eq!(a.project.as_deref(), Some(""));
        assert_eq!(a.namespaces.as_deref(), Some(&[][..]));
        assert_eq!(a.cluster_resources, Some(true));
        let config = crate::config::Config::from_parts(
            None,
            &[
                "project=".into(),
                "namespaces=".into(),
                "clusterResources=true".into(),
            ],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(config.defaults.project, a.project);
        assert_eq!(config.defaults.namespaces, a.namespaces);
        assert_eq!(config.defaults.cluster_resources, a.cluster_resources);
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
}
