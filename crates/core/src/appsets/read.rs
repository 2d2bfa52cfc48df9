//! ApplicationSets, Applications and Argo CD cluster Secrets read from the input, into what the
//! ApplicationSet controller looks at (the fields of pkg/apis/application/v1alpha1's
//! `ApplicationSet` and `Application` it acts on); everything else of them is left alone.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use krm::object::{Object, is_tool_annotation};
use yaml::Node;

use super::argo::{AppRef, IN_CLUSTER_SERVER};
use super::selector::{Selector, SelectorError};
use super::template::Syntax;

/// Argo CD's API group and version for ApplicationSets and Applications.
pub const ARGO_API_VERSION: &str = "argoproj.io/v1alpha1";

/// The finalizer that makes deleting an Application undeploy its resources
/// (`resources-finalizer.argocd.argoproj.io`, with its `/foreground` and `/background` forms).
pub const RESOURCES_FINALIZER: &str = "resources-finalizer.argocd.argoproj.io";

/// Whether an item is an Argo CD ApplicationSet.
pub fn is_application_set(object: Object) -> bool {
    object.is(Some(ARGO_API_VERSION), "ApplicationSet")
}

/// Whether an item is an Argo CD Application.
pub fn is_application(object: Object) -> bool {
    object.is(Some(ARGO_API_VERSION), "Application")
}

/// An Argo CD cluster as the cluster generator sees its Secret, or the local cluster Argo CD
/// adds itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// Its Secret; `None` for the local cluster (`in-cluster`) that has none.
    pub secret: Option<krm::object::SecretId>,
    pub name: String,
    pub server: String,
    pub project: Option<String>,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
}

