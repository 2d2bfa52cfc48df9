//! The validator: every problem Argo CD would hit, or silently ignore, in a cluster Secret, and
//! a policy on top (allowed exec commands, no `insecure`, no expiring tokens, required labels).
//!
//! Argo CD skips a cluster Secret it cannot read with no more than a log line; these checks say
//! why, naming the field. The judges are Argo CD's own: `ClusterConfig`'s json tags and Go types
//! (`convert::argocd`), client-go's TLS and exec rules, apimachinery's names.

pub mod expiry;
pub mod posture;
pub mod tls;

use serde_json::Value;

use crate::convert::argocd::{
    ARGOCD_K8S_AUTH, CLUSTER_CONFIG_FIELDS, Field, GoType, SECRET_DATA_KEYS, SECRET_TYPE_LABEL,
};
use crate::convert::exec::{
    ARGOCD_K8S_AUTH_API_VERSION, SUPPORTED_API_VERSIONS, azure_login_is_unattended,
};
use crate::convert::kubeconfig::is_http_url;
use crate::convert::login::token_expires;
use crate::convert::meta::{
    check_label_value, check_qualified_name, is_dns1123_label, is_dns1123_subdomain,
};
use krm::finding::{Finding, ResourceRef};
use krm::object::Object;
use krm::{Input, Out, Sink, TextStore, render};
use yaml::Node;

/// The group whose members the API server lets do anything, before any authorizer is asked.
const MASTERS: &str = "system:masters";

/// What a policy adds to Argo CD's own rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Exec commands a cluster Secret may run (`awsAuthConfig` runs `argocd-k8s-auth`);
    /// `None`: any.
    pub allowed_exec_commands: Option<Vec<String>>,
    /// `insecure: true` is an error.
    pub forbid_insecure: bool,
    /// A bearer token that expires by itself (EKS, Google, JWTs with `exp`) is an error.
    pub forbid_expiring_tokens: bool,
    /// Labels every cluster Secret must carry.
    pub required_labels: Vec<String>,
    /// A certificate that expires within this many days is a warning.
    pub expiry_days: u32,
    /// `leastPrivilege`: what is said of a cluster Secret's credential.
    pub least_privilege: LeastPrivilege,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed_exec_commands: None,
            forbid_insecure: false,
            forbid_expiring_tokens: false,
            required_labels: Vec::new(),
            expiry_days: 30,
            least_privilege: LeastPrivilege::Off,
        }
    }
}

impl Policy {
    /// The policy of `action: validate` when nothing is set: only the helper the Argo CD image
    /// ships may run (anyone who can write a cluster Secret can otherwise make the controller
    /// run any command).
    pub fn validating() -> Self {
        Policy {
            allowed_exec_commands: Some(vec![ARGOCD_K8S_AUTH.to_string()]),
            ..Policy::default()
        }
    }
}

/// `leastPrivilege`: how a cluster Secret's credential is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeastPrivilege {
    /// Not judged.
    Off,
    /// `true`: a client certificate in `system:masters` is a warning.
    Audit,
    /// `require`: anything but the strongest credential is an error (a bound, expiring
    /// ServiceAccount token, or an exec login that holds no secret).
    Require,
}

/// Whether `node` is an Argo CD cluster Secret (labelled `argocd.argoproj.io/secret-type: cluster`).
pub fn is_cluster_secret(node: &Node) -> bool {
    let object = Object::new(node);
    object.is_secret() && object.label(SECRET_TYPE_LABEL) == Some("cluster")
}

