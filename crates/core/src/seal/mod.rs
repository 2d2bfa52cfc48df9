//! Sealing (`seal: sealedSecrets`): each Argo CD cluster Secret a run writes comes out as a
//! Sealed Secrets `SealedSecret` (bitnami.com/v1alpha1) that only the controller holding the
//! certificate's private key opens, so the output can be committed. The randomness comes from
//! the host, as the time does: the core has no source of its own.
//!
//! A SealedSecret carries the Secret's labels on its own metadata too, so the plan reads it as
//! the Argo CD Secret it stands for (owned, renamed, pruned, guarded) without opening it, and a
//! value whose plaintext did not change keeps its ciphertext (record.rs says how that is told).

pub mod certificate;
mod cipher;
pub mod record;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use krm::b64;
use krm::object::{Object, is_bookkeeping_annotation, is_tool_annotation};
use yaml::Node;

pub use certificate::SealingCertificate;
pub use cipher::SealError;
use record::{RECORD_ANNOTATION, Record};

/// Sealed Secrets' API group and version, and its kind (pkg/apis/sealedsecrets/v1alpha1).
pub const API_VERSION: &str = "bitnami.com/v1alpha1";
pub const KIND: &str = "SealedSecret";
/// The scope annotations kubeseal writes (and the controller reads) on a SealedSecret.
pub const NAMESPACE_WIDE: &str = "sealedsecrets.bitnami.com/namespace-wide";
pub const CLUSTER_WIDE: &str = "sealedsecrets.bitnami.com/cluster-wide";

/// Where a sealed value may be opened: the OAEP label binds it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Only as the Secret of this name in this namespace (label `namespace/name`).
    #[default]
    Strict,
    /// As any Secret in this namespace (label `namespace`).
    NamespaceWide,
    /// Anywhere (empty label).
    ClusterWide,
}

impl Scope {
    /// Every scope, as the setting spells it.
    pub const CHOICES: [(&'static str, Scope); 3] = [
        ("strict", Scope::Strict),
        ("namespace-wide", Scope::NamespaceWide),
        ("cluster-wide", Scope::ClusterWide),
    ];

    pub fn word(self) -> &'static str {
        Self::CHOICES
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("strict", |(w, _)| w)
    }

    /// The OAEP label a value of the Secret `namespace/name` is sealed under.
    pub fn label(self, namespace: &str, name: &str) -> Vec<u8> {
        match self {
            Scope::Strict => format!("{namespace}/{name}").into_bytes(),
            Scope::NamespaceWide => namespace.as_bytes().to_vec(),
            Scope::ClusterWide => Vec::new(),
        }
    }

    /// The annotation that says it on the SealedSecret, when the scope is not the default.
    fn annotation(self) -> Option<&'static str> {
        match self {
            Scope::Strict => None,
            Scope::NamespaceWide => Some(NAMESPACE_WIDE),
            Scope::ClusterWide => Some(CLUSTER_WIDE),
        }
    }
}

/// The sealing settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Sealing {
    pub certificate: SealingCertificate,
    pub scope: Scope,
}

/// Whether `object` is a SealedSecret.
pub fn is_sealed_secret(object: Object) -> bool {
    object.kind() == Some(KIND)
        && object
            .api_version()
            .is_some_and(|v| v.starts_with("bitnami.com/"))
}

/// Seals Secrets for one run: the settings and a generator seeded from the host's randomness.
pub struct Sealer {
    sealing: Sealing,
    rng: ChaCha20Rng,
}

