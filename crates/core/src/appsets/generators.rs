//! The parameter sets an ApplicationSet's generators give for a set of Argo CD clusters, as
//! argo-cd v3.5.1's applicationset/generators compute them (cluster.go, list.go, matrix.go,
//! merge.go, and generator_spec_processor.go's post-selector): each set with the cluster it
//! came from, and whether a generator the plan cannot evaluate (git, SCM providers, pull
//! requests, plugins, cluster decision resources) adds parameters of its own to it.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use std::collections::BTreeMap;

use super::argo::{IN_CLUSTER_SERVER, SECRET_TYPE_CLUSTER};
use super::ordered::ordered_map;
use super::params::{Lookup, Params};
use super::read::{ClusterView, GenKind, Generator};
use super::selector::Selector;
use super::template::{Rendered, Syntax, Template, sanitize_name};
use crate::convert::argocd::SECRET_TYPE_LABEL;
use krm::object::SecretId;

/// Which Argo CD cluster a parameter set came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClusterKey {
    /// The cluster of this Secret (for a cluster whose Secret the plan renames, the Secret it
    /// had before).
    Secret(SecretId),
    /// The local cluster, which has no Secret.
    InCluster,
}

impl ClusterKey {
    pub fn of(view: &ClusterView) -> ClusterKey {
        view.secret
            .clone()
            .map_or(ClusterKey::InCluster, ClusterKey::Secret)
    }
}

/// A parameter set, and the cluster it came from (none for a list's entries, or a flat list of
/// every cluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    pub cluster: Option<ClusterKey>,
    pub params: Params,
}

/// Why the sets of a generator are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unjudged {
    /// Argo CD refuses it: the ApplicationSet generates nothing and deletes nothing.
    Refused(String),
    /// The plan cannot say what it gives.
    Beyond(String),
}

/// What a generator gives for `fleet` (the clusters the plan looks at); `local`: whether the
/// local cluster's entry is to be considered (the caller knows when it cannot change).
pub struct Eval<'f> {
    pub fleet: &'f [ClusterView],
    pub local: bool,
    pub syntax: Syntax,
}

