//! Writes YAML trees as block-style YAML (and JSON), quoting exactly where a reader could misread a scalar.

use std::fmt::Write;

use super::{Node, Scalar, ScalarKind, Value, resolve_plain};

/// Appends `node` as the value of a mapping key or a document root, with nested lines at `indent`.
///
/// The caller has written `key:` (or nothing, for a root); this writes ` value\n` or `\n` + block.
fn write_value(out: &mut String, node: &Node, indent: usize) {
    match &node.value {
        Value::Scalar(s) => {
            out.push(' ');
            write_scalar(out, node.tag.as_deref(), s, indent);
            out.push('\n');
        }
        Value::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Value::Seq(items) if items.is_empty() => out.push_str(" []\n"),
        Value::Map(_) => {
            out.push('\n');
            write_block(out, node, indent);
        }
        Value::Seq(_) => {
            out.push('\n');
            // Sequences under a key sit at the key's own column, as kubectl and kpt write them.
            write_block(out, node, indent.saturating_sub(2));
        }
    }
}

/// Writes a non-empty collection as block lines starting at column `indent`.
pub fn write_block(out: &mut String, node: &Node, indent: usize) {
    match &node.value {
        Value::Map(entries) => {
            for (key, value) in entries {
                pad(out, indent);
                let (text, explicit) = key_text(key);
                if explicit {
                    out.push_str("? ");
                    out.push_str(&text);
                    out.push('\n');
                    pad(out, indent);
                } else {
                    out.push_str(&text);
                }
                out.push(':');
                write_value(out, value, indent + 2);
            }
        }
        Value::Seq(items) => {
            for item in items {
                pad(out, indent);
                write_seq_item(out, item, indent);
            }
        }
        Value::Scalar(s) => {
            pad(out, indent);
            write_scalar(out, node.tag.as_deref(), s, indent);
            out.push('\n');
        }
    }
}

/// Writes `- item` where the dash is already indented to `indent`.
pub fn write_seq_item(out: &mut String, item: &Node, indent: usize) {
    out.push_str("- ");
    match &item.value {
        Value::Map(entries) if !entries.is_empty() => {
            let mut inner = String::new();
            write_block(&mut inner, item, indent + 2);
            // The first entry shares the dash's line.
            out.push_str(&inner[indent + 2..]);
        }
        Value::Seq(items) if !items.is_empty() => {
            let mut inner = String::new();
            write_block(&mut inner, item, indent + 2);
            out.push_str(&inner[indent + 2..]);
        }
        _ => {
            let mut inner = String::new();
            write_value(&mut inner, item, indent + 2);
            out.push_str(&inner[1..]);
        }
    }
}

/// Writes a whole document (a mapping, normally) at column 0.
pub fn write_document(out: &mut String, node: &Node) {
    match &node.value {
        Value::Map(e) if !e.is_empty() => write_block(out, node, 0),
        Value::Seq(e) if !e.is_empty() => write_block(out, node, 0),
        _ => {
            // A block scalar's lines are indented: at column 0 they could read as markers (and
            // saphyr-parser would miss a `---` after them).
            let mut inner = String::new();
            write_value(&mut inner, node, 2);
            out.push_str(&inner[1..]);
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A key on one line, and whether it needs the explicit `? key` form: YAML caps implicit keys
/// at 1024 characters, and a collection as a key is written as JSON.
fn key_text(key: &Node) -> (String, bool) {
    let mut text = String::new();
    match &key.value {
        Value::Scalar(s) if s.text.contains('\n') => {
            write_double_quoted(&mut text, &s.text);
        }
        Value::Scalar(s) => write_scalar(&mut text, key.tag.as_deref(), s, 0),
        // Complex keys never occur in Kubernetes objects; JSON text keeps them on one line.
        _ => {
            write_json(&mut text, key, None);
            return (text, true);
        }
    }
    let explicit = text.len() > 1000;
    (text, explicit)
}

fn write_scalar(out: &mut String, tag: Option<&str>, scalar: &Scalar, indent: usize) {
    if let Some(tag) = tag {
        out.push_str(tag);
        out.push(' ');
    }
    let text = scalar.text.as_ref();
    let keeps_meaning = if scalar.plain {
        true
    } else {
        resolve_plain(text) == ScalarKind::Str && !yaml11_special(text)
    };
    if keeps_meaning && plain_safe(text) {
        out.push_str(text);
    } else if scalar.plain && text.is_empty() {
        // An empty plain scalar is null; keep it null.
        out.push_str("null");
    } else if literal_safe(text) {
        write_literal(out, text, indent);
    } else {
        write_double_quoted(out, text);
    }
}

/// Words YAML 1.1 readers (kubectl's own YAML library among them) take as booleans or numbers.
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
    ) || (text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
        && text
            .chars()
            .all(|c| c.is_ascii_hexdigit() || matches!(c, '_' | ':' | '.' | '+' | '-' | 'x' | 'o')))
}

/// Whether `text` can be written as a plain scalar in block context and read back unchanged.
fn plain_safe(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    if matches!(
        first,
        '-' | '?'
            | ':'
            | ','
            | '['
            | ']'
            | '{'
            | '}'
            | '#'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
            | ' '
    ) {
        return false;
    }
    // `...` at the start of a line (a top-level key) would end the document.
    if text.ends_with([' ', ':']) || text.starts_with("...") {
        return false;
    }
    // One pass over the bytes (generated values are long base64 strings): no `: `, no ` #`, no
    // flow indicators, no control characters (tabs included).
    let mut prev = 0u8;
    for &b in text.as_bytes() {
        if b < 0x20
            || b == 0x7f
            || matches!(b, b'{' | b'}' | b'[' | b']' | b',')
            || (prev == b':' && b == b' ')
            || (prev == b' ' && b == b'#')
        {
            return false;
        }
        prev = b;
    }
    text.is_ascii()
        || text
            .chars()
            .all(|c| !c.is_control() && !is_special_unicode(c))
}

fn is_special_unicode(c: char) -> bool {
    matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{85}')
}

/// Multi-line text reads best as a literal block, when it can be one.
fn literal_safe(text: &str) -> bool {
    if !text.contains('\n') || text.starts_with([' ', '\n', '\t']) || text.ends_with(' ') {
        return false;
    }
    // One pass: no control character but line breaks, no line ending in a space.
    let mut prev = 0u8;
    for &b in text.as_bytes() {
        let bad = if b == b'\n' {
            prev == b' '
        } else {
            b < 0x20 || b == 0x7f
        };
        if bad {
            return false;
        }
        prev = b;
    }
    text.is_ascii()
        || text
            .chars()
            .all(|c| c == '\n' || (!c.is_control() && !is_special_unicode(c)))
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
            c if c.is_control() || is_special_unicode(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a tree as JSON; `indent` is `Some(level)` for pretty output, `None` for one line.
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
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::yaml::{parse_stream, same_content};

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
    fn multi_line_text_becomes_a_literal_block() {
        let out = round_trip("a:\n  k: \"line1\\nline2\\n\"\n  j: \"x\\ny\"\n  t: \"x\\n\\n\"\n");
        assert_eq!(
            out,
            "a:\n  k: |\n    line1\n    line2\n  j: |-\n    x\n    y\n  t: |+\n    x\n\n"
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
        assert!(out.contains(&format!("  ? {long}\n  : v\n")), "{out}");
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
