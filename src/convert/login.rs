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
    crate::krm::b64::decode_url(claims)
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
