//! The plan shown: one line per Argo CD cluster Secret for people, JSON for tools, and the two
//! lists a pipeline carries out — the Secrets to write, the Secrets to delete. Never a value
//! from a Secret's data besides the cluster's name and server.

use crate::config::API_VERSION;
use crate::yaml::{Node, Value};

use super::plan::{Action, Entry, Plan, SecretId};

/// How `capi2argo plan` shows the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One line per Secret and a summary line.
    Text,
    /// The plan as one JSON object (`kind: Plan`).
    Json,
    /// The Secrets to create or update, as a YAML stream for `kubectl apply`, their values under
    /// `data` as the API server stores them: server-side apply then also removes a key a
    /// Secret no longer has (it cannot through `stringData`, which is never stored).
    Writes,
    /// The Secrets to delete, one per line: the Secret's API path and the `DeleteOptions` that
    /// make the deletion conditional on the `uid` and `resourceVersion` the input gave, as
    /// `kubectl delete --raw PATH -f -` takes them.
    Deletes,
}

/// A Secret as the API server stores it: `stringData` merged into `data`, base64.
fn stored(secret: &Node<'static>) -> Node<'static> {
    let Value::Map(entries) = &secret.value else {
        return secret.clone();
    };
    let mut data: Vec<(Node<'static>, Node<'static>)> = Vec::new();
    let mut rest = Vec::new();
    for (key, value) in entries {
        match (key.as_str(), &value.value) {
            (Some("data"), Value::Map(values)) => data.extend(values.iter().cloned()),
            (Some("stringData"), Value::Map(values)) => {
                for (k, v) in values {
                    let text = v.as_str().unwrap_or_default();
                    let encoded = Node::string(crate::krm::b64::encode(text.as_bytes()));
                    data.retain(|(d, _)| d.as_str() != k.as_str());
                    data.push((k.clone(), encoded));
                }
            }
            _ => rest.push((key.clone(), value.clone())),
        }
    }
    rest.push((Node::string("data"), Node::from_entries(data)));
    Node::from_entries(rest)
}

/// One line of the `deletes` format: the API path of the Secret that goes, and the
/// `DeleteOptions` that delete it only as it was read.
fn delete_line(e: &Entry) -> String {
    let id = match &e.action {
        Action::Rename { from, .. } => from,
        _ => &e.secret,
    };
    let mut preconditions = Vec::new();
    if let Some(uid) = &e.uid {
        preconditions.push(("uid", Node::string(uid.clone())));
    }
    if let Some(version) = &e.resource_version {
        preconditions.push(("resourceVersion", Node::string(version.clone())));
    }
    let mut options = vec![
        ("apiVersion", Node::string("v1")),
        ("kind", Node::string("DeleteOptions")),
    ];
    if !preconditions.is_empty() {
        options.push(("preconditions", Node::map(preconditions)));
    }
    let mut line = format!("/api/v1/namespaces/{}/secrets/{} ", id.namespace, id.name);
    crate::yaml::emit::write_json(&mut line, &Node::map(options), None);
    line.push('\n');
    line
}

/// The actions in the order the summary counts them.
const WORDS: &[&str] = &["create", "update", "rename", "prune", "kept", "unchanged"];

impl Plan {
    /// The plan in `format`.
    pub fn show(&self, format: Format) -> String {
        match format {
            Format::Text => self.text(),
            Format::Json => {
                let mut text = String::new();
                crate::yaml::emit::write_json(&mut text, &self.json(), Some(0));
                text.push('\n');
                text
            }
            Format::Writes => {
                let mut text = String::new();
                for node in &self.writes {
                    text.push_str("---\n");
                    crate::yaml::emit::write_document(&mut text, &stored(node));
                }
                text
            }
            Format::Deletes => self.deletes().map(delete_line).collect(),
        }
    }

    /// The entries whose existing Secret goes: prunes, and renames to a Secret of another name.
    pub fn deletes(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| match &e.action {
            Action::Prune => true,
            Action::Rename { from, .. } => *from != e.secret,
            _ => false,
        })
    }

    /// How many entries take each action, in the summary's order.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        WORDS
            .iter()
            .map(|w| {
                let n = self
                    .entries
                    .iter()
                    .filter(|e| e.action.word() == *w)
                    .count();
                (*w, n)
            })
            .collect()
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            let detail = match &e.action {
                Action::Create => match &e.source {
                    Some(source) => format!(" from {source}"),
                    None => String::new(),
                },
                Action::Update { changed } => format!(": {}", changed.join(", ")),
                Action::Rename { from, from_cluster } if *from == e.secret => {
                    format!(": {from_cluster} -> {}", e.cluster)
                }
                Action::Rename { from, from_cluster } => {
                    out.push_str(&format!(
                        "{:<9} {from} ({from_cluster}) -> {} ({})\n",
                        e.action.word(),
                        e.secret,
                        e.cluster
                    ));
                    continue;
                }
                Action::Kept { reason } => format!(": {reason}"),
                Action::Prune | Action::Unchanged => String::new(),
            };
            out.push_str(&format!(
                "{:<9} {} ({}){detail}\n",
                e.action.word(),
                e.secret,
                e.cluster
            ));
        }
        let counts: Vec<String> = self
            .counts()
            .into_iter()
            .map(|(w, n)| match w {
                "kept" | "unchanged" => format!("{n} {w}"),
                _ => format!("{n} to {w}"),
            })
            .collect();
        out.push_str(&format!("plan: {}\n", counts.join(", ")));
        out
    }

    /// The plan as a JSON object, written by the same emitter as JSON output.
    fn json(&self) -> Node<'static> {
        let id = |s: &SecretId| {
            Node::map(vec![
                ("namespace", Node::string(s.namespace.clone())),
                ("name", Node::string(s.name.clone())),
            ])
        };
        let strings = |v: &[String]| Node::seq(v.iter().cloned().map(Node::string).collect());
        let entries = self
            .entries
            .iter()
            .map(|e| {
                let mut fields = vec![
                    ("action", Node::string(e.action.word())),
                    ("secret", id(&e.secret)),
                    ("cluster", Node::string(e.cluster.clone())),
                    ("server", Node::string(e.server.clone())),
                ];
                if let Some(source) = &e.source {
                    fields.push(("source", id(source)));
                }
                if let Some(uid) = &e.uid {
                    fields.push(("uid", Node::string(uid.clone())));
                }
                if let Some(version) = &e.resource_version {
                    fields.push(("resourceVersion", Node::string(version.clone())));
                }
                match &e.action {
                    Action::Update { changed } => fields.push(("changed", strings(changed))),
                    Action::Rename { from, from_cluster } => {
                        fields.push(("from", id(from)));
                        fields.push(("fromCluster", Node::string(from_cluster.clone())));
                    }
                    Action::Kept { reason } => {
                        fields.push(("reason", Node::string(reason.clone())))
                    }
                    _ => {}
                }
                Node::map(fields)
            })
            .collect();
        let summary = self
            .counts()
            .into_iter()
            .map(|(w, n)| (w, Node::plain(n.to_string())))
            .collect();
        Node::map(vec![
            ("apiVersion", Node::string(API_VERSION)),
            ("kind", Node::string("Plan")),
            ("entries", Node::seq(entries)),
            ("summary", Node::map(summary)),
        ])
    }
}
