//! The function's configuration: a ConfigMap of strings or a typed `Capi2Argo` object, validated key by key.

use crate::yaml::{Node, Value};

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

/// Where the Argo CD Secret's values go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataField {
    StringData,
    Data,
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
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("functionConfig must be a ConfigMap or {API_VERSION} {KIND}, got {0}")]
    WrongKind(String),
    #[error("functionConfig {0} must be a mapping")]
    NotAMapping(&'static str),
    #[error("functionConfig {field}: unknown key; known keys: {}", KEYS.join(", "))]
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
    let split = |t: &str| {
        t.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    match raw {
        Raw::Text(t) => Ok(split(t)),
        Raw::Node(n) => match &n.value {
            Value::Seq(items) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(|s| s.trim().to_string())
                        .ok_or_else(|| format!("list items must be strings, got {}", i.type_name()))
                })
                .collect(),
            _ if n.is_null() => Ok(Vec::new()),
            _ => n.as_str().map(split).ok_or_else(|| {
                format!(
                    "expected a list or a comma-separated string, got {}",
                    n.type_name()
                )
            }),
        },
    }
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
        assert!(err.to_string().contains("unknown key"), "{err}");
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
