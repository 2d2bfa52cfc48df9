//! A YAML tree with byte spans, built from saphyr-parser events, so unchanged input can be copied verbatim.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Span};

use crate::limits::Limits;

/// A parsed YAML node and where it sits in the input (byte offsets; zero for generated nodes).
#[derive(Debug, Clone)]
pub struct Node<'a> {
    pub value: Value<'a>,
    pub start: usize,
    /// Whether a collection was written in flow style (`{}` / `[]`, hence also JSON).
    pub flow: bool,
}

#[derive(Debug, Clone)]
pub enum Value<'a> {
    Scalar(Scalar<'a>),
    Seq(Vec<Node<'a>>),
    Map(Vec<(Node<'a>, Node<'a>)>),
}

#[derive(Debug, Clone)]
pub struct Scalar<'a> {
    pub text: Cow<'a, str>,
    /// Plain scalars are resolved by the core schema (`true`, `3`, `null`); any other style is a string.
    pub plain: bool,
    /// A non-core tag such as `!foo`, kept so it can be written back.
    pub tag: Option<Box<str>>,
}

/// What a scalar means under the YAML 1.2 core schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    Null,
    Bool(bool),
    Int,
    Float,
    Str,
}

impl Scalar<'_> {
    pub fn kind(&self) -> ScalarKind {
        if !self.plain {
            return ScalarKind::Str;
        }
        resolve_plain(&self.text)
    }
}

/// Resolves a plain scalar the way the core schema (and Kubernetes' YAML→JSON step) does.
pub fn resolve_plain(text: &str) -> ScalarKind {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return ScalarKind::Null,
        "true" | "True" | "TRUE" => return ScalarKind::Bool(true),
        "false" | "False" | "FALSE" => return ScalarKind::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => return ScalarKind::Float,
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return ScalarKind::Int;
    }
    let radix = |prefix: &str, ok: fn(u8) -> bool| {
        text.strip_prefix(prefix)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(ok))
    };
    if radix("0x", |b| b.is_ascii_hexdigit()) || radix("0o", |b| (b'0'..=b'7').contains(&b)) {
        return ScalarKind::Int;
    }
    if looks_like_float(digits) {
        return ScalarKind::Float;
    }
    ScalarKind::Str
}

fn looks_like_float(s: &str) -> bool {
    // Every float form starts with a digit or a dot: most strings are ruled out here.
    if !s.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return false;
    }
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || !frac.is_none_or(all_digits) {
        return false;
    }
    if int.is_empty() && frac.is_none_or(str::is_empty) {
        return false;
    }
    if frac.is_none() && exponent.is_none() {
        return false;
    }
    match exponent {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && all_digits(e)
        }
    }
}

impl<'a> Node<'a> {
    pub fn scalar(&self) -> Option<&Scalar<'a>> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        self.scalar().is_some_and(|s| s.kind() == ScalarKind::Null)
    }

    /// The text of a scalar that is a string (quoted, or plain and not a number/bool/null).
    pub fn as_str(&self) -> Option<&str> {
        self.scalar()
            .filter(|s| s.kind() == ScalarKind::Str)
            .map(|s| s.text.as_ref())
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.scalar()?.kind() {
            ScalarKind::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node<'a>, Node<'a>)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node<'a>]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The value under a string key of a mapping (the first one, as the API server would keep).
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.scalar().is_some_and(|s| s.text == key))
            .map(|(_, v)| v)
    }

    /// Follows a path of string keys through nested mappings.
    pub fn path(&self, keys: &[&str]) -> Option<&Node<'a>> {
        keys.iter().try_fold(self, |node, key| node.get(key))
    }

    /// A short name for the node's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match &self.value {
            Value::Map(_) => "a mapping",
            Value::Seq(_) => "a list",
            Value::Scalar(s) => match s.kind() {
                ScalarKind::Null => "null",
                ScalarKind::Bool(_) => "a boolean",
                ScalarKind::Int | ScalarKind::Float => "a number",
                ScalarKind::Str => "a string",
            },
        }
    }

    /// Drops a mapping's entries except those under the given string keys.
    pub fn retain_keys(&mut self, keep: &[&str]) {
        if let Value::Map(entries) = &mut self.value {
            entries.retain(|(k, _)| k.scalar().is_some_and(|s| keep.contains(&s.text.as_ref())));
            entries.shrink_to_fit();
        }
    }

    /// Converts to an owned tree, for values kept past the input's lifetime.
    pub fn into_owned(self) -> Node<'static> {
        let value = match self.value {
            Value::Scalar(s) => Value::Scalar(Scalar {
                text: Cow::Owned(s.text.into_owned()),
                plain: s.plain,
                tag: s.tag,
            }),
            Value::Seq(items) => Value::Seq(items.into_iter().map(Node::into_owned).collect()),
            Value::Map(entries) => Value::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect(),
            ),
        };
        Node {
            value,
            start: self.start,
            flow: self.flow,
        }
    }
}

