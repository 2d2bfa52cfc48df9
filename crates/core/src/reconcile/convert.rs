//! Step 2: each cluster's kubeconfig Secrets (grouped: a provider may write a plain and a user
//! kubeconfig) become one Argo CD Secret; a cluster that gets none this time says why.

use std::collections::BTreeMap;

use crate::access;
use crate::config::{Mode, NameFrom};
use crate::convert::argocd::{ClusterConfig, ClusterSecret};
use crate::convert::kubeconfig::{self, without_userinfo};
use crate::convert::login::Login;
use crate::convert::meta as names;
use crate::fleet::cluster;
use crate::profiles;
use crate::sources::{Kind, SERVER_ANNOTATION, SOURCE_LABEL};
use crate::validate::expiry::instant;
use krm::TextStore;
use krm::finding::{Finding, Severity};
use krm::object::Object;

use super::choice::{self, Chosen, Read};
use super::context::{Ctx, Output};
use super::draft::{self, Draft};
use super::fleet;
use super::found::{Candidate, Scan};
use super::ids::{SecretId, SourceKey};
use super::outcome::ClusterState;

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

/// The name of a cluster's Argo CD Secret (in the config's Argo CD namespace).
pub(super) fn secret_name(ctx: &Ctx, namespace: &str, cluster: &str) -> String {
    let base = if ctx.config.namespaced_names {
        format!("cluster-{namespace}-{cluster}")
    } else {
        format!("cluster-{cluster}")
    };
    names::dns1123_subdomain(&base)
}

/// One Argo CD Secret per cluster (its kubeconfig Secrets grouped), fleet metadata applied,
/// each drafted as it is made.
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
    let mut converted = Converted::default();
    let mut used = fleet::Used::new(ctx.config);
    for ((source, namespace, name), members) in groups {
        let keys: Vec<SourceKey> = members.iter().map(|c| c.key()).collect();
        let outcome = ctx.outcomes.add(members[0].id.clone(), name, &keys);
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
            continue;
        }
        if capi_cluster.is_some_and(|at| lifecycle_skips(ctx, at)) {
            let why = "skipNotReady: the Cluster is being deleted or not initialised";
            ctx.outcomes.set(outcome, ClusterState::Skipped, why);
            converted.unsettled.push(unsettled(why));
            continue;
        }
        if profile.is_some_and(|at| profile_skips(ctx, at)) {
            let why = "skipNotReady: the ClusterProfile is being deleted or its control plane is not healthy";
            ctx.outcomes.set(outcome, ClusterState::Skipped, why);
            converted.unsettled.push(unsettled(why));
            continue;
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
        let Some(chosen) = choice::choose(ctx, &members) else {
            failed(ctx, &mut converted);
            continue;
        };
        let (from, degraded, reachable) = (
            chosen.member.index,
            chosen.degraded.clone(),
            chosen.read.reachable,
        );
        let Some((mut secret, read, entry)) = cluster_secret(ctx, namespace, name, chosen) else {
            failed(ctx, &mut converted);
            continue;
        };
        if let Some(o) = ctx.outcomes.get(outcome) {
            o.source = SecretId::new(&secret.source_namespace, &secret.source_name);
        }
        let paused = capi_cluster.is_some_and(|at| cluster::lifecycle(&ctx.item(at).node).paused);
        if paused {
            let reason = "its Cluster is paused: Argo CD skips reconciling it";
            ctx.outcomes.set(outcome, ClusterState::Paused, reason);
        }
        fleet::apply(
            ctx,
            &mut secret,
            from,
            capi_cluster,
            profile,
            scan,
            &mut used,
        );
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
        let had_token = scan.tokens.contains_key(&SecretId::new(
            &secret.source_namespace,
            &secret.source_name,
        ));
        if !service_account && had_token && ctx.config.access.remove_account {
            // Back to admin: its token goes, and what it was granted may be revoked.
            converted
                .revocable
                .push(token_login(ctx, scan, &secret, from).0);
        }
        if service_account {
            let (need, login) = token_login(ctx, scan, &secret, from);
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
                    continue;
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
        let draft = draft::draft(ctx, scan, &mut converted.store, output, secret, kubeconfig);
        converted.conversions.push(Conversion {
            draft,
            ..conversion
        });
    }
    used.report_unused(ctx);
    converted
}

