//! Step 2: each cluster's kubeconfig Secrets (grouped: a provider may write a plain and a user
//! kubeconfig) become one Argo CD Secret; a cluster that gets none this time says why.

use std::collections::BTreeMap;

use crate::access;
use crate::convert::argocd::ClusterSecret;
use crate::convert::login::Login;
use crate::fleet::cluster;
use crate::profiles;
use crate::sources::{Kind, SOURCE_LABEL};
use crate::validate::expiry::instant;
use crate::validate::posture::Credential;
use krm::TextStore;
use krm::finding::{Finding, Severity};

use super::argo_secret;
use super::choice;
use super::context::{Ctx, Output};
use super::draft::{self, Draft};
use super::fleet;
use super::found::{Candidate, Scan, Target};
use super::ids::{SecretId, SourceKey};
use super::lifecycle;
use super::memo;
use super::outcome::{ClusterOutcome, ClusterState};

/// How a new Secret logs in, and why it is a fallback: a rename may not weaken either.
#[derive(Debug, Clone)]
pub(super) struct Strength {
    pub login: Login,
    /// Why this conversion is worse than what the cluster's Secrets could give (a preferred
    /// kubeconfig failed, so a weaker one stood in): it may not replace a working Secret.
    pub degraded: Option<String>,
    /// Whether it logs in as the cloud identity of Argo CD's own pods (not a ServiceAccount
    /// token, which the controller renews).
    pub pod_identity: bool,
    /// What its credential lets its holder do (the fleet's posture).
    pub credential: Credential,
}

/// A cluster's converted Argo CD Secret, before it is placed.
pub(super) struct Conversion<'x, 'a> {
    /// Its place in the order of conversion, in which new Secrets go out.
    pub seq: usize,
    /// The kubeconfig Secret it is made from (input index).
    pub from: usize,
    /// Which of the config's sources took that Secret.
    pub source: usize,
    /// Its cluster's outcome (see [`Outcomes`](super::outcome::Outcomes)).
    pub outcome: usize,
    /// The cluster, as its source names it (before `namespacedNames`).
    pub cluster: String,
    /// Every kubeconfig Secret of the cluster.
    pub members: Vec<SourceKey>,
    /// Its Argo CD Secret.
    pub secret: SecretId,
    /// Its Argo CD cluster name and server (as written, user and password included).
    pub cluster_name: String,
    /// The kubeconfig's cluster entry (what `nameFrom=kubeconfig` names the cluster, as CACO).
    pub entry: String,
    /// The Secret field the kubeconfig was read from (`data.value`…), for findings about it.
    pub field: String,
    pub server: String,
    /// The kubeconfig Secret it is made from.
    pub made_from: SecretId,
    pub strength: Strength,
    /// Argo CD, in its own pod, can reach the server (not a loopback address or a bare Service
    /// name, unless the server annotation gives another).
    pub reachable: bool,
    /// The Secret it writes; `None` when the Secret of its name is not one the plan replaces.
    pub draft: Option<Draft<'x, 'a>>,
}

/// Kubeconfig Secrets whose Argo CD Secret this run does not redo, and why: such a Secret
/// stays as it is, never pruned for it.
#[derive(Debug, Clone)]
pub(super) struct Unsettled {
    pub members: Vec<SourceKey>,
    pub why: String,
}

/// What the conversions gave: a conversion for each cluster that has one, and the clusters
/// that have none this time; the text of the Secrets they write.
#[derive(Default)]
pub(super) struct Converted<'x, 'a> {
    pub conversions: Vec<Conversion<'x, 'a>>,
    pub unsettled: Vec<Unsettled>,
    pub store: TextStore,
    /// `credentials: serviceAccount`: each converted cluster's token.
    pub tokens: Vec<access::TokenNeed>,
    /// `credentials: admin` with `removeServiceAccount`: the grants of clusters whose token
    /// Secret goes, to revoke.
    pub revocable: Vec<access::TokenNeed>,
}