/// Constructors for generated nodes.
impl Node<'static> {
    pub fn string(text: impl Into<String>) -> Self {
        Self::from_value(Value::Scalar(Scalar {
            text: Cow::Owned(text.into()),
            plain: false,
            tag: None,
        }))
    }

    /// A plain scalar: a number, boolean or null, written without quotes.
    pub fn plain(text: impl Into<String>) -> Self {
        Self::from_value(Value::Scalar(Scalar {
            text: Cow::Owned(text.into()),
            plain: true,
            tag: None,
        }))
    }

    pub fn map(entries: Vec<(&str, Node<'static>)>) -> Self {
        Self::from_value(Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Node::string(k), v))
                .collect(),
        ))
    }

    fn from_value(value: Value<'static>) -> Self {
        Node {
            value,
            start: 0,
            flow: false,
        }
    }
}

/// Compares meaning, not form: scalar styles and spans are ignored, `"3"` still differs from `3`.
pub fn same_content(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Scalar(x), Value::Scalar(y)) => {
            x.kind() == y.kind() && x.text == y.text && x.tag == y.tag
        }
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_content(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| same_content(k1, k2) && same_content(v1, v2))
        }
        _ => false,
    }
}

/// One document of a stream, with the byte range of its text (markers `---`/`...` excluded).
#[derive(Debug)]
pub struct Document<'a> {
    pub root: Node<'a>,
    pub text_start: usize,
    pub text_end: usize,
    /// Where the document's aliases (`*name`) stand, in order: text holding one cannot be copied
    /// apart from its anchor.
    pub aliases: Vec<usize>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum YamlError {
    #[error("invalid YAML at line {line} column {col}: {message}")]
    Syntax {
        line: usize,
        col: usize,
        message: String,
    },
    #[error("YAML nesting deeper than {limit} levels at line {line}")]
    TooDeep { limit: usize, line: usize },
    #[error(
        "YAML has more than {limit} nodes once aliases are expanded (a billion-laughs document?)"
    )]
    TooManyNodes { limit: usize },
    #[error("YAML alias at line {line} refers to an unknown anchor")]
    UnknownAnchor { line: usize },
    #[error(
        "YAML aliases expand to more than {limit} nodes, 64 bytes of text counting as one (a billion-laughs document?)"
    )]
    TooManyAliasNodes { limit: usize },
}

/// Maps saphyr's character-based markers to byte offsets.
struct Offsets<'a> {
    input: &'a str,
    ascii: bool,
    line_starts: Vec<usize>,
    /// The last position found (line, column, byte): the parser asks in nearly increasing order,
    /// so walking from there keeps a long line with many values linear, not quadratic.
    last: Cell<(usize, usize, usize)>,
}

impl<'a> Offsets<'a> {
    fn new(input: &'a str) -> Self {
        let ascii = input.is_ascii();
        let line_starts = if ascii {
            Vec::new()
        } else {
            std::iter::once(0).chain(line_break_ends(input)).collect()
        };
        Offsets {
            input,
            ascii,
            line_starts,
            last: Cell::new((usize::MAX, 0, 0)),
        }
    }