/// `credentials: serviceAccount`: the cluster's token need, and what its Argo CD Secret logs in
/// with (its token, or nothing yet).
fn token_login(
    ctx: &Ctx,
    scan: &Scan,
    secret: &ClusterSecret,
    from: usize,
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

/// Reports where the Cluster stands in its life; whether it gets no Argo CD Secret this time.
fn lifecycle_skips(ctx: &mut Ctx, at: usize) -> bool {
    let life = cluster::lifecycle(&ctx.item(at).node);
    let skip = ctx.config.skip_not_ready && life.not_ready();
    let outcome = if skip {
        "skipped (skipNotReady): no Argo CD Secret this time, an existing one is kept"
    } else {
        "Argo CD may fail to reach it (skipNotReady=true waits)"
    };
    let conditions = if cluster::is_v1beta2(&ctx.item(at).node) {
        "status.conditions"
    } else {
        "status.v1beta2.conditions"
    };
    if life.deleting {
        let marked = ctx
            .item(at)
            .node
            .path(&["metadata", "deletionTimestamp"])
            .is_some_and(|t| !t.is_null());
        let field = if marked {
            "metadata.deletionTimestamp"
        } else {
            conditions
        };
        let message = format!("the Cluster is being deleted: {outcome}");
        ctx.report(at, Severity::Warning, Some(field), message);
    }
    if life.initialized == Some(false) {
        let message = format!("the Cluster's control plane is not initialised yet: {outcome}");
        ctx.report(at, Severity::Warning, Some("status"), message);
    }
    for c in &life.unavailable {
        let why = match (c.reason.is_empty(), c.message.is_empty()) {
            (false, false) => format!(" ({}: {})", c.reason, c.message),
            (false, true) => format!(" ({})", c.reason),
            _ => String::new(),
        };
        let message = format!(
            "the Cluster's condition {} is False{why}: {outcome}",
            c.type_
        );
        ctx.report(at, Severity::Warning, Some(conditions), message);
    }
    skip
}

/// Reports where a ClusterProfile's cluster stands (being deleted, its control plane not
/// healthy as its cluster manager says); whether it gets no Argo CD Secret this time.
fn profile_skips(ctx: &mut Ctx, at: usize) -> bool {
    let node = &ctx.item(at).node;
    let deleting = node
        .path(&["metadata", "deletionTimestamp"])
        .is_some_and(|t| !t.is_null());
    let unhealthy = profiles::condition(node, profiles::CONTROL_PLANE_HEALTHY)
        .filter(|(healthy, _, _)| !healthy)
        .map(
            |(_, reason, message)| match (reason.is_empty(), message.is_empty()) {
                (false, false) => format!(" ({reason}: {message})"),
                (false, true) => format!(" ({reason})"),
                _ => String::new(),
            },
        );
    let skip = ctx.config.skip_not_ready && (deleting || unhealthy.is_some());
    let outcome = if skip {
        "skipped (skipNotReady): no Argo CD Secret this time, an existing one is kept"
    } else {
        "Argo CD may fail to reach it (skipNotReady=true waits)"
    };
    if deleting {
        let message = format!("the ClusterProfile is being deleted: {outcome}");
        ctx.report(
            at,
            Severity::Warning,
            Some("metadata.deletionTimestamp"),
            message,
        );
    }
    if let Some(why) = unhealthy {
        let message = format!(
            "the ClusterProfile's condition {} is False{why}: {outcome}",
            profiles::CONTROL_PLANE_HEALTHY
        );
        ctx.report(at, Severity::Warning, Some("status.conditions"), message);
    }
    skip
}

/// The Argo CD Secret of a cluster from the kubeconfig chosen for it: its server, its login (or
/// none in pull mode), its names.
fn cluster_secret<'x>(
    ctx: &mut Ctx<'x, '_>,
    namespace: &str,
    cluster: &str,
    chosen: Chosen<'_, 'x>,
) -> Option<(ClusterSecret, Read<'x>, String)> {
    let member = chosen.member;
    let mut read = chosen.read;
    let field = read.field.clone();
    let connection = read.connection.take()?;
    let object = ctx.object(member.index);
    let server = match server_of(ctx, object, &connection.server, &field) {
        Ok(server) => server,
        Err(finding) => {
            ctx.results.push(object.finding(finding));
            return None;
        }
    };
    let (server, config) = match ctx.config.mode {
        Mode::Pull => pulled(ctx, object, &field, server, connection.config),
        Mode::Push => {
            pushed(ctx, object, &field, &server, &connection.config);
            (server, connection.config)
        }
    };
    let from_kubeconfig = ctx.config.name_from == NameFrom::Kubeconfig
        || ctx.config.sources[member.source].names_from_kubeconfig();
    let named = if from_kubeconfig {
        connection.cluster_entry.as_str()
    } else {
        cluster
    };
    let cluster_name = if ctx.config.namespaced_names {
        format!("{namespace}-{named}")
    } else {
        named.to_string()
    };
    let profiled = ctx.config.sources[member.source].kind == Kind::ClusterProfiles;
    let secret = ClusterSecret {
        secret_name: if profiled && !ctx.config.namespaced_names {
            profiles::names::secret_name(cluster)
        } else {
            secret_name(ctx, namespace, cluster)
        },
        namespace: ctx.config.argo_namespace.clone(),
        cluster_name,
        server,
        config,
        source_name: member.id.name.clone(),
        source_namespace: member.id.namespace.clone(),
        annotations: Vec::new(),
        fields: Default::default(),
        shard: None,
    };
    Some((secret, read, connection.cluster_entry))
}

