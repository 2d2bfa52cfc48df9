//! The credential rule: what the credential of an Argo CD cluster Secret lets its holder do,
//! read from its `config` — an admin client certificate (`system:masters`, which no RBAC limits
//! and only a new cluster CA revokes), another client certificate or a password, a
//! ServiceAccount token (bound to an object, so it can be revoked alone, or not), another bearer
//! token, an exec login (holding a secret of its own, or none: the pod's cloud identity), or
//! nothing. `validate` says it per Secret, `leastPrivilege: require` refuses all but the
//! strongest, and the plan counts them for the fleet.

use serde_json::Value;

use super::tls;

/// What a cluster Secret logs in with, by what a leak of it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A client certificate in `system:masters`: the cluster's admin key.
    AdminCertificate,
    /// A client certificate of other groups.
    ClientCertificate,
    /// A user name and password.
    Password,
    /// A ServiceAccount token (a JWT the API server issued).
    ServiceAccountToken {
        /// `namespace/name`, where the token says.
        account: Option<String>,
        /// The object it is bound to (`Secret kube-system/…`): deleting it revokes the token.
        bound_to: Option<String>,
        /// When it expires (Unix seconds); `None`: never.
        expires: Option<i64>,
    },
    /// A ServiceAccount token capi2argo-controller keeps and renews (the Secret says so), bound
    /// to an object of its own, as `bound_to` names where its token Secret is read.
    RenewedToken {
        /// The object its token is bound to (`namespace/name` in the workload cluster), where
        /// known.
        bound_to: Option<String>,
    },
    /// Another bearer token.
    Token {
        /// It expires by itself (a cloud's short-lived token, a JWT with `exp`).
        expires: bool,
    },
    /// An exec plugin or `awsAuthConfig`.
    Exec {
        /// Its environment carries a secret of its own (a client secret, a password).
        holds_secret: bool,
    },
    /// No credential: anonymous, or what the transport gives.
    None,
}

impl Credential {
    /// The credential of a cluster Secret's `config`; `renewed`: the Secret carries the token
    /// expiry capi2argo-controller renews by.
    pub fn of_config(config: &Value, renewed: bool) -> Credential {
        let text = |pointer: &str| config.pointer(pointer).and_then(Value::as_str);
        let exec = config.get("execProviderConfig").filter(|v| !v.is_null());
        let env_keys: Vec<&str> = exec
            .and_then(|e| e.get("env"))
            .and_then(Value::as_object)
            .map(|env| env.keys().map(String::as_str).collect())
            .unwrap_or_default();
        Credential::of_parts(
            &Parts {
                aws: config.get("awsAuthConfig").is_some_and(|v| !v.is_null()),
                exec_env: exec.map(|_| env_keys),
                cert: text("/tlsClientConfig/certData"),
                password: text("/password").is_some() || text("/username").is_some(),
                token: text("/bearerToken"),
            },
            renewed,
        )
    }

    /// [`Credential::of_config`], of a config the function made.
    pub(crate) fn of_cluster_config(
        config: &crate::convert::argocd::ClusterConfig,
        renewed: bool,
    ) -> Credential {
        let exec_env = config
            .exec_provider_config
            .as_ref()
            .map(|e| e.env.keys().map(String::as_str).collect());
        Credential::of_parts(
            &Parts {
                aws: config.aws_auth_config.is_some(),
                exec_env,
                cert: config.tls_client_config.cert_data.as_deref(),
                password: config.username.is_some() || config.password.is_some(),
                token: config.bearer_token.as_ref().map(|t| t.0.as_str()),
            },
            renewed,
        )
    }

    fn of_parts(parts: &Parts, renewed: bool) -> Credential {
        if parts.aws {
            return Credential::Exec {
                holds_secret: false,
            };
        }
        if let Some(env) = &parts.exec_env {
            let holds_secret = env.iter().any(|k| {
                let k = k.to_ascii_uppercase();
                [
                    "SECRET",
                    "PASSWORD",
                    "CERTIFICATE",
                    "TOKEN",
                    "KEY",
                    "CREDENTIAL",
                ]
                .iter()
                .any(|word| k.contains(word))
            });
            return Credential::Exec { holds_secret };
        }
        if let Some(cert) = parts.cert {
            let groups = tls::go_bytes(cert)
                .map(|pem| tls::certificates(&pem).groups)
                .unwrap_or_default();
            return if groups.iter().any(|g| g == super::MASTERS) {
                Credential::AdminCertificate
            } else {
                Credential::ClientCertificate
            };
        }
        if parts.password {
            return Credential::Password;
        }
        let Some(token) = parts.token else {
            return Credential::None;
        };
        match service_account_claims(token) {
            Some(found) => found,
            None if renewed => Credential::RenewedToken { bound_to: None },
            None => Credential::Token {
                expires: crate::convert::login::token_expires(token),
            },
        }
    }

