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

/// Which of a cluster's kubeconfig Secrets this is: a platform may write several for one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `<cluster>-kubeconfig`, or the Secret a platform writes for the cluster.
    Plain,
    /// `<cluster>-user-kubeconfig` / `<cluster>-kubeconfig-user`: long-lived provider logins (EKS, GKE, AKS).
    User,
    /// Another Secret of the same cluster that only stands in when its main one cannot be
    /// converted (HyperShift's `<hc>-custom-admin-kubeconfig` beside `<hc>-admin-kubeconfig`).
    Sibling,
}

/// Which Secret names a shape takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// Names ending in this; the cluster is what comes before it.
    Suffix(String),
    /// Names starting with this; the cluster is what comes after it.
    Prefix(String),
    /// Any name; the cluster is the whole name.
    Any,
}

/// One way to find the cluster's name; a source tries its rules in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterName {
    /// The Secret's name, without the shape's prefix or suffix.
    SecretName,
    /// A label of the Secret.
    Label(String),
    /// The name of the Secret's owner of this kind (an ownerReference).
    Owner(String),
    /// The kubeconfig's cluster entry.
    Kubeconfig,
}

/// One shape of Secret a platform has written, in some of its releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The releases that write it, as the book's table of sources says (empty for custom sources).
    pub releases: &'static str,
    pub names: Names,
    /// Labels the Secret must carry, each with the value it must have (`None`: any value).
    pub labels: Vec<(String, Option<String>)>,
    /// Secret types taken (`""` for none set); `None`: any.
    pub types: Option<Vec<String>>,
    /// An ownerReference the Secret must carry: its API group (any when `None`) and kind.
    pub owner: Option<(Option<String>, String)>,
    /// The owner's name is the cluster part of the Secret's name (`<owner>-admin-kubeconfig`).
    pub named_after_owner: bool,
    /// Data keys that must all be there: a set only that platform writes.
    pub key_set: Vec<String>,
    /// Its labels say "a kubeconfig Secret" on their own: such a Secret without the kubeconfig
    /// key is a near miss worth a warning (other labels are shared with the platform's other
    /// Secrets, which are nobody's concern).
    pub labels_mark_it: bool,
    pub variant: Variant,
}

/// One source of kubeconfig Secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `capi`, a preset's name or a custom source's; recorded on its Argo CD Secrets.
    pub name: String,
    /// The shapes of Secret it takes, the first that fits wins.
    pub shapes: Vec<Shape>,
    /// Data keys that may hold the kubeconfig, the first present wins.
    pub keys: Vec<String>,
    /// Where the cluster's name comes from: the first rule that gives one.
    pub cluster_name: Vec<ClusterName>,
    /// Cluster API's rules: provider user kubeconfigs, the `Cluster` object's metadata.
    pub capi: bool,
}

/// A Secret a source takes: the cluster's name, which of its Secrets this is, and the shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub cluster: String,
    pub variant: Variant,
    pub releases: &'static str,
}

/// The presets, each checked against the Secrets its project's own code writes, release by
/// release (see the table of sources in docs/src/sources.md and the golden cases named `source-*`).
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

/// HyperShift's label on the kubeconfig Secrets of a hosted control plane's own namespace
/// (control-plane-operator `manifests/kas.go`, `KubeconfigScopeLabel`): the one labelled `capi`
/// is for its own Cluster API controllers, at `https://kube-apiserver:6443`.
pub const HYPERSHIFT_SCOPE_LABEL: &str = "hypershift.openshift.io/kubeconfig";

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn label(key: &str, value: Option<&str>) -> (String, Option<String>) {
    (key.to_string(), value.map(String::from))
}

fn shape(releases: &'static str, names: Names) -> Shape {
    Shape {
        releases,
        names,
        labels: Vec::new(),
        types: None,
        owner: None,
        named_after_owner: false,
        key_set: Vec::new(),
        labels_mark_it: false,
        variant: Variant::Plain,
    }
}

fn owner(group: &str, kind: &str) -> Option<(Option<String>, String)> {
    Some((Some(group.to_string()), kind.to_string()))
}

