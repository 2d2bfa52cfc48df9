//! Azure's kubelogin (`kubelogin get-token`) as `argocd-k8s-auth azure`.
//!
//! kubelogin reads its flags, then lets the environment override them (`Options.UpdateFromEnv`,
//! Azure/kubelogin pkg/internal/token/options.go); the options it ends up with are written out
//! as the variables `argocd-k8s-auth azure` reads (`token.OptionsWithEnv` plus
//! `AAD_SERVER_APPLICATION_ID`, `AAD_ENVIRONMENT_NAME` and, newer than Argo CD 3.5,
//! `AAD_IS_POP_TOKEN_ENABLED`/`AAD_POP_TOKEN_CLAIMS`; argo-cd cmd/argocd-k8s-auth/commands/azure_cgo.go).

use std::collections::BTreeMap;

use super::args::Args;
use super::{
    ARGOCD_K8S_AUTH_API_VERSION, ExecAuth, ExecPlugin, Note, Refusal, dropped, not_needed, unknown,
};
use crate::convert::argocd::{ARGOCD_K8S_AUTH, ExecProviderConfig, Sensitive};
use krm::finding::Finding;

/// The login methods `argocd-k8s-auth azure` can run with nobody present: it sets no username,
/// password, browser or CLI session, so only these three work.
const UNATTENDED_LOGINS: &[&str] = &["workloadidentity", "spn", "msi"];

/// kubelogin's default login method (`NewOptions`): a device code a person types into a browser.
const KUBELOGIN_DEFAULT_LOGIN: &str = "devicecode";

/// What `argocd-k8s-auth azure` logs in with when `AAD_LOGIN_METHOD` is unset.
const ARGOCD_DEFAULT_LOGIN: &str = "workloadidentity";

/// Whether `argocd-k8s-auth azure` with this `AAD_LOGIN_METHOD` can log in unattended.
pub fn is_unattended(login_method: Option<&str>) -> bool {
    UNATTENDED_LOGINS.contains(&login_method.unwrap_or(ARGOCD_DEFAULT_LOGIN))
}

pub(super) const VALUE_FLAGS: &[&str] = &[
    "-l",
    "--login",
    "--client-id",
    "--client-secret",
    "--client-certificate",
    "--client-certificate-password",
    "--username",
    "--password",
    "--identity-resource-id",
    "--server-id",
    "--federated-token-file",
    "--authority-host",
    "--token-cache-dir",
    "-t",
    "--tenant-id",
    "-e",
    "--environment",
    "--timeout",
    "--pop-claims",
    "--redirect-url",
    "--login-hint",
];

/// kubelogin's options after flags and environment, as `get-token` would run with them.
#[derive(Default)]
struct Options {
    login: String,
    client_id: Option<String>,
    client_secret: Option<String>,
    client_cert: Option<String>,
    client_cert_password: Option<String>,
    tenant_id: Option<String>,
    server_id: Option<String>,
    environment: Option<String>,
    federated_token_file: Option<String>,
    authority_host: Option<String>,
    pop_enabled: bool,
    pop_claims: Option<String>,
}

/// Environment variables kubelogin's `UpdateFromEnv` reads: they become options, not copies.
const CONSUMED_ENV: &[&str] = &[
    "AAD_LOGIN_METHOD",
    "AAD_SERVICE_PRINCIPAL_CLIENT_ID",
    "AAD_SERVICE_PRINCIPAL_CLIENT_SECRET",
    "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE",
    "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_TENANT_ID",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_AUTHORITY_HOST",
    "ARM_CLIENT_ID",
    "ARM_CLIENT_SECRET",
    "ARM_CLIENT_CERTIFICATE_PATH",
    "ARM_CLIENT_CERTIFICATE_PASSWORD",
    "ARM_TENANT_ID",
];

fn set_from(target: &mut Option<String>, plugin: &ExecPlugin, names: &[&str]) {
    // Later names win, as the later LookupEnv calls do in UpdateFromEnv.
    for name in names {
        if let Some(v) = plugin.env(name) {
            *target = Some(v.to_string());
        }
    }
}

