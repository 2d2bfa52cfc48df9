//! Fuzzes the YAML reader against libyaml itself (libyaml-safer, a safe port of libyaml 0.2.5):
//! on any input both read the same events, with the same values, styles and positions, and
//! both stop at the same place when they stop.
#![no_main]

use std::fmt::Write;

use libfuzzer_sys::fuzz_target;
use libyaml_safer::{EventData, MappingStyle, Parser, ScalarStyle, SequenceStyle};

/// libyaml's events in the yaml-test-suite notation with marks, as capi2argo prints its own,
/// and where it stopped (`line:col`, or `reader` for a refused character).
fn libyaml(input: &[u8]) -> (String, Option<String>) {
    let mut bytes = input;
    let mut parser = Parser::new();
    parser.set_input_string(&mut bytes);
    let mut out = String::new();
    loop {
        let event = match parser.parse() {
            Ok(event) => event,
            Err(e) => {
                let stop = match e.kind() {
                    libyaml_safer::ErrorKind::Reader => "reader".to_string(),
                    _ => e
                        .problem_mark()
                        .map_or("?".to_string(), |m| format!("{}:{}", m.line, m.column)),
                };
                return (out, Some(stop));
            }
        };
        let props = |anchor: &Option<String>, tag: &Option<String>| {
            let mut s = String::new();
            if let Some(a) = anchor {
                let _ = write!(s, " &{a}");
            }
            if let Some(t) = tag {
                let _ = write!(s, " <{t}>");
            }
            s
        };
        let line = match &event.data {
            EventData::StreamStart { .. } => "+STR".to_string(),
            EventData::StreamEnd => "-STR".to_string(),
            EventData::DocumentStart { implicit, .. } => {
                if *implicit { "+DOC" } else { "+DOC ---" }.to_string()
            }
            EventData::DocumentEnd { implicit } => {
                if *implicit { "-DOC" } else { "-DOC ..." }.to_string()
            }
            EventData::Alias { anchor } => format!("=ALI *{anchor}"),
            EventData::Scalar {
                anchor,
                tag,
                value,
                style,
                ..
            } => {
                let indicator = match style {
                    ScalarStyle::SingleQuoted => '\'',
                    ScalarStyle::DoubleQuoted => '"',
                    ScalarStyle::Literal => '|',
                    ScalarStyle::Folded => '>',
                    _ => ':',
                };
                let escaped = value
                    .replace('\\', "\\\\")
                    .replace('\0', "\\0")
                    .replace('\u{8}', "\\b")
                    .replace('\t', "\\t")
                    .replace('\n', "\\n")
                    .replace('\r', "\\r");
                format!("=VAL{} {indicator}{escaped}", props(anchor, tag))
            }
            EventData::SequenceStart {
                anchor, tag, style, ..
            } => format!(
                "+SEQ{}{}",
                if *style == SequenceStyle::Flow { " []" } else { "" },
                props(anchor, tag)
            ),
            EventData::SequenceEnd => "-SEQ".to_string(),
            EventData::MappingStart {
                anchor, tag, style, ..
            } => format!(
                "+MAP{}{}",
                if *style == MappingStyle::Flow { " {}" } else { "" },
                props(anchor, tag)
            ),
            EventData::MappingEnd => "-MAP".to_string(),
        };
        let (s, e) = (event.start_mark, event.end_mark);
        let _ = writeln!(out, "{line} @{}:{}-{}:{}", s.line, s.column, e.line, e.column);
        if matches!(event.data, EventData::StreamEnd) {
            return (out, None);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // capi2argo reads UTF-8 only (libyaml also reads UTF-16).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (theirs, their_stop) = libyaml(data);
    if capi2argo::yaml::first_disallowed(text).is_some() {
        // Refused before any reading; libyaml refuses it too, as it reaches that character.
        assert!(their_stop.is_some(), "libyaml accepts a character capi2argo refuses: {text:?}");
        return;
    }
    let (ours, error) = capi2argo::yaml::events::suite_events(text, true);
    let our_stop = error.map(|e| match e {
        capi2argo::yaml::YamlError::Syntax { line, col, .. } => format!("{}:{}", line - 1, col - 1),
        other => format!("{other}"),
    });
    assert_eq!(our_stop, their_stop, "where reading stops, on {text:?}");
    assert_eq!(ours, theirs, "events, on {text:?}");
});
