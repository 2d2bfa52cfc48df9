//! How Argo CD reaches a ClusterProfile's cluster: the access provider chosen as the reference
//! consumer chooses it (`controller.go` at f49fb228: a supported built-in provider first, in the
//! profile's order; else the first of the consumer's providers the profile advertises, in the
//! consumer's order, `accessProviders` over the deprecated `credentialProviders` of the same
//! name), its cluster's connection, and the login: `argocd-k8s-auth` for a built-in, the
//! consumer's exec plugin otherwise (cluster-inventory-api `pkg/access/config.go`,
//! `BuildConfigFromCP`: the profile's additional arguments and variables under the provider's
//! policies, the cluster's exec extension as the plugin's `config`).

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use std::collections::BTreeMap;

use crate::convert::argocd::{
    ARGOCD_K8S_AUTH, ClusterConfig, ExecProviderConfig, Sensitive, TlsClientConfig,
};
use krm::finding::Finding;
use yaml::Node;

use super::providers::{ArgsPolicy, EnvPolicy, Provider};

/// The prefix of the providers Argo CD's own `argocd-k8s-auth` logs in for.
pub const BUILTIN_PREFIX: &str = "argo-cd-builtin-";
const BUILTIN_CLOUDS: [&str; 3] = ["aws", "azure", "gcp"];

/// The cluster extension whose value client-go gives an exec plugin as its cluster's `config`.
pub const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";
const ADDITIONAL_ARGS: &str = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args";
const ADDITIONAL_ENVS: &str = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs";

/// What the reference substitutes into a custom provider's arguments.
const NAME_PLACEHOLDER: &str = "{{ .ClusterProfileName }}";
const SERVER_PLACEHOLDER: &str = "{{ .ClusterProfileServer }}";

/// The apiVersion the reference gives `argocd-k8s-auth`.
const BUILTIN_API_VERSION: &str = "client.authentication.k8s.io/v1beta1";

/// How Argo CD reaches the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    pub server: String,
    pub config: ClusterConfig,
    /// The provider chosen.
    pub provider: String,
    /// Where its entry stands in the profile (`status.accessProviders[0]`).
    pub field: String,
    /// What is worth saying about it (infos and warnings about fields of the profile).
    pub notes: Vec<Finding>,
}

/// A profile's access: none advertised at all, or how Argo CD reaches it.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// It advertises no access provider: the reference removes its Secret (access withdrawn).
    Withdrawn,
    Reached(Box<Reached>),
}

/// An entry of `status.accessProviders` or `status.credentialProviders`.
struct Entry<'n> {
    name: String,
    cluster: Option<&'n Node<'n>>,
    field: String,
}

fn entries<'n>(status: Option<&'n Node<'n>>, list: &str) -> Vec<Entry<'n>> {
    status
        .and_then(|s| s.get(list))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            Some(Entry {
                name: e.get("name").and_then(Node::as_str)?.to_string(),
                cluster: e.get("cluster").filter(|c| c.as_map().is_some()),
                field: format!("status.{list}[{i}]"),
            })
        })
        .collect()
}

/// How Argo CD reaches the cluster of the ClusterProfile `node` named `profile`, with the
/// consumer's `providers`; `Err` names the field of the profile (or the setting) at fault.
pub fn access<'n>(
    node: &'n Node<'n>,
    profile: &str,
    providers: &[Provider],
) -> Result<Access, Finding> {
    let status = node.get("status");
    let advertised = entries(status, "accessProviders");
    let deprecated = entries(status, "credentialProviders");
    // A supported built-in provider wins over custom ones; one that is not supported fails
    // the profile, as the reference has it (no later entry is tried).
    if let Some(e) = advertised
        .iter()
        .find(|e| e.name.starts_with(BUILTIN_PREFIX))
    {
        let cloud = &e.name[BUILTIN_PREFIX.len()..];
        if !BUILTIN_CLOUDS.contains(&cloud) {
            return Err(Finding::error(format!(
                "{:?} is not a built-in access provider Argo CD has (argo-cd-builtin-aws, argo-cd-builtin-azure, argo-cd-builtin-gcp)",
                e.name
            ))
            .at(format!("{}.name", e.field)));
        }
        return builtin(e, cloud, profile).map(|r| Access::Reached(Box::new(r)));
    }
    // A built-in name in the deprecated list is only a name, as any other there: the
    // reference looks for built-ins in accessProviders alone.
    // The deprecated list first, so that an accessProviders entry of the same name replaces it.
    let mut effective: BTreeMap<&str, &Entry> = BTreeMap::new();
    for e in deprecated.iter().chain(&advertised) {
        effective.insert(e.name.as_str(), e);
    }
    if effective.is_empty() {
        return Ok(Access::Withdrawn);
    }
    let chosen = providers
        .iter()
        .find_map(|p| effective.get(p.name.as_str()).map(|e| (p, *e)));
    let Some((provider, entry)) = chosen else {
        let names: Vec<&str> = effective.keys().copied().collect();
        let configured: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
        let configured = if configured.is_empty() {
            "none is configured".to_string()
        } else {
            format!("it configures {}", configured.join(", "))
        };
        let field = advertised
            .first()
            .map_or("status.credentialProviders", |_| "status.accessProviders");
        return Err(Finding::error(format!(
            "advertises the access providers {}, and the setting accessProviders names none of them ({configured}): give the consumer's exec plugin for one of them",
            names.join(", ")
        ))
        .at(field));
    };
    custom(entry, provider, profile).map(|r| Access::Reached(Box::new(r)))
}

