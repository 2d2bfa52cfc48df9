//! Every golden input read by go-yaml v3 — the YAML reader inside kpt and kustomize — and by the
//! function's own reader, to the same documents: the same structure, aliases expanded, the same
//! text for every scalar. go-yaml is built from Debian's packages (golang-go,
//! golang-gopkg-yaml.v3-dev) by the test itself; the inputs the two read differently are
//! listed, each with why, in tests/yaml/goyaml-deviations.txt.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use capi2argo_core::Limits;
use capi2argo_yaml::{Node, Value, parse_stream};
use serde_json::{Value as Json, json};

use crate::common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The checker, built once per test run into target/; `None` (said loudly) without Go or go-yaml.
fn checker() -> Option<PathBuf> {
    common::go_reference(
        "goyaml",
        "tests/yaml/goyaml/main.go",
        &[("gopkg.in/yaml.v3", "golang-gopkg-yaml.v3-dev")],
        "go-yaml v3's reading was NOT compared",
    )
}

/// go-yaml's reading: the documents, or why it refused the stream. Input and output go through
/// files, so neither side waits on a pipe the other stopped reading.
fn goyaml(binary: &Path, input: &Path, scratch: &Path) -> Result<Json, String> {
    let output = scratch.join("goyaml.json");
    let mut child = Command::new(binary)
        .stdin(fs::File::open(input).expect("input"))
        .stdout(fs::File::create(&output).expect("output"))
        .spawn()
        .expect("the checker runs");
    let started = std::time::Instant::now();
    while child.try_wait().expect("the checker runs").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the checker did not finish in 60 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let text = fs::read(&output).expect("output");
    let answer: Json = serde_json::from_slice(&text).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            input.display(),
            String::from_utf8_lossy(&text[..text.len().min(300)])
        )
    });
    match answer.get("error") {
        Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
        None => Ok(answer["documents"].clone()),
    }
}

fn dump(node: &Node) -> Json {
    match &node.value {
        Value::Scalar(s) => Json::String(s.text.to_string()),
        Value::Seq(items) => Json::Array(items.iter().map(dump).collect()),
        Value::Map(entries) => json!({
            "map": entries.iter().map(|(k, v)| json!([dump(k), dump(v)])).collect::<Vec<_>>()
        }),
    }
}

/// The function's own reading, in the checker's terms.
fn ours(input: &[u8]) -> Result<Json, String> {
    let text = std::str::from_utf8(input).map_err(|e| e.to_string())?;
    let docs = parse_stream(text, &Limits::default()).map_err(|e| e.to_string())?;
    Ok(Json::Array(docs.iter().map(|d| dump(&d.root)).collect()))
}

#[test]
fn golden_inputs_read_as_go_yaml_v3_reads_them() {
    let Some(binary) = checker() else {
        return;
    };
    let listed: BTreeMap<String, String> =
        fs::read_to_string(root().join("tests/yaml/goyaml-deviations.txt"))
            .expect("tests/yaml/goyaml-deviations.txt")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let (case, why) = l.split_once(' ')?;
                Some((case.to_string(), why.trim().to_string()))
            })
            .collect();
    let scratch = common::TempDir::new("goyaml", "golden");
    let mut differing = BTreeMap::new();
    let mut compared = 0;
    for entry in fs::read_dir(root().join("tests/golden")).expect("tests/golden") {
        let case = entry.expect("entry").path();
        let Ok(input) = fs::read(case.join("input.yaml")) else {
            continue;
        };
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        compared += 1;
        let theirs = goyaml(&binary, &case.join("input.yaml"), &scratch.0);
        let mine = ours(&input);
        let agree = match (&theirs, &mine) {
            (Ok(a), Ok(b)) => a == b,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !agree {
            let what = match (&theirs, &mine) {
                (Err(e), Ok(_)) => format!("go-yaml refuses ({e}), this reader reads it"),
                (Ok(_), Err(e)) => format!("this reader refuses ({e}), go-yaml reads it"),
                _ => "both read it, to different documents".to_string(),
            };
            differing.insert(name, what);
        }
    }
    assert!(compared > 100, "the golden inputs were read");
    let unlisted: Vec<String> = differing
        .iter()
        .filter(|(case, _)| !listed.contains_key(*case))
        .map(|(case, what)| format!("{case}: {what}"))
        .collect();
    let stale: Vec<&String> = listed
        .keys()
        .filter(|c| !differing.contains_key(*c))
        .collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "go-yaml v3 and this reader disagree on cases not listed in tests/yaml/goyaml-deviations.txt:\n{}\nlisted, but they agree now: {stale:?}",
        unlisted.join("\n")
    );
}
