//! Step 3: the plan. For every Argo CD cluster Secret the function owns (in the input) or would
//! write, one decision — create, update, unchanged, rename, prune, or kept and why — made before
//! anything is written, so the guards can check it and the renderer only carries it out.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::config::Mode;
use crate::convert::argocd::ClusterSecret;
use crate::convert::login::login_of_json;
use crate::krm::finding::Severity;
use crate::krm::object::{Object, PATH_ANNOTATION};
use crate::krm::{Form, Out, TextStore};
use crate::validate;
use crate::yaml::Node;

use super::changes::changes;
use super::convert::{Conversion, secret_name};
use super::scan::Scan;
use super::{Ctx, Output};

/// A Secret, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretId {
    /// Its namespace (`default` when none is written).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl fmt::Display for SecretId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What happens to one Argo CD cluster Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A new Secret for a cluster seen for the first time.
    Create,
    /// The Secret is rewritten in place; what changed (data keys and `config` fields by path,
    /// labels and annotations by key — never a value).
    Update {
        /// What changed, by path.
        changed: Vec<String>,
    },
    /// The Secret is already what the conversion gives.
    Unchanged,
    /// The cluster's Secret changes identity: its Argo CD `name` changes in place, or it is
    /// replaced by a Secret of another name (`from`) made from the same kubeconfig Secret.
    Rename {
        /// The Secret as it is now (the same as the entry's own Secret for a rename in place).
        from: SecretId,
        /// Its Argo CD cluster name now.
        from_cluster: String,
    },
    /// The Secret is removed: its kubeconfig Secret is gone or no longer converted.
    Prune,
    /// The Secret stays exactly as it is, for this reason.
    Kept {
        /// Why, in a few words.
        reason: String,
    },
}

impl Action {
    /// The action's word, as the plan view prints it.
    pub fn word(&self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update { .. } => "update",
            Action::Unchanged => "unchanged",
            Action::Rename { .. } => "rename",
            Action::Prune => "prune",
            Action::Kept { .. } => "kept",
        }
    }
}

/// One Argo CD cluster Secret in the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What happens to it.
    pub action: Action,
    /// The Secret written, or the existing one kept or removed.
    pub secret: SecretId,
    /// Its Argo CD cluster name (`name` key): the new one where the Secret is written.
    pub cluster: String,
    /// Its server (`server` key).
    pub server: String,
    /// The kubeconfig Secret it is (or was) made from.
    pub source: Option<SecretId>,
    /// The `metadata.uid` and `metadata.resourceVersion` of the existing Secret, when the input
    /// has them (what `kubectl get` prints): a deletion can be made conditional on both, so it
    /// removes that Secret as it was read and nothing else.
    pub uid: Option<String>,
    /// See `uid`.
    pub resource_version: Option<String>,
}

/// What happens to every Argo CD cluster Secret the function owns or would write, after the
/// guards. Secret values are never part of it.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// One entry per Secret, in the order of their namespaces and names.
    pub entries: Vec<Entry>,
    /// The Secrets to create or update, as trees (only when the plan alone was asked for).
    pub(crate) writes: Vec<Node<'static>>,
}

/// One decision, with what carrying it out needs.
pub(super) struct Step<'x, 'a> {
    pub action: Action,
    pub secret: SecretId,
    pub cluster: String,
    pub server: String,
    pub source: Option<SecretId>,
    /// The owned Secret in the input this step updates, keeps, renames away or prunes.
    pub old: Option<usize>,
    /// The new Secret, for a create, an update or a rename.
    pub out: Option<Out<'x, 'a>>,
    /// The name of the source that made (or would make) the Secret.
    pub kind: String,
    /// The kubeconfig Secrets of the cluster, as label values (none for an owned Secret alone).
    pub members: Vec<(String, String)>,
    /// The input index of the kubeconfig Secret the new Secret is made from.
    pub from: Option<usize>,
    /// The order of conversion: new Secrets go out in it, whenever their step was decided.
    pub seq: usize,
}

/// The decisions, and the text of the new Secrets they write.
pub(super) struct Steps<'x, 'a> {
    pub steps: Vec<Step<'x, 'a>>,
    pub store: TextStore,
}

/// Makes the plan: each conversion placed as it comes, then collisions, owned Secrets without
/// a conversion, and renames.
pub(super) struct Planner<'x, 'a> {
    output: Output,
    store: TextStore,
    steps: Vec<Step<'x, 'a>>,
    /// Argo CD Secret names more than one cluster may write: their conversions wait for the
    /// end, when it is known whether more than one did convert.
    contested: HashSet<String>,
    waiting: Vec<(usize, Conversion)>,
    /// How many conversions were proposed.
    proposed: usize,
    /// Kubeconfig Secrets (as label values) whose Argo CD Secret this run could not redo, and
    /// why: such a Secret stays as it is, never pruned for it.
    unsettled: HashMap<(String, String), String>,
    /// Input indices of the owned Argo CD Secrets.
    owned: HashSet<usize>,
}

