//! The kept planner against the whole plan: random sequences of changes (objects kept, changed,
//! forgotten) over every golden case's objects and settings, and after each change the plan of
//! the objects the planner keeps equals the plan of the same objects read afresh as one List.
//!
//! The sequences are drawn from a fixed seed per case, so a failure names its case, seed and
//! step, and runs again the same.

use std::fs;
use std::path::{Path, PathBuf};

use capi2argo::args::Args;
use capi2argo_core::{Finished, Limits, NoFiles, ObjectKey, Options, PlanFormat, Planner};
use serde_json::{Value, json};

use crate::common;

/// Steps per sequence, and sequences per case: enough that every kind of object is kept, changed
/// and forgotten in most cases, few enough to stay within a second or two.
const STEPS: usize = 14;
const SEQUENCES: u64 = 2;

/// A small generator with a seed (SplitMix64): the sequences are the same on every run.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The settings a case runs with, as its arguments and its ResourceList's functionConfig give
/// them; `None` for a case that only validates.
fn options_of(case: &Path, input: &[u8]) -> Option<Options> {
    let args: Vec<String> = fs::read_to_string(case.join("args"))
        .map(|t| t.lines().map(String::from).collect())
        .unwrap_or_default();
    if args.first().is_some_and(|a| a == "validate") {
        return None;
    }
    let args =
        Args::try_parse_from(std::iter::once("capi2argo").chain(args.iter().map(String::as_str)))
            .ok()?;
    let now = fs::read_to_string(case.join("now"))
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|_| common::pinned_now());
    let text = std::str::from_utf8(input).ok()?;
    let function_config = capi2argo_yaml::parse_stream(text, &Limits::default())
        .ok()?
        .into_iter()
        .next()
        .and_then(|d| d.root.get("functionConfig").cloned())
        .filter(|n| n.as_map().is_some())
        .map(|n| {
            let mut out = String::new();
            capi2argo_yaml::emit::write_json(&mut out, &n, None);
            out
        });
    Some(Options {
        now: Some(capi2argo_core::parse_instant(&now)?),
        random: Some(
            capi2argo_core::host::random(Some(&common::pinned_random()), |_| Ok(())).ok()?,
        ),
        random_pinned: true,
        ..args.options(function_config)
    })
}

/// An object's key, as the planner orders its objects.
fn key_of(object: &Value) -> ObjectKey {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    ObjectKey::new(
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind"),
    )
}

/// A change to an object that a plan may read: a label, an annotation, a new version, a paused
/// Cluster, a control plane's Kubernetes version, a kubeconfig's client certificate or server,
/// or an object left as it is.
fn changed(mut object: Value, draw: &mut Draw) -> Value {
    let touch = format!("v{}", draw.below(3));
    let metadata = object
        .as_object_mut()
        .and_then(|o| o.get_mut("metadata"))
        .and_then(Value::as_object_mut);
    let Some(metadata) = metadata else {
        return object;
    };
    match draw.below(9) {
        0 => {
            let labels = metadata.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("planner.test/touch".into(), touch.into());
            }
        }
        1 => {
            let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
            if let Some(annotations) = annotations.as_object_mut() {
                annotations.insert("planner.test/touch".into(), touch.into());
            }
        }
        2 => {
            metadata.insert("resourceVersion".into(), format!("9{touch}").into());
        }
        3 => {
            if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
                let first = labels.keys().next().cloned();
                if let Some(first) = first {
                    labels.remove(&first);
                }
            }
        }
        4 => {
            if object["kind"] == "Cluster" {
                object["spec"]["paused"] = Value::Bool(true);
            }
        }
        6 | 7 => swap_client_certificate(&mut object),
        8 => {
            if object
                .pointer("/spec/version")
                .is_some_and(Value::is_string)
            {
                object["spec"]["version"] = format!("v1.99.{}", touch.len()).into();
            }
        }
        _ => {
            if let Some(data) = object.get_mut("stringData").and_then(Value::as_object_mut) {
                for value in data.values_mut() {
                    if let Some(text) = value.as_str() {
                        *value = text.replacen(":6443", ":7443", 1).into();
                    }
                }
            }
        }
    }
    object
}

