//! Nodes: a value, how it was written and where it stands; typed accessors and constructors.

use std::borrow::Cow;
use std::ops::Range;

use super::scanner::ScalarStyle;

/// How a node was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
    /// A block collection (indented lines).
    Block,
    /// A flow collection (`[…]`, `{…}`, and so JSON).
    Flow,
    /// Made by the function: the emitter chooses.
    Unset,
}

impl From<ScalarStyle> for Style {
    fn from(style: ScalarStyle) -> Self {
        match style {
            ScalarStyle::Plain => Style::Plain,
            ScalarStyle::SingleQuoted => Style::SingleQuoted,
            ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
            ScalarStyle::Literal => Style::Literal,
            ScalarStyle::Folded => Style::Folded,
        }
    }
}

/// A node and where it stands in the input (byte offsets; an empty range for generated nodes).
#[derive(Debug, Clone)]
pub struct Node<'a> {
    pub value: Value<'a>,
    pub span: Range<usize>,
    pub style: Style,
    /// A tag other than `!!str` and `!`, as it is written back (`!!int`, `!local`, `!<uri>`).
    pub tag: Option<Box<str>>,
    /// For a block sequence entry: the offset of its `-`.
    pub entry: Option<usize>,
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
    /// Resolved by its text (`true`, `3`, `null`): plain and untagged, or tagged with the
    /// non-specific `!`, as libyaml marks it. Any other scalar is a string or carries its tag.
    pub plain: bool,
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
    /// Whether a collection was written in flow style (`{}` / `[]`, hence also JSON).
    pub fn is_flow(&self) -> bool {
        self.style == Style::Flow
    }

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
            span: self.span,
            style: self.style,
            tag: self.tag,
            entry: self.entry,
        }
    }
}

/// Constructors for generated nodes.
impl Node<'static> {
    pub fn string(text: impl Into<String>) -> Self {
        Self::from_value(Value::Scalar(Scalar {
            text: Cow::Owned(text.into()),
            plain: false,
        }))
    }

    /// A plain scalar: a number, boolean or null, written without quotes.
    pub fn plain(text: impl Into<String>) -> Self {
        Self::from_value(Value::Scalar(Scalar {
            text: Cow::Owned(text.into()),
            plain: true,
        }))
    }

    pub fn seq(items: Vec<Node<'static>>) -> Self {
        Self::from_value(Value::Seq(items))
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
            span: 0..0,
            style: Style::Unset,
            tag: None,
            entry: None,
        }
    }
}

/// Compares meaning, not form: scalar styles and spans are ignored, `"3"` still differs from `3`.
pub fn same_content(a: &Node, b: &Node) -> bool {
    if a.tag != b.tag {
        return false;
    }
    match (&a.value, &b.value) {
        (Value::Scalar(x), Value::Scalar(y)) => x.kind() == y.kind() && x.text == y.text,
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
