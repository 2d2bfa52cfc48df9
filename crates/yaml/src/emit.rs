//! Writes YAML trees as block-style YAML (and JSON), quoting exactly where a reader could misread a scalar.

use std::fmt::Write;

use super::chars::skip_words;
use super::{Node, Scalar, ScalarKind, Style, Value, resolve_plain};

/// Appends `node` as the value of a mapping key or a document root, with nested lines at `indent`.
///
/// The caller has written `key:` (or nothing, for a root); this writes ` value\n` or `\n` + block.
fn write_value(out: &mut String, node: &Node, indent: usize) {
    let tag = |out: &mut String| {
        if let Some(tag) = &node.tag {
            out.push(' ');
            out.push_str(tag);
        }
    };
    match &node.value {
        Value::Scalar(_) => {
            out.push(' ');
            write_scalar(out, node, indent);
            out.push('\n');
        }
        Value::Map(entries) if entries.is_empty() => {
            tag(out);
            out.push_str(" {}\n");
        }
        Value::Seq(items) if items.is_empty() => {
            tag(out);
            out.push_str(" []\n");
        }
        Value::Map(_) => {
            tag(out);
            out.push('\n');
            write_block(out, node, indent);
        }
        Value::Seq(_) => {
            tag(out);
            out.push('\n');
            // Sequences under a key sit at the key's own column, as kubectl and kpt write them.
            write_block(out, node, indent.saturating_sub(2));
        }
    }
}

/// Writes a non-empty collection as block lines starting at column `indent`.
pub fn write_block(out: &mut String, node: &Node, indent: usize) {
    write_lines(out, node, indent, true);
}

/// [`write_block`], where the first line's indentation is already written (`- ` of an entry)
/// when `pad_first` is false.
fn write_lines(out: &mut String, node: &Node, indent: usize, pad_first: bool) {
    let mut first = !pad_first;
    let mut pad = |out: &mut String| {
        if !std::mem::take(&mut first) {
            pad(out, indent);
        }
    };
    match &node.value {
        Value::Map(entries) => {
            for (key, value) in entries {
                pad(out);
                let (text, explicit) = key_text(key);
                if explicit {
                    out.push_str("? ");
                    out.push_str(&text);
                    out.push('\n');
                    pad(out);
                } else {
                    out.push_str(&text);
                }
                out.push(':');
                write_value(out, value, indent + 2);
            }
        }
        Value::Seq(items) => {
            for item in items {
                pad(out);
                write_seq_item(out, item, indent);
            }
        }
        Value::Scalar(_) => {
            pad(out);
            write_scalar(out, node, indent);
            out.push('\n');
        }
    }
}

/// Writes `- item` where the dash is already indented to `indent`.
pub fn write_seq_item(out: &mut String, item: &Node, indent: usize) {
    let nested = match &item.value {
        Value::Map(entries) => !entries.is_empty(),
        Value::Seq(items) => !items.is_empty(),
        Value::Scalar(_) => false,
    };
    if nested && item.tag.is_none() {
        // The first entry shares the dash's line.
        out.push_str("- ");
        write_lines(out, item, indent + 2, false);
    } else if nested {
        // A tag on the dash's line, the collection below it.
        out.push('-');
        write_value(out, item, indent + 4);
    } else {
        out.push('-');
        write_value(out, item, indent + 2);
    }
}

/// Writes a whole document (a mapping, normally) at column 0.
pub fn write_document(out: &mut String, node: &Node) {
    let nested = match &node.value {
        Value::Map(e) => !e.is_empty(),
        Value::Seq(e) => !e.is_empty(),
        Value::Scalar(_) => false,
    };
    if nested {
        if let Some(tag) = &node.tag {
            out.push_str(tag);
            out.push('\n');
        }
        write_block(out, node, 0);
    } else {
        // A scalar document is indented: at column 0 its lines could read as markers.
        let mut inner = String::new();
        write_value(&mut inner, node, 2);
        out.push_str(&inner[1..]);
    }
}

fn pad(out: &mut String, indent: usize) {
    const SPACES: &str = "                                ";
    let mut left = indent;
    while left > 0 {
        let n = left.min(SPACES.len());
        out.push_str(&SPACES[..n]);
        left -= n;
    }
}

