//! Least privilege (`credentials: serviceAccount`): what Argo CD logs in with instead of a
//! cluster's admin credential, and every rule about it in one place — the settings, the token
//! Secret a controller keeps for each cluster in Argo CD's namespace (its form is written and
//! read only here), when its token is due, and what the controller must grant in the workload
//! cluster. The function decides; the controller mints what it is told to.

use std::fmt;

pub use crate::config::access::{CredentialMode, Role, Settings};
use crate::convert::argocd::{ClusterConfig, Sensitive};
use crate::request::Request;
use crate::validate::expiry::{instant as format_instant, parse_instant};
use krm::finding::Finding;
use krm::object::Object;
use krm::object::SecretId;
use krm::{Preconditions, Secret};

/// The label on everything capi2argo's controller writes outside Argo CD's cluster Secrets (the
/// token Secrets, and in a workload cluster the ServiceAccount and its RBAC): what it may delete
/// again. The Kubernetes recommended label.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// [`MANAGED_BY_LABEL`]'s value, which is also the field manager of every write.
pub const MANAGED_BY: &str = "capi2argo";
/// The label that marks a token Secret, and its value.
pub const TOKEN_LABEL: &str = "capi2argo.dev/credential";
/// [`TOKEN_LABEL`]'s value.
pub const TOKEN_LABEL_VALUE: &str = "serviceaccount-token";
/// The type of a token Secret: not `kubernetes.io/service-account-token`, which the API server
/// would fill with a long-lived token of its own.
pub const TOKEN_SECRET_TYPE: &str = "capi2argo.dev/serviceaccount-token";
/// On a token Secret: the kubeconfig Secret (`namespace/name`) it is for.
pub const KUBECONFIG_ANNOTATION: &str = "capi2argo.dev/kubeconfig-secret";
/// On a token Secret: the kubeconfig Secret's resourceVersion when the token was minted (a new
/// one, the admin credential rotated or the cluster rebuilt, mints again at once).
pub const KUBECONFIG_VERSION_ANNOTATION: &str = "capi2argo.dev/kubeconfig-version";
/// On a token Secret: what was granted ([`Grant`]'s text); another grant mints again.
pub const GRANT_ANNOTATION: &str = "capi2argo.dev/grant";
/// On a token Secret: when the token was issued (RFC 3339).
pub const ISSUED_ANNOTATION: &str = "capi2argo.dev/token-issued";
/// On a token Secret: the object its token is bound to (TokenRequest `boundObjectRef`), a
/// Secret in the workload cluster as `namespace/name`: deleting it revokes that one token at
/// once, the ServiceAccount and its other tokens untouched.
pub const BINDING_ANNOTATION: &str = "capi2argo.dev/token-binding";
/// On a token Secret: the bindings (`namespace/name`, comma-separated) of the tokens it held
/// before, revoked once Argo CD's Secret carries the new token.
pub const RETIRED_ANNOTATION: &str = "capi2argo.dev/token-retired";
/// On a kubeconfig Secret or its Cluster: a value it has not had before asks for a new token
/// and the old one revoked. On a token Secret: the values last acted on (a JSON list).
pub const ROTATE_ANNOTATION: &str = "capi2argo.dev/rotate-token";
/// [`TOKEN_LABEL`]'s value on a binding Secret in a workload cluster.
pub const BINDING_LABEL_VALUE: &str = "token-binding";
/// The type of a binding Secret: it holds nothing, it only stands for one token.
pub const BINDING_SECRET_TYPE: &str = "capi2argo.dev/token-binding";
/// On a binding Secret: the token Secret (`namespace/name`, in the management cluster) whose
/// token it binds, for a person reading the workload cluster.
pub const BOUND_FOR_ANNOTATION: &str = "capi2argo.dev/token-secret";

/// On a token Secret and on the Argo CD Secret that carries its token: when it stops being valid.
pub use crate::convert::argocd::TOKEN_EXPIRES_ANNOTATION as EXPIRES_ANNOTATION;

/// How many replaced tokens' bindings a token Secret keeps to revoke.
const MAX_RETIRED: usize = 8;

/// A token is minted again once this share of its life (in percent) has passed.
const RENEW_AT_PERCENT: i64 = 80;

/// A ServiceAccount in a workload cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl fmt::Display for ServiceAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What the ServiceAccount is granted in one workload cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Granted {
    /// Everything, cluster-wide (ClusterRole `argocd-manager-role`).
    Admin,
    /// Everything in these namespaces (a Role in each); with `cluster_resources`, also the
    /// cluster-scoped kinds Argo CD manages.
    Namespaced {
        /// The cluster's `namespaces`.
        namespaces: Vec<String>,
        /// The cluster's `clusterResources`.
        cluster_resources: bool,
    },
    /// The user's ClusterRole, bound cluster-wide.
    ClusterRole(String),
    /// Read everything, and impersonate exactly these ServiceAccounts (set up with their
    /// RoleBindings), which Argo CD's AppProjects name for the cluster.
    Impersonate(Vec<crate::projects::Impersonated>),
}