/// `action: validate`: every Argo CD cluster Secret in the input checked; the output is the
/// input, unchanged. A run with none says so, so a validator that saw nothing is not silent.
/// `other_forms` checks an item that stands for a cluster Secret in another form (a
/// SealedSecret, which a layer above knows): its findings, or `None` for any other item.
pub fn validate_input(
    input: &Input,
    policy: &Policy,
    now: Option<i64>,
    function_config: Option<ResourceRef>,
    forms: (&OtherForms, &Tokens),
    sink: &mut Sink,
) -> Vec<Finding> {
    let (other_forms, tokens) = forms;
    let mut results = Vec::new();
    let mut checked = 0;
    for item in &input.items {
        let object = Object::new(&item.node);
        let findings = if is_cluster_secret(&item.node) {
            let mut findings = check(&item.node, policy, now);
            findings.extend(credential(object, input, policy, tokens));
            findings
        } else if let Some(findings) = other_forms(&item.node) {
            findings
        } else {
            continue;
        };
        checked += 1;
        results.extend(findings.into_iter().map(|f| object.finding(f)));
    }
    if checked == 0 {
        results.push(
            Finding::info(format!(
                "no Argo CD cluster Secret (label {SECRET_TYPE_LABEL}: cluster) in the input: nothing to validate"
            ))
            .on(function_config, None),
        );
    }
    let items: Vec<Out> = input.items.iter().map(Out::Keep).collect();
    results.sort_by_key(|f| f.severity);
    render(input, &items, &TextStore::default(), &results, sink);
    results
}

/// The checks of the Secrets in forms of their own (SealedSecrets): `None` for any other item.
pub type OtherForms = dyn Fn(&Node) -> Option<Vec<Finding>>;

/// What the token Secret capi2argo-controller keeps for a cluster Secret records (found among
/// the input's items), which the rule of least privilege owns: validation only reads it.
pub type Tokens = dyn Fn(Object, &[krm::Item]) -> Option<RecordedToken>;

/// What a token Secret records of its token.
#[derive(Debug, Clone, Default)]
pub struct RecordedToken {
    /// The object the token is bound to, `namespace/name` in the workload cluster.
    pub binding: Option<String>,
    /// What was granted.
    pub grant: Option<String>,
}

/// What a cluster Secret's credential lets its holder do (information; with
/// `leastPrivilege: require`, an error unless it is the strongest), and what its token Secret
/// says was granted where capi2argo-controller keeps one for it.
fn credential(object: Object, input: &Input, policy: &Policy, tokens: &Tokens) -> Vec<Finding> {
    let Some((field, config)) = object.secret_value("config").ok().flatten() else {
        return Vec::new();
    };
    let Ok(config) = serde_json::from_str::<Value>(&config) else {
        return Vec::new();
    };
    let renewed = object
        .annotation(crate::convert::argocd::TOKEN_EXPIRES_ANNOTATION)
        .is_some();
    let token = renewed.then(|| tokens(object, &input.items)).flatten();
    let credential = posture::Credential::of_config(&config, renewed)
        .bound_as_recorded(token.as_ref().and_then(|t| t.binding.as_deref()));
    let granted = token
        .and_then(|t| t.grant)
        .map_or(String::new(), |g| format!("; granted: {g}"));
    let mut out = vec![
        Finding::info(format!("credential: {}{granted}", credential.describe())).at(field.clone()),
    ];
    if policy.least_privilege == LeastPrivilege::Require && !credential.is_strongest() {
        out.push(
            Finding::error(format!(
                "leastPrivilege=require: {} is not the strongest credential (a bound, expiring ServiceAccount token, or an exec login that holds no secret); give Argo CD a ServiceAccount token (credentials=serviceAccount)",
                credential.kind()
            ))
            .at(field),
        );
    }
    out
}

/// Every problem with one Argo CD cluster Secret, each naming its field (the caller names the
/// Secret). Messages never hold a value of the Secret. With the host's time (`now`, Unix
/// seconds), `caData` and `certData` certificates are checked against it.
pub fn check(node: &Node, policy: &Policy, now: Option<i64>) -> Vec<Finding> {
    let checked = check_dated(node, policy, now);
    let mut out = checked.findings;
    out.extend(checked.dated.into_iter().map(|(_, finding)| finding));
    out
}

/// What the validator found in one Argo CD cluster Secret, with what its certificates'
/// lifetimes say apart.
#[derive(Debug, Default)]
pub struct Checked {
    pub findings: Vec<Finding>,
    /// What the certificates' lifetimes say about the host's time, by certificate: the
    /// conversion reports those on the kubeconfig they came from, as warnings.
    pub dated: Vec<(expiry::Certificate, Finding)>,
    /// When the first of its certificates (the CA's or the client's) stops being valid.
    pub expires: Option<i64>,
    /// The first time after the host's at which `dated` may say something else.
    pub dated_until: Option<i64>,
}

