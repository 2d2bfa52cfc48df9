//! The function's configuration: a ConfigMap of strings or a typed `Capi2Argo` object, validated key by key.

use crate::appsets::ControllerPolicy;
use crate::convert::argocd::{DataField, Fields};
use crate::fleet::inventory::Layer;
use crate::profiles::Provider;
use crate::raw::Raw;
use crate::sources::{self, Source};
use crate::validate::Policy;
use yaml::Limits;
use yaml::Node;

pub mod access;
pub mod installed;
mod keys;

pub use keys::{KEYS, Key, settings_help};

/// The `apiVersion` of the function's typed config.
pub const API_VERSION: &str = "fn.capi2argo.dev/v1alpha1";
/// The `kind` of the function's typed config.
pub const KIND: &str = "Capi2Argo";

/// How much of the kubeconfig goes into the Argo CD Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Argo CD connects to the cluster: the Secret carries credentials.
    Push,
    /// Agents on the cluster pull (Open Cluster Management): the Secret carries no credentials.
    Pull,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub argo_namespace: String,
    pub namespaced_names: bool,
    /// `None` allows every namespace.
    pub allowed_namespaces: Option<Vec<String>>,
    pub context: Option<String>,
    pub mode: Mode,
    pub data_field: DataField,
    pub prune: bool,
    /// Guard: prune the owned Secrets of a source even when the input holds none of its
    /// kubeconfig Secrets.
    pub allow_empty: bool,
    /// Guard: the most owned Secrets one run may prune.
    pub max_prune: MaxPrune,
    /// Guard: let a cluster's Argo CD name or Secret name change.
    pub allow_rename: bool,
    /// Guard: the most Applications one ApplicationSet may delete because of one run.
    pub max_application_deletes: MaxPrune,
    /// The ApplicationSet controller's policy, as the settings say it (the input's
    /// `argocd-cmd-params-cm` says it better).
    pub appset_policy: ControllerPolicy,
    /// A host reading from an API server reads ApplicationSets and Applications too.
    pub read_applications: bool,
    pub strict: bool,
    /// Config-wide fields for every Secret: the bottom of the merge order.
    pub defaults: Fields,
    /// Layers in priority order: each overrides the ones before it.
    pub inventory: Vec<Layer>,
    /// Spread clusters over this many application-controller shards.
    pub shards: Option<u32>,
    pub copy_cluster_labels: bool,
    pub copy_cluster_annotations: bool,
    /// Where the Argo CD cluster's `name` comes from.
    pub name_from: NameFrom,
    /// The kinds of kubeconfig Secrets converted, in priority order (the first that takes a
    /// Secret wins).
    pub sources: Vec<Source>,
    /// Clusters being deleted, or not initialised yet, get no Argo CD Secret for now.
    pub skip_not_ready: bool,
    /// Convert, or only validate the Argo CD cluster Secrets in the input.
    pub task: Task,
    /// What the validator enforces beyond Argo CD's own rules (on the function's own output too).
    pub policy: Policy,
    /// What Argo CD logs in with (`credentials` and its settings).
    pub access: access::Settings,
    /// The `clusterprofile` source's consumer-side access providers, in the order preferred.
    pub access_providers: Vec<Provider>,
    /// Extra input resources written in the config (kustomize generators).
    pub resources: Vec<Node<'static>>,
    /// Files of extra input resources, relative to the working directory; the caller reads them.
    pub resource_files: Vec<String>,
    /// `seal: sealedSecrets`: write SealedSecrets (with `sealing_certificate` and `seal_scope`).
    pub seal: bool,
    pub sealing_certificate: Option<crate::seal::SealingCertificate>,
    pub seal_scope: crate::seal::Scope,
    /// With `seal`, write the kubeconfig Secrets read back (they hold credentials).
    pub keep_kubeconfig_secrets: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            argo_namespace: "argocd".into(),
            namespaced_names: false,
            allowed_namespaces: None,
            context: None,
            mode: Mode::Push,
            data_field: DataField::StringData,
            prune: true,
            allow_empty: false,
            max_prune: MaxPrune::Percent(10),
            allow_rename: false,
            max_application_deletes: MaxPrune::Percent(10),
            appset_policy: ControllerPolicy::default(),
            read_applications: false,
            strict: true,
            defaults: Fields::default(),
            inventory: Vec::new(),
            shards: None,
            copy_cluster_labels: false,
            copy_cluster_annotations: false,
            name_from: NameFrom::Secret,
            sources: sources::default_sources(),
            skip_not_ready: false,
            task: Task::Convert,
            policy: Policy::default(),
            access: access::Settings::default(),
            access_providers: Vec::new(),
            resources: Vec::new(),
            resource_files: Vec::new(),
            seal: false,
            sealing_certificate: None,
            seal_scope: crate::seal::Scope::Strict,
            keep_kubeconfig_secrets: false,
        }
    }
}

