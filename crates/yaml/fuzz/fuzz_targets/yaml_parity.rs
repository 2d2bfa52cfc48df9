//! Fuzzes the YAML reader against libyaml itself (unsafe-libyaml, libyaml 0.2.5 transpiled to
//! Rust line for line): on any input both read the same events, with the same values, styles
//! and positions, and both stop at the same place when they stop.
//!
//! The oracle drives libyaml's C API, hence the `unsafe` below: it is test code that never
//! ships, and each block says why it is sound. (A safe port, libyaml-safer, departs from
//! libyaml in event positions, so it cannot be the reference.) unsafe-libyaml departs from the
//! C library in one place: it counts a mark's index in bytes, not characters, which moves the
//! 1024-character limit of a simple key on lines with multi-byte characters. Such inputs are
//! left to the PyYAML parity tests (src/yaml/parity.rs), which run the C library itself.
#![no_main]

use std::ffi::CStr;
use std::fmt::Write;
use std::mem::MaybeUninit;

use libfuzzer_sys::fuzz_target;
// A short name for the oracle's many calls; every call through it stays inside `unsafe`.
#[allow(clippy::unsafe_removed_from_name)]
use unsafe_libyaml as y;

/// A NUL-terminated string from libyaml, or nothing for a null pointer.
///
/// SAFETY (for callers): `p` is null or points at a NUL-terminated string owned by a live event.
unsafe fn text(p: *const u8) -> Option<String> {
    // SAFETY: see the function's contract.
    (!p.is_null()).then(|| {
        unsafe { CStr::from_ptr(p.cast()) }
            .to_string_lossy()
            .into_owned()
    })
}

fn props(anchor: Option<String>, tag: Option<String>) -> String {
    let mut s = String::new();
    if let Some(a) = anchor {
        let _ = write!(s, " &{a}");
    }
    if let Some(t) = tag {
        let _ = write!(s, " <{t}>");
    }
    s
}

