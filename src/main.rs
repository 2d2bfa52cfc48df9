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
            read_bounded(stdin.lock(), limit, "input", None)?
        }
    };
    let function_config = match &args.fn_config {
        Some(path) => Some(
            String::from_utf8(read_file(path, limit)?)
                .map_err(|_| format!("{} is not UTF-8", path.display()))?,
        ),
        None => None,
    };
    let pinned = std::env::var(host::NOW_VARIABLE).ok();
    let options = Options {
        // The process ends with this run.
        exits_after: true,
        now: Some(host::now(pinned.as_deref(), std::time::SystemTime::now())?),
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
    let mut files = WorkingDir { budget: limit };
    let mut sink = |piece: &str| {
        if written.is_ok() {
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
    // Best effort: a closed stderr must not hide the exit code.
    let _ = std::io::stderr().lock().write_all(report.stderr.as_bytes());
    Ok(report.exit)
}

/// Reads at most `limit` bytes of `path`; more is an error, noticed while reading.
fn read_file(path: &Path, limit: usize) -> Result<Vec<u8>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let size = file.metadata().ok().map(|meta| meta.len());
    read_bounded(file, limit, &path.display().to_string(), size)
}

/// Reads until the end or one byte past `limit`, whichever comes first: an endless or huge
/// input stops at the limit instead of filling memory. `size`, a regular file's length, sizes
/// the buffer once; a stream's length is known only at its end.
fn read_bounded(
    reader: impl Read,
    limit: usize,
    what: &str,
    size: Option<u64>,
) -> Result<Vec<u8>, String> {
    let mut reader = reader.take(limit as u64 + 1);
    let read = match size.and_then(|len| usize::try_from(len).ok()) {
        Some(len) if len <= limit => {
            let mut buf = Vec::with_capacity(len);
            reader.read_to_end(&mut buf).map(|_| buf)
        }
        _ => read_stream(reader),
    };
    let buf = read.map_err(|e| format!("cannot read {what}: {e}"))?;
    if buf.len() > limit {
        return Err(format!(
            "{what} is over the limit of {limit} bytes (--max-input-bytes)"
        ));
    }
    Ok(buf)
}

/// A stream of unknown length, natively: the buffer doubles as it fills, and the C allocator
/// moves a large one by remapping its pages, so nothing is copied or left behind.
#[cfg(not(target_os = "wasi"))]
fn read_stream(mut reader: impl Read) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    reader.read_to_end(&mut buf)?;
    Ok(buf)
}

/// A stream of unknown length in WebAssembly: linear memory never shrinks, and a doubling
/// buffer there is copied to fresh memory at each step, every outgrown copy left behind as memory
/// touched for nothing. Measured on the 81 MB fleet on standard input under wasmtime: the
/// process peaked at 236 MiB that way, 184 MiB read in pieces (142 MiB with the length known).
#[cfg(target_os = "wasi")]
fn read_stream(reader: impl Read) -> std::io::Result<Vec<u8>> {
    read_in_pieces(reader)
}

/// Reads into pieces that double from 64 KiB up to 8 MiB, then copies them into one buffer of
/// exactly the length read, freeing each piece as it is copied.
#[cfg(any(target_os = "wasi", test))]
fn read_in_pieces(mut reader: impl Read) -> std::io::Result<Vec<u8>> {
    const FIRST: usize = 64 << 10;
    const LARGEST: usize = 8 << 20;
    let mut pieces = Vec::new();
    let mut size = FIRST;
    loop {
        let mut piece = Vec::with_capacity(size);
        (&mut reader).take(size as u64).read_to_end(&mut piece)?;
        let full = piece.len() == size;
        pieces.push(piece);
        if !full {
            break;
        }
        size = (size * 2).min(LARGEST);
    }
    let mut all = Vec::with_capacity(pieces.iter().map(Vec::len).sum());
    for piece in pieces {
        all.extend_from_slice(&piece);
    }
    Ok(all)
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
    read_bounded(file, limit, "it", Some(opened.len())).map_err(|e| e.replace("it is over", "over"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_read_in_pieces_comes_out_whole_and_exactly_sized() {
        let piece = 64 << 10;
        for len in [
            0,
            1,
            piece - 1,
            piece,
            piece + 1,
            3 * piece,
            3 * piece + 7,
            40 << 20,
        ] {
            let input: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let read = read_in_pieces(&input[..]).unwrap();
            assert_eq!(read, input, "{len} bytes");
            assert_eq!(
                read.capacity(),
                len,
                "{len} bytes: no slack left in the buffer"
            );
        }
    }

    #[test]
    fn a_file_read_by_its_length_stops_one_byte_past_the_limit() {
        let input = vec![b'a'; 100];
        assert_eq!(
            read_bounded(&input[..], 100, "input", Some(100)).unwrap(),
            input
        );
        // A length that is wrong (the file grew) still reads to the end.
        assert_eq!(
            read_bounded(&input[..], 100, "input", Some(10)).unwrap(),
            input
        );
        let over = read_bounded(&input[..], 99, "input", Some(100)).unwrap_err();
        assert_eq!(
            over,
            "input is over the limit of 99 bytes (--max-input-bytes)"
        );
        let over = read_bounded(&input[..], 99, "input", None).unwrap_err();
        assert_eq!(
            over,
            "input is over the limit of 99 bytes (--max-input-bytes)"
        );
    }
}
