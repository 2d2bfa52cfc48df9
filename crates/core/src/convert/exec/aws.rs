//! EKS logins (`aws-iam-authenticator token`, `aws eks get-token`) as `argocd-k8s-auth aws`.
//!
//! `argocd-k8s-auth aws` takes `--cluster-name`, `--role-arn` and `--profile`, nothing else; since
//! Argo CD 3.4 (AWS SDK v2, argo-cd #26200) the region comes from the environment only
//! (`AWS_REGION`, then `AWS_DEFAULT_REGION`, then the profile). A region the kubeconfig states is
//! therefore carried as `AWS_REGION` of an `execProviderConfig` running `argocd-k8s-auth aws`:
//! `awsAuthConfig` has no place for it.

use std::collections::BTreeMap;

use super::args::Args;
use super::{
    ARGOCD_K8S_AUTH_API_VERSION, ExecAuth, ExecPlugin, Note, Refusal, dropped, not_needed, unknown,
};
use crate::convert::argocd::{ARGOCD_K8S_AUTH, AwsAuthConfig, ExecProviderConfig, Sensitive};
use krm::finding::Finding;

/// What `argocd-k8s-auth aws` needs, and the environment it must run with.
struct AwsLogin {
    cluster: String,
    role: Option<String>,
    profile: Option<String>,
    env: BTreeMap<String, Sensitive>,
}

impl AwsLogin {
    /// `awsAuthConfig` when nothing needs carrying in the environment; otherwise the same
    /// command Argo CD would run for it, with the environment.
    fn into_auth(self) -> ExecAuth {
        if self.env.is_empty() {
            return ExecAuth::Aws(AwsAuthConfig {
                cluster_name: self.cluster,
                role_arn: self.role,
                profile: self.profile,
            });
        }
        // The argument order Argo CD itself uses for awsAuthConfig (RawRestConfig).
        let mut args = vec!["aws".to_string(), "--cluster-name".into(), self.cluster];
        if let Some(role) = self.role {
            args.extend(["--role-arn".into(), role]);
        }
        if let Some(profile) = self.profile {
            args.extend(["--profile".into(), profile]);
        }
        ExecAuth::Exec(ExecProviderConfig {
            command: ARGOCD_K8S_AUTH.into(),
            args,
            env: self.env,
            api_version: Some(ARGOCD_K8S_AUTH_API_VERSION.into()),
            ..Default::default()
        })
    }
}

/// The plugin's environment without the variables a flag already stands for.
fn carried_env(plugin: &ExecPlugin, consumed: &[&str]) -> BTreeMap<String, Sensitive> {
    plugin
        .env
        .iter()
        .filter(|(name, _)| !consumed.contains(&name.as_str()))
        .cloned()
        .collect()
}

fn region_note(notes: &mut Vec<Note>, env: &BTreeMap<String, Sensitive>) {
    if env.contains_key("AWS_REGION") || env.contains_key("AWS_DEFAULT_REGION") {
        notes.push(Finding::info(
            "the region is carried as AWS_REGION of argocd-k8s-auth aws in execProviderConfig (awsAuthConfig has no region; since Argo CD 3.4 it comes from the environment only)",
        ));
    }
}