    /// A token capi2argo-controller keeps that is no JWT (it says nothing of itself), with the
    /// binding its token Secret records (`namespace/name`).
    pub(crate) fn bound_as_recorded(self, binding: Option<&str>) -> Credential {
        let recorded = binding.map(|b| format!("Secret {b}"));
        match self {
            Credential::RenewedToken { bound_to: None } => {
                Credential::RenewedToken { bound_to: recorded }
            }
            // A token that says what it is bound to is believed over any annotation.
            other => other,
        }
    }

    /// In a few words: what a holder of it can do.
    pub fn describe(&self) -> String {
        match self {
            Credential::AdminCertificate => "an admin client certificate (system:masters): everything, past RBAC and webhooks, revocable only by a new cluster CA".into(),
            Credential::ClientCertificate => "a client certificate: what RBAC grants its user, until it expires or the cluster CA changes".into(),
            Credential::Password => "a user name and password, good for what RBAC grants the user until the password changes".into(),
            Credential::ServiceAccountToken { account, bound_to, expires } => {
                let who = account.as_deref().map_or(String::new(), |a| format!(" of {a}"));
                let bound = match bound_to {
                    Some(object) => format!(", bound to {object} (deleting it revokes the token)"),
                    None => ", bound to no object (revoked only with its ServiceAccount)".into(),
                };
                let until = match expires {
                    Some(at) => format!(", until {}", super::expiry::instant(*at)),
                    None => ", never expiring".into(),
                };
                format!("a ServiceAccount token{who}{bound}{until}: what RBAC grants the ServiceAccount")
            }
            Credential::RenewedToken { bound_to } => match bound_to {
                Some(object) => format!("a ServiceAccount token capi2argo-controller renews, bound to {object} in the workload cluster (deleting it revokes the token): what its grant allows"),
                None => "a ServiceAccount token capi2argo-controller renews: what its grant allows".into(),
            },
            Credential::Token { expires: true } => "a bearer token that expires by itself".into(),
            Credential::Token { expires: false } => "a bearer token that never expires".into(),
            Credential::Exec { holds_secret: false } => "an exec login that holds no secret (the pod's cloud identity)".into(),
            Credential::Exec { holds_secret: true } => "an exec login that holds a secret of its own".into(),
            Credential::None => "no credential".into(),
        }
    }

    /// Whether it is the strongest a cluster Secret can hold: nothing to steal that lasts (an
    /// exec login holding no secret) or a token that expires and can be revoked alone. An exec
    /// login's secret is told by its environment's names (a secret, password, certificate,
    /// token, key or credential); one passed as an argument is not seen.
    pub fn is_strongest(&self) -> bool {
        match self {
            Credential::ServiceAccountToken {
                bound_to, expires, ..
            } => bound_to.is_some() && expires.is_some(),
            Credential::RenewedToken { bound_to } => bound_to.is_some(),
            Credential::Exec { holds_secret } => !holds_secret,
            // Anonymous access: nothing to steal, but a cluster anyone may use.
            _ => false,
        }
    }

    /// The fleet posture's word for it.
    pub fn kind(&self) -> &'static str {
        match self {
            Credential::AdminCertificate => "an admin key (system:masters)",
            Credential::ClientCertificate | Credential::Password => {
                "another long-lived key (a client certificate or password)"
            }
            Credential::Token { expires: false } => "a token that never expires",
            c if c.is_strongest() && matches!(c, Credential::Exec { .. }) => {
                "an exec login holding no secret"
            }
            c if c.is_strongest() => "a bound, expiring ServiceAccount token",
            Credential::ServiceAccountToken {
                bound_to: Some(_),
                expires: None,
                ..
            } => "a bound ServiceAccount token that never expires",
            Credential::ServiceAccountToken { .. } | Credential::RenewedToken { .. } => {
                "a ServiceAccount token not bound to an object"
            }
            Credential::Token { expires: true } => "a token that expires by itself",
            Credential::Exec { .. } => "an exec login holding a secret",
            Credential::None => "no credential",
        }
    }
}

/// What a config's credential is read from.
struct Parts<'c> {
    aws: bool,
    /// An exec plugin's environment variable names.
    exec_env: Option<Vec<&'c str>>,
    cert: Option<&'c str>,
    password: bool,
    token: Option<&'c str>,
}

