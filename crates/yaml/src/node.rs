//! Nodes: a value, how it was written and where it stands; typed accessors and constructors.

use std::borrow::Cow;
use std::num::NonZeroU32;

use super::scanner::ScalarStyle;

/// How a node was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A plain scalar: no quotes.
    Plain,
    /// A scalar in single quotes.
    SingleQuoted,
    /// A scalar in double quotes.
    DoubleQuoted,
    /// A literal block scalar (`|`).
    Literal,
    /// A folded block scalar (`>`).
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node<'a> {
    /// What the node holds: a scalar, a sequence or a mapping.
    pub value: Value<'a>,
    /// The node's byte range in the text it was read from, from its first property (`&anchor`,
    /// `!tag`) to the end of its last token; empty for generated nodes.
    pub span: Span,
    /// How the node was written; `Unset` for generated nodes.
    pub style: Style,
    /// A tag other than `!!str` and `!`, as it is written back (`!!int`, `!local`, `!<uri>`).
    pub tag: Option<Tag>,
    /// Where the indicator its text begins with stands: a block sequence entry's `-`, an
    /// explicit key's `?`.
    pub indicator: Option<Indicator>,
}

/// A tag's text, boxed twice: tags are rare, and a thin pointer keeps every node smaller.
pub type Tag = Box<String>;

/// A node's byte range, kept in eight bytes (every node of a large fleet carries one; a node is
/// 56 bytes instead of 64). Offsets fit: the tree refuses texts longer than [`MAX_TEXT`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// The range `start..end` (offsets past [`MAX_TEXT`], which the tree never reaches, are
    /// kept as `u32::MAX`).
    pub fn new(start: usize, end: usize) -> Span {
        let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
        Span {
            start: offset(start),
            end: offset(end),
        }
    }

    /// The offset the range begins at.
    pub fn start(self) -> usize {
        self.start as usize
    }

    /// The offset just past the range's end.
    pub fn end(self) -> usize {
        self.end as usize
    }
}

/// The byte offset of a `-` or `?` indicator, kept in four bytes (every node of a large fleet
/// carries the field). Offsets fit: the tree refuses texts longer than [`MAX_TEXT`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indicator(NonZeroU32);

/// The longest text the tree reads, in bytes (4 GiB less one): offsets are kept in 32 bits.
pub const MAX_TEXT: usize = u32::MAX as usize - 1;

// A node is 56 bytes, as `Span` says (on 64-bit targets; WebAssembly's pointers are smaller).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Node>() == 56);

impl Indicator {
    /// The indicator at `pos`, or `None` when `pos` is past [`MAX_TEXT`] (the tree never gets
    /// there).
    pub fn at(pos: usize) -> Option<Indicator> {
        u32::try_from(pos + 1)
            .ok()
            .and_then(NonZeroU32::new)
            .map(Indicator)
    }

    /// The indicator's byte offset.
    pub fn pos(self) -> usize {
        self.0.get() as usize - 1
    }
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// A scalar.
    Scalar(Scalar<'a>),
    /// A sequence: its items, in order.
    Seq(Vec<Node<'a>>),
    /// A mapping: its keys and values, in order (a key held twice is kept twice; see
    /// [`Node::duplicate_key`]).
    Map(Vec<(Node<'a>, Node<'a>)>),
}

/// A scalar's value, and whether it resolves by its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar<'a> {
    /// The value as read, quotes, escapes and folding resolved (borrowed from the input where
    /// it stands there as it is).
    pub text: Cow<'a, str>,
    /// Resolved by its text (`true`, `3`, `null`): plain and untagged, or tagged with the
    /// non-specific `!`, as libyaml marks it. Any other scalar is a string or carries its tag.
    pub plain: bool,
}

/// What a scalar means under the YAML 1.2 core schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    /// `null`, `~`, or nothing at all.
    Null,
    /// `true` or `false`, and which.
    Bool(bool),
    /// An integer: decimal, `0x` hex or `0o` octal.
    Int,
    /// A float, `.inf` or `.nan`.
    Float,
    /// Anything else: a string.
    Str,
}

impl Scalar<'_> {
    /// What the scalar means: a string unless `plain`, else what [`resolve_plain`] makes of its
    /// text.
    pub fn kind(&self) -> ScalarKind {
        if !self.plain {
            return ScalarKind::Str;
        }
        resolve_plain(&self.text)
    }
}

