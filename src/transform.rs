//! The transformation: find CAPI kubeconfig Secrets, convert them, and reconcile the Argo CD cluster Secrets.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::config::{Config, ConfigError, Mode};
use crate::convert::argocd::{
    self, ClusterSecret, OWNED_LABEL, PROTECTED_LABELS, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
};
use crate::convert::kubeconfig::{self, Credentials};
use crate::convert::meta as names;
use crate::fleet::cluster;
use crate::fleet::inventory::Selector;
use crate::krm::finding::{Diagnostic, FileRef, ResourceRef, Severity};
use crate::krm::{self, Form, Input, InputError, Item, Out};
use crate::limits::Limits;
use crate::yaml::{Node, Value, parse_stream, same_content};

pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
const CAPI_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";
const PATH_ANNOTATION: &str = "internal.config.kubernetes.io/path";
const LEGACY_PATH_ANNOTATION: &str = "config.kubernetes.io/path";
const INDEX_ANNOTATION: &str = "internal.config.kubernetes.io/index";
const LEGACY_INDEX_ANNOTATION: &str = "config.kubernetes.io/index";

/// How to run, besides the input itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A functionConfig object (YAML or JSON) that replaces the one in the ResourceList.
    pub function_config: Option<String>,
    /// `key=value` settings applied over the functionConfig.
    pub overrides: Vec<String>,
    /// Contents of the config's `resourceFiles`, read by the caller (path, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    pub limits: Limits,
}

/// The files the configuration asks for (`resourceFiles`), for the caller to read before `run`.
pub fn requested_files(input: &[u8], options: &Options) -> Result<Vec<String>, RunError> {
    let mentioned = |bytes: &[u8]| memchr::memmem::find(bytes, b"resourceFiles").is_some();
    let in_options = options
        .function_config
        .as_deref()
        .is_some_and(|c| mentioned(c.as_bytes()))
        || options.overrides.iter().any(|o| mentioned(o.as_bytes()));
    // Most inputs never mention it: skip a second parse then.
    if !in_options && !mentioned(input) {
        return Ok(Vec::new());
    }
    let parsed = krm::parse(input, &options.limits)?;
    let override_doc = function_config_override(options)?;
    let fc = override_doc.as_ref().or(parsed.function_config.as_ref());
    Ok(Config::from_parts(fc, &options.overrides)
        .map(|c| c.resource_files)
        .unwrap_or_default())
}

fn function_config_override(options: &Options) -> Result<Option<Node<'_>>, RunError> {
    let Some(text) = &options.function_config else {
        return Ok(None);
    };
    let docs = parse_stream(text, &options.limits)
        .map_err(|e| RunError::FunctionConfig(format!("function config: {e}")))?;
    docs.into_iter()
        .next()
        .map(|d| Some(d.root))
        .ok_or_else(|| RunError::FunctionConfig("function config is empty".into()))
}