/// A key on one line, and whether it needs the explicit `? key` form: YAML caps implicit keys
/// at 1024 characters, and a collection as a key is written as JSON.
fn key_text(key: &Node) -> (String, bool) {
    let mut text = String::new();
    match &key.value {
        Value::Scalar(s) if s.text.contains(LINE_BREAKS) => {
            if let Some(tag) = &key.tag {
                text.push_str(tag);
                text.push(' ');
            }
            write_double_quoted(&mut text, &s.text);
        }
        Value::Scalar(_) => write_scalar(&mut text, key, 0),
        // Complex keys never occur in Kubernetes objects; flow text keeps them on one line.
        _ => {
            write_flow_key(&mut text, key);
            return (text, true);
        }
    }
    let explicit = text.chars().count() > 1000;
    (text, explicit)
}

/// What YAML 1.1 readers (libyaml, go-yaml) take for line breaks.
const LINE_BREAKS: [char; 5] = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];

/// Writes a scalar so that every reader reads what the input said: a scalar from the input
/// keeps its style wherever that style can hold its text (a plain scalar keeps its exact text,
/// so YAML 1.1 and 1.2 readers each resolve it as they did); a new one gets the plainest style
/// that both readings take for the same string.
fn write_scalar(out: &mut String, node: &Node, indent: usize) {
    let Value::Scalar(scalar) = &node.value else {
        return;
    };
    if let Some(tag) = &node.tag {
        out.push_str(tag);
        out.push(' ');
    } else if scalar.plain && node.style != Style::Plain && node.style != Style::Unset {
        // The non-specific tag `!` on a quoted or block scalar: libyaml resolves it by its
        // text as if it were plain (`! '0'` is the number 0), so the tag must stay.
        out.push_str("! ");
    }
    let text = scalar.text.as_ref();
    match node.style {
        Style::Plain if scalar.plain => {
            if plain_safe(text) {
                out.push_str(text);
            } else if text.is_empty() {
                // An empty plain scalar is null; keep it null.
                out.push_str("null");
            } else {
                // Folded over several lines, it holds breaks: a string to every reader.
                write_double_quoted(out, text);
            }
        }
        Style::SingleQuoted if single_safe(text) => write_single_quoted(out, text),
        Style::Literal | Style::Folded if literal_safe(text) => write_literal(out, text, indent),
        Style::SingleQuoted | Style::DoubleQuoted | Style::Literal | Style::Folded => {
            write_double_quoted(out, text)
        }
        _ => write_new_string(out, scalar, indent),
    }
}

/// A scalar the function made (or one whose tag made it a string): plain when both YAML
/// readings take the plain text for this same string, a literal block for lines, else quoted.
fn write_new_string(out: &mut String, scalar: &Scalar, indent: usize) {
    let text = scalar.text.as_ref();
    let keeps_meaning = if scalar.plain {
        true
    } else {
        resolve_plain(text) == ScalarKind::Str && !yaml11_special(text)
    };
    if keeps_meaning && plain_safe(text) {
        out.push_str(text);
    } else if scalar.plain && text.is_empty() {
        out.push_str("null");
    } else if literal_safe(text) {
        write_literal(out, text, indent);
    } else {
        write_double_quoted(out, text);
    }
}

/// Words YAML 1.1 readers (kubectl's own YAML library among them) take as something other
/// than a string: booleans, numbers, timestamps, the merge key `<<` and the value key `=`.
fn yaml11_special(text: &str) -> bool {
    matches!(
        text,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
            | "<<"
            | "="
    ) || (text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
        && text.chars().all(|c| {
            c.is_ascii_hexdigit()
                || matches!(
                    c,
                    '_' | ':' | '.' | '+' | '-' | 'x' | 'o' | 'T' | 't' | 'Z' | ' '
                )
        }))
}

/// Whether a character may stand in YAML text unescaped (libyaml's reader refuses the rest).
fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{85}')
        || ('\u{20}'..='\u{7e}').contains(&c)
        || ('\u{a0}'..='\u{d7ff}').contains(&c)
        || ('\u{e000}'..='\u{fffd}').contains(&c)
        || c >= '\u{10000}'
}

