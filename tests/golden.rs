//! Golden tests: each directory under tests/golden is one case, found from its folder and run
//! through the library and the binary, twice.
//!
//! A case holds `input.yaml` (standard input), optionally `args` (one argument per line; a case
//! whose first argument is `plan` shows the plan instead), `now` (the time it runs at) and a
//! README (every case runs with the randomness of `tests/golden/random`, so sealing is pinned), and `expected/{output.yaml, stderr.txt, exit-code}`. A new case is a new folder:
//! `UPDATE_GOLDEN=1 cargo test --test golden <case>` writes its expectations from the current
//! behaviour (review them before committing). `cargo test --test golden provider-eks` runs one.

#[path = "common/mod.rs"]
#[allow(dead_code)]
mod common;

use std::fs;
use std::io::Write;
use std::path::Path;

use capi2argo_core::host;
use capi2argo_core::{NoFiles, Options};

/// The command's own argument parser: the cases run the library as the command runs it.
use capi2argo::args::Args;

/// What a run printed and how it exited.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

/// The time the case runs at: its own `now` file, else the time every case runs at.
fn now_of(case: &Path) -> String {
    fs::read_to_string(case.join("now"))
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|_| common::pinned_now())
}

fn args_of(case: &Path) -> Vec<String> {
    fs::read_to_string(case.join("args"))
        .map(|t| t.lines().map(String::from).collect())
        .unwrap_or_default()
}

/// The library through the same host driver and argument parser the binary uses.
fn run_library(input: &[u8], args: &[String], now: &str) -> Run {
    let args =
        Args::try_parse_from(std::iter::once("capi2argo").chain(args.iter().map(String::as_str)))
            .expect("the case's args parse");
    let mut stdout = String::new();
    let options = capi2argo_core::Options {
        now: Some(capi2argo_core::parse_instant(now).expect("a pinned time")),
        random: Some(
            host::random(Some(&common::pinned_random()), |_| Ok(())).expect("64 hex digits"),
        ),
        random_pinned: true,
        ..args.options(None)
    };
    let mut sink = |s: &str| stdout.push_str(s);
    let report = match args.plan_format() {
        Some(format) => host::drive_plan(input, &options, &mut NoFiles, format, &mut sink),
        None => host::drive(input, &options, &mut NoFiles, &mut sink),
    };
    Run {
        stdout,
        stderr: report.stderr,
        code: report.exit as i32,
    }
}

fn run_binary(input: &[u8], args: &[String], now: &str) -> Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::capi2argo_at(&args, input, None, now);
    Run {
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
        code: out.status.code().expect("exit code, not a signal"),
    }
}

fn expected(case: &Path) -> Run {
    let read =
        |name: &str| fs::read_to_string(case.join("expected").join(name)).unwrap_or_default();
    Run {
        stdout: read("output.yaml"),
        stderr: read("stderr.txt"),
        code: read("exit-code").trim().parse().unwrap_or(0),
    }
}

fn write_expected(case: &Path, run: &Run) {
    let dir = case.join("expected");
    fs::create_dir_all(&dir).expect("expected/ created");
    fs::write(dir.join("output.yaml"), &run.stdout).expect("written");
    fs::write(dir.join("stderr.txt"), &run.stderr).expect("written");
    fs::write(dir.join("exit-code"), format!("{}\n", run.code)).expect("written");
}

/// The first differing line with some context: enough to see what changed.
fn difference(what: &str, want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let at = w
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(w.len().min(g.len()));
    let show = |lines: &[&str]| {
        let mut shown: String = lines
            [at.saturating_sub(3).min(lines.len())..(at + 4).min(lines.len())]
            .iter()
            .map(|l| format!("    |{l}\n"))
            .collect();
        if at + 4 > lines.len() {
            shown.push_str("    <end>\n");
        }
        shown
    };
    Some(format!(
        "{what} differs at line {}:\n  expected:\n{}  got:\n{}",
        at + 1,
        show(&w),
        show(&g)
    ))
}

/// A ResourceList's text without its results (YAML or JSON).
fn without_results(output: &str) -> &str {
    capi2argo_krm::render::results_start(output).map_or(output, |at| &output[..at])
}