/// What a run produced. The output is complete even when there are error results.
#[derive(Debug)]
pub struct Outcome {
    pub output: String,
    pub results: Vec<Diagnostic>,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        crate::krm::finding::failed(&self.results)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Input(#[from] InputError),
    /// The `--fn-config` file or a `--set` setting is unusable.
    #[error("{0}")]
    FunctionConfig(String),
}

/// Runs the function over one input.
pub fn run(input: &[u8], options: &Options) -> Result<Outcome, RunError> {
    let mut output = String::new();
    let results = run_streaming(input, options, &mut |s| output.push_str(s))?;
    Ok(Outcome { output, results })
}

/// Runs the function, handing the output to `sink` piece by piece as it is written: nothing
/// the input already holds is copied, and the whole output never has to sit in memory. An
/// error before any output (unreadable input) means the sink was never called.
pub fn run_streaming(
    input: &[u8],
    options: &Options,
    sink: &mut krm::Sink,
) -> Result<Vec<Diagnostic>, RunError> {
    let mut parsed = krm::parse(input, &options.limits)?;
    let override_doc = function_config_override(options)?;
    // Settings given on the command line are checked on their own: a mistake there is a usage error.
    Config::from_parts(override_doc.as_ref(), &options.overrides)
        .map_err(|e| RunError::FunctionConfig(e.to_string()))?;
    let fc = override_doc.as_ref().or(parsed.function_config.as_ref());
    let config = match Config::from_parts(fc, &options.overrides) {
        Ok(config) => config,
        Err(e) => return Ok(config_failure(&parsed, fc, &e, sink)),
    };
    let fc_ref = fc.map(resource_ref);
    slim(&mut parsed.items);
    parsed.items.extend(extra_sources(&config, options)?);
    Ok(Run::new(&parsed, &config, &options.limits, fc_ref).finish(sink))
}

/// Items copied verbatim that the function never reads keep only what results name them by
/// (kind and metadata): the rest of their tree would only hold memory until the output is written.
fn slim(items: &mut [Item]) {
    for item in items
        .iter_mut()
        .filter(|i| !matches!(i.text, krm::Text::Rewrite(_)))
    {
        let kind = text_at(&item.node, &["kind"]).unwrap_or_default();
        let read = matches!(kind, "Secret" | "Cluster") || kind.ends_with("ControlPlane");
        if !read {
            item.node.retain_keys(&["apiVersion", "kind", "metadata"]);
        }
    }
}

/// Resources the config brings along (`resources`, `resourceFiles`): read and converted, never emitted.
fn extra_sources(config: &Config, options: &Options) -> Result<Vec<Item<'static>>, RunError> {
    let mut texts: Vec<(&str, &[u8])> = config
        .resources
        .iter()
        .map(|r| ("resources", r.as_bytes()))
        .collect();
    for path in &config.resource_files {
        let (_, bytes) = options.files.iter().find(|(p, _)| p == path).ok_or_else(|| {
            RunError::FunctionConfig(format!(
                "resourceFiles: {path} was not provided (the function reads no files; the command-line tool reads them)"
            ))
        })?;
        texts.push((path, bytes));
    }
    let mut items = Vec::new();
    for (origin, bytes) in texts {
        let input = krm::parse(bytes, &options.limits)
            .map_err(|e| RunError::FunctionConfig(format!("{origin}: {e}")))?;
        items.extend(
            input
                .items
                .into_iter()
                .map(|item| Item::generated(item.node.into_owned(), true)),
        );
    }
    Ok(items)
}

/// A bad configuration converts nothing and loses nothing: every item goes out as it came.
fn config_failure(
    input: &Input,
    fc: Option<&Node>,
    error: &ConfigError,
    sink: &mut krm::Sink,
) -> Vec<Diagnostic> {
    let mut diagnostic = Diagnostic::error(format!("functionConfig: {}", error.detail()));
    if let Some(fc) = fc {
        diagnostic = diagnostic.on(Some(resource_ref(fc)), None);
    }
    if let Some(field) = error.field() {
        diagnostic = diagnostic.at(field);
    }
    let results = vec![diagnostic];
    let items: Vec<Out> = input.items.iter().map(Out::Keep).collect();
    krm::render(input, &items, &results, sink);
    results
}

fn text_at<'n>(node: &'n Node, path: &[&str]) -> Option<&'n str> {
    node.path(path).and_then(Node::as_str)
}

fn resource_ref(node: &Node) -> ResourceRef {
    ResourceRef {
        api_version: text_at(node, &["apiVersion"])
            .unwrap_or_default()
            .to_string(),
        kind: text_at(node, &["kind"]).unwrap_or_default().to_string(),
        name: text_at(node, &["metadata", "name"])
            .unwrap_or_default()
            .to_string(),
        namespace: text_at(node, &["metadata", "namespace"]).map(String::from),
    }
}

fn file_ref(node: &Node) -> Option<FileRef> {
    let annotation = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| text_at(node, &["metadata", "annotations", k]))
            .map(String::from)
    };
    Some(FileRef {
        path: annotation([PATH_ANNOTATION, LEGACY_PATH_ANNOTATION])?,
        index: annotation([INDEX_ANNOTATION, LEGACY_INDEX_ANNOTATION]),
    })
}

/// The namespace a resource lives in; none written means `default`, as the API server reads it.
fn namespace_of(node: &Node) -> String {
    text_at(node, &["metadata", "namespace"])
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// Which of a cluster's kubeconfig Secrets this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `<cluster>-kubeconfig`: what CAPI's contract names.
    Plain,
    /// `<cluster>-user-kubeconfig` / `<cluster>-kubeconfig-user`: long-lived provider logins (EKS, GKE, AKS).
    User,
}