    fn byte(&self, m: &Marker) -> usize {
        if self.ascii {
            return m.index().min(self.input.len());
        }
        let (line, col) = (m.line(), m.col());
        let (last_line, last_col, last_byte) = self.last.get();
        let byte = if line == last_line && col >= last_col {
            Self::walk(self.input, last_byte, col - last_col)
        } else if line == last_line {
            let back = last_col - col;
            self.input[..last_byte]
                .char_indices()
                .rev()
                .nth(back - 1)
                .map_or(0, |(i, _)| i)
        } else {
            let line_start = self
                .line_starts
                .get(line.saturating_sub(1))
                .copied()
                .unwrap_or(self.input.len());
            // The parser skips byte order marks at the start of a line without counting columns.
            let rest = self.input[line_start..].trim_start_matches('\u{feff}');
            Self::walk(self.input, self.input.len() - rest.len(), col)
        };
        self.last.set((line, col, byte));
        byte
    }

    /// The byte offset `chars` characters past `from` (or the end of the input).
    fn walk(input: &str, from: usize, chars: usize) -> usize {
        let rest = &input[from..];
        from + rest
            .char_indices()
            .nth(chars)
            .map_or(rest.len(), |(i, _)| i)
    }
}

/// A collection under construction: the node, its anchor, and its expansion cost so far.
struct Frame<'a> {
    node: Node<'a>,
    anchor: usize,
    cost: usize,
    /// For a mapping: a key waiting for its value.
    key: Option<Node<'a>>,
}

