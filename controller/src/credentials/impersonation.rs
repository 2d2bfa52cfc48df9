//! `serviceAccountRole: impersonate` in a workload cluster: the ServiceAccount Argo CD logs in as
//! may read every resource and the discovery URLs (what its cluster cache reads) and impersonate
//! exactly the ServiceAccounts the plan names — nothing else, no write of its own; those
//! ServiceAccounts are set up in their namespaces, each bound by a RoleBinding to its projects'
//! ClusterRoles, and removed with their bindings when no project names them any more. A
//! ServiceAccount that was there before, not capi2argo's, is bound but never labelled or removed.

use std::collections::{BTreeMap, BTreeSet};

use capi2argo_core::well_known::{MANAGED_BY, MANAGED_BY_LABEL};
use capi2argo_core::{Grant, Impersonated};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use super::MintError;
use super::grant::{
    ACCOUNT_NAME_LABEL, ACCOUNT_NAMESPACE_LABEL, PREFIX, Wanted, apply, delete, ensure_namespace,
    list, meta, name_of,
};

/// On a ServiceAccount capi2argo set up for Argo CD to impersonate.
const IMPERSONATED_LABEL: &str = "capi2argo.dev/impersonated";

/// The non-resource URLs Argo CD's cluster cache and its diffing read: discovery, the version,
/// the OpenAPI documents.
const DISCOVERY: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/version",
    "/openapi",
    "/openapi/*",
];

/// The RBAC of impersonation, added to `wanted`: read-only everywhere for Argo CD's own
/// ServiceAccount (`subject`), `impersonate` on exactly the named ServiceAccounts (a Role in each
/// of their namespaces), and each of those bound to its projects' ClusterRoles.
pub fn objects(
    grant: &Grant,
    accounts: &[Impersonated],
    labels: &BTreeMap<String, String>,
    subject: &Subject,
    wanted: &mut Wanted,
) {
    let base = format!("{PREFIX}-{}", grant.account.name);
    let read = vec![
        PolicyRule {
            api_groups: Some(vec!["*".into()]),
            resources: Some(vec!["*".into()]),
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            ..PolicyRule::default()
        },
        PolicyRule {
            non_resource_urls: Some(DISCOVERY.iter().map(|u| u.to_string()).collect()),
            verbs: vec!["get".into()],
            ..PolicyRule::default()
        },
    ];
    let role_ref = |kind: &str, name: &str| RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    };
    let name = format!("{base}-read");
    wanted.cluster_roles.push(ClusterRole {
        metadata: meta(&name, None, labels),
        rules: Some(read),
        ..ClusterRole::default()
    });
    wanted.cluster_bindings.push(ClusterRoleBinding {
        metadata: meta(&name, None, labels),
        role_ref: role_ref("ClusterRole", &name),
        subjects: Some(vec![subject.clone()]),
    });
    let mut by_namespace: BTreeMap<&str, Vec<&Impersonated>> = BTreeMap::new();
    for account in accounts {
        by_namespace
            .entry(account.namespace.as_str())
            .or_default()
            .push(account);
    }
    let impersonate = format!("{base}-impersonate");
    for (namespace, accounts) in by_namespace {
        let names: Vec<String> = accounts.iter().map(|a| a.name.clone()).collect();
        wanted.roles.push(Role {
            metadata: meta(&impersonate, Some(namespace), labels),
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["serviceaccounts".into()]),
                resource_names: Some(names),
                verbs: vec!["impersonate".into()],
                ..PolicyRule::default()
            }]),
        });
        wanted.bindings.push(RoleBinding {
            metadata: meta(&impersonate, Some(namespace), labels),
            role_ref: role_ref("Role", &impersonate),
            subjects: Some(vec![subject.clone()]),
        });
    }
    for account in accounts {
        for (destination, role) in &account.bindings {
            // The ServiceAccount and the role in the name: a binding's role cannot change.
            let name = if *destination == account.namespace {
                format!("{PREFIX}-{}-{role}", account.name)
            } else {
                format!("{PREFIX}-{}.{}-{role}", account.namespace, account.name)
            };
            wanted.bindings.push(RoleBinding {
                metadata: meta(&name, Some(destination), labels),
                role_ref: role_ref("ClusterRole", role),
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: account.name.clone(),
                    namespace: Some(account.namespace.clone()),
                    ..Subject::default()
                }]),
            });
        }
    }
}

/// Sets up the ServiceAccounts Argo CD impersonates, their namespaces first where missing. One
/// that exists and is not capi2argo's is left as it is (it is bound all the same).
pub async fn ensure_accounts(
    client: &Client,
    grant: &Grant,
    accounts: &[Impersonated],
    labels: &BTreeMap<String, String>,
) -> Result<(), MintError> {
    let mut ours = labels.clone();
    ours.insert(IMPERSONATED_LABEL.into(), "true".into());
    let namespaces: BTreeSet<&str> = accounts
        .iter()
        .flat_map(|a| {
            std::iter::once(a.namespace.as_str())
                .chain(a.bindings.iter().map(|(ns, _)| ns.as_str()))
        })
        .collect();
    for namespace in namespaces {
        ensure_namespace(client, namespace, labels).await?;
    }
    for account in accounts {
        let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &account.namespace);
        let found = api
            .get_opt(&account.name)
            .await
            .map_err(|source| MintError::Api {
                what: format!(
                    "reading the ServiceAccount {}/{}",
                    account.namespace, account.name
                ),
                source,
            })?;
        let theirs = found.is_some_and(|sa| {
            sa.labels().get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY)
        });
        if theirs
            || (account.namespace == grant.account.namespace && account.name == grant.account.name)
        {
            continue;
        }
        let sa = ServiceAccount {
            metadata: meta(&account.name, Some(&account.namespace), &ours),
            ..ServiceAccount::default()
        };
        let what = format!(
            "the ServiceAccount {}/{} Argo CD impersonates",
            account.namespace, account.name
        );
        apply(&api, &account.name, &sa, &what).await?;
    }
    Ok(())
}

