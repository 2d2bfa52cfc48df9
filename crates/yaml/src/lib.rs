//! YAML as libyaml reads it, with every node's byte range kept, and a writer for what is new.
//!
//! Where each rule lives:
//! - `chars`: which characters are blanks, line breaks and markers, and which are refused;
//! - `scanner`: text to tokens (indentation, simple keys, scalar styles and folding);
//! - `parser`: tokens to events (documents, directives, collections);
//! - `tree`: events to nodes and documents with their ranges; anchors, aliases and limits;
//! - `node`: the node types, typed accessors, and how plain scalars resolve;
//! - `emit`: writing nodes back as YAML or JSON that every reader reads the same;
//! - `offsets`: where a scalar's content stands in the text it was read from.
//!
//! The scanner and parser follow libyaml 0.2.5 (the C parser inside PyYAML, and the ancestor
//! of go-yaml, which kpt, kustomize and kubectl write with) rule for rule: what it reads, this
//! reads, to the same values; what it refuses, this refuses, with its message.

#![warn(missing_docs)]

mod chars;
pub mod emit;
pub mod events;
mod limits;
mod node;
mod offsets;
mod parser;
mod scanner;
mod tree;

pub use chars::{first_disallowed, skip_words};
pub use limits::Limits;
pub use node::{Indicator, Node, Scalar, ScalarKind, Style, Value, resolve_plain, same_content};
pub use offsets::{content_map, value_range};
pub use tree::{Document, EntryHook, YamlError, parse_stream, parse_stream_with};

/// The characters YAML counts as white space between tokens (`str::trim` would also take
/// vertical tabs, no-break spaces and other Unicode spaces, which are content to YAML).
pub const YAML_SPACE: [char; 4] = [' ', '\t', '\r', '\n'];

/// The 1-based line holding byte `at` (any YAML line break ends a line).
pub fn line_number(input: &str, at: usize) -> usize {
    let bytes = input.as_bytes();
    let (mut line, mut i) = (1, 0);
    while i < at.min(bytes.len()) {
        let n = chars::break_len(bytes, i);
        line += usize::from(n > 0);
        i += n.max(1);
    }
    line
}

/// Where each line of `input` starts, counted as [`line_number`] counts them (any YAML line
/// break ends a line); a break at the very end starts no line.
pub fn line_starts(input: &str) -> Vec<usize> {
    let bytes = input.as_bytes();
    let mut starts = vec![0];
    let mut i = 0;
    while i < bytes.len() {
        let n = chars::break_len(bytes, i);
        i += n.max(1);
        if n > 0 && i < bytes.len() {
            starts.push(i);
        }
    }
    starts
}

/// The offset of the start of the line holding `at` (any YAML line break ends a line).
pub fn line_start(input: &str, at: usize) -> usize {
    let bytes = input.as_bytes();
    let mut i = at.min(bytes.len());
    while i > 0 {
        let b = bytes[i - 1];
        if b == b'\n' || b == b'\r' {
            return i;
        }
        // NEL ends in 0x85, LS and PS in 0xA8/0xA9.
        if (b == 0x85 && i >= 2 && bytes[i - 2] == 0xC2)
            || (matches!(b, 0xA8 | 0xA9) && i >= 3 && bytes[i - 3] == 0xE2 && bytes[i - 2] == 0x80)
        {
            return i;
        }
        i -= 1;
    }
    0
}