/// Whether YAML 1.1's resolver (PyYAML's, libyaml's schema) reads a plain scalar as an int or
/// a float: decimal, octal `0…`, binary, hex and base-60 ints (`_` allowed), and floats that
/// have a dot (an exponent needs its sign), base-60 floats, `.inf` and `.nan`.
fn yaml11_number(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let all = |s: &str, ok: fn(u8) -> bool| !s.is_empty() && s.bytes().all(ok);
    let digit_ = |b: u8| b.is_ascii_digit() || b == b'_';
    // `[1-9][0-9_]*(:[0-5]?[0-9])+` (for a float, the first digit may be 0)
    let sexagesimal = |s: &str, zero: bool| {
        let mut parts = s.split(':');
        let first = parts.next().unwrap_or_default();
        let rest: Vec<&[u8]> = parts.map(str::as_bytes).collect();
        !rest.is_empty()
            && first.starts_with(|c: char| c.is_ascii_digit() && (zero || c != '0'))
            && all(first, digit_)
            && rest.iter().all(|p| match p {
                [d] => d.is_ascii_digit(),
                [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
                _ => false,
            })
    };
    // Ints.
    if let Some(bits) = unsigned.strip_prefix("0b") {
        if all(bits, |b| matches!(b, b'0' | b'1' | b'_')) {
            return true;
        }
    }
    if let Some(hex) = unsigned.strip_prefix("0x") {
        if all(hex, |b| b.is_ascii_hexdigit() || b == b'_') {
            return true;
        }
    }
    if unsigned == "0"
        || (unsigned.starts_with('0') && all(&unsigned[1..], |b| matches!(b, b'0'..=b'7' | b'_')))
        || (unsigned.starts_with(|c: char| ('1'..='9').contains(&c)) && all(unsigned, digit_))
        || sexagesimal(unsigned, false)
    {
        return true;
    }
    // Floats.
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let exponent_ok =
        exponent.is_none_or(|e| e.starts_with(['-', '+']) && all(&e[1..], |b| b.is_ascii_digit()));
    if let Some((int, frac)) = mantissa.split_once('.') {
        let frac_ok = frac.bytes().all(digit_);
        if exponent_ok && frac_ok {
            if int.is_empty() && frac.starts_with(|c: char| c.is_ascii_digit()) && text == unsigned
            {
                return true;
            }
            if int.starts_with(|c: char| c.is_ascii_digit()) && all(int, digit_) {
                return true;
            }
            if exponent.is_none() && sexagesimal(int, true) {
                return true;
            }
        }
    }
    false
}

/// `null`, `true`, `false`, or a number in JSON's grammar.
fn is_json_literal(text: &str) -> bool {
    if matches!(text, "null" | "true" | "false") {
        return true;
    }
    let b = text.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let int_start = i;
    let n = digits(&mut i);
    if n == 0 || (n > 1 && b[int_start] == b'0') {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
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

    /// Whether the node is written as JSON: flow collections, double-quoted strings, and plain
    /// scalars that are JSON's own `null`, `true`, `false` and numbers; no tags. Only such a
    /// tree can go back out as JSON and read the same in every reader.
    pub fn is_json(&self) -> bool {
        if self.tag.is_some() {
            return false;
        }
        match &self.value {
            Value::Scalar(s) => match self.style {
                // Not under the non-specific tag `!`, which makes the text resolve as if plain.
                Style::DoubleQuoted => !s.plain,
                Style::Plain => is_json_literal(&s.text),
                _ => false,
            },
            Value::Seq(items) => self.style == Style::Flow && items.iter().all(Node::is_json),
            Value::Map(entries) => {
                self.style == Style::Flow
                    && entries.iter().all(|(k, v)| {
                        k.style == Style::DoubleQuoted && k.tag.is_none() && v.is_json()
                    })
            }
        }
    }

    /// Forgets the quoting of a tree that was written as JSON: there, quotes only say "string",
    /// and the emitter may write such a string plain where every reader takes it for one.
    pub fn forget_json_quotes(&mut self) {
        match &mut self.value {
            Value::Scalar(s) if self.style == Style::DoubleQuoted && !s.plain => {
                self.style = Style::Unset;
            }
            Value::Scalar(_) => {}
            Value::Seq(items) => items.iter_mut().for_each(Node::forget_json_quotes),
            Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                k.forget_json_quotes();
                v.forget_json_quotes();
            }),
        }
    }

    /// The node's scalar, if it is one.
    pub fn scalar(&self) -> Option<&Scalar<'a>> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the node is a scalar that resolves to null by its text (`null`, `~`, nothing).
    pub fn is_null(&self) -> bool {
        self.scalar().is_some_and(|s| s.kind() == ScalarKind::Null)
    }

    /// The text of a scalar that is a string: quoted, or plain and a string to one of the
    /// two readings Kubernetes YAML meets — YAML 1.2's core schema (go-yaml v3, kpt) or
    /// YAML 1.1 (libyaml and PyYAML, go-yaml v2). `0o17` or `1e3` is a string to the one and a
    /// number to the other: where a string is expected, it is taken as the string it reads as.
    pub fn as_str(&self) -> Option<&str> {
        self.scalar()
            .filter(|s| s.kind() == ScalarKind::Str || !yaml11_number(&s.text))
            .filter(|s| !matches!(s.kind(), ScalarKind::Null | ScalarKind::Bool(_)))
            .map(|s| s.text.as_ref())
    }

    /// The value of a scalar that resolves to a boolean by its text (`true`, `false`).
    pub fn as_bool(&self) -> Option<bool> {
        match self.scalar()?.kind() {
            ScalarKind::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// A mapping's keys and values, in order.
    pub fn as_map(&self) -> Option<&[(Node<'a>, Node<'a>)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// A sequence's items, in order.
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

    /// The first key that a mapping in this tree holds twice, and the path of that mapping
    /// (`data`, `users[0].user`): readers disagree on which entry counts (go-yaml v3 refuses,
    /// PyYAML keeps the last), so the function takes neither.
    pub fn duplicate_key(&self) -> Option<(String, String)> {
        /// One step of the path down to the mapping: the path is only spelled out once a
        /// duplicate is found (every item of every input is walked).
        enum Step<'n> {
            Index(usize),
            Key(&'n str),
        }
        fn walk<'n>(node: &'n Node, steps: &mut Vec<Step<'n>>) -> Option<&'n str> {
            match &node.value {
                Value::Scalar(_) => None,
                Value::Seq(items) => items.iter().enumerate().find_map(|(i, item)| {
                    let found = walk(item, steps)?;
                    steps.push(Step::Index(i));
                    Some(found)
                }),
                Value::Map(entries) => repeated_key(entries).or_else(|| {
                    entries.iter().find_map(|(k, v)| {
                        let found = walk(v, steps)?;
                        steps.push(Step::Key(k.scalar().map_or("?", |s| s.text.as_ref())));
                        Some(found)
                    })
                }),
            }
        }
        let mut steps = Vec::new();
        let key = walk(self, &mut steps)?;
        let mut path = String::new();
        for step in steps.iter().rev() {
            match step {
                Step::Index(i) => path.push_str(&format!("[{i}]")),
                Step::Key(k) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
            }
        }
        Some((path, key.to_string()))
    }

    /// A mapping's value for `key`, to change it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node<'a>> {
        let Value::Map(entries) = &mut self.value else {
            return None;
        };
        entries
            .iter_mut()
            .find(|(k, _)| k.scalar().is_some_and(|s| s.text == key))
            .map(|(_, v)| v)
    }

    /// Keeps only the entries of a mapping whose scalar keys `keep` says yes to (what goes is
    /// freed; the mapping keeps its room, as moving it would only allocate again).
    pub fn retain_entries(&mut self, mut keep: impl FnMut(&str) -> bool) {
        if let Value::Map(entries) = &mut self.value {
            entries.retain(|(k, _)| k.scalar().is_some_and(|s| keep(&s.text)));
        }
    }

    /// Keeps only the entries of a mapping whose keys are in `keep`; whether any went.
    pub fn retain_keys(&mut self, keep: &[&str]) -> bool {
        let Value::Map(entries) = &mut self.value else {
            return false;
        };
        let before = entries.len();
        entries.retain(|(k, _)| k.scalar().is_some_and(|s| keep.contains(&s.text.as_ref())));
        entries.shrink_to_fit();
        entries.len() < before
    }

    /// A copy of the tree that borrows its text from this one: a kept tree read again
    /// without copying its strings.
    pub fn borrowed(&self) -> Node<'_> {
        let value = match &self.value {
            Value::Scalar(s) => Value::Scalar(Scalar {
                text: Cow::Borrowed(&s.text),
                plain: s.plain,
            }),
            Value::Seq(items) => Value::Seq(items.iter().map(Node::borrowed).collect()),
            Value::Map(entries) => Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| (k.borrowed(), v.borrowed()))
                    .collect(),
            ),
        };
        Node {
            value,
            span: self.span,
            style: self.style,
            tag: self.tag.clone(),
            indicator: self.indicator,
        }
    }

    /// Converts to an owned tree held in as little memory as it needs, for trees kept long
    /// (a controller keeps one per object of a fleet): a scalar whose text `known` gives as a
    /// static string borrows it instead of owning a copy (the keys and values every object
    /// repeats), and each sequence and mapping holds exactly its items, not the room a parser
    /// grows it by.
    pub fn into_owned_with(self, known: &Known) -> Node<'static> {
        self.owned(Some(known))
    }

    /// Converts to an owned tree, for values kept past the input's lifetime.
    pub fn into_owned(self) -> Node<'static> {
        self.owned(None)
    }

    /// An owned tree: compact (see [`Node::into_owned_with`]) when `known` is given, else in
    /// the collections it has.
    fn owned(self, known: Option<&Known>) -> Node<'static> {
        // Collected in place, a collection keeps the room it had; built anew, only its items.
        fn collect<T, U>(items: Vec<T>, compact: bool, f: impl FnMut(T) -> U) -> Vec<U> {
            if !compact {
                return items.into_iter().map(f).collect();
            }
            let mut owned = Vec::with_capacity(items.len());
            owned.extend(items.into_iter().map(f));
            owned
        }
        let value = match self.value {
            Value::Scalar(s) => Value::Scalar(Scalar {
                text: match known.map(|known| known(&s.text)) {
                    Some(Some(text)) => Cow::Borrowed(text),
                    Some(None) => {
                        let mut text = s.text.into_owned();
                        text.shrink_to_fit();
                        Cow::Owned(text)
                    }
                    None => Cow::Owned(s.text.into_owned()),
                },
                plain: s.plain,
            }),
            Value::Seq(items) => Value::Seq(collect(items, known.is_some(), |n| n.owned(known))),
            Value::Map(entries) => Value::Map(collect(entries, known.is_some(), |(k, v)| {
                (k.owned(known), v.owned(known))
            })),
        };
        Node {
            value,
            span: self.span,
            style: self.style,
            tag: self.tag,
            indicator: self.indicator,
        }
    }
}