/// [`check`], with the certificates' lifetimes apart.
pub fn check_dated(node: &Node, policy: &Policy, now: Option<i64>) -> Checked {
    check_dated_in(node, policy, now, None)
}

/// [`check_dated`], its certificates read through `memo` when there is one.
pub fn check_dated_in(
    node: &Node,
    policy: &Policy,
    now: Option<i64>,
    memo: Option<&tls::Memo>,
) -> Checked {
    let mut checked = Checked::default();
    let object = Object::new(node);
    let mut out = object.metadata_problems();
    metadata(&object, policy, &mut out);
    // Each key read once. Unreadable data (not base64, not a string) is a finding of its own.
    let values: Vec<_> = SECRET_DATA_KEYS
        .iter()
        .map(|&key| (key, object.secret_value(key)))
        .collect();
    for (_, value) in &values {
        if let Err(finding) = value {
            out.push(finding.clone());
        }
    }
    let read = |key: &str| values.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
    let data = |key: &str| match read(key) {
        Some(Ok(Some((field, text)))) => Some((field.as_str(), text.as_ref())),
        _ => None,
    };
    let unreadable = |key: &str| matches!(read(key), Some(Err(_)));
    for section in ["data", "stringData"] {
        let Some(map) = node.get(section).and_then(Node::as_map) else {
            continue;
        };
        for (key, _) in map {
            let key = key.as_str().unwrap_or_default();
            if !SECRET_DATA_KEYS.contains(&key) {
                out.push(
                    Finding::warning(format!(
                        "Argo CD does not read this key (it reads {})",
                        SECRET_DATA_KEYS.join(", ")
                    ))
                    .at(format!("{section}.{key}")),
                );
            }
        }
    }
    // A missing key is named where the Secret writes its values.
    let writes = if node.get("data").is_none() && node.get("stringData").is_some() {
        "stringData"
    } else {
        "data"
    };
    match data("server") {
        None if unreadable("server") => {}
        None => out.push(
            Finding::error("is missing: Argo CD needs the API server URL")
                .at(format!("{writes}.server")),
        ),
        Some((field, server)) if !is_http_url(server.trim_end_matches('/')) => {
            out.push(Finding::error("is not an https:// (or http://) URL with a host").at(field))
        }
        Some(_) => {}
    }
    if data("name").is_none() && !unreadable("name") {
        out.push(
            Finding::warning("is missing: Argo CD names the cluster after its server URL")
                .at(format!("{writes}.name")),
        );
    }
    if let Some((field, shard)) = data("shard") {
        if shard.trim().parse::<u32>().is_err() {
            out.push(
                Finding::error("is not a shard number (Argo CD ignores it, with a log line)")
                    .at(field),
            );
        }
    }
    if let Some((field, project)) = data("project") {
        if !is_dns1123_subdomain(project) {
            out.push(Finding::error("is not an AppProject name (a DNS-1123 subdomain)").at(field));
        }
    }
    if let Some((field, namespaces)) = data("namespaces") {
        let bad = namespaces
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && !is_dns1123_label(n))
            .count();
        if bad > 0 {
            out.push(
                Finding::error(format!("has entries that are not namespace names ({bad})"))
                    .at(field),
            );
        }
    }
    if let Some((field, value)) = data("clusterResources") {
        if value != "true" && value != "false" {
            out.push(
                Finding::warning("is neither \"true\" nor \"false\": Argo CD reads it as false")
                    .at(field),
            );
        }
    }
    match data("config") {
        None => {}
        Some((field, text)) => match serde_json::from_str::<Value>(text) {
            Err(_) => out.push(Finding::error("is not JSON: Argo CD skips the cluster").at(field)),
            Ok(config) => {
                // A ServiceAccount token capi2argo-controller renews expires on purpose.
                let renewed = object
                    .annotation(crate::convert::argocd::TOKEN_EXPIRES_ANNOTATION)
                    .is_some();
                config_checks(&config, field, policy, now, renewed, memo, &mut checked)
            }
        },
    }
    checked.findings.splice(0..0, out);
    checked
}

