//! Fuzzes the whole function: any bytes in, never a panic, the same output every time, the
//! output stable under a second run, items cut while they are read written as whole ones, and
//! nothing lost that the plan did not remove: an owned Argo CD Secret leaves the output only
//! when the plan prunes or renames it away, one the plan keeps or leaves unchanged is the same
//! Secret in the output, and a guard that holds keeps every one.
#![no_main]

use std::collections::{HashMap, HashSet};

use capi2argo_core::{Action, Limits, Options, Plan, SecretId};
use capi2argo_krm::object::Object;
use capi2argo_krm::{self as krm, Text};
use capi2argo_yaml::{Node, same_content};
use libfuzzer_sys::fuzz_target;

/// An object's kind, namespace and name.
type Identity = (String, String, String);

/// Every object of a parsed input or output, by its kind, namespace and name.
fn objects(text: &[u8], limits: &Limits) -> Option<Vec<(Identity, Node<'static>)>> {
    let parsed = krm::parse(text, limits).ok()?;
    Some(
        parsed
            .items
            .into_iter()
            .filter(|i| !i.source_only)
            .filter_map(|i| {
                let o = Object::new(&i.node);
                let identity = (
                    o.kind()?.to_string(),
                    o.namespace().to_string(),
                    o.name()?.to_string(),
                );
                Some((identity, i.node.into_owned()))
            })
            .collect(),
    )
}

/// The same content, a null written one way or another (an item written anew writes an empty
/// value as `null`) being the same null.
fn same_meaning(a: &Node, b: &Node) -> bool {
    use capi2argo_yaml::{ScalarKind, Value};
    match (&a.value, &b.value) {
        (Value::Scalar(x), Value::Scalar(y))
            if x.kind() == ScalarKind::Null && y.kind() == ScalarKind::Null =>
        {
            a.tag == b.tag
        }
        (Value::Seq(x), Value::Seq(y)) => {
            a.tag == b.tag && x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_meaning(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            a.tag == b.tag
                && x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| same_meaning(k1, k2) && same_meaning(v1, v2))
        }
        _ => same_content(a, b),
    }
}

/// Whether exactly one object has this identity.
fn once(objects: &[(Identity, Node<'static>)], identity: &Identity) -> bool {
    objects.iter().filter(|(i, _)| i == identity).count() == 1
}

/// The Secrets the plan removes from the output: prunes, renames away, and token Secrets no Argo
/// CD Secret uses any more (`credentials: serviceAccount`).
fn removed(plan: &Plan) -> HashSet<SecretId> {
    plan.entries
        .iter()
        .filter_map(|e| match &e.action {
            Action::Prune => Some(e.secret.clone()),
            Action::Rename { from, .. } if *from != e.secret => Some(from.clone()),
            _ => None,
        })
        .chain(plan.token_deletes.iter().map(|d| d.secret.clone()))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let options = Options {
        // Small limits keep each execution fast; the code paths are the same.
        limits: Limits {
            max_input_bytes: 1 << 20,
            max_nodes: 200_000,
            max_alias_nodes: 10_000,
            ..Limits::default()
        },
        ..Default::default()
    };
    // A reader that reads no kind cuts every item it may: each must still be written as the
    // whole item is (copied from the same text, or emitted from the same tree).
    let limits = &options.limits;
    if let (Ok(cut), Ok(whole)) = (
        krm::parse_reading(data, limits, Some(|_: &mut Node| false)),
        krm::parse(data, limits),
    ) {
        assert_eq!(cut.items.len(), whole.items.len());
        for (c, w) in cut.items.iter().zip(&whole.items) {
            assert_eq!(c.text, w.text, "a cut item is written differently");
            if !matches!(w.text, Text::Span(_)) {
                assert!(same_content(&c.node, &w.node), "a cut item is emitted cut");
            }
        }
    }
    if let Ok(first) = capi2argo_core::run(data, &options) {
        // Determinism: the same input gives the same output, results and their order included
        // (hash maps are seeded anew for every map, so an order taken from one shows here).
        let same =
            capi2argo_core::run(data, &options).expect("the same input is read the same way");
        assert_eq!(first.output, same.output, "same input, different output");
        // Idempotence: the function's own output goes through unchanged (results aside).
        let second = capi2argo_core::run(first.output.as_bytes(), &options)
            .expect("the function's own output is valid input");
        // Results may differ (nothing left to prune, say): compare everything before them, in
        // YAML and in JSON output alike.
        let cut = |s: &str| capi2argo_krm::render::results_start(s).unwrap_or(s.len());
        assert_eq!(
            &first.output[..cut(&first.output)],
            &second.output[..cut(&second.output)]
        );
        // Nothing goes that the plan did not remove, nothing it kept changes, and a guard that
        // holds removes nothing it held.
        if let (Some(plan), Some(before), Some(after)) = (
            &first.plan,
            objects(data, limits),
            objects(first.output.as_bytes(), limits),
        ) {
            let gone = removed(plan);
            let out: HashMap<&Identity, &Node> = after.iter().map(|(i, n)| (i, n)).collect();
            let kept: HashSet<&SecretId> = plan
                .entries
                .iter()
                .filter(|e| matches!(e.action, Action::Kept { .. } | Action::Unchanged))
                .map(|e| &e.secret)
                .collect();
            for (identity, node) in &before {
                let (kind, namespace, name) = identity;
                let secret = SecretId {
                    namespace: namespace.clone(),
                    name: name.clone(),
                };
                match out.get(identity) {
                    None => assert!(
                        kind == "Secret" && gone.contains(&secret),
                        "{identity:?} is missing from the output, and the plan did not remove it"
                    ),
                    // (An identity given twice is two objects: compared only when it is one.)
                    Some(written)
                        if kind == "Secret"
                            && kept.contains(&secret)
                            && once(&before, identity) =>
                    {
                        assert!(
                            same_meaning(node, written),
                            "{identity:?} is kept or unchanged in the plan, and the output changed it"
                        )
                    }
                    Some(_) => {}
                }
            }
            // Guard errors by their fixed openings and endings (the text between them names
            // clusters, which any input can spell like a guard).
            let held = |start: &str, end: &str| {
                first
                    .results
                    .iter()
                    .any(|r| r.message.starts_with(start) && r.message.ends_with(end))
            };
            if held("this run would prune ", "(or a percentage) for this run") {
                assert!(
                    plan.entries.iter().all(|e| e.action != Action::Prune),
                    "maxPrune held, and the plan still prunes"
                );
            }
            if held(
                "kept as it is: ",
                "allowRename=false: run with allowRename=true to let it through",
            ) {
                assert!(
                    plan.entries
                        .iter()
                        .all(|e| !matches!(e.action, Action::Rename { .. })),
                    "allowRename held, and the plan still renames"
                );
            }
        }
    }
});
