//! The host driver: arguments, input, files and output to an exit status — what every host (the
//! command, the golden tests, the WebAssembly shells) does around the core, done once.
//!
//! Reading files and writing streams stay with the host; this module turns what it was given
//! into options, runs the core, and says what to print where and how to exit.

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::krm::finding::{Finding, failed};
use crate::krm::{self};
use crate::limits::Limits;
use crate::reconcile::view::Format;
use crate::run::{Files, NoFiles, Options, RunError, plan, run_streaming};

/// What `--version` prints after the name: the package version and the commit the build came
/// from, with its date when git told the build script (build.rs): `0.1.0 (abc1234 2026-11-24)`,
/// `0.1.0 (abc1234)` from a packaged crate, `0.1.0 (commit unknown)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CAPI2ARGO_BUILD_COMMIT"),
    ")"
);

/// Turns Cluster API kubeconfig Secrets into Argo CD cluster Secrets.
///
/// Reads a KRM ResourceList (as kpt and kustomize send it), a `kind: List` (`kubectl get -o yaml`),
/// or a multi-document YAML stream, from FILE or standard input. A ResourceList comes back as a
/// ResourceList with results; anything else as a YAML stream, with results on standard error.
///
/// Exit codes: 0 success (warnings possible), 1 error results (the full output is still written),
/// 2 unusable input or arguments (nothing written).
#[derive(Parser, Debug, Clone)]
#[command(name = "capi2argo", version = VERSION, about, long_about)]
pub struct Args {
    /// Input file; standard input when absent or `-`.
    pub input: Option<PathBuf>,

    /// What to do instead of converting.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// A functionConfig file (ConfigMap or Capi2Argo) replacing the ResourceList's own.
    #[arg(long, value_name = "FILE", global = true)]
    pub fn_config: Option<PathBuf>,

    /// A setting as key=value (for example namespacedNames=true); repeatable, applied last.
    /// Every setting is listed below.
    #[arg(long = "set", value_name = "KEY=VALUE", global = true)]
    pub set: Vec<String>,

    /// Largest input accepted, in bytes (files named by resourceFiles too, each and together).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_input_bytes)]
    pub max_input_bytes: usize,

    /// Deepest YAML nesting accepted.
    #[arg(long, global = true, value_name = "LEVELS", default_value_t = Limits::default().max_depth)]
    pub max_depth: usize,

    /// Most YAML nodes in one parse, aliases expanded.
    #[arg(long, global = true, value_name = "NODES", default_value_t = Limits::default().max_nodes)]
    pub max_nodes: usize,

    /// Most YAML nodes aliases may add in one parse, 64 bytes of text counting as one (billion-laughs guard).
    #[arg(long, global = true, value_name = "NODES", default_value_t = Limits::default().max_alias_nodes)]
    pub max_alias_nodes: usize,

    /// Most resources in one input.
    #[arg(long, global = true, value_name = "COUNT", default_value_t = Limits::default().max_items)]
    pub max_items: usize,
}

/// What to do instead of converting.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Shows what a conversion would do to each Argo CD cluster Secret (create, update with the
    /// changed keys, rename, prune, kept and why, unchanged) after the guards, and writes nothing
    /// else; never a secret value. Exit codes as a conversion's.
    Plan {
        /// Input file; standard input when absent or `-`.
        input: Option<PathBuf>,
        /// `text` for people; `json` for tools; `requests`: the API requests that carry the plan
        /// out, one per line (`VERB PATH BODY`, for `kubectl VERB --raw PATH -f -`), each
        /// conditional on what was read.
        #[arg(short, long, value_enum, default_value_t = PlanOutput::Text)]
        output: PlanOutput,
    },
    /// Checks the Argo CD cluster Secrets in the input against Argo CD's own rules and the
    /// policy settings (`action=validate`); prints the input unchanged, exit 1 on an error.
    Validate {
        /// Input file; standard input when absent or `-`.
        input: Option<PathBuf>,
    },
}

/// How `capi2argo plan` shows the plan.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOutput {
    /// One line per Argo CD cluster Secret, and a summary line.
    Text,
    /// One JSON object.
    Json,
    /// The API requests that carry the plan out (`VERB PATH BODY` lines).
    Requests,
}

impl PlanOutput {
    /// The core's name for the format.
    pub fn format(self) -> Format {
        match self {
            PlanOutput::Text => Format::Text,
            PlanOutput::Json => Format::Json,
            PlanOutput::Requests => Format::Requests,
        }
    }
}

impl Args {
    /// The input file, given before or after the subcommand.
    pub fn input_path(&self) -> Option<&std::path::Path> {
        match &self.command {
            Some(Command::Validate { input: Some(path) })
            | Some(Command::Plan {
                input: Some(path), ..
            }) => Some(path),
            _ => self.input.as_deref(),
        }
    }

    /// The plan's format, when the command is `plan`.
    pub fn plan_format(&self) -> Option<Format> {
        match &self.command {
            Some(Command::Plan { output, .. }) => Some(output.format()),
            _ => None,
        }
    }

    /// Parses command-line arguments (the program name first), `--help` listing every setting.
    pub fn try_parse_from<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Self::command()
            .after_long_help(crate::config::help())
            .after_help("Settings: see --help for every key the function reads.")
            .try_get_matches_from(argv)?;
        Args::from_arg_matches(&matches)
    }

    /// The resource limits these arguments set.
    pub fn limits(&self) -> Limits {
        Limits {
            max_input_bytes: self.max_input_bytes,
            max_depth: self.max_depth,
            max_nodes: self.max_nodes,
            max_alias_nodes: self.max_alias_nodes,
            max_items: self.max_items,
        }
    }

    /// The options these arguments ask for, given the text of `--fn-config` (read by the host).
    pub fn options(&self, function_config: Option<String>) -> Options {
        let mut overrides = self.set.clone();
        if matches!(self.command, Some(Command::Validate { .. })) {
            overrides.push("action=validate".into());
        }
        Options {
            function_config,
            overrides,
            limits: self.limits(),
            exits_after: false,
            now: None,
        }
    }
}

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
    /// One line each: results other than `info`, or the one reason the input was unusable.
    pub stderr: String,
    /// Every result, `info` ones included (empty when the input was unusable).
    pub results: Vec<Finding>,
}

/// Runs the core and turns its answer into what a host prints and how it exits.
pub fn drive(
    input: &[u8],
    options: &Options,
    files: &mut dyn Files,
    sink: &mut krm::Sink,
) -> Report {
    match run_streaming(input, options, files, sink) {
        Ok(finished) => report(finished.results),
        Err(e) => unusable(&e),
    }
}

/// Makes the plan instead of the output: the plan shown in `format` goes to the sink, the
/// results and the exit code are those the conversion would have.
pub fn drive_plan(
    input: &[u8],
    options: &Options,
    files: &mut dyn Files,
    format: Format,
    sink: &mut krm::Sink,
) -> Report {
    match plan(input, options, files) {
        Ok(finished) => {
            if let Some(plan) = &finished.plan {
                sink(&plan.show(format));
            }
            report(finished.results)
        }
        Err(e) => unusable(&e),
    }
}

fn report(results: Vec<Finding>) -> Report {
    Report {
        exit: if failed(&results) {
            Exit::Failure
        } else {
            Exit::Success
        },
        stderr: stderr_lines(&results),
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

/// Results as stderr lines (`error: Secret ns/name: data.value: message`), `info` ones too:
/// kubectl and kustomize users see nothing else of them.
pub fn stderr_lines(results: &[Finding]) -> String {
    results.iter().map(|r| format!("{r}\n")).collect()
}
