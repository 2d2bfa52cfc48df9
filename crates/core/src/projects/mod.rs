//! Argo CD's AppProjects as sync impersonation reads them (`serviceAccountRole: impersonate`):
//! which ServiceAccounts Argo CD syncs as in a cluster, found as Argo CD finds them — an
//! Application syncs as the `defaultServiceAccount` of the first `destinationServiceAccounts`
//! entry whose `server` and `namespace` globs match its destination, a name alone standing in the
//! destination namespace, `namespace:name` where it says so (util/settings/impersonation.go,
//! argo-cd v3.0; controller/sync.go `deriveServiceAccountToImpersonate` since v2.13) — and
//! whether `argocd-cm` turns impersonation on at all.

pub mod glob;

use std::collections::BTreeMap;

use krm::Item;
use krm::object::Object;

use crate::convert::meta::{is_dns1123_label, is_dns1123_subdomain};
use glob::Glob;

/// The AppProject kind (argoproj.io/v1alpha1).
pub const KIND: &str = "AppProject";
/// Argo CD's settings ConfigMap.
pub const ARGOCD_CM: &str = "argocd-cm";
/// The `argocd-cm` key that turns sync impersonation on (util/settings/settings.go).
pub const IMPERSONATION_KEY: &str = "application.sync.impersonation.enabled";

/// The characters Argo CD refuses in a `defaultServiceAccount`
/// (`serviceAccountDisallowedCharSet`).
const DISALLOWED: &[char] = &['!', '*', '[', ']', '{', '}', '\\', '/'];

/// Whether an object is an AppProject.
pub fn is_app_project(object: Object) -> bool {
    object.is(Some("argoproj.io/v1alpha1"), KIND)
}

/// Whether an object is Argo CD's `argocd-cm`.
pub fn is_argocd_cm(object: Object) -> bool {
    object.kind() == Some("ConfigMap") && object.name() == Some(ARGOCD_CM)
}

/// One `destinationServiceAccounts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub server: String,
    pub namespace: String,
    pub service_account: String,
}

/// An AppProject: its name and its entries, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub name: String,
    pub entries: Vec<Entry>,
}

/// What the input says of impersonation: the AppProjects of Argo CD's namespace, and whether
/// `argocd-cm` turns it on (`None`: no `argocd-cm` in the input).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projects {
    pub projects: Vec<Project>,
    pub enabled: Option<bool>,
}

/// Reads the AppProjects and `argocd-cm` of `namespace` among `items`.
pub fn read(items: &[Item], namespace: &str) -> Projects {
    let mut found = Projects::default();
    for item in items {
        let object = Object::new(&item.node);
        if object.namespace() != namespace {
            continue;
        }
        if is_argocd_cm(object) {
            let value = object
                .node
                .path(&["data", IMPERSONATION_KEY])
                .and_then(|v| v.as_str());
            // Argo CD compares it with "true" (SettingsManager.IsImpersonationEnabled).
            found.enabled = Some(value == Some("true"));
        } else if is_app_project(object) {
            let entries = object
                .node
                .path(&["spec", "destinationServiceAccounts"])
                .and_then(|n| n.as_seq())
                .unwrap_or_default()
                .iter()
                .map(|e| {
                    let text = |key| e.get(key).and_then(|v| v.as_str()).unwrap_or_default();
                    Entry {
                        server: text("server").to_string(),
                        namespace: text("namespace").to_string(),
                        service_account: text("defaultServiceAccount").to_string(),
                    }
                })
                .collect();
            found.projects.push(Project {
                name: object.name().unwrap_or_default().to_string(),
                entries,
            });
        }
    }
    found.projects.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// A ServiceAccount Argo CD impersonates in a cluster, for these projects, bound to these roles.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Impersonated {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The projects that sync as it, and the ClusterRole each binds it to.
    pub projects: Vec<(String, String)>,
    /// Where its roles are bound: each destination namespace Argo CD syncs to as it (its own,
    /// unless an entry names it `namespace:name` for another), with the ClusterRole of the
    /// project that syncs there.
    pub bindings: Vec<(String, String)>,
}

impl Impersonated {
    /// The ClusterRoles it is bound to, each once.
    pub fn roles(&self) -> Vec<&str> {
        let mut roles: Vec<&str> = self.bindings.iter().map(|(_, r)| r.as_str()).collect();
        roles.sort_unstable();
        roles.dedup();
        roles
    }

    /// The destination namespaces it is bound in, where they are not its own.
    pub fn elsewhere(&self) -> Vec<&str> {
        let mut namespaces: Vec<&str> = self
            .bindings
            .iter()
            .map(|(ns, _)| ns.as_str())
            .filter(|ns| *ns != self.namespace)
            .collect();
        namespaces.dedup();
        namespaces
    }
}