fn metadata(object: &Object, policy: &Policy, out: &mut Vec<Finding>) {
    for (field, labels) in [("labels", true), ("annotations", false)] {
        for (key, value) in object.string_entries(field) {
            if let Err(reason) = check_qualified_name(key) {
                out.push(Finding::error(reason).at(format!("metadata.{field}")));
            }
            if labels {
                if let Err(reason) = check_label_value(value) {
                    out.push(Finding::error(reason).at(format!("metadata.{field}.{key}")));
                }
            }
        }
    }
    for label in &policy.required_labels {
        if object.label(label).is_none() {
            out.push(
                Finding::error(format!("policy: the label {label} is required"))
                    .at("metadata.labels"),
            );
        }
    }
}

/// `config` against `ClusterConfig`'s fields and Go types, then client-go's rules.
fn config_checks(
    config: &Value,
    field: &str,
    policy: &Policy,
    now: Option<i64>,
    renewed: bool,
    memo: Option<&tls::Memo>,
    checked: &mut Checked,
) {
    let out = &mut checked.findings;
    go_types(config, CLUSTER_CONFIG_FIELDS, field, out);
    let at = |path: &str| format!("{field}.{path}");
    // `Value::pointer` would allocate for every step (it unescapes `~1`); these paths are plain keys.
    let str_at = |path: &str| {
        path.split('/')
            .skip(1)
            .try_fold(config, |value, key| value.get(key))
            .and_then(Value::as_str)
    };
    let tls = config.get("tlsClientConfig");
    let insecure = tls.and_then(|t| t.get("insecure")).and_then(Value::as_bool) == Some(true);
    let ca = str_at("/tlsClientConfig/caData");
    if insecure && ca.is_some() {
        out.push(
            Finding::error("insecure together with caData: client-go refuses the pair")
                .at(at("tlsClientConfig")),
        );
    }
    if insecure && policy.forbid_insecure {
        out.push(
            Finding::error("policy: insecure (no TLS verification) is not allowed")
                .at(at("tlsClientConfig.insecure")),
        );
    }
    // Go decodes `[]byte` fields as standard base64: anything else fails the whole config.
    let mut decoded = |field: &str| {
        let text = str_at(&format!("/tlsClientConfig/{field}"))?;
        let bytes = tls::go_bytes(text);
        if bytes.is_none() {
            out.push(
                Finding::error(
                    "expected base64 text: Argo CD cannot read the config, and skips the cluster",
                )
                .at(at(&format!("tlsClientConfig.{field}"))),
            );
        }
        bytes
    };
    // Each certificate read once, for the checks and for when it is valid.
    let ca = decoded("caData").map(|pem| tls::certificates_in(memo, &pem));
    let cert = decoded("certData").map(|pem| tls::certificates_in(memo, &pem));
    let key = decoded("keyData");
    fn validities(c: &Option<tls::Certificates>) -> &[tls::Validity] {
        c.as_ref().map_or(&[], |c| c.validities.as_slice())
    }
    checked.expires = validities(&ca)
        .iter()
        .chain(validities(&cert))
        .map(|v| v.not_after)
        .min();
    if let Some(now) = now {
        let days = policy.expiry_days;
        checked.dated_until = [validities(&ca), validities(&cert)]
            .into_iter()
            .filter_map(|v| expiry::next_change(v, now, days))
            .min();
        for (which, finding) in expiry::tls_findings(validities(&ca), validities(&cert), now, days)
        {
            let finding = finding.at(at(&format!("tlsClientConfig.{}", which.config_field())));
            checked.dated.push((which, finding));
        }
    }
    if let Some(cert) = cert
        .as_ref()
        .filter(|_| policy.least_privilege != LeastPrivilege::Off)
    {
        if cert.groups.iter().any(|g| g == MASTERS) {
            out.push(
                Finding::warning(format!(
                    "leastPrivilege: the client certificate is in {MASTERS}, a cluster admin no RBAC can limit and nothing but a new cluster CA can revoke; give Argo CD a ServiceAccount token instead (credentials=serviceAccount)"
                ))
                .at(at("tlsClientConfig.certData")),
            );
        }
    }
    if let Some(ca) = &ca {
        if let Err(reason) = tls::check_ca(ca) {
            out.push(Finding::error(reason).at(at("tlsClientConfig.caData")));
        }
    }
    match (&cert, key) {
        (Some(cert), Some(key)) => match tls::check_pair(cert, &key) {
            Ok(_) => {}
            Err(tls::PairError::Certificate(reason)) => {
                out.push(Finding::error(reason).at(at("tlsClientConfig.certData")));
            }
            Err(tls::PairError::Key(reason)) => {
                out.push(Finding::error(reason).at(at("tlsClientConfig.keyData")));
            }
            Err(mismatch) => {
                out.push(Finding::error(mismatch.to_string()).at(at("tlsClientConfig")))
            }
        },
        (Some(_), None) if str_at("/tlsClientConfig/keyData").is_none() => out.push(
            Finding::error("certData without keyData: client-go needs both")
                .at(at("tlsClientConfig")),
        ),
        (None, Some(_)) if str_at("/tlsClientConfig/certData").is_none() => out.push(
            Finding::error("keyData without certData: client-go needs both")
                .at(at("tlsClientConfig")),
        ),
        _ => {}
    }
    if let Some(proxy) = str_at("/proxyUrl") {
        let scheme = proxy.split("://").next().unwrap_or_default();
        if !["http", "https", "socks5"].contains(&scheme) || !proxy.contains("://") {
            out.push(
                Finding::error(
                    "is not an http, https or socks5 URL (Argo CD's ParseProxyUrl refuses it)",
                )
                .at(at("proxyUrl")),
            );
        }
    }
    if let Some(token) = str_at("/bearerToken").filter(|_| !renewed) {
        if token_expires(token) {
            let finding = if policy.forbid_expiring_tokens {
                Finding::error("policy: a token that expires by itself is not allowed")
            } else {
                Finding::warning(
                    "expires by itself (an EKS token lasts 15 minutes): Argo CD loses the cluster then",
                )
            };
            out.push(finding.at(at("bearerToken")));
        }
    }
    let aws = config.get("awsAuthConfig").filter(|a| !a.is_null());
    let exec = config.get("execProviderConfig").filter(|e| !e.is_null());
    if let Some(aws) = aws {
        if aws
            .get("clusterName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            out.push(
                Finding::error("is missing: argocd-k8s-auth aws needs it")
                    .at(at("awsAuthConfig.clusterName")),
            );
        }
        if exec.is_some() {
            out.push(
                Finding::warning("awsAuthConfig and execProviderConfig together: Argo CD uses awsAuthConfig only")
                    .at(at("execProviderConfig")),
            );
        }
        allowed(ARGOCD_K8S_AUTH, &at("awsAuthConfig"), policy, out);
    }
    if let Some(exec) = exec {
        exec_checks(exec, &at("execProviderConfig"), policy, aws.is_some(), out);
    }
}

