//! The function's configuration: a ConfigMap of strings or a typed `Capi2Argo` object, validated key by key.

use crate::convert::argocd::{DataField, Fields};
use crate::fleet::inventory::{self, Layer};
use crate::limits::Limits;
use crate::yaml::{Node, parse_stream};

pub const API_VERSION: &str = "fn.capi2argo.dev/v1alpha1";
pub const KIND: &str = "Capi2Argo";

/// How much of the kubeconfig goes into the Argo CD Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Argo CD connects to the cluster: the Secret carries credentials.
    Push,
    /// Agents on the cluster pull (Open Cluster Management): the Secret carries no credentials.
    Pull,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub argo_namespace: String,
    pub namespaced_names: bool,
    /// `None` allows every namespace.
    pub allowed_namespaces: Option<Vec<String>>,
    pub context: Option<String>,
    pub mode: Mode,
    pub data_field: DataField,
    pub prune: bool,
    pub strict: bool,
    /// Config-wide fields for every Secret: the bottom of the merge order.
    pub defaults: Fields,
    /// Layers in priority order: each overrides the ones before it.
    pub inventory: Vec<Layer>,
    /// Spread clusters over this many application-controller shards.
    pub shards: Option<u32>,
    pub copy_cluster_labels: bool,
    pub copy_cluster_annotations: bool,
    /// Extra input resources written in the config (kustomize generators), each as JSON text.
    pub resources: Vec<String>,
    /// Files of extra input resources, relative to the working directory; the caller reads them.
    pub resource_files: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            argo_namespace: "argocd".into(),
            namespaced_names: false,
            allowed_namespaces: None,
            context: None,
            mode: Mode::Push,
            data_field: DataField::StringData,
            prune: true,
            strict: true,
            defaults: Fields::default(),
            inventory: Vec::new(),
            shards: None,
            copy_cluster_labels: false,
            copy_cluster_annotations: false,
            resources: Vec::new(),
            resource_files: Vec::new(),
        }
    }
}

/// Every key the function understands, for "unknown key" messages.
pub const KEYS: &[&str] = &[
    "argoNamespace",
    "namespacedNames",
    "allowedNamespaces",
    "context",
    "mode",
    "dataField",
    "prune",
    "strict",
    "project",
    "namespaces",
    "clusterResources",
    "labels",
    "annotations",
    "shards",
    "copyClusterLabels",
    "copyClusterAnnotations",
    "inventory",
    "resources",
    "resourceFiles",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("functionConfig must be a ConfigMap or {API_VERSION} {KIND}, got {0}")]
    WrongKind(String),
    #[error("functionConfig {0} must be a mapping")]
    NotAMapping(&'static str),
    #[error("functionConfig {field}: {}", unknown_key_hint(field))]
    UnknownKey { field: String },
    #[error("functionConfig {field}: {message}")]
    BadValue { field: String, message: String },
    #[error("invalid setting {0:?}: expected key=value")]
    BadOverride(String),
}