impl<'x, 'a> Planner<'x, 'a> {
    pub fn new(ctx: &Ctx, scan: &Scan, output: Output) -> Self {
        let mut targets: HashMap<String, usize> = HashMap::new();
        let mut groups = HashSet::new();
        for c in &scan.candidates {
            if groups.insert((c.source, c.namespace.as_str(), c.cluster.as_str())) {
                *targets
                    .entry(secret_name(ctx, &c.namespace, &c.cluster))
                    .or_default() += 1;
            }
        }
        Planner {
            output,
            store: TextStore::default(),
            steps: Vec::new(),
            contested: targets
                .into_iter()
                .filter(|(_, n)| *n > 1)
                .map(|(t, _)| t)
                .collect(),
            waiting: Vec::new(),
            proposed: 0,
            unsettled: scan
                .held
                .iter()
                .map(|(key, why)| (key.clone(), why.to_string()))
                .collect(),
            owned: scan.owned.iter().map(|o| o.index).collect(),
        }
    }

    /// The cluster made of these kubeconfig Secrets got no conversion this time, for `reason`.
    pub fn unsettle(&mut self, members: &[(String, String)], reason: &str) {
        for key in members {
            self.unsettled
                .entry(key.clone())
                .or_insert_with(|| reason.to_string());
        }
    }

    /// Places a cluster's conversion, or keeps it for the end when another cluster may write a
    /// Secret of the same name.
    pub fn propose(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan, conversion: Conversion) {
        let seq = self.proposed;
        self.proposed += 1;
        if self.contested.contains(&conversion.secret.secret_name) {
            self.waiting.push((seq, conversion));
        } else {
            self.place(ctx, scan, seq, conversion);
        }
    }

    /// Decides what a conversion does to the Secret of its name.
    fn place(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan, seq: usize, conversion: Conversion) {
        let Conversion {
            from,
            kind,
            members,
            mut secret,
            degraded,
        } = conversion;
        let target = SecretId {
            namespace: secret.namespace.clone(),
            name: secret.secret_name.clone(),
        };
        let mut step = Step {
            action: Action::Create,
            secret: target.clone(),
            cluster: secret.cluster_name.clone(),
            server: secret.server.clone(),
            source: Some(SecretId {
                namespace: secret.source_namespace.clone(),
                name: secret.source_name.clone(),
            }),
            old: None,
            out: None,
            kind: ctx.config.sources[kind].name.clone(),
            members,
            from: Some(from),
            seq,
        };
        let existing = scan
            .secrets
            .get(&(target.namespace.clone(), target.name.clone()))
            .copied();
        let Some(at) = existing else {
            if matches!(ctx.input.form, Form::ResourceList { .. }) {
                secret.annotations = vec![(
                    PATH_ANNOTATION.to_string(),
                    format!("{}/{}.yaml", secret.namespace, secret.secret_name),
                )];
            }
            let node = secret.to_node(ctx.config.data_field, true);
            drop(secret);
            if !self.written(ctx, from, &node) {
                self.unsettle(&step.members, "its new Argo CD Secret fails validation");
                return;
            }
            step.out = Some(self.out(ctx, node));
            self.steps.push(step);
            return;
        };
        if !self.owned.contains(&at) {
            let what = ctx.object(at).resource_ref();
            let message = format!(
                "{what} already exists and is not owned by capi2argo (no {}: \"true\" label); it is not overwritten",
                crate::convert::argocd::OWNED_LABEL
            );
            ctx.report(from, Severity::Error, None, message);
            self.unsettle(&step.members, "an unowned Secret has its name");
            return;
        }
        let old = &ctx.item(at).node;
        let old_object = Object::new(old);
        step.old = Some(at);
        step.cluster = old_object
            .secret_value("name")
            .ok()
            .flatten()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        if let Some(reason) = weakens(ctx, old, &secret, degraded.as_deref()) {
            // Never weaken a working Secret: the existing one stays as it is.
            let message = format!("{} is kept as it is: {reason}", old_object.resource_ref());
            ctx.report(from, Severity::Error, None, message);
            step.action = Action::Kept {
                reason: format!("the new conversion would weaken it: {reason}"),
            };
            self.steps.push(step);
            return;
        }
        secret.annotations = old_object.tool_annotations();
        let node = secret.to_node(ctx.config.data_field, true);
        if !self.written(ctx, from, &node) {
            step.action = Action::Kept {
                reason: "its new conversion fails validation".into(),
            };
            self.steps.push(step);
            return;
        }
        let old_cluster = std::mem::replace(&mut step.cluster, secret.cluster_name.clone());
        let changed = changes(old, &node);
        if changed.is_empty() {
            // Kept as it stands, to the byte: what a second run over the output must find.
            step.action = Action::Unchanged;
        } else {
            step.action = if old_cluster == secret.cluster_name {
                Action::Update { changed }
            } else {
                Action::Rename {
                    from: target,
                    from_cluster: old_cluster,
                }
            };
            step.out = Some(self.out(ctx, node));
        }
        self.steps.push(step);
    }