/// The most owned Argo CD Secrets one run may prune (never fewer than one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxPrune {
    /// At most this many.
    Count(usize),
    /// At most this percentage of the owned Secrets in the input, rounded down.
    Percent(usize),
}

impl std::fmt::Display for MaxPrune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaxPrune::Count(n) => write!(f, "{n}"),
            MaxPrune::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Convert kubeconfig Secrets into Argo CD cluster Secrets.
    Convert,
    /// Check the Argo CD cluster Secrets in the input and change nothing.
    Validate,
}

/// Where the Argo CD cluster's `name` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameFrom {
    /// The kubeconfig Secret's name without its suffix (the CAPI Cluster's name).
    Secret,
    /// The kubeconfig's cluster entry, as CACO names it.
    Kubeconfig,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("functionConfig must be a ConfigMap or {API_VERSION} {KIND}, got {0}")]
    WrongKind(String),
    #[error("functionConfig {0} must be a mapping")]
    NotAMapping(&'static str),
    #[error("functionConfig {field}: {}", unknown_key_hint(field))]
    UnknownKey { field: String },
    #[error("functionConfig {field}: {message}")]
    BadValue { field: String, message: String },
    #[error("invalid setting {0:?}: expected key=value")]
    BadOverride(String),
    /// A `key=value` setting given on top (`--set`, a host's overrides) names no setting.
    #[error("--set {key}: {}", unknown_key_hint(key))]
    UnknownSetting { key: String },
    /// A `key=value` setting given on top has a value its key does not take.
    #[error("--set {key}: {message}")]
    BadSetting { key: String, message: String },
    /// A setting another one needs is missing, or unusable with the host's time.
    #[error("{key}: {message}")]
    Needs { key: &'static str, message: String },
}

impl ConfigError {
    /// The message without the field, for a result that names the field separately.
    pub fn detail(&self) -> String {
        match self {
            ConfigError::UnknownKey { field } => unknown_key_hint(field),
            ConfigError::BadValue { message, .. } | ConfigError::Needs { message, .. } => {
                message.clone()
            }
            other => other.to_string(),
        }
    }

    /// The field the error is about, for a result's `field.path`.
    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { field } | ConfigError::BadValue { field, .. } => Some(field),
            ConfigError::Needs { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// "unknown key", with the closest known key when it is likely a typo, else the list of keys.
fn unknown_key_hint(field: &str) -> String {
    let key = field.rsplit('.').next().unwrap_or(field);
    match keys::closest(key) {
        Some(k) => format!("unknown key; did you mean {k}?"),
        None => format!(
            "unknown key; known keys: {}",
            KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl Config {
    /// Reads a functionConfig object, then applies `key=value` overrides on top. Every
    /// mistake is reported, not just the first: three typos take one run to see, not three.
    /// YAML inside settings (a ConfigMap's `inventory`, `resources`) is read within `limits`.
    pub fn from_parts(
        function_config: Option<&Node>,
        overrides: &[String],
        limits: &Limits,
    ) -> Result<Config, Vec<ConfigError>> {
        let mut config = Config::default();
        let mut errors = Vec::new();
        if let Some(fc) = function_config.filter(|fc| !fc.is_null()) {
            if let Err(e) = config.read_object(fc, limits, &mut errors) {
                errors.push(e);
            }
        }
        for item in overrides {
            match item.split_once('=') {
                Some((key, value)) => {
                    // Said as the setting it is, not as a field of a functionConfig.
                    let error = match config.set("data", key, &Raw::Text(value), limits) {
                        Ok(()) => continue,
                        Err(ConfigError::UnknownKey { .. }) => ConfigError::UnknownSetting {
                            key: key.to_string(),
                        },
                        Err(ConfigError::BadValue { field, message }) => ConfigError::BadSetting {
                            key: field.strip_prefix("data.").unwrap_or(&field).to_string(),
                            message,
                        },
                        Err(other) => other,
                    };
                    errors.push(error);
                }
                None => errors.push(ConfigError::BadOverride(item.clone())),
            }
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }

    /// Whether `seal` can seal at the host's time `now`, with randomness from the host
    /// (`random`): settings given in different places are only checked together here.
    pub fn check_sealing(&self, now: Option<i64>, random: bool) -> Result<(), ConfigError> {
        if !self.seal {
            return Ok(());
        }
        let Some(certificate) = &self.sealing_certificate else {
            return Err(ConfigError::Needs {
                key: "sealingCertificate",
                message: "seal=sealedSecrets seals with the Sealed Secrets controller's certificate: give the PEM `kubeseal --fetch-cert` prints".into(),
            });
        };
        certificate.check_at(now).map_err(|e| ConfigError::Needs {
            key: "sealingCertificate",
            message: e.to_string(),
        })?;
        if !random {
            return Err(ConfigError::Needs {
                key: "seal",
                message: "this host gives the function no randomness, and sealing needs fresh random keys".into(),
            });
        }
        Ok(())
    }

    /// What `seal` seals with, when it is on.
    pub fn sealing(&self) -> Option<crate::seal::Sealing> {
        let certificate = self.sealing_certificate.clone().filter(|_| self.seal)?;
        Some(crate::seal::Sealing {
            certificate,
            scope: self.seal_scope,
        })
    }

    fn read_object(
        &mut self,
        fc: &Node,
        limits: &Limits,
        errors: &mut Vec<ConfigError>,
    ) -> Result<(), ConfigError> {
        let kind = fc.get("kind").and_then(Node::as_str).unwrap_or_default();
        let api_version = fc
            .get("apiVersion")
            .and_then(Node::as_str)
            .unwrap_or_default();
        let section = match (api_version, kind) {
            ("v1", "ConfigMap") => "data",
            (API_VERSION, KIND) => "spec",
            _ => {
                return Err(ConfigError::WrongKind(format!(
                    "{} {}",
                    if api_version.is_empty() {
                        "<no apiVersion>"
                    } else {
                        api_version
                    },
                    if kind.is_empty() { "<no kind>" } else { kind }
                )));
            }
        };
        let Some(node) = fc.get(section).filter(|n| !n.is_null()) else {
            return Ok(());
        };
        let entries = node.as_map().ok_or(ConfigError::NotAMapping(section))?;
        for (key, value) in entries {
            let key = key.as_str().unwrap_or_default();
            let result = if section == "data" {
                // ConfigMap data is all strings; anything else is a malformed ConfigMap.
                match value.as_str() {
                    Some(text) => self.set(section, key, &Raw::Text(text), limits),
                    None => Err(ConfigError::BadValue {
                        field: format!("{section}.{key}"),
                        message: format!(
                            "ConfigMap values must be strings, got {}",
                            value.type_name()
                        ),
                    }),
                }
            } else {
                self.set(section, key, &Raw::Node(value), limits)
            };
            if let Err(e) = result {
                errors.push(e);
            }
        }
        Ok(())
    }

    fn set(
        &mut self,
        prefix: &str,
        key: &str,
        raw: &Raw,
        limits: &Limits,
    ) -> Result<(), ConfigError> {
        let field = format!("{prefix}.{key}");
        let Some(setting) = keys::key(key) else {
            return Err(ConfigError::UnknownKey { field });
        };
        (setting.set)(self, raw, limits).map_err(|finding| ConfigError::BadValue {
            field: format!("{field}{}", finding.field.unwrap_or_default()),
            message: finding.message,
        })
    }

    /// The policy `action: validate` enforces: the one set, with only `argocd-k8s-auth` allowed
    /// to run when no exec commands are listed — and the commands of the `accessProviders` the
    /// settings name, which are the consumer's own.
    pub fn validation_policy(&self) -> Policy {
        let mut policy = self.policy.clone();
        if policy.allowed_exec_commands.is_none() {
            let mut allowed = Policy::validating()
                .allowed_exec_commands
                .unwrap_or_default();
            for p in &self.access_providers {
                if !allowed.contains(&p.command) {
                    allowed.push(p.command.clone());
                }
            }
            policy.allowed_exec_commands = Some(allowed);
        }
        policy
    }

    /// Whether a source reads ClusterProfiles.
    pub fn reads_profiles(&self) -> bool {
        self.sources
            .iter()
            .any(|s| s.kind == sources::Kind::ClusterProfiles)
    }

    /// Whether Secrets in `namespace` are converted.
    pub fn allows(&self, namespace: &str) -> bool {
        self.allowed_namespaces
            .as_ref()
            .is_none_or(|list| list.iter().any(|n| n == namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;
    use yaml::parse_stream;

    /// The config, or its first error.
    fn parse(yaml: &str, overrides: &[&str]) -> Result<Config, ConfigError> {
        parse_all(yaml, overrides).map_err(|mut e| e.remove(0))
    }

    fn parse_all(yaml: &str, overrides: &[&str]) -> Result<Config, Vec<ConfigError>> {
        let docs = parse_stream(yaml, &Limits::default()).expect("yaml");
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Config::from_parts(
            docs.first().map(|d| &d.root),
            &overrides,
            &Limits::default(),
        )
    }

    #[test]
    fn every_mistake_is_reported_at_once() {
        let errors = parse_all(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  namespaceNames: \"true\"\n  mode: fetch\n  shards: many\n",
            &["prune=maybe", "oops"],
        )
        .unwrap_err();
        let fields: Vec<Option<&str>> = errors.iter().map(ConfigError::field).collect();
        assert_eq!(
            fields,
            [
                Some("data.namespaceNames"),
                Some("data.mode"),
                Some("data.shards"),
                None,
                None
            ]
        );
        // A setting given on top is named as the setting, not as a functionConfig field.
        assert_eq!(
            errors[3].to_string(),
            "--set prune: expected true or false, got \"maybe\""
        );
    }

    /// Regression (issue "A house a newcomer can read"): YAML inside a setting was read with
    /// the default limits, whatever limits the caller set.
    #[test]
    fn yaml_inside_settings_is_read_within_the_callers_limits() {
        let deep = format!("{}x{}", "[".repeat(30), "]".repeat(30));
        let fc = format!("apiVersion: v1\nkind: ConfigMap\ndata:\n  resources: '{deep}'\n");
        let docs = parse_stream(&fc, &Limits::default()).expect("yaml");
        let tight = Limits {
            max_depth: 10,
            ..Limits::default()
        };
        let errors = Config::from_parts(Some(&docs[0].root), &[], &tight).unwrap_err();
        assert!(
            errors[0].to_string().contains("deeper than 10"),
            "{}",
            errors[0]
        );
        assert!(Config::from_parts(Some(&docs[0].root), &[], &Limits::default()).is_ok());
    }

    /// The defaults the table documents (help, the book, the playground) are the ones the
    /// function runs with: setting each to its documented default changes nothing.
    #[test]
    fn every_documented_default_is_the_default() {
        let default = format!("{:?}", Config::default());
        for key in KEYS {
            let Some(value) = key.default_value() else {
                continue;
            };
            let set =
                Config::from_parts(None, &[format!("{}={value}", key.name)], &Limits::default())
                    .unwrap_or_else(|e| panic!("{}={value}: {e:?}", key.name));
            assert_eq!(format!("{set:?}"), default, "{} = {value}", key.name);
        }
    }

    /// The sources setting's description names every preset, in the table's order.
    #[test]
    fn the_sources_setting_names_every_preset() {
        let doc = KEYS.iter().find(|k| k.name == "sources").unwrap().doc;
        let names: Vec<&str> = crate::sources::PRESETS.iter().map(|p| p.name).collect();
        assert!(doc.contains(&format!("({})", names.join(", "))), "{doc}");
    }

    #[test]
    fn help_lists_every_setting() {
        let help = settings_help();
        for key in KEYS {
            assert!(help.contains(key.name), "{}", key.name);
        }
    }

    #[test]
    fn config_map_strings_are_parsed_per_key() {
        let c = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  namespacedNames: \"true\"\n  allowedNamespaces: a, b ,\n  mode: pull\n",
            &[],
        )
        .unwrap();
        assert!(c.namespaced_names);
        assert_eq!(c.allowed_namespaces, Some(vec!["a".into(), "b".into()]));
        assert_eq!(c.mode, Mode::Pull);
    }

    #[test]
    fn typed_config_takes_native_values() {
        let c = parse(
            "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nspec:\n  prune: false\n  allowedNamespaces: [x]\n  dataField: data\n",
            &["strict=false"],
        )
        .unwrap();
        assert!(!c.prune && !c.strict);
        assert_eq!(c.allowed_namespaces, Some(vec!["x".into()]));
        assert_eq!(c.data_field, DataField::Data);
    }

    #[test]
    fn max_prune_is_a_count_or_a_percentage() {
        let read = |v: &str| parse("", &[&format!("maxPrune={v}")]).map(|c| c.max_prune);
        assert_eq!(read("5"), Ok(MaxPrune::Count(5)));
        assert_eq!(read("25%"), Ok(MaxPrune::Percent(25)));
        assert_eq!(read(" 100% "), Ok(MaxPrune::Percent(100)));
        for bad in ["0", "0%", "101%", "-1", "ten", "5.5", ""] {
            let err = read(bad).unwrap_err().to_string();
            assert!(
                err.contains("prune=false turns pruning off"),
                "{bad}: {err}"
            );
        }
        let typed = parse(
            "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nspec:\n  maxPrune: 3\n",
            &[],
        )
        .unwrap();
        assert_eq!(typed.max_prune, MaxPrune::Count(3));
        assert_eq!(Config::default().max_prune.to_string(), "10%");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_field() {
        let err = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  namespaceNames: \"true\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("data.namespaceNames"));
        assert_eq!(
            err.to_string(),
            "functionConfig data.namespaceNames: unknown key; did you mean namespacedNames?"
        );
        let err = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  colour: red\n",
            &[],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("known keys: action, argoNamespace"),
            "{err}"
        );
        let err = parse(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  prune: \"yes\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "functionConfig data.prune: expected true or false, got \"yes\""
        );
        let err = parse("apiVersion: v1\nkind: Secret\n", &[]).unwrap_err();
        assert!(matches!(err, ConfigError::WrongKind(_)));
        assert!(parse("", &["argoNamespace=Argo CD"]).is_err());
    }
}