/// One Argo CD Secret per cluster (its kubeconfig Secrets grouped), fleet metadata applied,
/// each drafted as it is made. A host that keeps a planner gets back each cluster's conversion
/// while what it was made from stays ([`memo`](super::memo)), and nothing else is done for it.
pub(super) fn convert_all<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    output: Output,
) -> Converted<'x, 'a> {
    let mut groups: BTreeMap<(usize, &str, &str), Vec<&Candidate>> = BTreeMap::new();
    for c in &scan.candidates {
        groups
            .entry((c.source, &c.id.namespace, &c.cluster))
            .or_default()
            .push(c);
    }
    ctx.outcomes.reserve(scan.candidates.len());
    let mut converted = Converted::default();
    let mut used = fleet::Used::new(ctx.config);
    let memory = remembering(ctx, output);
    for ((source, namespace, name), members) in groups {
        let group = (source, namespace.to_string(), name.to_string());
        // Each member's stamp; a member without one is never remembered.
        let stamped = memory.and_then(|(memo, stamps, generation)| {
            let members: Result<Vec<_>, _> = members
                .iter()
                .map(|c| memo::stamp(stamps, c.index).map(|stamp| (c.key(), stamp)))
                .collect();
            members.ok().map(|m| (memo, stamps, generation, m))
        });
        if let Some((memo, stamps, generation, stamped)) = &stamped {
            let recalled = memo
                .0
                .recall(*generation, &group, stamped, ctx.now, scan, stamps);
            if let Some(kept) = recalled {
                kept.replay(ctx, &mut converted, &mut used, &members, name);
                continue;
            }
        }
        let before = Sizes::of(ctx, &converted);
        ctx.until = None;
        let mut marks = Vec::new();
        let done = convert_cluster(
            ctx,
            scan,
            output,
            &mut converted,
            &mut marks,
            (source, namespace, name),
            &members,
        );
        for &(layer, entry) in &marks {
            used.mark(layer, entry);
        }
        let Some((memo, stamps, generation, stamped)) = stamped else {
            continue;
        };
        let kept = Kept::of(ctx, scan, &converted, before, done.outcome, marks, &members);
        let made = memo::Made::now(stamped, done.lookups, scan, stamps);
        if let (Some(kept), Ok(made)) = (kept, made) {
            memo.0
                .remember(generation, group, made, ctx.now, ctx.until, kept);
        }
    }
    used.report_unused(ctx);
    if let Some((memo, _, generation)) = memory {
        memo.0.sweep(generation);
    }
    converted
}

/// The memo and the items' stamps, when the host keeps them and this plan may use them: only
/// a plan (no output written, nothing sealed, whose ciphertext is new every time).
fn remembering<'x>(
    ctx: &Ctx<'x, '_>,
    output: Output,
) -> Option<(&'x ConversionMemo, &'x [u64], memo::Generation)> {
    let (memo, stamps) = ctx.conversions?;
    if output != Output::PlanOnly || ctx.sealer.is_some() {
        memo.0.pass();
        return None;
    }
    let generation = memo.0.begin(&memo::Settings {
        config: ctx.config.clone(),
        projects: ctx.projects.clone(),
        judges_applications: ctx.judges_applications,
        timed: ctx.now.is_some(),
        resource_list: matches!(ctx.input.form, krm::Form::ResourceList { .. }),
        limits: ctx.limits.clone(),
        function_config: ctx.function_config.clone(),
    });
    Some((memo, stamps, generation))
}

/// What converting one cluster did beside its results: its outcome, and the objects it looked
/// up.
struct Done {
    outcome: usize,
    lookups: Vec<memo::Lookup>,
}

