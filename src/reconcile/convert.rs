//! Step 2: each cluster's kubeconfig Secrets (grouped: a provider may write a plain and a user
//! kubeconfig) become one Argo CD Secret, handed to the planner as soon as it is made.

use std::collections::BTreeMap;

use crate::config::{Mode, NameFrom};
use crate::convert::argocd::{ClusterConfig, ClusterSecret, Sensitive};
use crate::convert::kubeconfig::{self, Credentials, without_userinfo};
use crate::convert::login::Login;
use crate::convert::meta as names;
use crate::fleet::cluster;
use crate::fleet::source::{SERVER_ANNOTATION, SOURCE_LABEL, Variant};
use crate::krm::finding::{Finding, Severity};
use crate::krm::object::Object;

use super::plan::Planner;
use super::scan::{Candidate, Scan};
use super::{Ctx, fleet, source_key};

/// A cluster's converted Argo CD Secret, before it is placed.
pub(super) struct Conversion {
    /// The kubeconfig Secret it is made from (input index).
    pub from: usize,
    /// Which of the config's sources took that Secret.
    pub kind: usize,
    /// The cluster, as its source names it (before `namespacedNames`).
    pub cluster: String,
    /// Every kubeconfig Secret of the cluster, as the owned Secrets' labels name them.
    pub members: Vec<(String, String)>,
    pub secret: ClusterSecret,
    /// Why this conversion is worse than what the cluster's Secrets could give (a preferred
    /// kubeconfig failed, so a weaker one stood in): it may not replace a working Secret.
    pub degraded: Option<String>,
    /// Argo CD, in its own pod, can reach the server (not a loopback address or a bare Service
    /// name, unless the server annotation gives another).
    pub reachable: bool,
}

/// What reading one kubeconfig Secret gave.
struct Read {
    connection: Option<kubeconfig::Connection>,
    /// The Secret field the kubeconfig was read from (`data.value`, `stringData.config`…).
    field: String,
    diagnostics: Vec<Finding>,
    /// Its login needs a person: another kubeconfig of the cluster is the right choice, not a fallback.
    interactive: bool,
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
/// each handed to the planner as it is made.
pub(super) fn convert_all<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    planner: &mut Planner<'x, 'a>,
) {
    let mut groups: BTreeMap<(usize, String, String), Vec<&Candidate>> = BTreeMap::new();
    for c in &scan.candidates {
        groups
            .entry((c.source, c.namespace.clone(), c.cluster.clone()))
            .or_default()
            .push(c);
    }
    let mut used = fleet::Used::new(ctx.config);
    for ((source, namespace, name), members) in &groups {
        let keys: Vec<(String, String)> = members
            .iter()
            .map(|c| source_key(&c.namespace, &c.name))
            .collect();
        // Only Cluster API's kubeconfig Secrets have a `cluster.x-k8s.io` Cluster beside them.
        let capi_cluster = scan
            .clusters
            .get(&(namespace.clone(), name.clone()))
            .copied()
            .filter(|_| ctx.config.sources[*source].capi);
        if let Some(at) = capi_cluster.filter(|&i| cluster::is_ignored(&ctx.item(i).node)) {
            let message = format!(
                "ignored: the Cluster has the {} label, so it gets no Argo CD Secret",
                cluster::IGNORE_LABEL
            );
            ctx.report(at, Severity::Info, Some("metadata.labels"), message);
            continue;
        }
        if let Some(at) = capi_cluster {
            if lifecycle_skips(ctx, at) {
                planner.unsettle(
                    &keys,
                    "skipNotReady: the Cluster is being deleted or not initialised",
                );
                continue;
            }
        }
        match convert_cluster(ctx, namespace, name, members) {
            Some((mut secret, from, degraded, reachable)) => {
                fleet::apply(ctx, &mut secret, from, capi_cluster, scan, &mut used);
                let kind = &ctx.config.sources[*source];
                if !kind.capi {
                    secret
                        .fields
                        .labels
                        .insert(SOURCE_LABEL.into(), kind.name.clone());
                }
                let conversion = Conversion {
                    from,
                    kind: *source,
                    cluster: name.clone(),
                    members: keys,
                    secret,
                    degraded,
                    reachable,
                };
                planner.propose(conversion);
            }
            None => planner.unsettle(&keys, "its kubeconfig Secret could not be converted"),
        }
    }
    used.report_unused(ctx);
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
    if life.deleting {
        let message = format!("the Cluster is being deleted: {outcome}");
        ctx.report(
            at,
            Severity::Warning,
            Some("metadata.deletionTimestamp"),
            message,
        );
    }
    if life.initialized == Some(false) {
        let message = format!("the Cluster's control plane is not initialised yet: {outcome}");
        ctx.report(at, Severity::Warning, Some("status"), message);
    }
    skip
}

/// What `convert_cluster` gives: the Argo CD Secret, the input index of the kubeconfig Secret
/// it came from, why it is a fallback, and whether Argo CD can reach its server.
type Made = (ClusterSecret, usize, Option<String>, bool);