/// What impersonation needs in one cluster: the ServiceAccounts, and what could not be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounts {
    pub accounts: Vec<Impersonated>,
    /// Entries that were not provisioned, and why (a namespace pattern where the cluster's
    /// namespaces are not known, a pattern that does not compile, a name Argo CD refuses).
    pub unknown: Vec<String>,
}

/// The ServiceAccounts Argo CD would impersonate in the cluster at `server` whose namespaces
/// (its Argo CD Secret's `namespaces`) are `namespaces` (`None`: not known, every namespace),
/// each project's bound to the role `role_of` gives it.
pub fn accounts(
    projects: &Projects,
    server: &str,
    namespaces: Option<&[String]>,
    role_of: &dyn Fn(&str) -> String,
) -> Accounts {
    type Found = (Vec<(String, String)>, Vec<(String, String)>);
    let mut found: BTreeMap<(String, String), Found> = BTreeMap::new();
    let mut unknown = Vec::new();
    for project in &projects.projects {
        // Each entry in order, compiled: Argo CD goes through them in order and fails at the first
        // whose pattern does not compile.
        let compiled: Vec<(&Entry, Option<(Glob, Glob)>)> = project
            .entries
            .iter()
            .map(|entry| {
                let globs = Glob::new(&entry.server).ok().zip(Glob::new(&entry.namespace).ok());
                if globs.is_none() {
                    unknown.push(format!(
                        "AppProject {}: the entry for server {:?} and namespace {:?} does not compile; Argo CD refuses every sync that reaches it",
                        project.name, entry.server, entry.namespace
                    ));
                }
                (entry, globs)
            })
            .collect();
        // The destination namespaces that can sync here: each entry's own, or where it is a
        // pattern, the cluster's namespaces it matches.
        let mut destinations: Vec<String> = Vec::new();
        for (entry, globs) in &compiled {
            let Some((server_glob, namespace_glob)) = globs else {
                continue;
            };
            if !server_glob.matches(server) {
                continue;
            }
            match (namespace_glob.literal(), namespaces) {
                (Some(ns), _) if ns.is_empty() => unknown.push(format!(
                    "AppProject {}: an entry with an empty namespace matches only Applications without a destination namespace, whose namespace is the Application's own: not provisioned",
                    project.name
                )),
                (Some(ns), _) => destinations.push(ns),
                (None, Some(known)) => destinations.extend(
                    known
                        .iter()
                        .filter(|ns| namespace_glob.matches(ns))
                        .cloned(),
                ),
                (None, None) => unknown.push(format!(
                    "AppProject {}: the namespace pattern {:?} matches namespaces this cluster does not list (its Argo CD Secret has no `namespaces`): its ServiceAccount {:?} is not provisioned anywhere; name the namespaces in the entry, or give the cluster `namespaces`",
                    project.name, entry.namespace, entry.service_account
                )),
            }
        }
        destinations.sort();
        destinations.dedup();
        for destination in destinations {
            // Argo CD's first-match rule: the first entry matching server and namespace, the
            // first that does not compile ending the search (the sync fails there).
            let first = compiled.iter().find(|(_, globs)| {
                globs
                    .as_ref()
                    .is_none_or(|(s, n)| s.matches(server) && n.matches(&destination))
            });
            let Some((entry, Some(_))) = first else {
                continue;
            };
            let name = &entry.service_account;
            if name.trim().is_empty() || name.contains(DISALLOWED) {
                unknown.push(format!(
                    "AppProject {}: defaultServiceAccount {name:?} is refused by Argo CD (empty, or one of !*[]{{}}\\/): syncs to {destination} fail",
                    project.name
                ));
                continue;
            }
            let (namespace, name) = name
                .split_once(':')
                .map_or((destination.as_str(), name.as_str()), |(ns, n)| (ns, n));
            // What Kubernetes would refuse to create: said, and nothing else held up by it.
            if !is_dns1123_label(namespace) || !is_dns1123_subdomain(name) {
                unknown.push(format!(
                    "AppProject {}: {namespace}:{name} is not a ServiceAccount Kubernetes can have (a namespace that is a DNS label, a name that is a DNS subdomain): not set up, and syncs to {destination} fail",
                    project.name
                ));
                continue;
            }
            let (projects, bindings) = found
                .entry((namespace.to_string(), name.to_string()))
                .or_default();
            let role = role_of(&project.name);
            projects.push((project.name.clone(), role.clone()));
            bindings.push((destination.clone(), role));
        }
    }
    let accounts = found
        .into_iter()
        .map(|((namespace, name), (mut projects, mut bindings))| {
            projects.sort();
            projects.dedup();
            bindings.sort();
            bindings.dedup();
            Impersonated {
                namespace,
                name,
                projects,
                bindings,
            }
        })
        .collect();
    unknown.sort();
    unknown.dedup();
    Accounts { accounts, unknown }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(name: &str, entries: &[(&str, &str, &str)]) -> Project {
        Project {
            name: name.into(),
            entries: entries
                .iter()
                .map(|(s, n, a)| Entry {
                    server: s.to_string(),
                    namespace: n.to_string(),
                    service_account: a.to_string(),
                })
                .collect(),
        }
    }

    fn names(accounts: &Accounts) -> Vec<String> {
        accounts
            .accounts
            .iter()
            .map(|a| {
                let projects: Vec<String> =
                    a.projects.iter().map(|(p, r)| format!("{p}={r}")).collect();
                format!("{}/{} {}", a.namespace, a.name, projects.join(","))
            })
            .collect()
    }

    fn edit(_: &str) -> String {
        "edit".into()
    }

    /// util/settings/impersonation_test.go's cases, as provisioning sees them: the first
    /// matching entry wins, a name alone stands in the destination namespace, `ns:name` where it
    /// says, a server that does not match provisions nothing.
    #[test]
    fn the_first_matching_entry_names_the_service_account() {
        let projects = Projects {
            projects: vec![project(
                "team-a",
                &[
                    ("https://a.example:6443", "guestbook", "deployer"),
                    ("*", "guestbook", "never-reached"),
                    ("*", "web-*", "web-sa"),
                    ("https://*", "shared", "infra:syncer"),
                ],
            )],
            enabled: Some(true),
        };
        let namespaces = ["web-1".to_string(), "web-2".to_string(), "db".to_string()];
        let a = accounts(
            &projects,
            "https://a.example:6443",
            Some(&namespaces),
            &edit,
        );
        assert_eq!(
            names(&a),
            [
                "guestbook/deployer team-a=edit",
                "infra/syncer team-a=edit",
                "web-1/web-sa team-a=edit",
                "web-2/web-sa team-a=edit",
            ]
        );
        assert!(a.unknown.is_empty(), "{:?}", a.unknown);
        let b = accounts(
            &projects,
            "https://b.example:6443",
            Some(&namespaces),
            &edit,
        );
        assert_eq!(
            names(&b),
            [
                "guestbook/never-reached team-a=edit",
                "infra/syncer team-a=edit",
                "web-1/web-sa team-a=edit",
                "web-2/web-sa team-a=edit",
            ]
        );
        // `https://*` does not match a plain-HTTP server: its entry's ServiceAccount is not set up.
        let elsewhere = accounts(&projects, "http://c.example", Some(&namespaces), &edit);
        assert_eq!(
            names(&elsewhere),
            [
                "guestbook/never-reached team-a=edit",
                "web-1/web-sa team-a=edit",
                "web-2/web-sa team-a=edit",
            ]
        );
    }

    /// A namespace pattern with the cluster's namespaces unknown is said, not guessed.
    #[test]
    fn a_namespace_pattern_without_namespaces_is_said_not_guessed() {
        let projects = Projects {
            projects: vec![project("team-b", &[("*", "*", "syncer")])],
            enabled: Some(true),
        };
        let a = accounts(&projects, "https://a:6443", None, &edit);
        assert!(a.accounts.is_empty());
        assert_eq!(a.unknown.len(), 1);
        assert!(a.unknown[0].contains("team-b"), "{:?}", a.unknown);
    }

    #[test]
    fn names_argo_cd_refuses_are_said() {
        let projects = Projects {
            projects: vec![project(
                "p",
                &[
                    ("*", "a", "bad/name"),
                    ("*", "b", " "),
                    ("*", "d", "Deployer"),
                    ("[", "c", "x"),
                ],
            )],
            enabled: Some(true),
        };
        let a = accounts(&projects, "https://a:6443", None, &edit);
        assert!(a.accounts.is_empty());
        assert_eq!(a.unknown.len(), 4, "{:?}", a.unknown);
    }

    /// Argo CD stops at the first entry that does not compile: a later one is never used.
    #[test]
    fn an_entry_that_does_not_compile_ends_the_search() {
        let projects = Projects {
            projects: vec![project(
                "p",
                &[("[", "*", "x"), ("*", "guestbook", "later")],
            )],
            enabled: Some(true),
        };
        let a = accounts(&projects, "https://a:6443", None, &edit);
        assert!(a.accounts.is_empty(), "{:?}", a.accounts);
        assert_eq!(a.unknown.len(), 1, "{:?}", a.unknown);
    }

    #[test]
    fn two_projects_may_share_a_service_account_with_their_own_roles() {
        let projects = Projects {
            projects: vec![
                project("a", &[("*", "shared", "syncer")]),
                project("b", &[("*", "shared", "syncer")]),
            ],
            enabled: Some(true),
        };
        let role = |p: &str| {
            if p == "a" {
                "admin".into()
            } else {
                "view".into()
            }
        };
        let found = accounts(&projects, "https://a:6443", None, &role);
        assert_eq!(names(&found), ["shared/syncer a=admin,b=view"]);
        assert_eq!(found.accounts[0].roles(), ["admin", "view"]);
    }
}