/// Whether `text` can be written as a plain scalar in block context and read back unchanged,
/// by libyaml's rules for plain scalars.
fn plain_safe(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    let second = text[first.len_utf8()..].chars().next();
    let blank = |c: Option<char>| matches!(c, None | Some(' ' | '\t'));
    match first {
        ',' | '[' | ']' | '{' | '}' | '#' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' | ' ' | '\t' | '\u{feff}' => return false,
        // `-`, `?` and `:` start a plain scalar only when something other than a blank follows.
        '-' | '?' | ':' if blank(second) => return false,
        _ => {}
    }
    // At the start of a line (a top-level key) `---` and `...` would be document markers.
    if (text.starts_with("---") || text.starts_with("..."))
        && matches!(text[3..].chars().next(), None | Some(' ' | '\t'))
    {
        return false;
    }
    if text.ends_with([' ', '\t', ':']) {
        return false;
    }
    // One pass over the bytes (generated values are long base64 strings): no `: `, no ` #`,
    // no line breaks, nothing that must be escaped.
    let bytes = text.as_bytes();
    let mut prev = 0u8;
    let mut i = 0;
    while i < bytes.len() {
        // Words of printable ASCII without blanks pass eight bytes a step: a `:` or `#` matters
        // only beside a blank, and a blank ends the word (the byte after one is looked at alone).
        if prev != b' ' && prev != b'\t' {
            let run = skip_words(bytes, i, b' ' + 1, 0x7f);
            if run > i {
                prev = bytes[run - 1];
                i = run;
                continue;
            }
        }
        let b = bytes[i];
        if breaks_plain(prev, b) {
            return false;
        }
        prev = b;
        i += 1;
    }
    text.is_ascii()
        || text
            .chars()
            .all(|c| printable(c) && !LINE_BREAKS.contains(&c))
}

/// Whether byte `b`, after `prev`, cannot stand in a plain scalar: a control character, DEL,
/// `: ` (a key) or ` #` (a comment).
fn breaks_plain(prev: u8, b: u8) -> bool {
    (b < 0x20 && b != b'\t')
        || b == 0x7f
        || (prev == b':' && (b == b' ' || b == b'\t'))
        || ((prev == b' ' || prev == b'\t') && b == b'#')
}

/// Whether `text` can be written single-quoted on one line.
fn single_safe(text: &str) -> bool {
    text.chars()
        .all(|c| printable(c) && !LINE_BREAKS.contains(&c) && c != '\u{feff}')
}

fn write_single_quoted(out: &mut String, text: &str) {
    out.push('\'');
    out.push_str(&text.replace('\'', "''"));
    out.push('\'');
}

/// Multi-line text reads best as a literal block, when it can be one.
fn literal_safe(text: &str) -> bool {
    if !text.contains('\n') || text.starts_with([' ', '\n', '\t']) || text.ends_with(' ') {
        return false;
    }
    // One pass: no control character but line feeds, no other kind of break, no line ending
    // in a space. Printable ASCII passes eight bytes a step (a config's base64 above all).
    let bytes = text.as_bytes();
    let mut prev = 0u8;
    let mut i = 0;
    while i < bytes.len() {
        let run_end = skip_words(bytes, i, 0x20, 0x7f);
        if run_end > i {
            prev = bytes[run_end - 1];
            i = run_end;
            continue;
        }
        let b = bytes[i];
        let bad = if b == b'\n' {
            prev == b' '
        } else {
            b < 0x20 || b == 0x7f
        };
        if bad {
            return false;
        }
        prev = b;
        i += 1;
    }
    text.is_ascii()
        || text
            .chars()
            .all(|c| c == '\n' || (printable(c) && !LINE_BREAKS.contains(&c) && c != '\u{feff}'))
}

fn write_literal(out: &mut String, text: &str, indent: usize) {
    let body = text.trim_end_matches('\n');
    let trailing = text.len() - body.len();
    out.push_str(match trailing {
        0 => "|-",
        1 => "|",
        _ => "|+",
    });
    for line in text[..body.len() + trailing.saturating_sub(1)].split('\n') {
        out.push('\n');
        if !line.is_empty() {
            pad(out, indent);
            out.push_str(line);
        }
    }
}

fn write_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if !printable(c) || c == '\u{feff}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a tree as JSON; `indent` is `Some(level)` for pretty output, `None` for one line.
/// A collection used as a key: JSON on one line, except that a key inside it longer than YAML's
/// implicit-key limit (1024 characters) gets the explicit `? ` indicator, which flow mappings
/// allow and JSON does not have (libyaml refuses such a key without it).
fn write_flow_key(out: &mut String, node: &Node) {
    match &node.value {
        Value::Seq(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_flow_key(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) if !entries.is_empty() => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let mut text = String::new();
                match key.scalar() {
                    Some(s) => json_string(&mut text, &s.text),
                    None => write_flow_key(&mut text, key),
                }
                if text.chars().count() > 1000 || key.scalar().is_none() {
                    out.push_str("? ");
                }
                out.push_str(&text);
                out.push(':');
                write_flow_key(out, value);
            }
            out.push('}');
        }
        _ => write_json(out, node, None),
    }
}

