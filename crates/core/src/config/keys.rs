//! Every setting, once: its key, default, meaning and how its value is read. Parsing, `--help`,
//! the book's settings table (`docs/src/configuration.md`), "did you mean" and the playground's
//! form all read this table, so none of them can drift from the others.

use super::access;
use super::{Config, MaxPrune, Mode, NameFrom, Task};
use crate::convert::argocd::DataField;
use crate::convert::meta::is_dns1123_label;
use crate::fleet::{fields, inventory};
use crate::raw::Raw;
use crate::seal::{Scope, SealingCertificate};
use krm::finding::Finding;
use yaml::Limits;
use yaml::{Node, parse_stream};

/// One setting.
pub struct Key {
    /// The key, as written in a ConfigMap's `data` or a `Capi2Argo`'s `spec`.
    pub name: &'static str,
    /// The default, as a reader would write it (`none` when unset).
    pub default: &'static str,
    /// What it does, in one sentence or two.
    pub doc: &'static str,
    /// The kind of value, for forms: `bool`, `text`, `list`, `map`, `number`, `choice:a|b`, `yaml`,
    /// `pem` (PEM text: several lines).
    pub kind: &'static str,
    pub(super) set: Setter,
}

/// The words a [`Key::default`] uses for "not set": they describe, they are not values.
const UNSET: &[&str] = &["none", "all", "current-context"];

impl Key {
    /// The default as a value the setting takes; `None` when the default is that nothing is set.
    pub fn default_value(&self) -> Option<&'static str> {
        (!UNSET.contains(&self.default)).then_some(self.default)
    }
}

/// Reads a raw value into the config; an `Err` finding's field is the path below the key (for
/// nested settings).
pub(super) type Setter = fn(&mut Config, &Raw, &Limits) -> Result<(), Finding>;

/// A per-cluster field of the config-wide defaults, read as an inventory entry reads it.
fn field(c: &mut Config, name: &str, raw: &Raw) -> Result<(), Finding> {
    match fields::set(&mut c.defaults, name, raw) {
        Some(result) => result.map_err(bad),
        None => Err(bad(format!(
            "{name} is not a field of a cluster's Argo CD Secret"
        ))),
    }
}

/// A problem with the value itself (no path below the key).
fn bad(message: String) -> Finding {
    Finding::error(message)
}

