//! `credentials: serviceAccount` in the workload clusters: the ServiceAccount and the RBAC the
//! plan's grant names, applied server-side as field manager `capi2argo`; a bound token from the
//! TokenRequest API; and, when a cluster goes, the same objects deleted. The admin credential
//! it connects with stays in memory: it is never written, logged or handed to anything else.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use capi2argo_core::{AdminAccess, Grant, Granted};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster,
    NamedContext,
};
use kube::{Client, Config, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::sync::FIELD_MANAGER;

/// The label on everything this sets up in a workload cluster: what it may delete again.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "capi2argo");
/// The labels naming the ServiceAccount an RBAC object is for (each a DNS label: it fits).
const ACCOUNT_NAMESPACE_LABEL: &str = "capi2argo.dev/service-account-namespace";
const ACCOUNT_NAME_LABEL: &str = "capi2argo.dev/service-account";
/// The roles and bindings are `capi2argo-<ServiceAccount>[-suffix]`: never the names
/// `argocd cluster add` gives its own (`argocd-manager-role`), which this must not take over.
const PREFIX: &str = "capi2argo";
/// How long one workload cluster may take to connect and to answer.
const CONNECT: Duration = Duration::from_secs(5);
const ANSWER: Duration = Duration::from_secs(15);

/// Why a workload cluster could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error("connecting to {server}: {reason}")]
    Connect { server: String, reason: String },
    #[error("{what} in the workload cluster: {error}")]
    Api { what: String, error: kube::Error },
    #[error("the TokenRequest for {account} gave no token")]
    NoToken { account: String },
}

/// A client of a workload cluster, from the admin credential alone: no file, no exec plugin.
pub async fn client(access: &AdminAccess) -> Result<Client, MintError> {
    let failed = |reason: String| MintError::Connect {
        server: access.server.clone(),
        reason,
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
        .map_err(|e| failed(e.to_string()))?;
    config.connect_timeout = Some(CONNECT);
    config.read_timeout = Some(ANSWER);
    config.write_timeout = Some(ANSWER);
    Client::try_from(config).map_err(|e| failed(e.to_string()))
}

/// A minted token and when it stops being valid (Unix seconds).
pub struct Minted {
    pub token: String,
    pub expires: i64,
}

/// Sets up the ServiceAccount and what `grant` gives it (removing what it gave before and no
/// longer does), then mints a token that lives `ttl` seconds.
pub async fn mint(client: &Client, grant: &Grant, ttl: i64) -> Result<Minted, MintError> {
    let account = &grant.account;
    let labels = labels(grant);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &account.namespace);
    let sa = ServiceAccount {
        metadata: meta(&account.name, Some(&account.namespace), &labels),
        ..ServiceAccount::default()
    };
    apply(&accounts, &account.name, &sa, "the ServiceAccount").await?;
    let wanted = grant_objects(grant, &labels);
    for role in &wanted.cluster_roles {
        let api: Api<ClusterRole> = Api::all(client.clone());
        apply(&api, &name_of(&role.metadata), role, "a ClusterRole").await?;
    }
    for binding in &wanted.cluster_bindings {
        let api: Api<ClusterRoleBinding> = Api::all(client.clone());
        apply(
            &api,
            &name_of(&binding.metadata),
            binding,
            "a ClusterRoleBinding",
        )
        .await?;
    }
    for role in &wanted.roles {
        let ns = role.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Role> = Api::namespaced(client.clone(), &ns);
        apply(
            &api,
            &name_of(&role.metadata),
            role,
            &format!("a Role in {ns}"),
        )
        .await?;
    }
    for binding in &wanted.bindings {
        let ns = binding.metadata.namespace.clone().unwrap_or_default();
        let api: Api<RoleBinding> = Api::namespaced(client.clone(), &ns);
        let what = format!("a RoleBinding in {ns}");
        apply(&api, &name_of(&binding.metadata), binding, &what).await?;
    }
    remove_others(client, grant, &wanted).await?;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(ttl),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let answer = accounts
        .create_token_request(&account.name, &PostParams::default(), &request)
        .await
        .map_err(|error| MintError::Api {
            what: format!("a TokenRequest for {account}"),
            error,
        })?;
    let status = answer.status.ok_or_else(|| MintError::NoToken {
        account: account.to_string(),
    })?;
    Ok(Minted {
        token: status.token,
        expires: status.expiration_timestamp.0.as_second(),
    })
}

/// Deletes the ServiceAccount and every RBAC object set up for it.
pub async fn revoke(client: &Client, grant: &Grant) -> Result<(), MintError> {
    let nothing = Wanted::default();
    remove_others(client, grant, &nothing).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &grant.account.namespace);
    delete(&accounts, &grant.account.name, "the ServiceAccount").await
}

/// The RBAC objects a grant needs.
#[derive(Default)]
struct Wanted {
    cluster_roles: Vec<ClusterRole>,
    cluster_bindings: Vec<ClusterRoleBinding>,
    roles: Vec<Role>,
    bindings: Vec<RoleBinding>,
}

