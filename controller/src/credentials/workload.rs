//! Connecting to a workload cluster with its admin credential alone: no file, no exec plugin.
//! The credential stays in memory: it is never written, logged or handed to anything else.

use std::sync::Arc;
use std::time::Duration;

use capi2argo_core::AdminAccess;
use futures::future::BoxFuture;
use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster,
    NamedContext,
};
use kube::{Client, Config};

use super::MintError;

/// How long one workload cluster may take to connect and to answer.
const CONNECT: Duration = Duration::from_secs(5);
const ANSWER: Duration = Duration::from_secs(15);

/// How the controller reaches a workload cluster: [`connect`], or a stand-in in tests.
pub type Connect =
    Arc<dyn Fn(AdminAccess) -> BoxFuture<'static, Result<Client, MintError>> + Send + Sync>;

/// [`connect`] as a [`Connect`].
pub fn connector() -> Connect {
    Arc::new(|access| Box::pin(async move { connect(&access).await }))
}

/// A client of a workload cluster, from the admin credential alone.
pub async fn connect(access: &AdminAccess) -> Result<Client, MintError> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| MintError::Connect {
        server: access.server.clone(),
        source,
    };
    let kubeconfig = Kubeconfig {
        clusters: vec![NamedCluster {
            name: "workload".into(),
            cluster: Some(Cluster {
                server: Some(access.server.clone()),
                insecure_skip_tls_verify: Some(access.insecure),
                certificate_authority_data: access.ca_data.clone(),
                proxy_url: access.proxy_url.clone(),
                tls_server_name: access.server_name.clone(),
                ..Cluster::default()
            }),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "admin".into(),
            auth_info: Some(AuthInfo {
                client_certificate_data: access.client_certificate_data.clone(),
                client_key_data: access.client_key_data.clone().map(Into::into),
                token: access.bearer_token.clone().map(Into::into),
                ..AuthInfo::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: "workload".into(),
            context: Some(Context {
                cluster: "workload".into(),
                user: Some("admin".into()),
                ..Context::default()
            }),
            other: Default::default(),
        }],
        current_context: Some("workload".into()),
        ..Kubeconfig::default()
    };
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| failed(Box::new(e)))?;
    config.connect_timeout = Some(CONNECT);
    config.read_timeout = Some(ANSWER);
    config.write_timeout = Some(ANSWER);
    Client::try_from(config).map_err(|e| failed(Box::new(e)))
}