impl ClusterView {
    /// A cluster Secret as the API server holds it (kpt's and kustomize's annotations are not
    /// applied with it, so they are not the cluster's).
    pub fn of(object: Object) -> ClusterView {
        let value = |key| {
            object
                .secret_value(key)
                .ok()
                .flatten()
                .map(|(_, v)| v.into_owned())
        };
        let pairs = |field| {
            object
                .string_entries(field)
                .into_iter()
                .filter(|(k, _)| field == "labels" || !is_tool_annotation(k))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        ClusterView {
            secret: Some(krm::object::SecretId::of(object)),
            name: value("name").unwrap_or_default(),
            server: value("server").unwrap_or_default(),
            project: value("project"),
            labels: pairs("labels"),
            annotations: pairs("annotations"),
        }
    }

    /// The local cluster's entry (`in-cluster`, `https://kubernetes.default.svc`).
    pub fn in_cluster() -> ClusterView {
        ClusterView {
            secret: None,
            name: "in-cluster".into(),
            server: IN_CLUSTER_SERVER.into(),
            project: Some(String::new()),
            labels: Vec::new(),
            annotations: Vec::new(),
        }
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One generator of an ApplicationSet, as far as its clusters matter.
#[derive(Debug, Clone)]
pub struct Generator {
    pub kind: GenKind,
    /// Its post-selector over the parameters it gives (`selector` beside the generator).
    pub post: Option<Result<Selector, SelectorError>>,
    /// Its own template's `metadata.name` (a top-level generator's wins over the spec's).
    pub name: Option<String>,
    /// Where it stands in the ApplicationSet, for what is said of it.
    pub field: String,
}

#[derive(Debug, Clone)]
pub enum GenKind {
    /// `clusters`: Argo CD's cluster Secrets.
    Clusters {
        selector: Result<Selector, SelectorError>,
        /// Whether its selector is a template of another generator's parameters.
        templated: bool,
        values: Vec<(String, String)>,
        flat: bool,
    },
    /// `list`: its `elements`, each key and string value (`None`: not a string); whether it
    /// also has `elementsYaml` (entries the plan cannot know).
    List {
        elements: Vec<Vec<(String, Option<String>)>>,
        more: bool,
    },
    Matrix(Vec<Generator>),
    Merge {
        keys: Vec<String>,
        generators: Vec<Generator>,
    },
    /// Git, SCM providers, pull requests, plugins, cluster decision resources: parameters the
    /// plan cannot know.
    Other(String),
    /// No generator Argo CD knows: the controller refuses the ApplicationSet.
    Unknown,
}

/// An ApplicationSet.
#[derive(Debug, Clone)]
pub struct AppSet {
    pub id: AppRef,
    pub index: usize,
    /// `goTemplate` and its `goTemplateOptions`.
    pub syntax: Syntax,
    /// `syncPolicy.applicationsSync` as written.
    pub sync: Option<String>,
    pub preserve: bool,
    /// `spec.template.metadata.name`.
    pub name: Option<String>,
    /// Whether a `templatePatch` may change the Applications' names (it writes `metadata`).
    pub patched: bool,
    pub generators: Vec<Generator>,
    pub deleting: bool,
}

/// An Application.
#[derive(Debug, Clone)]
pub struct App {
    pub id: AppRef,
    pub index: usize,
    /// The ApplicationSet that controls it (`metadata.ownerReferences` with `controller: true`,
    /// as the controller's `.metadata.controller` index reads it).
    pub owner: Option<String>,
    /// Whether anything controls it (an ApplicationSet or another controller).
    pub controlled: bool,
    pub finalizers: Vec<String>,
    pub server: Option<String>,
    pub destination_name: Option<String>,
    pub deleting: bool,
}

impl App {
    /// Whether deleting it undeploys its resources (it carries the resources finalizer).
    pub fn undeploys(&self) -> bool {
        self.finalizers
            .iter()
            .any(|f| f.starts_with(RESOURCES_FINALIZER))
    }
}

fn text(node: Option<&Node>) -> Option<String> {
    node.and_then(|n| n.scalar()).map(|s| s.text.to_string())
}

fn strings(node: Option<&Node>) -> Option<Vec<String>> {
    node.and_then(Node::as_seq)
        .map(|s| s.iter().filter_map(|n| text(Some(n))).collect())
}

fn truthy(node: Option<&Node>) -> bool {
    node.and_then(Node::as_bool).unwrap_or(false)
        || node.and_then(Node::as_str).is_some_and(|s| s == "true")
}

/// An ApplicationSet item.
pub fn app_set(object: Object, index: usize) -> AppSet {
    let spec = object.node.get("spec");
    let get = |path: &[&str]| spec.and_then(|s| s.path(path));
    let generators = get(&["generators"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, g)| generator(g, format!("spec.generators[{i}]"), true))
        .collect();
    AppSet {
        id: AppRef::of(object),
        index,
        syntax: Syntax::of(
            truthy(get(&["goTemplate"])),
            &strings(get(&["goTemplateOptions"])).unwrap_or_default(),
        ),
        sync: text(get(&["syncPolicy", "applicationsSync"])),
        preserve: truthy(get(&["syncPolicy", "preserveResourcesOnDeletion"])),
        name: text(get(&["template", "metadata", "name"])),
        patched: get(&["templatePatch"])
            .and_then(Node::as_str)
            .is_some_and(patches_name),
        generators,
        deleting: object
            .node
            .path(&["metadata", "deletionTimestamp"])
            .is_some_and(|t| !t.is_null()),
    }
}

/// Whether a `templatePatch` may set the Applications' `metadata.name`. Its actions stand in
/// for values (each `{{…}}` one word), and the text must read as YAML with no `metadata.name`
/// for the name to be left alone; anything else (control flow around keys, text that is not
/// YAML) may set it.
fn patches_name(patch: &str) -> bool {
    let mut text = String::with_capacity(patch.len());
    let mut rest = patch;
    while let Some(start) = rest.find("{{") {
        text.push_str(&rest[..start]);
        let Some(end) = rest[start..].find("}}") else {
            return true;
        };
        text.push_str("value");
        rest = &rest[start + end + 2..];
    }
    text.push_str(rest);
    let limits = yaml::Limits::default();
    match yaml::parse_stream(&text, &limits) {
        Ok(docs) => docs.iter().any(|d| {
            d.root.as_map().is_none()
                || d.root
                    .get("metadata")
                    .is_some_and(|m| m.as_map().is_none() || m.get("name").is_some())
        }),
        Err(_) => true,
    }
}

/// One generator; `top`: directly under `spec.generators` (only those have a template).
fn generator(node: &Node, field: String, top: bool) -> Generator {
    const OTHERS: [&str; 5] = [
        "git",
        "scmProvider",
        "pullRequest",
        "plugin",
        "clusterDecisionResource",
    ];
    let post = node
        .get("selector")
        .filter(|s| !s.is_null())
        .map(|s| Selector::read(Some(s), &format!("{field}.selector"), false));
    let (kind, own) = if let Some(c) = node.get("clusters").filter(|n| !n.is_null()) {
        let selector = c.get("selector");
        let templated = selector.is_some_and(has_template);
        let values = c
            .get("values")
            .and_then(Node::as_map)
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, v)| Some((text(Some(k))?, text(Some(v))?)))
            .collect();
        let kind = GenKind::Clusters {
            selector: Selector::read(selector, &format!("{field}.clusters.selector"), true),
            templated,
            values,
            flat: truthy(c.get("flatList")),
        };
        (kind, Some(c))
    } else if let Some(m) = node.get("matrix").filter(|n| !n.is_null()) {
        (
            GenKind::Matrix(children(m, &format!("{field}.matrix"))),
            Some(m),
        )
    } else if let Some(m) = node.get("merge").filter(|n| !n.is_null()) {
        let keys = strings(m.get("mergeKeys")).unwrap_or_default();
        let generators = children(m, &format!("{field}.merge"));
        (GenKind::Merge { keys, generators }, Some(m))
    } else if let Some(l) = node.get("list").filter(|n| !n.is_null()) {
        let elements = l
            .get("elements")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .map(|e| {
                let mut flat = Vec::new();
                flatten(e, "", &mut flat);
                flat
            })
            .collect();
        let more = l.get("elementsYaml").is_some_and(|y| !y.is_null());
        (GenKind::List { elements, more }, Some(l))
    } else {
        match OTHERS
            .iter()
            .find(|k| node.get(k).is_some_and(|n| !n.is_null()))
        {
            Some(k) => (GenKind::Other((*k).to_string()), node.get(k)),
            None => (GenKind::Unknown, None),
        }
    };
    let template = own.filter(|_| top).and_then(|o| o.get("template"));
    Generator {
        kind,
        post,
        name: text(template.and_then(|t| t.path(&["metadata", "name"]))).filter(|n| !n.is_empty()),
        field,
    }
}

fn children(node: &Node, field: &str) -> Vec<Generator> {
    node.get("generators")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, g)| generator(g, format!("{field}.generators[{i}]"), false))
        .collect()
}