/// Splits a Secret name into cluster name and variant, if it is a kubeconfig Secret's name.
fn kubeconfig_secret_name(name: &str) -> Option<(&str, Variant)> {
    let (cluster, variant) = if let Some(c) = name.strip_suffix("-user-kubeconfig") {
        (c, Variant::User)
    } else if let Some(c) = name.strip_suffix("-kubeconfig-user") {
        (c, Variant::User)
    } else {
        (name.strip_suffix("-kubeconfig")?, Variant::Plain)
    };
    (!cluster.is_empty()).then_some((cluster, variant))
}

/// A CAPI kubeconfig Secret found in the input.
struct Candidate {
    index: usize,
    namespace: String,
    name: String,
    cluster: String,
    variant: Variant,
}

/// Outcome of converting one candidate.
struct Converted {
    connection: Option<kubeconfig::Connection>,
    diagnostics: Vec<Diagnostic>,
}

struct Run<'x, 'a> {
    input: &'x Input<'a>,
    config: &'x Config,
    limits: &'x Limits,
    /// The functionConfig, for results about the configuration.
    function_config: Option<ResourceRef>,
    results: Vec<Diagnostic>,
}

/// What the first pass over the items found, hashed for lookups.
#[derive(Default)]
struct Scan {
    candidates: Vec<Candidate>,
    owned: Vec<Owned>,
    /// CAPI Clusters by namespace and name.
    clusters: HashMap<(String, String), usize>,
    /// Control plane objects by namespace, kind and name (for the Kubernetes version).
    control_planes: HashMap<(String, String, String), usize>,
}

impl<'x, 'a> Run<'x, 'a> {
    fn new(
        input: &'x Input<'a>,
        config: &'x Config,
        limits: &'x Limits,
        function_config: Option<ResourceRef>,
    ) -> Self {
        Run {
            input,
            config,
            limits,
            function_config,
            results: Vec::new(),
        }
    }

    fn item(&self, index: usize) -> &'x Item<'a> {
        &self.input.items[index]
    }

    fn report(&mut self, index: usize, severity: Severity, field: Option<&str>, message: String) {
        let node = &self.item(index).node;
        let mut d = Diagnostic::new(severity, message).on(Some(resource_ref(node)), file_ref(node));
        if let Some(field) = field {
            d = d.at(field);
        }
        self.results.push(d);
    }

    fn finish(mut self, sink: &mut krm::Sink) -> Vec<Diagnostic> {
        let scan = self.scan();
        // Sources whose Argo CD Secret must be left alone because this run could not redo it.
        let mut unsettled: HashSet<(String, String)> = HashSet::new();
        let mut generated = self.convert_all(&scan, &mut unsettled);
        self.drop_collisions(&mut generated, &mut unsettled);
        let (replaced, appended) = self.place(generated, &scan.owned, &mut unsettled);
        let pruned = self.prune(&scan.owned, &replaced, &unsettled);
        self.assemble(replaced, appended, &pruned, sink)
    }

    /// One Argo CD Secret per cluster (its kubeconfig Secrets grouped), fleet metadata applied.
    fn convert_all(
        &mut self,
        scan: &Scan,
        unsettled: &mut HashSet<(String, String)>,
    ) -> Vec<Generated> {
        let mut groups: BTreeMap<(String, String), Vec<&Candidate>> = BTreeMap::new();
        for c in &scan.candidates {
            groups
                .entry((c.namespace.clone(), c.cluster.clone()))
                .or_default()
                .push(c);
        }
        let mut used: Vec<Vec<bool>> = self
            .config
            .inventory
            .iter()
            .map(|l| vec![false; l.values.len()])
            .collect();
        let mut generated = Vec::new();
        for ((namespace, name), members) in &groups {
            let capi_cluster = scan
                .clusters
                .get(&(namespace.clone(), name.clone()))
                .copied();
            if let Some(at) = capi_cluster.filter(|&i| cluster::is_ignored(&self.item(i).node)) {
                let message = format!(
                    "ignored: the Cluster has the {} label, so it gets no Argo CD Secret",
                    cluster::IGNORE_LABEL
                );
                self.report(at, Severity::Info, Some("metadata.labels"), message);
                continue;
            }
            match self.convert_cluster(namespace, name, members) {
                Some((mut secret, source)) => {
                    self.apply_fleet(&mut secret, source, capi_cluster, scan, &mut used);
                    generated.push(Generated { source, secret });
                }
                None => unsettled.extend(members.iter().map(|c| source_key(&c.namespace, &c.name))),
            }
        }
        self.report_unused_entries(&used);
        generated
    }

