//! Maps a kubeconfig `exec` credential plugin to what Argo CD can run: `argocd-k8s-auth` for the
//! cloud logins it replaces, recognised by command *and* arguments; every flag is either carried
//! or reported by name.

mod args;
mod aws;
mod azure;
mod oidc;

use crate::convert::argocd::{ARGOCD_K8S_AUTH, AwsAuthConfig, ExecProviderConfig, Sensitive};
use krm::finding::{Finding, Severity};

pub use azure::is_unattended as azure_login_is_unattended;

/// Flags of the plugins capi2argo reads whose value is a credential: Azure kubelogin's client
/// secret, certificate password and password, int128/kubelogin's client secret and password.
/// Argo CD's `execProviderConfig.args` carries them as they are, so hosts that show a config
/// hide these values (a test checks every plugin's secret-bearing flag is here).
pub const CREDENTIAL_FLAGS: &[&str] = &[
    "--client-secret",
    "--client-certificate-password",
    "--password",
    "--oidc-client-secret",
];

/// Where the values of [`CREDENTIAL_FLAGS`] stand in an exec plugin's arguments: the index of
/// each argument holding one and the byte range of the value within it.
pub fn credential_args(args: &[&str]) -> Vec<(usize, std::ops::Range<usize>)> {
    args::flag_values(args, CREDENTIAL_FLAGS)
}

/// A kubeconfig `exec` block, already type-checked.
#[derive(Debug, Clone, Default)]
pub struct ExecPlugin {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, Sensitive)>,
    pub api_version: Option<String>,
    pub install_hint: Option<String>,
    pub provide_cluster_info: bool,
    pub interactive_mode: Option<String>,
}

/// What the plugin becomes in Argo CD's `config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecAuth {
    Aws(AwsAuthConfig),
    Exec(ExecProviderConfig),
}

/// Why Argo CD cannot log in the way the plugin does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The login needs a person (a browser, a device code, a prompt) or a signed-in tool: Argo
    /// CD runs plugins unattended, so it never works there, whatever else the cluster offers.
    #[error("{0}")]
    Interactive(String),
    /// Argo CD cannot run it as the kubeconfig states it.
    #[error("{0}")]
    Unsupported(String),
}

/// A remark about the exec plugin (never containing argument or environment values); the
/// kubeconfig reader adds where it stands.
pub type Note = Finding;

/// The exec credential API versions client-go accepts (plugin/pkg/client/auth/exec/exec.go);
/// `v1alpha1` was removed in Kubernetes 1.24.
pub const SUPPORTED_API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1beta1",
    "client.authentication.k8s.io/v1",
];

/// What `argocd-k8s-auth` prints, so what its exec config must declare (client-go refuses a mismatch).
pub const ARGOCD_K8S_AUTH_API_VERSION: &str = "client.authentication.k8s.io/v1beta1";

impl ExecPlugin {
    fn env(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.0.as_str())
    }

    /// The executable's file name, whatever directory the kubeconfig put it in.
    fn program(&self) -> &str {
        self.command.rsplit('/').next().unwrap_or(&self.command)
    }
}

/// The plugins capi2argo knows, by command and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    AwsIamAuthenticator,
    AwsCli,
    GkeAuthPlugin,
    AzureKubelogin,
    OidcLogin,
    ArgocdK8sAuth,
}

fn identify(plugin: &ExecPlugin) -> Option<Known> {
    let words = args::Args::parse(&plugin.args, &[]);
    if oidc::is_oidc_login(plugin) {
        return Some(Known::OidcLogin);
    }
    match plugin.program() {
        "aws-iam-authenticator" if words.has_words(&["token"]) => Some(Known::AwsIamAuthenticator),
        "aws" if words.has_words(&["eks", "get-token"]) => Some(Known::AwsCli),
        "gke-gcloud-auth-plugin" => Some(Known::GkeAuthPlugin),
        "kubelogin" if words.has_words(&["get-token"]) => Some(Known::AzureKubelogin),
        ARGOCD_K8S_AUTH => Some(Known::ArgocdK8sAuth),
        _ => None,
    }
}