/// The ServiceAccount and what it is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The ServiceAccount.
    pub account: ServiceAccount,
    /// Its role.
    pub granted: Granted,
}

impl fmt::Display for Grant {
    /// The text kept on the token Secret: a change in it mints again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.granted {
            Granted::Admin => write!(f, "{} admin", self.account),
            Granted::Namespaced {
                namespaces,
                cluster_resources,
            } => write!(
                f,
                "{} namespaced {}{}",
                self.account,
                namespaces.join(","),
                if *cluster_resources {
                    " clusterResources"
                } else {
                    ""
                }
            ),
            Granted::ClusterRole(role) => write!(f, "{} clusterrole {role}", self.account),
            Granted::Impersonate(accounts) => {
                write!(f, "{} impersonate", self.account)?;
                for a in accounts {
                    let projects: Vec<String> =
                        a.projects.iter().map(|(p, r)| format!("{p}:{r}")).collect();
                    write!(f, " {}/{}={}", a.namespace, a.name, projects.join("+"))?;
                    let elsewhere = a.elsewhere();
                    if !elsewhere.is_empty() {
                        write!(f, "@{}", elsewhere.join(","))?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// How the controller reaches a workload cluster to set its ServiceAccount up: the admin
/// credential of the kubeconfig Secret, held in memory only and never written anywhere.
/// `Debug` shows no credential.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminAccess {
    /// The API server's URL.
    pub server: String,
    /// Base64 of the CA's PEM, as a kubeconfig holds it.
    pub ca_data: Option<String>,
    /// The TLS server name to verify, when not the server's host.
    pub server_name: Option<String>,
    /// No TLS verification (the kubeconfig's `insecure-skip-tls-verify`).
    pub insecure: bool,
    /// A proxy to reach the server through.
    pub proxy_url: Option<String>,
    /// Base64 of the client certificate's PEM.
    pub client_certificate_data: Option<String>,
    /// Base64 of the client key's PEM.
    pub client_key_data: Option<String>,
    /// A bearer token.
    pub bearer_token: Option<String>,
}

impl fmt::Debug for AdminAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminAccess")
            .field("server", &self.server)
            .field(
                "client_certificate",
                &self.client_certificate_data.is_some(),
            )
            .field("bearer_token", &self.bearer_token.is_some())
            .finish_non_exhaustive()
    }
}

impl AdminAccess {
    /// The access a converted config gives, or why the controller cannot use it: it runs
    /// nothing (no exec plugin, no cloud login) and reads no file.
    pub(crate) fn of(server: &str, config: &ClusterConfig) -> Result<AdminAccess, String> {
        if config.exec_provider_config.is_some() || config.aws_auth_config.is_some() {
            return Err("its kubeconfig logs in through a command (exec), which capi2argo never runs: credentials=serviceAccount needs a client certificate or a token".into());
        }
        let tls = &config.tls_client_config;
        let client = tls.cert_data.is_some() && tls.key_data.is_some();
        if !client && config.bearer_token.is_none() {
            return Err("its kubeconfig has neither a client certificate and key nor a token to set up the ServiceAccount with".into());
        }
        Ok(AdminAccess {
            server: server.to_string(),
            ca_data: tls.ca_data.clone(),
            server_name: tls.server_name.clone(),
            insecure: tls.insecure,
            proxy_url: config.proxy_url.clone(),
            client_certificate_data: tls.cert_data.clone(),
            client_key_data: tls.key_data.as_ref().map(|k| k.0.clone()),
            bearer_token: config.bearer_token.as_ref().map(|t| t.0.clone()),
        })
    }
}

/// Why a cluster's token is minted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Due {
    /// It has none yet.
    Missing,
    /// 80 % of its life has passed.
    Renew,
    /// It has expired (the cluster could not be reached in time).
    Expired,
    /// Its kubeconfig Secret changed since (the admin credential rotated, or the cluster was
    /// rebuilt).
    Rotated,
    /// Another ServiceAccount is granted.
    Regrant,
    /// Its token is bound to no object (minted before tokens were), so it could not be revoked
    /// alone: a bound one replaces it.
    Unbound,
    /// Rotation asked for: `capi2argo.dev/rotate-token` on its kubeconfig Secret or Cluster has
    /// a value not acted on yet. The old token is revoked.
    Requested,
}