/// Which texts a tree kept long borrows as static strings ([`Node::into_owned_with`]).
pub type Known = dyn Fn(&str) -> Option<&'static str>;

/// The first scalar key a mapping holds twice. Kubernetes mappings are small: comparing each
/// key with those before it is cheaper than hashing until a mapping is large.
fn repeated_key<'n>(entries: &'n [(Node, Node)]) -> Option<&'n str> {
    let key = |k: &'n Node| k.scalar().map(|s| s.text.as_ref());
    if entries.len() <= 16 {
        return entries.iter().enumerate().find_map(|(i, (k, _))| {
            let key = key(k)?;
            entries[..i]
                .iter()
                .any(|(before, _)| before.scalar().is_some_and(|s| s.text == key))
                .then_some(key)
        });
    }
    let mut seen = std::collections::HashSet::new();
    entries
        .iter()
        .filter_map(|(k, _)| key(k))
        .find(|k| !seen.insert(*k))
}

/// Constructors for generated nodes.
impl Node<'static> {
    /// A string scalar: the emitter quotes it where a reader would take it for something else.
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

    /// A sequence of the given items, in order.
    pub fn seq(items: Vec<Node<'static>>) -> Self {
        Self::from_value(Value::Seq(items))
    }

    /// A mapping of the given keys and values, in order.
    pub fn from_entries(entries: Vec<(Node<'static>, Node<'static>)>) -> Self {
        Self::from_value(Value::Map(entries))
    }

    /// A mapping of the given string keys and their values, in order.
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
            span: Span::default(),
            style: Style::Unset,
            tag: None,
            indicator: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_kept_long_borrows_known_text_and_holds_no_spare_room() {
        let text =
            "kind: Secret\nmetadata:\n  name: a\n  labels: {k: v}\nlist: [x, \"esc\\u0041\"]\n";
        let docs = crate::parse_stream(text, &crate::limits::Limits::default()).unwrap();
        let root = docs.into_iter().next().unwrap().root;
        let known = |t: &str| ["kind", "Secret", "name"].into_iter().find(|k| *k == t);
        let kept = root.clone().into_owned_with(&known);
        assert!(same_content(&kept, &root), "the same tree");
        fn check(node: &Node<'static>, known: &dyn Fn(&str) -> Option<&'static str>) {
            match &node.value {
                Value::Scalar(s) => match &s.text {
                    Cow::Borrowed(t) => assert_eq!(known(t), Some(*t)),
                    Cow::Owned(t) => {
                        assert_eq!(known(t), None, "{t} is known but owned");
                        assert_eq!(t.capacity(), t.len(), "{t} holds spare room");
                    }
                },
                Value::Seq(items) => {
                    assert_eq!(items.capacity(), items.len());
                    items.iter().for_each(|n| check(n, known));
                }
                Value::Map(entries) => {
                    assert_eq!(entries.capacity(), entries.len());
                    for (k, v) in entries {
                        check(k, known);
                        check(v, known);
                    }
                }
            }
        }
        check(&kept, &known);
        let borrowed =
            |n: &Node| matches!(&n.value, Value::Scalar(s) if matches!(s.text, Cow::Borrowed(_)));
        assert!(borrowed(&kept.as_map().unwrap()[0].0), "kind is borrowed");
    }

    #[test]
    fn duplicate_keys_are_found_with_their_path() {
        let first = |text: &str| {
            let docs = crate::parse_stream(text, &crate::limits::Limits::default()).unwrap();
            docs[0].root.duplicate_key()
        };
        assert_eq!(first("a: 1\nb: 2\n"), None);
        assert_eq!(first("a: 1\na: 2\n"), Some((String::new(), "a".into())));
        let nested = "users:\n- name: x\n  user:\n    token: t\n    token: u\n";
        assert_eq!(
            first(nested),
            Some(("users[0].user".into(), "token".into()))
        );
        assert_eq!(
            first("- [a, {k: 1, k: 2}]\n"),
            Some(("[0][1]".into(), "k".into()))
        );
        // Past the small-mapping comparison: the hashed path.
        let mut large: String = (0..40).map(|i| format!("k{i}: {i}\n")).collect();
        assert_eq!(first(&large), None);
        large.push_str("k7: again\n");
        assert_eq!(first(&large), Some((String::new(), "k7".into())));
    }

    #[test]
    fn indicators_keep_every_offset_the_tree_reads() {
        for pos in [0, 1, 4096, MAX_TEXT - 1, MAX_TEXT] {
            assert_eq!(Indicator::at(pos).map(Indicator::pos), Some(pos));
        }
        assert_eq!(Indicator::at(MAX_TEXT + 1), None);
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

    /// The expectations are PyYAML 6.0.3's own resolution of each text (SafeLoader).
    #[test]
    fn yaml_1_1_numbers_are_the_ones_pyyaml_resolves() {
        for (text, number) in [
            ("0o17", false),
            ("1e3", false),
            ("1.5e3", false),
            ("1.5e+3", true),
            ("1.", true),
            ("-.5", false),
            (".5", true),
            ("+.5", false),
            ("0777", true),
            ("0x1F", true),
            ("0b101", true),
            ("1_000", true),
            ("1:20", true),
            ("1:20.5", true),
            ("190:20:30", true),
            ("1:60", false),
            ("0", true),
            ("00", true),
            ("+1", true),
            ("-1", true),
            ("12", true),
            ("1.0", true),
            ("1e+3", false),
            ("1E-3", false),
            ("a1", false),
            (".inf", true),
            ("-.Inf", true),
            (".nan", true),
            ("+.nan", false),
            ("08", false),
            ("0_1", true),
            ("1__0", true),
            ("0x", false),
            ("0b", false),
            ("1:2:3", true),
            ("0.", true),
            ("._5", false),
            ("1._", true),
            ("-0x1f", true),
            ("+0b1", true),
            ("1:5a", false),
            ("123abc", false),
            ("0:20.5", true),
        ] {
            assert_eq!(yaml11_number(text), number, "{text}");
        }
    }

    #[test]
    fn strings_are_strings_to_either_reading() {
        let scalar = |text: &str| Node {
            value: Value::Scalar(Scalar {
                text: Cow::Owned(text.to_string()),
                plain: true,
            }),
            span: Span::default(),
            style: Style::Plain,
            tag: None,
            indicator: None,
        };
        for text in ["0o17", "1e3", "yes", "2001-12-14", "x"] {
            assert_eq!(scalar(text).as_str(), Some(text), "{text}");
        }
        for text in ["12", "1.5", "true", "~", "", "0x1F"] {
            assert_eq!(scalar(text).as_str(), None, "{text}");
        }
    }

    #[test]
    fn json_literals_follow_json_grammar() {
        for (text, ok) in [
            ("null", true),
            ("-0", true),
            ("1.5e-3", true),
            ("01", false),
            ("1.", false),
            (".5", false),
            ("1e", false),
            ("+1", false),
            ("True", false),
        ] {
            assert_eq!(is_json_literal(text), ok, "{text}");
        }
    }
}