/// Appends `node` as JSON: on one line when `indent` is `None`, else a member or entry a line,
/// two spaces a level, nested lines starting at level `indent`. Numbers JSON cannot hold
/// (`0x1F`, `.inf`) go out as strings, and a key that is no scalar as the string of its JSON.
pub fn write_json(out: &mut String, node: &Node, indent: Option<usize>) {
    let newline = |out: &mut String, level: usize| {
        if indent.is_some() {
            out.push('\n');
            pad(out, level * 2);
        }
    };
    let level = indent.unwrap_or(0);
    let next = indent.map(|l| l + 1);
    match &node.value {
        Value::Scalar(s) => write_json_scalar(out, s),
        Value::Seq(items) if items.is_empty() => out.push_str("[]"),
        Value::Map(entries) if entries.is_empty() => out.push_str("{}"),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, level + 1);
                write_json(out, item, next);
            }
            newline(out, level);
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, level + 1);
                match key.scalar() {
                    Some(s) => json_string(out, &s.text),
                    None => {
                        let mut inner = String::new();
                        write_json(&mut inner, key, None);
                        json_string(out, &inner);
                    }
                }
                out.push_str(if indent.is_some() { ": " } else { ":" });
                write_json(out, value, next);
            }
            newline(out, level);
            out.push('}');
        }
    }
}

fn write_json_scalar(out: &mut String, s: &Scalar) {
    match s.kind() {
        ScalarKind::Null => out.push_str("null"),
        ScalarKind::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        ScalarKind::Int | ScalarKind::Float
            if serde_json::from_str::<serde_json::Number>(&s.text).is_ok() =>
        {
            out.push_str(&s.text)
        }
        _ => json_string(out, &s.text),
    }
}

