//! The plan as people and tools see it ([`Plan`]): one entry per Argo CD cluster Secret, what
//! became of each cluster, what the guards held back, the tokens and token Secrets of
//! `credentials: serviceAccount`, what ApplicationSets do to Applications, and (for
//! `capi2argo plan`) the Secrets to write. Made last, from every step's decisions;
//! [`view`](super::view) shows it.

use krm::Out;
use yaml::Node;

use crate::access;
use crate::appsets::Applications;

use super::context::{Ctx, Output};
use super::decision::{Action, Held, Step, Steps};
use super::ids::{SecretId, SourceKey};
use super::outcome::ClusterOutcome;
use super::tokens::TokenDelete;

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
    /// What became of each cluster, in the order of their kubeconfig Secrets: one that failed
    /// to convert is here even when it never had an Argo CD Secret.
    pub clusters: Vec<ClusterOutcome>,
    /// The guards that held part of the plan back, in the order they ran.
    pub guards: Vec<Held>,
    /// When a guard held: every setting (`maxPrune=5`, …) the whole change needs to go through
    /// in one run, judged on the plan before any guard held it.
    pub overrides: Vec<String>,
    /// The Secrets to create or replace, in the order they are written.
    pub(crate) writes: Vec<Write>,
    /// What Argo CD's cluster Secrets log in with (`credentials`).
    pub credentials: access::CredentialMode,
    /// `credentials: serviceAccount`: every converted cluster's token, and whether a new one is
    /// due (the controller mints those).
    pub tokens: Vec<access::TokenNeed>,
    /// Token Secrets no Argo CD Secret logs in with any more: deleted after the plan's other
    /// requests.
    pub token_deletes: Vec<TokenDelete>,
    /// What the plan makes Argo CD's ApplicationSets do to Applications, judged from the
    /// ApplicationSets and Applications of the input (none there: nothing judged).
    pub applications: Applications,
    /// Its Secrets are written sealed (`seal`): output to commit, not requests to an API server.
    pub sealed: bool,
    /// What the Argo CD cluster Secrets hold after the plan, by what a holder can do with it:
    /// how many of each kind ([`Credential::kind`](crate::validate::posture::Credential::kind)),
    /// admin keys first.
    pub posture: Vec<(&'static str, usize)>,
}

impl Plan {
    /// Whether, once its requests are carried out, the plan of the objects as they then stand
    /// does nothing more: a plan of what the function itself wrote changes nothing. Not while
    /// a token is due, or a replaced token's binding waits to be revoked (that happens in the
    /// plan that sees Argo CD's Secret carry its successor), or a token Secret goes.
    pub fn settled_when_carried_out(&self) -> bool {
        self.token_deletes.is_empty()
            && self
                .tokens
                .iter()
                .all(|t| t.due.is_none() && t.retired().is_empty())
    }
}

/// What the Argo CD cluster Secrets hold once the plan is carried out: a conversion's credential
/// where it is written or already there, the existing Secret's where a guard kept it or nothing
/// converted (a cluster that failed this time).
fn posture(ctx: &Ctx, steps: &Steps) -> Vec<(&'static str, usize)> {
    use crate::validate::posture::Credential;
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    let mut count = |c: &Credential| match counts.iter_mut().find(|(k, _)| *k == c.kind()) {
        Some((_, n)) => *n += 1,
        None => counts.push((c.kind(), 1)),
    };
    for s in &steps.steps {
        let kept = matches!(s.action, Action::Kept { .. });
        match (&s.action, &s.strength) {
            (Action::Prune, _) => {}
            (_, Some(strength)) if !kept => count(&strength.credential),
            _ => {
                let Some(object) = s.old.map(|i| ctx.object(i)) else {
                    continue;
                };
                let config = object.secret_value("config").ok().flatten();
                let Some(config) = config.and_then(|(_, c)| serde_json::from_str(&c).ok()) else {
                    continue;
                };
                let renewed = object.annotation(access::EXPIRES_ANNOTATION).is_some();
                count(&Credential::of_config(&config, renewed));
            }
        }
    }
    // Admin keys first: what the line is for.
    counts.sort_by_key(|(k, n)| (!k.starts_with("an admin key"), std::cmp::Reverse(*n)));
    counts
}

/// The plan as people and tools see it, in the order of the Secrets' names; with the Secrets
/// to write when only the plan is made.
pub(super) fn plan(ctx: &mut Ctx, steps: &Steps, output: Output) -> Plan {
    let mut outcomes = std::mem::take(&mut ctx.outcomes);
    for s in &steps.steps {
        if s.action == Action::Prune {
            continue;
        }
        let outcome = match (s.outcome, &s.source) {
            (Some(at), _) => outcomes.get(at),
            // A Secret kept for a cluster that failed this time is still its Secret.
            (None, Some(source)) => outcomes
                .of_key(&SourceKey::of(&source.namespace, &source.name))
                .filter(|o| o.secret.is_none()),
            (None, None) => None,
        };
        if let Some(o) = outcome {
            o.secret = Some(s.secret.clone());
        }
    }
    let ctx = &*ctx;
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
    // Compared by reference: a fleet's plan sorts ten thousand entries, and a key of copies
    // made every comparison a dozen allocations.
    fn key(
        e: &Entry,
    ) -> (
        &SecretId,
        &str,
        &str,
        &str,
        &Option<SecretId>,
        &Option<String>,
    ) {
        (
            &e.secret,
            e.action.word(),
            &e.cluster,
            &e.server,
            &e.source,
            &e.uid,
        )
    }
    entries.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
    let writes = if output == Output::PlanOnly {
        steps
            .steps
            .iter()
            .filter_map(|s| write_of(s, &metadata))
            .collect()
    } else {
        Vec::new()
    };
    Plan {
        entries,
        writes,
        clusters: outcomes.finish(),
        guards: steps.held.clone(),
        overrides: steps.overrides.clone(),
        credentials: access::CredentialMode::Admin,
        tokens: Vec::new(),
        token_deletes: Vec::new(),
        applications: Applications::default(),
        sealed: ctx.sealer.is_some(),
        posture: posture(ctx, steps),
    }
}

/// The write a step makes, when only the plan is made (its new Secret kept as a tree).
fn write_of(
    step: &Step,
    metadata: &dyn Fn(Option<usize>, &str) -> Option<String>,
) -> Option<Write> {
    let Some(Out::New(node)) = &step.out else {
        return None;
    };
    let replaces = matches!(step.action, Action::Update { .. })
        || matches!(&step.action, Action::Rename { from, .. } if *from == step.secret);
    Some(Write {
        node: node.clone(),
        replaces,
        resource_version: replaces
            .then(|| metadata(step.old, "resourceVersion"))
            .flatten(),
    })
}