/// Converts one cluster, its kubeconfig Secrets `members`: its outcome, results, conversion or
/// why it has none, its token; the inventory entries it used go to `marks`.
fn convert_cluster<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    output: Output,
    converted: &mut Converted<'x, 'a>,
    marks: &mut Vec<(usize, usize)>,
    (source, namespace, name): (usize, &str, &str),
    members: &[&Candidate],
) -> Done {
    let keys: Vec<SourceKey> = members.iter().map(|c| c.key()).collect();
    let outcome = ctx.outcomes.add(members[0].id.clone(), name, &keys);
    let mut lookups = vec![memo::Lookup::Cluster(namespace.into(), name.into())];
    lookups.extend(members.iter().map(|m| memo::Lookup::Token(m.id.clone())));
    let mut done = Done { outcome, lookups };
    let unsettled = |why: &str| Unsettled {
        members: keys.clone(),
        why: why.to_string(),
    };
    // The source's Cluster object beside its kubeconfig Secrets (Cluster API's).
    let capi_cluster = scan
        .cluster(namespace, name)
        .filter(|_| ctx.config.sources[source].reads.clusters);
    // A ClusterProfile is both: what says how to reach the cluster, and how it stands.
    let profile =
        (ctx.config.sources[source].kind == Kind::ClusterProfiles).then_some(members[0].index);
    let described = capi_cluster.or(profile);
    if let Some(at) = described.filter(|&i| cluster::is_ignored(&ctx.item(i).node)) {
        let kind = ctx.object(at).kind().unwrap_or("Cluster");
        let message = format!(
            "ignored: the {kind} has the {} label, so it gets no Argo CD Secret",
            cluster::IGNORE_LABEL
        );
        ctx.report(at, Severity::Info, Some("metadata.labels"), message);
        let reason = format!("its {kind} has the {} label", cluster::IGNORE_LABEL);
        ctx.outcomes.set(outcome, ClusterState::Ignored, reason);
        return done;
    }
    if capi_cluster.is_some_and(|at| lifecycle::lifecycle_skips(ctx, at)) {
        let why = "skipNotReady: the Cluster is being deleted or not initialised";
        ctx.outcomes.set(outcome, ClusterState::Skipped, why);
        converted.unsettled.push(unsettled(why));
        return done;
    }
    if profile.is_some_and(|at| lifecycle::profile_skips(ctx, at)) {
        let why =
            "skipNotReady: the ClusterProfile is being deleted or its control plane is not healthy";
        ctx.outcomes.set(outcome, ClusterState::Skipped, why);
        converted.unsettled.push(unsettled(why));
        return done;
    }
    let said = ctx.results.len();
    let failed = |ctx: &mut Ctx, converted: &mut Converted| {
        let why = "its kubeconfig Secret could not be converted";
        let first_error = ctx.results[said..]
            .iter()
            .find(|f| f.severity == Severity::Error)
            .map(|f| match &f.field {
                Some(field) => format!("{field}: {}", f.message),
                None => f.message.clone(),
            });
        let reason = first_error.unwrap_or_else(|| why.to_string());
        ctx.outcomes.set(outcome, ClusterState::Failed, reason);
        converted.unsettled.push(unsettled(why));
    };
    let Some(chosen) = choice::choose(ctx, members) else {
        failed(ctx, converted);
        return done;
    };
    let (from, degraded, reachable) = (
        chosen.member.index,
        chosen.degraded.clone(),
        chosen.read.reachable,
    );
    let Some((mut secret, read, entry)) = argo_secret::cluster_secret(ctx, namespace, name, chosen)
    else {
        failed(ctx, converted);
        return done;
    };
    if let Some(o) = ctx.outcomes.get(outcome) {
        o.source = SecretId::new(&secret.source_namespace, &secret.source_name);
    }
    let paused = capi_cluster.is_some_and(|at| cluster::lifecycle(&ctx.item(at).node).paused);
    if paused {
        let reason = "its Cluster is paused: Argo CD skips reconciling it";
        ctx.outcomes.set(outcome, ClusterState::Paused, reason);
    }
    let control_plane = capi_cluster.and_then(|at| fleet::control_plane_key(&ctx.item(at).node));
    if let Some(key) = &control_plane {
        done.lookups.push(memo::Lookup::ControlPlane(key.clone()));
    }
    let cluster = capi_cluster.map(|at| {
        (
            at,
            control_plane.and_then(|k| scan.control_planes.get(&k).copied()),
        )
    });
    fleet::apply(ctx, &mut secret, from, cluster, profile, marks);
    if profile.is_some() {
        // As the reference consumer names the profile on its Secret: a label to select by,
        // bounded, and the whole name.
        let fields = &mut secret.fields;
        let key = profiles::PROFILE_NAME_KEY.to_string();
        fields
            .labels
            .insert(key.clone(), profiles::names::label_value(name));
        fields.annotations.insert(key, name.to_string());
    }
    let service_account = ctx.config.access.mode == access::CredentialMode::ServiceAccount;
    let token = scan.tokens.get(&SecretId::new(
        &secret.source_namespace,
        &secret.source_name,
    ));
    let had_token = token.is_some();
    // What the token's times decide (renewed, expired) holds until the next of them.
    if let (Some(now), Some(token)) = (ctx.now, token) {
        ctx.holds_until(token.changes_after(now, ctx.config.access.ttl));
    }
    if !service_account && had_token && ctx.config.access.remove_account {
        // Back to admin: its token goes, and what it was granted may be revoked.
        converted
            .revocable
            .push(token_login(ctx, scan, &secret, from, described).0);
    }
    let mut binding = None;
    if service_account {
        let (need, login) = token_login(ctx, scan, &secret, from, described);
        impersonation_said(ctx, from, &need);
        binding = need.binding.clone();
        converted.tokens.push(need);
        match login {
            access::Login::Token { config, expires } => {
                secret.config = *config;
                secret
                    .fields
                    .annotations
                    .insert(access::EXPIRES_ANNOTATION.into(), instant(expires));
            }
            access::Login::Waiting(why) => {
                ctx.report(from, Severity::Warning, None, format!("credentials=serviceAccount: {why}; an Argo CD Secret it has is kept as it is"));
                ctx.outcomes
                    .set(outcome, ClusterState::Waiting, why.clone());
                converted.unsettled.push(unsettled(&why));
                return done;
            }
        }
    }
    if let Some(label) = ctx.config.sources[source].label() {
        secret
            .fields
            .labels
            .insert(SOURCE_LABEL.into(), label.to_string());
    }
    let conversion = Conversion {
        seq: converted.conversions.len(),
        from,
        source,
        outcome,
        cluster: name.to_string(),
        members: keys,
        secret: SecretId::new(&secret.namespace, &secret.secret_name),
        cluster_name: secret.cluster_name.clone(),
        entry,
        field: read.field.clone(),
        server: secret.server.clone(),
        made_from: SecretId::new(&secret.source_namespace, &secret.source_name),
        strength: Strength {
            // A ServiceAccount token expires, and capi2argo-controller renews it.
            login: if service_account {
                Login::Renewing
            } else {
                secret.config.login()
            },
            degraded,
            pod_identity: !service_account && secret.config.logs_in_as_pod_identity(),
            credential: Credential::of_cluster_config(&secret.config, service_account)
                .bound_as_recorded(binding.as_deref()),
        },
        reachable,
        draft: None,
    };
    let kubeconfig = draft::Read {
        from,
        outcome,
        field: &read.field,
        encoded: read.encoded,
        decoded: &read.text,
        profile: profile.is_some(),
    };
    done.lookups
        .push(memo::Lookup::Secret(conversion.secret.clone()));
    let draft = draft::draft(ctx, scan, &mut converted.store, output, secret, kubeconfig);
    converted.conversions.push(Conversion {
        draft,
        ..conversion
    });
    done
}

