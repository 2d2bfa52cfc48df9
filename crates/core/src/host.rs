//! The host driver: input, files and output to an exit status — what every host (the command,
//! the golden tests, the WebAssembly shells) does around the core, done once.
//!
//! Reading arguments, files and streams stays with the host; this module runs the core on what
//! it was given, and says what to print where and how to exit.

use crate::reconcile::view::PlanFormat;
use crate::run::{Files, NoFiles, Options, RunError, plan, run_streaming};
use krm::finding::{Finding, failed};
use krm::{self};

/// The environment variable that pins the time certificates are checked against (RFC 3339 in
/// UTC, or a date), for reproducible runs and tests; without it, the host's clock.
pub const NOW_VARIABLE: &str = "CAPI2ARGO_NOW";

/// The time a host gives the core (Unix seconds): `pinned`, the value of [`NOW_VARIABLE`] when
/// the host's environment sets it, else its `clock`. The host reads both; this only decides.
pub fn now(pinned: Option<&str>, clock: std::time::SystemTime) -> Result<i64, String> {
    match pinned {
        Some(text) => crate::validate::expiry::parse_instant(text).ok_or_else(|| {
            format!("{NOW_VARIABLE}={text:?} is not a time: expected RFC 3339 in UTC (2026-11-24T00:00:00Z) or a date")
        }),
        None => Ok(clock
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))),
    }
}

/// The environment variable that pins the host's randomness (64 hexadecimal digits: 32 bytes),
/// so that sealed output is reproducible in tests; never to be set in use, where every run must
/// seal with fresh keys.
pub const RANDOM_VARIABLE: &str = "CAPI2ARGO_RANDOM";

/// The 32 random bytes a host gives the core: `pinned`, the value of [`RANDOM_VARIABLE`] when the
/// host's environment sets it, else what `fill` draws from the operating system.
pub fn random(
    pinned: Option<&str>,
    fill: impl FnOnce(&mut [u8; 32]) -> Result<(), String>,
) -> Result<[u8; 32], String> {
    let mut bytes = [0u8; 32];
    match pinned {
        Some(text) => {
            let digits = text.trim().as_bytes();
            let hex = |d: u8| (d as char).to_digit(16);
            if digits.len() != 64 || digits.iter().any(|d| hex(*d).is_none()) {
                return Err(format!("{RANDOM_VARIABLE} is not 64 hexadecimal digits"));
            }
            for (byte, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
                *byte = pair
                    .iter()
                    .fold(0, |b, d| b << 4 | hex(*d).unwrap_or(0) as u8);
            }
        }
        None => fill(&mut bytes).map_err(|e| format!("no randomness from the system: {e}"))?,
    }
    Ok(bytes)
}

/// How a run ends, as a process would exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: converted; warnings possible.
    Success = 0,
    /// 1: at least one error result; the output is still complete.
    Failure = 1,
    /// 2: unusable input or arguments; nothing was written.
    Unusable = 2,
}

/// What a host prints on standard error and how it exits; the output went to the sink.
#[derive(Debug)]
pub struct Report {
    /// How to exit.
    pub exit: Exit,
    /// One line per result, unless the host prints the results itself (kpt), or the one reason
    /// the input was unusable.
    pub stderr: String,
    /// Every result, `info` ones included (empty when the input was unusable).
    pub results: Vec<Finding>,
}

impl Report {
    /// The one reason the input was unusable, without the command's `capi2argo: ` prefix (what a
    /// host that is no command shows); `None` when the run was not refused.
    pub fn unusable_reason(&self) -> Option<&str> {
        (self.exit == Exit::Unusable)
            .then(|| self.stderr.trim_end().trim_start_matches("capi2argo: "))
    }
}

/// Runs the core and turns its answer into what a host prints and how it exits.
pub fn drive(
    input: &[u8],
    options: &Options,
    files: &mut dyn Files,
    sink: &mut krm::Sink,
) -> Report {
    match run_streaming(input, options, files, sink) {
        Ok(finished) => report(finished.results, finished.caller),
        Err(e) => unusable(&e),
    }
}