/// Deletes the ServiceAccounts capi2argo set up for Argo CD to impersonate that `accounts` no
/// longer names (their RoleBindings go with the grant's other RBAC).
pub async fn remove_others(
    client: &Client,
    grant: &Grant,
    accounts: &[Impersonated],
) -> Result<(), MintError> {
    let selector = format!(
        "{MANAGED_BY_LABEL}={MANAGED_BY},{IMPERSONATED_LABEL}=true,{ACCOUNT_NAMESPACE_LABEL}={},{ACCOUNT_NAME_LABEL}={}",
        grant.account.namespace, grant.account.name
    );
    let api: Api<ServiceAccount> = Api::all(client.clone());
    let params = ListParams::default().labels(&selector);
    for sa in list(&api, &params, "ServiceAccounts").await? {
        let namespace = sa.metadata.namespace.clone().unwrap_or_default();
        let name = name_of(&sa.metadata);
        if accounts
            .iter()
            .any(|a| a.namespace == namespace && a.name == name)
        {
            continue;
        }
        let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
        let what = format!("the ServiceAccount {namespace}/{name} no project names any more");
        delete(&api, &name, &what).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use capi2argo_core::{Granted, ServiceAccount as Account};

    /// What Argo CD's own ServiceAccount gets: reading and impersonating exactly the named
    /// ServiceAccounts — no verb that writes, no impersonation of anyone else.
    #[test]
    fn argo_cd_may_read_and_impersonate_the_named_accounts_only() {
        let accounts = vec![
            Impersonated {
                namespace: "guestbook".into(),
                name: "deployer".into(),
                projects: vec![
                    ("team-a".into(), "edit".into()),
                    ("team-b".into(), "view".into()),
                ],
                bindings: vec![
                    ("guestbook".into(), "edit".into()),
                    ("guestbook".into(), "view".into()),
                ],
            },
            Impersonated {
                namespace: "guestbook".into(),
                name: "reader".into(),
                projects: vec![("team-c".into(), "view".into())],
                bindings: vec![
                    ("guestbook".into(), "view".into()),
                    ("shared".into(), "view".into()),
                ],
            },
        ];
        let grant = Grant {
            account: Account {
                namespace: "kube-system".into(),
                name: "argocd-manager".into(),
            },
            granted: Granted::Impersonate(accounts.clone()),
        };
        let subject = Subject {
            kind: "ServiceAccount".into(),
            name: "argocd-manager".into(),
            namespace: Some("kube-system".into()),
            ..Subject::default()
        };
        let mut wanted = Wanted::default();
        objects(&grant, &accounts, &BTreeMap::new(), &subject, &mut wanted);
        let verbs: BTreeSet<String> = wanted
            .cluster_roles
            .iter()
            .flat_map(|r| r.rules.iter().flatten())
            .flat_map(|r| r.verbs.clone())
            .collect();
        assert_eq!(
            verbs,
            BTreeSet::from(["get".into(), "list".into(), "watch".into()])
        );
        assert_eq!(wanted.roles.len(), 1);
        let rule = &wanted.roles[0].rules.as_ref().expect("rules")[0];
        assert_eq!(rule.verbs, ["impersonate"]);
        assert_eq!(
            rule.resources.as_deref(),
            Some(&["serviceaccounts".to_string()][..])
        );
        assert_eq!(
            rule.resource_names.as_deref(),
            Some(&["deployer".to_string(), "reader".to_string()][..])
        );
        let bound: Vec<(String, String, String)> = wanted
            .bindings
            .iter()
            .map(|b| {
                let who = &b.subjects.as_ref().expect("subjects")[0];
                (
                    name_of(&b.metadata),
                    who.name.clone(),
                    b.role_ref.name.clone(),
                )
            })
            .collect();
        assert_eq!(
            bound,
            [
                (
                    "capi2argo-argocd-manager-impersonate".into(),
                    "argocd-manager".into(),
                    "capi2argo-argocd-manager-impersonate".into()
                ),
                (
                    "capi2argo-deployer-edit".into(),
                    "deployer".into(),
                    "edit".into()
                ),
                (
                    "capi2argo-deployer-view".into(),
                    "deployer".into(),
                    "view".into()
                ),
                (
                    "capi2argo-reader-view".into(),
                    "reader".into(),
                    "view".into()
                ),
                // Bound where it syncs to: `guestbook:reader` named for the namespace `shared`.
                (
                    "capi2argo-guestbook.reader-view".into(),
                    "reader".into(),
                    "view".into()
                ),
            ]
        );
    }
}
