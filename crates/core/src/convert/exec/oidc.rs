//! int128/kubelogin, the OIDC plugin (`kubectl oidc-login get-token --oidc-issuer-url=…`, or the
//! same binary installed as `kubelogin`): not Azure's kubelogin, and not something
//! `argocd-k8s-auth` replaces.
//!
//! Its grant types (int128/kubelogin docs/usage.md, `--grant-type`): `auto` (the default: the
//! authorization code flow in a browser, or the password grant when `--username` is given),
//! `authcode`, `authcode-keyboard`, `device-code` need a person; `password` (with `--password`)
//! and `client-credentials` do not.

use super::args::Args;
use super::{ExecAuth, ExecPlugin, Note, Refusal, copied};

pub(super) const VALUE_FLAGS: &[&str] = &[
    "--oidc-issuer-url",
    "--oidc-client-id",
    "--oidc-client-secret",
    "--oidc-extra-scope",
    "--oidc-redirect-url",
    "--oidc-auth-request-extra-params",
    "--grant-type",
    "--username",
    "--password",
    "--listen-address",
    "--token-cache-dir",
    "--certificate-authority",
    "--certificate-authority-data",
    "--browser-command",
    "--authentication-timeout-sec",
];

/// Whether the plugin is int128/kubelogin's `get-token`.
pub(super) fn is_oidc_login(plugin: &ExecPlugin) -> bool {
    let args = Args::parse(&plugin.args, VALUE_FLAGS);
    match plugin.program() {
        "kubectl" => args.has_words(&["oidc-login", "get-token"]),
        "kubectl-oidc_login" | "kubectl-oidc-login" => args.has_words(&["get-token"]),
        // Azure's kubelogin has no --oidc-* flag; int128's get-token requires --oidc-issuer-url.
        "kubelogin" => args.has_words(&["get-token"]) && args.any_flag_starts_with("--oidc-"),
        _ => false,
    }
}

pub(super) fn oidc_login(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, Refusal> {
    let mut args = Args::parse(&plugin.args, VALUE_FLAGS);
    let username = args.value(&["--username"]).is_some();
    let password = args.value(&["--password"]).is_some();
    let grant = args.value(&["--grant-type"]).unwrap_or("auto");
    let grant = match grant {
        "auto" if username => "password",
        "auto" => "authcode",
        other => other,
    };
    let unattended = match grant {
        "client-credentials" => true,
        // Without --password the password grant prompts for it.
        "password" => password,
        _ => false,
    };
    if !unattended {
        return Err(Refusal::Interactive(format!(
            "int128/kubelogin (kubectl oidc-login) with the {grant:?} grant signs in through a person at a browser or a prompt; Argo CD runs credential plugins with nobody there"
        )));
    }
    copied(plugin, notes)
}