/// Each cluster's conversion, kept by a host that plans again and again (see
/// [`memo`](super::memo)).
#[derive(Default)]
pub struct ConversionMemo(memo::Memo<Kept>);

impl ConversionMemo {
    /// How many clusters' conversions it keeps.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Of the last plan: how many clusters' conversions were given back, and how many were
    /// made.
    pub fn last_plan(&self) -> (usize, usize) {
        self.0.last_plan()
    }
}

/// How much each list converting has filled held before a cluster was converted: what it
/// added is what is kept of it.
#[derive(Clone, Copy)]
struct Sizes {
    results: usize,
    conversions: usize,
    unsettled: usize,
    tokens: usize,
    revocable: usize,
}

impl Sizes {
    fn of(ctx: &Ctx, converted: &Converted) -> Sizes {
        Sizes {
            results: ctx.results.len(),
            conversions: converted.conversions.len(),
            unsettled: converted.unsettled.len(),
            tokens: converted.tokens.len(),
            revocable: converted.revocable.len(),
        }
    }
}

/// What converting one cluster gave, as the memo keeps it: given back, it is what converting
/// the cluster again gives.
#[derive(Clone)]
pub(super) struct Kept {
    results: Vec<Finding>,
    outcome: Option<ClusterOutcome>,
    /// Why it has no conversion this time, when it has none.
    unsettled: Vec<String>,
    tokens: Vec<access::TokenNeed>,
    revocable: Vec<access::TokenNeed>,
    /// The inventory entries it used.
    marks: Vec<(usize, usize)>,
    conversion: Option<KeptConversion>,
}

