//! Argo CD's cluster model: the `config` JSON (field for field as Argo CD marshals it) and the cluster Secret.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::convert::meta::fnv64a;
use yaml::Node;

/// The label Argo CD finds its cluster Secrets by (value `cluster`).
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
/// The label that marks an Argo CD cluster Secret as capi2argo's (and CACO's): its own to
/// update, rename and prune.
pub const OWNED_LABEL: &str = "capi-to-argocd/owned";
pub const SOURCE_NAME_LABEL: &str = "capi-to-argocd/cluster-secret-name";
pub const SOURCE_NAMESPACE_LABEL: &str = "capi-to-argocd/cluster-namespace";
/// Argo CD 3.4+ stops reconciling a cluster whose Secret carries it as true (controller/sharding/cache.go).
pub const SKIP_RECONCILE_ANNOTATION: &str = "argocd.argoproj.io/skip-reconcile";

/// On an Argo CD Secret that logs in with a ServiceAccount token capi2argo-controller renews
/// (`credentials: serviceAccount`): when the token stops being valid.
pub const TOKEN_EXPIRES_ANNOTATION: &str = "capi2argo.dev/token-expires";

/// A credential. Debug output never shows it; only the Secret's `config` JSON carries it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Sensitive(pub String);

impl Serialize for Sensitive {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        verbatim(&self.0, serializer)
    }
}

/// Long values (base64 certificates and keys, tokens) go into the JSON as they are when
/// nothing in them needs escaping: serde_json would look at every byte of them for one.
/// serde_json itself checks the quoted text is a JSON string (`RawValue::from_string`, its fast
/// string scan); a backslash is left to the escaper, as it would read as an escape.
fn verbatim<S: serde::Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    if text.len() >= 64 && !text.as_bytes().contains(&b'\\') {
        let mut quoted = String::with_capacity(text.len() + 2);
        quoted.push('"');
        quoted.push_str(text);
        quoted.push('"');
        if let Ok(raw) = serde_json::value::RawValue::from_string(quoted) {
            return raw.serialize(serializer);
        }
    }
    serializer.serialize_str(text)
}

/// [`verbatim`] for an optional field (skipped when `None`).
fn verbatim_some<S: serde::Serializer>(
    text: &Option<String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match text {
        Some(text) => verbatim(text, serializer),
        None => serializer.serialize_none(),
    }
}

impl fmt::Debug for Sensitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Argo CD's `ClusterConfig` (pkg/apis/application/v1alpha1/types.go); fields in Go's marshal order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Sensitive>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<Sensitive>,
    /// Argo CD always writes this object, even when empty.
    pub tls_client_config: TlsClientConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aws_auth_config: Option<AwsAuthConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec_provider_config: Option<ExecProviderConfig>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_compression: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsClientConfig {
    pub insecure: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Base64 of the PEM, exactly as in the kubeconfig's `*-data` fields.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "verbatim_some"
    )]
    pub cert_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_data: Option<Sensitive>,
    #[serde(
        rename = "caData",
        skip_serializing_if = "Option::is_none",
        serialize_with = "verbatim_some"
    )]
    pub ca_data: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AwsAuthConfig {
    #[serde(rename = "clusterName")]
    pub cluster_name: String,
    #[serde(rename = "roleARN", skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecProviderConfig {
    pub command: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A map in Argo CD (a list of name/value in kubeconfigs); values may be secrets.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Sensitive>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_hint: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub provide_cluster_info: bool,
    /// The cluster's exec extension (`client.authentication.k8s.io/exec`), handed to the plugin as
    /// `ExecCredential.spec.cluster.config` (Argo CD 3.5 and later read it, and
    /// `provideClusterInfo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// The Go type of a `config` field, as Go's `encoding/json` decodes into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoType {
    String,
    Bool,
    /// `[]byte`: standard base64 text.
    Bytes,
    /// `[]string`.
    Strings,
    /// `map[string]string`.
    StringMap,
    /// A nested struct, its fields.
    Struct(&'static [Field]),
    /// `runtime.RawExtension`: any JSON object.
    RawObject,
}

/// What a `config` field is to the function: the one place that says which fields connect,
/// which log in and which are credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Where and how the cluster is reached: kept in pull mode.
    Connection,
    /// How Argo CD logs in, and public (a user name, a certificate, the command that runs):
    /// left out in pull mode.
    Login,
    /// A credential (every value of a map): left out in pull mode, never printed, hidden by
    /// hosts that show a `config` (the playground).
    Credential,
}