/// A Secret's data: each key once (`stringData` over `data`, as the API server merges them)
/// and its plaintext, in the Secret's order; `Err` names a value that cannot be read, which
/// sealing would otherwise drop.
fn plaintexts(secret: Object) -> Result<Vec<(String, Vec<u8>)>, SealError> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let keys = ["stringData", "data"]
        .iter()
        .filter_map(|section| secret.node.get(section)?.as_map())
        .flatten()
        .filter_map(|(k, _)| k.as_str());
    for key in keys {
        if out.iter().any(|(k, _)| k == key) {
            continue;
        }
        match secret.secret_value(key) {
            Ok(Some((_, value))) => out.push((key.to_string(), value.into_owned().into_bytes())),
            Ok(None) => {}
            Err(finding) => {
                let field = finding.field.unwrap_or_default();
                return Err(SealError::unreadable(&field, &finding.message));
            }
        }
    }
    Ok(out)
}

fn named<'n>(values: &'n [(String, Vec<u8>)], key: &str) -> &'n [u8] {
    values
        .iter()
        .find(|(k, _)| k == key)
        .map_or(&[][..], |(_, v)| v.as_slice())
}

impl Sealer {
    /// A sealer whose randomness is seeded from the host's 32 random bytes.
    pub fn new(sealing: Sealing, seed: [u8; 32]) -> Self {
        Sealer {
            sealing,
            rng: ChaCha20Rng::from_seed(seed),
        }
    }

    fn key_id(&self) -> String {
        record::key_id(&self.sealing.certificate.key_id)
    }

    /// The record of a sealed Secret `old`, when it was sealed with this key and scope: its
    /// values can then be told unchanged by their fingerprints.
    fn usable_record(&self, old: Object) -> Option<Record> {
        let record = Record::parse(old.annotation(RECORD_ANNOTATION)?)?;
        // A salt that is not the 16 bytes sealing writes makes the record unusable: the values
        // are sealed again under a fresh one.
        let salt = b64::decode(&record.salt).ok()?.0;
        (salt.len() == 16
            && record.key == self.key_id()
            && record.scope == self.sealing.scope.word())
        .then_some(record)
    }

    /// What differs between the owned Secret `old` (sealed or not) and the Secret `new` this run
    /// would write: data keys by name (a sealed value cannot be looked into), labels and
    /// annotations by key; `sealed` when `old` is a plain Secret (sealing replaces it), and
    /// `sealingCertificate` or `sealScope` when its values were sealed otherwise.
    pub fn changes(
        &self,
        old: &Node,
        new: &Node,
        plain: impl Fn(&Node, &Node) -> Vec<String>,
    ) -> Vec<String> {
        let old_object = Object::new(old);
        if !is_sealed_secret(old_object) {
            let mut changed = plain(old, new);
            changed.insert(0, "sealed".into());
            return changed;
        }
        let new_object = Object::new(new);
        let (namespace, name) = (
            new_object.namespace(),
            new_object.name().unwrap_or_default(),
        );
        let mut changed = Vec::new();
        let values = plaintexts(new_object).unwrap_or_default();
        let sealed: Vec<&str> = sealed_keys(old_object);
        match self.usable_record(old_object) {
            None => {
                match Record::parse(old_object.annotation(RECORD_ANNOTATION).unwrap_or_default()) {
                    Some(r) if r.key != self.key_id() => changed.push("sealingCertificate".into()),
                    Some(_) => changed.push("sealScope".into()),
                    None => changed.push("encryptedData".into()),
                }
            }
            Some(record) => {
                let salt = b64::decode(&record.salt)
                    .map(|(s, _)| s)
                    .unwrap_or_default();
                let label = self.sealing.scope.label(namespace, name);
                let now = record::fingerprints(&salt, named(&values, "config"), &label, &values);
                for (key, fingerprint) in &now {
                    if record.values.get(key) != Some(fingerprint)
                        || !sealed.contains(&key.as_str())
                    {
                        changed.push(key.clone());
                    }
                }
                changed.extend(
                    sealed
                        .iter()
                        .filter(|k| !now.contains_key(**k))
                        .map(|k| k.to_string()),
                );
            }
        }
        let template = old
            .path(&["spec", "template"])
            .cloned()
            .unwrap_or_else(|| Node::map(Vec::new()));
        changed.extend(Object::new(&template).metadata_changes(new_object));
        changed
    }