    /// Whether a Secret about to be written passes the validator (Argo CD's rules and the
    /// policy); its errors become results for the kubeconfig Secret `from`. (Its warnings
    /// repeat what the conversion already said.)
    fn written(&mut self, ctx: &mut Ctx, from: usize, node: &Node) -> bool {
        let target = Object::new(node).resource_ref();
        let mut passed = true;
        for finding in validate::check(node, &ctx.config.policy) {
            if finding.severity != Severity::Error {
                continue;
            }
            let field = finding.field.as_deref().unwrap_or_default();
            let message = format!("{target} not written: {field}: {}", finding.message);
            ctx.report(from, Severity::Error, None, message);
            passed = false;
        }
        passed
    }

    /// A new Secret for the output: its YAML text kept in the store (a fraction of its tree's
    /// size), or the tree itself when the output is JSON or only the plan is made.
    fn out(&mut self, ctx: &Ctx<'x, 'a>, node: Node<'static>) -> Out<'x, 'a> {
        match self.output {
            Output::PlanOnly => Out::New(node),
            Output::Resources => Out::new(ctx.input, node, &mut self.store),
        }
    }

    /// The rest of the plan: the waiting conversions (two clusters must never write one
    /// Secret: neither does, and both are errors), then every owned Secret no conversion placed.
    pub fn finish(mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan) -> Steps<'x, 'a> {
        let mut by_target: std::collections::BTreeMap<String, Vec<(usize, Conversion)>> =
            Default::default();
        for (seq, conversion) in std::mem::take(&mut self.waiting) {
            by_target
                .entry(conversion.secret.secret_name.clone())
                .or_default()
                .push((seq, conversion));
        }
        for (name, conversions) in by_target {
            if conversions.len() == 1 {
                for (seq, conversion) in conversions {
                    self.place(ctx, scan, seq, conversion);
                }
                continue;
            }
            let conversions: Vec<Conversion> = conversions.into_iter().map(|(_, c)| c).collect();
            let ns = &ctx.config.argo_namespace;
            let sources: Vec<String> = conversions
                .iter()
                .map(|c| format!("{}/{}", c.secret.source_namespace, c.secret.source_name))
                .collect();
            let message = format!(
                "clusters {} all map to Argo CD Secret {ns}/{name}; set namespacedNames=true to keep them apart",
                sources.join(" and ")
            );
            for c in &conversions {
                ctx.report(
                    c.from,
                    Severity::Error,
                    Some("metadata.name"),
                    message.clone(),
                );
            }
            let reason = format!("clusters {} collide over its name", sources.join(" and "));
            for c in &conversions {
                self.unsettle(&c.members, &reason);
            }
            // The Secret of that name, if the function owns one, stays as it is.
            if let Some(&at) = scan.secrets.get(&(ns.clone(), name.clone())) {
                if self.owned.contains(&at) {
                    let step = self.kept(ctx, scan, at, reason.clone());
                    self.steps.push(step);
                }
            }
        }
        // Decided now or then, new Secrets go out in the order of conversion.
        self.steps.sort_unstable_by_key(|s| s.seq);
        self.match_owned(ctx, scan);
        Steps {
            steps: self.steps,
            store: self.store,
        }
    }

