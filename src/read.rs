//! What the command reads: its input and function config, bounded as they are read, and the
//! files a configuration names, confined to the working directory.

use std::io::Read;
use std::path::Path;

use capi2argo_core::Files;

/// Reads at most `limit` bytes of `path`; more is an error, noticed while reading.
pub fn read_file(path: &Path, limit: usize) -> Result<Vec<u8>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let size = file.metadata().ok().map(|meta| meta.len());
    read_bounded(file, limit, &path.display().to_string(), size)
}

/// Reads until the end or one byte past `limit`, whichever comes first: an endless or huge
/// input stops at the limit instead of filling memory. `size`, a regular file's length, sizes
/// the buffer once; a stream's length is known only at its end.
pub fn read_bounded(
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
pub struct WorkingDir {
    /// What is left of `--max-input-bytes` for all files together.
    budget: usize,
}

impl WorkingDir {
    /// The working directory, with `budget` bytes for all the files read from it together.
    pub fn new(budget: usize) -> Self {
        WorkingDir { budget }
    }
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