impl Due {
    /// In a few words, for logs and the plan.
    pub fn describe(self) -> &'static str {
        match self {
            Due::Missing => "no token yet",
            Due::Renew => "80% of its life has passed",
            Due::Expired => "it has expired",
            Due::Rotated => "its kubeconfig Secret changed",
            Due::Regrant => "its ServiceAccount changed",
            Due::Unbound => "its token is bound to no object and could not be revoked alone",
            Due::Requested => "rotation asked for (capi2argo.dev/rotate-token)",
        }
    }
}

/// A token Secret of the input.
#[derive(Debug, Clone)]
pub(crate) struct TokenSecret {
    pub index: usize,
    pub id: SecretId,
    pub token: Option<String>,
    pub issued: Option<i64>,
    pub expires: Option<i64>,
    pub kubeconfig_version: Option<String>,
    pub grant: Option<String>,
    /// The object its token is bound to, `namespace/name` in the workload cluster.
    pub binding: Option<String>,
    /// Bindings of earlier tokens still to revoke.
    pub retired: Vec<String>,
    /// The rotation requests acted on.
    pub rotated: Vec<String>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// Whether a Secret is a token Secret.
pub(crate) fn is_token_secret(object: Object) -> bool {
    object.label(TOKEN_LABEL) == Some(TOKEN_LABEL_VALUE)
}

/// The kubeconfig Secret a token Secret names; an error on the annotation when it names none.
pub(crate) fn token_for(object: Object) -> Result<SecretId, Finding> {
    object
        .annotation(KUBECONFIG_ANNOTATION)
        .and_then(|v| v.split_once('/'))
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
        .map(|(ns, name)| SecretId::new(ns, name))
        .ok_or_else(|| {
            Finding::error(format!(
                "a token Secret must name its kubeconfig Secret as namespace/name in {KUBECONFIG_ANNOTATION}"
            ))
            .at("metadata.annotations")
        })
}

/// What the token Secret of the cluster Secret `cluster` records, found among `items`: the one in
/// its namespace naming the kubeconfig Secret the cluster Secret is made from.
pub(crate) fn recorded_token(
    cluster: Object,
    items: &[krm::Item],
) -> Option<crate::validate::RecordedToken> {
    use crate::convert::argocd::{SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL};
    let source = format!(
        "{}/{}",
        cluster.label(SOURCE_NAMESPACE_LABEL)?,
        cluster.label(SOURCE_NAME_LABEL)?
    );
    let token = items.iter().map(|item| Object::new(&item.node)).find(|o| {
        is_token_secret(*o)
            && o.namespace() == cluster.namespace()
            && o.annotation(KUBECONFIG_ANNOTATION) == Some(source.as_str())
    })?;
    Some(crate::validate::RecordedToken {
        binding: token.annotation(BINDING_ANNOTATION).map(String::from),
        grant: token.annotation(GRANT_ANNOTATION).map(String::from),
    })
}

/// Reads a token Secret (the kubeconfig Secret it is for is read by [`token_for`]).
pub(crate) fn read_token(object: Object, index: usize) -> TokenSecret {
    let time = |key| object.annotation(key).and_then(parse_instant);
    let text = |path: &[&str]| {
        object
            .node
            .path(path)
            .and_then(|n| n.as_str())
            .map(String::from)
    };
    TokenSecret {
        index,
        id: SecretId::of(object),
        token: object
            .secret_value("token")
            .ok()
            .flatten()
            .map(|(_, t)| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        issued: time(ISSUED_ANNOTATION),
        expires: time(EXPIRES_ANNOTATION),
        kubeconfig_version: object
            .annotation(KUBECONFIG_VERSION_ANNOTATION)
            .map(String::from),
        grant: object.annotation(GRANT_ANNOTATION).map(String::from),
        binding: object
            .annotation(BINDING_ANNOTATION)
            .filter(|b| binding_parts(b).is_some())
            .map(String::from),
        retired: object
            .annotation(RETIRED_ANNOTATION)
            .map(|r| {
                r.split(',')
                    .filter(|b| binding_parts(b).is_some())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
        rotated: object
            .annotation(ROTATE_ANNOTATION)
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default(),
        uid: text(&["metadata", "uid"]),
        resource_version: text(&["metadata", "resourceVersion"]),
    }
}

impl TokenSecret {
    /// Whether (and why) a new token is due at `now`, for a kubeconfig Secret now at
    /// `kubeconfig_version` and what `grant` says. Without a clock the token is taken as it is.
    pub fn due(
        &self,
        now: Option<i64>,
        ttl: i64,
        kubeconfig_version: Option<&str>,
        grant: &str,
        rotate: &[String],
    ) -> Option<Due> {
        let (Some(_), Some(expires)) = (&self.token, self.expires) else {
            return Some(Due::Missing);
        };
        if now.is_some_and(|now| now >= expires) {
            return Some(Due::Expired);
        }
        if rotate.iter().any(|r| !self.rotated.contains(r)) {
            return Some(Due::Requested);
        }
        if let Some(now) = now {
            if self.renew_at(ttl).is_some_and(|at| now >= at) {
                return Some(Due::Renew);
            }
        }
        if let (Some(was), Some(is)) = (self.kubeconfig_version.as_deref(), kubeconfig_version) {
            if was != is {
                return Some(Due::Rotated);
            }
        }
        // Another ServiceAccount is another identity: a token of its own. What the same one may
        // do is its RBAC's, applied again without a new token (`TokenNeed::reapply`).
        if self.grant.as_deref().map(grant_account) != Some(grant_account(grant)) {
            return Some(Due::Regrant);
        }
        if self.binding.is_none() {
            return Some(Due::Unbound);
        }
        None
    }

    /// The first time after `now` at which [`TokenSecret::due`] or
    /// [`TokenSecret::valid_token`] may answer otherwise (it is to be renewed, it expires);
    /// `None` when no time changes them.
    pub fn changes_after(&self, now: i64, ttl: i64) -> Option<i64> {
        [self.renew_at(ttl), self.expires]
            .into_iter()
            .flatten()
            .filter(|&at| at > now)
            .min()
    }

    /// When 80 % of the token's life has passed.
    pub fn renew_at(&self, ttl: i64) -> Option<i64> {
        let expires = self.expires?;
        let issued = self.issued.unwrap_or(expires - ttl).min(expires);
        Some(issued + (expires - issued) * RENEW_AT_PERCENT / 100)
    }

    /// The token, while it is valid at `now`.
    pub fn valid_token(&self, now: Option<i64>) -> Option<&str> {
        let expires = self.expires?;
        if now.is_some_and(|now| now >= expires) {
            return None;
        }
        self.token.as_deref()
    }
}

/// The name of a cluster's token Secret, beside its Argo CD Secret `cluster-…`.
pub(crate) fn token_secret_name(argo_secret: &str) -> String {
    crate::convert::meta::dns1123_subdomain(&format!("token-{argo_secret}"))
}

/// The ServiceAccount a grant's text names (its first word, `namespace/name`).
fn grant_account(grant: &str) -> &str {
    grant.split(' ').next().unwrap_or_default()
}

/// The namespace and name of a binding written `namespace/name`.
pub fn binding_parts(binding: &str) -> Option<(&str, &str)> {
    binding
        .split_once('/')
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains('/'))
}

/// One cluster's token: whether a new one is due, and all the controller needs to mint it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenNeed {
    /// The cluster, as its source names it.
    pub cluster: String,
    /// The kubeconfig Secret it is for.
    pub kubeconfig: SecretId,
    /// Its token Secret in Argo CD's namespace.
    pub secret: SecretId,
    /// The token Secret as read (uid, resourceVersion): a new token replaces it on that
    /// condition; `None` creates it.
    pub current: Option<(String, String)>,
    /// Why a token is due now; `None`: the current one is good.
    pub due: Option<Due>,
    /// When the current token expires (Unix seconds).
    pub expires: Option<i64>,
    /// When a new token will be due for the current one's age (Unix seconds): a controller
    /// wakes then, whatever else happens.
    pub renew_at: Option<i64>,
    /// How to reach the workload cluster; `Err`: why it cannot be (nothing is minted).
    pub access: Result<AdminAccess, String>,
    /// The ServiceAccount and its role.
    pub grant: Grant,
    /// The life to ask for, in seconds.
    pub ttl: i64,
    /// What the current token is bound to (`namespace/name`), revoked once a new one is in use.
    pub binding: Option<String>,
    /// Bindings of replaced tokens to delete now: Argo CD's Secret carries the current token,
    /// so nothing uses them any more. Deleted, they are dropped from the token Secret
    /// ([`TokenNeed::retired_request`]).
    pub retire: Vec<String>,
    /// The rotation requests (`capi2argo.dev/rotate-token`) the next token acts on.
    pub rotate: Vec<String>,
    /// `impersonate`: what the AppProjects name that is not set up, and why.
    pub not_provisioned: Vec<String>,
    /// What the ServiceAccount may do changed (its role, the cluster's namespaces, the
    /// AppProjects' ServiceAccounts), its token did not: the RBAC is applied again, the token
    /// kept ([`TokenNeed::regranted_request`] records the new grant).
    pub reapply: bool,
    kubeconfig_version: Option<String>,
    /// What is due were no rotation asked for (what a guard that holds the rotation leaves).
    due_unrequested: Option<Due>,
    /// Replaced tokens' bindings not revoked yet (those of the token Secret as read).
    retired: Vec<String>,
    /// The token Secret as read, to write again without its retired bindings.
    kept: Option<KeptToken>,
}

/// The current token and its times, as its token Secret holds them. `Debug` shows no token.
#[derive(Clone, PartialEq, Eq)]
struct KeptToken {
    token: Sensitive,
    issued: i64,
    expires: i64,
    rotated: Vec<String>,
}

impl fmt::Debug for KeptToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeptToken")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// What a token Secret records besides its token.
struct Record<'r> {
    issued: i64,
    expires: i64,
    binding: &'r str,
    retired: &'r [String],
    rotated: &'r [String],
}

impl TokenNeed {
    /// The token Secret that keeps `token`, issued and expiring at these Unix seconds and bound
    /// to `binding` (`namespace/name`); the binding it replaces waits in it to be revoked.
    pub fn secret_of(&self, token: &str, issued: i64, expires: i64, binding: &str) -> Secret {
        let mut retired = self.retired.clone();
        retired.extend(self.binding.iter().filter(|b| *b != binding).cloned());
        retired.retain(|b| b != binding);
        retired.dedup();
        // The newest few: an older one's token has expired long since, or goes with its
        // ServiceAccount.
        let keep = retired.len().saturating_sub(MAX_RETIRED);
        retired.drain(..keep);
        self.record(
            token,
            &Record {
                issued,
                expires,
                binding,
                retired: &retired,
                rotated: &self.rotate,
            },
        )
    }