/// A preset by name.
pub fn preset(name: &str) -> Option<Source> {
    let source = |shapes: Vec<Shape>, keys: &[&str], cluster_name: Vec<ClusterName>| Source {
        name: name.to_string(),
        shapes,
        keys: strings(keys),
        cluster_name,
        capi: false,
    };
    let suffix = |s: &str| Names::Suffix(s.to_string());
    Some(match name {
        // cluster-api util/kubeconfig/kubeconfig.go, util/secret/consts.go: the same Secret from
        // v1.5 to v1.12 (only its owner's apiVersion moved to v1beta2 in v1.11).
        "capi" => Source {
            capi: true,
            ..source(
                vec![Shape {
                    labels: vec![label(CLUSTER_NAME_LABEL, None)],
                    types: Some(strings(&[CAPI_SECRET_TYPE, "Opaque", ""])),
                    ..shape("v1.5 to v1.12", suffix("-kubeconfig"))
                }],
                &["value"],
                vec![ClusterName::SecretName],
            )
        },
        // loft-sh/vcluster pkg/util/kubeconfig/kubeconfig.go: `vc-<name>` and the
        // exportKubeConfig.additionalSecrets, key `config` beside `certificate-authority`,
        // `client-certificate`, `client-key`, `token` (since 7fce43f). Labels `app: vcluster`,
        // `vcluster-name` since v0.24.0 (b2f5772), set only when the Secret is created, so an
        // installation upgraded from an older release keeps its Secret unlabelled.
        "vcluster" => source(
            vec![
                Shape {
                    labels: vec![label("app", Some("vcluster")), label("vcluster-name", None)],
                    ..shape(
                        "v0.24.0 and later: vc-<name> and exportKubeConfig.additionalSecrets",
                        Names::Any,
                    )
                },
                Shape {
                    key_set: strings(&[
                        "config",
                        "certificate-authority",
                        "client-certificate",
                        "client-key",
                    ]),
                    ..shape(
                        "v0.20 to v0.23, and later releases upgraded from them",
                        Names::Prefix("vc-".into()),
                    )
                },
                Shape {
                    key_set: strings(&[
                        "config",
                        "certificate-authority",
                        "client-certificate",
                        "client-key",
                        "token",
                    ]),
                    ..shape("v0.20 to v0.23: exportKubeConfig.secret", Names::Any)
                },
            ],
            &["config"],
            vec![
                ClusterName::Label("vcluster-name".into()),
                ClusterName::Owner("Service".into()),
                ClusterName::SecretName,
            ],
        ),
        // clastix/kamaji internal/resources/kubeconfig.go: <tcp>-admin-kubeconfig, labelled since
        // the first release (432c50b), keys admin.conf (the advertised endpoint), super-admin.conf
        // (v0.4.0), admin.svc (the in-cluster Service, v0.4.1).
        "kamaji" => source(
            vec![Shape {
                labels: vec![
                    label("kamaji.clastix.io/component", Some("admin-kubeconfig")),
                    label("kamaji.clastix.io/name", None),
                ],
                labels_mark_it: true,
                ..shape("every release", suffix("-admin-kubeconfig"))
            }],
            &["admin.conf", "admin.svc"],
            vec![ClusterName::Label("kamaji.clastix.io/name".into())],
        ),
        // k0sproject/k0smotron internal/controller/k0smotron.io/k0smotroncluster_kubeconfig.go:
        // <name>-kubeconfig, key value, type cluster.x-k8s.io/secret (since v0.6.0, 8fc605f),
        // labels app=k0smotron and cluster=<name>, app.kubernetes.io/component=kubeconfig since
        // v1.10.3 (f67271b); owned by the k0smotron.io Cluster, whose name it carries.
        "k0smotron" => {
            let base = || Shape {
                types: Some(strings(&[CAPI_SECRET_TYPE])),
                ..shape("", suffix("-kubeconfig"))
            };
            source(
                vec![
                    Shape {
                        labels: vec![
                            label("app", Some("k0smotron")),
                            label("app.kubernetes.io/component", Some("kubeconfig")),
                            label("cluster", None),
                        ],
                        labels_mark_it: true,
                        releases: "v1.10.3 and later",
                        ..base()
                    },
                    Shape {
                        labels: vec![label("app", Some("k0smotron")), label("cluster", None)],
                        owner: owner("k0smotron.io", "Cluster"),
                        named_after_owner: true,
                        releases: "v0.6.0 to v1.10.2 (v2 keeps such a Secret until its certificate rotates)",
                        ..base()
                    },
                ],
                &["value"],
                vec![ClusterName::Label("cluster".into())],
            )
        }
        // openshift/hypershift hypershift-operator/controllers/manifests/manifests.go and
        // hostedcluster_controller.go: <hc>-admin-kubeconfig, key kubeconfig, owned by the
        // HostedCluster; <hc>-custom-admin-kubeconfig beside it when kubeAPIServerDNSName is set
        // (v0.1.58, 712c702), a sibling of the same cluster.
        "hypershift" => {
            let owned = |releases, suffix_text: &str, variant| Shape {
                owner: owner("hypershift.openshift.io", "HostedCluster"),
                named_after_owner: true,
                types: Some(strings(&["Opaque", ""])),
                variant,
                ..shape(releases, suffix(suffix_text))
            };
            source(
                vec![
                    owned(
                        "v0.1.58 and later, with kubeAPIServerDNSName",
                        "-custom-admin-kubeconfig",
                        Variant::Sibling,
                    ),
                    owned("every release", "-admin-kubeconfig", Variant::Plain),
                ],
                &["kubeconfig"],
                vec![
                    ClusterName::Owner("HostedCluster".into()),
                    ClusterName::SecretName,
                ],
            )
        }
        // crossplane-runtime pkg/resource/resource.go (SecretTypeConnection) and the connection
        // publishers of managed resources, composites and claims: the name is the user's (or the
        // composite's UID), key kubeconfig.
        "crossplane" => source(
            vec![Shape {
                types: Some(strings(&[CROSSPLANE_SECRET_TYPE])),
                ..shape("every release", Names::Any)
            }],
            &["kubeconfig"],
            vec![ClusterName::SecretName],
        ),
        // gardener pkg/gardenlet/operation/botanist/secrets.go before v1.114 (3b181ba stopped
        // writing it): <shoot>.kubeconfig, key kubeconfig, label gardener.cloud/role=kubeconfig.
        "gardener" => source(
            vec![Shape {
                labels: vec![label("gardener.cloud/role", Some("kubeconfig"))],
                labels_mark_it: true,
                ..shape("v1.113 and earlier", suffix(".kubeconfig"))
            }],
            &["kubeconfig"],
            vec![ClusterName::SecretName],
        ),
        // Any Secret a person labels capi2argo.dev/kubeconfig=true, kubeconfig under key kubeconfig.
        "labelled" => source(
            vec![Shape {
                labels: vec![label("capi2argo.dev/kubeconfig", Some("true"))],
                labels_mark_it: true,
                ..shape("", Names::Any)
            }],
            &["kubeconfig"],
            vec![ClusterName::SecretName],
        ),
        _ => return None,
    })
}