impl Eval<'_> {
    /// The parameter sets `generator` gives.
    pub fn sets(&self, generator: &Generator) -> Result<Vec<Set>, Unjudged> {
        let mut sets = self.kind(generator)?;
        if let Some(post) = &generator.post {
            let selector = post
                .as_ref()
                .map_err(|e| Unjudged::Refused(e.to_string()))?;
            sets.retain(|s| passes(selector, &s.params));
        }
        Ok(sets)
    }

    fn kind(&self, generator: &Generator) -> Result<Vec<Set>, Unjudged> {
        match &generator.kind {
            GenKind::Clusters {
                selector,
                templated,
                values,
                flat,
            } => {
                if *templated {
                    return Err(Unjudged::Beyond(format!(
                        "{}: its cluster selector is a template of another generator's parameters",
                        generator.field
                    )));
                }
                let selector = selector
                    .as_ref()
                    .map_err(|e| Unjudged::Refused(e.to_string()))?;
                let sets = self.clusters(selector, values, &generator.field)?;
                if *flat {
                    // One set holding every cluster: its Application is no one cluster's.
                    return Ok(vec![Set {
                        cluster: None,
                        params: Params::unknown(),
                    }]);
                }
                Ok(sets)
            }
            GenKind::List { elements, more } => {
                let mut sets: Vec<Set> = elements
                    .iter()
                    .map(|e| Set {
                        cluster: None,
                        params: Params {
                            values: ordered_map(e.iter().cloned()),
                            maps: ordered_map(
                                e.iter().flat_map(|(k, _)| prefixes(k)).map(|p| (p, false)),
                            ),
                            complete: true,
                        },
                    })
                    .collect();
                if *more {
                    sets.push(Set {
                        cluster: None,
                        params: Params::unknown(),
                    });
                }
                Ok(sets)
            }
            GenKind::Matrix(children) => self.matrix(generator, children),
            GenKind::Merge { keys, generators } => self.merge(generator, keys, generators),
            GenKind::Other(_) => Ok(vec![Set {
                cluster: None,
                params: Params::unknown(),
            }]),
            GenKind::Unknown => Ok(Vec::new()),
        }
    }

    /// cluster.go: the Secrets the selector (with `argocd.argoproj.io/secret-type: cluster`
    /// added) selects, one per cluster name, and the local cluster unless the selector says
    /// anything or a selected Secret has its server.
    fn clusters(
        &self,
        selector: &Selector,
        values: &[(String, String)],
        field: &str,
    ) -> Result<Vec<Set>, Unjudged> {
        let ignore_local = !selector.is_empty();
        let with_type = selector
            .clone()
            .with_label(SECRET_TYPE_LABEL, SECRET_TYPE_CLUSTER);
        // Keyed by cluster name, as getSecretsByClusterName keys them: the last of a name wins.
        let mut by_name: BTreeMap<&str, &ClusterView> = BTreeMap::new();
        for c in self.fleet.iter().filter(|c| c.secret.is_some()) {
            if with_type.matches(|k| c.label(k)) {
                by_name.insert(c.name.as_str(), c);
            }
        }
        let local = ClusterView::in_cluster();
        let has_local = by_name.values().any(|c| c.server == IN_CLUSTER_SERVER);
        let with_local = (self.local && !ignore_local && !has_local).then_some(&local);
        let mut sets = Vec::new();
        for c in by_name.values().copied().chain(with_local) {
            let params = cluster_params(c, values, self.syntax).map_err(|(key, why)| {
                Unjudged::Refused(format!(
                    "{field}.clusters.values.{key}: {why} (cluster {})",
                    c.name
                ))
            })?;
            sets.push(Set {
                cluster: Some(ClusterKey::of(c)),
                params,
            });
        }
        Ok(sets)
    }

    /// matrix.go: every set of the first generator with every set of the second.
    fn matrix(&self, generator: &Generator, children: &[Generator]) -> Result<Vec<Set>, Unjudged> {
        let [first, second] = children else {
            return Err(Unjudged::Refused(format!(
                "{}: a matrix takes exactly two generators, not {}",
                generator.field,
                children.len()
            )));
        };
        let mut sets = Vec::new();
        // matrix.go renders the second generator's spec with each set of the first
        // (`InterpolateGenerator`): what it writes as a template is not known here.
        let interpolated = interpolated_keys(second);
        for a in self.child(first)? {
            for mut b in self.child(second)? {
                for key in &interpolated {
                    b.params.forget(key);
                }
                let cluster = match (&a.cluster, &b.cluster) {
                    (Some(_), Some(_)) => {
                        return Err(Unjudged::Beyond(format!(
                            "{}: a matrix of two cluster generators",
                            generator.field
                        )));
                    }
                    (x, y) => x.clone().or_else(|| y.clone()),
                };
                let params = if matches!(self.syntax, Syntax::Go { .. }) {
                    // mergo: the second's parameters, then the first's over them.
                    let mut p = b.params.clone();
                    p.merge(&a.params, true);
                    p
                } else {
                    combine(&a.params, &b.params).map_err(|key| {
                        Unjudged::Refused(format!(
                            "{}: both generators give parameter {key} with different values",
                            generator.field
                        ))
                    })?
                };
                sets.push(Set { cluster, params });
            }
        }
        Ok(sets)
    }

    /// A matrix's or merge's generator: one with no generator Argo CD knows fails the whole.
    fn child(&self, child: &Generator) -> Result<Vec<Set>, Unjudged> {
        if matches!(child.kind, GenKind::Unknown) {
            return Err(Unjudged::Refused(format!(
                "{}: no generator Argo CD knows",
                child.field
            )));
        }
        self.sets(child)
    }

    /// merge.go: the first generator's sets, each overridden by the sets of the others that
    /// share its merge keys' values.
    fn merge(
        &self,
        generator: &Generator,
        keys: &[String],
        children: &[Generator],
    ) -> Result<Vec<Set>, Unjudged> {
        if children.len() < 2 {
            return Err(Unjudged::Refused(format!(
                "{}: a merge takes at least two generators",
                generator.field
            )));
        }
        if keys.is_empty() {
            return Err(Unjudged::Refused(format!(
                "{}: a merge needs mergeKeys",
                generator.field
            )));
        }
        // merge.go looks each key up at the top of the set: a Go template's cluster parameters
        // are nested maps (`values`, `metadata`), so a dotted key is no parameter of theirs.
        let go = matches!(self.syntax, Syntax::Go { .. });
        let key_of = |s: &Set| -> Option<Vec<Option<String>>> {
            keys.iter()
                .map(|k| match s.params.get(k) {
                    _ if go && s.cluster.is_some() && k.contains('.') => Some(None),
                    Lookup::Found(v) => Some(Some(v.to_string())),
                    Lookup::Missing => Some(None),
                    _ => None,
                })
                .collect()
        };
        let unique = |sets: &[Set]| {
            let mut seen = std::collections::HashSet::new();
            sets.iter().filter_map(key_of).all(|k| seen.insert(k))
        };
        let mut base = self.child(&children[0])?;
        if !unique(&base) {
            return Err(Unjudged::Refused(format!(
                "{}: two parameter sets of its first generator share their merge keys",
                generator.field
            )));
        }
        for child in &children[1..] {
            let overrides = self.child(child)?;
            if !unique(&overrides) {
                return Err(Unjudged::Refused(format!(
                    "{}: two parameter sets share their merge keys",
                    child.field
                )));
            }
            for set in &mut base {
                let key = key_of(set);
                for o in &overrides {
                    match (&key, key_of(o)) {
                        (Some(k), Some(ok)) if *k == ok => {
                            set.params.merge(&o.params, true);
                        }
                        (Some(_), Some(_)) => {}
                        // Which set it overrides is not known: any of its values may change.
                        _ => set.params.complete = false,
                    }
                }
            }
        }
        Ok(base)
    }
}