/// Why a sealed plan has no requests: its Secrets are SealedSecrets to commit, which an API
/// server's Secrets endpoint must never be sent.
const SEALED_REQUESTS: &str = "plan -o requests: with seal=sealedSecrets the plan writes SealedSecrets, output to commit, not requests to an API server's Secrets; show the plan as text or JSON";

/// Makes the plan instead of the output: the plan shown in `format` goes to the sink, the
/// results and the exit code are those the conversion would have.
pub fn drive_plan(
    input: &[u8],
    options: &Options,
    files: &mut dyn Files,
    format: PlanFormat,
    sink: &mut krm::Sink,
) -> Report {
    match plan(input, options, files) {
        Ok(finished) => {
            if let Some(plan) = &finished.plan {
                if plan.sealed && format == PlanFormat::Requests {
                    return unusable(&RunError::FunctionConfig(SEALED_REQUESTS.into()));
                }
                sink(&plan.show(format));
            }
            // A plan is text for a person or a script, never a ResourceList a host reads
            // results from: they go to standard error whoever sent the input.
            report(finished.results, krm::Caller::Pipe)
        }
        Err(e) => unusable(&e),
    }
}

/// Results go to standard error as well as into a ResourceList, since kustomize shows a
/// function's standard error and never its results — except for kpt, which prints the results
/// itself and would show each twice.
fn report(results: Vec<Finding>, caller: krm::Caller) -> Report {
    Report {
        exit: if failed(&results) {
            Exit::Failure
        } else {
            Exit::Success
        },
        stderr: if caller.shows_results() {
            failed_summary(&results)
        } else {
            stderr_lines(&results)
        },
        results,
    }
}

/// [`drive`] for a host that has no file to write to and gathers the output in memory (the npm
/// package, kpt's WASM module), with no files to read: the output, and the report.
pub fn drive_to_string(input: &[u8], options: &Options) -> (String, Report) {
    reserve_run_memory(input.len());
    let mut output = String::new();
    let report = drive(input, options, &mut NoFiles, &mut |s| output.push_str(s));
    (output, report)
}

/// What a run may allocate beyond its input, per input byte, at most: the trees (about half the
/// input), the output (about 1.5× the input, in a buffer that doubles) and the new Secrets' text.
const RUN_MEMORY_PER_INPUT_BYTE: usize = 4;

/// Grows memory once for the whole run. Such hosts run the core in WebAssembly, mostly under V8,
/// where a `memory.grow` costs more the larger the memory already is (one page: 3 µs at 1 MiB,
/// 0.4 ms at 1 GiB; Node 20 and 24), and the allocator grows memory only by what each
/// allocation lacks, so a large input paid for many growing steps (an 81 MB fleet: 0.35–0.6 s of
/// the npm package's 3–4 s; kpt's module under Node: peak RSS 932 → 827 MiB, time unchanged).
/// Reserved and freed at once, the memory stays with the allocator for the run's own
/// allocations; pages never touched cost nothing. When memory cannot grow that far, nothing is
/// reserved and the run grows as it goes.
fn reserve_run_memory(input_len: usize) {
    let mut reserve: Vec<u8> = Vec::new();
    let _ = reserve.try_reserve_exact(input_len.saturating_mul(RUN_MEMORY_PER_INPUT_BYTE));
}

/// The report for input or arguments the core cannot use.
pub fn unusable(error: &RunError) -> Report {
    Report {
        exit: Exit::Unusable,
        stderr: format!("capi2argo: {error}\n"),
        results: Vec::new(),
    }
}

/// Where the host prints the results itself, a failed run says on standard error only that it
/// failed and where to look: a host taken for kpt that is none (kyaml's `kustomize fn run`
/// sends the same marks) still shows why the run failed, and kpt shows no result twice.
fn failed_summary(results: &[Finding]) -> String {
    let errors = results
        .iter()
        .filter(|r| r.severity == krm::finding::Severity::Error)
        .count();
    match errors {
        0 => String::new(),
        1 => "capi2argo: 1 error, in the function's results\n".to_string(),
        n => format!("capi2argo: {n} errors, in the function's results\n"),
    }
}

/// Results as stderr lines (`error: Secret ns/name: data.value: message`), `info` ones too:
/// kubectl and kustomize users see nothing else of them.
pub fn stderr_lines(results: &[Finding]) -> String {
    results.iter().map(|r| format!("{r}\n")).collect()
}
