//! Reconciliation: find the kubeconfig Secrets, convert each cluster, drop collisions, place
//! the Argo CD Secrets (replacing owned ones where they stand), prune what no source produces
//! any more, and put the output together in input order.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::config::{Config, Mode, NameFrom};
use crate::convert::argocd::{
    self, ClusterSecret, OWNED_LABEL, PROTECTED_LABELS, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
};
use crate::convert::argocd::{Login, login_of_json};
use crate::convert::kubeconfig::{self, Credentials, without_userinfo};
use crate::convert::meta as names;
use crate::fleet::cluster;
use crate::fleet::inventory::Selector;
use crate::fleet::source::{ClusterName, SERVER_ANNOTATION, SOURCE_LABEL, Variant};
use crate::krm::finding::{Finding, ResourceRef, Severity};
use crate::krm::object::{Object, PATH_ANNOTATION};
use crate::krm::{self, Form, Input, Item, Out, TextStore};
use crate::limits::Limits;
use crate::validate;
use crate::yaml::{Node, same_content};

/// What to do with a kubeconfig given as it is instead of in a Secret.
const BARE_KUBECONFIG_HINT: &str = "this is a kubeconfig, not a Secret holding one; wrap it: kubectl create secret generic <cluster>-kubeconfig --from-file=value=<file> --dry-run=client -o yaml, then label it cluster.x-k8s.io/cluster-name=<cluster>";

/// Reconciles the input's items under `config` and writes the output to `sink`; the results.
pub fn reconcile(
    input: &Input,
    config: &Config,
    limits: &Limits,
    function_config: Option<ResourceRef>,
    sink: &mut krm::Sink,
) -> Vec<Finding> {
    Run::new(input, config, limits, function_config).finish(sink)
}

/// A kubeconfig Secret found in the input.
struct Candidate {
    index: usize,
    /// Which of the config's sources it came from.
    source: usize,
    namespace: String,
    name: String,
    cluster: String,
    variant: Variant,
}

/// Outcome of converting one candidate.
struct Converted {
    connection: Option<kubeconfig::Connection>,
    /// The Secret field the kubeconfig was read from (`data.value`, `stringData.config`…).
    field: String,
    diagnostics: Vec<Finding>,
    /// Its login needs a person: another kubeconfig of the cluster is the right choice, not a fallback.
    interactive: bool,
}

