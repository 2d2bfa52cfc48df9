//! The source tree's layering, as the README states it: each layer imports only layers below it.

use std::fs;
use std::path::Path;

/// Bottom to top; `limits` is shared by all.
const LAYERS: &[&str] = &[
    "limits",
    "yaml",
    "krm",
    "convert",
    "raw",
    "fleet",
    "profiles",
    "sources",
    "validate",
    "appsets",
    "config",
    "access",
    "credentials",
    "wrap",
    "reconcile",
    "run",
    "read_set",
    "documents",
    "host",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The layer a file belongs to: its folder under src/, or its file name.
fn layer_of(src: &Path, file: &Path) -> Option<usize> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?.trim_end_matches(".rs");
    LAYERS.iter().position(|l| *l == name)
}

/// Every module of the library has its place in the list (the command, in src/cli/, is a
/// crate of its own over the library's public API).
#[test]
fn every_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut missing: Vec<String> = fs::read_dir(&src)
        .expect("readable")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.trim_end_matches(".rs").to_string();
            (!matches!(name.as_str(), "lib" | "cli") && layer_of(&src, &p).is_none())
                .then_some(name)
        })
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "modules without a layer: {missing:?}");
}

#[test]
fn no_module_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(own) = layer_of(&src, file) else {
            continue;
        };
        let text = fs::read_to_string(file).expect("readable");
        // Tests may reach anywhere; the rule is about the code.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (at, _) in code.match_indices("crate::") {
            let used: String = code[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(layer) = LAYERS.iter().position(|l| *l == used) {
                if layer > own {
                    wrong.push(format!(
                        "{} imports crate::{used}",
                        file.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    wrong.dedup();
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}