/// libyaml's events in the yaml-test-suite notation with marks, as capi2argo prints its own,
/// and where it stopped (`line:col`, or `reader` for a refused character).
fn libyaml(input: &[u8]) -> (String, Option<String>) {
    let mut out = String::new();
    let mut parser = MaybeUninit::<y::yaml_parser_t>::uninit();
    // SAFETY: initialize writes the whole parser struct before anything reads it; the input
    // slice outlives the parser, which is deleted before this function returns.
    unsafe {
        if y::yaml_parser_initialize(parser.as_mut_ptr()).fail {
            return (out, Some("init".into()));
        }
        y::yaml_parser_set_input_string(parser.as_mut_ptr(), input.as_ptr(), input.len() as u64);
    }
    let parser = parser.as_mut_ptr();
    let stop = loop {
        let mut event = MaybeUninit::<y::yaml_event_t>::uninit();
        // SAFETY: the parser was initialized above; parse fills the event on success, and on
        // failure sets the parser's error fields, which are plain values.
        if unsafe { y::yaml_parser_parse(parser, event.as_mut_ptr()) }.fail {
            // SAFETY: the parser is live; its error fields were set by the failed call.
            let p = unsafe { &*parser };
            break Some(if p.error == y::YAML_READER_ERROR {
                "reader".to_string()
            } else {
                format!("{}:{}", p.problem_mark.line, p.problem_mark.column)
            });
        }
        let event = event.as_mut_ptr();
        // SAFETY: parse succeeded, so the event is initialized; the union member read is the
        // one its type names, and its pointers stay valid until yaml_event_delete below.
        let (line, end) = unsafe {
            let e = &*event;
            let line = match e.type_ {
                y::YAML_STREAM_START_EVENT => "+STR".to_string(),
                y::YAML_STREAM_END_EVENT => "-STR".to_string(),
                y::YAML_DOCUMENT_START_EVENT => if e.data.document_start.implicit {
                    "+DOC"
                } else {
                    "+DOC ---"
                }
                .to_string(),
                y::YAML_DOCUMENT_END_EVENT => if e.data.document_end.implicit {
                    "-DOC"
                } else {
                    "-DOC ..."
                }
                .to_string(),
                y::YAML_ALIAS_EVENT => {
                    format!("=ALI *{}", text(e.data.alias.anchor).unwrap_or_default())
                }
                y::YAML_SCALAR_EVENT => {
                    let sc = e.data.scalar;
                    let bytes = std::slice::from_raw_parts(sc.value, sc.length as usize);
                    let value = String::from_utf8_lossy(bytes)
                        .replace('\\', "\\\\")
                        .replace('\0', "\\0")
                        .replace('\u{8}', "\\b")
                        .replace('\t', "\\t")
                        .replace('\n', "\\n")
                        .replace('\r', "\\r");
                    let indicator = match sc.style {
                        y::YAML_SINGLE_QUOTED_SCALAR_STYLE => '\'',
                        y::YAML_DOUBLE_QUOTED_SCALAR_STYLE => '"',
                        y::YAML_LITERAL_SCALAR_STYLE => '|',
                        y::YAML_FOLDED_SCALAR_STYLE => '>',
                        _ => ':',
                    };
                    format!(
                        "=VAL{} {indicator}{value}",
                        props(text(sc.anchor), text(sc.tag))
                    )
                }
                y::YAML_SEQUENCE_START_EVENT => {
                    let ss = e.data.sequence_start;
                    let flow = if ss.style == y::YAML_FLOW_SEQUENCE_STYLE {
                        " []"
                    } else {
                        ""
                    };
                    format!("+SEQ{flow}{}", props(text(ss.anchor), text(ss.tag)))
                }
                y::YAML_SEQUENCE_END_EVENT => "-SEQ".to_string(),
                y::YAML_MAPPING_START_EVENT => {
                    let ms = e.data.mapping_start;
                    let flow = if ms.style == y::YAML_FLOW_MAPPING_STYLE {
                        " {}"
                    } else {
                        ""
                    };
                    format!("+MAP{flow}{}", props(text(ms.anchor), text(ms.tag)))
                }
                y::YAML_MAPPING_END_EVENT => "-MAP".to_string(),
                _ => "?".to_string(),
            };
            let (s, t) = (e.start_mark, e.end_mark);
            let line = format!("{line} @{}:{}-{}:{}", s.line, s.column, t.line, t.column);
            let end = e.type_ == y::YAML_STREAM_END_EVENT;
            y::yaml_event_delete(event);
            (line, end)
        };
        out.push_str(&line);
        out.push('\n');
        if end {
            break None;
        }
    };
    // SAFETY: the parser was initialized and is deleted once, here.
    unsafe { y::yaml_parser_delete(parser) };
    (out, stop)
}

fuzz_target!(|data: &[u8]| {
    // capi2argo reads UTF-8 only (libyaml also reads UTF-16).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text
        .lines()
        .any(|line| line.len() > 1024 && !line.is_ascii())
    {
        return;
    }
    let (ours, error) = capi2argo_yaml::events::suite_events(text, true, 1000);
    // Past capi2argo's nesting limit the readings part by design (libyaml 0.2.5 has none).
    if matches!(error, Some(capi2argo_yaml::YamlError::TooDeep { .. })) {
        return;
    }
    let (theirs, their_stop) = libyaml(data);
    if capi2argo_yaml::first_disallowed(text).is_some() {
        // Refused before any reading; libyaml refuses it too, as it reaches that character.
        assert!(
            their_stop.is_some(),
            "libyaml accepts a character capi2argo refuses: {text:?}"
        );
        return;
    }
    let our_stop = error.map(|e| match e {
        capi2argo_yaml::YamlError::Syntax { line, col, .. } => {
            format!("{}:{}", line - 1, col - 1)
        }
        other => format!("{other}"),
    });
    assert_eq!(our_stop, their_stop, "where reading stops, on {text:?}");
    assert_eq!(ours, theirs, "events, on {text:?}");
});
