//! How a cluster Secret logs in, weakest first: the order behind "never weaken a working
//! Secret", read from a conversion or from an existing Secret's `config` JSON.

use crate::convert::argocd::{ARGOCD_K8S_AUTH, ClusterConfig};
use crate::convert::exec::azure_login_is_unattended;

/// How a config logs in, weakest first. A conversion that would replace a working cluster
/// Secret with a weaker login is not allowed to (the "never weaken" rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Login {
    /// A login that needs a person (an Azure device code, as earlier capi2argo versions wrote it):
    /// it never works in Argo CD.
    Interactive,
    /// No credentials: anonymous.
    None,
    /// A token that expires on its own (an EKS presigned token lasts 15 minutes).
    Expiring,
    /// Long-lived credentials: a client certificate, a token without an expiry, a password.
    Static,
    /// A login Argo CD renews by itself: `awsAuthConfig` or an exec plugin.
    Renewing,
}

impl Login {
    /// In a few words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Login::Interactive => "a login that needs a person at a browser",
            Login::None => "no credentials",
            Login::Expiring => "a token that expires",
            Login::Static => "static credentials",
            Login::Renewing => "a login Argo CD renews (awsAuthConfig or an exec plugin)",
        }
    }
}

/// Whether a bearer token expires by itself: EKS presigned tokens (`k8s-aws-v1.`), Google OAuth
/// access tokens (`ya29.`), and JWTs that carry an `exp` claim.
pub fn token_expires(token: &str) -> bool {
    if token.starts_with("k8s-aws-v1.") || token.starts_with("ya29.") {
        return true;
    }
    let mut parts = token.split('.');
    let (Some(_), Some(claims), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    krm::b64::decode_url(claims)
        .ok()
        .and_then(|json| serde_json::from_slice::<serde_json::Value>(&json).ok())
        .is_some_and(|claims| claims.get("exp").is_some())
}

/// The login of an existing cluster Secret's `config` JSON (`None` when it is not JSON).
pub fn login_of_json(config: &str) -> Option<Login> {
    let value: serde_json::Value = serde_json::from_str(config).ok()?;
    let has = |key: &str| value.get(key).is_some_and(|v| !v.is_null());
    let tls = value.get("tlsClientConfig");
    let cert = tls.is_some_and(|t| t.get("certData").is_some_and(|v| !v.is_null()));
    let exec = value.get("execProviderConfig");
    let azure_login = exec
        .filter(|e| {
            e.get("command").and_then(|c| c.as_str()) == Some(ARGOCD_K8S_AUTH)
                && e.pointer("/args/0").and_then(|a| a.as_str()) == Some("azure")
        })
        .map(|e| e.pointer("/env/AAD_LOGIN_METHOD").and_then(|m| m.as_str()));
    Some(
        if azure_login.is_some_and(|m| !azure_login_is_unattended(m)) {
            Login::Interactive
        } else if has("awsAuthConfig") || has("execProviderConfig") {
            Login::Renewing
        } else if cert || has("username") || has("password") {
            Login::Static
        } else if let Some(token) = value.get("bearerToken").and_then(|t| t.as_str()) {
            if token_expires(token) {
                Login::Expiring
            } else {
                Login::Static
            }
        } else {
            Login::None
        },
    )
}

impl ClusterConfig {
    /// Whether this config logs in as the cloud identity of Argo CD's own pods: `awsAuthConfig`,
    /// or `argocd-k8s-auth` given no secret of its own in its environment (IRSA or EKS Pod
    /// Identity, GKE's Workload Identity, Azure Workload Identity). An exec plugin that carries
    /// its own credentials (a client secret, a password) does not.
    pub fn logs_in_as_pod_identity(&self) -> bool {
        self.uses_argocd_k8s_auth()
            && self.exec_provider_config.as_ref().is_none_or(|e| {
                !e.env.keys().any(|k| {
                    let k = k.to_ascii_uppercase();
                    k.contains("SECRET") || k.contains("PASSWORD") || k.contains("CERTIFICATE")
                })
            })
    }

    /// How this config logs in.
    pub fn login(&self) -> Login {
        if self.uses_argocd_k8s_auth() || self.exec_provider_config.is_some() {
            Login::Renewing
        } else if self.tls_client_config.cert_data.is_some()
            || self.username.is_some()
            || self.password.is_some()
        {
            Login::Static
        } else if let Some(token) = &self.bearer_token {
            if token_expires(&token.0) {
                Login::Expiring
            } else {
                Login::Static
            }
        } else {
            Login::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::argocd::{AwsAuthConfig, ExecProviderConfig, Sensitive};

    #[test]
    fn pod_identity_is_awsauthconfig_or_argocd_k8s_auth_without_a_secret_of_its_own() {
        let aws = ClusterConfig {
            aws_auth_config: Some(AwsAuthConfig {
                cluster_name: "prod".into(),
                role_arn: None,
                profile: None,
            }),
            ..Default::default()
        };
        assert!(aws.logs_in_as_pod_identity());
        let exec = |command: &str, env: &[&str]| ClusterConfig {
            exec_provider_config: Some(ExecProviderConfig {
                command: command.into(),
                env: env
                    .iter()
                    .map(|k| (k.to_string(), Sensitive("x".into())))
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(exec(ARGOCD_K8S_AUTH, &["AAD_LOGIN_METHOD"]).logs_in_as_pod_identity());
        assert!(!exec(ARGOCD_K8S_AUTH, &["AZURE_CLIENT_SECRET"]).logs_in_as_pod_identity());
        assert!(!exec("kubelogin", &[]).logs_in_as_pod_identity());
        assert!(!ClusterConfig::default().logs_in_as_pod_identity());
    }
}