/// `kubelogin get-token …`; an `Err` says why Argo CD cannot log in this way.
pub(super) fn kubelogin(plugin: &ExecPlugin, notes: &mut Vec<Note>) -> Result<ExecAuth, Refusal> {
    let mut args = Args::parse(&plugin.args, VALUE_FLAGS);
    let owned = |v: Option<&str>| v.map(String::from);
    let mut o = Options {
        login: args
            .value(&["-l", "--login"])
            .unwrap_or(KUBELOGIN_DEFAULT_LOGIN)
            .to_string(),
        client_id: owned(args.value(&["--client-id"])),
        client_secret: owned(args.value(&["--client-secret"])),
        client_cert: owned(args.value(&["--client-certificate"])),
        client_cert_password: owned(args.value(&["--client-certificate-password"])),
        tenant_id: owned(args.value(&["-t", "--tenant-id"])),
        server_id: owned(args.value(&["--server-id"])),
        environment: owned(args.value(&["-e", "--environment"])),
        federated_token_file: owned(args.value(&["--federated-token-file"])),
        authority_host: owned(args.value(&["--authority-host"])),
        pop_enabled: args.switch(&["--pop-enabled"]).unwrap_or(false),
        pop_claims: owned(args.value(&["--pop-claims"])),
    };
    let legacy = args.switch(&["--legacy"]);
    let identity_resource = args.value(&["--identity-resource-id"]).is_some();
    let terraform_env = args.switch(&["--use-azurerm-env-vars"]).unwrap_or(false);
    args.take(&["--username", "--password"]);

    if terraform_env {
        set_from(&mut o.client_id, plugin, &["ARM_CLIENT_ID"]);
        set_from(&mut o.client_secret, plugin, &["ARM_CLIENT_SECRET"]);
        set_from(&mut o.client_cert, plugin, &["ARM_CLIENT_CERTIFICATE_PATH"]);
        set_from(
            &mut o.client_cert_password,
            plugin,
            &["ARM_CLIENT_CERTIFICATE_PASSWORD"],
        );
        set_from(&mut o.tenant_id, plugin, &["ARM_TENANT_ID"]);
    } else {
        set_from(
            &mut o.client_id,
            plugin,
            &["AAD_SERVICE_PRINCIPAL_CLIENT_ID", "AZURE_CLIENT_ID"],
        );
        set_from(
            &mut o.client_secret,
            plugin,
            &["AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "AZURE_CLIENT_SECRET"],
        );
        set_from(
            &mut o.client_cert,
            plugin,
            &[
                "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE",
                "AZURE_CLIENT_CERTIFICATE_PATH",
            ],
        );
        set_from(
            &mut o.client_cert_password,
            plugin,
            &[
                "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE_PASSWORD",
                "AZURE_CLIENT_CERTIFICATE_PASSWORD",
            ],
        );
        set_from(&mut o.tenant_id, plugin, &["AZURE_TENANT_ID"]);
    }
    if let Some(login) = plugin.env("AAD_LOGIN_METHOD") {
        o.login = login.to_string();
    }
    if o.login == "workloadidentity" {
        set_from(&mut o.client_id, plugin, &["AZURE_CLIENT_ID"]);
        set_from(
            &mut o.federated_token_file,
            plugin,
            &["AZURE_FEDERATED_TOKEN_FILE"],
        );
        set_from(&mut o.authority_host, plugin, &["AZURE_AUTHORITY_HOST"]);
    }

    if !UNATTENDED_LOGINS.contains(&o.login.as_str()) {
        return Err(Refusal::Interactive(format!(
            "kubelogin login method {:?} needs a person (or a signed-in tool) Argo CD does not have; argocd-k8s-auth azure logs in with {} only",
            o.login,
            UNATTENDED_LOGINS.join(", ")
        )));
    }
    if identity_resource && o.login == "msi" {
        return Err(Refusal::Unsupported(
            "kubelogin --identity-resource-id picks a managed identity argocd-k8s-auth azure cannot pick (no variable carries it): Argo CD would log in as another identity".into(),
        ));
    }
    if legacy == Some(true) {
        return Err(Refusal::Unsupported(
            "kubelogin --legacy (an audience with the spn: prefix) cannot be set for argocd-k8s-auth azure: the cluster would refuse its token".into(),
        ));
    }
    match (o.pop_enabled, o.pop_claims.is_some()) {
        (true, false) | (false, true) => {
            return Err(Refusal::Unsupported(
                "kubelogin --pop-enabled and --pop-claims go together (kubelogin itself refuses one without the other)".into(),
            ));
        }
        (true, true) if o.login != "spn" => {
            return Err(Refusal::Unsupported(format!(
                "kubelogin PoP tokens with login {:?}: argocd-k8s-auth azure makes PoP tokens for spn only, and the cluster would refuse a plain token",
                o.login
            )));
        }
        (true, true) => notes.push(Finding::warning(
            "PoP tokens (AAD_IS_POP_TOKEN_ENABLED, AAD_POP_TOKEN_CLAIMS) need an argocd-k8s-auth newer than Argo CD 3.5; older ones log in with a plain token, which the cluster refuses",
        )),
        (false, false) => {}
    }
    if o.client_cert.is_some() && o.login == "spn" {
        notes.push(Finding::warning(
            "the client certificate is a file path (--client-certificate): the file must exist in the Argo CD pods",
        ));
    }
    if identity_resource {
        not_needed(notes, "kubelogin", &["--identity-resource-id"]);
    }
    not_needed(
        notes,
        "kubelogin",
        &args.take(&[
            "--token-cache-dir",
            "--timeout",
            "--redirect-url",
            "--login-hint",
        ]),
    );
    if terraform_env {
        not_needed(notes, "kubelogin", &["--use-azurerm-env-vars"]);
    }
    if legacy == Some(false) {
        not_needed(notes, "kubelogin", &["--legacy"]);
    }
    dropped(
        notes,
        "kubelogin",
        &args.take(&[
            "--disable-instance-discovery",
            "--disable-environment-override",
        ]),
        "argocd-k8s-auth azure has no setting for it",
    );
    unknown(notes, "kubelogin", &args);

    let mut env: BTreeMap<String, Sensitive> = plugin
        .env
        .iter()
        .filter(|(name, _)| !CONSUMED_ENV.contains(&name.as_str()))
        .cloned()
        .collect();
    let mut set = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            env.insert(name.to_string(), Sensitive(value));
        }
    };
    set("AAD_LOGIN_METHOD", Some(o.login));
    set("AZURE_CLIENT_ID", o.client_id);
    set("AZURE_CLIENT_SECRET", o.client_secret);
    set("AZURE_CLIENT_CERTIFICATE_PATH", o.client_cert);
    set("AZURE_CLIENT_CERTIFICATE_PASSWORD", o.client_cert_password);
    set("AZURE_TENANT_ID", o.tenant_id);
    set("AZURE_FEDERATED_TOKEN_FILE", o.federated_token_file);
    set("AZURE_AUTHORITY_HOST", o.authority_host);
    set("AAD_SERVER_APPLICATION_ID", o.server_id);
    set("AAD_ENVIRONMENT_NAME", o.environment);
    if o.pop_enabled {
        set("AAD_IS_POP_TOKEN_ENABLED", Some("true".into()));
        set("AAD_POP_TOKEN_CLAIMS", o.pop_claims);
    }
    Ok(ExecAuth::Exec(ExecProviderConfig {
        command: ARGOCD_K8S_AUTH.into(),
        args: vec!["azure".into()],
        env,
        api_version: Some(ARGOCD_K8S_AUTH_API_VERSION.into()),
        ..Default::default()
    }))
}