/// Maps an exec plugin; an `Err` is why it cannot work in Argo CD at all.
pub fn map(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, Refusal> {
    if plugin.interactive_mode.as_deref() == Some("Always") {
        return Err(Refusal::Interactive(
            "interactiveMode Always: the plugin needs a terminal, and Argo CD runs it with none"
                .into(),
        ));
    }
    let known = identify(plugin);
    let replaced = matches!(
        known,
        Some(
            Known::AwsIamAuthenticator
                | Known::AwsCli
                | Known::GkeAuthPlugin
                | Known::AzureKubelogin
                | Known::ArgocdK8sAuth
        )
    );
    if replaced
        && plugin
            .api_version
            .as_deref()
            .is_some_and(|v| v != ARGOCD_K8S_AUTH_API_VERSION)
    {
        notes.push(Finding::info(format!(
            "apiVersion becomes {ARGOCD_K8S_AUTH_API_VERSION}, what argocd-k8s-auth prints (client-go refuses a mismatch, and v1alpha1 since Kubernetes 1.24)"
        )));
    }
    match known {
        Some(Known::AwsIamAuthenticator) => aws::iam_authenticator(plugin, notes),
        Some(Known::AwsCli) => aws::cli(plugin, notes),
        Some(Known::GkeAuthPlugin) => Ok(gke(plugin, notes)),
        Some(Known::AzureKubelogin) => azure::kubelogin(plugin, notes),
        Some(Known::OidcLogin) => oidc::oidc_login(plugin, notes),
        Some(Known::ArgocdK8sAuth) => Ok(ExecAuth::Exec(ExecProviderConfig {
            api_version: Some(ARGOCD_K8S_AUTH_API_VERSION.into()),
            ..as_is(plugin)
        })),
        None => copied(plugin, notes),
    }
}

/// `gke-gcloud-auth-plugin` (no arguments as CAPG writes it): `argocd-k8s-auth gcp`, which uses
/// Application Default Credentials.
fn gke(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> ExecAuth {
    let mut args = args::Args::parse(&plugin.args, &[]);
    not_needed(
        notes,
        "gke-gcloud-auth-plugin",
        &args.take(&["--use_application_default_credentials"]),
    );
    unknown(notes, "gke-gcloud-auth-plugin", &args);
    ExecAuth::Exec(ExecProviderConfig {
        command: ARGOCD_K8S_AUTH.into(),
        args: vec!["gcp".into()],
        // Application Default Credentials read the environment (GOOGLE_APPLICATION_CREDENTIALS).
        env: plugin.env.iter().cloned().collect(),
        api_version: Some(ARGOCD_K8S_AUTH_API_VERSION.into()),
        ..Default::default()
    })
}

fn as_is(plugin: &ExecPlugin) -> ExecProviderConfig {
    ExecProviderConfig {
        command: plugin.command.clone(),
        args: plugin.args.clone(),
        env: plugin.env.iter().cloned().collect(),
        api_version: plugin.api_version.clone(),
        install_hint: plugin.install_hint.clone(),
        provide_cluster_info: plugin.provide_cluster_info,
        config: None,
    }
}

/// A plugin Argo CD runs as the kubeconfig states it; its apiVersion must be one client-go takes.
fn copied(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, Refusal> {
    match plugin.api_version.as_deref() {
        Some(v) if SUPPORTED_API_VERSIONS.contains(&v) => {}
        Some("client.authentication.k8s.io/v1alpha1") => {
            return Err(Refusal::Unsupported(
                "apiVersion client.authentication.k8s.io/v1alpha1 was removed from client-go in Kubernetes 1.24, so Argo CD refuses it; the plugin must print v1beta1 or v1, and the kubeconfig say which".into(),
            ));
        }
        Some(_) => {
            return Err(Refusal::Unsupported(format!(
                "apiVersion is not one client-go accepts ({})",
                SUPPORTED_API_VERSIONS.join(", ")
            )));
        }
        None => {
            return Err(Refusal::Unsupported(
                "apiVersion is missing: client-go refuses an exec plugin without one".into(),
            ));
        }
    }
    notes.push(Finding::warning(format!(
        "exec command {:?} is copied as is: it must exist in the Argo CD image (which ships only {ARGOCD_K8S_AUTH})",
        plugin.command
    )));
    Ok(ExecAuth::Exec(as_is(plugin)))
}

/// Reports flags that are present but not carried (with why), by name.
fn dropped(notes: &mut Vec<Note>, tool: &str, flags: &[&str], why: &str) {
    if !flags.is_empty() {
        notes.push(Finding::new(
            Severity::Warning,
            format!("{tool} option {} is left out: {why}", flags.join(", ")),
        ));
    }
}

/// Reports flags that do not matter to `argocd-k8s-auth`, by name.
fn not_needed(notes: &mut Vec<Note>, tool: &str, flags: &[&str]) {
    if !flags.is_empty() {
        notes.push(Finding::info(format!(
            "{tool} option {} is left out: argocd-k8s-auth does not need it",
            flags.join(", ")
        )));
    }
}

/// Reports the flags no mapping took.
fn unknown(notes: &mut Vec<Note>, tool: &str, args: &args::Args) {
    dropped(
        notes,
        tool,
        &args.untaken(),
        "capi2argo does not know what it means, and argocd-k8s-auth has no place for it",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_flags_are_every_plugin_flag_that_carries_a_secret() {
        let value_flags: Vec<&str> = [azure::VALUE_FLAGS, oidc::VALUE_FLAGS].concat();
        for flag in CREDENTIAL_FLAGS {
            assert!(
                value_flags.contains(flag),
                "{flag} is a flag a plugin reads"
            );
        }
        for flag in value_flags {
            let secret = flag.contains("secret") || flag.contains("password");
            assert_eq!(secret, CREDENTIAL_FLAGS.contains(&flag), "{flag}");
        }
    }

    fn plugin(command: &str, args: &[&str], env: &[(&str, &str)]) -> ExecPlugin {
        ExecPlugin {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(n, v)| (n.to_string(), Sensitive(v.to_string())))
                .collect(),
            api_version: Some(ARGOCD_K8S_AUTH_API_VERSION.into()),
            ..Default::default()
        }
    }

    fn exec(auth: Result<ExecAuth, Refusal>) -> ExecProviderConfig {
        match auth {
            Ok(ExecAuth::Exec(e)) => e,
            other => panic!("expected execProviderConfig, got {other:?}"),
        }
    }

    fn env_of(e: &ExecProviderConfig) -> Vec<(&str, &str)> {
        e.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect()
    }

    #[test]
    fn aws_iam_authenticator_becomes_aws_auth_config() {
        let mut notes = Vec::new();
        let p = plugin(
            "/usr/bin/aws-iam-authenticator",
            &["token", "-i", "eks-a", "-r", "arn:role"],
            &[("AWS_PROFILE", "p")],
        );
        assert_eq!(
            map(&p, &mut notes).unwrap(),
            ExecAuth::Aws(AwsAuthConfig {
                cluster_name: "eks-a".into(),
                role_arn: Some("arn:role".into()),
                profile: Some("p".into())
            })
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn aws_cli_region_is_carried_as_aws_region_of_argocd_k8s_auth() {
        let mut notes = Vec::new();
        let p = plugin(
            "aws",
            &[
                "--region",
                "eu-west-1",
                "eks",
                "get-token",
                "--cluster-name=x",
                "--profile",
                "q",
                "--output",
                "json",
            ],
            &[],
        );
        let e = exec(map(&p, &mut notes));
        assert_eq!(e.command, "argocd-k8s-auth");
        assert_eq!(e.args, ["aws", "--cluster-name", "x", "--profile", "q"]);
        assert_eq!(env_of(&e), [("AWS_REGION", "eu-west-1")]);
        assert_eq!(e.api_version.as_deref(), Some(ARGOCD_K8S_AUTH_API_VERSION));
        assert!(
            notes.iter().all(|n| n.severity == Severity::Info),
            "{notes:?}"
        );
        assert!(map(&plugin("aws", &["eks", "get-token"], &[]), &mut notes).is_err());
    }

    #[test]
    fn aws_without_a_region_stays_aws_auth_config() {
        let mut notes = Vec::new();
        let p = plugin("aws", &["eks", "get-token", "--cluster-name", "x"], &[]);
        assert!(matches!(map(&p, &mut notes), Ok(ExecAuth::Aws(_))));
    }

    #[test]
    fn aws_external_id_is_refused() {
        let p = plugin(
            "aws-iam-authenticator",
            &["token", "-i", "c", "-r", "arn", "--external-id", "e"],
            &[],
        );
        assert!(matches!(
            map(&p, &mut Vec::new()),
            Err(Refusal::Unsupported(_))
        ));
    }

    #[test]
    fn kubelogin_flags_become_argocd_k8s_auth_azure_env() {
        let mut notes = Vec::new();
        let p = plugin(
            "kubelogin",
            &[
                "get-token",
                "--login",
                "workloadidentity",
                "--client-id",
                "c",
                "--tenant-id",
                "t",
                "--environment",
                "AzurePublicCloud",
            ],
            &[],
        );
        let e = exec(map(&p, &mut notes));
        assert_eq!(e.command, "argocd-k8s-auth");
        assert_eq!(e.args, vec!["azure"]);
        assert_eq!(
            env_of(&e),
            vec![
                ("AAD_ENVIRONMENT_NAME", "AzurePublicCloud"),
                ("AAD_LOGIN_METHOD", "workloadidentity"),
                ("AZURE_CLIENT_ID", "c"),
                ("AZURE_TENANT_ID", "t")
            ]
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn kubelogin_devicecode_and_its_default_are_interactive() {
        for args in [&["get-token"][..], &["get-token", "-l", "devicecode"][..]] {
            let p = plugin("kubelogin", args, &[]);
            assert!(matches!(
                map(&p, &mut Vec::new()),
                Err(Refusal::Interactive(m)) if m.contains("devicecode")
            ));
        }
        // The environment overrides the flag, as kubelogin's UpdateFromEnv does.
        let p = plugin(
            "kubelogin",
            &["get-token", "-l", "devicecode"],
            &[("AAD_LOGIN_METHOD", "msi")],
        );
        assert!(map(&p, &mut Vec::new()).is_ok());
    }

    #[test]
    fn kubelogin_pop_and_identity_flags() {
        let spn = |extra: &[&str]| {
            let mut args = vec!["get-token", "-l", "spn", "--client-id", "c"];
            args.extend_from_slice(extra);
            plugin("kubelogin", &args, &[])
        };
        let mut notes = Vec::new();
        let e = exec(map(
            &spn(&["--pop-enabled", "--pop-claims", "u=/arm/id"]),
            &mut notes,
        ));
        assert!(env_of(&e).contains(&("AAD_IS_POP_TOKEN_ENABLED", "true")));
        assert!(env_of(&e).contains(&("AAD_POP_TOKEN_CLAIMS", "u=/arm/id")));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(map(&spn(&["--pop-enabled"]), &mut Vec::new()).is_err());
        let msi = plugin(
            "kubelogin",
            &["get-token", "-l", "msi", "--identity-resource-id", "/id"],
            &[],
        );
        assert!(matches!(
            map(&msi, &mut Vec::new()),
            Err(Refusal::Unsupported(m)) if m.contains("--identity-resource-id")
        ));
        let mut notes = Vec::new();
        map(&spn(&["--mystery", "x"]), &mut notes).unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.severity == Severity::Warning && n.message.contains("--mystery")),
            "{notes:?}"
        );
    }

    #[test]
    fn int128_kubelogin_is_not_azure() {
        let p = plugin(
            "kubelogin",
            &[
                "get-token",
                "--oidc-issuer-url=https://issuer.example",
                "--oidc-client-id=k8s",
            ],
            &[],
        );
        assert!(matches!(
            map(&p, &mut Vec::new()),
            Err(Refusal::Interactive(m)) if m.contains("int128")
        ));
        let p = plugin(
            "kubectl",
            &[
                "oidc-login",
                "get-token",
                "--oidc-issuer-url=https://issuer.example",
                "--oidc-client-id=k8s",
                "--grant-type=client-credentials",
            ],
            &[],
        );
        let mut notes = Vec::new();
        let e = exec(map(&p, &mut notes));
        assert_eq!(e.command, "kubectl");
        assert_eq!(notes[0].severity, Severity::Warning);
    }

    #[test]
    fn exec_api_versions_client_go_refuses_are_errors() {
        let mut p = plugin("vault-login", &[], &[]);
        p.api_version = Some("client.authentication.k8s.io/v1alpha1".into());
        assert!(map(&p, &mut Vec::new()).is_err());
        p.api_version = None;
        assert!(map(&p, &mut Vec::new()).is_err());
        // A plugin argocd-k8s-auth replaces gets the version argocd-k8s-auth prints.
        let mut aws = plugin("aws-iam-authenticator", &["token", "-i", "c"], &[]);
        aws.api_version = Some("client.authentication.k8s.io/v1alpha1".into());
        let mut notes = Vec::new();
        assert!(map(&aws, &mut notes).is_ok());
        assert_eq!(notes[0].severity, Severity::Info);
    }

    #[test]
    fn interactive_mode_always_is_refused() {
        let mut p = plugin("vault-login", &[], &[]);
        p.interactive_mode = Some("Always".into());
        assert!(matches!(
            map(&p, &mut Vec::new()),
            Err(Refusal::Interactive(_))
        ));
    }

    #[test]
    fn unknown_plugins_are_copied_with_a_warning() {
        let mut notes = Vec::new();
        let p = plugin(
            "vault-k8s-login",
            &["--role", "r"],
            &[("VAULT_ADDR", "https://v")],
        );
        let e = exec(map(&p, &mut notes));
        assert_eq!(e.command, "vault-k8s-login");
        assert_eq!(
            e.env.get("VAULT_ADDR").map(|v| v.0.as_str()),
            Some("https://v")
        );
        assert_eq!(notes[0].severity, Severity::Warning);
    }
}
