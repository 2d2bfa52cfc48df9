//! Reads a kubeconfig (never the files it points at) into a server URL and Argo CD's `ClusterConfig`.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests
// and benchmarks, which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use crate::convert::argocd::{ClusterConfig, Sensitive};
use crate::convert::exec::{self, ExecAuth, ExecPlugin, Refusal};
pub use crate::convert::url::{is_http_url, unreachable_host, userinfo, without_userinfo};
use krm::finding::{Finding, Severity};
use yaml::Limits;
use yaml::{Node, parse_stream};

/// The fields of a kubeconfig user entry read as credentials ([`Sensitive`], never printed);
/// every `exec.env` value is one too, and so are the values of an exec plugin's credential
/// flags ([`crate::convert::exec::CREDENTIAL_FLAGS`]). A test checks the reader agrees.
pub const CREDENTIAL_USER_FIELDS: &[&str] = &["token", "password", "client-key-data"];

/// The cluster a kubeconfig connects to, as Argo CD needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub server: String,
    pub config: ClusterConfig,
    /// The name of the kubeconfig's cluster entry used (CACO names the Argo CD cluster after it).
    pub cluster_entry: String,
}

/// Which parts of the user entry to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    Read,
    /// Pull mode: the user entry is not looked at, so its problems do not matter.
    Skip,
}

/// The outcome: a connection unless an error finding says why not.
#[derive(Debug)]
pub struct Reading {
    pub connection: Option<Connection>,
    /// Remarks, each with the path of the field inside the kubeconfig (never its value).
    pub findings: Vec<Finding>,
    /// The login needs a person or a signed-in tool: it can never work in Argo CD, so other
    /// credentials of the cluster are the right choice, not a fallback.
    pub interactive: bool,
}

struct Reader {
    findings: Vec<Finding>,
    interactive: bool,
}

impl Reader {
    fn push(&mut self, severity: Severity, path: impl Into<String>, message: impl Into<String>) {
        self.findings.push(Finding::new(severity, message).at(path));
    }

    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.push(Severity::Error, path, message);
    }

    fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// An optional string field; a value of another type is an error.
    fn string(&mut self, node: &Node, key: &str, path: &str) -> Option<String> {
        self.str_field(node, key, path).map(String::from)
    }

    fn str_field<'n>(&mut self, node: &'n Node, key: &str, path: &str) -> Option<&'n str> {
        let value = node.get(key).filter(|v| !v.is_null())?;
        match value.as_str() {
            Some(s) => Some(s),
            None => {
                self.error(
                    format!("{path}.{key}"),
                    format!("expected a string, got {}", value.type_name()),
                );
                None
            }
        }
    }

    fn boolean(&mut self, node: &Node, key: &str, path: &str) -> bool {
        let Some(value) = node.get(key).filter(|v| !v.is_null()) else {
            return false;
        };
        match value.as_bool() {
            Some(b) => b,
            None => {
                self.error(
                    format!("{path}.{key}"),
                    format!("expected true or false, got {}", value.type_name()),
                );
                false
            }
        }
    }

    /// A `*-data` field: base64 of PEM. Kept as the same string, line breaks removed, once it decodes.
    fn base64_field(&mut self, node: &Node, key: &str, path: &str) -> Option<String> {
        let value = self.str_field(node, key, path)?;
        match krm::b64::decode(value) {
            Ok((bytes, compact))
                if bytes.starts_with(b"-----BEGIN ")
                    || bytes.windows(11).any(|w| w == b"-----BEGIN ") =>
            {
                Some(compact.into_owned())
            }
            Ok(_) => {
                self.error(format!("{path}.{key}"), "does not decode to PEM");
                None
            }
            Err(_) => {
                self.error(format!("{path}.{key}"), "is not valid base64");
                None
            }
        }
    }

    /// A named entry (`clusters`, `users`, `contexts`): index and body, or an error finding.
    fn named<'n, 'a>(
        &mut self,
        root: &'n Node<'a>,
        list: &str,
        body: &str,
        name: &str,
    ) -> Option<(String, &'n Node<'a>)> {
        let entries = root.get(list).and_then(Node::as_seq).unwrap_or_default();
        let same = entries
            .iter()
            .filter(|e| e.get("name").and_then(Node::as_str) == Some(name))
            .count();
        if same > 1 {
            self.error(
                list,
                format!("has {same} entries named {name:?}: which one is meant is ambiguous"),
            );
            return None;
        }
        let found = entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.get("name").and_then(Node::as_str) == Some(name));
        match found {
            Some((i, entry)) => {
                let path = format!("{list}[{i}].{body}");
                match entry.get(body) {
                    Some(b) if b.as_map().is_some() => Some((path, b)),
                    Some(b) if b.is_null() => {
                        self.error(path, "is empty");
                        None
                    }
                    Some(b) => {
                        self.error(path, format!("expected a mapping, got {}", b.type_name()));
                        None
                    }
                    None => {
                        self.error(path, "is missing");
                        None
                    }
                }
            }
            None => {
                self.error(list, format!("has no entry named {name:?}"));
                None
            }
        }
    }
}

