//! The items of an input, each as a YAML document of its own with what names it: for hosts that
//! list or show what a run read or wrote (the playground lists the Argo CD cluster Secrets).

use crate::convert::argocd::OWNED_LABEL;
use crate::run::RunError;
use crate::validate::is_cluster_secret;
use krm::object::Object;
use krm::render::Writer;
use krm::{self, Form, Out, TextStore};
use yaml::Limits;
use yaml::Node;

/// One item of an input, and its YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `apiVersion`, empty when absent.
    pub api_version: String,
    /// `kind`, empty when absent.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The namespace as written, if any.
    pub namespace: Option<String>,
    /// An Argo CD cluster Secret (`argocd.argoproj.io/secret-type: cluster`, what the validator
    /// checks).
    pub cluster_secret: bool,
    /// Labelled as the function's own (`capi-to-argocd/owned: "true"`).
    pub owned: bool,
    /// The item as one YAML document, beginning with `---`: copied from a stream or List as it
    /// was written, written by the emitter for a ResourceList's items.
    pub text: String,
}

/// Every item of `text` (a ResourceList, List or stream, YAML or JSON), in order.
pub fn documents(text: &[u8], limits: &Limits) -> Result<Vec<Document>, RunError> {
    let mut input = krm::parse(text, limits)?;
    // A ResourceList's items stand in its `items` list: as documents they are written anew.
    let in_list = matches!(input.form, Form::ResourceList { .. });
    input.form = Form::Stream;
    let store = TextStore::default();
    let mut found = Vec::new();
    for item in &input.items {
        let object = Object::new(&item.node);
        let out = if in_list {
            Out::New(item.node.clone().into_owned())
        } else {
            Out::Keep(item)
        };
        let mut text = String::new();
        if let Some(mut writer) = Writer::new(&input) {
            writer.item(&out, &store, &mut |s| text.push_str(s));
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
        found.push(Document {
            api_version: object.api_version().unwrap_or_default().to_string(),
            kind: object.kind().unwrap_or_default().to_string(),
            name: object.name().unwrap_or_default().to_string(),
            namespace: object.namespace_written().map(String::from),
            cluster_secret: is_cluster_secret(&item.node),
            owned: object.label(OWNED_LABEL) == Some("true"),
            text,
        });
    }
    Ok(found)
}

/// The items of an input (any form the function reads) as a JSON array: for hosts that show
/// what came out without a YAML reader of their own.
pub fn items_json(input: &[u8], limits: &Limits) -> Result<String, RunError> {
    let parsed = krm::parse(input, limits)?;
    let items = Node::seq(
        parsed
            .items
            .into_iter()
            .map(|i| i.node.into_owned())
            .collect(),
    );
    let mut out = String::new();
    yaml::emit::write_json(&mut out, &items, None);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::parse_stream;

    const OWNED: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-a\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n    capi-to-argocd/owned: \"true\"\nstringData:\n  name: a\n  server: https://a\n  config: |-\n    {\"bearerToken\": \"t\"}\n";
    const HAND: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-b\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n# a comment kept\nstringData:\n  name: b\n  server: https://b\n";
    const OTHER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";

    #[test]
    fn stream_documents_are_copied_as_written() {
        let text = format!("{OWNED}---\n{OTHER}---\n{HAND}");
        let found = documents(text.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].text, format!("---\n{OWNED}"));
        assert!(found[0].owned && found[0].cluster_secret);
        assert_eq!(found[1].text, format!("---\n{OTHER}"));
        assert!(!found[1].cluster_secret);
        assert_eq!(found[2].text, format!("---\n{HAND}"));
        assert!(!found[2].owned && found[2].cluster_secret);
        assert_eq!(found[2].namespace, None);
        assert_eq!(found[2].name, "cluster-b");
    }

    #[test]
    fn resource_list_items_become_documents_that_read_the_same() {
        let indent = |doc: &str| -> String {
            doc.lines()
                .enumerate()
                .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
                .collect()
        };
        let text = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}{}{}",
            indent(OTHER),
            indent(OWNED),
            indent(HAND)
        );
        let found = documents(text.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(found.len(), 3);
        for (doc, original) in found.iter().zip([OTHER, OWNED, HAND]) {
            assert!(doc.text.starts_with("---\n"));
            let limits = Limits::default();
            let ours = parse_stream(&doc.text, &limits).unwrap();
            let theirs = parse_stream(original, &limits).unwrap();
            assert!(yaml::same_content(&ours[0].root, &theirs[0].root));
        }
    }

    #[test]
    fn unreadable_text_is_an_error() {
        assert!(documents(b"a: [", &Limits::default()).is_err());
    }
}