/// A conversion as the memo keeps it.
struct KeptConversion {
    /// Which of the cluster's kubeconfig Secrets it is made from.
    member: usize,
    /// The conversion, its draft apart.
    conversion: Conversion<'static, 'static>,
    draft: Option<KeptDraft>,
}

impl Clone for KeptConversion {
    fn clone(&self) -> Self {
        KeptConversion {
            member: self.member,
            conversion: self.conversion.undrafted(),
            draft: self.draft.clone(),
        }
    }
}

/// A draft as the memo keeps it: its Secret as a tree, kept only where the plan may write it.
#[derive(Clone)]
struct KeptDraft {
    invalid: Vec<String>,
    changed: Vec<String>,
    out: Option<yaml::Node<'static>>,
    view: Option<Box<crate::appsets::ClusterView>>,
    replaces: Option<(String, Login)>,
}

impl Conversion<'_, '_> {
    /// The conversion without its draft.
    fn undrafted(&self) -> Conversion<'static, 'static> {
        Conversion {
            seq: self.seq,
            from: self.from,
            source: self.source,
            outcome: self.outcome,
            cluster: self.cluster.clone(),
            members: self.members.clone(),
            secret: self.secret.clone(),
            cluster_name: self.cluster_name.clone(),
            entry: self.entry.clone(),
            field: self.field.clone(),
            server: self.server.clone(),
            made_from: self.made_from.clone(),
            strength: self.strength.clone(),
            reachable: self.reachable,
            draft: None,
        }
    }
}

impl Kept {
    /// What converting the cluster of `members` added since `before`; `None` when it cannot be
    /// kept (a draft written into the output's text, not a tree).
    fn of(
        ctx: &mut Ctx,
        scan: &Scan,
        converted: &Converted,
        before: Sizes,
        outcome: usize,
        marks: Vec<(usize, usize)>,
        members: &[&Candidate],
    ) -> Option<Kept> {
        let conversion = match converted.conversions.get(before.conversions) {
            None => None,
            Some(c) => Some(KeptConversion {
                member: members.iter().position(|m| m.index == c.from)?,
                conversion: c.undrafted(),
                draft: match &c.draft {
                    None => None,
                    Some(draft) => Some(KeptDraft::of(draft, scan, c)?),
                },
            }),
        };
        Some(Kept {
            results: ctx.results[before.results..].to_vec(),
            outcome: ctx.outcomes.get(outcome).cloned(),
            unsettled: converted.unsettled[before.unsettled..]
                .iter()
                .map(|u| u.why.clone())
                .collect(),
            tokens: converted.tokens[before.tokens..].to_vec(),
            revocable: converted.revocable[before.revocable..].to_vec(),
            marks,
            conversion,
        })
    }

