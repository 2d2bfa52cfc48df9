//! The `capi2argo` command: a thin shell that reads input, runs the core, writes output and sets the exit code.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Turns Cluster API kubeconfig Secrets into Argo CD cluster Secrets.
///
/// Reads a KRM ResourceList (as kpt and kustomize send it), a `kind: List` (`kubectl get -o yaml`),
/// or a multi-document YAML stream, from FILE or standard input. A ResourceList comes back as a
/// ResourceList with results; anything else as a YAML stream, with results on standard error.
///
/// Exit codes: 0 success (warnings possible), 1 error results (the full output is still written),
/// 2 unusable input or arguments (nothing written).
#[derive(Parser, Debug)]
#[command(name = "capi2argo", version, about, long_about)]
struct Cli {
    /// Input file; standard input when absent or `-`.
    input: Option<PathBuf>,

    /// A functionConfig file (ConfigMap or Capi2Argo) replacing the ResourceList's own.
    #[arg(long, value_name = "FILE")]
    fn_config: Option<PathBuf>,

    /// A setting as key=value (for example namespacedNames=true); repeatable, applied last.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,

    /// Largest input accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = capi2argo::Limits::default().max_input_bytes)]
    max_input_bytes: usize,

    /// Deepest YAML nesting accepted.
    #[arg(long, value_name = "LEVELS", default_value_t = capi2argo::Limits::default().max_depth)]
    max_depth: usize,

    /// Most YAML nodes in one parse, aliases expanded.
    #[arg(long, value_name = "NODES", default_value_t = capi2argo::Limits::default().max_nodes)]
    max_nodes: usize,

    /// Most YAML nodes aliases may add in one parse, 64 bytes of text counting as one (billion-laughs guard).
    #[arg(long, value_name = "NODES", default_value_t = capi2argo::Limits::default().max_alias_nodes)]
    max_alias_nodes: usize,

    /// Most resources in one input.
    #[arg(long, value_name = "COUNT", default_value_t = capi2argo::Limits::default().max_items)]
    max_items: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("capi2argo: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> Result<ExitCode, String> {
    let input = match cli.input.as_deref() {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
        }
        _ => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            buf
        }
    };
    let function_config = match &cli.fn_config {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let mut options = capi2argo::Options {
        function_config,
        overrides: cli.set.clone(),
        limits: capi2argo::Limits {
            max_input_bytes: cli.max_input_bytes,
            max_depth: cli.max_depth,
            max_nodes: cli.max_nodes,
            max_alias_nodes: cli.max_alias_nodes,
            max_items: cli.max_items,
        },
        ..Default::default()
    };
    // The config's `resourceFiles` (kustomize generators): read here, relative to the working directory.
    let requested =
        capi2argo::transform::requested_files(&input, &options).map_err(|e| e.to_string())?;
    for path in requested {
        let bytes = std::fs::read(&path)
            .map_err(|e| format!("cannot read resourceFiles entry {path}: {e}"))?;
        options.files.push((path, bytes));
    }
    // Written as produced: the output of a large fleet never sits in memory whole.
    let mut stdout = std::io::BufWriter::with_capacity(1 << 18, std::io::stdout().lock());
    let mut written = Ok(());
    let results = capi2argo::run_streaming(&input, &options, &mut |piece| {
        if written.is_ok() {
            written = stdout.write_all(piece.as_bytes());
        }
    })
    .map_err(|e| e.to_string())?;
    written
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write output: {e}"))?;
    let mut stderr = std::io::stderr().lock();
    for result in results
        .iter()
        .filter(|r| r.severity != capi2argo::Severity::Info)
    {
        // Best effort: a closed stderr must not hide the exit code.
        let _ = writeln!(stderr, "{result}");
    }
    Ok(if capi2argo::krm::finding::failed(&results) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