    fn record(&self, token: &str, record: &Record) -> Secret {
        let mut annotations = vec![
            (KUBECONFIG_ANNOTATION, self.kubeconfig.to_string()),
            (GRANT_ANNOTATION, self.grant.to_string()),
            (ISSUED_ANNOTATION, format_instant(record.issued)),
            (EXPIRES_ANNOTATION, format_instant(record.expires)),
            (BINDING_ANNOTATION, record.binding.to_string()),
        ];
        if let Some(version) = &self.kubeconfig_version {
            annotations.push((KUBECONFIG_VERSION_ANNOTATION, version.clone()));
        }
        if !record.retired.is_empty() {
            annotations.push((RETIRED_ANNOTATION, record.retired.join(",")));
        }
        if !record.rotated.is_empty() {
            let list = serde_json::to_string(record.rotated).unwrap_or_default();
            annotations.push((ROTATE_ANNOTATION, list));
        }
        let pairs = |pairs: Vec<(&str, String)>| {
            pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
        };
        Secret {
            name: self.secret.name.clone(),
            namespace: self.secret.namespace.clone(),
            labels: pairs(vec![
                (TOKEN_LABEL, TOKEN_LABEL_VALUE.to_string()),
                (MANAGED_BY_LABEL, MANAGED_BY.to_string()),
            ]),
            annotations: pairs(annotations),
            type_: TOKEN_SECRET_TYPE.to_string(),
            data: vec![("token".to_string(), token.as_bytes().to_vec())],
        }
    }