    /// Two clusters must never write one Argo CD Secret: neither does, and both are errors.
    fn drop_collisions(
        &mut self,
        generated: &mut Vec<Generated>,
        unsettled: &mut HashSet<(String, String)>,
    ) {
        let mut by_target: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (i, g) in generated.iter().enumerate() {
            by_target
                .entry((g.secret.namespace.clone(), g.secret.secret_name.clone()))
                .or_default()
                .push(i);
        }
        let mut clashing: HashSet<usize> = HashSet::new();
        for ((ns, name), indices) in by_target.iter().filter(|(_, v)| v.len() > 1) {
            let sources: Vec<String> = indices
                .iter()
                .map(|&i| {
                    format!(
                        "{}/{}",
                        generated[i].secret.source_namespace, generated[i].secret.source_name
                    )
                })
                .collect();
            for &i in indices {
                let g = &generated[i];
                unsettled.insert(source_key(
                    &g.secret.source_namespace,
                    &g.secret.source_name,
                ));
                let message = format!(
                    "clusters {} all map to Argo CD Secret {ns}/{name}; set namespacedNames=true to keep them apart",
                    sources.join(" and ")
                );
                self.report(g.source, Severity::Error, Some("metadata.name"), message);
                clashing.insert(i);
            }
        }
        let mut index = 0;
        generated.retain(|_| {
            let keep = !clashing.contains(&index);
            index += 1;
            keep
        });
    }

    /// Owned Secrets are replaced where they stand (kept byte-for-byte when already right); new
    /// ones are appended; an existing Secret that is not owned is never overwritten.
    fn place(
        &mut self,
        generated: Vec<Generated>,
        owned: &[Owned],
        unsettled: &mut HashSet<(String, String)>,
    ) -> (HashMap<usize, Out<'x, 'a>>, Vec<Out<'x, 'a>>) {
        let mut existing: HashMap<(String, String), usize> = HashMap::new();
        for (index, item) in self.input.items.iter().enumerate() {
            let name = text_at(&item.node, &["metadata", "name"]);
            if let Some(name) = name.filter(|_| is_secret(&item.node)) {
                existing
                    .entry((namespace_of(&item.node), name.to_string()))
                    .or_insert(index);
            }
        }
        let owned_set: HashSet<usize> = owned.iter().map(|o| o.index).collect();
        let mut replaced: HashMap<usize, Out<'x, 'a>> = HashMap::new();
        let mut appended: Vec<Out<'x, 'a>> = Vec::new();
        for Generated { source, mut secret } in generated {
            match existing.get(&(secret.namespace.clone(), secret.secret_name.clone())) {
                Some(&at) if owned_set.contains(&at) => {
                    let old = self.item(at);
                    secret.annotations = reserved_annotations(&old.node);
                    let node = self.secret_node(&secret);
                    let out = if same_content(&old.node, &node) {
                        Out::Keep(old)
                    } else {
                        Out::New(node)
                    };
                    replaced.insert(at, out);
                }
                Some(&at) => {
                    let target = resource_ref(&self.item(at).node);
                    unsettled.insert(source_key(&secret.source_namespace, &secret.source_name));
                    self.report(
                        source,
                        Severity::Error,
                        None,
                        format!("{target} already exists and is not owned by capi2argo (no {OWNED_LABEL}: \"true\" label); it is not overwritten"),
                    );
                }
                None => {
                    if matches!(self.input.form, Form::ResourceList { .. }) {
                        secret.annotations = vec![(
                            PATH_ANNOTATION.to_string(),
                            format!("{}/{}.yaml", secret.namespace, secret.secret_name),
                        )];
                    }
                    appended.push(Out::New(self.secret_node(&secret)));
                }
            }
        }
        (replaced, appended)
    }