/// The parameters a generator writes as templates (a cluster generator's `values`, a list's
/// elements): in a matrix's second place, rendered with the first's parameters first.
fn interpolated_keys(generator: &Generator) -> Vec<String> {
    match &generator.kind {
        GenKind::Clusters { values, .. } => values
            .iter()
            .filter(|(_, v)| v.contains("{{"))
            .map(|(k, _)| format!("values.{k}"))
            .collect(),
        GenKind::List { elements, .. } => elements
            .iter()
            .flatten()
            .filter(|(_, v)| v.as_deref().is_some_and(|v| v.contains("{{")))
            .map(|(k, _)| k.clone())
            .collect(),
        _ => Vec::new(),
    }
}

/// `utils.CombineStringMaps`: a key both give with different known values is an error.
fn combine(a: &Params, b: &Params) -> Result<Params, String> {
    for (k, v) in &b.values {
        if let (Some(Some(x)), Some(y)) = (a.values.get(k), v) {
            if x != y {
                return Err(k.clone());
            }
        }
    }
    let mut p = a.clone();
    p.merge(b, false);
    Ok(p)
}

/// A generator's post-selector over a set's flat parameters; a parameter the plan cannot know
/// keeps the set (it may pass).
fn passes(selector: &Selector, params: &Params) -> bool {
    selector
        .matches_partly(|k| match params.get(k) {
            Lookup::Found(v) => Ok(Some(v)),
            Lookup::Missing => Ok(None),
            Lookup::Map { .. } | Lookup::Unknown => Err(()),
        })
        .unwrap_or(true)
}

/// cluster.go's `getClusterParameters`, then `appendTemplatedValues`: each value rendered
/// against the cluster's parameters (a value never sees another value). A value the controller
/// fails to render (`Err`: its key and why) fails the generator.
pub fn cluster_params(
    c: &ClusterView,
    values: &[(String, String)],
    syntax: Syntax,
) -> Result<Params, (String, String)> {
    let mut p: BTreeMap<String, Option<String>> = BTreeMap::new();
    p.insert("name".into(), Some(c.name.clone()));
    p.insert("nameNormalized".into(), Some(sanitize_name(&c.name)));
    p.insert("server".into(), Some(c.server.clone()));
    p.insert(
        "project".into(),
        Some(c.project.clone().unwrap_or_default()),
    );
    for (k, v) in &c.labels {
        p.insert(format!("metadata.labels.{k}"), Some(v.clone()));
    }
    for (k, v) in &c.annotations {
        p.insert(format!("metadata.annotations.{k}"), Some(v.clone()));
    }
    // Go templates see nested maps: `metadata` for every cluster Secret (the local cluster has
    // none: cluster.go gives it name, server and project only), its labels and annotations,
    // and the values, only where there are some.
    let mut maps = BTreeMap::new();
    if matches!(syntax, Syntax::Go { .. }) && c.secret.is_some() {
        maps.insert("metadata".to_string(), false);
        if !c.labels.is_empty() {
            maps.insert("metadata.labels".to_string(), true);
        }
        if !c.annotations.is_empty() {
            maps.insert("metadata.annotations".to_string(), true);
        }
    }
    let base = Params {
        values: p.clone(),
        maps: maps.clone(),
        complete: true,
    };
    for (k, v) in values {
        let value = match Template::parse(v, syntax).render(&base) {
            Rendered::Text(t) => Some(t),
            Rendered::NotComputed => None,
            Rendered::Failed(why) => return Err((k.clone(), why)),
        };
        p.insert(format!("values.{k}"), value);
    }
    if !values.is_empty() && matches!(syntax, Syntax::Go { .. }) {
        maps.insert("values".to_string(), true);
    }
    Ok(Params {
        values: p,
        maps,
        complete: true,
    })
}