    /// `secret` (an Argo CD Secret this run writes) as a SealedSecret; each value that `old`
    /// (the SealedSecret it replaces) holds for the same plaintext keeps its ciphertext.
    pub fn seal(&mut self, secret: &Node, old: Option<&Node>) -> Result<Node<'static>, SealError> {
        let object = Object::new(secret);
        let (namespace, name) = (
            object.namespace().to_string(),
            object.name().unwrap_or_default().to_string(),
        );
        let label = self.sealing.scope.label(&namespace, &name);
        let values = plaintexts(object)?;
        let old = old.map(Object::new).filter(|o| is_sealed_secret(*o));
        let kept = old.and_then(|o| Some((o, self.usable_record(o)?)));
        let salt = match &kept {
            Some((_, record)) => b64::decode(&record.salt)
                .map(|(s, _)| s)
                .unwrap_or_default(),
            None => {
                let mut salt = vec![0u8; 16];
                self.rng.fill_bytes(&mut salt);
                salt
            }
        };
        let fingerprints = record::fingerprints(&salt, named(&values, "config"), &label, &values);
        let mut encrypted = Vec::with_capacity(values.len());
        for (key, plaintext) in &values {
            let reused = kept.as_ref().and_then(|(o, record)| {
                (record.values.get(key) == fingerprints.get(key))
                    .then(|| {
                        o.node
                            .path(&["spec", "encryptedData", key])
                            .and_then(Node::as_str)
                    })
                    .flatten()
            });
            let text = match reused {
                Some(text) => text.to_string(),
                None => b64::encode(&cipher::seal(
                    &mut self.rng,
                    &self.sealing.certificate.key,
                    plaintext,
                    &label,
                )?),
            };
            encrypted.push((key.as_str(), Node::string(text)));
        }
        let record = Record {
            key: self.key_id(),
            scope: self.sealing.scope.word().to_string(),
            salt: b64::encode(&salt),
            values: fingerprints,
        };
        let labels = object.string_entries("labels");
        let annotations = object.string_entries("annotations");
        let string_map = |entries: &[(&str, &str)]| {
            Node::map(
                entries
                    .iter()
                    .map(|(k, v)| (*k, Node::string(*v)))
                    .collect(),
            )
        };
        // kpt's and kustomize's annotations say where the SealedSecret lives; the template is
        // the Secret as it is written without sealing.
        // A tool's copy of the object it applied (kubectl's last-applied-configuration) holds
        // the Secret's values in plain text: it goes nowhere.
        let (tools, own): (Vec<_>, Vec<_>) = annotations
            .into_iter()
            .filter(|(k, _)| !is_bookkeeping_annotation(k))
            .partition(|(k, _)| is_tool_annotation(k));
        let record_text = record.text();
        let mut outer: Vec<(&str, &str)> = tools;
        if let Some(scope) = self.sealing.scope.annotation() {
            outer.push((scope, "true"));
        }
        outer.push((RECORD_ANNOTATION, record_text.as_str()));
        let mut template_metadata = vec![
            ("name", Node::string(name.clone())),
            ("namespace", Node::string(namespace.clone())),
        ];
        if !labels.is_empty() {
            template_metadata.push(("labels", string_map(&labels)));
        }
        if !own.is_empty() {
            template_metadata.push(("annotations", string_map(&own)));
        }
        let mut metadata = vec![
            ("name", Node::string(name.clone())),
            ("namespace", Node::string(namespace.clone())),
            ("annotations", string_map(&outer)),
        ];
        if !labels.is_empty() {
            metadata.push(("labels", string_map(&labels)));
        }
        let kind = secret
            .get("type")
            .and_then(Node::as_str)
            .unwrap_or("Opaque")
            .to_string();
        let mut template = vec![
            ("metadata", Node::map(template_metadata)),
            ("type", Node::string(kind)),
        ];
        if let Some(immutable) = secret.get("immutable").filter(|n| !n.is_null()) {
            template.push(("immutable", immutable.clone().into_owned()));
        }
        Ok(Node::map(vec![
            ("apiVersion", Node::string(API_VERSION)),
            ("kind", Node::string(KIND)),
            ("metadata", Node::map(metadata)),
            (
                "spec",
                Node::map(vec![
                    ("encryptedData", Node::map(encrypted)),
                    ("template", Node::map(template)),
                ]),
            ),
        ]))
    }
}