/// Crossplane's connection Secrets' type.
pub const CROSSPLANE_SECRET_TYPE: &str = "connection.crossplane.io/v1alpha1";

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

/// The name of the Secret's ownerReference of `kind` (of `group`, when given).
fn owner_name<'n>(object: Object<'n, '_>, group: Option<&str>, kind: &str) -> Option<&'n str> {
    object
        .node
        .path(&["metadata", "ownerReferences"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .find(|o| {
            o.get("kind").and_then(Node::as_str) == Some(kind)
                && group.is_none_or(|g| {
                    o.get("apiVersion")
                        .and_then(Node::as_str)
                        .and_then(|v| v.split_once('/'))
                        .is_some_and(|(have, _)| have == g)
                })
        })
        .and_then(|o| o.get("name").and_then(Node::as_str))
}

/// Whether the Secret holds `key` under `data` or `stringData`.
fn has_key(object: Object, key: &str) -> bool {
    ["data", "stringData"]
        .iter()
        .any(|section| object.node.path(&[section, key]).is_some())
}

/// The keys a Secret holds, for messages.
fn keys_held<'n>(object: Object<'n, '_>) -> Vec<&'n str> {
    ["data", "stringData"]
        .iter()
        .filter_map(|section| object.node.get(section)?.as_map())
        .flatten()
        .filter_map(|(k, _)| k.as_str())
        .collect()
}

impl Shape {
    /// The cluster part of a Secret name this shape takes.
    fn split<'n>(&self, name: &'n str) -> Option<&'n str> {
        let cluster = match &self.names {
            Names::Suffix(s) => name.strip_suffix(s.as_str())?,
            Names::Prefix(p) => name.strip_prefix(p.as_str())?,
            Names::Any => name,
        };
        (!cluster.is_empty()).then_some(cluster)
    }

    /// Whether the Secret's labels, type, owner and key set are this shape's.
    fn fits(&self, object: Object, part: &str) -> bool {
        let labels = self.labels.iter().all(|(key, value)| {
            let found = object.label(key);
            match value {
                None => found.is_some(),
                Some(v) => found == Some(v.as_str()),
            }
        });
        let kind = object
            .node
            .get("type")
            .filter(|t| !t.is_null())
            .and_then(|t| t.scalar())
            .map(|s| s.text.to_string())
            .unwrap_or_default();
        let typed = self
            .types
            .as_ref()
            .is_none_or(|types| types.contains(&kind));
        let owned = self.owner.as_ref().is_none_or(|(group, kind)| {
            match owner_name(object, group.as_deref(), kind) {
                Some(name) => !self.named_after_owner || name == part,
                None => false,
            }
        });
        labels && typed && owned && self.key_set.iter().all(|k| has_key(object, k))
    }
}

