//! Step 3: the plan. For every Argo CD cluster Secret the function owns (in the input) or would
//! write, one decision — create, update, unchanged, rename, prune, or kept and why — made before
//! anything is written, so the guards can check it and the renderer only carries it out.
//!
//! Before a conversion is placed, every cluster gets one Argo CD cluster: two conversions for one
//! server, one Argo CD `name` or one Secret name are a collision, reported on both, unless a rule
//! the book states picks one (`collide`).

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::config::Mode;
use crate::convert::argocd::OWNED_LABEL;
use crate::convert::kubeconfig::without_userinfo;
use crate::convert::login::{Login, login_of_json};
use crate::convert::meta::label_value;
use crate::krm::finding::Severity;
use crate::krm::object::{Object, PATH_ANNOTATION};
use crate::krm::{Form, Out, TextStore};
use crate::validate;
use crate::yaml::Node;

use super::changes::changes;
use super::collide;
use super::convert::Conversion;
use super::scan::{Owned, Scan};
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
    /// The cluster's Secret changes identity: its Argo CD `name` changes in place, it is replaced
    /// by a Secret of another name (`from`) made from the same kubeconfig Secret, or another
    /// kubeconfig Secret takes it over (`from_source`).
    Rename {
        /// The Secret as it is now (the same as the entry's own Secret for a rename in place).
        from: SecretId,
        /// Its Argo CD cluster name now.
        from_cluster: String,
        /// The kubeconfig Secret it was made from, when another one now makes it.
        from_source: Option<SecretId>,
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
    /// Its server (`server` key), without any user and password the URL carries.
    pub server: String,
    /// The kubeconfig Secret it is (or was) made from.
    pub source: Option<SecretId>,
    /// The `metadata.uid` and `metadata.resourceVersion` of the existing Secret, when the input
    /// has them (what `kubectl get` prints): a write or a deletion can be made conditional on
    /// them, so it changes that Secret as it was read and nothing else.
    pub uid: Option<String>,
    /// See `uid`.
    pub resource_version: Option<String>,
}

/// A Secret the plan writes, as a tree (only when the plan alone is made).
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub node: Node<'static>,
    /// It replaces a Secret of its name (else it is new).
    pub replaces: bool,
    /// The replaced Secret's `metadata.resourceVersion`, when the input has it.
    pub resource_version: Option<String>,
}

/// What happens to every Argo CD cluster Secret the function owns or would write, after the
/// guards. Secret values are never part of it.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// One entry per Secret, in the order of their namespaces and names.
    pub entries: Vec<Entry>,
    /// The Secrets to create or replace, in the order they are written.
    pub(crate) writes: Vec<Write>,
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
    pub source_name: String,
    /// The kubeconfig Secrets of the cluster, as label values (none for an owned Secret alone).
    pub members: Vec<(String, String)>,
    /// How the new Secret logs in, and why it is a fallback: a rename may not weaken either.
    pub login: Option<(Login, Option<String>)>,
    /// An owned Secret this run manages (of a source it reads, in its Argo CD namespace and
    /// `allowedNamespaces`): what `maxPrune` counts.
    pub managed: bool,
    /// The order of conversion: new Secrets go out in it, whenever their step was decided.
    pub seq: usize,
}

/// The decisions, and the text of the new Secrets they write.
pub(super) struct Steps<'x, 'a> {
    pub steps: Vec<Step<'x, 'a>>,
    pub store: TextStore,
}

/// Makes the plan: every conversion is gathered, one cluster per server, name and Secret name
/// kept, each placed on the Secret of its name, then every owned Secret no conversion placed.
pub(super) struct Planner<'x, 'a> {
    output: Output,
    store: TextStore,
    steps: Vec<Step<'x, 'a>>,
    conversions: Vec<Conversion>,
    /// Kubeconfig Secrets (as label values) whose Argo CD Secret this run could not redo, and
    /// why: such a Secret stays as it is, never pruned for it.
    unsettled: HashMap<(String, String), String>,
    /// Input indices of the owned Argo CD Secrets, and of those set aside by the scan (why).
    owned: HashMap<usize, Option<&'static str>>,
    /// Where each owned Secret (by input index) stands in the scan's list of them.
    owned_at: HashMap<usize, usize>,
}

