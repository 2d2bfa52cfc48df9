//! What a grant sets up in a workload cluster: the ServiceAccount and the RBAC the plan's grant
//! names, applied server-side as field manager `capi2argo`, then a token from the TokenRequest
//! API bound to a Secret of its own (deleting that Secret revokes the token); and, when a
//! cluster goes, the same objects deleted.

use std::collections::BTreeMap;

use capi2argo_core::well_known::{
    BINDING_LABEL_VALUE, BINDING_SECRET_TYPE, BOUND_FOR_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL,
    TOKEN_LABEL,
};
use capi2argo_core::{Grant, Granted, SecretId, binding_parts};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The labels naming the ServiceAccount an RBAC object is for (each a DNS label: it fits).
pub(super) const ACCOUNT_NAMESPACE_LABEL: &str = "capi2argo.dev/service-account-namespace";
pub(super) const ACCOUNT_NAME_LABEL: &str = "capi2argo.dev/service-account";
/// The roles and bindings are `capi2argo-<ServiceAccount>[-suffix]`: never the names
/// `argocd cluster add` gives its own (`argocd-manager-role`), which this must not take over.
pub(super) const PREFIX: &str = "capi2argo";
use super::MintError;

/// A minted token, when it stops being valid (Unix seconds), and the Secret it is bound to
/// (`namespace/name`).
pub struct Minted {
    pub token: String,
    pub expires: i64,
    pub binding: String,
}

/// Sets up the ServiceAccount and what `grant` gives it (removing what it gave before and no
/// longer does), then mints a token that lives `ttl` seconds, bound to a new Secret that stands
/// for it alone; `for_secret` is the token Secret that will keep it.
pub async fn mint(
    client: &Client,
    grant: &Grant,
    ttl: i64,
    for_secret: &SecretId,
) -> Result<Minted, MintError> {
    set_up(client, grant).await?;
    mint_token(client, grant, ttl, for_secret).await
}

/// Sets up the ServiceAccount and what `grant` gives it, removing what it gave before and no
/// longer does; its tokens are left as they are (a ServiceAccount's rights are its RBAC's).
pub async fn set_up(client: &Client, grant: &Grant) -> Result<(), MintError> {
    let account = &grant.account;
    let labels = labels(grant);
    ensure_namespace(client, &account.namespace, &labels).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &account.namespace);
    let sa = ServiceAccount {
        metadata: meta(&account.name, Some(&account.namespace), &labels),
        ..ServiceAccount::default()
    };
    apply(&accounts, &account.name, &sa, "the ServiceAccount").await?;
    if let Granted::Impersonate(impersonated) = &grant.granted {
        super::impersonation::ensure_accounts(client, grant, impersonated, &labels).await?;
    }
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
    let impersonated = match &grant.granted {
        Granted::Impersonate(accounts) => accounts.as_slice(),
        _ => &[],
    };
    super::impersonation::remove_others(client, grant, impersonated).await
}

/// A token for the ServiceAccount of `grant`, living `ttl` seconds, bound to a new Secret that
/// stands for it alone; `for_secret` is the token Secret that will keep it.
async fn mint_token(
    client: &Client,
    grant: &Grant,
    ttl: i64,
    for_secret: &SecretId,
) -> Result<Minted, MintError> {
    let account = &grant.account;
    let labels = labels(grant);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &account.namespace);
    let binding = create_binding(client, grant, &labels, for_secret).await?;
    let binding_name = name_of(&binding.metadata);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(ttl),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Secret".into()),
                name: Some(binding_name.clone()),
                uid: binding.metadata.uid.clone(),
            }),
        },
        ..TokenRequest::default()
    };
    let answer = accounts
        .create_token_request(&account.name, &PostParams::default(), &request)
        .await
        .map_err(|source| MintError::Api {
            what: format!("a TokenRequest for {account}"),
            source,
        });
    let status = match answer.map(|a| a.status) {
        Ok(Some(status)) => status,
        failed => {
            // The binding stands for no token: it goes, whatever else failed.
            let secrets: Api<Secret> = Api::namespaced(client.clone(), &account.namespace);
            let _ = delete(&secrets, &binding_name, "the token's binding Secret").await;
            failed?;
            return Err(MintError::NoToken {
                account: account.to_string(),
            });
        }
    };
    Ok(Minted {
        token: status.token,
        expires: status.expiration_timestamp.0.as_second(),
        binding: format!("{}/{binding_name}", account.namespace),
    })
}

/// Creates the Secret a new token is bound to, in the ServiceAccount's namespace: named by the
/// server (`<ServiceAccount>-token-<random>`), labelled as the ServiceAccount is, holding nothing.
async fn create_binding(
    client: &Client,
    grant: &Grant,
    labels: &BTreeMap<String, String>,
    for_secret: &SecretId,
) -> Result<Secret, MintError> {
    let account = &grant.account;
    let mut labels = labels.clone();
    labels.insert(TOKEN_LABEL.into(), BINDING_LABEL_VALUE.into());
    let mut metadata = meta("", Some(&account.namespace), &labels);
    metadata.name = None;
    metadata.generate_name = Some(format!(
        "{}-token-",
        account.name.chars().take(50).collect::<String>()
    ));
    metadata.annotations = Some(BTreeMap::from([(
        BOUND_FOR_ANNOTATION.to_string(),
        for_secret.to_string(),
    )]));
    let binding = Secret {
        metadata,
        type_: Some(BINDING_SECRET_TYPE.into()),
        ..Secret::default()
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &account.namespace);
    secrets
        .create(&PostParams::default(), &binding)
        .await
        .map_err(|source| MintError::Api {
            what: format!("creating the binding Secret of a token for {account}"),
            source,
        })
}