/// The maps a flat key stands in (`a.b.c`: `a`, `a.b`).
fn prefixes(key: &str) -> impl Iterator<Item = String> + '_ {
    key.match_indices('.').map(|(at, _)| key[..at].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two cluster Secrets of argo-cd v3.5.1's applicationset/generators/cluster_test.go
    /// (`TestGenerateParams`).
    fn upstream_clusters() -> Vec<ClusterView> {
        let view =
            |secret: &str, name: &str, server: &str, env: &str, org: &str, project| ClusterView {
                secret: Some(SecretId::new("namespace", secret)),
                name: name.into(),
                server: server.into(),
                project,
                labels: vec![
                    (SECRET_TYPE_LABEL.into(), "cluster".into()),
                    ("environment".into(), env.into()),
                    ("org".into(), org.into()),
                ],
                annotations: vec![("foo.argoproj.io".into(), env.into())],
            };
        vec![
            view(
                "staging-01",
                "staging-01",
                "https://staging-01.example.com",
                "staging",
                "foo",
                None,
            ),
            view(
                "production-01",
                "production_01/west",
                "https://production-01.example.com",
                "production",
                "bar",
                Some("prod-project".into()),
            ),
        ]
    }

    fn generator(yaml: &str) -> Generator {
        let set = format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: s}}\nspec:\n  generators:\n  - {}\n",
            yaml.replace('\n', "\n    ")
        );
        let docs = yaml::parse_stream(&set, &yaml::Limits::default()).expect("yaml");
        let object = krm::object::Object::new(&docs[0].root);
        super::super::read::app_set(object, 0).generators.remove(0)
    }

    fn names(sets: &[Set]) -> Vec<String> {
        let mut names: Vec<String> = sets
            .iter()
            .map(|s| match s.params.get("name") {
                Lookup::Found(n) => n.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        names.sort();
        names
    }

    fn eval(yaml: &str) -> Result<Vec<Set>, Unjudged> {
        let fleet = upstream_clusters();
        Eval {
            fleet: &fleet,
            local: true,
            syntax: Syntax::Fast,
        }
        .sets(&generator(yaml))
    }

    #[test]
    fn upstream_no_label_selector_takes_every_cluster_and_the_local_one() {
        let sets = eval(
            "clusters:\n  values:\n    lol1: lol\n    lol2: '{{values.lol1}}{{values.lol1}}'\n    bar: '{{ metadata.annotations.foo.argoproj.io }}'\n    bat: '{{ metadata.labels.environment }}'\n    aaa: '{{ server }}'\n    no-op: '{{ this-does-not-exist }}'\n",
        )
        .unwrap();
        assert_eq!(
            names(&sets),
            ["in-cluster", "production_01/west", "staging-01"]
        );
        let prod = sets
            .iter()
            .find(|s| s.params.get("name") == Lookup::Found("production_01/west"))
            .unwrap();
        let get = |k: &str| prod.params.get(k);
        assert_eq!(get("nameNormalized"), Lookup::Found("production-01-west"));
        assert_eq!(get("project"), Lookup::Found("prod-project"));
        assert_eq!(get("values.bar"), Lookup::Found("production"));
        assert_eq!(get("values.bat"), Lookup::Found("production"));
        assert_eq!(
            get("values.aaa"),
            Lookup::Found("https://production-01.example.com")
        );
        // A value never sees another value; an unknown tag stays as it is.
        assert_eq!(
            get("values.lol2"),
            Lookup::Found("{{values.lol1}}{{values.lol1}}")
        );
        assert_eq!(
            get("values.no-op"),
            Lookup::Found("{{ this-does-not-exist }}")
        );
        let local = sets
            .iter()
            .find(|s| s.cluster == Some(ClusterKey::InCluster))
            .unwrap();
        assert_eq!(
            local.params.get("values.aaa"),
            Lookup::Found(IN_CLUSTER_SERVER)
        );
        assert_eq!(local.params.get("project"), Lookup::Found(""));
    }

    #[test]
    fn upstream_selectors_leave_the_local_cluster_out() {
        let cases = [
            (
                "clusters:\n  selector:\n    matchLabels:\n      argocd.argoproj.io/secret-type: cluster\n",
                vec!["production_01/west", "staging-01"],
            ),
            (
                "clusters:\n  selector:\n    matchLabels:\n      environment: production\n",
                vec!["production_01/west"],
            ),
            (
                "clusters:\n  selector:\n    matchExpressions:\n    - key: environment\n      operator: In\n      values: [staging, production]\n",
                vec!["production_01/west", "staging-01"],
            ),
            (
                "clusters:\n  selector:\n    matchExpressions:\n    - key: environment\n      operator: In\n      values: [staging, production]\n    matchLabels:\n      org: foo\n",
                vec!["staging-01"],
            ),
        ];
        for (yaml, want) in cases {
            assert_eq!(names(&eval(yaml).unwrap()), want, "{yaml}");
        }
    }

    #[test]
    fn a_flat_list_is_one_set_of_no_one_cluster() {
        let sets = eval("clusters:\n  flatList: true\n").unwrap();
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].cluster, None);
    }

    #[test]
    fn a_matrix_with_git_keeps_each_cluster_and_knows_not_the_rest() {
        let sets = eval(
            "matrix:\n  generators:\n  - git:\n      repoURL: https://example.com/r.git\n      revision: HEAD\n      directories:\n      - path: addons/*\n  - clusters:\n      selector:\n        matchLabels:\n          environment: staging\n",
        )
        .unwrap();
        assert_eq!(sets.len(), 1);
        assert!(!sets[0].params.is_complete());
        assert_eq!(sets[0].params.get("path.basename"), Lookup::Unknown);
        assert_eq!(sets[0].params.get("name"), Lookup::Found("staging-01"));
    }

    /// Regression: a matrix's second generator's values were rendered without the first's
    /// parameters, naming Applications nothing has (`<no value>-gone`), so their deletes went
    /// unsaid.
    #[test]
    fn a_matrix_s_second_generator_is_rendered_with_the_first_s_parameters() {
        let sets = eval(
            "matrix:\n  generators:\n  - git:\n      repoURL: https://example.com/r.git\n      revision: HEAD\n      directories:\n      - path: addons/*\n  - clusters:\n      selector:\n        matchLabels:\n          environment: staging\n      values:\n        addon: '{{path.basename}}'\n        fixed: x\n",
        )
        .unwrap();
        assert_eq!(sets[0].params.get("values.addon"), Lookup::Unknown);
        assert_eq!(sets[0].params.get("values.fixed"), Lookup::Found("x"));
    }

    #[test]
    fn a_list_merged_over_clusters_overrides_by_key() {
        let sets = eval(
            "merge:\n  mergeKeys: [server]\n  generators:\n  - clusters:\n      values: {kafka: 'true'}\n  - list:\n      elements:\n      - server: https://staging-01.example.com\n        values: {kafka: 'false'}\n",
        )
        .unwrap();
        let staging = sets
            .iter()
            .find(|s| s.params.get("name") == Lookup::Found("staging-01"))
            .unwrap();
        assert_eq!(staging.params.get("values.kafka"), Lookup::Found("false"));
    }

    /// Regression: a Go template's dotted merge key was looked up in the flat parameters; Argo
    /// CD looks it up at the top of nested ones, finds nothing for every cluster, and refuses
    /// the two sets that then share a key.
    #[test]
    fn a_go_template_s_dotted_merge_key_is_no_cluster_parameter() {
        let fleet = upstream_clusters();
        let eval = Eval {
            fleet: &fleet,
            local: false,
            syntax: Syntax::of(true, &[]),
        };
        let merge = "merge:\n  mergeKeys: [metadata.labels.environment]\n  generators:\n  - clusters: {}\n  - list: {elements: []}\n";
        assert!(matches!(
            eval.sets(&generator(merge)),
            Err(Unjudged::Refused(_))
        ));
        let fast = Eval {
            syntax: Syntax::Fast,
            ..eval
        };
        assert!(fast.sets(&generator(merge)).is_ok());
    }

    #[test]
    fn refusals_argo_cd_makes_are_said() {
        for yaml in [
            "clusters:\n  selector:\n    matchExpressions:\n    - {key: env, operator: Foo}\n",
            "matrix:\n  generators:\n  - clusters: {}\n",
            "merge:\n  generators:\n  - clusters: {}\n  - list: {elements: []}\n",
        ] {
            assert!(matches!(eval(yaml), Err(Unjudged::Refused(_))), "{yaml}");
        }
    }
}
