//! The `sources` setting: preset names, presets adjusted (`{preset: kamaji, key: admin.svc}`),
//! and custom sources. Every key a source takes is honoured for every preset, or refused with
//! an error naming it — never read and ignored.

use std::collections::HashSet;

use super::{ClusterName, Identity, Kind, Label, Names, PRESETS, Shape, Source, preset};
use krm::finding::Finding;
use yaml::{Node, Value};

/// The keys a source definition takes, as its errors list them.
const SOURCE_KEYS: &str = "preset or name, suffix or prefix, key, clusterName, labels, type";

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
    let mut seen = HashSet::new();
    if let Some(dup) = sources.iter().find(|s| !seen.insert(s.name.clone())) {
        return Err(problem(
            "",
            format!("source {:?} is listed twice", dup.name),
        ));
    }
    Ok(sources)
}

fn unknown_preset(name: &str) -> Finding {
    let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
    Finding::error(format!(
        "unknown source {name:?}; presets: {}",
        names.join(", ")
    ))
}

/// One source definition: a preset adjusted, or a custom source.
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
    let is_preset = node.get("preset").is_some_and(|v| !v.is_null());
    let mut source = match text("preset")? {
        Some(name) => {
            if node.get("name").is_some() {
                return Err(problem(
                    ".name",
                    "a preset keeps its own name (it is recorded on its Argo CD Secrets); name is for a custom source",
                ));
            }
            preset(&name).ok_or_else(|| unknown_preset(&name).under(".preset"))?
        }
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
                ..Source::new(
                    vec![Shape::named("", Names::Any)],
                    &["kubeconfig"],
                    vec![ClusterName::SecretName],
                )
            }
        }
    };
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        // A ClusterProfile is no Secret: what tells Secrets apart means nothing for it.
        if source.kind == Kind::ClusterProfiles
            && matches!(
                key,
                "suffix" | "prefix" | "key" | "labels" | "type" | "clusterName"
            )
        {
            return Err(problem(
                format!(".{key}"),
                format!(
                    "the {} preset reads ClusterProfiles, not Secrets: {key} has no meaning for it (its access providers are the setting accessProviders)",
                    source.name
                ),
            ));
        }
        match key {
            "preset" | "name" => {}
            "suffix" | "prefix" => {
                let variants: HashSet<_> = source.shapes.iter().map(|s| s.variant).collect();
                if is_preset && variants.len() > 1 {
                    let names: Vec<String> =
                        source.shapes.iter().map(|s| s.names.describe()).collect();
                    return Err(problem(
                        format!(".{key}"),
                        format!(
                            "the {} preset tells a cluster's Secrets apart by their names ({}): they are its own",
                            source.name,
                            names.join(", ")
                        ),
                    ));
                }
                let text = text(key)?.unwrap_or_default();
                let names = if key == "suffix" {
                    Names::Suffix(text)
                } else {
                    Names::Prefix(text)
                };
                each(&mut source, |s| s.names = names.clone());
            }
            "key" => source.keys = vec![text("key")?.unwrap_or_default()],
            "clusterName" => {
                source.cluster_name = vec![cluster_name(&text("clusterName")?.unwrap_or_default())?]
            }
            "labels" => {
                let labels = labels(value)?;
                if is_preset {
                    // A preset's own labels say which Secrets are its; the user's narrow them.
                    source.narrowed_to = labels;
                } else {
                    each(&mut source, |s| {
                        s.labels = labels.clone();
                        s.identity = Identity::Labelled;
                    });
                }
            }
            "type" => {
                let types = Some(vec![text("type")?.unwrap_or_default()]);
                each(&mut source, |s| s.types = types.clone());
            }
            other => {
                return Err(problem(
                    format!(".{other}"),
                    format!("unknown key; a source has {SOURCE_KEYS}"),
                ));
            }
        }
    }
    Ok(source)
}

/// What a custom source (or an adjusted preset) says of names and types holds for each of its shapes.
fn each(source: &mut Source, set: impl Fn(&mut Shape)) {
    source.shapes.iter_mut().for_each(set);
}

fn cluster_name(value: &str) -> Result<ClusterName, Finding> {
    Ok(match value {
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
    })
}

fn labels(value: &Node) -> Result<Vec<Label>, Finding> {
    let Some(map) = value.as_map() else {
        return Err(problem(
            ".labels",
            "expected a mapping of label to value (\"\" for any value)",
        ));
    };
    Ok(map
        .iter()
        .map(|(k, v)| Label {
            key: k.as_str().unwrap_or_default().to_string(),
            value: v.as_str().filter(|s| !s.is_empty()).map(String::from),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::Limits;
    use yaml::parse_stream;

    fn parse(yaml: &str) -> Result<Vec<Source>, Finding> {
        let docs = parse_stream(yaml, &Limits::default()).expect("yaml");
        parse_sources(&docs[0].root)
    }

    #[test]
    fn presets_by_name_comma_list_and_custom() {
        let sources = parse("capi, vcluster").unwrap();
        assert_eq!(sources.len(), 2);
        assert_eq!(sources[0].name, "capi");
        assert!(sources[0].reads.clusters);
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
        assert_eq!(custom[0].shapes[0].identity, Identity::Labelled);
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
        let err = parse("- {preset: hypershift, prefix: hc-}\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("[0].prefix"));
    }

    /// Regression (issue 36): `{preset: capi, labels: …}` and `{preset: capi, name: …}` were
    /// accepted and ignored; a preset's labels now narrow it, and a preset keeps its name.
    #[test]
    fn a_presets_labels_narrow_it_and_its_name_is_its_own() {
        let narrowed = parse("- {preset: capi, labels: {team: platform}}\n").unwrap();
        assert_eq!(narrowed[0].narrowed_to, [Label::is("team", "platform")]);
        assert_eq!(
            narrowed[0].shapes,
            preset("capi").unwrap().shapes,
            "the preset's own rules stay"
        );
        let err = parse("- {preset: capi, name: team-a}\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("[0].name"));
    }

    /// Every preset's adjustments are either honoured or refused, for every key a source takes.
    #[test]
    fn every_key_is_honoured_or_refused_for_every_preset() {
        for p in PRESETS {
            let default = p.source();
            for (key, value) in [
                ("key", "other"),
                ("clusterName", "label:x.example.com/name"),
                ("labels", "{x.example.com/team: a}"),
                ("type", "Opaque"),
                ("suffix", "-access"),
                ("prefix", "access-"),
            ] {
                let yaml = format!("- {{preset: {}, {key}: {value}}}\n", p.name);
                match parse(&yaml) {
                    Ok(adjusted) => assert_ne!(
                        adjusted[0], default,
                        "{}: {key} was accepted and changed nothing",
                        p.name
                    ),
                    Err(err) => assert_eq!(err.field.as_deref(), Some(&*format!("[0].{key}"))),
                }
            }
        }
    }
}