fn grant_objects(grant: &Grant, labels: &BTreeMap<String, String>) -> Wanted {
    let everything = PolicyRule {
        api_groups: Some(vec!["*".into()]),
        resources: Some(vec!["*".into()]),
        verbs: vec!["*".into()],
        ..PolicyRule::default()
    };
    let subject = Subject {
        kind: "ServiceAccount".into(),
        name: grant.account.name.clone(),
        namespace: Some(grant.account.namespace.clone()),
        ..Subject::default()
    };
    let base = format!("{PREFIX}-{}", grant.account.name);
    let cluster_binding = |name: &str, role: &str| ClusterRoleBinding {
        metadata: meta(name, None, labels),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(vec![subject.clone()]),
    };
    let mut wanted = Wanted::default();
    match &grant.granted {
        Granted::Admin => {
            // As `argocd cluster add` grants (util/clusterauth/clusterauth.go).
            let urls = PolicyRule {
                non_resource_urls: Some(vec!["*".into()]),
                verbs: vec!["*".into()],
                ..PolicyRule::default()
            };
            wanted.cluster_roles.push(ClusterRole {
                metadata: meta(&base, None, labels),
                rules: Some(vec![everything, urls]),
                ..ClusterRole::default()
            });
            wanted.cluster_bindings.push(cluster_binding(&base, &base));
        }
        Granted::ClusterRole(role) => {
            // The role in the binding's name: a binding's roleRef cannot change, so another
            // role is another binding (the old one is removed below).
            let name = format!("{base}-{role}");
            wanted.cluster_bindings.push(cluster_binding(&name, role));
        }
        Granted::Namespaced {
            namespaces,
            cluster_resources,
        } => {
            for ns in namespaces {
                wanted.roles.push(Role {
                    metadata: meta(&base, Some(ns), labels),
                    rules: Some(vec![everything.clone()]),
                });
                wanted.bindings.push(RoleBinding {
                    metadata: meta(&base, Some(ns), labels),
                    role_ref: RoleRef {
                        api_group: "rbac.authorization.k8s.io".into(),
                        kind: "Role".into(),
                        name: base.clone(),
                    },
                    subjects: Some(vec![subject.clone()]),
                });
            }
            if *cluster_resources {
                let name = format!("{base}-cluster-resources");
                wanted.cluster_roles.push(ClusterRole {
                    metadata: meta(&name, None, labels),
                    rules: Some(cluster_scoped_rules()),
                    ..ClusterRole::default()
                });
                wanted.cluster_bindings.push(cluster_binding(&name, &name));
            }
        }
    }
    wanted
}

/// `clusterResources` in namespaced mode: every verb on the cluster-scoped kinds Argo CD
/// deploys most, and none that would let it grant itself more (ClusterRoles and their bindings,
/// admission webhooks, API services): no namespaced kind outside the cluster's `namespaces`.
fn cluster_scoped_rules() -> Vec<PolicyRule> {
    let kinds: &[(&str, &[&str])] = &[
        ("", &["namespaces", "persistentvolumes"]),
        ("apiextensions.k8s.io", &["customresourcedefinitions"]),
        ("storage.k8s.io", &["storageclasses"]),
        ("scheduling.k8s.io", &["priorityclasses"]),
        ("networking.k8s.io", &["ingressclasses"]),
    ];
    kinds
        .iter()
        .map(|(group, resources)| PolicyRule {
            api_groups: Some(vec![(*group).into()]),
            resources: Some(resources.iter().map(|r| (*r).into()).collect()),
            verbs: vec!["*".into()],
            ..PolicyRule::default()
        })
        .collect()
}

/// Deletes what was set up for this ServiceAccount before and is not wanted now (a grant
/// narrowed from admin to namespaced leaves no ClusterRoleBinding behind).
async fn remove_others(client: &Client, grant: &Grant, wanted: &Wanted) -> Result<(), MintError> {
    let selector = format!(
        "{}={},{ACCOUNT_NAMESPACE_LABEL}={},{ACCOUNT_NAME_LABEL}={}",
        MANAGED_BY.0, MANAGED_BY.1, grant.account.namespace, grant.account.name
    );
    let keep = |m: &ObjectMeta, names: Vec<(Option<String>, String)>| {
        names.contains(&(m.namespace.clone(), name_of(m)))
    };
    let listed = ListParams::default().labels(&selector);
    let api: Api<ClusterRoleBinding> = Api::all(client.clone());
    let names = wanted
        .cluster_bindings
        .iter()
        .map(|b| (None, name_of(&b.metadata)))
        .collect::<Vec<_>>();
    for b in list(&api, &listed, "ClusterRoleBindings").await? {
        if !keep(&b.metadata, names.clone()) {
            delete(&api, &name_of(&b.metadata), "a ClusterRoleBinding").await?;
        }
    }
    let api: Api<ClusterRole> = Api::all(client.clone());
    let names = wanted
        .cluster_roles
        .iter()
        .map(|r| (None, name_of(&r.metadata)))
        .collect::<Vec<_>>();
    for r in list(&api, &listed, "ClusterRoles").await? {
        if !keep(&r.metadata, names.clone()) {
            delete(&api, &name_of(&r.metadata), "a ClusterRole").await?;
        }
    }
    let api: Api<RoleBinding> = Api::all(client.clone());
    let names = wanted
        .bindings
        .iter()
        .map(|b| (b.metadata.namespace.clone(), name_of(&b.metadata)))
        .collect::<Vec<_>>();
    for b in list(&api, &listed, "RoleBindings").await? {
        if !keep(&b.metadata, names.clone()) {
            let ns = b.metadata.namespace.clone().unwrap_or_default();
            let api: Api<RoleBinding> = Api::namespaced(client.clone(), &ns);
            delete(&api, &name_of(&b.metadata), "a RoleBinding").await?;
        }
    }
    let api: Api<Role> = Api::all(client.clone());
    let names = wanted
        .roles
        .iter()
        .map(|r| (r.metadata.namespace.clone(), name_of(&r.metadata)))
        .collect::<Vec<_>>();
    for r in list(&api, &listed, "Roles").await? {
        if !keep(&r.metadata, names.clone()) {
            let ns = r.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Role> = Api::namespaced(client.clone(), &ns);
            delete(&api, &name_of(&r.metadata), "a Role").await?;
        }
    }
    Ok(())
}

