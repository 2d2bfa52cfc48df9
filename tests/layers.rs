//! The layering, as the workspace's manifest states it: each crate depends only on the crates
//! below it (which the compiler keeps: a crate cannot import one it does not depend on, and
//! cargo refuses a circle), and inside the core each module imports only the layers below its
//! own (which this reads from the code, every form of path included).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{TempDir, root, text};

/// The workspace's crates, bottom to top, and the crates each may depend on: a crate's own
/// floor is below every host's.
const CRATES: &[(&str, &str, &[&str])] = &[
    ("crates/yaml", "capi2argo-yaml", &[]),
    ("crates/krm", "capi2argo-krm", &["capi2argo-yaml"]),
    (
        "crates/core",
        "capi2argo-core",
        &["capi2argo-yaml", "capi2argo-krm"],
    ),
    // The hosts: each over the core, none over another.
    (".", "capi2argo", &["capi2argo-core"]),
    ("controller", "capi2argo-controller", &["capi2argo-core"]),
    ("wasm", "capi2argo-wasm", &["capi2argo-core"]),
    ("wasm/kpt", "capi2argo-kpt", &["capi2argo-core"]),
    ("wasm/policy", "capi2argo-policy", &["capi2argo-core"]),
];

/// The core's modules, bottom to top: each imports only those listed before it.
const CORE_LAYERS: &[&str] = &[
    "request",
    "convert",
    "raw",
    "fleet",
    "profiles",
    "projects",
    "sources",
    "validate",
    "seal",
    "appsets",
    "config",
    "access",
    "credentials",
    "wrap",
    "reconcile",
    "run",
    "planner",
    "read_set",
    "documents",
    "host",
];

