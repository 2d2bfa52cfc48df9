//! The `capi2argo` command: a thin shell that reads input and files, runs the core through the
//! host driver, writes output and sets the exit code.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use capi2argo::host::{self, Args, Exit};
use capi2argo::{Files, Options};

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
            read_bounded(stdin.lock(), limit, "input")?
        }
    };
    let function_config = match &args.fn_config {
        Some(path) => Some(
            String::from_utf8(read_file(path, limit)?)
                .map_err(|_| format!("{} is not UTF-8", path.display()))?,
        ),
        None => None,
    };
    let options = Options {
        // The process ends with this run.
        exits_after: true,
        ..args.options(function_config)
    };
    // Rust's standard output swallows writes to a closed descriptor: ask first, so lost
    // output is never reported as a success.
    if !stdout_is_open() {
        return Err("cannot write output: standard output is closed".into());
    }
    // Written as produced: the output of a large fleet never sits in memory whole.
    let mut stdout = std::io::BufWriter::with_capacity(1 << 18, std::io::stdout().lock());
    let mut written = Ok(());
    let mut files = WorkingDir { budget: limit };
    let report = host::drive(&input, &options, &mut files, &mut |piece| {
        if written.is_ok() {
            written = stdout.write_all(piece.as_bytes());
        }
    });
    if report.exit != Exit::Unusable {
        // Output that could not be written is lost output: never a success.
        written
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write output: {e}"))?;
    }
    // Best effort: a closed stderr must not hide the exit code.
    let _ = std::io::stderr().lock().write_all(report.stderr.as_bytes());
    Ok(report.exit)
}

/// Whether standard output was open when the process started. Rust's runtime puts `/dev/null`,
/// opened for reading and writing, where the parent left the descriptor closed, and writes
/// there vanish; a redirect to `/dev/null` opens it for writing only, so a zero-byte read tells
/// the two apart.
#[cfg(unix)]
fn stdout_is_open() -> bool {
    use std::io::Read;
    use std::os::fd::AsFd;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    let null = std::fs::read_link("/proc/self/fd/1").is_ok_and(|p| p == Path::new("/dev/null"));
    !null || std::fs::File::from(fd).read(&mut []).is_err()
}

/// WASI hosts hand a module its descriptors; there is no closing one from outside.
#[cfg(not(unix))]
fn stdout_is_open() -> bool {
    true
}

/// Reads at most `limit` bytes of `path`; more is an error, noticed while reading.
fn read_file(path: &Path, limit: usize) -> Result<Vec<u8>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    read_bounded(file, limit, &path.display().to_string())
}

/// Reads until the end or one byte past `limit`, whichever comes first: an endless or huge
/// input stops at the limit instead of filling memory.
fn read_bounded(reader: impl Read, limit: usize, what: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {what}: {e}"))?;
    if buf.len() > limit {
        return Err(format!(
            "{what} is over the limit of {limit} bytes (--max-input-bytes)"
        ));
    }
    Ok(buf)
}

/// The config's `resourceFiles`, read from the working directory under kustomize's load
/// restrictions and then some: no symbolic link anywhere on the path (a link could lead out of
/// the directory, as it would in an Argo CD repo-server), nothing but regular files (a FIFO would
/// block, a device never end), every file read up to the input limit and all of them together
/// within it too.
struct WorkingDir {
    /// What is left of `--max-input-bytes` for all files together.
    budget: usize,
}

impl Files for WorkingDir {
    fn read(&mut self, path: &str, limit: usize) -> Result<Vec<u8>, String> {
        let bytes = read_confined(Path::new(path), limit.min(self.budget))
            .map_err(|reason| format!("{path}: {reason}"))?;
        self.budget -= bytes.len();
        Ok(bytes)
    }
}

/// Reads a relative path below the working directory without following any link.
fn read_confined(path: &Path, limit: usize) -> Result<Vec<u8>, String> {
    use std::path::Component;
    let mut walked = std::path::PathBuf::new();
    for component in path.components() {
        let Component::Normal(part) = component else {
            return Err("only plain relative paths below the working directory are read".into());
        };
        walked.push(part);
        let meta = std::fs::symlink_metadata(&walked).map_err(|e| e.to_string())?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{} is a symbolic link, which is not followed (it could lead outside the working directory)",
                walked.display()
            ));
        }
    }
    let before = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !before.file_type().is_file() {
        return Err("not a regular file".into());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // The file opened is the file checked: not swapped for a link or a FIFO in between.
    let opened = file.metadata().map_err(|e| e.to_string())?;
    if !opened.file_type().is_file() || !same_file(&before, &opened) {
        return Err("changed while it was being opened".into());
    }
    read_bounded(file, limit, "it").map_err(|e| e.replace("it is over", "over"))
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len()
}