/// The data keys a SealedSecret holds sealed.
fn sealed_keys<'n>(sealed: Object<'n, '_>) -> Vec<&'n str> {
    sealed
        .node
        .path(&["spec", "encryptedData"])
        .and_then(Node::as_map)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.as_str())
        .collect()
}

/// `validate` of a SealedSecret that stands for an Argo CD cluster Secret (its template labelled
/// so): the Secret it opens to, as far as it can be told without opening it — the template's
/// metadata, the `server` Argo CD needs, and each value in the format the controller opens.
/// `None` for any other item.
pub fn validate_sealed(node: &Node) -> Option<Vec<krm::finding::Finding>> {
    use krm::finding::Finding;
    let object = Object::new(node);
    let template = node.path(&["spec", "template"]);
    let labelled = template
        .and_then(|t| {
            t.path(&[
                "metadata",
                "labels",
                crate::convert::argocd::SECRET_TYPE_LABEL,
            ])
        })
        .and_then(Node::as_str)
        == Some("cluster");
    if !is_sealed_secret(object) || !labelled {
        return None;
    }
    let template = Object::new(template?);
    let mut out = template
        .metadata_problems()
        .into_iter()
        .map(|f| {
            let field = f.field.clone().unwrap_or_default();
            f.at(format!("spec.template.{field}"))
        })
        .collect::<Vec<_>>();
    for (field, outer, inner) in [
        ("name", object.name(), template.name()),
        (
            "namespace",
            Some(object.namespace()),
            Some(template.namespace()),
        ),
    ] {
        if inner.is_some_and(|i| Some(i) != outer)
            && template.node.path(&["metadata", field]).is_some()
        {
            out.push(
                Finding::warning(format!(
                    "differs from the SealedSecret's {field}: the Sealed Secrets controller names the Secret after the SealedSecret"
                ))
                .at(format!("spec.template.metadata.{field}")),
            );
        }
    }
    if node.path(&["spec", "data"]).is_some() {
        out.push(
            Finding::error("the whole-Secret format Sealed Secrets no longer opens by default: seal each value under encryptedData").at("spec.data"),
        );
    }
    let keys = sealed_keys(object);
    if !keys.contains(&"server") {
        out.push(
            Finding::error("has no server: Argo CD needs one for every cluster")
                .at("spec.encryptedData"),
        );
    }
    for key in keys {
        let value = node
            .path(&["spec", "encryptedData", key])
            .and_then(Node::as_str)
            .unwrap_or_default();
        if !is_sealed_value(value) {
            out.push(
                Finding::error("is not a sealed value (base64 of a 2-byte length, an RSA block and AES-GCM data): the controller cannot open it")
                    .at(format!("spec.encryptedData.{key}")),
            );
        }
    }
    out.push(Finding::info(
        "sealed: its values were checked for form only; `capi2argo validate` checks them on the Secret the Sealed Secrets controller opens it to",
    ));
    Some(out)
}

/// Whether `text` has the form of a sealed value: base64 of a 2-byte big-endian length, an RSA
/// block of that length (at least 1,024 bits), and at least a GCM tag after it.
fn is_sealed_value(text: &str) -> bool {
    let Ok((bytes, _)) = b64::decode(text) else {
        return false;
    };
    let Some((head, rest)) = bytes.split_first_chunk::<2>() else {
        return false;
    };
    let length = usize::from(u16::from_be_bytes(*head));
    length >= 128 && rest.len() >= length + 16
}