impl ConfigError {
    /// The message without the field, for a result that names the field separately.
    pub fn detail(&self) -> String {
        match self {
            ConfigError::UnknownKey { .. } => {
                format!("unknown key; known keys: {}", KEYS.join(", "))
            }
            ConfigError::BadValue { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// The field the error is about, for a result's `field.path`.
    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { field } | ConfigError::BadValue { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// One raw setting: a string from a ConfigMap or command line, or a typed YAML value.
enum Raw<'n, 'a> {
    Text(&'n str),
    Node(&'n Node<'a>),
}

impl Config {
    /// Reads a functionConfig object, then applies `key=value` overrides on top.
    pub fn from_parts(
        function_config: Option<&Node>,
        overrides: &[String],
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(fc) = function_config.filter(|fc| !fc.is_null()) {
            let kind = fc.get("kind").and_then(Node::as_str).unwrap_or_default();
            let api_version = fc
                .get("apiVersion")
                .and_then(Node::as_str)
                .unwrap_or_default();
            let (prefix, section) = match (api_version, kind) {
                ("v1", "ConfigMap") => ("data", "data"),
                (API_VERSION, KIND) => ("spec", "spec"),
                _ => {
                    return Err(ConfigError::WrongKind(format!(
                        "{} {}",
                        if api_version.is_empty() {
                            "<no apiVersion>"
                        } else {
                            api_version
                        },
                        if kind.is_empty() { "<no kind>" } else { kind }
                    )));
                }
            };
            match fc.get(section) {
                None => {}
                Some(node) if node.is_null() => {}
                Some(node) => {
                    let entries = node.as_map().ok_or(ConfigError::NotAMapping(prefix))?;
                    for (key, value) in entries {
                        let key = key.as_str().unwrap_or_default();
                        let raw = if prefix == "data" {
                            // ConfigMap data is all strings; anything else is a malformed ConfigMap.
                            Raw::Text(value.as_str().ok_or_else(|| ConfigError::BadValue {
                                field: format!("{prefix}.{key}"),
                                message: format!(
                                    "ConfigMap values must be strings, got {}",
                                    value.type_name()
                                ),
                            })?)
                        } else {
                            Raw::Node(value)
                        };
                        config.set(prefix, key, raw)?;
                    }
                }
            }
        }
        for item in overrides {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| ConfigError::BadOverride(item.clone()))?;
            config.set("data", key, Raw::Text(value))?;
        }
        Ok(config)
    }

    fn set(&mut self, prefix: &str, key: &str, raw: Raw) -> Result<(), ConfigError> {
        let field = format!("{prefix}.{key}");
        let bad = |message: String| ConfigError::BadValue {
            field: field.clone(),
            message,
        };
        match key {
            "argoNamespace" => {
                let ns = text(&raw).map_err(&bad)?;
                if !is_dns1123_label(&ns) {
                    return Err(bad(format!("{ns:?} is not a valid namespace name")));
                }
                self.argo_namespace = ns;
            }
            "namespacedNames" => self.namespaced_names = boolean(&raw).map_err(&bad)?,
            "allowedNamespaces" => {
                let list = list(&raw).map_err(&bad)?;
                self.allowed_namespaces = if list.is_empty() { None } else { Some(list) };
            }
            "context" => {
                let ctx = text(&raw).map_err(&bad)?;
                self.context = if ctx.is_empty() { None } else { Some(ctx) };
            }
            "mode" => {
                self.mode = match text(&raw).map_err(&bad)?.as_str() {
                    "push" => Mode::Push,
                    "pull" => Mode::Pull,
                    other => return Err(bad(format!("expected push or pull, got {other:?}"))),
                }
            }
            "dataField" => {
                self.data_field = match text(&raw).map_err(&bad)?.as_str() {
                    "stringData" => DataField::StringData,
                    "data" => DataField::Data,
                    other => {
                        return Err(bad(format!("expected stringData or data, got {other:?}")));
                    }
                }
            }
            "prune" => self.prune = boolean(&raw).map_err(&bad)?,
            "strict" => self.strict = boolean(&raw).map_err(&bad)?,
            "project" => {
                let project = text(&raw).map_err(&bad)?;
                self.defaults.project = (!project.is_empty()).then_some(project);
            }
            "namespaces" => {
                let list = list(&raw).map_err(&bad)?;
                self.defaults.namespaces = (!list.is_empty()).then_some(list);
            }
            "clusterResources" => {
                self.defaults.cluster_resources = Some(boolean(&raw).map_err(&bad)?)
            }
            "labels" | "annotations" => {
                let labels = key == "labels";
                let map = match raw {
                    Raw::Text(t) => inventory::parse_pairs(t, labels),
                    Raw::Node(n) if n.is_null() => Ok(Default::default()),
                    Raw::Node(n) => inventory::string_map(n, labels),
                }
                .map_err(&bad)?;
                if labels {
                    self.defaults.labels = map;
                } else {
                    self.defaults.annotations = map;
                }
            }
            "shards" => {
                let n = match raw {
                    Raw::Node(n) if n.scalar().is_some() => {
                        n.scalar().map(|s| s.text.trim().to_string())
                    }
                    Raw::Text(t) => Some(t.trim().to_string()),
                    Raw::Node(_) => None,
                };
                self.shards = match n.as_deref().map(str::parse::<u32>) {
                    Some(Ok(0)) => None,
                    Some(Ok(n)) => Some(n),
                    _ => {
                        return Err(bad(
                            "expected a whole number of shards (0 or absent: no shard field)"
                                .into(),
                        ));
                    }
                };
            }
            "copyClusterLabels" => self.copy_cluster_labels = boolean(&raw).map_err(&bad)?,
            "resources" => {
                let parsed;
                let items: Vec<&Node> = match raw {
                    Raw::Node(n) if n.is_null() => Vec::new(),
                    Raw::Node(n) => n
                        .as_seq()
                        .ok_or_else(|| {
                            bad(format!(
                                "expected a list of resources, got {}",
                                n.type_name()
                            ))
                        })?
                        .iter()
                        .collect(),
                    // In a ConfigMap: YAML text, a stream of resources.
                    Raw::Text(t) => {
                        parsed =
                            parse_stream(t, &Limits::default()).map_err(|e| bad(e.to_string()))?;
                        parsed
                            .iter()
                            .map(|d| &d.root)
                            .filter(|n| !n.is_null())
                            .collect()
                    }
                };
                self.resources = items
                    .into_iter()
                    .map(|item| {
                        let mut json = String::new();
                        crate::yaml::emit::write_json(&mut json, item, None);
                        json
                    })
                    .collect();
            }
            "resourceFiles" => {
                let files = list(&raw).map_err(&bad)?;
                if let Some(f) = files.iter().find(|f| !is_plain_relative(f)) {
                    return Err(bad(format!(
                        "{f:?}: files must be relative paths inside the working directory"
                    )));
                }
                self.resource_files = files;
            }
            "copyClusterAnnotations" => {
                self.copy_cluster_annotations = boolean(&raw).map_err(&bad)?
            }
            "inventory" => {
                let parsed;
                let node = match raw {
                    Raw::Node(n) => n,
                    // In a ConfigMap the inventory is YAML text.
                    Raw::Text(t) => {
                        parsed =
                            parse_stream(t, &Limits::default()).map_err(|e| bad(e.to_string()))?;
                        match parsed.first() {
                            Some(doc) => &doc.root,
                            None => return Ok(()),
                        }
                    }
                };
                self.inventory = if node.is_null() {
                    Vec::new()
                } else {
                    inventory::parse_inventory(node).map_err(|(path, message)| {
                        ConfigError::BadValue {
                            field: format!("{field}{path}"),
                            message,
                        }
                    })?
                };
            }
            _ => return Err(ConfigError::UnknownKey { field }),
        }
        Ok(())
    }

    /// Whether Secrets in `namespace` are converted.
    pub fn allows(&self, namespace: &str) -> bool {
        self.allowed_namespaces
            .as_ref()
            .is_none_or(|list| list.iter().any(|n| n == namespace))
    }
}

/// "unknown key", with the closest known key when it is likely a typo, else the list of keys.
fn unknown_key_hint(field: &str) -> String {
    let key = field.rsplit('.').next().unwrap_or(field);
    let closest = KEYS
        .iter()
        .map(|k| {
            (
                edit_distance(&k.to_ascii_lowercase(), &key.to_ascii_lowercase()),
                k,
            )
        })
        .min();
    match closest {
        Some((d, k)) if d <= 3 => format!("unknown key; did you mean {k}?"),
        _ => format!("unknown key; known keys: {}", KEYS.join(", ")),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn text(raw: &Raw) -> Result<String, String> {
    match raw {
        Raw::Text(t) => Ok(t.trim().to_string()),
        Raw::Node(n) => n
            .as_str()
            .map(|s| s.trim().to_string())
            .ok_or_else(|| format!("expected a string, got {}", n.type_name())),
    }
}

fn boolean(raw: &Raw) -> Result<bool, String> {
    let parse = |t: &str| match t.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("expected true or false, got {other:?}")),
    };
    match raw {
        Raw::Text(t) => parse(t),
        Raw::Node(n) => match n.as_bool() {
            Some(b) => Ok(b),
            None => n.as_str().map_or_else(
                || Err(format!("expected true or false, got {}", n.type_name())),
                parse,
            ),
        },
    }
}

/// A list: YAML sequence of strings, or a comma-separated string (items trimmed, empties dropped).
fn list(raw: &Raw) -> Result<Vec<String>, String> {
    match raw {
        Raw::Text(t) => Ok(inventory::split_list(t)),
        Raw::Node(n) if n.is_null() => Ok(Vec::new()),
        Raw::Node(n) => inventory::string_list(n),
    }
}

/// A relative path without `..`: a package may only point at its own files.
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path.split('/').all(|part| part != "..")
}

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::yaml::parse_stream;

    fn parse(yaml: &str, overrides: &[&str]) -> Result<Config, ConfigError> {
        let docs = parse_stream(yaml, &Limits::default()).expect("yaml");
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Config::from_parts(docs.first().map(|d| &d.root), &overrides)
    }

    #[test]
    fn config_map_strings_are_parsed_per_key() {
        let c = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  namespacedNames: \"true\"\n  allowedNamespaces: a, b ,\n  mode: pull\n",
            &[],
        )
        .unwrap();
        assert!(c.namespaced_names);
        assert_eq!(c.allowed_namespaces, Some(vec!["a".into(), "b".into()]));
        assert_eq!(c.mode, Mode::Pull);
    }

    #[test]
    fn typed_config_takes_native_values() {
        let c = parse(
            "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nspec:\n  prune: false\n  allowedNamespaces: [x]\n  dataField: data\n",
            &["strict=false"],
        )
        .unwrap();
        assert!(!c.prune && !c.strict);
        assert_eq!(c.allowed_namespaces, Some(vec!["x".into()]));
        assert_eq!(c.data_field, DataField::Data);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_field() {
        let err = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  namespaceNames: \"true\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("data.namespaceNames"));
        assert_eq!(
            err.to_string(),
            "functionConfig data.namespaceNames: unknown key; did you mean namespacedNames?"
        );
        let err = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  colour: red\n",
            &[],
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("known keys: argoNamespace"),
            "{err}"
        );
        let err = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  prune: \"yes\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "functionConfig data.prune: expected true or false, got \"yes\""
        );
        let err = parse("apiVersion: v1\nkind: Secret\n", &[]).unwrap_err();
        assert!(matches!(err, ConfigError::WrongKind(_)));
        assert!(parse("", &["argoNamespace=Argo CD"]).is_err());
    }
}
