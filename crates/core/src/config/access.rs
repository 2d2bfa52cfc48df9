//! The `credentials` settings (least privilege): what Argo CD's cluster Secrets log in with, and
//! what a ServiceAccount is granted. Read here; the access module applies them.

use super::MaxPrune;

/// What Argo CD's cluster Secrets log in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CredentialMode {
    /// The kubeconfig's own credential, as the platform wrote it (an admin's, for Cluster API).
    #[default]
    Admin,
    /// A bound token of a ServiceAccount in the workload cluster, minted by the controller.
    ServiceAccount,
}

/// The role the ServiceAccount is given in the workload cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// What `argocd cluster add` grants: everything, cluster-wide (but revocable, and not
    /// `system:masters`, which no authorizer or webhook can limit).
    Admin,
    /// A Role in each of the cluster's `namespaces` only; cluster-scoped kinds too where its
    /// `clusterResources` says so.
    Namespaced,
    /// A ClusterRole the user provides, by name, bound cluster-wide.
    Named(String),
    /// Argo CD reads everything and syncs as the ServiceAccounts its AppProjects name
    /// (`destinationServiceAccounts`), which capi2argo sets up: it can write nothing itself.
    Impersonate,
}

/// The ClusterRole a project's impersonated ServiceAccounts get where `impersonationRoles`
/// names none.
pub const DEFAULT_IMPERSONATION_ROLE: &str = "edit";

/// The `credentials` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub mode: CredentialMode,
    /// The ServiceAccount, `namespace/name`.
    pub account: (String, String),
    pub role: Role,
    /// The life of a minted token, in seconds.
    pub ttl: i64,
    /// A cluster that goes also loses its ServiceAccount and RBAC (where it can be reached).
    pub remove_account: bool,
    /// Guard: the most Argo CD Secrets one run may move between the two modes.
    pub max_changes: MaxPrune,
    /// `impersonationRoles`: the ClusterRole each project's ServiceAccounts are bound to.
    pub impersonation_roles: std::collections::BTreeMap<String, String>,
}

impl Settings {
    /// The ClusterRole project `project`'s impersonated ServiceAccounts are bound to.
    pub fn impersonation_role(&self, project: &str) -> &str {
        self.impersonation_roles
            .get(project)
            .map_or(DEFAULT_IMPERSONATION_ROLE, String::as_str)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: CredentialMode::Admin,
            account: ("kube-system".into(), "argocd-manager".into()),
            role: Role::Admin,
            ttl: 24 * 3600,
            remove_account: false,
            max_changes: MaxPrune::Percent(10),
            impersonation_roles: std::collections::BTreeMap::new(),
        }
    }
}

/// `serviceAccount`: `namespace/name`, or a name in `kube-system`.
pub fn parse_account(text: &str) -> Result<(String, String), String> {
    let (namespace, name) = text.split_once('/').unwrap_or(("kube-system", text));
    let ok = |s: &str| crate::convert::meta::is_dns1123_label(s);
    // A label, not any subdomain: the RBAC objects set up for it carry it in a label value.
    if !ok(namespace) || !ok(name) {
        return Err(format!(
            "{text:?} is not a ServiceAccount: write namespace/name, such as kube-system/argocd-manager"
        ));
    }
    Ok((namespace.to_string(), name.to_string()))
}

/// `tokenTTL`: `30m`, `24h`, `7d` — at least 10 minutes (the API server's shortest), at most
/// a year.
pub fn parse_ttl(text: &str) -> Result<i64, String> {
    let expected = || format!("expected a duration of 10m to 365d (such as 24h), got {text:?}");
    let text = text.trim();
    let units = [('m', 60), ('h', 3600), ('d', 86_400)];
    let (digits, unit) = units
        .iter()
        .find_map(|&(suffix, unit)| Some((text.strip_suffix(suffix)?, unit)))
        .ok_or_else(expected)?;
    let seconds = digits
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(expected)?;
    if !(600..=365 * 86_400).contains(&seconds) {
        return Err(expected());
    }
    Ok(seconds)
}

/// `serviceAccountRole`.
pub fn parse_role(text: &str) -> Result<Role, String> {
    match text.trim() {
        "admin" => Ok(Role::Admin),
        "namespaced" => Ok(Role::Namespaced),
        // Reserved: a ClusterRole of this name can no longer be meant.
        "impersonate" => Ok(Role::Impersonate),
        name if is_path_segment_name(name) => Ok(Role::Named(name.into())),
        other => Err(format!(
            "{other:?} is neither admin, namespaced, impersonate nor the name of a ClusterRole"
        )),
    }
}

/// `impersonationRoles`: project names to ClusterRole names.
pub fn parse_impersonation_roles(
    roles: std::collections::BTreeMap<String, String>,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    for (project, role) in &roles {
        if !is_path_segment_name(role) {
            return Err(format!(
                "{project}: {role:?} is not the name of a ClusterRole"
            ));
        }
    }
    Ok(roles)
}

/// A name the API server takes in a path (its `path.IsValidPathSegmentName`), as RBAC names are.
fn is_path_segment_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '%'])
        && !name.chars().any(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_as_documented() {
        assert_eq!(parse_ttl("24h"), Ok(86_400));
        assert_eq!(parse_ttl("10m"), Ok(600));
        assert!(parse_ttl("5m").is_err());
        assert!(parse_ttl("24").is_err());
        // Regression: a multibyte last character, and an overflow, are errors, not panics.
        assert!(parse_ttl("1ä").is_err());
        assert!(parse_ttl("9999999999999999d").is_err());
        assert_eq!(
            parse_account("argocd-manager"),
            Ok(("kube-system".into(), "argocd-manager".into()))
        );
        assert!(parse_account("Kube/x").is_err());
        assert_eq!(parse_role("namespaced"), Ok(Role::Namespaced));
        assert_eq!(parse_role("view"), Ok(Role::Named("view".into())));
        assert_eq!(parse_role("impersonate"), Ok(Role::Impersonate));
        assert!(parse_role("a b").is_err());
    }
}