/// Every setting the function reads, in the order the book's settings table lists them.
pub static KEYS: &[Key] = &[
    Key {
        name: "action",
        default: "convert",
        doc: "`validate`: check the Argo CD cluster Secrets in the input against Argo CD's and the policy's rules, change nothing (a kpt validator; `capi2argo validate` on the command line)",
        kind: "choice:convert|validate",
        set: |c, raw, _| {
            let options = [("convert", Task::Convert), ("validate", Task::Validate)];
            c.task = raw.choice(&options).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "argoNamespace",
        default: "argocd",
        doc: "namespace of the generated Secrets",
        kind: "text",
        set: |c, raw, _| {
            let ns = raw.text().map_err(bad)?;
            if !is_dns1123_label(&ns) {
                return Err(bad(format!("{ns:?} is not a valid namespace name")));
            }
            c.argo_namespace = ns;
            Ok(())
        },
    },
    Key {
        name: "namespacedNames",
        default: "false",
        doc: "`true`: Secret `cluster-<ns>-<cluster>`, Argo CD name `<ns>-<cluster>` (needed when two namespaces hold clusters of the same name)",
        kind: "bool",
        set: |c, raw, _| {
            c.namespaced_names = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "allowedNamespaces",
        default: "all",
        doc: "only convert Secrets in these namespaces (comma list in a ConfigMap, list or comma string when typed)",
        kind: "list",
        set: |c, raw, _| {
            let list = raw.list().map_err(bad)?;
            c.allowed_namespaces = (!list.is_empty()).then_some(list);
            Ok(())
        },
    },
    Key {
        name: "context",
        default: "current-context",
        doc: "kubeconfig context to use",
        kind: "text",
        set: |c, raw, _| {
            let ctx = raw.text().map_err(bad)?;
            c.context = (!ctx.is_empty()).then_some(ctx);
            Ok(())
        },
    },
    Key {
        name: "mode",
        default: "push",
        doc: "`pull`: no credentials in `config` (server, CA, TLS server name and proxy only), for the Open Cluster Management pull model",
        kind: "choice:push|pull",
        set: |c, raw, _| {
            c.mode = raw
                .choice(&[("push", Mode::Push), ("pull", Mode::Pull)])
                .map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "credentials",
        default: "admin",
        doc: "what Argo CD logs in with: `admin`, the kubeconfig's own credential; `serviceAccount`, a bound, expiring token of a ServiceAccount in the workload cluster that capi2argo-controller sets up and renews (the Argo CD Secret then holds no client key or certificate of the cluster's)",
        kind: "choice:admin|serviceAccount",
        set: |c, raw, _| {
            let options = [
                ("admin", access::CredentialMode::Admin),
                ("serviceAccount", access::CredentialMode::ServiceAccount),
            ];
            c.access.mode = raw.choice(&options).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "serviceAccount",
        default: "kube-system/argocd-manager",
        doc: "credentials=serviceAccount: the ServiceAccount in each workload cluster, `namespace/name` (both DNS labels); the same name as `argocd cluster add`'s by default: give another where both are used",
        kind: "text",
        set: |c, raw, _| {
            c.access.account = access::parse_account(&raw.text().map_err(bad)?).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "serviceAccountRole",
        default: "admin",
        doc: "credentials=serviceAccount: what the ServiceAccount may do — `admin` (everything, as `argocd cluster add` grants), `namespaced` (a Role in each of the cluster's `namespaces`; the cluster-scoped kinds too where `clusterResources` is true), `impersonate` (read everything and impersonate the ServiceAccounts Argo CD's AppProjects name for the cluster, which it sets up; no write of its own: the word is reserved, no ClusterRole of that name can be meant), or the name of a ClusterRole of yours",
        kind: "text",
        set: |c, raw, _| {
            c.access.role = access::parse_role(&raw.text().map_err(bad)?).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "impersonationRoles",
        default: "none",
        doc: "serviceAccountRole=impersonate: the ClusterRole each AppProject's ServiceAccounts are bound to where they sync (a RoleBinding), per project: a map, or `project=role,…`; a project not named gets `edit`",
        kind: "map",
        set: |c, raw, _| {
            // `project=role,…` as a string of the settings object too, as --set gives it.
            let text = match raw {
                crate::raw::Raw::Node(n) if n.as_str().is_some() => raw.scalar_text(),
                _ => None,
            };
            let roles = match &text {
                Some(text) => crate::raw::Raw::Text(text).map(false),
                None => raw.map(false),
            }
            .map_err(bad)?;
            c.access.impersonation_roles = access::parse_impersonation_roles(roles).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "tokenTTL",
        default: "24h",
        doc: "credentials=serviceAccount: how long a minted token lives (10m to 365d); a new one is minted at 80% of its life",
        kind: "text",
        set: |c, raw, _| {
            let text = raw.scalar_text().unwrap_or_default();
            c.access.ttl = access::parse_ttl(&text).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "removeServiceAccount",
        default: "false",
        doc: "`true`: when a cluster's token Secret goes while its kubeconfig Secret is still converted (back to `credentials: admin`), capi2argo-controller also deletes the ServiceAccount and its RBAC in the workload cluster (each token is revoked on its own either way). A cluster whose kubeconfig Secret is gone cannot be reached, and its tokens expire on their own",
        kind: "bool",
        set: |c, raw, _| {
            c.access.remove_account = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "maxCredentialChanges",
        default: "10%",
        doc: "guard: the most Argo CD Secrets one run may move between `admin` and `serviceAccount` credentials, together with the tokens it rotates on request (`capi2argo.dev/rotate-token`), a count or a percentage of the owned Secrets; one is always allowed. A run that would change more changes none (tokens due for their age are still renewed)",
        kind: "text",
        set: |c, raw, _| {
            let value = raw.scalar_text().unwrap_or_default();
            c.access.max_changes = max_prune(&value).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "nameFrom",
        default: "secret",
        doc: "where the Argo CD cluster `name` comes from: `secret` (the kubeconfig Secret's name without `-kubeconfig`) or `kubeconfig` (the kubeconfig's cluster entry, as CACO names it)",
        kind: "choice:secret|kubeconfig",
        set: |c, raw, _| {
            let options = [
                ("secret", NameFrom::Secret),
                ("kubeconfig", NameFrom::Kubeconfig),
            ];
            c.name_from = raw.choice(&options).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "dataField",
        default: "stringData",
        doc: "`data`: write base64 values under `data`",
        kind: "choice:stringData|data",
        set: |c, raw, _| {
            let options = [
                ("stringData", DataField::StringData),
                ("data", DataField::Data),
            ];
            c.data_field = raw.choice(&options).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "seal",
        default: "none",
        doc: "`sealedSecrets`: write each Argo CD cluster Secret as a Sealed Secrets `SealedSecret` (bitnami.com/v1alpha1) sealed with `sealingCertificate`, and leave out of the output the Secrets of the clusters it read (kubeconfigs, and Cluster API's CA and key Secrets beside them), so that the output holds no credential and can be committed",
        kind: "choice:none|sealedSecrets",
        set: |c, raw, _| {
            c.seal = raw
                .choice(&[("none", false), ("sealedSecrets", true)])
                .map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "sealingCertificate",
        default: "none",
        doc: "the Sealed Secrets controller's certificate, as PEM text (what `kubeseal --fetch-cert` prints; a string in a ConfigMap or `Capi2Argo`); needed by `seal`",
        kind: "pem",
        set: |c, raw, _| {
            let pem = raw.text().map_err(bad)?;
            c.sealing_certificate = if pem.trim().is_empty() {
                None
            } else {
                Some(SealingCertificate::read(&pem).map_err(|e| bad(e.to_string()))?)
            };
            Ok(())
        },
    },
    Key {
        name: "sealScope",
        default: "strict",
        doc: "where a sealed Secret may be opened, as kubeseal's `--scope`: `strict` (its own name and namespace), `namespace-wide`, `cluster-wide`",
        kind: "choice:strict|namespace-wide|cluster-wide",
        set: |c, raw, _| {
            c.seal_scope = raw.choice(&Scope::CHOICES).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "keepKubeconfigSecrets",
        default: "false",
        doc: "with `seal`: `true` writes those Secrets back into the output, as without sealing (they hold each cluster's admin credential and keys in plain text: such an output is not safe to commit)",
        kind: "bool",
        set: |c, raw, _| {
            c.keep_kubeconfig_secrets = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "prune",
        default: "true",
        doc: "drop owned Argo CD Secrets (label `capi-to-argocd/owned: \"true\"`) in the input whose source Secret is gone or no longer converted, within the guards `allowEmpty` and `maxPrune`; an owned Secret whose source failed this time is kept; unowned Secrets are never touched",
        kind: "bool",
        set: |c, raw, _| {
            c.prune = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "allowEmpty",
        default: "false",
        doc: "guard: `true` lets a run prune the owned Secrets of a source when the input holds no kubeconfig Secret of that source at all (an empty or broken input looks like that)",
        kind: "bool",
        set: |c, raw, _| {
            c.allow_empty = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "maxPrune",
        default: "10%",
        doc: "guard: the most owned Secrets one run may prune, a count or a percentage of the owned Secrets in the input; one is always allowed. A run that would prune more prunes none",
        kind: "text",
        set: |c, raw, _| {
            let value = raw.scalar_text().unwrap_or_default();
            c.max_prune = max_prune(&value).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "allowRename",
        default: "false",
        doc: "guard: `true` lets a cluster's Argo CD `name` change (`nameFrom`, a source's clusterName) or its Secret be replaced by one of another name (`namespacedNames`, `argoNamespace`); otherwise the owned Secret is kept as it is",
        kind: "bool",
        set: |c, raw, _| {
            c.allow_rename = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "maxApplicationDeletes",
        default: "10%",
        doc: "guard: the most Applications one ApplicationSet may delete because of one run (its cluster generators drop the Applications of a cluster the run removes, renames or relabels out of their selectors), a count or a percentage of the Applications it has; one is always allowed. A run that would make an ApplicationSet delete more keeps the Secrets that cause it as they are. Judged from the ApplicationSets and Applications in the input (`readApplications` for the controller)",
        kind: "text",
        set: |c, raw, _| {
            let value = raw.scalar_text().unwrap_or_default();
            c.max_application_deletes = limit(&value, "Applications", "").map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "readApplications",
        default: "false",
        doc: "`true`: the controller reads (watches) Argo CD's ApplicationSets and Applications in argoNamespace, so its plans say and `maxApplicationDeletes` guards what they do to Applications (RBAC: list and watch them there); the function reads whatever its input holds, and with `true` warns when that is none",
        kind: "bool",
        set: |c, raw, _| {
            c.read_applications = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "applicationSetPolicy",
        default: "none",
        doc: "the ApplicationSet controller's `--policy` (`applicationsetcontroller.policy`; an `argocd-cmd-params-cm` in the input says it instead): with `create-only` or `create-update` it deletes no Application. Unset: `sync`, and each ApplicationSet's `syncPolicy.applicationsSync` decides",
        kind: "choice:sync|create-only|create-update|create-delete",
        set: |c, raw, _| {
            let word = raw
                .choice(&[
                    ("sync", "sync"),
                    ("create-only", "create-only"),
                    ("create-update", "create-update"),
                    ("create-delete", "create-delete"),
                ])
                .map_err(bad)?;
            c.appset_policy.policy = Some(word.to_string());
            Ok(())
        },
    },
    Key {
        name: "applicationSetPolicyOverride",
        default: "none",
        doc: "the ApplicationSet controller's `--enable-policy-override` (`applicationsetcontroller.enable.policy.override`): whether an ApplicationSet's `syncPolicy.applicationsSync` overrides `applicationSetPolicy`. Unset: only when no `applicationSetPolicy` is set, as the controller defaults it from `argocd-cmd-params-cm` (a policy given as the `--policy` argument instead leaves the override on: say `true` then)",
        kind: "bool",
        set: |c, raw, _| {
            c.appset_policy.allow_override = Some(raw.boolean().map_err(bad)?);
            Ok(())
        },
    },
    Key {
        name: "strict",
        default: "true",
        doc: "`false`: per-Secret errors become warnings and the exit code is 0",
        kind: "bool",
        set: |c, raw, _| {
            c.strict = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "project",
        default: "none",
        doc: "Argo CD project of every cluster (`project` key)",
        kind: "text",
        set: |c, raw, _| field(c, "project", raw),
    },
    Key {
        name: "namespaces",
        default: "none",
        doc: "namespaces Argo CD may deploy to (`namespaces` key, comma-joined); list, or comma list in a ConfigMap",
        kind: "list",
        set: |c, raw, _| field(c, "namespaces", raw),
    },
    Key {
        name: "clusterResources",
        default: "none",
        doc: "`true`: `clusterResources: \"true\"` (cluster-scoped resources allowed despite `namespaces`)",
        kind: "bool",
        set: |c, raw, _| field(c, "clusterResources", raw),
    },
    Key {
        name: "labels",
        default: "none",
        doc: "labels for every Secret: a map, or `k=v,k2=v2` in a ConfigMap",
        kind: "map",
        set: |c, raw, _| field(c, "labels", raw),
    },
    Key {
        name: "annotations",
        default: "none",
        doc: "annotations for every Secret, same forms",
        kind: "map",
        set: |c, raw, _| field(c, "annotations", raw),
    },
    Key {
        name: "shards",
        default: "none",
        doc: "spread clusters over N application-controller shards (`shard` key)",
        kind: "number",
        set: |c, raw, _| {
            c.shards = match raw.scalar_text().as_deref().map(str::parse::<u32>) {
                Some(Ok(0)) => None,
                Some(Ok(n)) => Some(n),
                _ => {
                    return Err(bad(
                        "expected a whole number of shards (0 or absent: no shard field)".into(),
                    ));
                }
            };
            Ok(())
        },
    },
    Key {
        name: "copyClusterLabels",
        default: "false",
        doc: "copy every label of the CAPI `Cluster` (see below)",
        kind: "bool",
        set: |c, raw, _| {
            c.copy_cluster_labels = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "copyClusterAnnotations",
        default: "false",
        doc: "copy every annotation of the CAPI `Cluster`",
        kind: "bool",
        set: |c, raw, _| {
            c.copy_cluster_annotations = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "skipNotReady",
        default: "false",
        doc: "`true`: a Cluster being deleted, whose status says its control plane is not initialised, or whose condition `Available` or `RemoteConnectionProbe` is False, gets no Argo CD Secret this time (an existing one is kept); reported either way",
        kind: "bool",
        set: |c, raw, _| {
            c.skip_not_ready = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "allowedExecCommands",
        default: "none",
        doc: "policy: the exec commands a cluster Secret may run, anything else an error (`awsAuthConfig` runs argocd-k8s-auth); unset: only argocd-k8s-auth, converting and validating alike (what convert writes, validate accepts). Applies to the function's own output too",
        kind: "list",
        set: |c, raw, _| {
            c.policy.allowed_exec_commands = Some(raw.list().map_err(bad)?);
            Ok(())
        },
    },
    Key {
        name: "forbidInsecure",
        default: "false",
        doc: "policy: `insecure: true` (no TLS verification) is an error",
        kind: "bool",
        set: |c, raw, _| {
            c.policy.forbid_insecure = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "leastPrivilege",
        default: "false",
        doc: "policy: `true`: a cluster Secret whose client certificate is in `system:masters` (a cluster admin no RBAC can limit or revoke) is a warning, so a fleet can be audited; `require`: any credential but the strongest (a bound, expiring ServiceAccount token, or an exec login that holds no secret) is an error",
        kind: "choice:false|true|require",
        set: |c, raw, _| {
            use crate::validate::LeastPrivilege;
            let options = [
                ("false", LeastPrivilege::Off),
                ("true", LeastPrivilege::Audit),
                ("require", LeastPrivilege::Require),
            ];
            c.policy.least_privilege = raw.choice(&options).map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "forbidExpiringTokens",
        default: "false",
        doc: "policy: a bearer token that expires by itself (EKS, Google, JWTs with exp) is an error, not a warning",
        kind: "bool",
        set: |c, raw, _| {
            c.policy.forbid_expiring_tokens = raw.boolean().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "expiryWarningDays",
        default: "30",
        doc: "policy: a `certData` or `caData` certificate that expires within this many days is a warning, one that has expired an error (converting, the Secret is then not written and one Argo CD has is kept), with its date; checked against the host's clock",
        kind: "number",
        set: |c, raw, _| {
            c.policy.expiry_days = raw
                .scalar_text()
                .and_then(|t| t.parse::<u32>().ok())
                .ok_or_else(|| bad("expected a whole number of days".into()))?;
            Ok(())
        },
    },
    Key {
        name: "requiredLabels",
        default: "none",
        doc: "policy: labels every cluster Secret must carry",
        kind: "list",
        set: |c, raw, _| {
            c.policy.required_labels = raw.list().map_err(bad)?;
            Ok(())
        },
    },
    Key {
        name: "sources",
        default: "capi",
        doc: "the kinds of kubeconfig Secrets converted, first match wins: presets (capi, vcluster, kamaji, k0smotron, hypershift, crossplane, gardener, labelled, clusterprofile) and custom sources; clusterprofile reads SIG Multicluster's ClusterProfiles rather than Secrets (see below); a comma list of presets or YAML text in a ConfigMap",
        kind: "yaml",
        set: |c, raw, limits| {
            yaml_value(raw, limits, |node| {
                let sources = crate::sources::parse_sources(node)?;
                if !sources.is_empty() {
                    c.sources = sources;
                }
                Ok(())
            })
        },
    },
    Key {
        name: "accessProviders",
        default: "none",
        doc: "the `clusterprofile` source: the consumer's access providers, a list of `{name, execConfig}` (cluster-inventory-api's provider file: `execConfig` as a kubeconfig's exec, `command`, `args`, `env` as name/value, `apiVersion`, `provideClusterInfo`; `profileSourcedCLIArgsPolicy`, `profileSourcedEnvVarsPolicy`), in the order they are preferred; a profile's built-in `argo-cd-builtin-aws|azure|gcp` provider needs none. Their commands are allowed to run where `allowedExecCommands` is unset",
        kind: "yaml",
        set: |c, raw, limits| {
            yaml_value(raw, limits, |node| {
                c.access_providers = crate::profiles::providers::parse(node)?;
                Ok(())
            })
        },
    },
    Key {
        name: "inventory",
        default: "none",
        doc: "layered fleet metadata (see below); typed config, or YAML text in a ConfigMap",
        kind: "yaml",
        set: |c, raw, limits| {
            yaml_value(raw, limits, |node| {
                c.inventory = if node.is_null() {
                    Vec::new()
                } else {
                    inventory::parse_inventory(node)?
                };
                Ok(())
            })
        },
    },
    Key {
        name: "resources",
        default: "none",
        doc: "extra input resources written in the config (a list; a YAML stream in a ConfigMap): converted, not echoed. For kustomize generators",
        kind: "yaml",
        set: |c, raw, limits| {
            let parsed;
            let items: Vec<&Node> = match raw {
                Raw::Node(n) if n.is_null() => Vec::new(),
                Raw::Node(n) => n
                    .as_seq()
                    .ok_or_else(|| {
                        bad(format!(
                            "expected a list of resources, got {}",
                            n.type_name()
                        ))
                    })?
                    .iter()
                    .collect(),
                // In a ConfigMap: YAML text, a stream of resources.
                Raw::Text(t) => {
                    parsed = parse_stream(t, limits).map_err(|e| bad(e.to_string()))?;
                    parsed
                        .iter()
                        .map(|d| &d.root)
                        .filter(|n| !n.is_null())
                        .collect()
                }
            };
            c.resources = items.into_iter().map(|n| n.clone().into_owned()).collect();
            Ok(())
        },
    },
    Key {
        name: "resourceFiles",
        default: "none",
        doc: "files of extra input resources, relative paths inside the working directory (no `..`, no absolute paths); the command-line tool reads them, the WebAssembly builds cannot",
        kind: "list",
        set: |c, raw, _| {
            let files = raw.list().map_err(bad)?;
            if let Some(f) = files.iter().find(|f| !is_plain_relative(f)) {
                return Err(bad(format!(
                    "{f:?}: files must be relative paths inside the working directory"
                )));
            }
            c.resource_files = files;
            Ok(())
        },
    },
];

/// The setting named `name`.
pub fn key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// The closest key to a mistyped one, when it is close enough to be the one meant.
pub fn closest(name: &str) -> Option<&'static str> {
    KEYS.iter()
        .map(|k| {
            (
                edit_distance(&k.name.to_ascii_lowercase(), &name.to_ascii_lowercase()),
                k.name,
            )
        })
        .min()
        .filter(|(d, _)| *d <= 3)
        .map(|(_, k)| k)
}

/// The settings as text for `--help`: key, default, meaning.
pub fn settings_help() -> String {
    let width = KEYS.iter().map(|k| k.name.len()).max().unwrap_or(0);
    let mut out = String::from(
        "Settings (a functionConfig ConfigMap's data or Capi2Argo's spec, --fn-config FILE, or --set key=value):\n",
    );
    for k in KEYS {
        out.push_str(&format!(
            "  {:width$}  {} (default: {})\n",
            k.name,
            k.doc.replace('`', "").replace(" (see below)", ""),
            k.default
        ));
    }
    out
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A YAML value: typed, or YAML text in a ConfigMap (empty text sets nothing).
fn yaml_value(
    raw: &Raw,
    limits: &Limits,
    read: impl FnOnce(&Node) -> Result<(), Finding>,
) -> Result<(), Finding> {
    match raw {
        Raw::Node(node) => read(node),
        Raw::Text(text) => {
            let parsed = parse_stream(text, limits).map_err(|e| bad(e.to_string()))?;
            parsed.first().map_or(Ok(()), |doc| read(&doc.root))
        }
    }
}

/// `maxPrune`: a whole number of Secrets (at least 1), or a percentage (`10%`, 1 to 100).
fn max_prune(value: &str) -> Result<MaxPrune, String> {
    limit(value, "Secrets", "; prune=false turns pruning off")
}

/// A guard's limit: a count of `unit` (1 or more) or a percentage.
fn limit(value: &str, unit: &str, hint: &str) -> Result<MaxPrune, String> {
    let expected = || {
        format!(
            "expected a number of {unit} (1 or more) or a percentage (1% to 100%), got {value:?}{hint}"
        )
    };
    let (digits, percent) = match value.strip_suffix('%') {
        Some(digits) => (digits.trim(), true),
        None => (value, false),
    };
    let n: usize = digits.parse().map_err(|_| expected())?;
    match (percent, n) {
        (_, 0) => Err(expected()),
        (true, 1..=100) => Ok(MaxPrune::Percent(n)),
        (true, _) => Err(expected()),
        (false, n) => Ok(MaxPrune::Count(n)),
    }
}

/// A relative path without `..`: a package may only point at its own files.
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path.split('/').all(|part| part != "..")
}