fn json_string(out: &mut String, text: &str) {
    // serde_json's escaping is the reference; a string always serializes.
    let json = serde_json::to_string(text).unwrap_or_default();
    // JSON allows NEL, LS, PS and the byte order mark raw, but YAML 1.1 readers (libyaml,
    // go-yaml) take the first three for line breaks and fold them: escaped, every reader agrees.
    if json.contains(['\u{85}', '\u{2028}', '\u{2029}', '\u{feff}']) {
        for c in json.chars() {
            match c {
                '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
        }
    } else {
        out.push_str(&json);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::{parse_stream, same_content};

    /// `plain_safe` takes words eight bytes a step; it answers as the byte-at-a-time loop it
    /// replaced does, on every string of a small alphabet built around the bytes that matter.
    #[test]
    fn plain_safe_answers_as_the_byte_loop_does() {
        fn byte_loop(text: &str) -> bool {
            let mut prev = 0u8;
            for &b in text.as_bytes() {
                if breaks_plain(prev, b) {
                    return false;
                }
                prev = b;
            }
            true
        }
        let alphabet = ["a", ":", "#", " ", "\t", "\u{1}", "\u{7f}", "é", "-"];
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 30) as usize;
            let text: String = (0..len)
                .map(|k| {
                    let pick = (state >> (k % 20 * 3)) as usize + k;
                    // Mostly ordinary letters, so that words of eight pass whole.
                    if pick.is_multiple_of(3) {
                        alphabet[pick / 3 % alphabet.len()]
                    } else {
                        "a"
                    }
                })
                .collect();
            // The checks before the loop (first character, ends) are the same in both.
            let bytes_ok = |t: &str| {
                byte_loop(t)
                    && (t.is_ascii()
                        || t.chars().all(|c| printable(c) && !LINE_BREAKS.contains(&c)))
            };
            let prefixed = format!("x{text}x");
            assert_eq!(plain_safe(&prefixed), bytes_ok(&prefixed), "{prefixed:?}");
        }
    }

    #[test]
    fn literal_blocks_only_for_text_they_keep() {
        // Each problem at every offset of an eight-byte word, and past it.
        for at in 0..20 {
            let line = "x".repeat(at);
            assert!(literal_safe(&format!("a{line}\nb{line}\n")), "{at}");
            assert!(
                !literal_safe(&format!("a{line} \nb")),
                "space before a break, {at}"
            );
            assert!(!literal_safe(&format!("a{line}\tb\nc")), "tab, {at}");
            assert!(!literal_safe(&format!("a{line}\u{7f}\nc")), "DEL, {at}");
            assert!(!literal_safe(&format!("a{line}\r\nc")), "CR, {at}");
            assert!(!literal_safe(&format!("a{line}\u{2028}\nc")), "LS, {at}");
            assert!(literal_safe(&format!("a{line}é\nc")), "é, {at}");
        }
    }

    fn round_trip(input: &str) -> String {
        let docs = parse_stream(input, &Limits::default()).expect("parses");
        let mut out = String::new();
        write_document(&mut out, &docs[0].root);
        let again = parse_stream(&out, &Limits::default()).expect("output parses");
        assert!(
            same_content(&docs[0].root, &again[0].root),
            "meaning changed:\n{input}\n---\n{out}"
        );
        out
    }

    #[test]
    fn writes_block_style_like_kubectl() {
        let out = round_trip("{a: 1, b: [x, {c: d, e: f}], g: {}, h: []}");
        assert_eq!(out, "a: 1\nb:\n- x\n- c: d\n  e: f\ng: {}\nh: []\n");
    }

    #[test]
    fn quotes_strings_that_would_change_type() {
        let out = round_trip(
            r#"{a: "true", b: "3", c: "yes", d: "", e: "1.31", f: "x: y", g: null, h: "-v", ... x: 1}"#,
        );
        assert_eq!(
            out,
            "a: \"true\"\nb: \"3\"\nc: \"yes\"\nd: \"\"\ne: \"1.31\"\nf: \"x: y\"\ng: null\nh: \"-v\"\n\"... x\": 1\n"
        );
    }

    #[test]
    fn new_multi_line_text_becomes_a_literal_block() {
        let node = Node::map(vec![(
            "a",
            Node::map(vec![
                ("k", Node::string("line1\nline2\n")),
                ("j", Node::string("x\ny")),
                ("t", Node::string("x\n\n")),
            ]),
        )]);
        let mut out = String::new();
        write_document(&mut out, &node);
        assert_eq!(
            out,
            "a:\n  k: |\n    line1\n    line2\n  j: |-\n    x\n    y\n  t: |+\n    x\n\n"
        );
    }

    /// A scalar from the input keeps its style where the style can hold its text, so every
    /// reader resolves it as before: plain `-1` stays a number, `! '0'` keeps its tag.
    #[test]
    fn input_scalars_keep_their_style() {
        let out = round_trip(
            "a: -1\nb: 'q'\nc: \"d\\n\"\nd: |\n  x\ne: ! '0'\nf: 0o17\ng: 'it''s'\nh: ?x\n",
        );
        assert_eq!(
            out,
            "a: -1\nb: 'q'\nc: \"d\\n\"\nd: |\n  x\ne: ! '0'\nf: 0o17\ng: 'it''s'\nh: ?x\n"
        );
    }

    #[test]
    fn odd_characters_are_escaped() {
        round_trip("a: \"tab\\there\"\nb: \" lead\\n\"\nc: \"bom\\ufeff\"\nd: \"é ✓\"\n");
    }

    /// Regression (found by fuzzing): a key over 1024 characters cannot be an implicit key.
    #[test]
    fn long_and_complex_keys_use_the_explicit_form() {
        let long = "k".repeat(1500);
        let out = round_trip(&format!(
            "a:\n  ? \"{long}\"\n  : v\n  ? [x, y]\n  : z\n  \"multi\\nline\": w\n"
        ));
        assert!(out.contains(&format!("  ? \"{long}\"\n  : v\n")), "{out}");
        assert!(out.contains("  ? [\"x\",\"y\"]\n  : z\n"), "{out}");
    }

    #[test]
    fn json_keeps_types_and_order() {
        let docs =
            parse_stream("z: 1\na: \"1\"\nb: [true, null, x]\n", &Limits::default()).unwrap();
        let mut out = String::new();
        write_json(&mut out, &docs[0].root, None);
        assert_eq!(out, r#"{"z":1,"a":"1","b":[true,null,"x"]}"#);
    }
}
