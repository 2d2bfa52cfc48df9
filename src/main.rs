//! The `capi2argo` command: a thin shell that parses its arguments, reads input and files, runs
//! the core through the host driver, writes output and sets the exit code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use capi2argo_core::host::{self, Exit};
use capi2argo_core::{Options, Severity};

use capi2argo::args::Args;
use capi2argo::read::{WorkingDir, read_bounded, read_file};

fn main() -> ExitCode {
    let args = match Args::try_parse_from(std::env::args_os()) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let code = match run(&args) {
        Ok(exit) => exit,
        Err(message) => {
            eprintln!("capi2argo: {message}");
            Exit::Unusable
        }
    };
    ExitCode::from(code as u8)
}

fn run(args: &Args) -> Result<Exit, String> {
    let limit = args.max_input_bytes;
    let input = match args.input_path() {
        Some(path) if path.as_os_str() != "-" => read_file(path, limit)?,
        _ => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprintln!(
                    "capi2argo: reading a ResourceList, a List or YAML documents from standard input (end with Ctrl-D; --help for usage)"
                );
            }
            read_bounded(stdin.lock(), limit, "input", None)?
        }
    };
    if args.wraps() {
        return wrap(&input, &args.limits());
    }
    let function_config = match &args.fn_config {
        Some(path) => Some(
            String::from_utf8(read_file(path, limit)?)
                .map_err(|_| format!("{} is not UTF-8", path.display()))?,
        ),
        None => None,
    };
    let pinned = std::env::var(host::NOW_VARIABLE).ok();
    let pinned_random = std::env::var(host::RANDOM_VARIABLE).ok();
    let options = Options {
        // The process ends with this run.
        exits_after: true,
        now: Some(host::now(pinned.as_deref(), std::time::SystemTime::now())?),
        random: Some(host::random(pinned_random.as_deref(), |bytes| {
            getrandom::fill(bytes).map_err(|e| e.to_string())
        })?),
        random_pinned: pinned_random.is_some(),
        ..args.options(function_config)
    };
    // Written as produced: the output of a large fleet never sits in memory whole.
    //
    // A standard output on /dev/null, opened for writing or for reading and writing (what Go's
    // os/exec and Python's subprocess.DEVNULL pass), takes the output and the exit code is the
    // run's. A standard output the parent closed ends up the same: before main, Rust's runtime
    // puts /dev/null, opened for reading and writing, on a closed descriptor 0, 1 or 2, so by
    // now nothing tells the two apart (looking earlier would need `unsafe`, which this crate
    // forbids), and a closed standard output is taken as the discarded output it amounts to.
    // Output that cannot be written (disk full, a broken pipe) is still an error, below.
    let mut stdout = std::io::BufWriter::with_capacity(1 << 18, std::io::stdout().lock());
    let mut written = Ok(());
    let mut files = WorkingDir::new(limit);
    let findings_only = args.findings_only();
    let mut sink = |piece: &str| {
        if written.is_ok() && !findings_only {
            written = stdout.write_all(piece.as_bytes());
        }
    };
    let report = match args.plan_format() {
        Some(format) => host::drive_plan(&input, &options, &mut files, format, &mut sink),
        None => host::drive(&input, &options, &mut files, &mut sink),
    };
    if report.exit != Exit::Unusable {
        // Output that could not be written is lost output: never a success.
        written
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write output: {e}"))?;
    }
    // An input that cannot be read is named by its file, as editors and CI logs link it.
    let mut stderr = report.stderr;
    if findings_only && report.exit != Exit::Unusable {
        let count = |s: Severity| report.results.iter().filter(|f| f.severity == s).count();
        let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
        let summary = if errors + warnings == 0 {
            "validate: no problem found\n".to_string()
        } else {
            format!(
                "validate: {errors} error{}, {warnings} warning{}\n",
                if errors == 1 { "" } else { "s" },
                if warnings == 1 { "" } else { "s" }
            )
        };
        std::io::stdout()
            .lock()
            .write_all(format!("{}{summary}", host::stderr_lines(&report.results)).as_bytes())
            .map_err(|e| format!("cannot write output: {e}"))?;
        return Ok(report.exit);
    }
    if report.exit == Exit::Unusable {
        if let Some(path) = args.input_path().filter(|p| p.as_os_str() != "-") {
            if let Some(rest) = stderr.strip_prefix("capi2argo: invalid YAML") {
                stderr = format!("capi2argo: {}: invalid YAML{rest}", path.display());
            }
        }
    }
    // Best effort: a closed stderr must not hide the exit code.
    let _ = std::io::stderr().lock().write_all(stderr.as_bytes());
    Ok(report.exit)
}

/// `capi2argo wrap`: the kubeconfig in its Secret on standard output.
fn wrap(input: &[u8], limits: &capi2argo_core::Limits) -> Result<Exit, String> {
    let text = std::str::from_utf8(input).map_err(|_| "input is not UTF-8".to_string())?;
    let wrapped = capi2argo_core::wrap_kubeconfig(text, limits).ok_or_else(|| {
        "input is not one kubeconfig (apiVersion: v1, kind: Config), as kubectl config view --raw prints it".to_string()
    })?;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(wrapped.text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write output: {e}"))?;
    Ok(Exit::Success)
}
