//! The parser's events in the yaml-test-suite's notation (`+STR`, `+DOC ---`, `=VAL :text`…),
//! optionally with each event's start and end (`@line:col-line:col`, from 0, in characters):
//! what this reader is compared on, against libyaml and against the suite.

use std::fmt::Write;

use super::parser::{EventKind, Parser};
use super::scanner::ScalarStyle;
use super::tree::YamlError;

/// Every event of `input`, one per line, and the error the parser stopped at, if it did.
pub fn suite_events(input: &str, marks: bool, max_depth: usize) -> (String, Option<YamlError>) {
    let mut parser = Parser::new(input, max_depth);
    let mut out = String::new();
    loop {
        let event = match parser.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e.into())),
        };
        let line = match &event.kind {
            EventKind::StreamStart => "+STR".to_string(),
            EventKind::StreamEnd => "-STR".to_string(),
            EventKind::DocumentStart { explicit, .. } => {
                if *explicit { "+DOC ---" } else { "+DOC" }.to_string()
            }
            EventKind::DocumentEnd { explicit } => {
                if *explicit { "-DOC ..." } else { "-DOC" }.to_string()
            }
            EventKind::Alias(name) => format!("=ALI *{name}"),
            EventKind::Scalar {
                value,
                style,
                anchor,
                tag,
                ..
            } => {
                let mut s = String::from("=VAL");
                properties(&mut s, *anchor, tag.as_deref());
                s.push(' ');
                s.push(match style {
                    ScalarStyle::Plain => ':',
                    ScalarStyle::SingleQuoted => '\'',
                    ScalarStyle::DoubleQuoted => '"',
                    ScalarStyle::Literal => '|',
                    ScalarStyle::Folded => '>',
                });
                s.push_str(&escape(value));
                s
            }
            EventKind::SequenceStart { anchor, tag, flow }
            | EventKind::MappingStart { anchor, tag, flow } => {
                let seq = matches!(event.kind, EventKind::SequenceStart { .. });
                let mut s = String::from(if seq { "+SEQ" } else { "+MAP" });
                if *flow {
                    s.push_str(if seq { " []" } else { " {}" });
                }
                properties(&mut s, *anchor, tag.as_deref());
                s
            }
            EventKind::SequenceEnd => "-SEQ".to_string(),
            EventKind::MappingEnd => "-MAP".to_string(),
        };
        out.push_str(&line);
        if marks {
            let _ = write!(
                out,
                " @{}:{}-{}:{}",
                event.start.line, event.start.col, event.end.line, event.end.col
            );
        }
        out.push('\n');
    }
}

fn properties(out: &mut String, anchor: Option<&str>, tag: Option<&str>) {
    if let Some(anchor) = anchor {
        let _ = write!(out, " &{anchor}");
    }
    if let Some(tag) = tag {
        let _ = write!(out, " <{tag}>");
    }
}

/// The suite's escapes for scalar text: backslash, NUL, backspace, tab, line feed, carriage return.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}