/// Whether any string under `node` is a template (`{{`).
fn has_template(node: &Node) -> bool {
    match (node.scalar(), node.as_map(), node.as_seq()) {
        (Some(s), _, _) => s.text.contains("{{"),
        (_, Some(m), _) => m.iter().any(|(k, v)| has_template(k) || has_template(v)),
        (_, _, Some(s)) => s.iter().any(has_template),
        _ => false,
    }
}

/// A list element's keys, flattened with dots as the parameters are (`values.x`); a value that
/// is not a string is `None` (its text in a name is Go's printing of a JSON number or boolean).
fn flatten(node: &Node, prefix: &str, out: &mut Vec<(String, Option<String>)>) {
    let Some(entries) = node.as_map() else {
        return;
    };
    for (k, v) in entries {
        let Some(key) = text(Some(k)) else { continue };
        let key = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        if v.as_map().is_some() {
            flatten(v, &key, out);
        } else {
            out.push((key, v.as_str().map(String::from)));
        }
    }
}

/// An Application item.
pub fn app(object: Object, index: usize) -> App {
    let meta = object.node.get("metadata");
    let controller = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .find(|o| truthy(o.get("controller")));
    let owner = controller
        .filter(|o| {
            text(o.get("apiVersion")).as_deref() == Some(ARGO_API_VERSION)
                && text(o.get("kind")).as_deref() == Some("ApplicationSet")
        })
        .and_then(|o| text(o.get("name")));
    let destination = object.node.path(&["spec", "destination"]);
    let field = |k| text(destination.and_then(|d| d.get(k))).filter(|v| !v.is_empty());
    App {
        id: AppRef::of(object),
        index,
        owner,
        controlled: controller.is_some(),
        finalizers: strings(meta.and_then(|m| m.get("finalizers"))).unwrap_or_default(),
        server: field("server"),
        destination_name: field("name"),
        deleting: meta
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some_and(|t| !t.is_null()),
    }
}

#[cfg(test)]
mod tests {
    /// Regression: a templatePatch that sets only annotations was taken to rename every
    /// Application (a plan of false deletes).
    #[test]
    fn a_template_patch_renames_only_when_it_may_set_the_name() {
        assert!(!super::patches_name(
            "metadata:\n  annotations:\n    team: '{{.metadata.labels.team}}'\n"
        ));
        assert!(!super::patches_name(
            "spec:\n  source:\n    helm:\n      valueFiles: [{{ .values.files }}]\n"
        ));
        assert!(super::patches_name("metadata:\n  name: '{{.name}}-x'\n"));
        assert!(super::patches_name(
            "{{- if .autoSync }}\nmetadata:\n  name: x\n{{- end }}\n"
        ));
        assert!(super::patches_name("{{ .broken"));
    }
}
