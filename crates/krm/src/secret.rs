//! A Secret as a value: what a request writes to the API server, typed, so that a host sends it
//! without reading text back (the controller turns it into its client's Secret field by field;
//! the command prints it as the JSON the API server stores).

use yaml::{Node, Value};

use crate::b64;
use crate::object::{Object, SecretId, is_tool_annotation};

/// A Secret as the API server stores it: its metadata, its type and its values (`data`, the
/// bytes themselves; `stringData` is merged into them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Secret {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its labels, in the order they are written.
    pub labels: Vec<(String, String)>,
    /// Its annotations, in the order they are written (never kpt's or kustomize's own).
    pub annotations: Vec<(String, String)>,
    /// Its `type`, such as `Opaque`.
    pub type_: String,
    /// Its values, in the order they are written.
    pub data: Vec<(String, Vec<u8>)>,
}

/// Conditions the API server checks before it carries a write out: the object is still the one
/// that was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preconditions {
    /// The `metadata.uid` read: the object was not deleted and made again meanwhile.
    pub uid: Option<String>,
    /// The `metadata.resourceVersion` read: the object did not change meanwhile.
    pub resource_version: Option<String>,
}

impl Secret {
    /// The Secret a tree describes (a Secret the core wrote), as the API server would store it:
    /// `stringData` merged into `data`, the annotations kpt and kustomize keep for themselves
    /// left out. `None` when the tree is no mapping.
    pub fn from_node(node: &Node) -> Option<Secret> {
        let object = Object::new(node);
        let Value::Map(entries) = &node.value else {
            return None;
        };
        let text_pairs = |field: &str| -> Vec<(String, String)> {
            node.path(&["metadata", field])
                .and_then(Node::as_map)
                .unwrap_or_default()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
                .collect()
        };
        let mut data: Vec<(String, Vec<u8>)> = Vec::new();
        for (key, value) in entries {
            let Some(values) = value.as_map() else {
                continue;
            };
            let string_data = match key.as_str() {
                Some("data") => false,
                Some("stringData") => true,
                _ => continue,
            };
            for (k, v) in values {
                let (Some(k), Some(text)) = (k.as_str(), v.as_str()) else {
                    continue;
                };
                let bytes = if string_data {
                    text.as_bytes().to_vec()
                } else {
                    // A value the core wrote is valid base64; one that is not stays as it is.
                    b64::decode_exact(text.as_bytes()).unwrap_or_else(|_| text.as_bytes().to_vec())
                };
                // stringData wins over data, as the API server merges them.
                data.retain(|(d, _)| d != k);
                data.push((k.to_string(), bytes));
            }
        }
        Some(Secret {
            name: object.name().unwrap_or_default().to_string(),
            namespace: object.namespace().to_string(),
            labels: text_pairs("labels"),
            annotations: text_pairs("annotations")
                .into_iter()
                .filter(|(k, _)| !is_tool_annotation(k))
                .collect(),
            type_: node
                .get("type")
                .and_then(Node::as_str)
                .unwrap_or("Opaque")
                .to_string(),
            data,
        })
    }

    /// Its namespace and name.
    pub fn id(&self) -> SecretId {
        SecretId::new(&self.namespace, &self.name)
    }

    /// The label `key`'s value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The annotation `key`'s value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`.
    pub fn value(&self, key: &str) -> Option<&[u8]> {
        self.data
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    /// The Secret as one line of JSON, as the API server takes it in a request's body (its
    /// values base64 under `data`), with `conditions` in its metadata: a replace carries the
    /// `resourceVersion` (and `uid`) it was read at, so the server refuses it when the Secret
    /// changed since.
    pub fn to_json(&self, conditions: &Preconditions) -> String {
        let pairs = |pairs: &[(String, String)]| {
            Node::from_entries(
                pairs
                    .iter()
                    .map(|(k, v)| (Node::string(k.clone()), Node::string(v.clone())))
                    .collect(),
            )
        };
        let mut metadata = vec![
            ("name", Node::string(self.name.clone())),
            ("namespace", Node::string(self.namespace.clone())),
        ];
        if let Some(uid) = &conditions.uid {
            metadata.push(("uid", Node::string(uid.clone())));
        }
        if let Some(version) = &conditions.resource_version {
            metadata.push(("resourceVersion", Node::string(version.clone())));
        }
        metadata.push(("labels", pairs(&self.labels)));
        if !self.annotations.is_empty() {
            metadata.push(("annotations", pairs(&self.annotations)));
        }
        let data = Node::from_entries(
            self.data
                .iter()
                .map(|(k, v)| (Node::string(k.clone()), Node::string(b64::encode(v))))
                .collect(),
        );
        let node = Node::map(vec![
            ("apiVersion", Node::string("v1")),
            ("kind", Node::string("Secret")),
            ("metadata", Node::map(metadata)),
            ("type", Node::string(self.type_.clone())),
            ("data", data),
        ]);
        let mut json = String::new();
        yaml::emit::write_json(&mut json, &node, None);
        json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Node<'static> {
        yaml::parse_stream(text, &yaml::Limits::default())
            .expect("YAML")
            .remove(0)
            .root
            .into_owned()
    }

    #[test]
    fn string_data_is_merged_into_data_and_tool_annotations_left_out() {
        let node = parse(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c\n  namespace: argocd\n  annotations:\n    config.kubernetes.io/index: '0'\n    team: blue\n  labels:\n    a: b\ntype: Opaque\ndata:\n  name: b2xk\n  server: aHR0cHM6Ly9h\nstringData:\n  name: new\n",
        );
        let secret = Secret::from_node(&node).expect("a Secret");
        assert_eq!(secret.id(), SecretId::new("argocd", "c"));
        assert_eq!(secret.annotations, [("team".into(), "blue".into())]);
        assert_eq!(secret.value("name"), Some(&b"new"[..]));
        assert_eq!(secret.value("server"), Some(&b"https://a"[..]));
        assert_eq!(
            secret.to_json(&Preconditions {
                uid: None,
                resource_version: Some("7".into())
            }),
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c","namespace":"argocd","resourceVersion":"7","labels":{"a":"b"},"annotations":{"team":"blue"}},"type":"Opaque","data":{"server":"aHR0cHM6Ly9h","name":"bmV3"}}"#
        );
    }
}