/// Another provider's client certificate in place of a kubeconfig's own (which then no longer
/// belongs to its key): what a plan reads of certificates changes, and a plan that remembered
/// them by anything but their whole text would say otherwise.
fn swap_client_certificate(object: &mut Value) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let other = include_str!("fixtures/providers/talos.yaml")
        .lines()
        .find_map(|l| l.strip_prefix("  value: "))
        .and_then(|v| b64.decode(v).ok())
        .and_then(|k| String::from_utf8(k).ok())
        .and_then(|k| {
            k.lines()
                .find_map(|l| l.trim().strip_prefix("client-certificate-data: "))
                .map(String::from)
        })
        .expect("the Talos fixture's client certificate");
    let swap = |kubeconfig: &str| -> Option<String> {
        let line = kubeconfig
            .lines()
            .find(|l| l.trim().starts_with("client-certificate-data: "))?;
        let indent = &line[..line.len() - line.trim_start().len()];
        Some(kubeconfig.replacen(
            line,
            &format!("{indent}client-certificate-data: {other}"),
            1,
        ))
    };
    for field in ["stringData", "data"] {
        let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) else {
            continue;
        };
        for value in values.values_mut() {
            let Some(text) = value.as_str() else { continue };
            let swapped = if field == "data" {
                b64.decode(text)
                    .ok()
                    .and_then(|k| String::from_utf8(k).ok())
                    .and_then(|k| swap(&k))
                    .map(|k| b64.encode(k))
            } else {
                swap(text)
            };
            if let Some(swapped) = swapped {
                *value = swapped.into();
            }
        }
    }
}

/// What a plan says and does, as every host sees it: its results, its JSON and its requests.
fn shown(finished: &Result<Finished, capi2argo_core::RunError>) -> String {
    match finished {
        Err(error) => format!("refused: {error}"),
        Ok(finished) => {
            let results: Vec<String> = finished.results.iter().map(|r| r.to_string()).collect();
            let plan = finished.plan.as_ref().map(|plan| {
                let requests = if plan.sealed {
                    String::new()
                } else {
                    plan.show(PlanFormat::Requests)
                };
                format!(
                    "{}\n{}\n{requests}\ntokens {:?}\ndeletes {:?}",
                    plan.show(PlanFormat::Json),
                    plan.show(PlanFormat::Text),
                    plan.tokens,
                    plan.token_deletes
                )
            });
            format!("{}\n{}", results.join("\n"), plan.unwrap_or_default())
        }
    }
}

/// The plan of `objects` read afresh, as one `kind: List` in the planner's order.
fn whole_plan(objects: &std::collections::BTreeMap<ObjectKey, Value>, options: &Options) -> String {
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": objects.values().collect::<Vec<_>>(),
    });
    let bytes = serde_json::to_vec(&list).expect("JSON");
    shown(&capi2argo_core::plan(&bytes, options, &mut NoFiles))
}