/// The workspace's own crates a manifest depends on (normal and build dependencies; tests may
/// reach anywhere), by package name.
fn own_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.trim_matches(['[', ']']).to_string();
            continue;
        }
        if !(section == "dependencies" || section == "build-dependencies") {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if !value.contains("path =") {
            continue;
        }
        // `yaml = { package = "capi2argo-yaml", path = … }` names its package.
        let package = value
            .split("package = \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or(key.trim());
        out.insert(package.to_string());
    }
    out
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let root = root();
    let workspace = fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let mut wrong = Vec::new();
    for (dir, package, allowed) in CRATES {
        let manifest = fs::read_to_string(root.join(dir).join("Cargo.toml")).expect("manifest");
        assert!(
            manifest.contains(&format!("name = \"{package}\"")),
            "{dir}/Cargo.toml is not the package {package}"
        );
        if *dir != "." {
            assert!(
                workspace.contains(&format!("\"{dir}\"")),
                "{dir} is no workspace member"
            );
        }
        for dependency in own_dependencies(&manifest) {
            if !allowed.contains(&dependency.as_str()) {
                wrong.push(format!("{package} depends on {dependency}"));
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    // Every crate of the workspace has its floor here.
    let members: Vec<&str> = workspace
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("workspace members")
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .collect();
    for member in members {
        assert!(
            CRATES.iter().any(|(dir, _, _)| *dir == member),
            "the workspace member {member} has no floor in tests/layers.rs"
        );
    }
}

/// The compiler keeps the floors: in a scratch copy of the two lowest crates, the YAML reader
/// made to depend on the KRM crate above it is refused by cargo before anything compiles.
#[test]
fn cargo_refuses_a_crate_that_depends_on_one_above_it() {
    let scratch = TempDir::new("layers", "upward");
    for dir in ["crates/yaml", "crates/krm"] {
        copy_dir(&root().join(dir), &scratch.path(dir));
    }
    fs::write(
        scratch.path("Cargo.toml"),
        "[workspace]\nmembers = [\"crates/yaml\", \"crates/krm\"]\nresolver = \"3\"\n",
    )
    .expect("written");
    let manifest = scratch.path("crates/yaml/Cargo.toml");
    let text_of = fs::read_to_string(&manifest).expect("manifest");
    let upward = text_of.replacen(
        "[dependencies]\n",
        "[dependencies]\ncapi2argo-krm = { path = \"../krm\" }\n",
        1,
    );
    assert_ne!(upward, text_of, "the YAML crate has a [dependencies] table");
    fs::write(&manifest, upward).expect("written");
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--offline", "--format-version", "1"])
        .current_dir(scratch.path(""))
        .output()
        .expect("cargo runs");
    let said = text(&out.stderr);
    assert!(!out.status.success(), "cargo accepted an upward dependency");
    assert!(said.contains("cyclic"), "cargo said: {said}");
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("created");
    for entry in fs::read_dir(from).expect("readable") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("a name");
        // Only what cargo reads: the manifest and the sources.
        if path.is_dir() {
            if name == "src" {
                copy_dir(&path, &to.join(name));
            }
        } else if name == "Cargo.toml" || path.extension().is_some_and(|e| e == "rs") {
            fs::copy(&path, to.join(name)).expect("copied");
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below src/: `reconcile/plan.rs` is `reconcile::plan`,
/// `reconcile/mod.rs` is `reconcile`, `lib.rs` the crate root.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("below src");
    let mut path: Vec<String> = relative
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// Code without comments, string and character literals: what they say names no module.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let open = 2 + hashes;
            i += rest[open..]
                .find(&close)
                .map_or(rest.len(), |end| open + end + close.len());
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
        } else if bytes[i] == b'\'' && (rest.starts_with("'\\") || rest.get(2..3) == Some("'")) {
            // A character literal ('"', '\n'); a lifetime has no closing quote.
            i += rest[1..].find('\'').map_or(1, |end| end + 2);
        } else {
            let c = rest.chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The identifier at the start of `text`.
fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The first segment of each path of a `{…}` group at the start of `text` (`{a, b::c, self}`
/// gives a, b and self).
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut start) = (0usize, 1usize);
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                let head = identifier(text[start..at].trim_start());
                if !head.is_empty() {
                    heads.push(head.to_string());
                }
                start = at + 1;
                if c == '}' {
                    break;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    heads
}

/// The crate's top-level modules a file's code names, however it names them: `crate::a`,
/// `use crate::{a, b::c}`, and `super::…` paths that climb to the crate root.
fn named_modules(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let starts_path = |at: usize| {
        !code[..at].ends_with("::")
            && !code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let heads_of = |after: &str, named: &mut BTreeSet<String>| {
        if after.starts_with('{') {
            named.extend(group_heads(after));
        } else {
            named.insert(identifier(after).to_string());
        }
    };
    for (at, _) in code.match_indices("crate::") {
        if starts_path(at) {
            heads_of(&code[at + "crate::".len()..], &mut named);
        }
    }
    for (at, _) in code.match_indices("super::") {
        if !starts_path(at) {
            continue;
        }
        let mut rest = &code[at..];
        let mut climbed = 0;
        while let Some(next) = rest.strip_prefix("super::") {
            rest = next.trim_start();
            climbed += 1;
        }
        match module.len().checked_sub(climbed) {
            Some(0) => heads_of(rest, &mut named),
            Some(_) => {
                named.insert(module[0].clone());
            }
            // Climbing past the root does not compile; nothing to check.
            None => {}
        }
    }
    named.remove("self");
    named
}

#[test]
fn every_core_module_has_a_layer() {
    let src = root().join("crates/core/src");
    let mut missing: Vec<String> = fs::read_dir(&src)
        .expect("readable")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.trim_end_matches(".rs").to_string();
            (name != "lib" && !CORE_LAYERS.contains(&name.as_str())).then_some(name)
        })
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "core modules without a layer: {missing:?}"
    );
}

#[test]
fn no_core_module_imports_one_above_it() {
    let src = root().join("crates/core/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = BTreeSet::new();
    for file in &files {
        let module = module_path(&src, file);
        let Some(own) = module
            .first()
            .and_then(|m| CORE_LAYERS.iter().position(|l| l == m))
        else {
            continue;
        };
        let text = fs::read_to_string(file).expect("readable");
        // Tests may reach anywhere; the rule is about the code.
        let code = code_only(text.split("#[cfg(test)]").next().unwrap_or_default());
        for used in named_modules(&code, &module) {
            if let Some(layer) = CORE_LAYERS.iter().position(|l| *l == used)
                && layer > own
            {
                wrong.insert(format!(
                    "{} imports {used}",
                    file.strip_prefix(&src).expect("below src").display()
                ));
            }
        }
    }
    let wrong: Vec<String> = wrong.into_iter().collect();
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

/// Regression (issue 46): the check read only `crate::name`, so `use crate::{a, b}` and
/// `super::super::name` reached any layer unseen.
#[test]
fn regression_grouped_and_relative_imports_are_seen() {
    let module = ["reconcile".to_string(), "plan".to_string()];
    let named = |code: &str| named_modules(&code_only(code), &module);
    assert_eq!(
        named("use crate::{run::Options, host, self};"),
        BTreeSet::from(["host".into(), "run".into()])
    );
    assert_eq!(
        named("use super::super::documents::Document;"),
        BTreeSet::from(["documents".into()])
    );
    assert_eq!(
        named("use super::super::{host::Exit, run};"),
        BTreeSet::from(["host".into(), "run".into()])
    );
    // Its own layer, by a sibling.
    assert_eq!(
        named("use super::guard::Held;"),
        BTreeSet::from(["reconcile".into()])
    );
    // What comments and strings say is no import.
    assert!(named("// crate::host\nlet s = \"crate::run\"; let c = '\"';").is_empty());
    assert_eq!(
        named("x.map(|v| crate::host::now(v))"),
        BTreeSet::from(["host".into()])
    );
}