    /// The request that keeps `token`, bound to `binding`, in the token Secret: a create, or a
    /// replace of [`TokenNeed::current`] as it was read.
    pub fn request(&self, token: &str, issued: i64, expires: i64, binding: &str) -> Request {
        self.write(self.secret_of(token, issued, expires, binding))
    }

    /// Once [`TokenNeed::retire`]'s bindings are deleted: the token Secret as read, without
    /// them. `None` when there is nothing to drop.
    pub fn retired_request(&self) -> Option<Request> {
        let kept = self.kept.as_ref()?;
        let binding = self.binding.as_deref()?;
        if self.retire.is_empty() {
            return None;
        }
        let retired: Vec<String> = self
            .retired
            .iter()
            .filter(|b| !self.retire.contains(b))
            .cloned()
            .collect();
        let record = Record {
            issued: kept.issued,
            expires: kept.expires,
            binding,
            retired: &retired,
            rotated: &kept.rotated,
        };
        Some(self.write(self.record(&kept.token.0, &record)))
    }

    /// Once the RBAC is applied again ([`TokenNeed::reapply`]): the token Secret as read, with
    /// the grant now given.
    pub fn regranted_request(&self) -> Option<Request> {
        let kept = self.kept.as_ref()?;
        let binding = self.binding.as_deref()?;
        let record = Record {
            issued: kept.issued,
            expires: kept.expires,
            binding,
            retired: &self.retired,
            rotated: &kept.rotated,
        };
        Some(self.write(self.record(&kept.token.0, &record)))
    }