/// Parses every document of a YAML (or JSON) stream into trees.
pub fn parse_stream<'a>(input: &'a str, limits: &Limits) -> Result<Vec<Document<'a>>, YamlError> {
    let offsets = Offsets::new(input);
    let mut parser = Parser::new_from_str(input);
    let mut docs = Vec::new();
    let mut stack: Vec<Frame<'a>> = Vec::new();
    let mut anchors: HashMap<usize, (Node<'a>, usize)> = HashMap::new();
    let mut nodes = 0usize;
    let mut alias_nodes = 0usize;
    let mut aliases = Vec::new();
    // Where the current document's last content (scalar, alias, flow collection) ends: an end
    // marker can only come after it (a `...` line inside a quoted scalar is text).
    let mut content_end = 0usize;
    // Where the current document's text begins, and whether it began with an explicit `---`.
    let mut doc_start = 0usize;
    let mut boundary = 0usize;
    let mut pending_root: Option<(Node<'a>, usize)> = None;

    let syntax = |m: &Marker, message: String| YamlError::Syntax {
        line: m.line(),
        col: m.col() + 1,
        message,
    };

    while let Some(event) = parser.next_event() {
        let (event, span): (Event<'a>, Span) =
            event.map_err(|e| syntax(e.marker(), e.info().to_string()))?;
        let start = offsets.byte(&span.start);
        let completed: Option<(Node<'a>, usize)> = match event {
            Event::StreamStart | Event::Nothing => None,
            Event::StreamEnd => break,
            Event::DocumentStart(explicit) => {
                doc_start = if explicit {
                    let after = offsets.byte(&span.end);
                    after_line_break(input, after)
                } else {
                    // An implicit document begins where the previous one (and its `...`) ended: its
                    // first event may sit past a block scalar's header or leading comments.
                    boundary.min(start)
                };
                content_end = 0;
                None
            }
            Event::DocumentEnd => {
                if let Some((root, _)) = pending_root.take() {
                    let text_start = past_end_markers(input, doc_start.min(root.start), root.start);
                    let text_end = document_text_end(input, text_start, content_end, start);
                    boundary = after_end_marker(input, text_end);
                    docs.push(Document {
                        text_start,
                        root,
                        text_end,
                        aliases: std::mem::take(&mut aliases),
                    });
                }
                aliases.clear();
                anchors.clear();
                None
            }
            Event::Alias(id) => {
                let (node, cost) = anchors.get(&id).ok_or(YamlError::UnknownAnchor {
                    line: span.start.line(),
                })?;
                // Checked before copying, so an expansion bomb never gets to allocate.
                alias_nodes += cost;
                if alias_nodes > limits.max_alias_nodes {
                    return Err(YamlError::TooManyAliasNodes {
                        limit: limits.max_alias_nodes,
                    });
                }
                nodes += cost;
                aliases.push(start);
                content_end = content_end.max(offsets.byte(&span.end));
                Some((node.clone(), *cost))
            }
            Event::Scalar(text, style, anchor, tag) => {
                nodes += 1;
                let (tag, forces_string) = match tag.as_deref() {
                    None => (None, false),
                    Some(t) => scalar_tag(&t.handle, &t.suffix),
                };
                let end = offsets.byte(&span.end);
                content_end = content_end.max(end);
                let text = borrow_if_verbatim(input, start..end, style, text);
                let node = Node {
                    value: Value::Scalar(Scalar {
                        text,
                        plain: style == ScalarStyle::Plain && !forces_string,
                        tag,
                    }),
                    start,
                    flow: false,
                };
                // Long text repeated by aliases costs memory and output like many nodes would.
                let cost = scalar_cost(&node);
                if anchor > 0 {
                    anchors.insert(anchor, (node.clone(), cost));
                }
                Some((node, cost))
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                nodes += 1;
                if stack.len() >= limits.max_depth {
                    return Err(YamlError::TooDeep {
                        limit: limits.max_depth,
                        line: span.start.line(),
                    });
                }
                let flow = is_flow_collection(&input[start..]);
                let is_seq = matches!(event, Event::SequenceStart(..));
                let node = Node {
                    value: if is_seq {
                        Value::Seq(Vec::new())
                    } else {
                        Value::Map(Vec::new())
                    },
                    start,
                    flow,
                };
                stack.push(Frame {
                    node,
                    anchor,
                    cost: 1,
                    key: None,
                });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(Frame {
                    mut node,
                    anchor,
                    cost,
                    ..
                }) = stack.pop()
                else {
                    return Err(syntax(&span.start, "unbalanced collection end".into()));
                };
                // Vectors grow to at least four entries: small mappings (most of them) would
                // hold twice the memory they use.
                match &mut node.value {
                    Value::Map(entries) => entries.shrink_to_fit(),
                    Value::Seq(items) => items.shrink_to_fit(),
                    Value::Scalar(_) => {}
                }
                if node.flow {
                    content_end = content_end.max(offsets.byte(&span.end));
                }
                if anchor > 0 {
                    anchors.insert(anchor, (node.clone(), cost));
                }
                Some((node, cost))
            }
        };
        if nodes > limits.max_nodes {
            return Err(YamlError::TooManyNodes {
                limit: limits.max_nodes,
            });
        }
        if let Some((node, cost)) = completed {
            let Some(parent) = stack.last_mut() else {
                pending_root = Some((node, cost));
                continue;
            };
            parent.cost += cost;
            match &mut parent.node.value {
                Value::Seq(items) => items.push(node),
                Value::Map(entries) => match parent.key.take() {
                    None => parent.key = Some(node),
                    Some(k) => entries.push((k, node)),
                },
                Value::Scalar(_) => {}
            }
        }
    }
    Ok(docs)
}

/// Whether the collection starting here (perhaps after its anchor, tag and comments) is `[`/`{`.
fn is_flow_collection(mut text: &str) -> bool {
    loop {
        text = text.trim_start_matches(YAML_SPACE);
        if text.starts_with('#') {
            text = text.find(['\n', '\r']).map_or("", |i| &text[i..]);
        } else if text.starts_with(['&', '!']) {
            // A property ends at a space, or at a flow indicator (`![a]` in flow context).
            text = text[1..]
                .find([' ', '\t', '\r', '\n', '[', '{', ']', '}', ','])
                .map_or("", |i| &text[1 + i..]);
        } else {
            return text.starts_with(['[', '{']);
        }
    }
}

/// What a scalar weighs when an alias repeats it: one node, and one more per 64 bytes of text.
fn scalar_cost(node: &Node) -> usize {
    1 + node.scalar().map_or(0, |s| s.text.len() / 64)
}

/// The scalar's text as a slice of the input when it stands there unchanged, so the parser's copy
/// can go: most scalars (and all the large base64 ones) are plain or quoted without escapes or folds.
fn borrow_if_verbatim<'a>(
    input: &'a str,
    std::ops::Range { start, end }: std::ops::Range<usize>,
    style: ScalarStyle,
    text: Cow<'a, str>,
) -> Cow<'a, str> {
    if text.is_empty() || matches!(text, Cow::Borrowed(_)) {
        return text;
    }
    let raw = match style {
        ScalarStyle::Plain => input.get(start..end),
        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted if end >= start + 2 => {
            input.get(start + 1..end - 1)
        }
        _ => None,
    };
    match raw {
        Some(raw) if raw == text => Cow::Borrowed(raw),
        _ => text,
    }
}

