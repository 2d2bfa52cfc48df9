//! Where kubeconfig Secrets come from: Cluster API's shape (the default source) and the other
//! platforms that write a cluster's kubeconfig into a Secret, each a named set of rules: which
//! Secret names, labels and types, which data key, and where the cluster's name comes from.

use crate::krm::finding::Finding;
use crate::krm::object::Object;
use crate::yaml::{Node, Value};

/// The label Cluster API puts on every kubeconfig Secret it writes.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
const CAPI_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

/// The label recording which source an Argo CD Secret came from (absent: `capi`).
pub const SOURCE_LABEL: &str = "capi2argo.dev/source";

/// An annotation on a kubeconfig Secret that replaces the kubeconfig's server (for kubeconfigs
/// that point at an address Argo CD cannot reach, such as vcluster's `https://localhost:8443`).
pub const SERVER_ANNOTATION: &str = "capi2argo.dev/server";

/// Which of a cluster's kubeconfig Secrets this is (Cluster API providers write two for some
/// managed clusters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `<cluster>-kubeconfig`, or the one Secret a non-CAPI source writes.
    Plain,
    /// `<cluster>-user-kubeconfig` / `<cluster>-kubeconfig-user`: long-lived provider logins (EKS, GKE, AKS).
    User,
}

/// Which Secret names a source takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// Names ending in this; the cluster is what comes before it.
    Suffix(String),
    /// Names starting with this; the cluster is what comes after it.
    Prefix(String),
    /// Any name; the cluster is the whole name.
    Any,
}

/// Where the cluster's name comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterName {
    /// The Secret's name, without the source's prefix or suffix.
    SecretName,
    /// A label of the Secret.
    Label(String),
    /// The kubeconfig's cluster entry.
    Kubeconfig,
}

/// One source of kubeconfig Secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `capi`, a preset's name or a custom source's; recorded on its Argo CD Secrets.
    pub name: String,
    pub names: Names,
    /// Data keys that may hold the kubeconfig, the first present wins.
    pub keys: Vec<String>,
    pub cluster_name: ClusterName,
    /// Labels the Secret must carry, each with the value it must have (`None`: any value).
    pub labels: Vec<(String, Option<String>)>,
    /// Secret types taken (`""` for none set); `None`: any.
    pub types: Option<Vec<String>>,
    /// The kind of the Secret's controller owner, when the source is told apart by it.
    pub owner_kind: Option<String>,
    /// Cluster API's rules: provider user kubeconfigs, the `Cluster` object's metadata.
    pub capi: bool,
}