    /// Owned Secrets that nothing produced any more go, unless their source failed this time.
    fn prune(
        &mut self,
        owned: &[Owned],
        replaced: &HashMap<usize, Out<'x, 'a>>,
        unsettled: &HashSet<(String, String)>,
    ) -> HashSet<usize> {
        let mut pruned = HashSet::new();
        if !self.config.prune {
            return pruned;
        }
        for o in owned {
            if replaced.contains_key(&o.index) || unsettled.contains(&o.source) {
                continue;
            }
            pruned.insert(o.index);
            self.report(
                o.index,
                Severity::Info,
                None,
                format!("pruned: owned Argo CD cluster Secret whose source Secret {}/{} is not in the input (or no longer converted)", o.source.0, o.source.1),
            );
        }
        pruned
    }

    /// The output in input order, replacements in place, new Secrets last.
    fn assemble(
        self,
        mut replaced: HashMap<usize, Out<'x, 'a>>,
        appended: Vec<Out<'x, 'a>>,
        pruned: &HashSet<usize>,
        sink: &mut krm::Sink,
    ) -> Vec<Diagnostic> {
        let mut out: Vec<Out> = Vec::with_capacity(self.input.items.len() + appended.len());
        for (index, item) in self.input.items.iter().enumerate() {
            if pruned.contains(&index) || item.source_only {
                continue;
            }
            out.push(replaced.remove(&index).unwrap_or(Out::Keep(item)));
        }
        out.extend(appended);
        let mut results = self.results;
        if !self.config.strict {
            for r in &mut results {
                if r.severity == Severity::Error && r.resource.is_some() {
                    r.severity = Severity::Warning;
                }
            }
        }
        krm::render(self.input, &out, &results, sink);
        results
    }