fn compare(label: &str, want: &Run, got: &Run) -> Vec<String> {
    let mut problems: Vec<String> = [
        difference(&format!("{label} stdout"), &want.stdout, &got.stdout),
        difference(&format!("{label} stderr"), &want.stderr, &got.stderr),
    ]
    .into_iter()
    .flatten()
    .collect();
    if want.code != got.code {
        problems.push(format!(
            "{label} exit code: expected {}, got {}",
            want.code, got.code
        ));
    }
    problems
}

/// Runs one case: library and binary against the expectations, then the output through again.
fn check(name: &str) -> Result<(), libtest_mimic::Failed> {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let input = fs::read(case.join("input.yaml")).expect("input readable");
    let args = args_of(&case);
    let now = now_of(&case);
    let library = run_library(&input, &args, &now);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        write_expected(&case, &library);
    }
    let want = expected(&case);
    let mut problems = compare("library", &want, &library);
    problems.extend(compare("binary", &want, &run_binary(&input, &args, &now)));
    // Idempotence: the function's own output goes through unchanged (results may differ:
    // a second run has nothing left to prune, for one). A plan is not resources.
    let plan = args.first().is_some_and(|a| a == "plan");
    if library.code != 2 && !plan {
        let again = run_library(library.stdout.as_bytes(), &args, &now);
        problems.extend(difference(
            "second run output (results aside)",
            without_results(&library.stdout),
            without_results(&again.stdout),
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("case {name}:\n{}", problems.join("\n")).into())
    }
}

/// One test per case directory, named after it, then the checks over all of them.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials: Vec<libtest_mimic::Trial> = case_directories()
        .into_iter()
        .map(|name| libtest_mimic::Trial::test(name.clone(), move || check(&name)))
        .collect();
    trials.push(libtest_mimic::Trial::test("the-binary-under-test", || {
        the_binary_under_test();
        Ok(())
    }));
    trials.push(libtest_mimic::Trial::test(
        "untouched-items-are-copied-byte-for-byte",
        || {
            untouched_items_are_copied_byte_for_byte();
            Ok(())
        },
    ));
    trials.push(libtest_mimic::Trial::test(
        "no-case-gives-argo-cd-two-clusters-of-one-server-or-name",
        || {
            no_case_gives_argo_cd_two_clusters_of_one_server_or_name();
            Ok(())
        },
    ));
    trials.push(libtest_mimic::Trial::test(
        "what-convert-writes-validate-accepts",
        || {
            what_convert_writes_validate_accepts();
            Ok(())
        },
    ));
    libtest_mimic::run(&args, trials).exit();
}

/// Issue "The first hour" (convert and validate disagreed: an `oci` exec login written with a
/// warning, refused by `validate`): every case that converts cleanly writes Secrets that
/// `validate`, with the case's own settings, accepts — so a Kptfile with both never fails.
fn what_convert_writes_validate_accepts() {
    let mut problems = Vec::new();
    for name in case_directories() {
        let case = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(&name);
        let args = args_of(&case);
        let converts = !args
            .iter()
            .any(|a| matches!(a.as_str(), "plan" | "validate" | "wrap" | "--fn-config"))
            && !args.iter().any(|a| a.contains("action=validate"));
        let code = fs::read_to_string(case.join("expected/exit-code")).unwrap_or_default();
        let Ok(output) = fs::read(case.join("expected/output.yaml")) else {
            continue;
        };
        if !converts || code.trim() != "0" || output.is_empty() {
            continue;
        }
        let mut validate = args.clone();
        validate.extend(["--set".to_string(), "action=validate".to_string()]);
        let run = run_library(&output, &validate, &now_of(&case));
        if run.code != 0 {
            problems.push(format!("{name}: exit {}\n{}", run.code, run.stderr));
        }
    }
    assert!(
        problems.is_empty(),
        "validate refuses what convert wrote:\n{}",
        problems.join("\n")
    );
}