/// The presets, each checked against the Secret its project's own code writes (see the README's
/// table of sources and the golden cases named `source-*`).
pub const PRESETS: &[&str] = &[
    "capi",
    "vcluster",
    "kamaji",
    "k0smotron",
    "hypershift",
    "crossplane",
    "gardener",
    "labelled",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn label(key: &str, value: Option<&str>) -> (String, Option<String>) {
    (key.to_string(), value.map(String::from))
}

/// A preset by name.
pub fn preset(name: &str) -> Option<Source> {
    let base = |names: Names, keys: &[&str]| Source {
        name: name.to_string(),
        names,
        keys: strings(keys),
        cluster_name: ClusterName::SecretName,
        labels: Vec::new(),
        types: None,
        owner_kind: None,
        capi: false,
    };
    Some(match name {
        // cluster-api util/kubeconfig/kubeconfig.go, util/secret/consts.go.
        "capi" => Source {
            labels: vec![label(CLUSTER_NAME_LABEL, None)],
            types: Some(strings(&[CAPI_SECRET_TYPE, "Opaque", ""])),
            capi: true,
            ..base(Names::Suffix("-kubeconfig".into()), &["value"])
        },
        // loft-sh/vcluster pkg/util/kubeconfig/kubeconfig.go: vc-<name>, key config, labels
        // app=vcluster and vcluster-name=<name>.
        "vcluster" => Source {
            labels: vec![label("app", Some("vcluster")), label("vcluster-name", None)],
            cluster_name: ClusterName::Label("vcluster-name".into()),
            ..base(Names::Prefix("vc-".into()), &["config"])
        },
        // clastix/kamaji internal/resources/kubeconfig.go: <tcp>-admin-kubeconfig, keys
        // admin.conf (the external endpoint) and admin.svc (the in-cluster Service).
        "kamaji" => Source {
            labels: vec![
                label("kamaji.clastix.io/component", Some("admin-kubeconfig")),
                label("kamaji.clastix.io/name", None),
            ],
            cluster_name: ClusterName::Label("kamaji.clastix.io/name".into()),
            ..base(
                Names::Suffix("-admin-kubeconfig".into()),
                &["admin.conf", "admin.svc"],
            )
        },
        // k0sproject/k0smotron internal/controller/k0smotron.io/k0smotroncluster_kubeconfig.go:
        // <name>-kubeconfig, key value, labels app=k0smotron and cluster=<name>.
        "k0smotron" => Source {
            labels: vec![
                label("app", Some("k0smotron")),
                label("app.kubernetes.io/component", Some("kubeconfig")),
                label("cluster", None),
            ],
            cluster_name: ClusterName::Label("cluster".into()),
            types: Some(strings(&[CAPI_SECRET_TYPE])),
            ..base(Names::Suffix("-kubeconfig".into()), &["value"])
        },
        // openshift/hypershift hypershift-operator/controllers/manifests/manifests.go:
        // <hostedcluster>-admin-kubeconfig, key kubeconfig, owned by the HostedCluster.
        "hypershift" => Source {
            owner_kind: Some("HostedCluster".into()),
            types: Some(strings(&["Opaque", ""])),
            ..base(Names::Suffix("-admin-kubeconfig".into()), &["kubeconfig"])
        },
        // crossplane-runtime: connection Secrets, type connection.crossplane.io/v1alpha1, key
        // kubeconfig; the name is the user's choice.
        "crossplane" => Source {
            types: Some(strings(&["connection.crossplane.io/v1alpha1"])),
            ..base(Names::Any, &["kubeconfig"])
        },
        // gardener (before v1.114): <shoot>.kubeconfig, key kubeconfig, label
        // gardener.cloud/role=kubeconfig.
        "gardener" => Source {
            labels: vec![label("gardener.cloud/role", Some("kubeconfig"))],
            ..base(Names::Suffix(".kubeconfig".into()), &["kubeconfig"])
        },
        // Any Secret a person labels capi2argo.dev/kubeconfig=true, kubeconfig under key kubeconfig.
        "labelled" => Source {
            labels: vec![label("capi2argo.dev/kubeconfig", Some("true"))],
            ..base(Names::Any, &["kubeconfig"])
        },
        _ => return None,
    })
}

/// Splits a CAPI Secret name into cluster name and variant.
pub fn capi_secret_name(name: &str) -> Option<(&str, Variant)> {
    let (cluster, variant) = if let Some(c) = name.strip_suffix("-user-kubeconfig") {
        (c, Variant::User)
    } else if let Some(c) = name.strip_suffix("-kubeconfig-user") {
        (c, Variant::User)
    } else {
        (name.strip_suffix("-kubeconfig")?, Variant::Plain)
    };
    (!cluster.is_empty()).then_some((cluster, variant))
}

impl Source {
    /// The cluster part of a Secret name this source takes, and its variant.
    fn split<'n>(&self, name: &'n str) -> Option<(&'n str, Variant)> {
        if self.capi {
            return capi_secret_name(name);
        }
        let cluster = match &self.names {
            Names::Suffix(s) => name.strip_suffix(s.as_str())?,
            Names::Prefix(p) => name.strip_prefix(p.as_str())?,
            Names::Any => name,
        };
        (!cluster.is_empty()).then_some((cluster, Variant::Plain))
    }

    /// Whether a Secret of this name would be this source's (for reading its metadata).
    pub fn names_it(&self, name: &str) -> bool {
        self.split(name).is_some()
    }

    /// Whether the Secret is this source's: its cluster name and variant; `Err` says why one
    /// that looks like it is not converted; `Ok(None)` for anything else.
    pub fn take(&self, object: Object) -> Result<Option<(String, Variant)>, Finding> {
        let name = object.name().unwrap_or_default();
        let Some((cluster, variant)) = self.split(name) else {
            if self.capi
                && name.contains("kubeconfig")
                && object.label(CLUSTER_NAME_LABEL).is_some()
            {
                return Err(Finding::info(format!(
                    "not converted: the name ends in none of -kubeconfig, -user-kubeconfig, -kubeconfig-user (cluster {})",
                    object.label(CLUSTER_NAME_LABEL).unwrap_or_default()
                ))
                .at("metadata.name"));
            }
            return Ok(None);
        };
        for (key, value) in &self.labels {
            let found = object.label(key);
            let ok = match value {
                None => found.is_some(),
                Some(v) => found == Some(v.as_str()),
            };
            if ok {
                continue;
            }
            // Only Cluster API's shape is common enough that a near miss deserves a word.
            if self.capi {
                return Err(Finding::info(format!(
                    "not converted: no {CLUSTER_NAME_LABEL} label (Cluster API sets it on every kubeconfig Secret it writes)"
                ))
                .at("metadata.labels"));
            }
            return Ok(None);
        }
        if let Some(types) = &self.types {
            let kind = object
                .node
                .get("type")
                .filter(|t| !t.is_null())
                .and_then(|t| t.scalar())
                .map(|s| s.text.to_string())
                .unwrap_or_default();
            if !types.contains(&kind) {
                if self.capi {
                    return Err(Finding::info(format!(
                        "not converted: type {kind} is not a kubeconfig Secret's ({CAPI_SECRET_TYPE} or Opaque)"
                    ))
                    .at("type"));
                }
                return Ok(None);
            }
        }
        // Platforms keep other things in Secrets named like these (vcluster's own configuration
        // sits in `vc-config-<name>`): without the kubeconfig key, a Secret is not this source's.
        if !self.capi
            && !self.keys.iter().any(|key| {
                ["data", "stringData"]
                    .iter()
                    .any(|section| object.node.path(&[section, key]).is_some())
            })
        {
            return Ok(None);
        }
        if let Some(kind) = &self.owner_kind {
            let owned = object
                .node
                .path(&["metadata", "ownerReferences"])
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .any(|o| o.get("kind").and_then(Node::as_str) == Some(kind.as_str()));
            if !owned {
                return Ok(None);
            }
        }
        let cluster = match &self.cluster_name {
            ClusterName::Label(key) => object.label(key).unwrap_or(cluster).to_string(),
            ClusterName::SecretName | ClusterName::Kubeconfig => cluster.to_string(),
        };
        Ok(Some((cluster, variant)))
    }
}