impl Source {
    /// Whether a Secret of this name would be this source's (for reading its metadata).
    pub fn names_it(&self, name: &str) -> bool {
        if self.capi {
            return capi_secret_name(name).is_some();
        }
        self.shapes.iter().any(|s| s.split(name).is_some())
    }

    /// The Argo CD cluster's name is the kubeconfig's cluster entry.
    pub fn names_from_kubeconfig(&self) -> bool {
        self.cluster_name.first() == Some(&ClusterName::Kubeconfig)
    }

    /// Whether the Secret is this source's, and as which cluster; `Err` says why one that looks
    /// like it is not converted (an info, or a warning when only the kubeconfig key is
    /// missing from a Secret whose labels name it a kubeconfig Secret); `Ok(None)` for anything else.
    pub fn take(&self, object: Object) -> Result<Option<Taken>, Finding> {
        if self.capi {
            return self.take_capi(object);
        }
        let name = object.name().unwrap_or_default();
        let mut near_miss = None;
        for shape in &self.shapes {
            let Some(part) = shape.split(name) else {
                continue;
            };
            if !shape.fits(object, part) {
                continue;
            }
            if !self.keys.iter().any(|k| has_key(object, k)) {
                // Platforms keep other things in Secrets named and labelled like these
                // (vcluster's `<name>-certs`): only labels that name a kubeconfig deserve a word.
                if shape.labels_mark_it && !shape.labels.is_empty() {
                    near_miss.get_or_insert_with(|| self.missing_key(object, shape));
                }
                continue;
            }
            let cluster = self
                .cluster_name
                .iter()
                .find_map(|rule| match rule {
                    ClusterName::Label(key) => object.label(key).map(String::from),
                    ClusterName::Owner(kind) => owner_name(object, None, kind).map(String::from),
                    ClusterName::SecretName | ClusterName::Kubeconfig => Some(part.to_string()),
                })
                .unwrap_or_else(|| part.to_string());
            return Ok(Some(Taken {
                cluster,
                variant: shape.variant,
                releases: shape.releases,
            }));
        }
        near_miss.map_or(Ok(None), Err)
    }

    /// The warning for a Secret this source would take, but for its kubeconfig key.
    fn missing_key(&self, object: Object, shape: &Shape) -> Finding {
        let labels: Vec<String> = shape
            .labels
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect();
        let held = keys_held(object);
        let has = if held.is_empty() {
            "it holds no data".to_string()
        } else {
            format!("it holds {}", held.join(", "))
        };
        Finding::warning(format!(
            "not converted: labelled {} for the {} source, but the kubeconfig is not under data.{} ({has}); move it there, or give the source the key: {{preset: {}, key: <key>}}",
            labels.join(", "),
            self.name,
            self.keys.join(" or data."),
            self.name
        ))
        .at(format!("data.{}", self.keys[0]))
    }