/// The cluster's connection: its server (required), CA, TLS server name, insecure flag, proxy
/// and compression, as the reference carries them over (`clusterConfigFromAccessProvider`).
fn connection(entry: &Entry, notes: &mut Vec<Finding>) -> Result<(String, ClusterConfig), Finding> {
    let at = |key: &str| format!("{}.cluster.{key}", entry.field);
    let cluster = entry.cluster;
    let get = |key: &str| cluster.and_then(|c| c.get(key));
    // As written: the reference carries each over verbatim.
    let text = |key: &str| get(key).and_then(Node::as_str).filter(|v| !v.is_empty());
    let flag = |key: &str| get(key).and_then(Node::as_bool).unwrap_or(false);
    let server = text("server").ok_or_else(|| {
        Finding::error(format!(
            "is missing: the access provider {:?} gives no server to reach the cluster at",
            entry.name
        ))
        .at(at("server"))
    })?;
    if text("certificate-authority").is_some() {
        notes.push(
            Finding::info(
                "a file on the consumer's machine: never read (certificate-authority-data is)",
            )
            .at(at("certificate-authority")),
        );
    }
    // `format: byte`: decoded (line breaks and all) and written as the reference's json.Marshal
    // of the bytes writes it, one line of standard base64.
    let ca_data = match text("certificate-authority-data") {
        None => None,
        Some(ca) => Some(krm::b64::encode(
            &krm::b64::decode_without(ca.as_bytes(), b"\r\n \t").map_err(|_| {
                Finding::error("is not base64").at(at("certificate-authority-data"))
            })?,
        )),
    };
    let config = ClusterConfig {
        tls_client_config: TlsClientConfig {
            insecure: flag("insecure-skip-tls-verify"),
            server_name: text("tls-server-name").map(String::from),
            ca_data,
            ..TlsClientConfig::default()
        },
        disable_compression: flag("disable-compression"),
        proxy_url: text("proxy-url").map(String::from),
        ..ClusterConfig::default()
    };
    Ok((server.to_string(), config))
}

/// Two extensions of one name: client-go's conversion of the cluster (which `BuildConfigFromCP`
/// makes) refuses them, and the reference writes nothing for the profile.
fn unique_extensions(entry: &Entry) -> Result<(), Finding> {
    let names = entry
        .cluster
        .and_then(|c| c.get("extensions"))
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.get("name").and_then(Node::as_str));
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(Finding::error(format!(
                "holds the extension {name:?} twice: client-go's conversion of the cluster refuses it"
            ))
            .at(format!("{}.cluster.extensions", entry.field)));
        }
    }
    Ok(())
}

/// A scalar as yaml.v3 unmarshals it into a Go string (its text, whatever it resolves to);
/// `None` for a null, which it leaves out.
fn go_string(node: &Node) -> Result<Option<String>, ()> {
    let scalar = node.scalar().ok_or(())?;
    Ok((!node.is_null()).then(|| scalar.text.to_string()))
}

/// The cluster's extension `name`, when it has it.
fn extension<'n>(entry: &Entry<'n>, name: &str) -> Option<&'n Node<'n>> {
    entry
        .cluster?
        .get("extensions")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .find(|e| e.get("name").and_then(Node::as_str) == Some(name))
        .and_then(|e| e.get("extension"))
        .filter(|e| !e.is_null())
}

/// A node as JSON, its numbers as Go writes the float64 it reads them into (`1.0` is `1`), as
/// the reference's `json.Marshal` of the extension writes them.
fn json(node: &Node) -> Option<serde_json::Value> {
    let mut text = String::new();
    yaml::emit::write_json(&mut text, node, None);
    let mut value: serde_json::Value = serde_json::from_str(&text).ok()?;
    go_numbers(&mut value);
    Some(value)
}