/// One field of Argo CD's `ClusterConfig` (or a struct inside it): its json tag, Go type and role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub go: GoType,
    pub role: Role,
}

const fn field(name: &'static str, go: GoType, role: Role) -> Field {
    Field { name, go, role }
}

/// `TLSClientConfig`'s json tags (argo-cd pkg/apis/application/v1alpha1/types.go).
pub const TLS_CLIENT_CONFIG_FIELDS: &[Field] = &[
    field("insecure", GoType::Bool, Role::Connection),
    field("serverName", GoType::String, Role::Connection),
    field("certData", GoType::Bytes, Role::Login),
    field("keyData", GoType::Bytes, Role::Credential),
    field("caData", GoType::Bytes, Role::Connection),
];

/// `AWSAuthConfig`'s json tags.
pub const AWS_AUTH_CONFIG_FIELDS: &[Field] = &[
    field("clusterName", GoType::String, Role::Login),
    field("roleARN", GoType::String, Role::Login),
    field("profile", GoType::String, Role::Login),
];

/// `ExecProviderConfig`'s json tags.
pub const EXEC_PROVIDER_CONFIG_FIELDS: &[Field] = &[
    field("command", GoType::String, Role::Login),
    field("args", GoType::Strings, Role::Login),
    field("env", GoType::StringMap, Role::Credential),
    field("apiVersion", GoType::String, Role::Login),
    field("installHint", GoType::String, Role::Login),
    field("provideClusterInfo", GoType::Bool, Role::Login),
    field("config", GoType::RawObject, Role::Login),
];

/// `ClusterConfig`'s json tags: what Argo CD reads from a cluster Secret's `config`. A struct's
/// role is its fields' where they have their own.
pub const CLUSTER_CONFIG_FIELDS: &[Field] = &[
    field("username", GoType::String, Role::Login),
    field("password", GoType::String, Role::Credential),
    field("bearerToken", GoType::String, Role::Credential),
    field(
        "tlsClientConfig",
        GoType::Struct(TLS_CLIENT_CONFIG_FIELDS),
        Role::Connection,
    ),
    field(
        "awsAuthConfig",
        GoType::Struct(AWS_AUTH_CONFIG_FIELDS),
        Role::Login,
    ),
    field(
        "execProviderConfig",
        GoType::Struct(EXEC_PROVIDER_CONFIG_FIELDS),
        Role::Login,
    ),
    field("disableCompression", GoType::Bool, Role::Connection),
    field("proxyUrl", GoType::String, Role::Connection),
];

/// The role of the `config` field at `path` (`["tlsClientConfig", "keyData"]`): the innermost
/// field the table has; `None` for a path it does not know.
pub fn role(path: &[&str]) -> Option<Role> {
    let mut fields = CLUSTER_CONFIG_FIELDS;
    let mut found = None;
    for name in path {
        let field = fields.iter().find(|f| f.name == *name)?;
        found = Some(field.role);
        match field.go {
            GoType::Struct(inner) => fields = inner,
            _ => break,
        }
    }
    found
}