    /// Cluster API's own rules: the name suffix and its user variants, the label, the type, and
    /// the near misses worth a word.
    fn take_capi(&self, object: Object) -> Result<Option<Taken>, Finding> {
        let name = object.name().unwrap_or_default();
        let label = object.label(CLUSTER_NAME_LABEL);
        let Some((cluster, variant)) = capi_secret_name(name) else {
            if name.contains("kubeconfig") && label.is_some() {
                return Err(Finding::info(format!(
                    "not converted: the name ends in none of -kubeconfig, -user-kubeconfig, -kubeconfig-user (cluster {})",
                    label.unwrap_or_default()
                ))
                .at("metadata.name"));
            }
            return Ok(None);
        };
        let Some(label) = label else {
            return Err(Finding::info(format!(
                "not converted: no {CLUSTER_NAME_LABEL} label (Cluster API sets it on every kubeconfig Secret it writes)"
            ))
            .at("metadata.labels"));
        };
        let shape = &self.shapes[0];
        let kind = object
            .node
            .get("type")
            .filter(|t| !t.is_null())
            .and_then(|t| t.scalar())
            .map(|s| s.text.to_string())
            .unwrap_or_default();
        if shape.types.as_ref().is_some_and(|t| !t.contains(&kind)) {
            return Err(Finding::info(format!(
                "not converted: type {kind} is not a kubeconfig Secret's ({CAPI_SECRET_TYPE} or Opaque)"
            ))
            .at("type"));
        }
        // A second kubeconfig a control plane provider writes for the same cluster
        // (K0sControlPlane's `<cluster>-proxied-kubeconfig`, `-tunneled-kubeconfig`): named
        // after the cluster its label names, with something more.
        if variant == Variant::Plain {
            if let Some(more) = cluster
                .strip_prefix(label)
                .and_then(|rest| rest.strip_prefix('-'))
            {
                return Err(Finding::info(format!(
                    "not converted: a second kubeconfig of cluster {label} ({more}), beside {label}-kubeconfig, which is the cluster's"
                ))
                .at("metadata.name"));
            }
        }
        // HyperShift's kubeconfig for its own Cluster API controllers, at an address only its
        // namespace reaches; the HostedCluster's reachable one is <hc>-admin-kubeconfig.
        if object.label(HYPERSHIFT_SCOPE_LABEL).is_some() {
            return Err(Finding::info(format!(
                "not converted: HyperShift's in-cluster kubeconfig of a hosted control plane (label {HYPERSHIFT_SCOPE_LABEL}), reachable only from its namespace; the hypershift source converts the HostedCluster's <name>-admin-kubeconfig (sources: capi,hypershift)"
            ))
            .at("metadata.labels"));
        }
        Ok(Some(Taken {
            cluster: cluster.to_string(),
            variant,
            releases: shape.releases,
        }))
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
                shapes: vec![shape("", Names::Any)],
                keys: vec!["kubeconfig".into()],
                cluster_name: vec![ClusterName::SecretName],
                capi: false,
            }
        }
    };
    // What a custom source (or an adjusted preset) says of names, labels and type holds for each
    // of its shapes; labels given by a person name a kubeconfig Secret.
    let each =
        |source: &mut Source, set: &dyn Fn(&mut Shape)| source.shapes.iter_mut().for_each(set);
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
            "suffix" => {
                let names = Names::Suffix(text("suffix")?.unwrap_or_default());
                each(&mut source, &|s| s.names = names.clone());
            }
            "prefix" => {
                let names = Names::Prefix(text("prefix")?.unwrap_or_default());
                each(&mut source, &|s| s.names = names.clone());
            }
            "key" => source.keys = vec![text("key")?.unwrap_or_default()],
            "clusterName" => {
                let value = text("clusterName")?.unwrap_or_default();
                source.cluster_name = vec![match value.as_str() {
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
                }];
            }
            "labels" => {
                let Some(map) = value.as_map() else {
                    return Err(problem(
                        ".labels",
                        "expected a mapping of label to value (\"\" for any value)",
                    ));
                };
                let labels: Vec<(String, Option<String>)> = map
                    .iter()
                    .map(|(k, v)| {
                        let k = k.as_str().unwrap_or_default().to_string();
                        let v = v.as_str().filter(|s| !s.is_empty()).map(String::from);
                        (k, v)
                    })
                    .collect();
                each(&mut source, &|s| {
                    s.labels = labels.clone();
                    s.labels_mark_it = true;
                });
            }
            "type" => {
                let types = Some(vec![text("type")?.unwrap_or_default()]);
                each(&mut source, &|s| s.types = types.clone());
            }
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
        assert_eq!(custom[0].shapes[0].names, Names::Suffix("-access".into()));
        assert_eq!(
            custom[0].cluster_name,
            [ClusterName::Label("platform.example.com/cluster".into())]
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