/// A parse problem: the path below the `sources` key, and what is wrong.
fn problem(path: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding::error(message).at(path)
}

/// Reads `sources`: a list of preset names or source definitions (a comma list of presets in a
/// ConfigMap). Empty means the default, `capi` alone.
pub fn parse_sources(node: &Node) -> Result<Vec<Source>, Finding> {
    let entries: Vec<&Node> = match &node.value {
        Value::Seq(items) => items.iter().collect(),
        _ if node.is_null() => Vec::new(),
        _ if node.as_str().is_some() => vec![node],
        _ => {
            return Err(problem(
                "",
                format!("expected a list of sources, got {}", node.type_name()),
            ));
        }
    };
    let mut sources: Vec<Source> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = |f: Finding| f.under(&format!("[{i}]"));
        if let Some(text) = entry.as_str() {
            for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                sources.push(preset(name).ok_or_else(|| at(unknown_preset(name)))?);
            }
            continue;
        }
        sources.push(parse_source(entry).map_err(at)?);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = sources.iter().find(|s| !seen.insert(s.name.clone())) {
        return Err(problem(
            "",
            format!("source {:?} is listed twice", dup.name),
        ));
    }
    Ok(sources)
}

fn unknown_preset(name: &str) -> Finding {
    Finding::error(format!(
        "unknown source {name:?}; presets: {}",
        PRESETS.join(", ")
    ))
}