/// Names of the entries in a kubeconfig list, for messages.
fn names(root: &Node, list: &str) -> Vec<String> {
    root.get(list)
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.get("name").and_then(Node::as_str).map(String::from))
        .collect()
}

/// Reads kubeconfig text. `context` overrides its `current-context`.
pub fn read(
    text: &str,
    context: Option<&str>,
    credentials: Credentials,
    limits: &Limits,
) -> Reading {
    let mut r = Reader {
        findings: Vec::new(),
        interactive: false,
    };
    let connection = read_into(&mut r, text, context, credentials, limits);
    Reading {
        connection: connection.filter(|_| !r.failed()),
        findings: r.findings,
        interactive: r.interactive,
    }
}

fn read_into(
    r: &mut Reader,
    text: &str,
    context: Option<&str>,
    credentials: Credentials,
    limits: &Limits,
) -> Option<Connection> {
    let docs = match parse_stream(text, limits) {
        Ok(docs) => docs,
        Err(e) => {
            r.error("", format!("is not YAML: {e}"));
            return None;
        }
    };
    let root = match docs.as_slice() {
        [doc] if doc.root.duplicate_key().is_some() => {
            let (path, key) = doc.root.duplicate_key().unwrap_or_default();
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            r.error(
                at,
                "is given twice; YAML readers disagree on which one counts, so neither is used",
            );
            return None;
        }
        [doc] if doc.root.as_map().is_some() => &doc.root,
        [] => {
            r.error("", "is empty");
            return None;
        }
        [doc] => {
            r.error(
                "",
                format!(
                    "expected a kubeconfig mapping, got {}",
                    doc.root.type_name()
                ),
            );
            return None;
        }
        _ => {
            r.error("", "holds several YAML documents; expected one kubeconfig");
            return None;
        }
    };
    if let Some(kind) = root
        .get("kind")
        .and_then(Node::as_str)
        .filter(|k| *k != "Config")
    {
        r.error("kind", format!("expected Config, got {kind:?}"));
        return None;
    }
    for list in ["clusters", "users", "contexts"] {
        match root.get(list) {
            Some(l) if l.as_seq().is_some() || l.is_null() => {}
            Some(l) => r.error(list, format!("expected a list, got {}", l.type_name())),
            None => {}
        }
    }
    if r.failed() {
        return None;
    }

    let (cluster_name, user_name) = select(r, root, context)?;
    let (cluster_path, cluster) = r.named(root, "clusters", "cluster", &cluster_name)?;
    let mut config = ClusterConfig::default();
    let server = read_cluster(r, cluster, &cluster_path, &mut config);
    if credentials == Credentials::Read {
        match user_name {
            Some(user_name) => {
                if let Some((user_path, user)) = r.named(root, "users", "user", &user_name) {
                    read_user(r, user, &user_path, &mut config);
                }
            }
            None => r.push(
                Severity::Warning,
                "contexts",
                "the context names no user: Argo CD will connect without credentials",
            ),
        }
    }
    Some(Connection {
        server: server?,
        config,
        cluster_entry: cluster_name,
    })
}

