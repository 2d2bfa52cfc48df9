//! The Argo CD cluster Secrets of a text the function reads or writes, each as a YAML document
//! of its own: what a host that shows the function's output (the playground) lists, in convert
//! mode the Secrets the function owns, in validate mode every one the validator checked.

use crate::convert::argocd::OWNED_LABEL;
use crate::krm::object::Object;
use crate::krm::render::Writer;
use crate::krm::{self, Form, Out, TextStore};
use crate::limits::Limits;
use crate::run::RunError;
use crate::validate::is_cluster_secret;

/// One Argo CD cluster Secret (`argocd.argoproj.io/secret-type: cluster`, the Secrets the
/// validator checks) and its YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSecretText {
    /// `metadata.name`.
    pub name: String,
    /// The namespace as written, if any.
    pub namespace: Option<String>,
    /// Whether the function owns it (`capi-to-argocd/owned: "true"`): one it wrote.
    pub owned: bool,
    /// The Secret as one YAML document, beginning with `---`: copied from a stream or List as
    /// it was written, written by the emitter for a ResourceList's items.
    pub text: String,
}

/// Every Argo CD cluster Secret of `text` (a ResourceList, List or stream, YAML or JSON), in order.
pub fn cluster_secrets(text: &str, limits: &Limits) -> Result<Vec<ClusterSecretText>, RunError> {
    let mut input = krm::parse(text.as_bytes(), limits)?;
    // A ResourceList's items stand in its `items` list: as documents they are written anew.
    let in_list = matches!(input.form, Form::ResourceList { .. });
    input.form = Form::Stream;
    let store = TextStore::default();
    let mut found = Vec::new();
    for item in input.items.iter().filter(|i| is_cluster_secret(&i.node)) {
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
        found.push(ClusterSecretText {
            name: object.name().unwrap_or_default().to_string(),
            namespace: object.namespace_written().map(String::from),
            owned: object.label(OWNED_LABEL) == Some("true"),
            text,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_stream;

    const OWNED: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-a\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n    capi-to-argocd/owned: \"true\"\nstringData:\n  name: a\n  server: https://a\n  config: |-\n    {\"bearerToken\": \"t\"}\n";
    const HAND: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-b\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n# a comment kept\nstringData:\n  name: b\n  server: https://b\n";
    const OTHER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";

    #[test]
    fn stream_documents_are_copied_as_written() {
        let text = format!("{OWNED}---\n{OTHER}---\n{HAND}");
        let found = cluster_secrets(&text, &Limits::default()).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].text, format!("---\n{OWNED}"));
        assert!(found[0].owned);
        assert_eq!(found[1].text, format!("---\n{HAND}"));
        assert!(!found[1].owned);
        assert_eq!(found[1].namespace, None);
        assert_eq!(found[1].name, "cluster-b");
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
        let found = cluster_secrets(&text, &Limits::default()).unwrap();
        assert_eq!(found.len(), 2);
        for (doc, original) in found.iter().zip([OWNED, HAND]) {
            assert!(doc.text.starts_with("---\n"));
            let limits = Limits::default();
            let ours = parse_stream(&doc.text, &limits).unwrap();
            let theirs = parse_stream(original, &limits).unwrap();
            assert!(crate::yaml::same_content(&ours[0].root, &theirs[0].root));
        }
    }

    #[test]
    fn unreadable_text_is_an_error() {
        assert!(cluster_secrets("a: [", &Limits::default()).is_err());
    }
}