    /// Every owned Secret no conversion placed: renamed away when its kubeconfig Secret now
    /// makes a Secret of another name, kept when that could not be decided, else pruned.
    fn match_owned(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan) {
        let placed: HashSet<usize> = self.steps.iter().filter_map(|s| s.old).collect();
        let mut by_source: HashMap<&(String, String), Vec<usize>> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            for key in &step.members {
                by_source.entry(key).or_default().push(i);
            }
        }
        let mut renamed: Vec<(usize, usize)> = Vec::new();
        let mut rest = Vec::new();
        for o in scan.owned.iter().filter(|o| !placed.contains(&o.index)) {
            match by_source.get(&o.source).and_then(|steps| steps.first()) {
                Some(&i) => renamed.push((i, o.index)),
                None => rest.push(o),
            }
        }
        // The first Secret renamed away takes the new Secret along; any other one of the same
        // cluster (left from an earlier name) only goes.
        let mut taken: HashSet<usize> = HashSet::new();
        for (i, at) in renamed {
            let old = ctx.object(at);
            let from = SecretId {
                namespace: old.namespace().to_string(),
                name: old.name().unwrap_or_default().to_string(),
            };
            let from_cluster = old
                .secret_value("name")
                .ok()
                .flatten()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            let step = &self.steps[i];
            let rename = Action::Rename { from, from_cluster };
            let action = match &step.action {
                Action::Kept { .. } => Action::Kept {
                    reason: format!("its cluster's Secret is now {}, which is kept", step.secret),
                },
                _ => rename,
            };
            if step.action == Action::Create && taken.insert(i) {
                let step = &mut self.steps[i];
                step.action = action;
                step.old = Some(at);
                continue;
            }
            let leftover = Step {
                action,
                secret: step.secret.clone(),
                cluster: step.cluster.clone(),
                server: step.server.clone(),
                source: step.source.clone(),
                old: Some(at),
                out: None,
                kind: step.kind.clone(),
                members: Vec::new(),
                from: step.from,
                seq: usize::MAX,
            };
            self.steps.push(leftover);
        }
        for o in rest {
            let reason = if !ctx.config.sources.iter().any(|s| s.name == o.kind) {
                Some(format!(
                    "it was made from source {}, which this run does not read (sources)",
                    o.kind
                ))
            } else if let Some(why) = self.unsettled.get(&o.source) {
                Some(why.clone())
            } else if !ctx.config.prune {
                Some("prune=false".into())
            } else {
                None
            };
            let mut step = self.kept(ctx, scan, o.index, String::new());
            step.action = match reason {
                Some(reason) => Action::Kept { reason },
                None => Action::Prune,
            };
            self.steps.push(step);
        }
    }

    /// A step keeping the owned Secret at input index `at` as it is.
    fn kept(&self, ctx: &Ctx, scan: &Scan, at: usize, reason: String) -> Step<'x, 'a> {
        let object = ctx.object(at);
        let value = |key| {
            object
                .secret_value(key)
                .ok()
                .flatten()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let owned = scan.owned.iter().find(|o| o.index == at);
        Step {
            action: Action::Kept { reason },
            secret: SecretId {
                namespace: object.namespace().to_string(),
                name: object.name().unwrap_or_default().to_string(),
            },
            cluster: value("name"),
            server: value("server"),
            source: owned.map(|o| SecretId {
                namespace: o.source.0.clone(),
                name: o.source.1.clone(),
            }),
            old: Some(at),
            out: None,
            kind: owned.map(|o| o.kind.clone()).unwrap_or_default(),
            members: Vec::new(),
            from: None,
            seq: usize::MAX,
        }
    }
}

/// Why `new` may not replace the owned Secret `old`: it is a fallback, or it logs in more
/// weakly than `old` does (read from `old`'s `config`). Pull mode carries no logins.
fn weakens(ctx: &Ctx, old: &Node, new: &ClusterSecret, degraded: Option<&str>) -> Option<String> {
    if ctx.config.mode == Mode::Pull {
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

/// The plan as people and tools see it, in the order of the Secrets' names.
pub(super) fn public(ctx: &Ctx, steps: &Steps) -> Plan {
    let metadata = |at: Option<usize>, key: &str| {
        at.and_then(|i| {
            ctx.item(i)
                .node
                .path(&["metadata", key])
                .and_then(Node::as_str)
                .map(String::from)
        })
    };
    let mut entries: Vec<Entry> = steps
        .steps
        .iter()
        .map(|s| Entry {
            action: s.action.clone(),
            secret: s.secret.clone(),
            cluster: s.cluster.clone(),
            server: s.server.clone(),
            source: s.source.clone(),
            uid: metadata(s.old, "uid"),
            resource_version: metadata(s.old, "resourceVersion"),
        })
        .collect();
    entries.sort_unstable_by(|a, b| {
        (
            &a.secret,
            a.action.word(),
            &a.cluster,
            &a.server,
            &a.source,
            &a.uid,
        )
            .cmp(&(
                &b.secret,
                b.action.word(),
                &b.cluster,
                &b.server,
                &b.source,
                &b.uid,
            ))
    });
    let writes = steps
        .steps
        .iter()
        .filter_map(|s| match &s.out {
            Some(Out::New(node)) => Some(node.clone()),
            _ => None,
        })
        .collect();
    Plan { entries, writes }
}