/// Picks the cluster and user: the chosen or current context, else the only context, else the only cluster and user.
fn select(r: &mut Reader, root: &Node, context: Option<&str>) -> Option<(String, Option<String>)> {
    // Not a kubeconfig at all: say that, not what its first missing part is.
    let parts = ["clusters", "contexts", "users", "current-context"];
    if !parts.iter().any(|k| root.get(k).is_some()) {
        let keys: Vec<&str> = root
            .as_map()
            .map(|m| m.iter().filter_map(|(k, _)| k.as_str()).take(5).collect())
            .unwrap_or_default();
        let holds = if keys.is_empty() {
            "nothing a kubeconfig holds".to_string()
        } else {
            format!("keys {}", keys.join(", "))
        };
        r.error(
            "",
            format!("has no clusters, contexts or users: this is not a kubeconfig ({holds})"),
        );
        return None;
    }
    let current = root
        .get("current-context")
        .and_then(Node::as_str)
        .filter(|s| !s.is_empty());
    let contexts = names(root, "contexts");
    let wanted = match (context, current) {
        (Some(c), _) | (None, Some(c)) => Some(c.to_string()),
        (None, None) if contexts.len() == 1 => Some(contexts[0].clone()),
        (None, None) => None,
    };
    if let Some(wanted) = wanted {
        let Some(index) = contexts.iter().position(|c| *c == wanted) else {
            let field = if context.is_some() {
                "contexts"
            } else {
                "current-context"
            };
            r.error(
                field,
                format!(
                    "context {wanted:?} not found; contexts: {}",
                    list_or_none(&contexts)
                ),
            );
            return None;
        };
        let path = format!("contexts[{index}].context");
        let (_, body) = r.named(root, "contexts", "context", &wanted)?;
        let cluster = r.string(body, "cluster", &path);
        let user = r.string(body, "user", &path).filter(|u| !u.is_empty());
        let Some(cluster) = cluster.filter(|c| !c.is_empty()) else {
            r.error(format!("{path}.cluster"), "is missing");
            return None;
        };
        return Some((cluster, user));
    }
    let clusters = names(root, "clusters");
    let users = names(root, "users");
    if contexts.is_empty() && clusters.len() == 1 && users.len() <= 1 {
        return Some((clusters[0].clone(), users.first().cloned()));
    }
    r.error(
        "current-context",
        format!(
            "is not set and the kubeconfig has {} contexts ({}); set the context option",
            contexts.len(),
            list_or_none(&contexts)
        ),
    );
    None
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn read_cluster(
    r: &mut Reader,
    cluster: &Node,
    path: &str,
    config: &mut ClusterConfig,
) -> Option<String> {
    let server = r
        .string(cluster, "server", path)
        .map(|s| s.trim_end_matches('/').to_string());
    let server = match server {
        Some(s) if s.is_empty() => {
            r.error(format!("{path}.server"), "is empty");
            None
        }
        Some(s) if !is_http_url(&s) => {
            r.error(
                format!("{path}.server"),
                "is not an https:// (or http://) URL with a host",
            );
            None
        }
        Some(s) => Some(s),
        None => {
            if cluster.get("server").is_none_or(Node::is_null) {
                r.error(format!("{path}.server"), "is missing");
            }
            None
        }
    };
    let tls = &mut config.tls_client_config;
    tls.ca_data = r.base64_field(cluster, "certificate-authority-data", path);
    file_reference(
        r,
        cluster,
        path,
        "certificate-authority",
        tls.ca_data.is_some(),
    );
    tls.insecure = r.boolean(cluster, "insecure-skip-tls-verify", path);
    if tls.insecure && tls.ca_data.take().is_some() {
        r.push(
            Severity::Warning,
            format!("{path}.certificate-authority-data"),
            "dropped: Argo CD rejects a CA together with insecure-skip-tls-verify",
        );
    }
    tls.server_name = r.string(cluster, "tls-server-name", path);
    config.proxy_url = r.string(cluster, "proxy-url", path);
    config.disable_compression = r.boolean(cluster, "disable-compression", path);
    server
}

/// A field that names a file on the machine that wrote the kubeconfig: unreadable here, and never read.
fn file_reference(r: &mut Reader, node: &Node, path: &str, key: &str, has_data: bool) {
    if node.get(key).is_none_or(Node::is_null) {
        return;
    }
    let field = format!("{path}.{key}");
    if has_data {
        r.push(
            Severity::Warning,
            field,
            "file reference ignored: the embedded data is used",
        );
    } else {
        r.error(field, format!("file references cannot be converted (the function never reads files); embed the content as {key}-data"));
    }
}

fn read_user(r: &mut Reader, user: &Node, path: &str, config: &mut ClusterConfig) {
    let cert = r.base64_field(user, "client-certificate-data", path);
    let key = r.base64_field(user, CREDENTIAL_USER_FIELDS[2], path);
    file_reference(r, user, path, "client-certificate", cert.is_some());
    file_reference(r, user, path, "client-key", key.is_some());
    match (&cert, &key) {
        (Some(_), None) if !r.failed() => r.error(
            format!("{path}.client-key-data"),
            "is missing while client-certificate-data is set",
        ),
        (None, Some(_)) if !r.failed() => r.error(
            format!("{path}.client-certificate-data"),
            "is missing while client-key-data is set",
        ),
        _ => {}
    }
    config.tls_client_config.cert_data = cert;
    config.tls_client_config.key_data = key.map(Sensitive);

    config.bearer_token = r
        .string(user, CREDENTIAL_USER_FIELDS[0], path)
        .filter(|t| !t.is_empty())
        .map(Sensitive);
    if user.get("tokenFile").is_some_and(|t| !t.is_null()) {
        if config.bearer_token.is_some() {
            r.push(
                Severity::Warning,
                format!("{path}.tokenFile"),
                "file reference ignored: the embedded token is used",
            );
        } else {
            r.error(format!("{path}.tokenFile"), "file references cannot be converted (the function never reads files); embed the token");
        }
    }
    config.username = r.string(user, "username", path).filter(|u| !u.is_empty());
    config.password = r
        .string(user, CREDENTIAL_USER_FIELDS[1], path)
        .filter(|p| !p.is_empty())
        .map(Sensitive);

    if user.get("auth-provider").is_some_and(|a| !a.is_null()) {
        r.error(
            format!("{path}.auth-provider"),
            "auth-provider plugins (removed from client-go) cannot be represented in Argo CD; use an exec plugin",
        );
    }
    for key in ["as", "as-uid", "as-groups", "as-user-extra"] {
        if user.get(key).is_some_and(|a| !a.is_null()) {
            r.error(
                format!("{path}.{key}"),
                "impersonation cannot be represented in Argo CD: its Secret would act as the un-impersonated identity",
            );
        }
    }
    if let Some(exec) = user.get("exec").filter(|e| !e.is_null()) {
        let exec_path = format!("{path}.exec");
        if let Some(plugin) = read_exec(r, exec, &exec_path) {
            let mut notes = Vec::new();
            match exec::map(&plugin, &mut notes) {
                Ok(ExecAuth::Aws(aws)) => config.aws_auth_config = Some(aws),
                Ok(ExecAuth::Exec(e)) => config.exec_provider_config = Some(e),
                Err(refusal) => {
                    r.interactive |= matches!(refusal, Refusal::Interactive(_));
                    r.error(&exec_path, refusal.to_string());
                }
            }
            for note in notes {
                r.push(note.severity, &exec_path, note.message);
            }
        }
    }
}

fn read_exec(r: &mut Reader, exec: &Node, path: &str) -> Option<ExecPlugin> {
    if exec.as_map().is_none() {
        r.error(
            path,
            format!("expected a mapping, got {}", exec.type_name()),
        );
        return None;
    }
    let command = r.string(exec, "command", path).filter(|c| !c.is_empty());
    if command.is_none() && exec.get("command").is_none_or(Node::is_null) {
        r.error(format!("{path}.command"), "is missing");
    }
    let mut plugin = ExecPlugin {
        command: command.unwrap_or_default(),
        api_version: r.string(exec, "apiVersion", path),
        install_hint: r.string(exec, "installHint", path),
        provide_cluster_info: r.boolean(exec, "provideClusterInfo", path),
        interactive_mode: r.string(exec, "interactiveMode", path),
        ..Default::default()
    };
    match exec.get("args").filter(|a| !a.is_null()) {
        None => {}
        Some(args) => match args.as_seq() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item.scalar().filter(|_| !item.is_null()) {
                        // Arguments are strings to exec, whatever YAML type they look like.
                        Some(s) => plugin.args.push(s.text.to_string()),
                        None => r.error(
                            format!("{path}.args[{i}]"),
                            format!("expected a string, got {}", item.type_name()),
                        ),
                    }
                }
            }
            None => r.error(
                format!("{path}.args"),
                format!("expected a list, got {}", args.type_name()),
            ),
        },
    }
    match exec.get("env").filter(|e| !e.is_null()) {
        None => {}
        Some(env) => match env.as_seq() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let item_path = format!("{path}.env[{i}]");
                    let name = r.string(item, "name", &item_path);
                    let value = item
                        .get("value")
                        .and_then(|v| v.scalar())
                        .map(|s| s.text.to_string());
                    match name {
                        Some(name) if !name.is_empty() => plugin
                            .env
                            .push((name, Sensitive(value.unwrap_or_default()))),
                        _ => r.error(format!("{item_path}.name"), "is missing"),
                    }
                }
            }
            None => r.error(
                format!("{path}.env"),
                format!("expected a list of name/value, got {}", env.type_name()),
            ),
        },
    }
    if r.failed() {
        return None;
    }
    Some(plugin)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The credential table names exactly the user fields that come out as `Sensitive`: their
    /// values never show in the connection's debug output, every other field's value does.
    #[test]
    fn credential_user_fields_are_read_as_sensitive() {
        let pem = |what: &str| {
            krm::b64::encode(
                format!("-----BEGIN {what}-----\nMARK{what}\n-----END {what}-----\n").as_bytes(),
            )
        };
        let (cert, key) = (pem("CERTIFICATE"), pem("PRIVATE KEY"));
        let values = [
            ("token", "MARKtoken".to_string()),
            ("password", "MARKpassword".to_string()),
            ("client-key-data", key),
            ("username", "MARKusername".to_string()),
            ("client-certificate-data", cert),
        ];
        let user: String = values
            .iter()
            .map(|(k, v)| format!("    {k}: {v}\n"))
            .collect();
        let env = "    exec:\n      command: vault-login\n      apiVersion: client.authentication.k8s.io/v1\n      env:\n      - {name: V, value: MARKenv}\n";
        let (c, _) = read_ok(&kubeconfig(
            "    server: https://api",
            &format!("{user}{env}"),
        ));
        let debug = format!("{c:?}");
        let json = c.config.to_json();
        for (field, value) in &values {
            assert!(json.contains(value.as_str()), "{field} is carried");
            assert_eq!(
                !debug.contains(value.as_str()),
                CREDENTIAL_USER_FIELDS.contains(field),
                "{field}"
            );
        }
        assert!(json.contains("MARKenv") && !debug.contains("MARKenv"));
    }

    const CA: &str =
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";

    fn read_ok(text: &str) -> (Connection, Vec<Finding>) {
        let reading = read(text, None, Credentials::Read, &Limits::default());
        (
            reading
                .connection
                .unwrap_or_else(|| panic!("{:?}", reading.findings)),
            reading.findings,
        )
    }

    fn errors(text: &str, context: Option<&str>) -> Vec<String> {
        let reading = read(text, context, Credentials::Read, &Limits::default());
        assert!(reading.connection.is_none());
        reading
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| format!("{}: {}", f.field.as_deref().unwrap_or_default(), f.message))
            .collect()
    }

    fn kubeconfig(cluster: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster}\nusers:\n- name: u\n  user:\n{user}\ncontexts:\n- name: u@c\n  context: {{cluster: c, user: u}}\ncurrent-context: u@c\n"
        )
    }

    #[test]
    fn maps_tls_fields_and_trims_the_server() {
        let (c, findings) = read_ok(&kubeconfig(
            &format!(
                "    server: https://api:6443/\n    certificate-authority-data: {CA}\n    tls-server-name: api.internal\n    proxy-url: socks5://p:1080\n    disable-compression: true"
            ),
            "    token: abc",
        ));
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(c.server, "https://api:6443");
        let tls = &c.config.tls_client_config;
        assert_eq!(tls.ca_data.as_deref(), Some(CA));
        assert_eq!(tls.server_name.as_deref(), Some("api.internal"));
        assert_eq!(c.config.proxy_url.as_deref(), Some("socks5://p:1080"));
        assert!(c.config.disable_compression);
        assert_eq!(c.config.bearer_token, Some(Sensitive("abc".into())));
    }

    #[test]
    fn insecure_drops_the_ca_with_a_warning() {
        let (c, findings) = read_ok(&kubeconfig(
            &format!(
                "    server: https://api\n    insecure-skip-tls-verify: true\n    certificate-authority-data: {CA}"
            ),
            "    username: admin\n    password: pw",
        ));
        assert!(c.config.tls_client_config.insecure);
        assert_eq!(c.config.tls_client_config.ca_data, None);
        assert_eq!(findings[0].severity, Severity::Warning);
        assert_eq!(
            findings[0].field.as_deref().unwrap_or_default(),
            "clusters[0].cluster.certificate-authority-data"
        );
    }

    #[test]
    fn file_references_are_errors_naming_the_field() {
        let errs = errors(
            &kubeconfig(
                "    server: https://api\n    certificate-authority: /etc/ca.crt",
                "    client-key: /home/me/key",
            ),
            None,
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("clusters[0].cluster.certificate-authority: file references"));
        assert!(errs[1].starts_with("users[0].user.client-key: file references"));
    }

    #[test]
    fn context_selection_rules() {
        let two = "clusters:\n- {name: a, cluster: {server: https://a}}\n- {name: b, cluster: {server: https://b}}\nusers:\n- {name: u, user: {token: t}}\ncontexts:\n- {name: ca, context: {cluster: a, user: u}}\n- {name: cb, context: {cluster: b, user: u}}\n";
        let errs = errors(two, None);
        assert_eq!(
            errs,
            vec![
                "current-context: is not set and the kubeconfig has 2 contexts (ca, cb); set the context option"
            ]
        );
        let reading = read(two, Some("cb"), Credentials::Read, &Limits::default());
        assert_eq!(reading.connection.unwrap().server, "https://b");
        assert_eq!(
            errors(two, Some("nope")),
            vec!["contexts: context \"nope\" not found; contexts: ca, cb"]
        );
        let single = "clusters:\n- {name: a, cluster: {server: https://a}}\nusers:\n- {name: u, user: {token: t}}\n";
        assert_eq!(read_ok(single).0.server, "https://a");
    }

    #[test]
    fn pull_mode_ignores_user_problems() {
        let text = kubeconfig("    server: https://api", "    client-key: /home/me/key");
        let reading = read(&text, None, Credentials::Skip, &Limits::default());
        assert!(reading.connection.is_some(), "{:?}", reading.findings);
    }

    #[test]
    fn duplicate_names_are_ambiguous() {
        let text = "clusters:\n- {name: c, cluster: {server: 'https://a'}}\n- {name: c, cluster: {server: 'https://b'}}\nusers:\n- {name: u, user: {token: t}}\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n";
        assert_eq!(
            errors(text, None),
            vec!["clusters: has 2 entries named \"c\": which one is meant is ambiguous"]
        );
    }

    #[test]
    fn wrong_types_are_errors() {
        let errs = errors(&kubeconfig("    server: [x]", "    token: 3"), None);
        assert_eq!(
            errs,
            vec![
                "clusters[0].cluster.server: expected a string, got a list",
                "users[0].user.token: expected a string, got a number"
            ]
        );
        assert_eq!(
            errors("- a", None),
            vec![": expected a kubeconfig mapping, got a list"]
        );
        assert_eq!(
            errors("clusters: {}", None),
            vec!["clusters: expected a list, got a mapping"]
        );
    }

    #[test]
    fn bad_base64_is_an_error_and_values_never_appear_in_findings() {
        let errs = errors(
            &kubeconfig(
                "    server: https://api",
                "    client-certificate-data: not-base64!!\n    client-key-data: c2VjcmV0LWtleQ==",
            ),
            None,
        );
        assert_eq!(
            errs,
            vec![
                "users[0].user.client-certificate-data: is not valid base64",
                "users[0].user.client-key-data: does not decode to PEM"
            ]
        );
        assert!(!errs.concat().contains("c2VjcmV0"));
    }
}