/// The paths of the `config` fields that hold credentials (`*`: every key of a map), from the
/// table: a host that hides them (the playground) hides what the function itself never prints.
pub fn credential_paths() -> Vec<Vec<&'static str>> {
    fn walk(
        fields: &'static [Field],
        path: &mut Vec<&'static str>,
        out: &mut Vec<Vec<&'static str>>,
    ) {
        for f in fields {
            path.push(f.name);
            match (f.go, f.role) {
                (GoType::Struct(inner), _) => walk(inner, path, out),
                (GoType::StringMap, Role::Credential) => {
                    let mut each = path.clone();
                    each.push("*");
                    out.push(each);
                }
                (_, Role::Credential) => out.push(path.clone()),
                _ => {}
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(CLUSTER_CONFIG_FIELDS, &mut Vec::new(), &mut out);
    out
}

/// The data keys Argo CD reads from a cluster Secret (util/db/cluster.go, `SecretToCluster`).
pub const SECRET_DATA_KEYS: &[&str] = &[
    "name",
    "server",
    "config",
    "namespaces",
    "clusterResources",
    "project",
    "shard",
];

/// The helper the Argo CD image ships for cloud logins.
pub const ARGOCD_K8S_AUTH: &str = "argocd-k8s-auth";

impl ClusterConfig {
    /// Whether authentication goes through `argocd-k8s-auth`, i.e. works inside Argo CD without extra tools.
    pub fn uses_argocd_k8s_auth(&self) -> bool {
        self.aws_auth_config.is_some()
            || self
                .exec_provider_config
                .as_ref()
                .is_some_and(|e| e.command == ARGOCD_K8S_AUTH)
    }

    /// Whether the config carries any credential.
    pub fn has_credentials(&self) -> bool {
        self.username.is_some()
            || self.password.is_some()
            || self.bearer_token.is_some()
            || self.tls_client_config.cert_data.is_some()
            || self.aws_auth_config.is_some()
            || self.exec_provider_config.is_some()
    }

    /// The config with only what connects to the cluster, as the field table's roles say (pull
    /// mode). Every field is named here, so a new one cannot be left out unnoticed; the table
    /// decides whether it stays.
    pub fn without_login(self) -> ClusterConfig {
        let keep = |path: &[&str]| role(path) == Some(Role::Connection);
        let ClusterConfig {
            username,
            password,
            bearer_token,
            tls_client_config,
            aws_auth_config,
            exec_provider_config,
            disable_compression,
            proxy_url,
        } = self;
        let TlsClientConfig {
            insecure,
            server_name,
            cert_data,
            key_data,
            ca_data,
        } = tls_client_config;
        let tls = |name: &str| keep(&["tlsClientConfig", name]);
        ClusterConfig {
            username: username.filter(|_| keep(&["username"])),
            password: password.filter(|_| keep(&["password"])),
            bearer_token: bearer_token.filter(|_| keep(&["bearerToken"])),
            tls_client_config: TlsClientConfig {
                insecure: insecure && tls("insecure"),
                server_name: server_name.filter(|_| tls("serverName")),
                cert_data: cert_data.filter(|_| tls("certData")),
                key_data: key_data.filter(|_| tls("keyData")),
                ca_data: ca_data.filter(|_| tls("caData")),
            },
            aws_auth_config: aws_auth_config.filter(|_| keep(&["awsAuthConfig"])),
            exec_provider_config: exec_provider_config.filter(|_| keep(&["execProviderConfig"])),
            disable_compression: disable_compression && keep(&["disableCompression"]),
            proxy_url: proxy_url.filter(|_| keep(&["proxyUrl"])),
        }
    }

    /// Pretty JSON, as stored under the Secret's `config` key.
    pub fn to_json(&self) -> String {
        // Sized for the long values up front: the text is kept until the output is written,
        // for every cluster of the fleet, so it should neither grow by doubling nor keep slack.
        let tls = &self.tls_client_config;
        let long = [tls.ca_data.as_deref(), tls.cert_data.as_deref()]
            .into_iter()
            .chain(
                [tls.key_data.as_ref(), self.bearer_token.as_ref()]
                    .map(|s| s.map(|s| s.0.as_str())),
            )
            .flatten()
            .map(str::len)
            .sum::<usize>();
        let mut json = Vec::with_capacity(long + 1024);
        // Plain structs of strings, bools and string maps always serialize, to UTF-8.
        if serde_json::to_writer_pretty(&mut json, self).is_err() {
            return String::new();
        }
        json.shrink_to_fit();
        String::from_utf8(json).unwrap_or_default()
    }
}

/// What identifies a converted cluster and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSecret {
    pub secret_name: String,
    pub namespace: String,
    /// Argo CD's cluster name (`name` key).
    pub cluster_name: String,
    pub server: String,
    pub config: ClusterConfig,
    pub source_name: String,
    pub source_namespace: String,
    /// kpt's annotations: the path for a new Secret, or those of the Secret this one replaces.
    pub annotations: Vec<(String, String)>,
    /// Labels, annotations and Argo CD fields from the config, the inventory and the Cluster.
    pub fields: Fields,
    pub shard: Option<u32>,
}

/// Where the Argo CD Secret's values go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataField {
    StringData,
    Data,
}

/// What a layer entry (or the config-wide defaults) sets on a cluster's Argo CD Secret.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub project: Option<String>,
    pub namespaces: Option<Vec<String>>,
    pub cluster_resources: Option<bool>,
}

