//! A setting's value as it comes — text from a ConfigMap's `data` or the command line, or typed
//! YAML — and the readers every setting uses: one reading of a boolean, a list, a map, a choice,
//! wherever the setting stands (the config's keys, an inventory entry's fields).

use std::collections::BTreeMap;

use crate::convert::argocd::PROTECTED_LABELS;
use crate::convert::meta::{check_label_value, check_qualified_name};
use krm::object::{TOOL_ANNOTATION_PREFIXES, is_tool_annotation};
use yaml::{Node, Value};

/// One raw value: a string from a ConfigMap or command line, or a typed YAML value.
pub enum Raw<'n, 'a> {
    Text(&'n str),
    Node(&'n Node<'a>),
}

impl Raw<'_, '_> {
    /// A string, trimmed.
    pub fn text(&self) -> Result<String, String> {
        match self {
            Raw::Text(t) => Ok(t.trim().to_string()),
            Raw::Node(n) => n
                .as_str()
                .map(|s| s.trim().to_string())
                .ok_or_else(|| format!("expected a string, got {}", n.type_name())),
        }
    }

    /// The value as text when it is one scalar (a number or a string, typed or not).
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            Raw::Text(t) => Some(t.trim().to_string()),
            Raw::Node(n) => n.scalar().map(|s| s.text.trim().to_string()),
        }
    }

    /// `true` or `false`, typed or as text.
    pub fn boolean(&self) -> Result<bool, String> {
        let parse = |t: &str| match t.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(format!("expected true or false, got {other:?}")),
        };
        match self {
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

    /// One of a fixed set of words.
    pub fn choice<T: Copy>(&self, options: &[(&str, T)]) -> Result<T, String> {
        let value = self.text()?;
        match options.iter().find(|(word, _)| *word == value) {
            Some((_, chosen)) => Ok(*chosen),
            None => {
                let words: Vec<&str> = options.iter().map(|(w, _)| *w).collect();
                Err(format!("expected {}, got {value:?}", words.join(" or ")))
            }
        }
    }

    /// A list: a YAML sequence of strings, or a comma-separated string (items trimmed, empties
    /// dropped); nothing is an empty list.
    pub fn list(&self) -> Result<Vec<String>, String> {
        match self {
            Raw::Text(t) => Ok(split_list(t)),
            Raw::Node(n) if n.is_null() => Ok(Vec::new()),
            Raw::Node(n) => match &n.value {
                Value::Seq(items) => items
                    .iter()
                    .map(|i| {
                        i.as_str().map(|s| s.trim().to_string()).ok_or_else(|| {
                            format!("list items must be strings, got {}", i.type_name())
                        })
                    })
                    .collect(),
                _ => n.as_str().map(split_list).ok_or_else(|| {
                    format!(
                        "expected a list or a comma-separated string, got {}",
                        n.type_name()
                    )
                }),
            },
        }
    }

    /// A map of strings: a YAML mapping, or `k=v,k2=v2` as text; nothing is an empty map. Keys
    /// must be qualified names not kpt's or kustomize's; label maps' values, label values.
    pub fn map(&self, labels: bool) -> Result<BTreeMap<String, String>, String> {
        let mut map = BTreeMap::new();
        let mut put = |key: &str, value: String| -> Result<(), String> {
            check_key(key)?;
            if labels {
                check_label(key, &value)?;
            }
            map.insert(key.to_string(), value);
            Ok(())
        };
        match self {
            Raw::Text(t) => {
                for pair in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let (k, v) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("{pair:?} is not key=value"))?;
                    put(k.trim(), v.trim().to_string())?;
                }
            }
            Raw::Node(n) if n.is_null() => {}
            Raw::Node(n) => {
                let Some(entries) = n.as_map() else {
                    return Err(format!("expected a mapping, got {}", n.type_name()));
                };
                for (k, v) in entries {
                    let key = k.as_str().ok_or("keys must be strings")?;
                    // Numbers and booleans are common label values; Kubernetes stores their text.
                    let value = match v.scalar() {
                        Some(s) if !v.is_null() => s.text.to_string(),
                        _ => {
                            return Err(format!("{key}: expected a string, got {}", v.type_name()));
                        }
                    };
                    put(key, value)?;
                }
            }
        }
        Ok(map)
    }
}

/// A comma-separated list, items trimmed, empties dropped.
pub fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A label or annotation key a setting may write: a qualified name that is not kpt's or
/// kustomize's (setting one of theirs would move or hide the Secret).
fn check_key(key: &str) -> Result<(), String> {
    if is_tool_annotation(key) {
        return Err(format!(
            "{key}: keys under {} belong to kpt and kustomize",
            TOOL_ANNOTATION_PREFIXES.join(", ")
        ));
    }
    check_qualified_name(key)
}

/// A label a setting may write: not one the function sets itself, with a valid value.
fn check_label(key: &str, value: &str) -> Result<(), String> {
    if PROTECTED_LABELS.contains(&key) {
        return Err(format!("{key}: this label is set by capi2argo itself"));
    }
    check_label_value(value).map_err(|e| format!("{key}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_parse_like_a_config_map_value() {
        let m = Raw::Text("team=platform, tier=gold").map(true).unwrap();
        assert_eq!(m.len(), 2);
        assert!(Raw::Text("novalue").map(true).is_err());
        assert!(Raw::Text("Bad Key=v").map(false).is_err());
        assert!(
            Raw::Text("capi-to-argocd/owned=false")
                .map(true)
                .unwrap_err()
                .contains("set by capi2argo")
        );
        // Regression (found by fuzzing): a tool annotation set by config doubled up on the second run.
        assert!(
            Raw::Text("config.kubernetes.io/local-config=true")
                .map(false)
                .unwrap_err()
                .contains("belong to kpt")
        );
    }
}