fn allowed(command: &str, field: &str, policy: &Policy, out: &mut Vec<Finding>) {
    if let Some(list) = &policy.allowed_exec_commands {
        if !list.iter().any(|c| c == command) {
            out.push(
                Finding::error(format!(
                    "policy: the exec command {command:?} is not allowed (allowed: {}); if your Argo CD image ships it, list it in allowedExecCommands",
                    list.join(", ")
                ))
                .at(field.to_string()),
            );
        }
    }
}

fn exec_checks(exec: &Value, field: &str, policy: &Policy, shadowed: bool, out: &mut Vec<Finding>) {
    let at = |path: &str| format!("{field}.{path}");
    let command = exec
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if command.is_empty() {
        out.push(Finding::error("is missing: client-go has nothing to run").at(at("command")));
        return;
    }
    if !shadowed {
        allowed(command, &at("command"), policy, out);
    }
    let version = exec.get("apiVersion").and_then(Value::as_str);
    match version {
        Some(v) if SUPPORTED_API_VERSIONS.contains(&v) => {}
        Some(_) => out.push(
            Finding::error(format!(
                "is not one client-go accepts ({}; v1alpha1 was removed in Kubernetes 1.24)",
                SUPPORTED_API_VERSIONS.join(", ")
            ))
            .at(at("apiVersion")),
        ),
        None => out.push(
            Finding::error("is missing: client-go refuses an exec plugin without one")
                .at(at("apiVersion")),
        ),
    }
    if command.rsplit('/').next() != Some(ARGOCD_K8S_AUTH) {
        return;
    }
    if version
        .is_some_and(|v| v != ARGOCD_K8S_AUTH_API_VERSION && SUPPORTED_API_VERSIONS.contains(&v))
    {
        out.push(
            Finding::error(format!(
                "argocd-k8s-auth prints {ARGOCD_K8S_AUTH_API_VERSION}: client-go refuses a different declared version"
            ))
            .at(at("apiVersion")),
        );
    }
    let args: Vec<&str> = exec
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match args.first().copied() {
        Some("aws") => {
            let unknown: Vec<&str> = args[1..]
                .iter()
                .copied()
                .filter(|a| a.starts_with('-'))
                .map(|a| a.split('=').next().unwrap_or(a))
                .filter(|a| !["--cluster-name", "--role-arn", "--profile"].contains(a))
                .collect();
            if !unknown.is_empty() {
                out.push(
                    Finding::error(format!(
                        "argocd-k8s-auth aws takes --cluster-name, --role-arn and --profile only, not {}",
                        unknown.join(", ")
                    ))
                    .at(at("args")),
                );
            }
        }
        Some("gcp") if args.len() > 1 => {
            out.push(Finding::error("argocd-k8s-auth gcp takes no arguments").at(at("args")));
        }
        Some("azure") => {
            let login = exec
                .pointer("/env/AAD_LOGIN_METHOD")
                .and_then(Value::as_str);
            if !azure_login_is_unattended(login) {
                out.push(
                    Finding::error("this login method needs a person: argocd-k8s-auth azure runs workloadidentity, spn or msi")
                        .at(at("env.AAD_LOGIN_METHOD")),
                );
            }
        }
        Some("gcp") => {}
        _ => out.push(
            Finding::error("is not an argocd-k8s-auth subcommand (aws, gcp, azure)").at(at("args")),
        ),
    }
}