/// Runs the sequences of one case: how many plans were compared and how many clusters'
/// conversions the planner remembered after them all; the first disagreement, if any.
fn sequences_agree(case: &Path) -> Result<(usize, usize), String> {
    let input = fs::read(case.join("input.yaml")).map_err(|e| e.to_string())?;
    let Some(options) = options_of(case, &input) else {
        return Ok((0, 0));
    };
    let Ok(items) = capi2argo_core::items_json(&input, &options.limits) else {
        return Ok((0, 0));
    };
    let pool: Vec<Value> = serde_json::from_str(&items).map_err(|e| e.to_string())?;
    let pool: Vec<Value> = pool
        .into_iter()
        .filter(|o| !key_of(o).kind.is_empty() && !key_of(o).name.is_empty())
        .collect();
    if pool.is_empty() {
        return Ok((0, 0));
    }
    let name = case
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    let mut plans = 0;
    let mut remembered = 0;
    for sequence in 0..SEQUENCES {
        let seed = name.bytes().fold(sequence, |h, b| {
            h.wrapping_mul(31).wrapping_add(u64::from(b))
        });
        let mut draw = Draw(seed);
        let mut options = options.clone();
        let mut planner = Planner::new(options.limits.clone());
        let mut objects = std::collections::BTreeMap::new();
        // Most sequences begin from the whole case, as a controller's first list does.
        if sequence == 0 {
            for object in &pool {
                let bytes = serde_json::to_vec(object).expect("JSON");
                let key = planner
                    .keep(&bytes, "0")
                    .map_err(|e| format!("{name}: {e}"))?;
                objects.insert(key, object.clone());
            }
        }
        for step in 0..STEPS {
            let kept: Vec<ObjectKey> = objects.keys().cloned().collect();
            let what = match draw.below(13) {
                // The settings change: nothing converted under the old ones may be given back.
                12 => {
                    let namespaced = "namespacedNames=true".to_string();
                    match options.overrides.iter().position(|o| *o == namespaced) {
                        Some(at) => options.overrides.remove(at),
                        None => {
                            options.overrides.push(namespaced);
                            String::new()
                        }
                    };
                    "the settings change".to_string()
                }
                // The host's time moves on (or back): what certificates and tokens say of it
                // changes at their own times, which a remembered conversion must not outlive.
                10 | 11 => {
                    let moves = [3_600, 86_400, 40 * 86_400, 400 * 86_400, -86_400];
                    let by = moves[draw.below(moves.len())];
                    options.now = options.now.map(|now| now + by);
                    format!("time moves by {by} s")
                }
                0..=4 => {
                    let object = pool[draw.below(pool.len())].clone();
                    let object = if draw.below(2) == 0 {
                        changed(object, &mut draw)
                    } else {
                        object
                    };
                    let bytes = serde_json::to_vec(&object).expect("JSON");
                    let key = planner
                        .keep(&bytes, &step.to_string())
                        .map_err(|e| format!("{name}: {e}"))?;
                    assert_eq!(key, key_of(&object));
                    objects.insert(key.clone(), object);
                    format!("keep {key}")
                }
                5..=7 if !kept.is_empty() => {
                    let key = &kept[draw.below(kept.len())];
                    let object = changed(objects[key].clone(), &mut draw);
                    let bytes = serde_json::to_vec(&object).expect("JSON");
                    planner
                        .keep(&bytes, &step.to_string())
                        .map_err(|e| format!("{name}: {e}"))?;
                    objects.insert(key.clone(), object);
                    format!("change {key}")
                }
                _ if !kept.is_empty() => {
                    let key = &kept[draw.below(kept.len())];
                    assert!(planner.forget(key));
                    objects.remove(key);
                    format!("forget {key}")
                }
                _ => continue,
            };
            let kept_plan = shown(&planner.plan(&options, &mut NoFiles));
            let whole = whole_plan(&objects, &options);
            plans += 1;
            remembered += planner.conversions_kept();
            if kept_plan != whole {
                return Err(format!(
                    "{name}, sequence {sequence} (seed {seed}), step {step} ({what}): the kept plan differs from the whole one:\n--- kept\n{kept_plan}\n--- whole\n{whole}"
                ));
            }
        }
    }
    Ok((plans, remembered))
}

fn golden_cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases: Vec<PathBuf> = fs::read_dir(&root)
        .expect("tests/golden")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("input.yaml").is_file())
        .collect();
    cases.sort();
    cases
}

