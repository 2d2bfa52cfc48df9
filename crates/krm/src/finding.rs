//! KRM function results: what went wrong or is worth knowing, and which resource and field it is about.

use std::fmt;

use yaml::Node;

/// How much a finding matters: an error fails the run (exit 1), a warning and information do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something is wrong and was not (fully) done.
    Error,
    /// Done, but worth a look.
    Warning,
    /// For the record (pruned Secrets, unused inventory entries).
    Info,
}

impl Severity {
    /// The KRM spelling: `error`, `warning`, `info`.
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
    /// `apiVersion`, empty when the resource has none.
    pub api_version: String,
    /// `kind`, empty when the resource has none.
    pub kind: String,
    /// `metadata.name`, empty when the resource has none.
    pub name: String,
    /// `metadata.namespace`, when written.
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
    /// The path kpt read it from, relative to the package.
    pub path: String,
    /// Its document index in that file.
    pub index: Option<String>,
}

/// One finding: a KRM result, and the one shape every module reports a problem in (severity,
/// field path, message; the resource and file once they are known). Messages never contain key
/// material: they name fields, not their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What is wrong or worth knowing, in lowercase words; never a field's value.
    pub message: String,
    /// Boxed: most findings travel as values, and most are about no resource until named.
    pub resource: Option<Box<ResourceRef>>,
    /// The field it is about (`data.value`, `spec.inventory[0].label`).
    pub field: Option<String>,
    /// The file kpt read the resource from.
    pub file: Option<Box<FileRef>>,
}

impl Finding {
    /// A finding about nothing in particular yet.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Finding {
            severity,
            message: message.into(),
            resource: None,
            field: None,
            file: None,
        }
    }

    /// An error finding.
    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    /// The same finding with `prefix` put before its field path (a finding about a part of a
    /// value, raised to the value's own path).
    pub fn under(mut self, prefix: &str) -> Self {
        self.field = Some(format!("{prefix}{}", self.field.take().unwrap_or_default()));
        self
    }

    /// A warning finding.
    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    /// An information finding.
    pub fn info(message: impl Into<String>) -> Self {
        Self::new(Severity::Info, message)
    }

    /// The same finding, about this resource, read from this file.
    pub fn on(mut self, resource: Option<ResourceRef>, file: Option<FileRef>) -> Self {
        self.resource = resource.map(Box::new);
        self.file = file.map(Box::new);
        self
    }

    /// The same finding, about this field.
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

/// Whether any result is an error (the function then exits 1, output still complete).
pub fn failed(results: &[Finding]) -> bool {
    results.iter().any(|r| r.severity == Severity::Error)
}

/// Results as the KRM `results` list.
pub fn list_node(results: &[Finding]) -> Node<'static> {
    Node::seq(results.iter().map(Finding::to_node).collect())
}

/// Results as a JSON array of KRM `results[]` entries (for hosts that want structured results).
pub fn results_json(results: &[Finding]) -> String {
    let mut out = String::new();
    yaml::emit::write_json(&mut out, &list_node(results), None);
    out
}

/// One readable line, as printed on stderr: `error: Secret ns/name: data.value: message`.
impl fmt::Display for Finding {
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
