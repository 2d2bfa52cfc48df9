//! The Argo CD Secret of a cluster, from the kubeconfig chosen for it: its server (the
//! kubeconfig's, or the Secret's server annotation), its login as the mode wants it (none in
//! pull mode), and its names.

use crate::config::{Mode, NameFrom};
use crate::convert::argocd::{ClusterConfig, ClusterSecret};
use crate::convert::kubeconfig::{self, without_userinfo};
use crate::convert::login::Login;
use crate::convert::meta as names;
use crate::profiles;
use crate::sources::{Kind, SERVER_ANNOTATION};
use krm::finding::Finding;
use krm::object::Object;

use super::choice::{Chosen, Read};
use super::context::Ctx;

/// The name of a cluster's Argo CD Secret (in the config's Argo CD namespace).
fn secret_name(ctx: &Ctx, namespace: &str, cluster: &str) -> String {
    let base = if ctx.config.namespaced_names {
        format!("cluster-{namespace}-{cluster}")
    } else {
        format!("cluster-{cluster}")
    };
    names::dns1123_subdomain(&base)
}

/// The Argo CD Secret of a cluster from the kubeconfig chosen for it: its server, its login (or
/// none in pull mode), its names.
pub(super) fn cluster_secret<'x>(
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