/// Integral floats as integers, where Go's `%v` of a float64 writes no fraction (below 1e21).
fn go_numbers(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(n) => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21)
            {
                if let Ok(whole) = serde_json::from_str::<serde_json::Number>(&format!("{f:.0}")) {
                    *n = whole;
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(go_numbers),
        serde_json::Value::Object(map) => map.values_mut().for_each(go_numbers),
        _ => {}
    }
}

/// `argocd-k8s-auth <cloud>`, which Argo CD's own image carries. The reference passes nothing
/// else; `argocd-k8s-auth aws` cannot work without the EKS cluster's name (it signs the token
/// for it), so it gets `--cluster-name` from the exec extension's `clusterName`, else the
/// profile's name, and `--role-arn` from the extension's `roleARN` when there is one.
fn builtin(entry: &Entry, cloud: &str, profile: &str) -> Result<Reached, Finding> {
    let mut notes = Vec::new();
    let (server, mut config) = connection(entry, &mut notes)?;
    let mut args = vec![cloud.to_string()];
    if cloud == "aws" {
        let ext = extension(entry, EXEC_EXTENSION);
        let key = |k: &str| {
            ext.and_then(|e| e.get(k))
                .and_then(Node::as_str)
                .filter(|v| !v.is_empty())
        };
        let name = match key("clusterName") {
            Some(n) => n,
            None => {
                notes.push(
                    Finding::info(format!(
                        "argocd-k8s-auth aws signs its token for an EKS cluster by name, and the exec extension ({EXEC_EXTENSION}) gives no clusterName: the EKS cluster is taken to be named {profile:?}, as the profile"
                    ))
                    .at(format!("{}.cluster.extensions", entry.field)),
                );
                profile
            }
        };
        args.extend(["--cluster-name".to_string(), name.to_string()]);
        if let Some(role) = key("roleARN") {
            args.extend(["--role-arn".to_string(), role.to_string()]);
        }
    }
    config.exec_provider_config = Some(ExecProviderConfig {
        command: ARGOCD_K8S_AUTH.to_string(),
        args,
        api_version: Some(BUILTIN_API_VERSION.to_string()),
        ..ExecProviderConfig::default()
    });
    Ok(Reached {
        server,
        config,
        provider: entry.name.clone(),
        field: entry.field.clone(),
        notes,
    })
}

