//! Maps a kubeconfig `exec` credential plugin to what Argo CD can run: `argocd-k8s-auth` where possible.

use std::collections::BTreeMap;

use crate::convert::argocd::{ARGOCD_K8S_AUTH, AwsAuthConfig, ExecProviderConfig, Sensitive};
use crate::krm::finding::{Finding, Severity};

/// A kubeconfig `exec` block, already type-checked.
#[derive(Debug, Clone, Default)]
pub struct ExecPlugin {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, Sensitive)>,
    pub api_version: Option<String>,
    pub install_hint: Option<String>,
    pub provide_cluster_info: bool,
}

/// What the plugin becomes in Argo CD's `config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecAuth {
    Aws(AwsAuthConfig),
    Exec(ExecProviderConfig),
}

/// A remark about the mapping (never containing argument or environment values).
/// A remark about the exec plugin (the kubeconfig reader adds where it stands).
pub type Note = Finding;

const EXEC_API_VERSION: &str = "client.authentication.k8s.io/v1beta1";

impl ExecPlugin {
    fn env(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.0.as_str())
    }

    /// The executable's file name, whatever directory the kubeconfig put it in.
    fn program(&self) -> &str {
        self.command.rsplit('/').next().unwrap_or(&self.command)
    }
}

/// Maps an exec plugin; an `Err` is a reason the plugin cannot work in Argo CD at all.
pub fn map(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, String> {
    match plugin.program() {
        "aws-iam-authenticator" if plugin.args.first().is_some_and(|a| a == "token") => {
            aws_iam_authenticator(plugin, notes)
        }
        "aws" if has_subcommand(&plugin.args, &["eks", "get-token"]) => aws_cli(plugin),
        "gke-gcloud-auth-plugin" => Ok(ExecAuth::Exec(ExecProviderConfig {
            command: ARGOCD_K8S_AUTH.into(),
            args: vec!["gcp".into()],
            api_version: Some(EXEC_API_VERSION.into()),
            ..Default::default()
        })),
        "kubelogin" if plugin.args.first().is_some_and(|a| a == "get-token") => {
            Ok(kubelogin(plugin, notes))
        }
        _ => Ok(generic(plugin, notes)),
    }
}

/// The value of `--flag value`, `--flag=value`, or a short alias of it.
fn flag<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut found = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        for name in names {
            if arg == name {
                found = iter.next().map(String::as_str);
            } else if let Some(value) = arg.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                found = Some(value);
            }
        }
    }
    found
}

/// Whether the positional words appear in order (flags between them allowed, as in `aws --region x eks get-token`).
fn has_subcommand(args: &[String], words: &[&str]) -> bool {
    let mut wanted = words.iter().peekable();
    for arg in args {
        if wanted.peek().is_some_and(|w| *w == arg) {
            wanted.next();
        }
    }
    wanted.peek().is_none()
}

fn present(args: &[String], names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| {
            args.iter()
                .any(|a| a == *n || a.starts_with(&format!("{n}=")))
        })
        .map(|n| n.to_string())
        .collect()
}