/// Converts a cluster's kubeconfig Secrets and picks the one Argo CD should use: a user
/// kubeconfig whose login Argo CD renews (push mode), else the plain one whose server Argo CD can
/// reach (vcluster's exported Secret over its `vc-<name>`, which points at the pod's own
/// loopback), else any plain one, a user one, and a sibling last.
fn convert_cluster(
    ctx: &mut Ctx,
    namespace: &str,
    cluster: &str,
    members: &[&Candidate],
) -> Option<Made> {
    let converted: Vec<Read> = members.iter().map(|c| read(ctx, c)).collect();
    let ok = |i: &usize| converted[*i].connection.is_some();
    let reachable: Vec<bool> = members
        .iter()
        .zip(&converted)
        .map(|(m, read)| {
            ctx.object(m.index).annotation(SERVER_ANNOTATION).is_some()
                || read
                    .connection
                    .as_ref()
                    .is_some_and(|c| kubeconfig::unreachable_host(&c.server).is_none())
        })
        .collect();
    let indices: Vec<usize> = (0..members.len()).collect();
    let by_variant = |v: Variant| {
        let mut found: Vec<usize> = indices
            .iter()
            .copied()
            .filter(|&i| members[i].variant == v && ok(&i))
            .collect();
        // Reachable first, otherwise in the order of their names.
        found.sort_by_key(|&i| !reachable[i]);
        found
    };
    let (plain, user, sibling) = (
        by_variant(Variant::Plain),
        by_variant(Variant::User),
        by_variant(Variant::Sibling),
    );
    let user_via_argocd = user.iter().copied().find(|&i| {
        converted[i]
            .connection
            .as_ref()
            .is_some_and(|c| c.config.uses_argocd_k8s_auth())
    });
    let chosen = match ctx.config.mode {
        Mode::Pull => plain.first().or(user.first()).or(sibling.first()).copied(),
        Mode::Push => user_via_argocd
            .or(plain.first().copied())
            .or(user.first().copied())
            .or(sibling.first().copied()),
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
            ctx.results.push(d);
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
        Some((m, _)) if ctx.config.mode == Mode::Push && source.variant == Variant::Plain => {
            Some(format!(
                "{} could not be converted, and {} is a fallback",
                m.name, source.name
            ))
        }
        _ => None,
    };
    let chosen_reachable = reachable[chosen];
    let chosen_one = converted.into_iter().nth(chosen)?;
    // Findings about the kubeconfig name the field it came from.
    let field = chosen_one.field.as_str();
    let connection = chosen_one.connection?;
    let mut config = connection.config;
    let object = ctx.object(source.index);
    let mut server = match server_of(ctx, object, &connection.server, field) {
        Ok(server) => server,
        Err(finding) => {
            ctx.results.push(object.finding(finding));
            return None;
        }
    };
    if ctx.config.mode == Mode::Pull {
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
            ctx.results.push(
                object.finding(
                    Finding::info(
                        "pull mode: the user and password in the server or proxy URL are left out",
                    )
                    .at(field),
                ),
            );
        }
    } else {
        if without_userinfo(&server).1
            || config
                .proxy_url
                .as_deref()
                .is_some_and(|p| without_userinfo(p).1)
        {
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
    certificates_in_time(ctx, object, &config, field);
    let from_kubeconfig = ctx.config.name_from == NameFrom::Kubeconfig
        || ctx.config.sources[source.source].names_from_kubeconfig();
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
    Some((
        ClusterSecret {
            secret_name: secret_name(ctx, namespace, cluster),
            namespace: ctx.config.argo_namespace.clone(),
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
        chosen_reachable,
    ))
}

/// The kubeconfig's CA and client certificates against the host's clock: one that expired, or
/// expires within `expiryWarningDays`, is a warning with its date (the validator calls an
/// expired one an error; converting, the Secret is still written, the certificate being what
/// Cluster API gives until it rotates it).
fn certificates_in_time(ctx: &mut Ctx, object: Object, config: &ClusterConfig, field: &str) {
    let Some(now) = ctx.now else {
        return;
    };
    let tls = &config.tls_client_config;
    let fields = [
        ("certificate-authority-data", tls.ca_data.as_deref()),
        ("client-certificate-data", tls.cert_data.as_deref()),
    ];
    for (name, data) in fields {
        let Some(pem) = data.and_then(crate::validate::tls::go_bytes) else {
            continue;
        };
        for finding in
            crate::validate::expiry::findings(&pem, field, now, ctx.config.policy.expiry_days)
        {
            let message = format!("kubeconfig {name}: {}", finding.message);
            ctx.results
                .push(object.finding(Finding::warning(message).at(field)));
        }
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

/// Decodes and reads one kubeconfig Secret.
fn read(ctx: &Ctx, c: &Candidate) -> Read {
    let node = &ctx.item(c.index).node;
    let object = Object::new(node);
    let at = |severity, field: &str, message: String| {
        object.finding(Finding::new(severity, message)).at(field)
    };
    let failed = |d: Finding| Read {
        connection: None,
        field: String::new(),
        diagnostics: vec![d],
        interactive: false,
    };
    let source = &ctx.config.sources[c.source];
    let mut found = None;
    for key in &source.keys {
        match object.secret_value(key) {
            Ok(Some(v)) => {
                found = Some(v);
                break;
            }
            Ok(None) => {}
            Err(finding) => return failed(object.finding(finding)),
        }
    }
    let (field, text) = match found {
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
    let credentials = match ctx.config.mode {
        Mode::Push => Credentials::Read,
        Mode::Pull => Credentials::Skip,
    };
    let reading = kubeconfig::read(
        &text,
        ctx.config.context.as_deref(),
        credentials,
        ctx.limits,
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
                conn.config.bearer_token = Some(Sensitive(token.trim().to_string()));
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
    Read {
        connection,
        field,
        diagnostics,
        interactive: reading.interactive,
    }
}

/// Pull mode keeps what identifies and reaches the cluster, never what logs in to it.
fn without_credentials(config: ClusterConfig) -> ClusterConfig {
    let mut tls = config.tls_client_config;
    tls.cert_data = None;
    tls.key_data = None;
    ClusterConfig {
        tls_client_config: tls,
        proxy_url: config.proxy_url,
        disable_compression: config.disable_compression,
        ..Default::default()
    }
}