/// How a scalar's tag is kept: the text to write it back with, and whether it makes the scalar a string.
///
/// `!!str` and the non-specific `!` only say "string": that is kept as the scalar's type, not as a
/// tag. Other core-schema tags are written `!!name`, local tags `!name`, anything else verbatim.
fn scalar_tag(handle: &str, suffix: &str) -> (Option<Box<str>>, bool) {
    match (handle, suffix) {
        ("tag:yaml.org,2002:", "str") | ("", "!") | ("!", "") => (None, true),
        ("tag:yaml.org,2002:", name) => (Some(format!("!!{name}").into()), false),
        ("!", name)
            if name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
        {
            (Some(format!("!{name}").into()), false)
        }
        (handle, name) => {
            let uri: String = format!("{handle}{name}")
                .chars()
                .filter(|c| !c.is_whitespace() && !matches!(c, '<' | '>'))
                .collect();
            (Some(format!("!<{uri}>").into()), false)
        }
    }
}

/// The offset just past the line break that follows `at`, unless text follows on the same line.
fn after_line_break(input: &str, at: usize) -> usize {
    let rest = &input[at..];
    let blank = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    match rest[blank..].chars().next() {
        Some('\n') => at + blank + 1,
        Some('\r') if rest[blank..].starts_with("\r\n") => at + blank + 2,
        Some('\r') => at + blank + 1,
        None => input.len(),
        _ => at + blank,
    }
}

/// Skips `...` lines between `from` and the root at `root`: they close documents with no content,
/// which the parser does not report, so they are no part of this document's text.
fn past_end_markers(input: &str, from: usize, root: usize) -> usize {
    let mut start = from;
    let mut at = from;
    while at < root {
        let end = input[at..]
            .find(['\n', '\r'])
            .map_or(input.len(), |i| at + i);
        if end >= root {
            break;
        }
        if is_end_marker(&input[at..end]) {
            start = after_line_break(input, end);
        }
        at = after_line_break(input, end);
    }
    start
}

/// A `...` line; byte order marks may stand before it (a stream may restart its encoding there).
fn is_end_marker(line: &str) -> bool {
    starts_with_marker(line.trim_start_matches('\u{feff}'), "...")
}

/// What YAML counts as white space (`str::trim` would also take vertical tabs, no-break spaces
/// and other Unicode spaces, which are content to YAML).
pub const YAML_SPACE: [char; 4] = [' ', '\t', '\r', '\n'];

/// Whether `text`, standing at the start of a line, would open with a document marker.
pub fn starts_with_marker(text: &str, marker: &str) -> bool {
    text.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(YAML_SPACE))
}

/// Past a `...` line at `at`, if there is one: where an implicit document after it may begin.
fn after_end_marker(input: &str, at: usize) -> usize {
    let rest = &input[at..];
    let boms = rest.len() - rest.trim_start_matches('\u{feff}').len();
    if is_end_marker(rest) {
        after_line_break(input, at + boms + 3)
    } else {
        at
    }
}

/// A document's text runs until the line where the next marker (`---` or `...`) stands.
fn document_text_end(
    input: &str,
    doc_start: usize,
    content_end: usize,
    end_marker: usize,
) -> usize {
    let mut end = line_start(input, end_marker.max(doc_start));
    if end_marker >= input.len() {
        end = input.len();
    }
    // An explicit `...` line ends the document: it is not part of its text (`...#` and `....`
    // are plain scalars, not markers). Only `...` at a line start can be one.
    let start = doc_start.min(end);
    let from = content_end.clamp(start, end);
    memchr::memmem::find_iter(&input.as_bytes()[from..end], b"...")
        .map(|i| {
            let at = from + i;
            let line = input[start..at].trim_end_matches('\u{feff}');
            (start + line.len(), at)
        })
        .find(|&(line, at)| {
            (line == start || matches!(input.as_bytes()[line - 1], b'\n' | b'\r'))
                && is_end_marker(&input[at..end])
        })
        .map_or(end, |(line, _)| line)
}

/// The offset of the start of the line holding `at`.
/// YAML breaks lines at `\n`, `\r\n` and a lone `\r`: the offsets just past each break.
fn line_break_ends(input: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = input.as_bytes();
    bytes.iter().enumerate().filter_map(move |(i, &b)| match b {
        b'\n' => Some(i + 1),
        b'\r' if bytes.get(i + 1) != Some(&b'\n') => Some(i + 1),
        _ => None,
    })
}