fn aws_iam_authenticator(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, String> {
    let cluster = flag(&plugin.args, &["-i", "--cluster-id"])
        .or_else(|| plugin.env("KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID"))
        .ok_or("aws-iam-authenticator has no cluster id (-i); Argo CD needs it for argocd-k8s-auth aws")?;
    let dropped = present(
        &plugin.args,
        &[
            "-e",
            "--external-id",
            "-s",
            "--session-name",
            "--forward-session-name",
        ],
    );
    if !dropped.is_empty() {
        notes.push(Finding::new(
            Severity::Warning,
            format!(
                "aws-iam-authenticator option {} has no equivalent in Argo CD's awsAuthConfig and is dropped",
                dropped.join(", ")
            ),
        ));
    }
    Ok(ExecAuth::Aws(AwsAuthConfig {
        cluster_name: cluster.to_string(),
        role_arn: flag(&plugin.args, &["-r", "--role"]).map(String::from),
        profile: plugin.env("AWS_PROFILE").map(String::from),
    }))
}

fn aws_cli(plugin: &ExecPlugin) -> Result<ExecAuth, String> {
    if flag(&plugin.args, &["--cluster-id"]).is_some() {
        return Err("aws eks get-token --cluster-id (EKS on Outposts) has no equivalent in argocd-k8s-auth aws".into());
    }
    let cluster = flag(&plugin.args, &["--cluster-name"]).ok_or(
        "aws eks get-token has no --cluster-name; Argo CD needs it for argocd-k8s-auth aws",
    )?;
    Ok(ExecAuth::Aws(AwsAuthConfig {
        cluster_name: cluster.to_string(),
        role_arn: flag(&plugin.args, &["--role-arn"]).map(String::from),
        profile: flag(&plugin.args, &["--profile"])
            .or_else(|| plugin.env("AWS_PROFILE"))
            .map(String::from),
    }))
}

/// kubelogin flags and the variables `argocd-k8s-auth azure` reads for them.
const KUBELOGIN_FLAGS: &[(&[&str], &str)] = &[
    (&["-l", "--login"], "AAD_LOGIN_METHOD"),
    (&["-e", "--environment"], "AAD_ENVIRONMENT_NAME"),
    (&["--server-id"], "AAD_SERVER_APPLICATION_ID"),
    (&["--client-id"], "AZURE_CLIENT_ID"),
    (&["-t", "--tenant-id"], "AZURE_TENANT_ID"),
    (&["--federated-token-file"], "AZURE_FEDERATED_TOKEN_FILE"),
    (&["--authority-host"], "AZURE_AUTHORITY_HOST"),
    (&["--client-secret"], "AZURE_CLIENT_SECRET"),
    (&["--client-certificate"], "AZURE_CLIENT_CERTIFICATE_PATH"),
    (
        &["--client-certificate-password"],
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    ),
];

/// Login methods that work unattended inside Argo CD's repo server and controller.
const UNATTENDED_LOGINS: &[&str] = &["workloadidentity", "spn", "msi"];

fn kubelogin(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> ExecAuth {
    let mut env: BTreeMap<String, Sensitive> = plugin
        .env
        .iter()
        .filter(|(name, _)| name.starts_with("AZURE_") || name.starts_with("AAD_"))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    for (flags, variable) in KUBELOGIN_FLAGS {
        if let Some(value) = flag(&plugin.args, flags) {
            env.insert(variable.to_string(), Sensitive(value.to_string()));
        }
    }
    // kubelogin's own default is devicecode, which needs a person at a browser.
    let login = env
        .get("AAD_LOGIN_METHOD")
        .map_or("devicecode", |v| v.0.as_str())
        .to_string();
    env.insert("AAD_LOGIN_METHOD".into(), Sensitive(login.clone()));
    if !UNATTENDED_LOGINS.contains(&login.as_str()) {
        notes.push(Finding::new(
            Severity::Warning,
            format!(
                "kubelogin login method {login:?} cannot run unattended in Argo CD; argocd-k8s-auth azure works with {}",
                UNATTENDED_LOGINS.join(", ")
            ),
        ));
    }
    ExecAuth::Exec(ExecProviderConfig {
        command: ARGOCD_K8S_AUTH.into(),
        args: vec!["azure".into()],
        env,
        api_version: Some(EXEC_API_VERSION.into()),
        ..Default::default()
    })
}

fn generic(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> ExecAuth {
    notes.push(Finding::new(
        Severity::Warning,
        format!(
            "exec command {:?} is copied as is: it must exist in the Argo CD image (which ships only {ARGOCD_K8S_AUTH})",
            plugin.command
        ),
    ));
    ExecAuth::Exec(ExecProviderConfig {
        command: plugin.command.clone(),
        args: plugin.args.clone(),
        env: plugin.env.iter().cloned().collect(),
        api_version: plugin.api_version.clone(),
        install_hint: plugin.install_hint.clone(),
        provide_cluster_info: plugin.provide_cluster_info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(command: &str, args: &[&str], env: &[(&str, &str)]) -> ExecPlugin {
        ExecPlugin {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(n, v)| (n.to_string(), Sensitive(v.to_string())))
                .collect(),
            api_version: Some(EXEC_API_VERSION.into()),
            ..Default::default()
        }
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
    fn aws_cli_flags_may_come_in_any_order() {
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
            ],
            &[],
        );
        assert_eq!(
            map(&p, &mut notes).unwrap(),
            ExecAuth::Aws(AwsAuthConfig {
                cluster_name: "x".into(),
                role_arn: None,
                profile: Some("q".into())
            })
        );
        assert!(map(&plugin("aws", &["eks", "get-token"], &[]), &mut notes).is_err());
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
        let ExecAuth::Exec(e) = map(&p, &mut notes).unwrap() else {
            panic!("expected exec")
        };
        assert_eq!(e.command, "argocd-k8s-auth");
        assert_eq!(e.args, vec!["azure"]);
        let env: Vec<(&str, &str)> = e
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect();
        assert_eq!(
            env,
            vec![
                ("AAD_ENVIRONMENT_NAME", "AzurePublicCloud"),
                ("AAD_LOGIN_METHOD", "workloadidentity"),
                ("AZURE_CLIENT_ID", "c"),
                ("AZURE_TENANT_ID", "t")
            ]
        );
        assert!(notes.is_empty());
        map(&plugin("kubelogin", &["get-token"], &[]), &mut notes).unwrap();
        assert!(notes[0].message.contains("devicecode"), "{notes:?}");
    }

    #[test]
    fn unknown_plugins_are_copied_with_a_warning() {
        let mut notes = Vec::new();
        let p = plugin(
            "vault-k8s-login",
            &["--role", "r"],
            &[("VAULT_ADDR", "https://v")],
        );
        let ExecAuth::Exec(e) = map(&p, &mut notes).unwrap() else {
            panic!("expected exec")
        };
        assert_eq!(e.command, "vault-k8s-login");
        assert_eq!(
            e.env.get("VAULT_ADDR").map(|v| v.0.as_str()),
            Some("https://v")
        );
        assert_eq!(notes[0].severity, Severity::Warning);
    }
}
