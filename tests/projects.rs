//! Argo CD's glob as the AppProject rules compute it, against the reference Argo CD itself runs:
//! github.com/gobwas/glob without separators (util/glob), built from Debian's packages by the
//! test (tests/projects/glob). Every pattern and text below is asked of both: where the reference
//! matches, compiles or refuses, so must the core.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use capi2argo_core::internals::projects::Glob;
use serde_json::{Value as Json, json};

use crate::common;

/// The reference matcher, built into target/; `None` (said loudly) without Go or gobwas/glob.
fn reference() -> Option<PathBuf> {
    common::go_reference(
        "projects-glob",
        "tests/projects/glob",
        &[("github.com/gobwas/glob", "golang-github-gobwas-glob-dev")],
        "AppProject globs were NOT compared with Argo CD's (gobwas/glob)",
    )
}

/// Patterns AppProjects hold (servers, namespaces), and every construct of the syntax.
const PATTERNS: &[&str] = &[
    "*",
    "",
    "https://kubernetes.default.svc",
    "https://*",
    "https://*.example:6443",
    "*.example*",
    "guestbook",
    "guestbook-*",
    "guestbook-?",
    "team-[ab]",
    "team-[!ab]",
    "ns-[0-9]",
    "ns-[0-9][0-9]",
    "{dev,prod}-*",
    "{dev,{pre,}prod}",
    "{,x}",
    "a\\*b",
    "a\\?",
    "[\\]]",
    "[a-]",
    "**",
    "*-*-*",
    "?*?",
    "[abc",
    "{a,b",
    "a\\",
    "[]",
    "[z-a]",
    "[!]",
    "{a,b}c",
    "a{",
    "a}",
    "a,b",
    "[[]",
    "[!a-c]x",
    "*{a,b}*",
    "{*,x}y",
    "é*",
];

const TEXTS: &[&str] = &[
    "",
    "https://kubernetes.default.svc",
    "https://a.example:6443",
    "http://a.example",
    "https://a/b.example:6443",
    "guestbook",
    "guestbook-1",
    "guestbook-12",
    "team-a",
    "team-c",
    "ns-7",
    "ns-42",
    "dev-eu",
    "prod",
    "preprod",
    "x",
    "a*b",
    "axb",
    "a?",
    "]",
    "-",
    "a-b-c",
    "ab",
    "a",
    "z",
    "é",
    "ac",
    "a}",
    "a,b",
    "[",
    "dx",
    "xay",
    "y",
    "éa",
];

/// Where gobwas/glob 0.2.3 is wrong and ours is not: a `*` inside an alternative followed by
/// more pattern (`{*,x}y` does not match `y` there), a flaw of its compiler's optimisation. Ours
/// matches more, so it sets up a ServiceAccount Argo CD would not use, never misses one it would.
const DIVERGES: &[&str] = &["{*,x}y"];

/// Where gobwas/glob 0.2.3 itself panics (an index out of range): Argo CD's controller then fails
/// on the pattern; nothing is claimed of ours there.
const PANICS: &[&str] =
    &[r#""a{" on "a": {"panic":"runtime error: slice bounds out of range [:2] with length 1"}"#];

#[test]
fn argo_cds_glob_is_gobwas_glob_without_separators() {
    let Some(binary) = reference() else {
        return;
    };
    let questions: Vec<(&str, &str)> = PATTERNS
        .iter()
        .flat_map(|p| TEXTS.iter().map(move |t| (*p, *t)))
        .collect();
    let mut child = Command::new(&binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: String = questions
        .iter()
        .map(|(p, t)| format!("{}\n", json!({"pattern": p, "text": t})))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()));
    let out = child.wait_with_output().expect("the reference answers");
    writer.join().expect("written").expect("written");
    let answers: Vec<Json> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(answers.len(), questions.len());
    let mut differ = Vec::new();
    let mut diverged = std::collections::BTreeSet::new();
    let mut panics = Vec::new();
    for ((pattern, text), answer) in questions.iter().zip(&answers) {
        let ours = Glob::new(pattern).map(|g| g.matches(text));
        if answer.get("panic").is_some() {
            panics.push(format!("{pattern:?} on {text:?}: {answer}"));
            continue;
        }
        let same = match (&ours, answer.get("match").and_then(Json::as_bool)) {
            (Ok(m), Some(r)) => *m == r,
            (Err(_), None) => answer.get("error").is_some(),
            _ => false,
        };
        if same {
            continue;
        }
        if DIVERGES.contains(pattern) {
            diverged.insert(*pattern);
        } else {
            differ.push(format!(
                "{pattern:?} on {text:?}: ours {ours:?}, Argo CD's {answer}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // A divergence listed that no longer shows (gobwas fixed, or ours changed) goes off the list.
    let listed: std::collections::BTreeSet<&str> = DIVERGES.iter().copied().collect();
    assert_eq!(
        diverged, listed,
        "where gobwas/glob is wrong and ours is not"
    );
    assert_eq!(panics, PANICS, "where gobwas/glob itself panics");
}