/// The claims of a ServiceAccount token (a JWT Kubernetes issued), unverified: whom it is for,
/// what it is bound to, when it expires.
fn service_account_claims(token: &str) -> Option<Credential> {
    let mut parts = token.split('.');
    let (Some(_), Some(claims), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let claims: Value = serde_json::from_slice(&krm::b64::decode_url(claims).ok()?).ok()?;
    let subject = claims.get("sub").and_then(Value::as_str)?;
    let account = subject
        .strip_prefix("system:serviceaccount:")?
        .split_once(':')
        .map(|(ns, name)| format!("{ns}/{name}"));
    let kubernetes = claims.get("kubernetes.io");
    let namespace = kubernetes
        .and_then(|k| k.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bound_to = ["secret", "pod", "node"].iter().find_map(|kind| {
        let name = kubernetes?.get(*kind)?.get("name")?.as_str()?;
        Some(match *kind {
            "secret" => format!("Secret {namespace}/{name}"),
            "pod" => format!("Pod {namespace}/{name}"),
            _ => format!("Node {name}"),
        })
    });
    Some(Credential::ServiceAccountToken {
        account,
        bound_to,
        expires: claims.get("exp").and_then(Value::as_i64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwt(claims: Value) -> String {
        let part = |v: &Value| {
            krm::b64::encode(v.to_string().as_bytes())
                .trim_end_matches('=')
                .replace('+', "-")
                .replace('/', "_")
        };
        format!(
            "{}.{}.signature",
            part(&json!({"alg": "RS256"})),
            part(&claims)
        )
    }

    /// The claims kube-apiserver writes (pkg/serviceaccount/claims.go): a TokenRequest bound to
    /// a Secret, one bound to nothing, and a legacy token Secret's (no `exp`, no `kubernetes.io`).
    #[test]
    fn a_service_account_token_says_whose_it_is_and_what_it_is_bound_to() {
        let bound = jwt(json!({
            "sub": "system:serviceaccount:kube-system:argocd-manager",
            "exp": 1_800_000_000,
            "kubernetes.io": {"namespace": "kube-system",
                              "serviceaccount": {"name": "argocd-manager", "uid": "u"},
                              "secret": {"name": "argocd-manager-token-x7k2p", "uid": "s"}},
        }));
        let c = Credential::of_config(&json!({"bearerToken": bound}), true);
        assert_eq!(
            c,
            Credential::ServiceAccountToken {
                account: Some("kube-system/argocd-manager".into()),
                bound_to: Some("Secret kube-system/argocd-manager-token-x7k2p".into()),
                expires: Some(1_800_000_000),
            }
        );
        assert!(c.is_strongest());
        let unbound = jwt(
            json!({"sub": "system:serviceaccount:a:b", "exp": 1_800_000_000,
                                 "kubernetes.io": {"namespace": "a"}}),
        );
        let c = Credential::of_config(&json!({"bearerToken": unbound}), false);
        assert!(!c.is_strongest());
        assert_eq!(c.kind(), "a ServiceAccount token not bound to an object");
        // Regression: a bound token without `exp` was counted as one bound to nothing.
        let bound_forever = jwt(json!({"sub": "system:serviceaccount:a:b",
                                       "kubernetes.io": {"namespace": "a",
                                                         "secret": {"name": "t", "uid": "s"}}}));
        let c = Credential::of_config(&json!({"bearerToken": bound_forever}), false);
        assert!(!c.is_strongest());
        assert_eq!(c.kind(), "a bound ServiceAccount token that never expires");
        let legacy = jwt(json!({"sub": "system:serviceaccount:a:b",
                                "kubernetes.io/serviceaccount/namespace": "a"}));
        let c = Credential::of_config(&json!({"bearerToken": legacy}), false);
        assert!(c.describe().contains("never expiring"), "{}", c.describe());
    }

    #[test]
    fn logins_are_told_apart() {
        let c = |config: Value| Credential::of_config(&config, false);
        assert_eq!(c(json!({})), Credential::None);
        assert_eq!(
            c(json!({"username": "u", "password": "p"})),
            Credential::Password
        );
        assert_eq!(
            c(json!({"awsAuthConfig": {"clusterName": "x"}})),
            Credential::Exec {
                holds_secret: false
            }
        );
        assert_eq!(
            c(json!({"execProviderConfig": {"command": "x", "env": {"AZURE_CLIENT_SECRET": "s"}}})),
            Credential::Exec { holds_secret: true }
        );
        assert_eq!(
            c(json!({"bearerToken": "opaque"})),
            Credential::Token { expires: false }
        );
        assert_eq!(
            Credential::of_config(&json!({"bearerToken": "opaque"}), true),
            Credential::RenewedToken { bound_to: None }
        );
    }
}