impl<'x, 'a> Planner<'x, 'a> {
    pub fn new(scan: &Scan, output: Output) -> Self {
        let owned = scan
            .owned
            .iter()
            .map(|o| (o.index, None))
            .chain(scan.held_owned.iter().map(|&(i, why)| (i, Some(why))))
            .collect();
        let owned_at = scan
            .owned
            .iter()
            .enumerate()
            .map(|(at, o)| (o.index, at))
            .collect();
        Planner {
            output,
            store: TextStore::default(),
            steps: Vec::new(),
            conversions: Vec::new(),
            owned_at,
            unsettled: scan
                .held
                .iter()
                .map(|(key, why)| (key.clone(), why.to_string()))
                .collect(),
            owned,
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

    /// A cluster's conversion, placed once every cluster is converted.
    pub fn propose(&mut self, conversion: Conversion) {
        self.conversions.push(conversion);
    }

    /// The plan: one Argo CD cluster per server, name and Secret, each placed, then every owned
    /// Secret no conversion placed.
    pub fn finish(mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan) -> Steps<'x, 'a> {
        let conversions = std::mem::take(&mut self.conversions);
        let collide::Outcome {
            survivors,
            unsettled,
            contested,
        } = collide::resolve(ctx, scan, conversions);
        for (members, reason) in unsettled {
            self.unsettle(&members, &reason);
        }
        // The Secret two clusters both map to, if the function owns one, stays as it is.
        for (at, reason) in contested {
            let step = self.kept(ctx, scan, at, reason);
            self.steps.push(step);
        }
        for (seq, conversion) in survivors {
            self.place(ctx, scan, seq, conversion);
        }
        // Decided now or then, new Secrets go out in the order of conversion.
        self.steps.sort_unstable_by_key(|s| s.seq);
        self.match_owned(ctx, scan);
        Steps {
            steps: self.steps,
            store: self.store,
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
            ..
        } = conversion;
        let target = SecretId {
            namespace: secret.namespace.clone(),
            name: secret.secret_name.clone(),
        };
        let login = secret.config.login();
        let mut step = Step {
            action: Action::Create,
            secret: target.clone(),
            cluster: secret.cluster_name.clone(),
            server: without_userinfo(&secret.server).0,
            source: Some(SecretId {
                namespace: secret.source_namespace.clone(),
                name: secret.source_name.clone(),
            }),
            old: None,
            out: None,
            source_name: ctx.config.sources[kind].name.clone(),
            members,
            login: Some((login, degraded.clone())),
            managed: true,
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
        let old_object = ctx.object(at);
        match self.owned.get(&at) {
            None => {
                let message = format!(
                    "{} already exists and is not owned by capi2argo (no {OWNED_LABEL}: \"true\" label); it is not overwritten",
                    old_object.resource_ref()
                );
                ctx.report(from, Severity::Error, None, message);
                self.unsettle(&step.members, "an unowned Secret has its name");
                return;
            }
            Some(Some(why)) => {
                let message = format!("{} is kept as it is: {why}", old_object.resource_ref());
                ctx.report(from, Severity::Error, None, message);
                let step = self.kept(ctx, scan, at, why.to_string());
                self.steps.push(step);
                return;
            }
            Some(None) => {}
        }
        let old = &ctx.item(at).node;
        step.old = Some(at);
        let old_cluster = old_object
            .secret_value("name")
            .ok()
            .flatten()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        if let Some(reason) = weakens(ctx, old, login, degraded.as_deref()) {
            // Never weaken a working Secret: the existing one stays as it is.
            let message = format!("{} is kept as it is: {reason}", old_object.resource_ref());
            ctx.report(from, Severity::Error, None, message);
            let step = self.kept(
                ctx,
                scan,
                at,
                format!("the new conversion would weaken it: {reason}"),
            );
            self.steps.push(step);
            return;
        }
        secret.annotations = old_object.tool_annotations();
        let node = secret.to_node(ctx.config.data_field, true);
        if !self.written(ctx, from, &node) {
            let step = self.kept(ctx, scan, at, "its new conversion fails validation".into());
            self.steps.push(step);
            return;
        }
        // Made from a kubeconfig Secret that is none of this cluster's: another cluster takes
        // the Secret over (its server changes under the same name).
        let old_source = self
            .owned_at
            .get(&at)
            .map(|&i| &scan.owned[i])
            .filter(|o| {
                // A label left empty names no other Secret.
                let (namespace, name) = &o.source;
                !name.is_empty()
                    && !step
                        .members
                        .iter()
                        .any(|(ns, n)| n == name && (namespace.is_empty() || ns == namespace))
            })
            .map(|o| source_id(scan, o));
        let changed = changes(old, &node);
        if changed.is_empty() && old_source.is_none() {
            // Kept as it stands, to the byte: what a second run over the output must find.
            step.action = Action::Unchanged;
        } else {
            // An empty name was never a name: writing one renames nothing.
            let renamed = !old_cluster.is_empty() && old_cluster != secret.cluster_name;
            step.action = if renamed || old_source.is_some() {
                Action::Rename {
                    from: target,
                    from_cluster: old_cluster,
                    from_source: old_source,
                }
            } else {
                Action::Update { changed }
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

    /// Every owned Secret no conversion placed: renamed away when its kubeconfig Secret now
    /// makes a Secret of another name (unless that weakens it), kept when it is another run's or
    /// could not be decided, else pruned.
    fn match_owned(&mut self, ctx: &mut Ctx<'x, 'a>, scan: &Scan) {
        let placed: HashSet<usize> = self.steps.iter().filter_map(|s| s.old).collect();
        let mut by_source: HashMap<&(String, String), usize> = HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            for key in &step.members {
                by_source.entry(key).or_insert(i);
            }
        }
        let mut renamed: Vec<(usize, &Owned)> = Vec::new();
        let mut rest = Vec::new();
        for o in scan.owned.iter().filter(|o| !placed.contains(&o.index)) {
            match by_source.get(&o.source) {
                Some(&i) => renamed.push((i, o)),
                None => rest.push(o),
            }
        }
        // The first Secret renamed away takes the new Secret along; any other one of the same
        // cluster (left from an earlier name) only goes.
        let mut taken: HashSet<usize> = HashSet::new();
        let mut dropped: HashSet<usize> = HashSet::new();
        let mut leftovers = Vec::new();
        for (i, o) in renamed {
            let old = ctx.object(o.index);
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
            let weaker = step.login.as_ref().and_then(|(login, degraded)| {
                weakens(ctx, &ctx.item(o.index).node, *login, degraded.as_deref())
            });
            let action = if let Action::Kept { .. } = &step.action {
                Action::Kept {
                    reason: format!("its cluster's Secret is now {}, which is kept", step.secret),
                }
            } else if let Some(reason) = weaker {
                // Renamed or not, a working Secret is not weakened: it stays, and the weaker
                // conversion is not written in its place.
                let message = format!("kept as it is, not renamed: {reason}");
                ctx.report(o.index, Severity::Error, None, message);
                if step.action == Action::Create {
                    dropped.insert(i);
                }
                Action::Kept {
                    reason: format!("the new conversion would weaken it: {reason}"),
                }
            } else {
                Action::Rename {
                    from,
                    from_cluster,
                    from_source: None,
                }
            };
            let renames = matches!(action, Action::Rename { .. });
            if renames && step.action == Action::Create && taken.insert(i) {
                let step = &mut self.steps[i];
                step.action = action;
                step.old = Some(o.index);
                continue;
            }
            let mut leftover = self.kept(ctx, scan, o.index, String::new());
            leftover.action = action;
            if renames {
                leftover.secret = step.secret.clone();
                leftover.cluster = step.cluster.clone();
                leftover.server = step.server.clone();
                leftover.source = step.source.clone();
            }
            leftovers.push(leftover);
        }
        // A weaker conversion whose Secret would have been renamed away is not created either.
        let mut index = 0;
        self.steps.retain(|_| {
            let keep = !dropped.contains(&index);
            index += 1;
            keep
        });
        self.steps.extend(leftovers);
        for o in rest {
            let reason = self.unmanaged(ctx, o).or_else(|| {
                if let Some(why) = self.unsettled.get(&o.source) {
                    Some(why.clone())
                } else if !ctx.config.prune {
                    Some("prune=false".into())
                } else {
                    None
                }
            });
            let mut step = self.kept(ctx, scan, o.index, String::new());
            step.action = match reason {
                Some(reason) => Action::Kept { reason },
                None => Action::Prune,
            };
            self.steps.push(step);
        }
        for &(at, why) in &scan.held_owned {
            if !placed.contains(&at) {
                let step = self.kept(ctx, scan, at, why.to_string());
                self.steps.push(step);
            }
        }
    }

    /// Why an owned Secret is another run's business, not this one's: made from a source this
    /// run does not read, from a namespace `allowedNamespaces` leaves out, or outside its
    /// Argo CD namespace.
    fn unmanaged(&self, ctx: &Ctx, o: &Owned) -> Option<String> {
        let config = ctx.config;
        if !config.sources.iter().any(|s| s.name == o.kind) {
            return Some(format!(
                "made from source {}, which this run does not read (sources)",
                o.kind
            ));
        }
        if let Some(allowed) = &config.allowed_namespaces {
            if !allowed.iter().any(|n| label_value(n) == o.source.0) {
                return Some(format!(
                    "made from a kubeconfig Secret in namespace {}, which allowedNamespaces leaves out",
                    o.source.0
                ));
            }
        }
        let namespace = ctx.object(o.index).namespace();
        (namespace != config.argo_namespace).then(|| {
            format!(
                "in namespace {namespace}, not this run's argoNamespace {}",
                config.argo_namespace
            )
        })
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
        let owned = self.owned_at.get(&at).map(|&i| &scan.owned[i]);
        Step {
            action: Action::Kept { reason },
            secret: SecretId {
                namespace: object.namespace().to_string(),
                name: object.name().unwrap_or_default().to_string(),
            },
            cluster: value("name"),
            server: without_userinfo(&value("server")).0,
            source: owned.map(|o| source_id(scan, o)),
            old: Some(at),
            out: None,
            source_name: owned.map(|o| o.kind.clone()).unwrap_or_default(),
            members: Vec::new(),
            login: None,
            managed: owned.is_some_and(|o| self.unmanaged(ctx, o).is_none()),
            seq: usize::MAX,
        }
    }
}

/// The kubeconfig Secret an owned Secret's labels name: its real namespace and name when it is
/// in the input (the labels hold long names cut and hashed), else the labels as they are.
fn source_id(scan: &Scan, o: &Owned) -> SecretId {
    let (namespace, name) = scan.real_names.get(&o.source).unwrap_or(&o.source);
    SecretId {
        namespace: namespace.clone(),
        name: name.clone(),
    }
}

/// Why a conversion logging in with `after` may not replace the owned Secret `old`: it is a
/// fallback, or it logs in more weakly than `old` does (read from `old`'s `config`). Pull mode
/// carries no logins.
fn weakens(ctx: &Ctx, old: &Node, after: Login, degraded: Option<&str>) -> Option<String> {
    if ctx.config.mode == Mode::Pull {
        return None;
    }
    let object = Object::new(old);
    let config = object.secret_value("config").ok().flatten().map(|(_, c)| c);
    let before = config.as_deref().and_then(login_of_json);
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

/// The plan as people and tools see it, in the order of the Secrets' names; with the Secrets
/// to write when only the plan is made.
pub(super) fn public(ctx: &Ctx, steps: &Steps, output: Output) -> Plan {
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
    let writes = if output == Output::PlanOnly {
        steps
            .steps
            .iter()
            .filter_map(|s| match &s.out {
                Some(Out::New(node)) => {
                    let replaces = matches!(s.action, Action::Update { .. })
                        || matches!(&s.action, Action::Rename { from, .. } if *from == s.secret);
                    Some(Write {
                        node: node.clone(),
                        replaces,
                        resource_version: replaces
                            .then(|| metadata(s.old, "resourceVersion"))
                            .flatten(),
                    })
                }
                _ => None,
            })
            .collect()
    } else {
        Vec::new()
    };
    Plan { entries, writes }
}