    fn write(&self, secret: Secret) -> Request {
        match &self.current {
            Some((uid, version)) => Request::Replace {
                secret,
                preconditions: Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: Some(version.clone()),
                },
            },
            None => Request::Create(secret),
        }
    }

    /// Bindings of replaced tokens that wait to be revoked.
    pub fn retired(&self) -> &[String] {
        &self.retired
    }

    /// Whether a rotation asked for is what makes the token due.
    pub fn requested(&self) -> bool {
        self.due == Some(Due::Requested)
    }

    /// A guard holds the rotation asked for: the token is minted only if it is due otherwise,
    /// and the request stays unanswered (not recorded).
    pub(crate) fn hold_rotation(&mut self) {
        if self.requested() {
            // The annotation asked on the kubeconfig Secret itself changed it: that change is
            // the request, held with it (a token due for its age is still minted).
            self.due = self.due_unrequested.filter(|d| *d != Due::Rotated);
            self.rotate = self
                .kept
                .as_ref()
                .map(|k| k.rotated.clone())
                .unwrap_or_default();
        }
    }

    /// Argo CD's Secret carries the current token: the replaced tokens' bindings may go now.
    pub(crate) fn retire_now(&mut self) {
        if self.kept.is_some() && self.binding.is_some() {
            self.retire = self
                .retired
                .iter()
                .filter(|b| Some(b.as_str()) != self.binding.as_deref())
                .cloned()
                .collect();
        }
    }
}

/// What the conversion of one cluster in `serviceAccount` mode gives.
pub(crate) enum Login {
    /// The Argo CD Secret's config: the connection, and the token instead of the admin login.
    Token {
        config: Box<ClusterConfig>,
        expires: i64,
    },
    /// No valid token yet: the cluster waits (an Argo CD Secret it has is kept as it is).
    Waiting(String),
}

/// The need of one cluster, and what its Argo CD Secret logs in with now.
pub(crate) fn least_privilege(
    settings: &Settings,
    now: Option<i64>,
    server: &str,
    admin: &ClusterConfig,
    token: Option<&TokenSecret>,
    need: NeedOf,
) -> (TokenNeed, Login) {
    let grant = Grant {
        account: ServiceAccount {
            namespace: settings.account.0.clone(),
            name: settings.account.1.clone(),
        },
        granted: match &settings.role {
            Role::Admin => Granted::Admin,
            Role::Namespaced => Granted::Namespaced {
                namespaces: need.namespaces.clone().unwrap_or_default(),
                cluster_resources: need.cluster_resources,
            },
            Role::Named(name) => Granted::ClusterRole(name.clone()),
            Role::Impersonate => Granted::Impersonate(
                need.impersonation
                    .as_ref()
                    .map(|i| i.accounts.clone())
                    .unwrap_or_default(),
            ),
        },
    };
    let grant_text = grant.to_string();
    let nowhere =
        matches!(&grant.granted, Granted::Namespaced { namespaces, .. } if namespaces.is_empty());
    let access = if nowhere {
        Err("serviceAccountRole=namespaced grants a Role in each of the cluster's namespaces, and it has none: set `namespaces` (an Argo CD Secret without them means every namespace)".to_string())
    } else {
        AdminAccess::of(server, admin)
    };
    let due_for = |rotate: &[String]| match token {
        Some(t) => t.due(
            now,
            settings.ttl,
            need.kubeconfig_version.as_deref(),
            &grant_text,
            rotate,
        ),
        None => Some(Due::Missing),
    };
    let due = due_for(&need.rotate);
    let reapply = access.is_ok()
        && due.is_none()
        && token.is_some_and(|t| t.grant.as_deref() != Some(grant_text.as_str()));
    let due_unrequested = due_for(token.map_or(&[], |t| &t.rotated));
    let login = match token.and_then(|t| Some((t.valid_token(now)?, t.expires?))) {
        Some((valid, expires)) => {
            let mut config = admin.clone().without_login();
            config.bearer_token = Some(Sensitive(valid.to_string()));
            Login::Token {
                config: Box::new(config),
                expires,
            }
        }
        None => Login::Waiting(match (&access, token) {
            (Err(why), _) => why.clone(),
            (Ok(_), Some(t)) if t.token.is_some() => {
                "its ServiceAccount token has expired and could not be renewed yet".into()
            }
            (Ok(_), _) => {
                "waiting for its ServiceAccount token, which capi2argo-controller mints".into()
            }
        }),
    };
    let need = TokenNeed {
        cluster: need.cluster,
        kubeconfig: need.kubeconfig,
        // The token Secret found keeps its name (the cluster's Argo CD Secret may have been
        // renamed since): a new token replaces it where it is.
        secret: token.map_or(need.secret, |t| t.id.clone()),
        current: token.and_then(|t| Some((t.uid.clone()?, t.resource_version.clone()?))),
        due: if access.is_ok() { due } else { None },
        expires: token.and_then(|t| t.expires),
        renew_at: token.and_then(|t| t.renew_at(settings.ttl)),
        access,
        grant,
        ttl: settings.ttl,
        binding: token.and_then(|t| t.binding.clone()),
        retire: Vec::new(),
        rotate: need.rotate,
        not_provisioned: need.impersonation.map(|i| i.unknown).unwrap_or_default(),
        reapply,
        kubeconfig_version: need.kubeconfig_version,
        due_unrequested: due.and(due_unrequested),
        retired: token.map(|t| t.retired.clone()).unwrap_or_default(),
        kept: token.and_then(|t| {
            Some(KeptToken {
                token: Sensitive(t.token.clone()?),
                issued: t.issued?,
                expires: t.expires?,
                rotated: t.rotated.clone(),
            })
        }),
    };
    (need, login)
}