/// Names the binary the cases ran with (`make test` runs them with three: the debug build, the
/// x86_64 release binary and the aarch64 one under qemu), and holds a binary given through
/// `CAPI2ARGO_TEST_BINARY` to the machine `CAPI2ARGO_TEST_MACHINE` says it is built for, so an
/// emulated run cannot quietly test the host's binary.
fn the_binary_under_test() {
    let Some(path) = std::env::var_os("CAPI2ARGO_TEST_BINARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let header = fs::read(&path).expect("CAPI2ARGO_TEST_BINARY readable");
    assert!(
        header.starts_with(b"\x7fELF") && header.len() > 20,
        "not an ELF file"
    );
    let machine = match u16::from_le_bytes([header[18], header[19]]) {
        0x3e => "x86_64",
        0xb7 => "aarch64",
        other => panic!("ELF machine {other:#x}"),
    };
    let runner = std::env::var("CAPI2ARGO_TEST_RUNNER").unwrap_or_default();
    let _ = writeln!(
        std::io::stderr().lock(),
        "\ngolden: cases run with {} ({machine}){}\n",
        std::path::Path::new(&path).display(),
        if runner.is_empty() {
            String::new()
        } else {
            format!(" through {runner}")
        }
    );
    if let Ok(want) = std::env::var("CAPI2ARGO_TEST_MACHINE") {
        assert_eq!(
            machine, want,
            "CAPI2ARGO_TEST_BINARY is built for another machine"
        );
    }
}

/// The case directories, sorted.
fn case_directories() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases: Vec<String> = fs::read_dir(&root)
        .expect("tests/golden exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.join("input.yaml").is_file())
        .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
        .collect();
    cases.sort();
    cases
}

/// kpt rewrites files whose scalars change style; untouched items must come out exactly as they came in.
fn untouched_items_are_copied_byte_for_byte() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/untouched-items");
    let input = fs::read_to_string(case.join("input.yaml")).expect("input readable");
    let outcome = capi2argo_core::run(input.as_bytes(), &Options::default()).expect("runs");
    // Generated Secrets are appended: everything before them is the input, to the byte.
    assert!(
        outcome.output.starts_with(&input),
        "{}",
        difference(
            "items",
            &input,
            &outcome.output[..input.len().min(outcome.output.len())]
        )
        .unwrap_or_default()
    );
    assert!(
        outcome.output.len() > input.len(),
        "a cluster Secret was generated"
    );
}

/// Issue "Sources round 2": no case gives Argo CD two clusters for one server or one name. Every
/// Argo CD cluster Secret a case's output writes (new, or changed from its input) has a server
/// and a name no other Argo CD cluster Secret of that output has.
fn no_case_gives_argo_cd_two_clusters_of_one_server_or_name() {
    use capi2argo_krm::object::Object;
    use capi2argo_yaml::same_content;
    let limits = capi2argo_core::Limits::default();
    let mut problems = Vec::new();
    for name in case_directories() {
        let case = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(&name);
        let (Ok(input), Ok(output)) = (
            fs::read(case.join("input.yaml")),
            fs::read(case.join("expected/output.yaml")),
        ) else {
            continue;
        };
        let (Ok(before), Ok(after)) = (
            capi2argo_krm::parse(&input, &limits),
            capi2argo_krm::parse(&output, &limits),
        ) else {
            continue;
        };
        let clusters: Vec<&capi2argo_yaml::Node> = after
            .items
            .iter()
            .map(|i| &i.node)
            .filter(|n| Object::new(n).label("argocd.argoproj.io/secret-type") == Some("cluster"))
            .collect();
        let value = |n: &capi2argo_yaml::Node, key: &str| {
            Object::new(n)
                .secret_value(key)
                .ok()
                .flatten()
                .map(|(_, v)| v.trim_end_matches('/').to_string())
                .filter(|v| !v.is_empty())
        };
        for written in clusters
            .iter()
            .filter(|n| !before.items.iter().any(|i| same_content(&i.node, n)))
        {
            for key in ["server", "name"] {
                let Some(mine) = value(written, key) else {
                    continue;
                };
                let others = clusters
                    .iter()
                    .filter(|n| value(n, key).as_deref() == Some(mine.as_str()))
                    .count();
                if others > 1 {
                    problems.push(format!(
                        "{name}: {others} Argo CD clusters with {key} {mine}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