/// One source definition: `{preset: kamaji, key: admin.svc}` or a custom source.
fn parse_source(node: &Node) -> Result<Source, Finding> {
    let Some(entries) = node.as_map() else {
        return Err(problem(
            "",
            format!(
                "expected a preset name or a mapping, got {}",
                node.type_name()
            ),
        ));
    };
    let text = |key: &str| -> Result<Option<String>, Finding> {
        match node.get(key).filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .filter(|s| !s.is_empty())
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| problem(format!(".{key}"), "expected a non-empty string")),
        }
    };
    let mut source = match text("preset")? {
        Some(name) => preset(&name).ok_or_else(|| unknown_preset(&name).under(".preset"))?,
        None => {
            let name = text("name")?.ok_or_else(|| {
                problem(
                    "",
                    "a custom source needs a name (or preset: one of the presets)",
                )
            })?;
            if preset(&name).is_some() {
                return Err(problem(
                    ".name",
                    "is a preset's name: use preset: to adjust a preset",
                ));
            }
            Source {
                name,
                names: Names::Any,
                keys: vec!["kubeconfig".into()],
                cluster_name: ClusterName::SecretName,
                labels: Vec::new(),
                types: None,
                owner_kind: None,
                capi: false,
            }
        }
    };
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        match key {
            "preset" | "name" => {}
            "suffix" | "prefix" if source.capi => {
                return Err(problem(
                    format!(".{key}"),
                    "the capi source's names are Cluster API's",
                ));
            }
            "suffix" => source.names = Names::Suffix(text("suffix")?.unwrap_or_default()),
            "prefix" => source.names = Names::Prefix(text("prefix")?.unwrap_or_default()),
            "key" => source.keys = vec![text("key")?.unwrap_or_default()],
            "clusterName" => {
                let value = text("clusterName")?.unwrap_or_default();
                source.cluster_name = match value.as_str() {
                    "secret" => ClusterName::SecretName,
                    "kubeconfig" => ClusterName::Kubeconfig,
                    other => match other.strip_prefix("label:").filter(|l| !l.is_empty()) {
                        Some(l) => ClusterName::Label(l.to_string()),
                        None => {
                            return Err(problem(
                                ".clusterName",
                                "expected secret, kubeconfig or label:<key>",
                            ));
                        }
                    },
                };
            }
            "labels" => {
                let Some(map) = value.as_map() else {
                    return Err(problem(
                        ".labels",
                        "expected a mapping of label to value (\"\" for any value)",
                    ));
                };
                source.labels = map
                    .iter()
                    .map(|(k, v)| {
                        let k = k.as_str().unwrap_or_default().to_string();
                        let v = v.as_str().filter(|s| !s.is_empty()).map(String::from);
                        (k, v)
                    })
                    .collect();
            }
            "type" => source.types = Some(vec![text("type")?.unwrap_or_default()]),
            other => {
                return Err(problem(
                    format!(".{other}"),
                    "unknown key; a source has preset or name, suffix or prefix, key, clusterName, labels, type",
                ));
            }
        }
    }
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::yaml::parse_stream;

    fn parse(yaml: &str) -> Result<Vec<Source>, Finding> {
        let docs = parse_stream(yaml, &Limits::default()).expect("yaml");
        parse_sources(&docs[0].root)
    }

    #[test]
    fn presets_by_name_comma_list_and_custom() {
        let sources = parse("capi, vcluster").unwrap();
        assert_eq!(sources.len(), 2);
        assert!(sources[0].capi);
        let sources = parse("- kamaji\n- {preset: kamaji, key: admin.svc}\n").unwrap_err();
        assert!(sources.message.contains("twice"), "{sources:?}");
        let custom = parse(
            "- name: platform\n  suffix: -access\n  key: kubeconfig\n  clusterName: label:platform.example.com/cluster\n  labels: {platform.example.com/kind: cluster}\n",
        )
        .unwrap();
        assert_eq!(custom[0].names, Names::Suffix("-access".into()));
        assert_eq!(
            custom[0].cluster_name,
            ClusterName::Label("platform.example.com/cluster".into())
        );
    }

    #[test]
    fn mistakes_name_their_path() {
        let err = parse("- capi\n- vclustr\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("[1]"));
        assert!(err.message.contains("presets: capi"), "{err:?}");
        let err = parse("- name: x\n  colour: red\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("[0].colour"));
        let err = parse("- {preset: capi, suffix: -x}\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("[0].suffix"));
    }

    #[test]
    fn capi_names_and_variants() {
        assert_eq!(
            capi_secret_name("a-kubeconfig"),
            Some(("a", Variant::Plain))
        );
        assert_eq!(
            capi_secret_name("a-user-kubeconfig"),
            Some(("a", Variant::User))
        );
        assert_eq!(
            capi_secret_name("a-kubeconfig-user"),
            Some(("a", Variant::User))
        );
        assert_eq!(capi_secret_name("-kubeconfig"), None);
    }
}