#[test]
fn kept_plans_equal_whole_plans_through_random_changes_to_every_golden_case() {
    let (mut plans, mut remembered) = (0, 0);
    let mut failures = Vec::new();
    for case in golden_cases() {
        match sequences_agree(&case) {
            Ok((n, kept)) => {
                plans += n;
                remembered += kept;
            }
            Err(failure) => failures.push(failure),
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases disagree; the first:\n{}",
        failures.len(),
        failures[0]
    );
    // Most cases plan: a case list that no longer reads would pass with nothing compared.
    assert!(plans > 2_000, "only {plans} plans compared");
    // The plans compared are mostly made from remembered conversions: a memo never filled
    // would pass with nothing of it compared.
    assert!(
        remembered > plans,
        "only {remembered} conversions remembered over {plans} plans"
    );
}

/// Regression guard for the conversions the planner remembers: a Cluster's Kubernetes version
/// is read from its control plane object, another object than the cluster's own; a new version
/// there must reach the plan though the Cluster and its kubeconfig Secret stay as they were.
/// (The random sequences above rarely change one: few cases hold a control plane whose version
/// the Cluster does not give itself.)
#[test]
fn a_control_planes_new_version_reaches_a_remembered_conversion() {
    let mut compared = 0;
    for case in golden_cases() {
        let input = fs::read(case.join("input.yaml")).expect("input");
        let Some(options) = options_of(&case, &input) else {
            continue;
        };
        let Ok(items) = capi2argo_core::items_json(&input, &options.limits) else {
            continue;
        };
        let pool: Vec<Value> = serde_json::from_str(&items).expect("JSON");
        let mut planner = Planner::new(options.limits.clone());
        let mut objects = std::collections::BTreeMap::new();
        for object in pool.iter().filter(|o| !key_of(o).name.is_empty()) {
            let bytes = serde_json::to_vec(object).expect("JSON");
            if let Ok(key) = planner.keep(&bytes, "0") {
                objects.insert(key, object.clone());
            }
        }
        let control_planes: Vec<ObjectKey> = objects
            .iter()
            .filter(|(k, o)| {
                k.kind.ends_with("ControlPlane") && o.pointer("/spec/version").is_some()
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in control_planes {
            let before = shown(&planner.plan(&options, &mut NoFiles));
            let mut object = objects[&key].clone();
            object["spec"]["version"] = "v1.99.0".into();
            let bytes = serde_json::to_vec(&object).expect("JSON");
            planner.keep(&bytes, "1").expect("kept");
            objects.insert(key.clone(), object);
            let kept = shown(&planner.plan(&options, &mut NoFiles));
            assert_eq!(
                kept,
                whole_plan(&objects, &options),
                "{}: {key}",
                case.display()
            );
            // Only a version the plan shows proves anything.
            if kept != before {
                compared += 1;
            }
        }
    }
    assert!(
        compared > 0,
        "no case's plan shows its control plane's version"
    );
}

/// One change costs one cluster's work: of a fleet of 40, the cluster whose kubeconfig Secret
/// changed is converted again, the Cluster whose label changed is converted again, and the
/// others are given back as they were; the plan is the whole one all the same.
#[test]
fn a_change_converts_the_clusters_it_touches_and_no_other() {
    let kubeconfig = |name: &str, server: &str| {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": format!("{name}-kubeconfig"),
                "namespace": "fleet",
                "labels": {"cluster.x-k8s.io/cluster-name": name},
            },
            "stringData": {"value": format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\nusers:\n- name: u\n  user: {{token: t-{name}}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
            )},
        })
    };
    let cluster = |name: &str, env: &str| {
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Cluster",
            "metadata": {"name": name, "namespace": "fleet", "labels": {"env": env}},
            "spec": {},
        })
    };
    let options = Options {
        now: Some(1_800_000_000),
        overrides: vec!["copyClusterLabels=true".into()],
        ..Options::default()
    };
    let mut planner = Planner::new(options.limits.clone());
    let mut objects = std::collections::BTreeMap::new();
    let keep =
        |planner: &mut Planner, objects: &mut std::collections::BTreeMap<_, _>, object: Value| {
            let key = planner
                .keep(&serde_json::to_vec(&object).expect("JSON"), "1")
                .expect("kept");
            objects.insert(key, object);
        };
    for n in 0..40 {
        let name = format!("c{n:02}");
        keep(
            &mut planner,
            &mut objects,
            kubeconfig(&name, &format!("https://{name}.example:6443")),
        );
        keep(&mut planner, &mut objects, cluster(&name, "dev"));
    }
    let first = shown(&planner.plan(&options, &mut NoFiles));
    assert_eq!(planner.conversions_of_last_plan(), (0, 40), "{first}");
    keep(
        &mut planner,
        &mut objects,
        kubeconfig("c07", "https://c07.example:7443"),
    );
    keep(&mut planner, &mut objects, cluster("c21", "prod"));
    let kept = shown(&planner.plan(&options, &mut NoFiles));
    assert_eq!(planner.conversions_of_last_plan(), (38, 2));
    assert!(
        kept.contains("c07.example:7443") && kept.contains("prod"),
        "{kept}"
    );
    assert_eq!(kept, whole_plan(&objects, &options));
    // Nothing changed: nothing converted.
    let _ = planner.plan(&options, &mut NoFiles);
    assert_eq!(planner.conversions_of_last_plan(), (40, 0));
    // A Cluster written again (a new resourceVersion, a heartbeat of what no plan reads):
    // nothing the plan reads changed, nothing is converted. Regression: every Cluster status
    // update converted its cluster again at the next plan, ten a second under Cluster API's
    // heartbeats.
    let mut heartbeat = cluster("c30", "dev");
    heartbeat["metadata"]["resourceVersion"] = json!("77");
    heartbeat["metadata"]["generation"] = json!(4);
    keep(&mut planner, &mut objects, heartbeat);
    let again = shown(&planner.plan(&options, &mut NoFiles));
    assert_eq!(planner.conversions_of_last_plan(), (40, 0));
    assert_eq!(again, whole_plan(&objects, &options));
}