/// Revokes the tokens bound to `bindings` (`namespace/name`): each binding Secret deleted, one
/// already gone taken as revoked. Only a binding Secret capi2argo made for the token Secret
/// `for_secret` is deleted (its type, label and annotation say so), on its uid: a name written
/// into a token Secret by anyone else deletes nothing.
pub async fn unbind(
    client: &Client,
    bindings: &[String],
    for_secret: &SecretId,
) -> Result<(), MintError> {
    for binding in bindings {
        let Some((namespace, name)) = binding_parts(binding) else {
            continue;
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let found = secrets
            .get_opt(name)
            .await
            .map_err(|source| MintError::Api {
                what: format!("reading the binding Secret {binding}"),
                source,
            })?;
        let Some(found) = found else {
            continue;
        };
        let ours = found.type_.as_deref() == Some(BINDING_SECRET_TYPE)
            && found.labels().get(TOKEN_LABEL).map(String::as_str) == Some(BINDING_LABEL_VALUE)
            && found.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY)
            && found.annotations().get(BOUND_FOR_ANNOTATION) == Some(&for_secret.to_string());
        if !ours {
            tracing::warn!(binding = %binding, secret = %for_secret, "not deleted: the Secret a token Secret names as its binding is not a binding capi2argo made for it");
            continue;
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: found.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match secrets.delete(name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
            Err(source) => {
                return Err(MintError::Api {
                    what: format!("deleting the binding Secret {binding}"),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Creates the ServiceAccount's namespace where it is missing (server-side, labelled as the
/// ServiceAccount is). One that exists is left as it is: applying would claim its labels (a
/// `kube-system` marked as capi2argo's).
pub(super) async fn ensure_namespace(
    client: &Client,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<(), MintError> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let found = namespaces
        .get_opt(name)
        .await
        .map_err(|source| MintError::Api {
            what: format!("reading the namespace {name}"),
            source,
        })?;
    if found.is_some() {
        return Ok(());
    }
    let namespace = Namespace {
        metadata: meta(name, None, labels),
        ..Namespace::default()
    };
    apply(&namespaces, name, &namespace, "the namespace").await
}

/// Deletes the ServiceAccount and every RBAC object set up for it.
pub async fn revoke(client: &Client, grant: &Grant) -> Result<(), MintError> {
    let nothing = Wanted::default();
    remove_others(client, grant, &nothing).await?;
    super::impersonation::remove_others(client, grant, &[]).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &grant.account.namespace);
    delete(&accounts, &grant.account.name, "the ServiceAccount").await
}

/// The RBAC objects a grant needs.
#[derive(Default)]
pub(super) struct Wanted {
    pub cluster_roles: Vec<ClusterRole>,
    pub cluster_bindings: Vec<ClusterRoleBinding>,
    pub roles: Vec<Role>,
    pub bindings: Vec<RoleBinding>,
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
        Granted::Impersonate(accounts) => {
            super::impersonation::objects(grant, accounts, labels, &subject, &mut wanted);
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
        "{MANAGED_BY_LABEL}={MANAGED_BY},{ACCOUNT_NAMESPACE_LABEL}={},{ACCOUNT_NAME_LABEL}={}",
        grant.account.namespace, grant.account.name
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

pub(super) fn labels(grant: &Grant) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (
            ACCOUNT_NAMESPACE_LABEL.to_string(),
            grant.account.namespace.clone(),
        ),
        (ACCOUNT_NAME_LABEL.to_string(), grant.account.name.clone()),
    ])
}

pub(super) fn meta(
    name: &str,
    namespace: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(String::from),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    }
}

pub(super) fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

pub(super) async fn apply<K>(
    api: &Api<K>,
    name: &str,
    object: &K,
    what: &str,
) -> Result<(), MintError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    <K as Resource>::DynamicType: Default,
{
    let mut object = serde_json::to_value(object).unwrap_or_default();
    object["apiVersion"] = K::api_version(&Default::default()).into();
    object["kind"] = K::kind(&Default::default()).into();
    let params = PatchParams::apply(MANAGED_BY).force();
    api.patch(name, &params, &Patch::Apply(&object))
        .await
        .map(|_| ())
        .map_err(|source| MintError::Api {
            what: format!("applying {what} ({name})"),
            source,
        })
}

pub(super) async fn list<K>(
    api: &Api<K>,
    params: &ListParams,
    what: &str,
) -> Result<Vec<K>, MintError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.list(params)
        .await
        .map(|l| l.items)
        .map_err(|source| MintError::Api {
            what: format!("listing {what}"),
            source,
        })
}

pub(super) async fn delete<K>(api: &Api<K>, name: &str, what: &str) -> Result<(), MintError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(MintError::Api {
            what: format!("deleting {what} ({name})"),
            source,
        }),
    }
}