    fn secret_node(&self, secret: &ClusterSecret) -> Node<'static> {
        secret.to_node(self.config.data_field, true)
    }

    /// Finds kubeconfig Secrets and owned Argo CD Secrets; reports items that are not objects at all.
    fn scan(&mut self) -> Scan {
        let mut scan = Scan::default();
        for index in 0..self.input.items.len() {
            let node = &self.item(index).node;
            if node.as_map().is_none() {
                let message = format!(
                    "item {index} is not a Kubernetes object (got {}); passed through unchanged",
                    node.type_name()
                );
                self.results.push(Diagnostic::error(message));
                continue;
            }
            // Only what the function reads must have sound metadata: Clusters, owned Argo CD
            // Secrets and kubeconfig Secrets. Any other Secret is none of its business.
            let relevant = cluster::is_cluster(node)
                || (is_secret(node) && (is_owned(node) || names_a_kubeconfig(node)));
            if relevant && !self.metadata_is_sound(index) {
                continue;
            }
            if cluster::is_cluster(node) {
                if let Some(name) = text_at(node, &["metadata", "name"]) {
                    scan.clusters
                        .entry((namespace_of(node), name.to_string()))
                        .or_insert(index);
                }
                continue;
            }
            if let Some(kind) = text_at(node, &["kind"]).filter(|k| k.ends_with("ControlPlane")) {
                if let Some(name) = text_at(node, &["metadata", "name"]) {
                    scan.control_planes
                        .entry((namespace_of(node), kind.to_string(), name.to_string()))
                        .or_insert(index);
                }
                continue;
            }
            if !is_secret(node) {
                continue;
            }
            let labels = node.path(&["metadata", "labels"]);
            let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Node::as_str);
            if label(OWNED_LABEL) == Some("true") {
                scan.owned.push(Owned {
                    index,
                    source: (
                        label(SOURCE_NAMESPACE_LABEL)
                            .unwrap_or_default()
                            .to_string(),
                        label(SOURCE_NAME_LABEL).unwrap_or_default().to_string(),
                    ),
                });
                continue;
            }
            let Some(name) = text_at(node, &["metadata", "name"]) else {
                continue;
            };
            let Some((cluster, variant)) = kubeconfig_secret_name(name) else {
                continue;
            };
            if label(CLUSTER_NAME_LABEL).is_none() {
                continue;
            }
            match node.get("type").filter(|t| !t.is_null()) {
                None => {}
                Some(t) if matches!(t.as_str(), Some(CAPI_SECRET_TYPE | "Opaque")) => {}
                Some(_) => continue,
            }
            let namespace = namespace_of(node);
            if !self.config.allows(&namespace) {
                continue;
            }
            scan.candidates.push(Candidate {
                index,
                namespace,
                name: name.to_string(),
                cluster: cluster.to_string(),
                variant,
            });
        }
        scan
    }

    /// Secrets and Clusters are read, so their metadata must have the shape the API server enforces.
    fn metadata_is_sound(&mut self, index: usize) -> bool {
        let node = &self.item(index).node;
        let mut problems: Vec<(String, String)> = Vec::new();
        match node.get("metadata") {
            Some(m) if m.as_map().is_some() => {
                match m.get("name") {
                    Some(n) if n.as_str().is_some_and(|s| !s.is_empty()) => {}
                    Some(n) => problems.push((
                        "metadata.name".into(),
                        format!("expected a name, got {}", n.type_name()),
                    )),
                    None => problems.push(("metadata.name".into(), "is missing".into())),
                }
                for field in ["labels", "annotations"] {
                    let Some(map) = m.get(field).filter(|v| !v.is_null()) else {
                        continue;
                    };
                    let Some(entries) = map.as_map() else {
                        problems.push((
                            format!("metadata.{field}"),
                            format!("expected a mapping, got {}", map.type_name()),
                        ));
                        continue;
                    };
                    for (k, v) in entries {
                        if v.as_str().is_none() {
                            let key = k.scalar().map(|s| s.text.to_string()).unwrap_or_default();
                            problems.push((
                                format!("metadata.{field}.{key}"),
                                format!("expected a string, got {}", v.type_name()),
                            ));
                        }
                    }
                }
            }
            Some(m) => problems.push((
                "metadata".into(),
                format!("expected a mapping, got {}", m.type_name()),
            )),
            None => problems.push(("metadata".into(), "is missing".into())),
        }
        let sound = problems.is_empty();
        for (field, message) in problems {
            self.report(
                index,
                Severity::Error,
                Some(&field),
                format!("{message}; the resource is passed through unchanged"),
            );
        }
        sound
    }

    /// Sets the fleet metadata: config defaults, then inventory layers in order, then the Cluster's own.
    fn apply_fleet(
        &mut self,
        secret: &mut ClusterSecret,
        source: usize,
        capi_cluster: Option<usize>,
        scan: &Scan,
        used: &mut [Vec<bool>],
    ) {
        let source_node = &self.item(source).node;
        let cluster_node = capi_cluster.map(|i| &self.item(i).node);
        let label = |node: &'x Node<'a>, key: &str| {
            cluster::string_entries(node, "labels")
                .into_iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v)
        };
        let mut fields = self.config.defaults.clone();
        for (li, layer) in self.config.inventory.iter().enumerate() {
            let value = match &layer.selector {
                Selector::Label(key) => cluster_node
                    .and_then(|c| label(c, key))
                    .or_else(|| label(source_node, key)),
                Selector::Infrastructure => cluster_node.and_then(cluster::infrastructure_kind),
            };
            if let Some((ei, entry)) = value.and_then(|v| layer.entry(v)) {
                fields.overlay(entry);
                used[li][ei] = true;
            }
        }
        if let (Some(at), Some(node)) = (capi_cluster, cluster_node) {
            let control_plane_version = node
                .path(&["spec", "controlPlaneRef"])
                .and_then(|r| {
                    let kind = text_at(r, &["kind"])?;
                    let name = text_at(r, &["name"])?;
                    scan.control_planes.get(&(
                        namespace_of(node),
                        kind.to_string(),
                        name.to_string(),
                    ))
                })
                .and_then(|&i| text_at(&self.item(i).node, &["spec", "version"]));
            fields
                .labels
                .extend(cluster::facts(node, control_plane_version));
            let (own, warnings) = cluster::own_metadata(
                node,
                self.config.copy_cluster_labels,
                self.config.copy_cluster_annotations,
            );
            fields.overlay(&own);
            for (field, message) in warnings {
                self.report(at, Severity::Warning, Some(&field), message);
            }
        }
        for key in PROTECTED_LABELS {
            if fields.labels.remove(*key).is_some() {
                let message = format!("label {key} is set by capi2argo and is not overridden");
                self.report(source, Severity::Warning, None, message);
            }
        }
        secret.shard = self
            .config
            .shards
            .map(|n| argocd::shard(&secret.cluster_name, n));
        secret.fields = fields;
    }

    /// An inventory entry no cluster used is most likely a typo: say so.
    fn report_unused_entries(&mut self, used: &[Vec<bool>]) {
        for (li, layer) in self.config.inventory.iter().enumerate() {
            for (ei, (value, _)) in layer.values.iter().enumerate() {
                if used[li][ei] {
                    continue;
                }
                let mut d = Diagnostic::info(format!(
                    "inventory layer {li} ({}): no cluster has the value {value:?}",
                    layer.describe()
                ))
                .on(self.function_config.clone(), None)
                .at(format!("spec.inventory[{li}].values.{value}"));
                if self.function_config.is_none() {
                    d.resource = None;
                }
                self.results.push(d);
            }
        }
    }

    /// Converts a cluster's kubeconfig Secrets and picks the one Argo CD should use.
    fn convert_cluster(
        &mut self,
        namespace: &str,
        cluster: &str,
        members: &[&Candidate],
    ) -> Option<(ClusterSecret, usize)> {
        let converted: Vec<Converted> = members.iter().map(|c| self.convert(c)).collect();
        let ok = |i: &usize| converted[*i].connection.is_some();
        let indices: Vec<usize> = (0..members.len()).collect();
        let by_variant = |v: Variant| {
            indices
                .iter()
                .copied()
                .filter(|&i| members[i].variant == v && ok(&i))
                .collect::<Vec<_>>()
        };
        let (plain, user) = (by_variant(Variant::Plain), by_variant(Variant::User));
        let user_via_argocd = user.iter().copied().find(|&i| {
            converted[i]
                .connection
                .as_ref()
                .is_some_and(|c| c.config.uses_argocd_k8s_auth())
        });
        let chosen = match self.config.mode {
            Mode::Pull => plain.first().or(user.first()).copied(),
            Mode::Push => user_via_argocd
                .or(plain.first().copied())
                .or(user.first().copied()),
        };
        for (i, conv) in converted.iter().enumerate() {
            for d in &conv.diagnostics {
                let mut d = d.clone();
                if chosen.is_some_and(|c| c != i) {
                    if d.severity != Severity::Error {
                        continue;
                    }
                    // A broken alternative does not stop the cluster; it is still worth fixing.
                    d.severity = Severity::Warning;
                    d.message = format!(
                        "{} (not used: {} converted instead)",
                        d.message,
                        members[chosen.unwrap_or(i)].name
                    );
                }
                self.results.push(d);
            }
        }
        let chosen = chosen?;
        let source = members[chosen];
        let connection = converted.into_iter().nth(chosen)?.connection?;
        let mut config = connection.config;
        if self.config.mode == Mode::Pull {
            config = without_credentials(config);
        }
        let (secret_base, cluster_name) = if self.config.namespaced_names {
            (
                format!("cluster-{namespace}-{cluster}"),
                format!("{namespace}-{cluster}"),
            )
        } else {
            (format!("cluster-{cluster}"), cluster.to_string())
        };
        Some((
            ClusterSecret {
                secret_name: names::dns1123_subdomain(&secret_base),
                namespace: self.config.argo_namespace.clone(),
                cluster_name,
                server: connection.server,
                config,
                source_name: source.name.clone(),
                source_namespace: source.namespace.clone(),
                annotations: Vec::new(),
                fields: Default::default(),
                shard: None,
            },
            source.index,
        ))
    }

    /// Decodes and reads one kubeconfig Secret.
    fn convert(&self, c: &Candidate) -> Converted {
        let node = &self.item(c.index).node;
        let at = |severity, field: &str, message: String| {
            Diagnostic::new(severity, message)
                .on(Some(resource_ref(node)), file_ref(node))
                .at(field)
        };
        let failed = |d: Diagnostic| Converted {
            connection: None,
            diagnostics: vec![d],
        };
        let (field, text) =
            match secret_value(node, "value") {
                Ok(Some(v)) => v,
                Ok(None) => return failed(at(
                    Severity::Error,
                    "data.value",
                    "is missing: a CAPI kubeconfig Secret holds the kubeconfig under data.value"
                        .into(),
                )),
                Err((field, message)) => return failed(at(Severity::Error, &field, message)),
            };
        let credentials = match self.config.mode {
            Mode::Push => Credentials::Read,
            Mode::Pull => Credentials::Skip,
        };
        let reading = kubeconfig::read(
            &text,
            self.config.context.as_deref(),
            credentials,
            self.limits,
        );
        let mut diagnostics: Vec<Diagnostic> = reading
            .findings
            .iter()
            .map(|f| {
                let message = if f.path.is_empty() {
                    format!("kubeconfig {}", f.message)
                } else {
                    format!("kubeconfig {}: {}", f.path, f.message)
                };
                at(f.severity, &field, message)
            })
            .collect();
        let mut connection = reading.connection;
        // Rancher keeps the token beside the kubeconfig rather than in it.
        if let Some(conn) = connection
            .as_mut()
            .filter(|c| credentials == Credentials::Read && !c.config.has_credentials())
        {
            match secret_value(node, "token") {
                Ok(Some((_, token))) if !token.trim().is_empty() => {
                    conn.config.bearer_token =
                        Some(crate::convert::argocd::Sensitive(token.trim().to_string()));
                }
                _ => diagnostics.push(at(
                    Severity::Warning,
                    &field,
                    "kubeconfig has no credentials: Argo CD will connect anonymously".into(),
                )),
            }
        }
        Converted {
            connection,
            diagnostics,
        }
    }
}