    /// Says and adds again what converting the cluster of `members` gave.
    fn replay<'x, 'a>(
        self,
        ctx: &mut Ctx<'x, 'a>,
        converted: &mut Converted<'x, 'a>,
        used: &mut fleet::Used,
        members: &[&Candidate],
        name: &str,
    ) {
        let keys: Vec<SourceKey> = members.iter().map(|c| c.key()).collect();
        let outcome = ctx.outcomes.add(members[0].id.clone(), name, &keys);
        if let (Some(now), Some(kept)) = (ctx.outcomes.get(outcome), self.outcome) {
            *now = kept;
        }
        ctx.results.extend(self.results);
        converted
            .unsettled
            .extend(self.unsettled.into_iter().map(|why| Unsettled {
                members: keys.clone(),
                why,
            }));
        converted.tokens.extend(self.tokens);
        converted.revocable.extend(self.revocable);
        for (layer, entry) in self.marks {
            used.mark(layer, entry);
        }
        if let Some(kept) = self.conversion {
            converted.conversions.push(Conversion {
                seq: converted.conversions.len(),
                from: members[kept.member].index,
                outcome,
                draft: kept.draft.map(KeptDraft::into_draft),
                ..kept.conversion
            });
        }
    }
}

impl KeptDraft {
    /// `draft` as the memo keeps it: a Secret that stays as it is (its draft changes nothing of
    /// the owned Secret it replaces, made from this cluster's kubeconfig) is never written, so
    /// neither its tree nor its view is kept. `None` when the draft is not a tree.
    fn of(draft: &Draft, scan: &Scan, conversion: &Conversion) -> Option<KeptDraft> {
        let unchanged = draft.changed.is_empty()
            && matches!(scan.target(&conversion.secret),
                Target::Replaces(owned) if !owned.made_from_another(&conversion.members));
        let out = match &draft.out {
            None => None,
            Some(_) if unchanged => None,
            Some(krm::Out::New(node)) => Some(node.clone()),
            Some(_) => return None,
        };
        Some(KeptDraft {
            invalid: draft.invalid.clone(),
            changed: draft.changed.clone(),
            out,
            view: draft.view.clone().filter(|_| !unchanged),
            replaces: draft.replaces.clone(),
        })
    }

    fn into_draft<'x, 'a>(self) -> Draft<'x, 'a> {
        Draft {
            invalid: self.invalid,
            changed: self.changed,
            out: self.out.map(krm::Out::New),
            view: self.view,
            replaces: self.replaces,
        }
    }
}

/// `serviceAccountRole: impersonate`: an error on the cluster where Argo CD does not
/// impersonate (its own credential may only read: every sync would fail), and a warning for
/// each ServiceAccount an AppProject names that is not set up.
fn impersonation_said(ctx: &mut Ctx, from: usize, need: &access::TokenNeed) {
    let Some((projects, listed)) = &ctx.projects else {
        return;
    };
    let cm = crate::projects::ARGOCD_CM;
    let key = crate::projects::IMPERSONATION_KEY;
    let said = match (projects.enabled, listed) {
        (Some(true), _) => None,
        (Some(false), _) => Some((
            Severity::Error,
            format!(
                "serviceAccountRole=impersonate: {cm} does not set {key} to \"true\", so Argo CD syncs with its own credential, which may only read: every sync to this cluster would fail. Turn impersonation on in {cm}"
            ),
        )),
        (None, true) => Some((
            Severity::Error,
            format!(
                "serviceAccountRole=impersonate: there is no {cm} in {}, so Argo CD does not impersonate and its own credential may only read: every sync to this cluster would fail. Set {key}: \"true\" in {cm}",
                ctx.config.argo_namespace
            ),
        )),
        (None, false) => Some((
            Severity::Warning,
            format!(
                "serviceAccountRole=impersonate: {cm} is not in the input, so whether Argo CD impersonates ({key}) is not known; without it every sync to this cluster would fail"
            ),
        )),
    };
    let notes = need.not_provisioned.clone();
    if let Some((severity, message)) = said {
        ctx.report(from, severity, None, message);
    }
    for note in notes {
        ctx.report(
            from,
            Severity::Warning,
            None,
            format!("serviceAccountRole=impersonate: {note}"),
        );
    }
}