/// Pull mode: the login left out, and any user and password in the server's or proxy's URL.
fn pulled(
    ctx: &mut Ctx,
    object: Object,
    field: &str,
    server: String,
    config: ClusterConfig,
) -> (String, ClusterConfig) {
    let mut config = config.without_login();
    let (clean, had) = without_userinfo(&server);
    let (proxy, proxy_had) = match &config.proxy_url {
        Some(p) => {
            let (p, had) = without_userinfo(p);
            (Some(p), had)
        }
        None => (None, false),
    };
    if !(had || proxy_had) {
        return (server, config);
    }
    config.proxy_url = proxy;
    ctx.results.push(
        object.finding(
            Finding::info(
                "pull mode: the user and password in the server or proxy URL are left out",
            )
            .at(field),
        ),
    );
    (clean, config)
}

/// Push mode: warnings for credentials in URLs and for a token that expires on its own.
fn pushed(ctx: &mut Ctx, object: Object, field: &str, server: &str, config: &ClusterConfig) {
    let in_url = without_userinfo(server).1
        || config
            .proxy_url
            .as_deref()
            .is_some_and(|p| without_userinfo(p).1);
    if in_url {
        ctx.results.push(object.finding(
            Finding::warning(
                "kubeconfig server or proxy-url carries a user and password in the URL; they go into the Argo CD Secret as they are",
            )
            .at(field),
        ));
    }
    if config.login() == Login::Expiring {
        ctx.results.push(object.finding(
            Finding::warning(
                "kubeconfig token expires on its own (an EKS token lasts 15 minutes): Argo CD loses access to the cluster; give it a login it renews (the provider's user kubeconfig, or argocd-k8s-auth)",
            )
            .at(field),
        ));
    }
}

/// The server Argo CD connects to: the kubeconfig's, or the Secret's server annotation. A
/// kubeconfig pointing at an address only its own pod can reach gets a warning saying how
/// to give the right one.
fn server_of(ctx: &mut Ctx, object: Object, server: &str, field: &str) -> Result<String, Finding> {
    if let Some(set) = object.annotation(SERVER_ANNOTATION) {
        let set = set.trim_end_matches('/');
        if !kubeconfig::is_http_url(set) {
            return Err(Finding::error(format!(
                "{SERVER_ANNOTATION} is not an https:// (or http://) URL with a host"
            ))
            .at("metadata.annotations"));
        }
        ctx.results.push(
            object.finding(
                Finding::info(format!(
                    "the server comes from the {SERVER_ANNOTATION} annotation, not the kubeconfig"
                ))
                .at("metadata.annotations"),
            ),
        );
        return Ok(set.to_string());
    }
    // Under every source: a bare host name is a Service of the writer's own namespace
    // (HyperShift's `kube-apiserver`), or a name only DNS search domains of some hosts resolve.
    if let Some(reach) = kubeconfig::unreachable_host(server) {
        ctx.results.push(object.finding(
            Finding::warning(format!(
                "the kubeconfig's server is {reach}: Argo CD cannot reach it there; give the address it can reach in the {SERVER_ANNOTATION} annotation"
            ))
            .at(field),
        ));
    }
    Ok(server.to_string())
}