impl Fields {
    /// Applies `other` on top: its map entries and set fields win.
    pub fn overlay(&mut self, other: &Fields) {
        self.labels.extend(other.labels.clone());
        self.annotations.extend(other.annotations.clone());
        if other.project.is_some() {
            self.project.clone_from(&other.project);
        }
        if other.namespaces.is_some() {
            self.namespaces.clone_from(&other.namespaces);
        }
        if other.cluster_resources.is_some() {
            self.cluster_resources = other.cluster_resources;
        }
    }
}

/// Labels the function owns on every Secret; nothing from a config or a Cluster may replace them.
pub const PROTECTED_LABELS: &[&str] = &[
    SECRET_TYPE_LABEL,
    OWNED_LABEL,
    SOURCE_NAME_LABEL,
    SOURCE_NAMESPACE_LABEL,
];

/// The application-controller shard of a cluster: a jump consistent hash of its Argo CD name.
///
/// Each cluster's shard depends on its name alone, so adding or removing clusters moves no
/// other cluster, and growing from N to N+1 shards moves only about 1/(N+1) of them.
pub fn shard(cluster_name: &str, shards: u32) -> u32 {
    // Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014).
    let mut key = fnv64a(cluster_name);
    let (mut bucket, mut next) = (-1i64, 0i64);
    while next < i64::from(shards) {
        bucket = next;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        next = ((bucket + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    u32::try_from(bucket.max(0)).unwrap_or(0)
}

impl ClusterSecret {
    /// The Argo CD cluster Secret, labelled as CACO labels it.
    pub fn to_node(&self, data_field: DataField, with_config: bool) -> Node<'static> {
        let mut metadata = vec![("name", Node::string(self.secret_name.clone()))];
        metadata.push(("namespace", Node::string(self.namespace.clone())));
        let annotations: Vec<(&str, Node<'static>)> = self
            .annotations
            .iter()
            .map(|(k, v)| (k.as_str(), Node::string(v.clone())))
            .chain(
                self.fields
                    .annotations
                    .iter()
                    // kpt's own annotations, carried over, win over any from the fleet metadata.
                    .filter(|(k, _)| !self.annotations.iter().any(|(a, _)| a == *k))
                    .map(|(k, v)| (k.as_str(), Node::string(v.clone()))),
            )
            .collect();
        if !annotations.is_empty() {
            metadata.push(("annotations", Node::map(annotations)));
        }
        let mut labels = vec![
            (SECRET_TYPE_LABEL, Node::string("cluster")),
            (OWNED_LABEL, Node::string("true")),
            (
                SOURCE_NAME_LABEL,
                Node::string(crate::convert::meta::label_value(&self.source_name)),
            ),
            (
                SOURCE_NAMESPACE_LABEL,
                Node::string(crate::convert::meta::label_value(&self.source_namespace)),
            ),
        ];
        labels.extend(
            self.fields
                .labels
                .iter()
                .filter(|(k, _)| !PROTECTED_LABELS.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), Node::string(v.clone()))),
        );
        metadata.push(("labels", Node::map(labels)));
        let mut values = vec![
            ("name", self.cluster_name.clone()),
            ("server", self.server.clone()),
        ];
        if with_config {
            values.push(("config", self.config.to_json()));
        }
        if let Some(namespaces) = self.fields.namespaces.as_ref().filter(|n| !n.is_empty()) {
            values.push(("namespaces", namespaces.join(",")));
        }
        if self.fields.cluster_resources == Some(true) {
            values.push(("clusterResources", "true".into()));
        }
        if let Some(project) = self.fields.project.as_ref().filter(|p| !p.is_empty()) {
            values.push(("project", project.clone()));
        }
        if let Some(shard) = self.shard {
            values.push(("shard", shard.to_string()));
        }
        let (field, values): (&str, Vec<(&str, Node<'static>)>) = match data_field {
            DataField::StringData => (
                "stringData",
                values
                    .into_iter()
                    .map(|(k, v)| (k, Node::string(v)))
                    .collect(),
            ),
            DataField::Data => (
                "data",
                values
                    .into_iter()
                    .map(|(k, v)| (k, Node::string(krm::b64::encode(v.as_ref()))))
                    .collect(),
            ),
        };
        Node::map(vec![
            ("apiVersion", Node::string("v1")),
            ("kind", Node::string("Secret")),
            ("metadata", Node::map(metadata)),
            ("type", Node::string("Opaque")),
            (field, Node::map(values)),
        ])
    }
}

#[cfg(test)]
mod tests {

    /// The field table and the struct that writes `config` cannot drift apart.
    #[test]
    fn field_tables_are_the_serialized_fields() {
        let full = ClusterConfig {
            username: Some("u".into()),
            password: Some(Sensitive("p".into())),
            bearer_token: Some(Sensitive("t".into())),
            tls_client_config: TlsClientConfig {
                insecure: true,
                server_name: Some("s".into()),
                cert_data: Some("c".into()),
                key_data: Some(Sensitive("k".into())),
                ca_data: Some("a".into()),
            },
            aws_auth_config: Some(AwsAuthConfig {
                cluster_name: "c".into(),
                role_arn: Some("r".into()),
                profile: Some("p".into()),
            }),
            exec_provider_config: Some(ExecProviderConfig {
                command: "c".into(),
                args: vec!["a".into()],
                env: [("E".to_string(), Sensitive("v".into()))].into(),
                api_version: Some("v".into()),
                install_hint: Some("h".into()),
                provide_cluster_info: true,
                config: Some(serde_json::json!({"clusterName": "c"})),
            }),
            disable_compression: true,
            proxy_url: Some("http://p".into()),
        };
        let json: serde_json::Value = serde_json::from_str(&full.to_json()).unwrap();
        fn keys(v: &serde_json::Value) -> Vec<&str> {
            v.as_object().unwrap().keys().map(String::as_str).collect()
        }
        fn names(t: &'static [Field]) -> Vec<&'static str> {
            t.iter().map(|f| f.name).collect()
        }
        let sorted = |mut v: Vec<&str>| {
            v.sort_unstable();
            v.into_iter().map(String::from).collect::<Vec<_>>()
        };
        assert_eq!(sorted(keys(&json)), sorted(names(CLUSTER_CONFIG_FIELDS)));
        assert_eq!(
            sorted(keys(&json["tlsClientConfig"])),
            sorted(names(TLS_CLIENT_CONFIG_FIELDS))
        );
        assert_eq!(
            sorted(keys(&json["awsAuthConfig"])),
            sorted(names(AWS_AUTH_CONFIG_FIELDS))
        );
        assert_eq!(
            sorted(keys(&json["execProviderConfig"])),
            sorted(names(EXEC_PROVIDER_CONFIG_FIELDS))
        );
    }

    use super::*;

    /// The credential table names exactly the fields written from a `Sensitive`.
    #[test]
    fn credential_fields_are_the_sensitive_ones() {
        let secret = || Sensitive("SECRET".into());
        let open = || "open".to_string();
        let full = ClusterConfig {
            username: Some(open()),
            password: Some(secret()),
            bearer_token: Some(secret()),
            tls_client_config: TlsClientConfig {
                insecure: true,
                server_name: Some(open()),
                cert_data: Some(open()),
                key_data: Some(secret()),
                ca_data: Some(open()),
            },
            aws_auth_config: Some(AwsAuthConfig {
                cluster_name: open(),
                role_arn: Some(open()),
                profile: Some(open()),
            }),
            exec_provider_config: Some(ExecProviderConfig {
                command: open(),
                args: vec![open()],
                env: [("A".to_string(), secret()), ("B".to_string(), secret())].into(),
                api_version: Some(open()),
                install_hint: Some(open()),
                provide_cluster_info: true,
                config: Some(serde_json::json!({"clusterName": open()})),
            }),
            disable_compression: true,
            proxy_url: Some(open()),
        };
        fn walk(v: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            match v {
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        path.push(k.clone());
                        walk(v, path, out);
                        path.pop();
                    }
                }
                serde_json::Value::String(s) if s == "SECRET" => out.push(path.clone()),
                _ => {}
            }
        }
        let json: serde_json::Value = serde_json::from_str(&full.to_json()).unwrap();
        let mut found = Vec::new();
        walk(&json, &mut Vec::new(), &mut found);
        let mut found: Vec<Vec<String>> = found
            .into_iter()
            .map(|p| match p.as_slice() {
                [e, env, _] if e == "execProviderConfig" && env == "env" => {
                    vec![e.clone(), env.clone(), "*".into()]
                }
                _ => p,
            })
            .collect();
        found.dedup();
        found.sort();
        let mut table: Vec<Vec<String>> = credential_paths()
            .iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect();
        table.sort();
        assert_eq!(found, table);
    }

    /// Values written verbatim come out exactly as serde_json's escaper writes them, and
    /// anything that needs escaping still gets it.
    #[test]
    fn verbatim_values_are_the_json_the_escaper_writes() {
        let long = "QUJD".repeat(40);
        for text in [
            long.clone(),
            format!("{long}\"quote"),
            format!("{long}\\n backslash-n"),
            format!("{long}\n line"),
            format!("{long}\u{1}\u{7f} controls"),
            format!("{long} é ü \u{2028} </script>"),
            "short \"one\"".to_string(),
        ] {
            let ours = serde_json::to_string_pretty(&Sensitive(text.clone())).unwrap();
            assert_eq!(
                ours,
                serde_json::to_string_pretty(&text).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn config_json_matches_argo_cds_field_order_and_omissions() {
        let config = ClusterConfig {
            bearer_token: Some(Sensitive("t".into())),
            tls_client_config: TlsClientConfig {
                server_name: Some("api".into()),
                ca_data: Some("Q0E=".into()),
                ..Default::default()
            },
            proxy_url: Some("http://p".into()),
            ..Default::default()
        };
        let compact: serde_json::Value = serde_json::from_str(&config.to_json()).unwrap();
        assert_eq!(
            serde_json::to_string(&compact).unwrap(),
            r#"{"bearerToken":"t","proxyUrl":"http://p","tlsClientConfig":{"caData":"Q0E=","insecure":false,"serverName":"api"}}"#
        );
        assert!(config.to_json().find("bearerToken") < config.to_json().find("tlsClientConfig"));
        assert_eq!(
            ClusterConfig::default().to_json(),
            "{\n  \"tlsClientConfig\": {\n    \"insecure\": false\n  }\n}"
        );
    }

    #[test]
    fn shards_are_stable_and_evenly_spread() {
        let names: Vec<String> = (0..10_000).map(|i| format!("cluster-{i}")).collect();
        let mut counts = [0u32; 10];
        for name in &names {
            counts[shard(name, 10) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (900..=1100).contains(&c)),
            "{counts:?}"
        );
        // Growing to 11 shards moves about 1/11 of the clusters, and only to the new shard.
        let moved: Vec<&String> = names
            .iter()
            .filter(|n| shard(n, 10) != shard(n, 11))
            .collect();
        assert!((700..=1100).contains(&moved.len()), "{}", moved.len());
        assert!(moved.iter().all(|n| shard(n, 11) == 10));
        assert_eq!(shard("x", 1), 0);
    }

    /// Pull mode keeps exactly the fields the table calls a connection.
    #[test]
    fn without_login_keeps_only_connection_fields() {
        let full = ClusterConfig {
            username: Some("u".into()),
            password: Some(Sensitive("p".into())),
            bearer_token: Some(Sensitive("t".into())),
            tls_client_config: TlsClientConfig {
                insecure: true,
                server_name: Some("s".into()),
                cert_data: Some("c".into()),
                key_data: Some(Sensitive("k".into())),
                ca_data: Some("a".into()),
            },
            aws_auth_config: Some(AwsAuthConfig {
                cluster_name: "c".into(),
                role_arn: None,
                profile: None,
            }),
            exec_provider_config: Some(ExecProviderConfig::default()),
            disable_compression: true,
            proxy_url: Some("http://p".into()),
        };
        let kept: serde_json::Value =
            serde_json::from_str(&full.without_login().to_json()).unwrap();
        assert_eq!(
            kept,
            serde_json::json!({
                "tlsClientConfig": {"insecure": true, "serverName": "s", "caData": "a"},
                "disableCompression": true,
                "proxyUrl": "http://p"
            })
        );
    }

    #[test]
    fn debug_output_redacts_credentials() {
        let config = ClusterConfig {
            password: Some(Sensitive("hunter2".into())),
            bearer_token: Some(Sensitive("tok-123".into())),
            tls_client_config: TlsClientConfig {
                key_data: Some(Sensitive("S0VZ".into())),
                ..Default::default()
            },
            ..Default::default()
        };
        let debug = format!("{config:?}");
        for secret in ["hunter2", "tok-123", "S0VZ"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }
}