/// What [`least_privilege`] knows of the cluster besides its config.
pub(crate) struct NeedOf {
    pub cluster: String,
    pub kubeconfig: SecretId,
    pub kubeconfig_version: Option<String>,
    pub secret: SecretId,
    pub namespaces: Option<Vec<String>>,
    pub cluster_resources: bool,
    /// The rotation requests on its kubeconfig Secret and Cluster.
    pub rotate: Vec<String>,
    /// `serviceAccountRole: impersonate`: the ServiceAccounts Argo CD's AppProjects name here.
    pub impersonation: Option<crate::projects::Accounts>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(issued: i64, expires: i64) -> TokenSecret {
        TokenSecret {
            index: 0,
            id: SecretId::new("argocd", "token-cluster-a"),
            token: Some("t".into()),
            issued: Some(issued),
            expires: Some(expires),
            kubeconfig_version: Some("7".into()),
            grant: Some("g".into()),
            binding: Some("kube-system/argocd-manager-token-1".into()),
            retired: Vec::new(),
            rotated: vec!["1".into()],
            uid: None,
            resource_version: None,
        }
    }

    #[test]
    fn a_token_is_renewed_at_80_percent_of_its_life() {
        let t = token(1000, 2000);
        assert_eq!(t.due(Some(1799), 1000, Some("7"), "g", &[]), None);
        assert_eq!(
            t.due(Some(1800), 1000, Some("7"), "g", &[]),
            Some(Due::Renew)
        );
        assert_eq!(
            t.due(Some(2000), 1000, Some("7"), "g", &[]),
            Some(Due::Expired)
        );
        assert_eq!(t.due(None, 1000, Some("7"), "g", &[]), None);
        // Without its issue time, the token's life is taken as the one asked for.
        let mut unissued = token(1000, 2000);
        unissued.issued = None;
        assert_eq!(unissued.due(Some(1799), 1000, Some("7"), "g", &[]), None);
        assert_eq!(
            unissued.due(Some(1800), 1000, Some("7"), "g", &[]),
            Some(Due::Renew)
        );
    }

    #[test]
    fn a_rotated_kubeconfig_or_another_grant_mints_again() {
        let t = token(1000, 2000);
        assert_eq!(
            t.due(Some(1100), 1000, Some("8"), "g", &[]),
            Some(Due::Rotated)
        );
        assert_eq!(t.due(Some(1100), 1000, None, "g", &[]), None);
        assert_eq!(
            t.due(Some(1100), 1000, Some("7"), "h", &[]),
            Some(Due::Regrant)
        );
        // The same ServiceAccount, granted another role: no new token (its RBAC is applied again).
        assert_eq!(
            t.due(Some(1100), 1000, Some("7"), "g namespaced a", &[]),
            None
        );
    }

    #[test]
    fn a_rotation_is_asked_for_by_a_value_not_acted_on_yet() {
        let t = token(1000, 2000);
        let asked = |values: &[&str]| {
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            t.due(Some(1100), 1000, Some("7"), "g", &values)
        };
        assert_eq!(asked(&["1"]), None);
        assert_eq!(asked(&[]), None);
        assert_eq!(asked(&["2"]), Some(Due::Requested));
        assert_eq!(asked(&["1", "2"]), Some(Due::Requested));
    }

    #[test]
    fn a_token_bound_to_nothing_is_replaced_by_a_bound_one() {
        let mut t = token(1000, 2000);
        t.binding = None;
        assert_eq!(
            t.due(Some(1100), 1000, Some("7"), "g", &[]),
            Some(Due::Unbound)
        );
        assert_eq!(
            t.due(Some(2000), 1000, Some("7"), "g", &[]),
            Some(Due::Expired)
        );
    }