fn labels(grant: &Grant) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (
            ACCOUNT_NAMESPACE_LABEL.to_string(),
            grant.account.namespace.clone(),
        ),
        (ACCOUNT_NAME_LABEL.to_string(), grant.account.name.clone()),
    ])
}

fn meta(name: &str, namespace: Option<&str>, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(String::from),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    }
}

fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

async fn apply<K>(api: &Api<K>, name: &str, object: &K, what: &str) -> Result<(), MintError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    <K as Resource>::DynamicType: Default,
{
    let mut object = serde_json::to_value(object).unwrap_or_default();
    object["apiVersion"] = K::api_version(&Default::default()).into();
    object["kind"] = K::kind(&Default::default()).into();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(&object))
        .await
        .map(|_| ())
        .map_err(|error| MintError::Api {
            what: format!("applying {what} ({name})"),
            error,
        })
}

async fn list<K>(api: &Api<K>, params: &ListParams, what: &str) -> Result<Vec<K>, MintError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.list(params)
        .await
        .map(|l| l.items)
        .map_err(|error| MintError::Api {
            what: format!("listing {what}"),
            error,
        })
}

async fn delete<K>(api: &Api<K>, name: &str, what: &str) -> Result<(), MintError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(MintError::Api {
            what: format!("deleting {what} ({name})"),
            error,
        }),
    }
}

/// Workload clusters that failed, and when each may be tried again (a doubling wait, from 10 s
/// to 5 minutes), so an unreachable cluster does not hold every reconcile up; and clusters just
/// minted for, which wait a minute whatever their clocks say (a workload cluster's clock behind
/// the controller's would make a fresh token look due at once).
#[derive(Default)]
pub struct Backoff {
    waits: BTreeMap<String, (Instant, Duration)>,
    cooling: BTreeMap<String, Instant>,
}

/// How long a cluster just minted for waits before it may be minted for again.
const COOLDOWN: Duration = Duration::from_secs(60);

impl Backoff {
    /// Whether `key` may be tried now; `by_age`: for a token's age, which a fresh token's
    /// cooldown holds back (a rotated kubeconfig, a new grant do not wait).
    pub fn ready(&self, key: &str, by_age: bool) -> bool {
        let now = Instant::now();
        self.waits.get(key).is_none_or(|(next, _)| now >= *next)
            && (!by_age || self.cooling.get(key).is_none_or(|until| now >= *until))
    }

    /// A token was minted and kept for `key`.
    pub fn minted(&mut self, key: &str) {
        self.waits.remove(key);
        self.cooling
            .insert(key.to_string(), Instant::now() + COOLDOWN);
    }

    /// Minting or keeping a token for `key` failed.
    pub fn failed(&mut self, key: &str) {
        let wait = self
            .waits
            .get(key)
            .map_or(Duration::from_secs(10), |(_, w)| {
                (*w * 2).min(Duration::from_secs(300))
            });
        self.waits
            .insert(key.to_string(), (Instant::now() + wait, wait));
    }

    /// The next moment a cluster waiting here may be tried again.
    pub fn next(&self) -> Option<Instant> {
        let now = Instant::now();
        self.waits
            .values()
            .map(|(next, _)| *next)
            .chain(self.cooling.values().copied())
            .filter(|t| *t > now)
            .min()
    }

    /// Forgets clusters the plan no longer has a token for.
    pub fn forget_all_but(&mut self, live: &BTreeSet<String>) {
        self.waits.retain(|k, _| live.contains(k));
        self.cooling.retain(|k, _| live.contains(k));
    }

    /// The clusters failing now.
    pub fn failing(&self) -> BTreeSet<String> {
        self.waits.keys().cloned().collect()
    }
}