struct Run<'x, 'a> {
    input: &'x Input<'a>,
    config: &'x Config,
    limits: &'x Limits,
    /// The functionConfig, for results about the configuration.
    function_config: Option<ResourceRef>,
    results: Vec<Finding>,
    /// The text of the new Secrets that wait for the output.
    store: TextStore,
    /// The output, when it is written as the run goes (the input's items before the
    /// conversions, then new Secrets as they come).
    early: Option<krm::Writer<'x, 'a>>,
    /// Whether a new Secret had to wait (and so every one after it does).
    waiting: bool,
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
    /// Kubeconfig Secrets the scan could not take (unsound, given twice): their Argo CD
    /// Secrets stay as they are, never pruned for it.
    held: Vec<(String, String)>,
    /// Second copies of an object (same identity, same content) and the first copy they follow:
    /// replaced or pruned with it, kept with it, so a second run finds one copy and changes nothing.
    copies: Vec<(usize, usize)>,
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
            store: TextStore::default(),
            early: None,
            waiting: false,
        }
    }

    fn item(&self, index: usize) -> &'x Item<'a> {
        &self.input.items[index]
    }

    fn report(&mut self, index: usize, severity: Severity, field: Option<&str>, message: String) {
        let node = &self.item(index).node;
        let mut d = Finding::new(severity, message).on(
            Some(Object::new(node).resource_ref()),
            Object::new(node).file_ref(),
        );
        if let Some(field) = field {
            d = d.at(field);
        }
        self.results.push(d);
    }

    fn finish(mut self, sink: &mut krm::Sink) -> Vec<Finding> {
        let scan = self.scan();
        // Sources whose Argo CD Secret must be left alone because this run could not redo it.
        let mut unsettled: HashSet<(String, String)> = scan.held.iter().cloned().collect();
        let existing = self.existing_secrets();
        // With no owned Argo CD Secret in the input, conversion changes none of its items: they
        // go out first, and each new Secret right after its conversion, never held.
        if scan.owned.is_empty() {
            self.early = krm::Writer::new(self.input);
        }
        if let Some(writer) = &mut self.early {
            for item in self.input.items.iter().filter(|i| !i.source_only) {
                writer.item(&Out::Keep(item), &self.store, sink);
            }
        }
        let mut generated = self.convert_all(&scan, &existing, &mut unsettled, sink);
        self.drop_collisions(&mut generated, &mut unsettled);
        let (replaced, appended) = self.place(generated, &scan.owned, &mut unsettled);
        let mut pruned = self.prune(&scan.owned, &replaced, &unsettled);
        // A copy goes wherever its first goes: out when the first is pruned or rewritten.
        for &(copy, first) in &scan.copies {
            let rewritten = replaced.get(&first).is_some_and(Out::is_new);
            if pruned.contains(&first) || rewritten {
                pruned.insert(copy);
                let what = Object::new(&self.item(copy).node).resource_ref();
                self.report(
                    copy,
                    Severity::Info,
                    None,
                    format!("{what} is given twice (items {first} and {copy}): the second copy goes with the first"),
                );
            }
        }
        self.assemble(replaced, appended, &pruned, sink)
    }

    /// One Argo CD Secret per cluster (its kubeconfig Secrets grouped), fleet metadata applied.
    fn convert_all(
        &mut self,
        scan: &Scan,
        existing: &HashMap<(String, String), usize>,
        unsettled: &mut HashSet<(String, String)>,
        sink: &mut krm::Sink,
    ) -> Vec<Generated<'x, 'a>> {
        let mut groups: BTreeMap<(usize, String, String), Vec<&Candidate>> = BTreeMap::new();
        for c in &scan.candidates {
            groups
                .entry((c.source, c.namespace.clone(), c.cluster.clone()))
                .or_default()
                .push(c);
        }
        let mut used: Vec<Vec<bool>> = self
            .config
            .inventory
            .iter()
            .map(|l| vec![false; l.values.len()])
            .collect();
        // A new Secret goes out at once only when no other cluster can write one of its name
        // (both would be errors), and only while none before it had to wait: the output keeps
        // the order of conversion.
        let names: Vec<String> = groups
            .keys()
            .map(|(_, namespace, name)| self.secret_name(namespace, name))
            .collect();
        let mut targets: HashMap<&str, usize> = HashMap::new();
        for name in &names {
            *targets.entry(name).or_default() += 1;
        }
        let mut generated = Vec::new();
        for (((source, namespace, name), members), target) in groups.iter().zip(&names) {
            let alone = targets[target.as_str()] == 1;
            // Only Cluster API's kubeconfig Secrets have a `cluster.x-k8s.io` Cluster beside them.
            let capi_cluster = scan
                .clusters
                .get(&(namespace.clone(), name.clone()))
                .copied()
                .filter(|_| self.config.sources[*source].capi);
            if let Some(at) = capi_cluster.filter(|&i| cluster::is_ignored(&self.item(i).node)) {
                let message = format!(
                    "ignored: the Cluster has the {} label, so it gets no Argo CD Secret",
                    cluster::IGNORE_LABEL
                );
                self.report(at, Severity::Info, Some("metadata.labels"), message);
                continue;
            }
            if let Some(at) = capi_cluster {
                if self.lifecycle_skips(at) {
                    unsettled.extend(members.iter().map(|c| source_key(&c.namespace, &c.name)));
                    continue;
                }
            }
            match self.convert_cluster(namespace, name, members) {
                Some((mut secret, source_index, degraded)) => {
                    self.apply_fleet(&mut secret, source_index, capi_cluster, scan, &mut used);
                    let kind = &self.config.sources[*source];
                    if !kind.capi {
                        secret
                            .fields
                            .labels
                            .insert(SOURCE_LABEL.into(), kind.name.clone());
                    }
                    let now = if alone { Some(&mut *sink) } else { None };
                    generated.push(self.generated(source_index, secret, degraded, existing, now));
                }
                None => unsettled.extend(members.iter().map(|c| source_key(&c.namespace, &c.name))),
            }
        }
        self.report_unused_entries(&used);
        generated
    }

    /// Reports where the Cluster stands in its life; whether it gets no Argo CD Secret this time.
    fn lifecycle_skips(&mut self, at: usize) -> bool {
        let life = cluster::lifecycle(&self.item(at).node);
        let skip = self.config.skip_not_ready && life.not_ready();
        let outcome = if skip {
            "skipped (skipNotReady): no Argo CD Secret this time, an existing one is kept"
        } else {
            "Argo CD may fail to reach it (skipNotReady=true waits)"
        };
        if life.deleting {
            let message = format!("the Cluster is being deleted: {outcome}");
            self.report(
                at,
                Severity::Warning,
                Some("metadata.deletionTimestamp"),
                message,
            );
        }
        if life.initialized == Some(false) {
            let message = format!("the Cluster's control plane is not initialised yet: {outcome}");
            self.report(at, Severity::Warning, Some("status"), message);
        }
        skip
    }

    /// Two clusters must never write one Argo CD Secret: neither does, and both are errors.
    fn drop_collisions(
        &mut self,
        generated: &mut Vec<Generated<'x, 'a>>,
        unsettled: &mut HashSet<(String, String)>,
    ) {
        // Ordered: the results of two clashes come out the same way on every run.
        let mut by_target: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        for (i, g) in generated.iter().enumerate() {
            by_target.entry(g.target.clone()).or_default().push(i);
        }
        let mut clashing: HashSet<usize> = HashSet::new();
        for ((ns, name), indices) in by_target.iter().filter(|(_, v)| v.len() > 1) {
            let sources: Vec<String> = indices
                .iter()
                .map(|&i| format!("{}/{}", generated[i].from.0, generated[i].from.1))
                .collect();
            for &i in indices {
                let g = &generated[i];
                unsettled.insert(source_key(&g.from.0, &g.from.1));
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

    /// The name of a cluster's Argo CD Secret (in the config's Argo CD namespace).
    fn secret_name(&self, namespace: &str, cluster: &str) -> String {
        let base = if self.config.namespaced_names {
            format!("cluster-{namespace}-{cluster}")
        } else {
            format!("cluster-{cluster}")
        };
        names::dns1123_subdomain(&base)
    }

    /// Every Secret of the input by namespace and name (the first of two that share them).
    fn existing_secrets(&self) -> HashMap<(String, String), usize> {
        let mut existing = HashMap::new();
        for (index, item) in self.input.items.iter().enumerate() {
            let object = Object::new(&item.node);
            if let Some(name) = object.name().filter(|_| object.is_secret()) {
                existing
                    .entry((object.namespace().to_string(), name.to_string()))
                    .or_insert(index);
            }
        }
        existing
    }

    /// A cluster's converted Secret, written at once when no Secret of its name is in the input.
    fn generated(
        &mut self,
        source: usize,
        mut secret: ClusterSecret,
        degraded: Option<String>,
        existing: &HashMap<(String, String), usize>,
        now: Option<&mut krm::Sink>,
    ) -> Generated<'x, 'a> {
        let target = (secret.namespace.clone(), secret.secret_name.clone());
        let from = (secret.source_namespace.clone(), secret.source_name.clone());
        let secret = match existing.get(&target) {
            Some(&at) => Pending::Existing {
                at,
                secret: Box::new(secret),
            },
            None => {
                if matches!(self.input.form, Form::ResourceList { .. }) {
                    secret.annotations = vec![(
                        PATH_ANNOTATION.to_string(),
                        format!("{}/{}.yaml", secret.namespace, secret.secret_name),
                    )];
                }
                let node = self.secret_node(&secret);
                let errors = self.verdict(&node);
                let out = match (&mut self.early, now) {
                    _ if !errors.is_empty() => None,
                    (Some(writer), Some(sink)) if !self.waiting => {
                        writer.item(&Out::New(node), &self.store, sink);
                        None
                    }
                    _ => {
                        // It waits for the output, and so does every new Secret after it.
                        self.waiting = true;
                        Some(Out::new(self.input, node, &mut self.store))
                    }
                };
                Pending::New { out, errors }
            }
        };
        Generated {
            source,
            target,
            from,
            degraded,
            secret,
        }
    }

    /// Owned Secrets are replaced where they stand (kept byte-for-byte when already right); new
    /// ones are appended; an existing Secret that is not owned is never overwritten.
    fn place(
        &mut self,
        generated: Vec<Generated<'x, 'a>>,
        owned: &[Owned],
        unsettled: &mut HashSet<(String, String)>,
    ) -> (HashMap<usize, Out<'x, 'a>>, Vec<Out<'x, 'a>>) {
        let owned_set: HashSet<usize> = owned.iter().map(|o| o.index).collect();
        let mut replaced: HashMap<usize, Out<'x, 'a>> = HashMap::new();
        let mut appended: Vec<Out<'x, 'a>> = Vec::new();
        for Generated {
            source,
            from,
            degraded,
            secret,
            ..
        } in generated
        {
            let (at, mut secret) = match secret {
                Pending::New { out, errors } => {
                    self.report_errors(source, errors);
                    appended.extend(out);
                    continue;
                }
                Pending::Existing { at, secret } => (at, secret),
            };
            if !owned_set.contains(&at) {
                let target = Object::new(&self.item(at).node).resource_ref();
                unsettled.insert(source_key(&from.0, &from.1));
                self.report(
                    source,
                    Severity::Error,
                    None,
                    format!("{target} already exists and is not owned by capi2argo (no {OWNED_LABEL}: \"true\" label); it is not overwritten"),
                );
                continue;
            }
            let old = self.item(at);
            if let Some(reason) = self.weakens(&old.node, &secret, degraded.as_deref()) {
                // Never weaken a working Secret: the existing one stays as it is.
                unsettled.insert(source_key(&from.0, &from.1));
                let target = Object::new(&old.node).resource_ref();
                self.report(
                    source,
                    Severity::Error,
                    None,
                    format!("{target} is kept as it is: {reason}"),
                );
                replaced.insert(at, Out::Keep(old));
                continue;
            }
            secret.annotations = Object::new(&old.node).tool_annotations();
            let node = self.secret_node(&secret);
            let errors = self.verdict(&node);
            if !errors.is_empty() {
                self.report_errors(source, errors);
                unsettled.insert(source_key(&from.0, &from.1));
                replaced.insert(at, Out::Keep(old));
                continue;
            }
            let out = if same_content(&old.node, &node) {
                Out::Keep(old)
            } else {
                Out::new(self.input, node, &mut self.store)
            };
            replaced.insert(at, out);
        }
        (replaced, appended)
    }

    fn report_errors(&mut self, index: usize, messages: Vec<String>) {
        for message in messages {
            self.report(index, Severity::Error, None, message);
        }
    }

    /// The validator's verdict on a Secret about to be written (Argo CD's rules and the policy),
    /// as results for its source: an error keeps it from being written. (Its warnings repeat
    /// what the conversion already said.)
    fn verdict(&self, node: &Node) -> Vec<String> {
        let target = Object::new(node).resource_ref();
        validate::check(node, &self.config.policy)
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|finding| {
                let field = finding.field.as_deref().unwrap_or_default();
                format!("{target} not written: {field}: {}", finding.message)
            })
            .collect()
    }

    /// Why `new` may not replace the owned Secret `old`: it is a fallback, or it logs in more
    /// weakly than `old` does (read from `old`'s `config`). Pull mode carries no logins.
    fn weakens(&self, old: &Node, new: &ClusterSecret, degraded: Option<&str>) -> Option<String> {
        if self.config.mode == Mode::Pull {
            return None;
        }
        let object = Object::new(old);
        let config = object.secret_value("config").ok().flatten().map(|(_, c)| c);
        let before = config.as_deref().and_then(login_of_json);
        let after = new.config.login();
        match (degraded, before) {
            (Some(reason), Some(before)) if after <= before => Some(format!(
                "{reason} ({}); the Secret already has {}",
                after.describe(),
                before.describe()
            )),
            (_, Some(before)) if after < before => Some(format!(
                "the new conversion has {}, weaker than the {} the Secret has",
                after.describe(),
                before.describe()
            )),
            _ => None,
        }
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
            // A source this run does not read is another pipeline's business.
            if !self.config.sources.iter().any(|s| s.name == o.kind) {
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
    ) -> Vec<Finding> {
        let mut results = self.results;
        if !self.config.strict {
            for r in &mut results {
                if r.severity == Severity::Error && r.resource.is_some() {
                    r.severity = Severity::Warning;
                }
            }
        }
        if let Some(mut writer) = self.early {
            // The input's items are out already (with no owned Secret, none is replaced or
            // pruned), and so are the new Secrets that did not wait.
            for out in &appended {
                writer.item(out, &self.store, sink);
            }
            writer.finish(&results, sink);
            return results;
        }
        let mut out: Vec<Out> = Vec::with_capacity(self.input.items.len() + appended.len());
        for (index, item) in self.input.items.iter().enumerate() {
            if pruned.contains(&index) || item.source_only {
                continue;
            }
            out.push(replaced.remove(&index).unwrap_or(Out::Keep(item)));
        }
        out.extend(appended);
        krm::render(self.input, &out, &self.store, &results, sink);
        results
    }

    fn secret_node(&self, secret: &ClusterSecret) -> Node<'static> {
        secret.to_node(self.config.data_field, true)
    }

    /// Finds kubeconfig Secrets and owned Argo CD Secrets; reports items that are not objects at all.
    fn scan(&mut self) -> Scan {
        let mut scan = Scan::default();
        // The first item of each identity the function reads, and the identities given twice
        // with different content (which it takes neither of).
        let mut first: HashMap<(String, String, String), usize> = HashMap::new();
        let mut twice: HashSet<(String, String, String)> = HashSet::new();
        for index in 0..self.input.items.len() {
            let node = &self.item(index).node;
            let object = Object::new(node);
            if node.as_map().is_none() {
                let message = format!(
                    "item {index} is not a Kubernetes object (got {}); passed through unchanged",
                    node.type_name()
                );
                self.results.push(Finding::error(message));
                continue;
            }
            // A list that could not be read as one (its items are not a list) is not taken apart.
            if object
                .kind()
                .is_some_and(|k| k.ends_with("List") && k != "ResourceList")
            {
                self.results.push(object.finding(
                    Finding::warning(
                        "looks like a list, but its items are not a list: passed through unchanged, nothing in it converted",
                    )
                    .at("items"),
                ));
                continue;
            }
            // A kubeconfig is `apiVersion: v1`, `kind: Config` (what kubectl writes).
            if object.is(Some("v1"), "Config") {
                self.results
                    .push(object.finding(Finding::warning(BARE_KUBECONFIG_HINT)));
                continue;
            }
            // Only what the function reads must have sound metadata: Clusters, owned Argo CD
            // Secrets and kubeconfig Secrets. Any other Secret is none of its business.
            let relevant = cluster::is_cluster(node)
                || (object.is_secret() && (is_owned(node) || self.names_a_kubeconfig(node)));
            if relevant && !self.metadata_is_sound(index) {
                if let Some(name) = object.name().filter(|_| object.is_secret()) {
                    scan.held.push(source_key(object.namespace(), name));
                }
                continue;
            }
            let (Some(kind), Some(name)) = (object.kind(), object.name()) else {
                continue;
            };
            let namespace = object.namespace().to_string();
            if relevant {
                let identity = (kind.to_string(), namespace.clone(), name.to_string());
                match first.get(&identity) {
                    None => {
                        first.insert(identity, index);
                    }
                    // The same object twice is one object.
                    Some(&at) if same_content(&self.item(at).node, node) => {
                        scan.copies.push((index, at));
                        continue;
                    }
                    Some(&at) => {
                        let message = format!(
                            "{} is given twice with different content (items {at} and {index}); neither is used",
                            object.resource_ref()
                        );
                        self.report(index, Severity::Error, None, message);
                        twice.insert(identity);
                        continue;
                    }
                }
            }
            if cluster::is_cluster(node) {
                scan.clusters
                    .entry((namespace, name.to_string()))
                    .or_insert(index);
                continue;
            }
            if kind.ends_with("ControlPlane") {
                scan.control_planes
                    .entry((namespace, kind.to_string(), name.to_string()))
                    .or_insert(index);
                continue;
            }
            if !object.is_secret() {
                continue;
            }
            if object.label(OWNED_LABEL) == Some("true") {
                let label = |key| object.label(key).unwrap_or_default().to_string();
                scan.owned.push(Owned {
                    index,
                    source: (label(SOURCE_NAMESPACE_LABEL), label(SOURCE_NAME_LABEL)),
                    kind: object.label(SOURCE_LABEL).unwrap_or("capi").to_string(),
                });
                continue;
            }
            match self.candidate(object) {
                Ok(Some((source, cluster, variant))) => scan.candidates.push(Candidate {
                    index,
                    source,
                    namespace,
                    name: name.to_string(),
                    cluster,
                    variant,
                }),
                Ok(None) => {}
                // Looks like a kubeconfig Secret but is not converted: say why, so a missing
                // label or an unknown suffix does not pass in silence.
                Err(finding) => self.results.push(object.finding(finding)),
            }
        }
        if !twice.is_empty() {
            let taken = |index: usize| {
                let object = Object::new(&self.item(index).node);
                let identity = (
                    object.kind().unwrap_or_default().to_string(),
                    object.namespace().to_string(),
                    object.name().unwrap_or_default().to_string(),
                );
                !twice.contains(&identity)
            };
            for c in scan.candidates.iter().filter(|c| !taken(c.index)) {
                scan.held.push(source_key(&c.namespace, &c.name));
            }
            scan.candidates.retain(|c| taken(c.index));
            scan.owned.retain(|o| taken(o.index));
            scan.clusters.retain(|_, i| taken(*i));
        }
        scan
    }

    /// Whether a Secret is a kubeconfig Secret of one of the sources (the first that takes it):
    /// the source, the cluster and the variant; `Err` says why one that looks like it is not
    /// converted.
    fn candidate(&self, object: Object) -> Result<Option<(usize, String, Variant)>, Finding> {
        let mut near_miss = None;
        for (i, source) in self.config.sources.iter().enumerate() {
            match source.take(object) {
                Ok(Some((cluster, variant))) => {
                    if !self.config.allows(object.namespace()) {
                        return Err(Finding::info(format!(
                            "not converted: namespace {} is not in allowedNamespaces",
                            object.namespace()
                        ))
                        .at("metadata.namespace"));
                    }
                    return Ok(Some((i, cluster, variant)));
                }
                Ok(None) => {}
                Err(finding) => {
                    near_miss.get_or_insert(finding);
                }
            }
        }
        near_miss.map_or(Ok(None), Err)
    }

    /// Named like a kubeconfig Secret of one of the sources.
    fn names_a_kubeconfig(&self, node: &Node) -> bool {
        node.path(&["metadata", "name"])
            .and_then(Node::scalar)
            .is_some_and(|s| self.config.sources.iter().any(|src| src.names_it(&s.text)))
    }

    /// Secrets and Clusters are read, so their metadata must have the shape the API server enforces.
    fn metadata_is_sound(&mut self, index: usize) -> bool {
        let object = Object::new(&self.item(index).node);
        let problems = object.metadata_problems();
        let sound = problems.is_empty();
        for problem in problems {
            let message = format!(
                "{}; the resource is passed through unchanged",
                problem.message
            );
            self.results
                .push(object.finding(Finding { message, ..problem }));
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
        if let Some(node) = cluster_node {
            let control_plane_version = node
                .path(&["spec", "controlPlaneRef"])
                .and_then(|r| {
                    let kind = r.get("kind").and_then(Node::as_str)?;
                    let name = r.get("name").and_then(Node::as_str)?;
                    scan.control_planes.get(&(
                        Object::new(node).namespace().to_string(),
                        kind.to_string(),
                        name.to_string(),
                    ))
                })
                .and_then(|&i| self.item(i).node.path(&["spec", "version"]))
                .and_then(Node::as_str);
            fields
                .labels
                .extend(cluster::facts(node, control_plane_version));
            let (own, findings) = cluster::own_metadata(
                node,
                self.config.copy_cluster_labels,
                self.config.copy_cluster_annotations,
            );
            fields.overlay(&own);
            for finding in findings {
                self.results.push(Object::new(node).finding(finding));
            }
            if cluster::lifecycle(node).paused {
                fields
                    .annotations
                    .insert(argocd::SKIP_RECONCILE_ANNOTATION.into(), "true".into());
                self.results.push(Object::new(node).finding(
                    Finding::info(format!(
                        "the Cluster is paused: its Argo CD Secret gets {}: \"true\" (Argo CD 3.4 and later stop reconciling it)",
                        argocd::SKIP_RECONCILE_ANNOTATION
                    ))
                    .at(if node.path(&["spec", "paused"]).and_then(Node::as_bool) == Some(true) {
                        "spec.paused"
                    } else {
                        "metadata.annotations"
                    }),
                ));
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
                let mut d = Finding::info(format!(
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
    ) -> Option<(ClusterSecret, usize, Option<String>)> {
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
        // A user kubeconfig (the long-lived login the provider writes) that failed, with the
        // plain one standing in: a fallback, which may not replace a working Secret. One whose
        // login needs a person never worked in Argo CD, so nothing falls back from it.
        let failed_user = members
            .iter()
            .zip(&converted)
            .find(|(m, c)| m.variant == Variant::User && c.connection.is_none() && !c.interactive);
        let degraded = match failed_user {
            Some((m, _)) if self.config.mode == Mode::Push && source.variant == Variant::Plain => {
                Some(format!(
                    "{} could not be converted, and {} is a fallback",
                    m.name, source.name
                ))
            }
            _ => None,
        };
        let chosen_one = converted.into_iter().nth(chosen)?;
        // Findings about the kubeconfig name the field it came from.
        let field = chosen_one.field.as_str();
        let connection = chosen_one.connection?;
        let mut config = connection.config;
        let object = Object::new(&self.item(source.index).node);
        let capi = self.config.sources[source.source].capi;
        let mut server = match self.server_of(object, &connection.server, field, capi) {
            Ok(server) => server,
            Err(finding) => {
                self.results.push(object.finding(finding));
                return None;
            }
        };
        if self.config.mode == Mode::Pull {
            config = without_credentials(config);
            // The credential-less Secret carries no credentials in its URLs either.
            let (clean, had) = without_userinfo(&server);
            let (proxy, proxy_had) = match &config.proxy_url {
                Some(p) => {
                    let (p, had) = without_userinfo(p);
                    (Some(p), had)
                }
                None => (None, false),
            };
            if had || proxy_had {
                server = clean;
                config.proxy_url = proxy;
                self.results.push(object.finding(
                    Finding::info(
                        "pull mode: the user and password in the server or proxy URL are left out",
                    )
                    .at(field),
                ));
            }
        } else {
            if without_userinfo(&server).1
                || config
                    .proxy_url
                    .as_deref()
                    .is_some_and(|p| without_userinfo(p).1)
            {
                self.results.push(object.finding(
                    Finding::warning(
                        "kubeconfig server or proxy-url carries a user and password in the URL; they go into the Argo CD Secret as they are",
                    )
                    .at(field),
                ));
            }
            if config.login() == Login::Expiring {
                self.results.push(object.finding(
                    Finding::warning(
                        "kubeconfig token expires on its own (an EKS token lasts 15 minutes): Argo CD loses access to the cluster; give it a login it renews (the provider's user kubeconfig, or argocd-k8s-auth)",
                    )
                    .at(field),
                ));
            }
        }
        let from_kubeconfig = self.config.name_from == NameFrom::Kubeconfig
            || self.config.sources[source.source].cluster_name == ClusterName::Kubeconfig;
        let named = if from_kubeconfig {
            connection.cluster_entry.as_str()
        } else {
            cluster
        };
        let cluster_name = if self.config.namespaced_names {
            format!("{namespace}-{named}")
        } else {
            named.to_string()
        };
        Some((
            ClusterSecret {
                secret_name: self.secret_name(namespace, cluster),
                namespace: self.config.argo_namespace.clone(),
                cluster_name,
                server,
                config,
                source_name: source.name.clone(),
                source_namespace: source.namespace.clone(),
                annotations: Vec::new(),
                fields: Default::default(),
                shard: None,
            },
            source.index,
            degraded,
        ))
    }

    /// The server Argo CD connects to: the kubeconfig's, or the Secret's server annotation. A
    /// kubeconfig pointing at an address only its own pod can reach gets a warning saying how
    /// to give the right one.
    fn server_of(
        &mut self,
        object: Object,
        server: &str,
        field: &str,
        capi: bool,
    ) -> Result<String, Finding> {
        if let Some(set) = object.annotation(SERVER_ANNOTATION) {
            let set = set.trim_end_matches('/');
            if !kubeconfig::is_http_url(set) {
                return Err(Finding::error(format!(
                    "{SERVER_ANNOTATION} is not an https:// (or http://) URL with a host"
                ))
                .at("metadata.annotations"));
            }
            self.results.push(object.finding(
                Finding::info(format!(
                    "the server comes from the {SERVER_ANNOTATION} annotation, not the kubeconfig"
                ))
                .at("metadata.annotations"),
            ));
            return Ok(set.to_string());
        }
        // A bare host name is common in on-premises Cluster API kubeconfigs (resolved through
        // DNS search domains); from the other platforms it is their own Service's name.
        let unreachable = kubeconfig::unreachable_host(server)
            .filter(|reach| !(capi && *reach == kubeconfig::BARE_SERVICE_NAME));
        if let Some(reach) = unreachable {
            self.results.push(object.finding(
                Finding::warning(format!(
                    "the kubeconfig's server is {reach}: Argo CD cannot reach it there; give the address it can reach in the {SERVER_ANNOTATION} annotation"
                ))
                .at(field),
            ));
        }
        Ok(server.to_string())
    }

    /// Decodes and reads one kubeconfig Secret.
    fn convert(&self, c: &Candidate) -> Converted {
        let node = &self.item(c.index).node;
        let at = |severity, field: &str, message: String| {
            Finding::new(severity, message)
                .on(
                    Some(Object::new(node).resource_ref()),
                    Object::new(node).file_ref(),
                )
                .at(field)
        };
        let failed = |d: Finding| Converted {
            connection: None,
            field: String::new(),
            diagnostics: vec![d],
            interactive: false,
        };
        let object = Object::new(node);
        let source = &self.config.sources[c.source];
        let mut read = None;
        for key in &source.keys {
            match object.secret_value(key) {
                Ok(Some(v)) => {
                    read = Some(v);
                    break;
                }
                Ok(None) => {}
                Err(finding) => return failed(object.finding(finding)),
            }
        }
        let (field, text) = match read {
            Some(v) => v,
            None => {
                let keys: Vec<&str> = ["data", "stringData"]
                    .iter()
                    .filter_map(|section| node.get(section)?.as_map())
                    .flatten()
                    .filter_map(|(k, _)| k.as_str())
                    .collect();
                let found = if keys.is_empty() {
                    String::new()
                } else {
                    format!(" (it has {})", keys.join(", "))
                };
                let first = &source.keys[0];
                let which = if source.capi {
                    "a CAPI".to_string()
                } else {
                    format!("a {}", source.name)
                };
                return failed(at(
                    Severity::Error,
                    &format!("data.{first}"),
                    format!(
                        "is missing: {which} kubeconfig Secret holds the kubeconfig under data.{}{found}",
                        source.keys.join(" or data.")
                    ),
                ));
            }
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
        let mut diagnostics: Vec<Finding> = reading
            .findings
            .iter()
            .map(|f| {
                let message = match f.field.as_deref().filter(|p| !p.is_empty()) {
                    None => format!("kubeconfig {}", f.message),
                    Some(path) => format!("kubeconfig {path}: {}", f.message),
                };
                at(f.severity, &field, message)
            })
            .collect();
        let mut connection = reading.connection;
        let mut unreadable_token = false;
        // Rancher keeps the token beside the kubeconfig rather than in it.
        if let Some(conn) = connection
            .as_mut()
            .filter(|c| credentials == Credentials::Read && !c.config.has_credentials())
        {
            match object.secret_value("token") {
                Ok(Some((_, token))) if !token.trim().is_empty() => {
                    conn.config.bearer_token =
                        Some(crate::convert::argocd::Sensitive(token.trim().to_string()));
                }
                // A token that is there but unreadable is an error on its own field, not an
                // anonymous login.
                Err(finding) => {
                    diagnostics.push(object.finding(finding));
                    unreadable_token = true;
                }
                _ => diagnostics.push(at(
                    Severity::Warning,
                    &field,
                    "kubeconfig has no credentials: Argo CD will connect anonymously".into(),
                )),
            }
        }
        if unreadable_token {
            connection = None;
        }
        Converted {
            connection,
            field,
            diagnostics,
            interactive: reading.interactive,
        }
    }
}

/// A converted cluster: the kubeconfig Secret it came from (for results) and its Argo CD Secret.
struct Generated<'x, 'a> {
    source: usize,
    /// The Argo CD Secret's namespace and name.
    target: (String, String),
    /// The kubeconfig Secret's namespace and name.
    from: (String, String),
    /// Why this conversion is worse than what the cluster's Secrets could give (a preferred
    /// kubeconfig failed, so a weaker one stood in): it may not replace a working Secret.
    degraded: Option<String>,
    secret: Pending<'x, 'a>,
}

/// A converted cluster's Argo CD Secret until it is placed.
enum Pending<'x, 'a> {
    /// The input has a Secret of its name (`at`): what happens depends on that one.
    Existing {
        at: usize,
        secret: Box<ClusterSecret>,
    },
    /// The input has none: written at once (unless the validator's errors, results for its
    /// source, keep it out), into the output itself when that is written as the run goes, else
    /// to wait for it (`out`), so a large fleet never holds every cluster's conversion and its
    /// text together. A clash with another cluster still keeps a waiting one out.
    New {
        out: Option<Out<'x, 'a>>,
        errors: Vec<String>,
    },
}

/// An owned Argo CD Secret in the input, and the source its labels name.
struct Owned {
    index: usize,
    source: (String, String),
    /// The source (`capi2argo.dev/source`, `capi` when absent) that made it.
    kind: String,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Reconciles a YAML stream; the output text and the results.
    fn run(input: &str, config: &Config) -> (String, Vec<Finding>) {
        let limits = Limits::default();
        let parsed = krm::parse(input.as_bytes(), &limits).expect("input parses");
        let mut out = String::new();
        let results = reconcile(&parsed, config, &limits, None, &mut |s| out.push_str(s));
        (out, results)
    }

    fn kubeconfig_secret(name: &str, user: &str) -> String {
        let cluster = name
            .trim_end_matches("-kubeconfig")
            .trim_end_matches("-user");
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: fleet\n  labels:\n    cluster.x-k8s.io/cluster-name: {cluster}\nstringData:\n  value: |\n    apiVersion: v1\n    kind: Config\n    clusters:\n    - name: c\n      cluster: {{server: 'https://c.example:6443'}}\n    users:\n    - name: u\n      user:\n{user}    contexts:\n    - name: x\n      context: {{cluster: c, user: u}}\n    current-context: x\n---\n"
        )
    }

    const TOKEN: &str = "        token: static-token\n";
    const AWS: &str = "        exec:\n          apiVersion: client.authentication.k8s.io/v1beta1\n          command: aws\n          args: [eks, get-token, --cluster-name, eks-1]\n";
    const DEVICECODE: &str = "        exec:\n          apiVersion: client.authentication.k8s.io/v1beta1\n          command: kubelogin\n          args: [get-token, --server-id, s]\n";

    fn errors(results: &[Finding]) -> Vec<&str> {
        results
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.message.as_str())
            .collect()
    }

    /// New Secrets come out in the order of conversion, whether they go out at once or wait:
    /// one that may clash with another cluster's waits, and every one after it with it (here
    /// the other cluster fails, so nothing clashes in the end).
    #[test]
    fn new_secrets_come_out_in_conversion_order_written_at_once_or_not() {
        let secret = |ns: &str, cluster: &str| {
            kubeconfig_secret(&format!("{cluster}-kubeconfig"), TOKEN)
                .replace("namespace: fleet", &format!("namespace: {ns}"))
        };
        let broken = secret("b", "p").replace("current-context: x", "current-context: none");
        let input = secret("a", "z") + &broken + &secret("a", "p") + &secret("a", "k");
        let (out, results) = run(&input, &Config::default());
        let names: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("  name: cluster-"))
            .collect();
        assert_eq!(names, ["k", "p", "z"], "{out}");
        assert_eq!(errors(&results).len(), 1, "{results:?}");
    }

    #[test]
    fn name_clashes_are_reported_in_the_same_order_every_time() {
        // Regression: clashes were gathered in a hash map, so two of them came out in either
        // order (golden case regression-collision-results-order).
        let input = ["p", "q", "r"]
            .iter()
            .flat_map(|c| {
                ["a", "b"].map(|ns| {
                    kubeconfig_secret(&format!("{c}-kubeconfig"), TOKEN)
                        .replace("namespace: fleet", &format!("namespace: {ns}"))
                })
            })
            .collect::<String>();
        let (_, first) = run(&input, &Config::default());
        assert_eq!(errors(&first).len(), 6);
        for _ in 0..16 {
            let (_, again) = run(&input, &Config::default());
            assert_eq!(errors(&again), errors(&first));
        }
    }

    #[test]
    fn a_user_kubeconfig_argocd_can_renew_wins_in_push_mode_only() {
        let input = kubeconfig_secret("eks-1-kubeconfig", TOKEN)
            + &kubeconfig_secret("eks-1-user-kubeconfig", AWS);
        let (out, results) = run(&input, &Config::default());
        assert!(out.contains("awsAuthConfig"), "{out}");
        assert!(out.contains("cluster-secret-name: eks-1-user-kubeconfig"));
        assert!(errors(&results).is_empty(), "{results:?}");
        let pull = Config {
            mode: Mode::Pull,
            ..Config::default()
        };
        let (out, _) = run(&input, &pull);
        assert!(
            out.contains("cluster-secret-name: eks-1-kubeconfig"),
            "{out}"
        );
    }

    #[test]
    fn a_login_that_needs_a_person_never_wins_and_is_no_fallback() {
        let input = kubeconfig_secret("aks-1-kubeconfig", TOKEN)
            + &kubeconfig_secret("aks-1-kubeconfig-user", DEVICECODE)
            // What an earlier version wrote from the device-code kubeconfig: replaceable.
            + "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-aks-1\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n    capi-to-argocd/owned: \"true\"\n    capi-to-argocd/cluster-secret-name: aks-1-kubeconfig-user\n    capi-to-argocd/cluster-namespace: fleet\nstringData:\n  name: aks-1\n  server: https://c.example:6443\n  config: '{\"tlsClientConfig\":{\"insecure\":false},\"execProviderConfig\":{\"command\":\"argocd-k8s-auth\",\"args\":[\"azure\"],\"env\":{\"AAD_LOGIN_METHOD\":\"devicecode\"},\"apiVersion\":\"client.authentication.k8s.io/v1beta1\"}}'\n";
        let (out, results) = run(&input, &Config::default());
        assert!(errors(&results).is_empty(), "{results:?}");
        assert!(out.contains("static-token"), "{out}");
        assert!(!out.contains("devicecode"), "{out}");
        // Alone, it is an error and nothing is written for the cluster.
        let (out, results) = run(
            &kubeconfig_secret("aks-2-kubeconfig-user", DEVICECODE),
            &Config::default(),
        );
        assert_eq!(errors(&results).len(), 1, "{results:?}");
        assert!(!out.contains("cluster-aks-2"), "{out}");
    }

    #[test]
    fn two_clusters_writing_one_secret_are_both_errors() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN)
            .replace("namespace: fleet", "namespace: one")
            + &kubeconfig_secret("a-kubeconfig", TOKEN)
                .replace("namespace: fleet", "namespace: two");
        let (out, results) = run(&input, &Config::default());
        assert_eq!(errors(&results).len(), 2, "{results:?}");
        assert!(!out.contains("argocd.argoproj.io/secret-type"), "{out}");
        let namespaced = Config {
            namespaced_names: true,
            ..Config::default()
        };
        let (out, results) = run(&input, &namespaced);
        assert!(errors(&results).is_empty());
        assert!(
            out.contains("cluster-one-a") && out.contains("cluster-two-a"),
            "{out}"
        );
    }

    #[test]
    fn owned_secrets_are_pruned_unowned_never_touched() {
        let argo = |name: &str, owned: bool| {
            let owned = if owned {
                "    capi-to-argocd/owned: \"true\"\n"
            } else {
                ""
            };
            format!(
                "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n{owned}    capi-to-argocd/cluster-secret-name: gone-kubeconfig\n    capi-to-argocd/cluster-namespace: fleet\nstringData:\n  name: gone\n  server: https://gone.example:6443\n"
            )
        };
        let input = argo("cluster-gone", true) + &argo("cluster-hand-made", false);
        let (out, _) = run(&input, &Config::default());
        assert!(!out.contains("name: cluster-gone"), "{out}");
        assert!(out.contains("name: cluster-hand-made"), "{out}");
        let keep = Config {
            prune: false,
            ..Config::default()
        };
        let (out, _) = run(&input, &keep);
        assert!(out.contains("name: cluster-gone"), "{out}");
    }
}