/// A converted cluster: the kubeconfig Secret it came from (for results) and its Argo CD Secret.
struct Generated {
    source: usize,
    secret: ClusterSecret,
}

/// An owned Argo CD Secret in the input, and the source its labels name.
struct Owned {
    index: usize,
    source: (String, String),
}

fn source_key(namespace: &str, name: &str) -> (String, String) {
    (names::label_value(namespace), names::label_value(name))
}

/// Labelled as an Argo CD Secret this function owns (whatever else its metadata holds).
fn is_owned(node: &Node) -> bool {
    node.path(&["metadata", "labels", OWNED_LABEL])
        .and_then(Node::scalar)
        .is_some_and(|s| s.text == "true")
}

/// Named like a kubeconfig Secret (`<cluster>-kubeconfig`, `-user-kubeconfig`, `-kubeconfig-user`).
fn names_a_kubeconfig(node: &Node) -> bool {
    node.path(&["metadata", "name"])
        .and_then(Node::scalar)
        .is_some_and(|s| kubeconfig_secret_name(&s.text).is_some())
}

fn is_secret(node: &Node) -> bool {
    text_at(node, &["kind"]) == Some("Secret") && text_at(node, &["apiVersion"]) == Some("v1")
}

/// A Secret value by key: `data` (base64) or `stringData`. `Err` names the field and what is wrong.
fn secret_value(node: &Node, key: &str) -> Result<Option<(String, String)>, (String, String)> {
    for section in ["stringData", "data"] {
        let field = format!("{section}.{key}");
        let Some(container) = node.get(section).filter(|n| !n.is_null()) else {
            continue;
        };
        if container.as_map().is_none() {
            return Err((
                section.to_string(),
                format!("expected a mapping, got {}", container.type_name()),
            ));
        }
        let Some(value) = container.get(key).filter(|n| !n.is_null()) else {
            continue;
        };
        let Some(text) = value.as_str() else {
            return Err((
                field,
                format!("expected a string, got {}", value.type_name()),
            ));
        };
        if section == "stringData" {
            return Ok(Some((field, text.to_string())));
        }
        let (bytes, _) = crate::convert::b64::decode(text)
            .map_err(|_| (field.clone(), "is not valid base64".to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| (field.clone(), "does not decode to UTF-8 text".to_string()))?;
        return Ok(Some((field, text)));
    }
    Ok(None)
}

/// Annotations kpt and kustomize own, carried over so the Secret stays in its file.
fn reserved_annotations(node: &Node) -> Vec<(String, String)> {
    let Some(Value::Map(entries)) = node.path(&["metadata", "annotations"]).map(|a| &a.value)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?, v.as_str()?)))
        .filter(|(k, _)| {
            k.starts_with("internal.config.kubernetes.io/")
                || k.starts_with("config.kubernetes.io/")
                || k.starts_with("config.k8s.io/")
        })
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Pull mode keeps what identifies and reaches the cluster, never what logs in to it.
fn without_credentials(
    config: crate::convert::argocd::ClusterConfig,
) -> crate::convert::argocd::ClusterConfig {
    let mut tls = config.tls_client_config;
    tls.cert_data = None;
    tls.key_data = None;
    crate::convert::argocd::ClusterConfig {
        tls_client_config: tls,
        proxy_url: config.proxy_url,
        disable_compression: config.disable_compression,
        ..Default::default()
    }
}