/// aws-iam-authenticator's `token` command (cmd/aws-iam-authenticator/token.go, root.go).
pub(super) fn iam_authenticator(
    plugin: &ExecPlugin,
    notes: &mut Vec<Note>,
) -> Result<ExecAuth, Refusal> {
    let mut args = Args::parse(
        &plugin.args,
        &[
            "-i",
            "--cluster-id",
            "-r",
            "--role",
            "-e",
            "--external-id",
            "-s",
            "--session-name",
            "-c",
            "--config",
            "-l",
            "--log-format",
            "--feature-gates",
        ],
    );
    let cluster = args
        .value(&["-i", "--cluster-id"])
        .or_else(|| plugin.env("KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID"));
    let config_file = args.value(&["-c", "--config"]);
    let Some(cluster) = cluster else {
        return Err(Refusal::Unsupported(if config_file.is_some() {
            "aws-iam-authenticator takes its cluster id from a file (--config), which the function never reads; give it -i".into()
        } else {
            "aws-iam-authenticator has no cluster id (-i); Argo CD needs it for argocd-k8s-auth aws"
                .into()
        }));
    };
    if args.value(&["-e", "--external-id"]).is_some() {
        return Err(Refusal::Unsupported(
            "aws-iam-authenticator --external-id cannot be passed by argocd-k8s-auth aws: a role whose trust policy asks for it would refuse Argo CD".into(),
        ));
    }
    let role = args
        .value(&["-r", "--role"])
        .or_else(|| plugin.env("DEFAULT_ROLE"));
    dropped(
        notes,
        "aws-iam-authenticator",
        &args.take(&["-s", "--session-name", "--forward-session-name"]),
        "the assumed role's session gets Argo CD's default name",
    );
    not_needed(
        notes,
        "aws-iam-authenticator",
        &args.take(&[
            "--token-only",
            "--cache",
            "-l",
            "--log-format",
            "-c",
            "--config",
            "--feature-gates",
        ]),
    );
    unknown(notes, "aws-iam-authenticator", &args);
    let env = carried_env(
        plugin,
        &[
            "AWS_PROFILE",
            "KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID",
            "DEFAULT_ROLE",
        ],
    );
    region_note(notes, &env);
    Ok(AwsLogin {
        cluster: cluster.to_string(),
        role: role.map(String::from),
        profile: plugin.env("AWS_PROFILE").map(String::from),
        env,
    }
    .into_auth())
}

/// `aws [global options] eks get-token` (the AWS CLI's eks customization).
pub(super) fn cli(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, Refusal> {
    let mut args = Args::parse(
        &plugin.args,
        &[
            "--cluster-name",
            "--role-arn",
            "--cluster-id",
            "--region",
            "--profile",
            "--output",
            "--query",
            "--endpoint-url",
            "--ca-bundle",
            "--color",
            "--cli-read-timeout",
            "--cli-connect-timeout",
            "--cli-binary-format",
        ],
    );
    if args.value(&["--cluster-id"]).is_some() {
        return Err(Refusal::Unsupported(
            "aws eks get-token --cluster-id (EKS on Outposts) has no equivalent in argocd-k8s-auth aws".into(),
        ));
    }
    let cluster = args.value(&["--cluster-name"]).ok_or_else(|| {
        Refusal::Unsupported(
            "aws eks get-token has no --cluster-name; Argo CD needs it for argocd-k8s-auth aws"
                .into(),
        )
    })?;
    let role = args.value(&["--role-arn"]);
    let profile = args
        .value(&["--profile"])
        .or_else(|| plugin.env("AWS_PROFILE"));
    let region = args.value(&["--region"]);
    dropped(
        notes,
        "aws",
        &args.take(&["--endpoint-url", "--no-verify-ssl", "--ca-bundle"]),
        "argocd-k8s-auth signs with the default STS endpoint and trust store",
    );
    not_needed(
        notes,
        "aws",
        &args.take(&[
            "--output",
            "--query",
            "--debug",
            "--no-cli-pager",
            "--no-paginate",
            "--color",
            "--cli-read-timeout",
            "--cli-connect-timeout",
            "--cli-binary-format",
            "--cli-auto-prompt",
            "--no-cli-auto-prompt",
        ]),
    );
    unknown(notes, "aws", &args);
    let mut env = carried_env(plugin, &["AWS_PROFILE"]);
    if let Some(region) = region {
        // The CLI's --region wins over the environment, so it does here too.
        env.insert("AWS_REGION".into(), Sensitive(region.to_string()));
    }
    region_note(notes, &env);
    Ok(AwsLogin {
        cluster: cluster.to_string(),
        role: role.map(String::from),
        profile: profile.map(String::from),
        env,
    }
    .into_auth())
}