/// The rotation requests on a cluster's kubeconfig Secret and on its Cluster, either one.
fn rotation_requests(ctx: &Ctx, from: usize, cluster: Option<usize>) -> Vec<String> {
    let mut values: Vec<String> = [Some(from), cluster]
        .into_iter()
        .flatten()
        .filter_map(|at| ctx.object(at).annotation(access::ROTATE_ANNOTATION))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    values.sort();
    values.dedup();
    values
}

/// `credentials: serviceAccount`: the cluster's token need, and what its Argo CD Secret logs in
/// with (its token, or nothing yet).
fn token_login(
    ctx: &Ctx,
    scan: &Scan,
    secret: &ClusterSecret,
    from: usize,
    cluster: Option<usize>,
) -> (access::TokenNeed, access::Login) {
    let kubeconfig = SecretId::new(&secret.source_namespace, &secret.source_name);
    let version = ctx
        .object(from)
        .node
        .path(&["metadata", "resourceVersion"])
        .and_then(|n| n.as_str())
        .map(String::from);
    let of = access::NeedOf {
        cluster: secret.cluster_name.clone(),
        kubeconfig: kubeconfig.clone(),
        kubeconfig_version: version,
        secret: SecretId::new(
            &ctx.config.argo_namespace,
            &access::token_secret_name(&secret.secret_name),
        ),
        namespaces: secret.fields.namespaces.clone(),
        cluster_resources: secret.fields.cluster_resources.unwrap_or(false),
        rotate: rotation_requests(ctx, from, cluster),
        impersonation: ctx.projects.as_ref().map(|(projects, _)| {
            let settings = &ctx.config.access;
            let role_of = |project: &str| settings.impersonation_role(project).to_string();
            crate::projects::accounts(
                projects,
                &secret.server,
                secret.fields.namespaces.as_deref(),
                &role_of,
            )
        }),
    };
    access::least_privilege(
        &ctx.config.access,
        ctx.now,
        &secret.server,
        &secret.config,
        scan.tokens.get(&kubeconfig),
        of,
    )
}

/// The admin credential of the kubeconfig Secret `id` as the input holds it, read only to reach
/// its cluster (revoking a token of a cluster that is no longer converted); `Err`: why not.
pub(super) fn admin_access(ctx: &Ctx, id: &SecretId) -> Result<access::AdminAccess, String> {
    let object = ctx
        .input
        .items
        .iter()
        .map(|item| krm::object::Object::new(&item.node))
        .find(|o| o.kind() == Some("Secret") && SecretId::of(*o) == *id)
        .ok_or_else(|| format!("its kubeconfig Secret {id} is gone"))?;
    let text = ctx
        .config
        .sources
        .iter()
        .flat_map(|s| &s.keys)
        .find_map(|key| object.secret_value(key).ok().flatten())
        .map(|(_, text)| text)
        .ok_or_else(|| format!("its kubeconfig Secret {id} holds no kubeconfig"))?;
    let reading = crate::convert::kubeconfig::read(
        &text,
        None,
        crate::convert::kubeconfig::Credentials::Read,
        ctx.limits,
    );
    let connection = reading
        .connection
        .ok_or_else(|| format!("its kubeconfig Secret {id} cannot be read as a kubeconfig"))?;
    access::AdminAccess::of(&connection.server, &connection.config)
}