/// Whether `value` decodes into a Go field of this type; every mismatch is a finding.
fn go_types(value: &Value, fields: &[Field], field: &str, out: &mut Vec<Finding>) {
    let Some(object) = value.as_object() else {
        out.push(
            Finding::error("is not a JSON object: Argo CD skips the cluster").at(field.to_string()),
        );
        return;
    };
    for (key, v) in object {
        // Named only for a finding or a nested object: most fields need neither.
        let path = || format!("{field}.{key}");
        let Some(Field {
            name, go: go_type, ..
        }) = fields
            .iter()
            .find(|f| f.name == key)
            .or_else(|| fields.iter().find(|f| f.name.eq_ignore_ascii_case(key)))
        else {
            out.push(
                Finding::error(format!(
                    "is not a field of Argo CD's config: it is ignored (fields: {})",
                    fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
                ))
                .at(path()),
            );
            continue;
        };
        if name != key {
            out.push(
                Finding::warning(format!(
                    "is spelled {name} in Argo CD: Go reads it regardless of case, other tools do not"
                ))
                .at(path()),
            );
        }
        if v.is_null() {
            continue;
        }
        let fits = match go_type {
            GoType::String => v.is_string(),
            GoType::Bool => v.is_boolean(),
            // Decoded (once) by the TLS checks, which say when it is not base64.
            GoType::Bytes => v.is_string(),
            GoType::Strings => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            GoType::StringMap => v
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string)),
            GoType::RawObject => v.is_object(),
            GoType::Struct(inner) => {
                go_types(v, inner, &path(), out);
                true
            }
        };
        if !fits {
            let expected = match go_type {
                GoType::String => "a string",
                GoType::Bool => "true or false",
                GoType::Bytes => "base64 text",
                GoType::Strings => "a list of strings",
                GoType::StringMap => "a map of strings",
                GoType::RawObject | GoType::Struct(_) => "an object",
            };
            out.push(
                Finding::error(format!(
                    "expected {expected}: Argo CD cannot read the config, and skips the cluster"
                ))
                .at(path()),
            );
        }
    }
}
