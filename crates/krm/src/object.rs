//! A typed view of a Kubernetes object: kind, name, namespace, labels, annotations, Secret data
//! and the file kpt read it from, instead of string paths through its tree.

use std::borrow::Cow;
use std::fmt;

use crate::b64;
use yaml::{Node, Value};

use super::finding::{FileRef, Finding, ResourceRef};

/// Where kpt says an item lives (the annotation, and its pre-v1 spelling).
pub const PATH_ANNOTATION: &str = "internal.config.kubernetes.io/path";
const LEGACY_PATH_ANNOTATION: &str = "config.kubernetes.io/path";
const INDEX_ANNOTATION: &str = "internal.config.kubernetes.io/index";
const LEGACY_INDEX_ANNOTATION: &str = "config.kubernetes.io/index";

/// The annotations a result's `file` is read from, each with the legacy spelling read where
/// kpt's own is missing.
const FILE_ANNOTATIONS: [[&str; 2]; 2] = [
    [PATH_ANNOTATION, LEGACY_PATH_ANNOTATION],
    [INDEX_ANNOTATION, LEGACY_INDEX_ANNOTATION],
];

/// Of `annotations`, the ones a result's `file` is read from (where the item lives).
pub fn file_annotations(annotations: &Node) -> Vec<&'static str> {
    FILE_ANNOTATIONS
        .iter()
        .filter_map(|spellings| {
            spellings
                .iter()
                .copied()
                .find(|k| annotations.get(k).is_some())
        })
        .collect()
}

/// Prefixes of the annotations kpt and kustomize own on every item they hand a function.
pub const TOOL_ANNOTATION_PREFIXES: &[&str] = &[
    "config.kubernetes.io/",
    "internal.config.kubernetes.io/",
    "config.k8s.io/",
    "kustomize.config.k8s.io/",
];