    #[test]
    fn a_binding_is_a_namespace_and_a_name() {
        assert_eq!(
            binding_parts("kube-system/t-1"),
            Some(("kube-system", "t-1"))
        );
        for bad in ["", "t-1", "/t-1", "ns/", "ns/a/b"] {
            assert_eq!(binding_parts(bad), None, "{bad}");
        }
    }

    fn need(token: &TokenSecret, rotate: &[&str]) -> TokenNeed {
        need_at(token, rotate, "7", 1100)
    }

    fn need_at(token: &TokenSecret, rotate: &[&str], version: &str, now: i64) -> TokenNeed {
        let settings = Settings {
            mode: CredentialMode::ServiceAccount,
            ..Settings::default()
        };
        let admin = ClusterConfig {
            bearer_token: Some(Sensitive("admin".into())),
            ..ClusterConfig::default()
        };
        let of = NeedOf {
            cluster: "a".into(),
            kubeconfig: SecretId::new("fleet", "a-kubeconfig"),
            kubeconfig_version: Some(version.into()),
            secret: SecretId::new("argocd", "token-cluster-a"),
            namespaces: None,
            cluster_resources: false,
            rotate: rotate.iter().map(|r| r.to_string()).collect(),
            impersonation: None,
        };
        least_privilege(
            &settings,
            Some(now),
            "https://a:6443",
            &admin,
            Some(token),
            of,
        )
        .0
    }

    fn annotation<'s>(secret: &'s Secret, key: &str) -> Option<&'s str> {
        secret
            .annotations
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A new token's Secret names its binding, keeps the one it replaces to revoke later, and
    /// records the rotation requests it answers; once those are revoked, they are dropped.
    #[test]
    fn a_replaced_binding_waits_in_the_token_secret_until_revoked() {
        let mut t = token(1000, 2000);
        t.grant = Some("kube-system/argocd-manager admin".into());
        t.uid = Some("u".into());
        t.resource_version = Some("9".into());
        let asked = need(&t, &["2"]);
        assert_eq!(asked.due, Some(Due::Requested));
        let new = asked.secret_of("t2", 1100, 2100, "kube-system/argocd-manager-token-2");
        assert_eq!(
            annotation(&new, BINDING_ANNOTATION),
            Some("kube-system/argocd-manager-token-2")
        );
        assert_eq!(
            annotation(&new, RETIRED_ANNOTATION),
            Some("kube-system/argocd-manager-token-1")
        );
        assert_eq!(annotation(&new, ROTATE_ANNOTATION), Some(r#"["2"]"#));
        // Read back: nothing due, the old binding waits until the plan says Argo CD has moved.
        t.binding = Some("kube-system/argocd-manager-token-2".into());
        t.retired = vec!["kube-system/argocd-manager-token-1".into()];
        t.rotated = vec!["2".into()];
        let mut current = need(&t, &["2"]);
        assert_eq!(current.due, None);
        assert!(current.retire.is_empty());
        assert_eq!(current.retired_request(), None);
        current.retire_now();
        assert_eq!(current.retire, vec!["kube-system/argocd-manager-token-1"]);
        let Some(Request::Replace {
            secret,
            preconditions,
        }) = current.retired_request()
        else {
            panic!("a replace of the token Secret as read");
        };
        assert_eq!(annotation(&secret, RETIRED_ANNOTATION), None);
        assert_eq!(
            annotation(&secret, BINDING_ANNOTATION),
            Some("kube-system/argocd-manager-token-2")
        );
        assert_eq!(secret.data, vec![("token".to_string(), b"t".to_vec())]);
        assert_eq!(preconditions.resource_version.as_deref(), Some("9"));
    }

    /// A guard that holds a rotation leaves the token as it is unless it is due for its age, and
    /// the request unanswered.
    #[test]
    fn a_held_rotation_leaves_the_request_unanswered() {
        let mut t = token(1000, 2000);
        t.grant = Some("kube-system/argocd-manager admin".into());
        let mut asked = need(&t, &["2"]);
        asked.hold_rotation();
        assert_eq!(asked.due, None);
        assert_eq!(asked.rotate, vec!["1"]);
        // Asked on the kubeconfig Secret, the request changed its resourceVersion: held too.
        let mut asked = need_at(&t, &["2"], "8", 1100);
        assert_eq!(asked.due, Some(Due::Requested));
        asked.hold_rotation();
        assert_eq!(asked.due, None);
        // Due for its age all the same: still renewed.
        let mut aged = need_at(&t, &["2"], "8", 1900);
        aged.hold_rotation();
        assert_eq!(aged.due, Some(Due::Renew));
    }
}