/// The offset of the start of the line holding `at` (any YAML line break ends a line).
pub fn line_start(input: &str, at: usize) -> usize {
    input[..at].rfind(['\n', '\r']).map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(input: &str) -> Vec<Document<'_>> {
        parse_stream(input, &Limits::default()).expect("parses")
    }

    #[test]
    fn resolves_plain_scalars_by_core_schema() {
        assert_eq!(resolve_plain("true"), ScalarKind::Bool(true));
        assert_eq!(resolve_plain("~"), ScalarKind::Null);
        assert_eq!(resolve_plain("-12"), ScalarKind::Int);
        assert_eq!(resolve_plain("1.5e3"), ScalarKind::Float);
        assert_eq!(resolve_plain("1e3"), ScalarKind::Float);
        assert_eq!(resolve_plain("."), ScalarKind::Str);
        assert_eq!(resolve_plain("1.2.3"), ScalarKind::Str);
        assert_eq!(resolve_plain("yes"), ScalarKind::Str);
        assert_eq!(resolve_plain("0x1F"), ScalarKind::Int);
    }

    #[test]
    fn scalars_written_verbatim_borrow_the_input() {
        let input = "a: plain text\nb: 'single'\nc: \"double\"\nd: \"esc\\n\"\ne: 'it''s'\nf: two\n  lines\ng: ümlaut 'x'\n";
        let docs = parse(input);
        let texts: Vec<(&str, bool)> = docs[0]
            .root
            .as_map()
            .unwrap()
            .iter()
            .map(|(_, v)| {
                let text = &v.scalar().unwrap().text;
                (text.as_ref(), matches!(text, Cow::Borrowed(_)))
            })
            .collect();
        assert_eq!(
            texts,
            [
                ("plain text", true),
                ("single", true),
                ("double", true),
                ("esc\n", false),
                ("it's", false),
                ("two lines", false),
                ("ümlaut 'x'", true),
            ]
        );
    }

    #[test]
    fn byte_offsets_survive_multibyte_text() {
        let input = "a: é\nb: [x]\n";
        let docs = parse(input);
        let b = docs[0].root.get("b").expect("b");
        assert_eq!(&input[b.start..b.start + 3], "[x]");
        assert!(b.flow);
    }

    /// Regression: offsets on one long non-ASCII line were found from the line start each time
    /// (a 1 MB one-line JSON List took minutes); they are walked from the last one now.
    #[test]
    fn offsets_on_a_long_multibyte_line_point_at_every_value() {
        let input = format!(
            "{{{}}}\n",
            (0..200)
                .map(|i| format!("\"k{i}\": [\"ü{i}\", é{i}, {{\"x\": 'ä'}}]"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let docs = parse(&input);
        let entries = docs[0].root.as_map().unwrap();
        assert_eq!(entries.len(), 200);
        for (i, (k, v)) in entries.iter().enumerate() {
            assert!(input[k.start..].starts_with(&format!("\"k{i}\"")));
            let seq = v.as_seq().unwrap();
            assert!(input[v.start..].starts_with('['));
            assert!(input[seq[0].start..].starts_with(&format!("\"ü{i}\"")));
            assert!(input[seq[1].start..].starts_with(&format!("é{i},")));
            assert!(input[seq[2].start..].starts_with("{\"x\": 'ä'}"));
        }
    }

    /// Regression (found by fuzzing): a lone `\r` is a line break to YAML, so to spans too.
    #[test]
    fn lone_carriage_returns_break_lines() {
        let input = "a: é\rb: [x]\r";
        let docs = parse(input);
        let b = docs[0].root.get("b").expect("b");
        assert_eq!(&input[b.start..b.start + 3], "[x]");
        assert_eq!(line_start(input, b.start), 6);
    }

    #[test]
    fn document_text_excludes_markers() {
        let input = "# head\n---\n# c1\na: 1\n---\nb: 2\n...\n";
        let docs = parse(input);
        assert_eq!(docs.len(), 2);
        assert_eq!(&input[docs[0].text_start..docs[0].text_end], "# c1\na: 1\n");
        assert_eq!(&input[docs[1].text_start..docs[1].text_end], "b: 2\n");
    }

    /// Regression (found by fuzzing): an implicit document holding a block scalar kept only its content line.
    #[test]
    fn implicit_documents_start_at_their_first_byte() {
        let input = "|-\rtext\r";
        let docs = parse(input);
        assert_eq!(&input[docs[0].text_start..docs[0].text_end], input);
        // Regression (found by fuzzing): `...#` is a plain scalar, not a marker with a comment.
        let input = "##s\n...#\ns#\n";
        let docs = parse(input);
        assert_eq!(&input[docs[0].text_start..docs[0].text_end], input);
        // Regression (found by fuzzing): an empty document closed by `...` before the first one.
        let input = "\n...\n.. #c\n";
        let docs = parse(input);
        assert_eq!(&input[docs[0].text_start..docs[0].text_end], ".. #c\n");
        let input = "# lead\n|\n  x\n...\n# c\nb: 2\n";
        let docs = parse(input);
        assert_eq!(
            &input[docs[0].text_start..docs[0].text_end],
            "# lead\n|\n  x\n"
        );
        assert_eq!(&input[docs[1].text_start..docs[1].text_end], "# c\nb: 2\n");
    }

    #[test]
    fn aliases_are_expanded_and_counted() {
        let docs = parse("a: &x {k: v}\nb: *x\n");
        assert_eq!(
            docs[0].root.path(&["b", "k"]).and_then(Node::as_str),
            Some("v")
        );
        let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
        let err = parse_stream(laughs, &Limits::default()).err();
        assert_eq!(err, Some(YamlError::TooManyAliasNodes { limit: 100_000 }));
        let limits = Limits {
            max_nodes: 10_000,
            max_alias_nodes: usize::MAX,
            ..Limits::default()
        };
        let err = parse_stream(laughs, &limits).err();
        assert_eq!(err, Some(YamlError::TooManyNodes { limit: 10_000 }));
    }

    /// Regression: the budget counted nodes only, so one long string repeated by aliases made a
    /// 1 MB input expand to 2 GB of output (and more with more aliases). Text counts too now.
    #[test]
    fn long_text_repeated_by_aliases_counts_by_its_size() {
        let text = "x".repeat(64 * 99);
        let input = |n: usize| format!("a: &t \"{text}\\n\"\nb: [{}]\n", vec!["*t"; n].join(", "));
        let limits = Limits {
            max_alias_nodes: 1_000,
            ..Limits::default()
        };
        assert!(parse_stream(&input(10), &limits).is_ok());
        let err = parse_stream(&input(11), &limits).err();
        assert_eq!(err, Some(YamlError::TooManyAliasNodes { limit: 1_000 }));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        // The scanner itself stops flow nesting at 255 levels.
        let input = "[".repeat(100_000);
        let err = parse_stream(&input, &Limits::default()).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
        let block: String = (0..1_000)
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect();
        let err = parse_stream(&block, &Limits::default()).unwrap_err();
        assert!(matches!(err, YamlError::TooDeep { .. }), "{err}");
    }

    /// Regression (found by fuzzing): a non-specific `!` tag came back as `!!`, which is not YAML.
    #[test]
    fn tags_are_written_back_as_valid_yaml() {
        let input = "a: ! 3\nb: !local y\nc: !<tag:example.com,2000:app/foo> z\nd: !!str 123\ne: !!int 7\n! f: g\n";
        let docs = parse(input);
        let root = &docs[0].root;
        assert_eq!(root.get("a").and_then(Node::as_str), Some("3"));
        assert_eq!(root.get("d").and_then(Node::as_str), Some("123"));
        let mut out = String::new();
        crate::emit::write_document(&mut out, root);
        let again = parse_stream(&out, &Limits::default()).expect("written tags parse");
        assert!(same_content(root, &again[0].root), "{out}");
    }

    #[test]
    fn same_content_ignores_style_but_not_type() {
        let a = parse("k: \"v\"\nn: '3'\n");
        let b = parse("k: v\nn: '3'\n");
        let c = parse("k: v\nn: 3\n");
        assert!(same_content(&a[0].root, &b[0].root));
        assert!(!same_content(&b[0].root, &c[0].root));
    }
}