/// Whether `key` is one of the annotations kpt and kustomize own.
pub fn is_tool_annotation(key: &str) -> bool {
    TOOL_ANNOTATION_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Annotations that are bookkeeping of the tools that write objects (kubectl's and kubecfg's
/// copy of what they applied: the whole object, a Secret's values included), not part of what
/// an object says.
const BOOKKEEPING_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "kubecfg.ksonnet.io/last-applied-configuration",
];

/// Whether `key` is a tool's copy of the object it applied ([`BOOKKEEPING_ANNOTATIONS`]).
pub fn is_bookkeeping_annotation(key: &str) -> bool {
    BOOKKEEPING_ANNOTATIONS.contains(&key)
}

/// An object read through its tree; every accessor is lenient (a missing or mistyped field
/// reads as absent), and [`Object::metadata_problems`] says what is wrong with it.
#[derive(Clone, Copy)]
pub struct Object<'n, 'a> {
    /// The object's tree.
    pub node: &'n Node<'a>,
}

impl<'n, 'a> Object<'n, 'a> {
    /// A view of `node`.
    pub fn new(node: &'n Node<'a>) -> Self {
        Object { node }
    }

    fn text(&self, path: &[&str]) -> Option<&'n str> {
        self.node.path(path).and_then(Node::as_str)
    }

    /// Its `kind`, when that is a string.
    pub fn kind(&self) -> Option<&'n str> {
        self.text(&["kind"])
    }

    /// Its `apiVersion`, when that is a string.
    pub fn api_version(&self) -> Option<&'n str> {
        self.text(&["apiVersion"])
    }

    /// Whether this is `apiVersion` `api_version` (any version when `None`) and `kind` `kind`.
    pub fn is(&self, api_group_version: Option<&str>, kind: &str) -> bool {
        self.kind() == Some(kind) && api_group_version.is_none_or(|v| self.api_version() == Some(v))
    }

    /// Whether this is a core `v1` Secret.
    pub fn is_secret(&self) -> bool {
        self.is(Some("v1"), "Secret")
    }

    /// Its `metadata.name`, when that is a string.
    pub fn name(&self) -> Option<&'n str> {
        self.text(&["metadata", "name"])
    }

    /// The namespace as written, if any.
    pub fn namespace_written(&self) -> Option<&'n str> {
        self.text(&["metadata", "namespace"])
    }

    /// The namespace it lives in; none written means `default`, as the API server reads it.
    pub fn namespace(&self) -> &'n str {
        self.namespace_written()
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
    }

    /// The value of its label `key`, when that is a string.
    pub fn label(&self, key: &str) -> Option<&'n str> {
        self.node
            .path(&["metadata", "labels", key])
            .and_then(Node::as_str)
    }

    /// The value of its annotation `key`, when that is a string.
    pub fn annotation(&self, key: &str) -> Option<&'n str> {
        self.node
            .path(&["metadata", "annotations", key])
            .and_then(Node::as_str)
    }

    /// Its ownerReferences of `kind` (of `group`, when given).
    pub fn owner_references<'q>(
        &self,
        group: Option<&'q str>,
        kind: &'q str,
    ) -> impl Iterator<Item = &'n Node<'a>> + 'q
    where
        'n: 'q,
        'a: 'q,
    {
        self.node
            .path(&["metadata", "ownerReferences"])
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter(move |o| {
                o.get("kind").and_then(Node::as_str) == Some(kind)
                    && group.is_none_or(|g| {
                        o.get("apiVersion")
                            .and_then(Node::as_str)
                            .and_then(|v| v.split_once('/'))
                            .is_some_and(|(have, _)| have == g)
                    })
            })
    }

    /// The labels (or annotations, with `"annotations"`) whose keys and values are strings, in order.
    pub fn string_entries(&self, field: &str) -> Vec<(&'n str, &'n str)> {
        let Some(Value::Map(entries)) = self.node.path(&["metadata", field]).map(|m| &m.value)
        else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?, v.as_str()?)))
            .collect()
    }

    /// What differs between this Secret's labels, annotations and type and `new`'s, as paths
    /// (`metadata.labels.<key>`, `type`): the annotations tools keep for themselves aside, and
    /// a Secret without a type read as Opaque, as the API server stores it.
    pub fn metadata_changes(&self, new: Object) -> Vec<String> {
        let mut changed = Vec::new();
        for field in ["labels", "annotations"] {
            let entries = |o: &Object| -> std::collections::BTreeMap<String, String> {
                o.string_entries(field)
                    .into_iter()
                    .filter(|(k, _)| !is_tool_annotation(k) && !BOOKKEEPING_ANNOTATIONS.contains(k))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            };
            let (before, after) = (entries(self), entries(&new));
            let keys: std::collections::BTreeSet<&String> =
                before.keys().chain(after.keys()).collect();
            changed.extend(
                keys.into_iter()
                    .filter(|k| before.get(*k) != after.get(*k))
                    .map(|k| format!("metadata.{field}.{k}")),
            );
        }
        let kind = |o: &Object| {
            o.node
                .get("type")
                .and_then(Node::as_str)
                .filter(|t| !t.is_empty())
                .unwrap_or("Opaque")
                .to_string()
        };
        if kind(self) != kind(&new) {
            changed.push("type".into());
        }
        changed
    }

    /// The annotations kpt and kustomize own, carried over to a replacement so it stays in its file.
    pub fn tool_annotations(&self) -> Vec<(String, String)> {
        self.string_entries("annotations")
            .into_iter()
            .filter(|(k, _)| is_tool_annotation(k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// What a result about this object names it by.
    pub fn resource_ref(&self) -> ResourceRef {
        ResourceRef {
            api_version: self.api_version().unwrap_or_default().to_string(),
            kind: self.kind().unwrap_or_default().to_string(),
            name: self.name().unwrap_or_default().to_string(),
            namespace: self.namespace_written().map(String::from),
        }
    }

    /// The file kpt read the object from, when kpt says so.
    pub fn file_ref(&self) -> Option<FileRef> {
        let annotation = |keys: [&str; 2]| {
            keys.iter()
                .find_map(|k| self.annotation(k))
                .map(String::from)
        };
        Some(FileRef {
            path: annotation(FILE_ANNOTATIONS[0])?,
            index: annotation(FILE_ANNOTATIONS[1]),
        })
    }

    /// A finding about this object (its resource and file filled in).
    pub fn finding(&self, finding: Finding) -> Finding {
        finding.on(Some(self.resource_ref()), self.file_ref())
    }

    /// A Secret's value by key: `stringData` first, then `data` (base64, decoded), as the API
    /// server merges them. `Ok(None)` when neither holds the key; `Err` names the field.
    /// `stringData` text is borrowed: checks read a config's JSON several times.
    pub fn secret_value(&self, key: &str) -> Result<Option<(String, Cow<'n, str>)>, Finding> {
        for section in ["stringData", "data"] {
            let field = || format!("{section}.{key}");
            let Some(container) = self.node.get(section).filter(|n| !n.is_null()) else {
                continue;
            };
            if container.as_map().is_none() {
                return Err(Finding::error(format!(
                    "expected a mapping, got {}",
                    container.type_name()
                ))
                .at(section));
            }
            let Some(value) = container.get(key).filter(|n| !n.is_null()) else {
                continue;
            };
            let Some(text) = value.as_str() else {
                return Err(Finding::error(format!(
                    "expected a string, got {}",
                    value.type_name()
                ))
                .at(field()));
            };
            if section == "stringData" {
                return Ok(Some((field(), Cow::Borrowed(text))));
            }
            let Ok((bytes, _)) = b64::decode(text) else {
                return Err(Finding::error("is not valid base64").at(field()));
            };
            let Ok(text) = String::from_utf8(bytes) else {
                return Err(Finding::error("does not decode to UTF-8 text").at(field()));
            };
            return Ok(Some((field(), Cow::Owned(text))));
        }
        Ok(None)
    }

    /// The base64 text of a Secret's `data` value as it stands in the input, when it is a
    /// string there.
    pub fn data_text(&self, key: &str) -> Option<&'n str> {
        self.node.path(&["data", key]).and_then(Node::as_str)
    }

    /// What is wrong with the metadata, as the API server would refuse it: each problem as a
    /// finding naming the field.
    pub fn metadata_problems(&self) -> Vec<Finding> {
        let mut problems = Vec::new();
        if let Some((path, key)) = self.node.duplicate_key() {
            let field = if path.is_empty() {
                key
            } else {
                format!("{path}.{key}")
            };
            problems.push(
                Finding::error(
                    "is given twice; YAML readers disagree on which one counts, so neither is used",
                )
                .at(field),
            );
        }
        let problem = |field: String, message: String| Finding::error(message).at(field);
        match self.node.get("metadata") {
            Some(m) if m.as_map().is_some() => {
                match m.get("name") {
                    Some(n) if n.as_str().is_some_and(|s| !s.is_empty()) => {}
                    Some(n) => problems.push(problem(
                        "metadata.name".into(),
                        format!("expected a name, got {}", n.type_name()),
                    )),
                    None => problems.push(problem("metadata.name".into(), "is missing".into())),
                }
                for field in ["labels", "annotations"] {
                    let Some(map) = m.get(field).filter(|v| !v.is_null()) else {
                        continue;
                    };
                    let Some(entries) = map.as_map() else {
                        problems.push(problem(
                            format!("metadata.{field}"),
                            format!("expected a mapping, got {}", map.type_name()),
                        ));
                        continue;
                    };
                    for (k, v) in entries {
                        if v.as_str().is_none() {
                            let key = k.scalar().map(|s| s.text.to_string()).unwrap_or_default();
                            problems.push(problem(
                                format!("metadata.{field}.{key}"),
                                format!("expected a string, got {}", v.type_name()),
                            ));
                        }
                    }
                }
            }
            Some(m) => problems.push(problem(
                "metadata".into(),
                format!("expected a mapping, got {}", m.type_name()),
            )),
            None => problems.push(problem("metadata".into(), "is missing".into())),
        }
        problems
    }
}

/// A Secret, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretId {
    /// Its namespace (`default` when none is written).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl SecretId {
    /// The Secret `namespace`/`name`.
    pub fn new(namespace: &str, name: &str) -> Self {
        SecretId {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The object's namespace (as the API server reads it) and name.
    pub fn of(object: Object) -> Self {
        SecretId::new(object.namespace(), object.name().unwrap_or_default())
    }
}

impl fmt::Display for SecretId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}
