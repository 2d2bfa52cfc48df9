//! KRM function results: what went wrong or is worth knowing, and which resource and field it is about.

use std::fmt;

use crate::yaml::Node;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// The resource a result is about, as the KRM spec's `resourceRef`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.name.is_empty() {
            "<no name>"
        } else {
            &self.name
        };
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{name}", self.kind),
            None => write!(f, "{} {name}", self.kind),
        }
    }
}

/// The file a resource came from, when kpt says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    pub path: String,
    pub index: Option<String>,
}

/// One result. Messages never contain key material: they name fields, not their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub resource: Option<ResourceRef>,
    pub field: Option<String>,
    pub file: Option<FileRef>,
}

impl Diagnostic {
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            message: message.into(),
            resource: None,
            field: None,
            file: None,
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    pub fn info(message: impl Into<String>) -> Self {
        Self::new(Severity::Info, message)
    }

    pub fn on(mut self, resource: Option<ResourceRef>, file: Option<FileRef>) -> Self {
        self.resource = resource;
        self.file = file;
        self
    }

    pub fn at(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The result as a KRM `results[]` entry.
    pub fn to_node(&self) -> Node<'static> {
        let mut entries = vec![
            ("message", Node::string(self.message.clone())),
            ("severity", Node::string(self.severity.as_str())),
        ];
        if let Some(r) = &self.resource {
            let mut reference = vec![
                ("apiVersion", Node::string(r.api_version.clone())),
                ("kind", Node::string(r.kind.clone())),
                ("name", Node::string(r.name.clone())),
            ];
            if let Some(ns) = &r.namespace {
                reference.push(("namespace", Node::string(ns.clone())));
            }
            entries.push(("resourceRef", Node::map(reference)));
        }
        if let Some(path) = &self.field {
            entries.push((
                "field",
                Node::map(vec![("path", Node::string(path.clone()))]),
            ));
        }
        if let Some(file) = &self.file {
            let mut f = vec![("path", Node::string(file.path.clone()))];
            if let Some(index) = &file.index {
                f.push(("index", Node::plain(index.clone())));
            }
            entries.push(("file", Node::map(f)));
        }
        Node::map(entries)
    }
}

/// Results as the KRM `results` list.
/// Whether any result is an error (the function then exits 1, output still complete).
pub fn failed(results: &[Diagnostic]) -> bool {
    results.iter().any(|r| r.severity == Severity::Error)
}

pub fn list_node(results: &[Diagnostic]) -> Node<'static> {
    Node::seq(results.iter().map(Diagnostic::to_node).collect())
}

/// Results as a JSON array of KRM `results[]` entries (for hosts that want structured results).
pub fn to_json(results: &[Diagnostic]) -> String {
    let mut out = String::new();
    crate::yaml::emit::write_json(&mut out, &list_node(results), None);
    out
}

/// One readable line, as printed on stderr: `error: Secret ns/name: data.value: message`.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.severity.as_str())?;
        if let Some(r) = &self.resource {
            write!(f, "{r}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}