/// The consumer's exec plugin for the provider, as `BuildConfigFromCP` builds it and the
/// reference writes it: the profile's additional arguments appended (policy `Append`), its
/// additional variables merged (`AppendIfNotExists`: the provider's own win; `Replace`: the
/// profile's win), the profile's name and server substituted into the arguments, the cluster's
/// exec extension as `config`.
fn custom(entry: &Entry, provider: &Provider, profile: &str) -> Result<Reached, Finding> {
    let mut notes = Vec::new();
    let (server, mut config) = connection(entry, &mut notes)?;
    let at = |name: &str| format!("{}.cluster.extensions[{name}]", entry.field);
    unique_extensions(entry)?;
    let mut args = provider.args.clone();
    if provider.args_policy == ArgsPolicy::Append {
        if let Some(extra) = extension(entry, ADDITIONAL_ARGS) {
            let list: Result<Vec<Option<String>>, ()> = match extra.as_seq() {
                Some(items) => items.iter().map(go_string).collect(),
                None => Err(()),
            };
            let list = list.map_err(|()| {
                Finding::error("expected a list of strings").at(at(ADDITIONAL_ARGS))
            })?;
            args.extend(list.into_iter().flatten());
        }
    }
    let args = args
        .iter()
        .map(|a| {
            a.replace(NAME_PLACEHOLDER, profile)
                .replace(SERVER_PLACEHOLDER, &server)
        })
        .collect();
    // The provider's own variables: of two of one name, the last (the reference's map of
    // them) — but the first under `Replace` with the profile's variables, which
    // `processClusterProfileSourcedEnvVarData` adds only where the name is not there yet.
    let extra_env = (provider.env_policy != EnvPolicy::Ignore)
        .then(|| extension(entry, ADDITIONAL_ENVS))
        .flatten();
    let first_wins = provider.env_policy == EnvPolicy::Replace && extra_env.is_some();
    let mut own: BTreeMap<String, Sensitive> = BTreeMap::new();
    for (k, v) in &provider.env {
        if !(first_wins && own.contains_key(k)) {
            own.insert(k.clone(), Sensitive(v.clone()));
        }
    }
    let mut env = own.clone();
    {
        if let Some(extra) = extra_env {
            let pairs: Result<Vec<(String, Option<String>)>, ()> = match extra.as_map() {
                Some(entries) => entries
                    .iter()
                    .map(|(k, v)| Ok((go_string(k)?.ok_or(())?, go_string(v)?)))
                    .collect(),
                None => Err(()),
            };
            let pairs = pairs.map_err(|()| {
                Finding::error("expected a mapping of names to strings").at(at(ADDITIONAL_ENVS))
            })?;
            for (k, v) in pairs {
                // A null value is the empty string there (yaml.v3 sets the map's zero value).
                let v = v.unwrap_or_default();
                // AppendIfNotExists: the provider's own win; Replace: the profile's.
                if provider.env_policy == EnvPolicy::Replace || !own.contains_key(&k) {
                    env.insert(k, Sensitive(v));
                }
            }
        }
    }
    let exec_config = extension(entry, EXEC_EXTENSION).and_then(json);
    if exec_config.is_some() || provider.provide_cluster_info {
        notes.push(
            Finding::info(format!(
                "the login of provider {:?} gives its plugin {}: Argo CD reads these from 3.5 on (argo-cd 6d92e177, #24282); an earlier Argo CD ignores them, and the plugin gets no cluster information",
                provider.name,
                match (provider.provide_cluster_info, exec_config.is_some()) {
                    (true, true) => "provideClusterInfo and the cluster's exec extension as config",
                    (true, false) => "provideClusterInfo",
                    _ => "the cluster's exec extension as config",
                }
            ))
            .at(entry.field.clone()),
        );
    }
    config.exec_provider_config = Some(ExecProviderConfig {
        command: provider.command.clone(),
        args,
        env,
        api_version: provider.api_version.clone(),
        install_hint: None,
        provide_cluster_info: provider.provide_cluster_info,
        config: exec_config,
    });
    Ok(Reached {
        server,
        config,
        provider: provider.name.clone(),
        field: entry.field.clone(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;
    use yaml::parse_stream;

    /// The Argo CD config a profile's status gives with these providers, as JSON; or the
    /// error's field.
    fn reached(status: &str, providers: &str) -> Result<serde_json::Value, String> {
        let limits = Limits::default();
        let profile = format!(
            "apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ClusterProfile\nmetadata: {{name: p, namespace: fleet}}\nstatus:\n{status}"
        );
        let docs = parse_stream(&profile, &limits).expect("profile");
        let providers = parse_stream(providers, &limits).expect("providers");
        let providers = super::super::providers::parse(&providers[0].root).expect("providers");
        match access(&docs[0].root, "p", &providers) {
            Ok(Access::Reached(r)) => {
                let mut json = serde_json::to_value(&r.config).expect("json");
                json["server"] = r.server.into();
                Ok(json)
            }
            Ok(Access::Withdrawn) => Err("withdrawn".into()),
            Err(f) => Err(f.field.unwrap_or_default()),
        }
    }

    const PLUGIN: &str = "- name: plugin\n  execConfig: {command: /bin/plugin, apiVersion: client.authentication.k8s.io/v1, env: [{name: A, value: own}, {name: A, value: own2}]}\n  profileSourcedCLIArgsPolicy: Append\n  profileSourcedEnvVarsPolicy: POLICY\n";

    fn with_extensions(extensions: &str) -> String {
        format!(
            "  accessProviders:\n  - name: plugin\n    cluster:\n      server: https://p.example:6443\n      extensions:\n{extensions}"
        )
    }

    /// Regression: yaml.v3 unmarshals any scalar into a string, leaves a null out of a list and
    /// makes it the empty string in a map (cluster-inventory-api
    /// `processClusterProfileSourcedCLIArgData` and `…EnvVarData`); numbers and booleans were
    /// refused.
    #[test]
    fn additional_args_and_envs_take_any_scalar_as_yaml_v3_does() {
        let status = with_extensions(
            "      - {name: clusterprofiles.multicluster.x-k8s.io/exec/additional-args, extension: ['--port', 8443, true, null]}\n      - {name: clusterprofiles.multicluster.x-k8s.io/exec/additional-envs, extension: {RETRIES: 3, DEBUG: true, GONE: null}}\n",
        );
        let config = reached(&status, &PLUGIN.replace("POLICY", "AppendIfNotExists")).unwrap();
        let exec = &config["execProviderConfig"];
        assert_eq!(exec["args"], serde_json::json!(["--port", "8443", "true"]));
        assert_eq!(
            exec["env"],
            serde_json::json!({"A": "own2", "RETRIES": "3", "DEBUG": "true", "GONE": ""})
        );
    }

    /// Regression: under Replace the profile's variable wins, and of the provider's own two of
    /// one name the first; under AppendIfNotExists the provider's last.
    #[test]
    fn env_policies_pick_as_build_config_from_cp_picks() {
        let status = with_extensions(
            "      - {name: clusterprofiles.multicluster.x-k8s.io/exec/additional-envs, extension: {B: profile}}\n",
        );
        let replace = reached(&status, &PLUGIN.replace("POLICY", "Replace")).unwrap();
        assert_eq!(
            replace["execProviderConfig"]["env"],
            serde_json::json!({"A": "own", "B": "profile"})
        );
        let status = with_extensions(
            "      - {name: clusterprofiles.multicluster.x-k8s.io/exec/additional-envs, extension: {A: profile}}\n",
        );
        let replace = reached(&status, &PLUGIN.replace("POLICY", "Replace")).unwrap();
        assert_eq!(replace["execProviderConfig"]["env"]["A"], "profile");
        let append = reached(&status, &PLUGIN.replace("POLICY", "AppendIfNotExists")).unwrap();
        assert_eq!(append["execProviderConfig"]["env"]["A"], "own2");
    }

    /// Regression: without the profile's variables, `Replace` changes nothing: the provider's
    /// last of two of one name, as the reference maps the list.
    #[test]
    fn replace_without_the_profile_s_variables_keeps_the_provider_s_map() {
        let status = with_extensions("      - {name: example.com/other, extension: {}}\n");
        let replace = reached(&status, &PLUGIN.replace("POLICY", "Replace")).unwrap();
        assert_eq!(replace["execProviderConfig"]["env"]["A"], "own2");
    }

    /// Regression: a float of the exec extension kept its fraction (`1000.0`); Go's json.Marshal
    /// of the float64 the reference reads writes `1000`.
    #[test]
    fn the_exec_extension_s_numbers_are_written_as_go_writes_them() {
        let status = with_extensions(
            "      - {name: client.authentication.k8s.io/exec, extension: {a: [1000.0, x], b: 1.5, c: 2}}\n",
        );
        let config = reached(&status, &PLUGIN.replace("POLICY", "Ignore")).unwrap();
        assert_eq!(
            config["execProviderConfig"]["config"].to_string(),
            r#"{"a":[1000,"x"],"b":1.5,"c":2}"#
        );
    }

    /// Regression: two extensions of one name were taken (the first); client-go's conversion,
    /// which the reference makes, refuses them.
    #[test]
    fn two_extensions_of_one_name_are_an_error() {
        let status = with_extensions(
            "      - {name: example.com/foo, extension: {a: 1}}\n      - {name: example.com/foo, extension: {a: 2}}\n",
        );
        let field = reached(&status, &PLUGIN.replace("POLICY", "Ignore")).unwrap_err();
        assert_eq!(field, "status.accessProviders[0].cluster.extensions");
    }

    /// Regression: a built-in name in the deprecated credentialProviders failed the profile;
    /// the reference looks for built-ins in accessProviders only.
    #[test]
    fn a_built_in_name_in_the_deprecated_list_is_only_a_name() {
        let status = "  credentialProviders:\n  - {name: argo-cd-builtin-gcp, cluster: {server: https://gcp.example}}\n  accessProviders:\n  - {name: plugin, cluster: {server: https://p.example:6443}}\n";
        let config = reached(status, &PLUGIN.replace("POLICY", "Ignore")).unwrap();
        assert_eq!(config["execProviderConfig"]["command"], "/bin/plugin");
    }

    /// Regression: the CA was copied as written; the reference decodes it (`format: byte`)
    /// and json.Marshal writes one line of standard base64. Other fields stay as written.
    #[test]
    fn the_ca_is_written_as_json_marshal_writes_bytes() {
        let status = "  accessProviders:\n  - name: argo-cd-builtin-gcp\n    cluster:\n      server: https://gcp.example\n      certificate-authority-data: |\n        Y2Ft\n        ZXJh\n";
        let config = reached(status, "[]").unwrap();
        assert_eq!(config["tlsClientConfig"]["caData"], "Y2FtZXJh");
        let status = "  accessProviders:\n  - name: argo-cd-builtin-gcp\n    cluster:\n      server: 'https://gcp.example '\n      certificate-authority-data: '!!'\n";
        assert_eq!(
            reached(status, "[]").unwrap_err(),
            "status.accessProviders[0].cluster.certificate-authority-data"
        );
    }
}
