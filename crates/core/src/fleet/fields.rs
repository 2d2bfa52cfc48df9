//! The Argo CD fields fleet metadata sets on a cluster's Secret — project, namespaces,
//! clusterResources, labels, annotations — read one way wherever they are set: the config's own
//! keys (the bottom layer) and every inventory entry. An empty project or list says "none",
//! over whatever a layer below set.

use crate::convert::argocd::Fields;
use crate::raw::Raw;

/// One field: its key and how its value is read into [`Fields`].
pub struct FieldKey {
    pub name: &'static str,
    set: fn(&mut Fields, &Raw) -> Result<(), String>,
}

/// Every field, in the order the book lists them.
pub static FIELD_KEYS: &[FieldKey] = &[
    FieldKey {
        name: "project",
        set: |f, raw| {
            f.project = Some(raw.text()?);
            Ok(())
        },
    },
    FieldKey {
        name: "namespaces",
        set: |f, raw| {
            f.namespaces = Some(raw.list()?);
            Ok(())
        },
    },
    FieldKey {
        name: "clusterResources",
        set: |f, raw| {
            f.cluster_resources = Some(raw.boolean()?);
            Ok(())
        },
    },
    FieldKey {
        name: "labels",
        set: |f, raw| {
            f.labels = raw.map(true)?;
            Ok(())
        },
    },
    FieldKey {
        name: "annotations",
        set: |f, raw| {
            f.annotations = raw.map(false)?;
            Ok(())
        },
    },
];

/// Sets the field `name` (one of [`FIELD_KEYS`]) from `raw`; `None` when there is no such field.
pub fn set(fields: &mut Fields, name: &str, raw: &Raw) -> Option<Result<(), String>> {
    FIELD_KEYS
        .iter()
        .find(|k| k.name == name)
        .map(|k| (k.set)(fields, raw))
}

/// The names of the fields, for messages.
pub fn names() -> String {
    let names: Vec<&str> = FIELD_KEYS.iter().map(|k| k.name).collect();
    names.join(", ")
}
