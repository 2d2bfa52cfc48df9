//! The tree: events to nodes that know their full byte range, and documents that know theirs.
//!
//! Spans are data here, recorded as the events come: a node's range runs from its first
//! property (`&anchor`, `!tag`) to the end of its last token; a block sequence entry knows its
//! `-` and an explicit key its `?`; a document knows where its text begins (its directives or
//! `---`, or the end of the document before it) and ends (the line of the next marker).
//! Nothing downstream scans text to find a boundary again.
//!
//! Composition follows what kpt and kustomize read with (go-yaml v3) and YAML 1.2: an anchor
//! may be defined again, and an alias names the most recent node of that anchor; an alias to an
//! anchor no earlier node of the document defined is an error, as in libyaml's loader, and so is
//! an alias inside the node its anchor is still being defined on (a recursive structure, which
//! go-yaml's decoder refuses too). Limits guard depth, size and alias expansion.

use std::collections::HashMap;

use super::chars::first_disallowed;
use super::node::{Indicator, MAX_TEXT, Node, Scalar, Span, Style, Tag, Value};
use super::parser::{Event, EventKind, Parser};
use super::scanner::{Mark, SyntaxError};
use crate::limits::Limits;

/// One document of a stream, and the ranges of its text.
#[derive(Debug)]
pub struct Document<'a> {
    /// The document's root node.
    pub root: Node<'a>,
    /// Where the document's text begins: its first directive or its `---` when it has one,
    /// else where the document before it ended.
    pub start: usize,
    /// Whether the text begins with `---` (or directives and then `---`).
    pub explicit_start: bool,
    /// Whether `%TAG` directives declare handles its tags may use.
    pub tag_directives: bool,
    /// Where its text ends: the start of the line holding `...` or the next document's first
    /// directive or `---`, or the end of the input.
    pub end: usize,
    /// Every alias: where it stands, and where the anchor it names stands.
    pub aliases: Vec<(usize, usize)>,
}

/// Why a YAML text could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum YamlError {
    /// Text the parser refuses, with libyaml's message.
    #[error("invalid YAML at line {line} column {col}: {message}")]
    Syntax {
        /// The line (from 1).
        line: usize,
        /// The column (from 1).
        col: usize,
        /// What is wrong (with the construct being read and where it began, when known).
        message: String,
    },
    /// A character YAML does not allow in its text (a control character).
    #[error(
        "invalid YAML at line {line} column {col}: character U+{code:04X} is not allowed (control characters are not allowed)"
    )]
    Disallowed {
        /// The line (from 1).
        line: usize,
        /// The column (from 1, in characters).
        col: usize,
        /// The character's code point.
        code: u32,
    },
    /// Collections nested deeper than [`Limits::max_depth`].
    #[error("YAML nesting deeper than {limit} levels at line {line}")]
    TooDeep {
        /// The limit.
        limit: usize,
        /// The line (from 1).
        line: usize,
    },
    /// More nodes than [`Limits::max_nodes`], counting every alias expansion.
    #[error(
        "YAML has more than {limit} nodes once aliases are expanded (a billion-laughs document?)"
    )]
    TooManyNodes {
        /// The limit.
        limit: usize,
    },
    /// An alias to an anchor that no earlier node of its document defines.
    #[error("invalid YAML at line {line} column {col}: found undefined alias {name:?}")]
    UnknownAnchor {
        /// The alias's line (from 1).
        line: usize,
        /// The alias's column (from 1).
        col: usize,
        /// The anchor's name.
        name: String,
    },
    /// An alias inside the node its anchor is still being defined on: a structure that would
    /// contain itself.
    #[error(
        "invalid YAML at line {line} column {col}: alias {name:?} refers to a node that contains it"
    )]
    RecursiveAlias {
        /// The alias's line (from 1).
        line: usize,
        /// The alias's column (from 1).
        col: usize,
        /// The anchor's name.
        name: String,
    },
    /// Aliases that expand to more than [`Limits::max_alias_nodes`] nodes (64 bytes of scalar
    /// text counting as one).
    #[error(
        "YAML aliases expand to more than {limit} nodes, 64 bytes of text counting as one (a billion-laughs document?)"
    )]
    TooManyAliasNodes {
        /// The limit.
        limit: usize,
    },
    /// A text longer than the reader takes (4 GiB less one byte): nodes keep offsets in 32 bits.
    #[error("YAML text of {len} bytes is over the {MAX_TEXT}-byte limit of the reader")]
    TooLong {
        /// The text's length in bytes.
        len: usize,
    },
}

impl YamlError {
    /// The line (from 1) the error points at, where it points at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            YamlError::Syntax { line, .. }
            | YamlError::Disallowed { line, .. }
            | YamlError::TooDeep { line, .. }
            | YamlError::UnknownAnchor { line, .. }
            | YamlError::RecursiveAlias { line, .. } => Some(*line),
            YamlError::TooManyNodes { .. }
            | YamlError::TooManyAliasNodes { .. }
            | YamlError::TooLong { .. } => None,
        }
    }
}

impl From<Box<SyntaxError>> for YamlError {
    fn from(e: Box<SyntaxError>) -> Self {
        YamlError::from(*e)
    }
}

impl From<SyntaxError> for YamlError {
    fn from(e: SyntaxError) -> Self {
        if e.problem == super::scanner::TOO_DEEP {
            return YamlError::TooDeep {
                limit: 0,
                line: e.mark.line + 1,
            };
        }
        let message = match e.context {
            Some((context, at)) => format!(
                "{} ({context} at line {} column {})",
                e.problem,
                at.line + 1,
                at.col + 1
            ),
            None => e.problem.to_string(),
        };
        YamlError::Syntax {
            line: e.mark.line + 1,
            col: e.mark.col + 1,
            message,
        }
    }
}

/// A collection under construction.
struct Frame<'a> {
    /// The collection, its children not yet in it.
    node: Node<'a>,
    anchor: Option<(&'a str, Mark)>,
    /// What the collection weighs when an alias repeats it.
    cost: usize,
    /// Where its children begin on the shared stack of finished nodes (a mapping's keys and
    /// values alternate there): each collection gets one allocation of its exact size when it
    /// ends, instead of growing one of its own child by child.
    first: usize,
}

/// A defined anchor: its node, what it weighs, and where it stands.
struct Anchored<'a> {
    node: Node<'a>,
    cost: usize,
    at: Mark,
}

/// A node just completed: the node, what it weighs, and its anchor.
type Completed<'a> = (Node<'a>, usize, Option<(&'a str, Mark)>);

/// Where the current document began, as its start event said.
#[derive(Default, Clone, Copy)]
struct Opening {
    start: usize,
    explicit: bool,
    tag_directives: bool,
}

/// Parses every document of a YAML (or JSON) stream into trees, with offsets into `input`.
pub fn parse_stream<'a>(input: &'a str, limits: &Limits) -> Result<Vec<Document<'a>>, YamlError> {
    parse_stream_with(input, limits, None)
}

/// Sees each entry of a document's top-level block `items` list the moment it is complete,
/// with the document's root entries read so far (keys and values alternating, `items` last),
/// and may cut the entry down: a reader that needs only part of each resource then never
/// holds the rest, as the next entry reuses its memory.
pub type EntryHook<'h> = dyn for<'n> FnMut(&[Node<'n>], &mut Node<'n>) + 'h;

/// [`parse_stream`], with `hook` shown every entry of a top-level block `items` list.
pub fn parse_stream_with<'a>(
    input: &'a str,
    limits: &Limits,
    mut hook: Option<&mut EntryHook>,
) -> Result<Vec<Document<'a>>, YamlError> {
    // Nodes keep offsets in 32 bits; no input limit reaches this, but a host may raise it.
    if input.len() > MAX_TEXT {
        return Err(YamlError::TooLong { len: input.len() });
    }
    if let Some((at, code)) = first_disallowed(input) {
        let line_start = super::line_start(input, at);
        return Err(YamlError::Disallowed {
            line: super::line_number(input, at),
            col: input[line_start..at].chars().count() + 1,
            code,
        });
    }
    let mut parser = Parser::new(input, limits.max_depth);
    let mut docs = Vec::new();
    let mut stack: Vec<Frame<'a>> = Vec::new();
    let mut children: Vec<Node<'a>> = Vec::new();
    let mut anchors: HashMap<&'a str, Anchored<'a>> = HashMap::new();
    let mut nodes = 0usize;
    let mut alias_nodes = 0usize;
    let mut aliases = Vec::new();
    // Where the next implicit document's text may begin (after the reader's byte order mark).
    let mut boundary = if input.starts_with('\u{feff}') { 3 } else { 0 };
    let mut opening = Opening::default();
    let mut root: Option<Node<'a>> = None;

    let error = |e: Box<SyntaxError>| match YamlError::from(e) {
        YamlError::TooDeep { line, .. } => YamlError::TooDeep {
            limit: limits.max_depth,
            line,
        },
        other => other,
    };
    while let Some(event) = parser.next_event().map_err(error)? {
        let Event {
            kind,
            start,
            end,
            indicator,
        } = event;
        let indicator = indicator.and_then(Indicator::at);
        let is_seq = matches!(kind, EventKind::SequenceStart { .. });
        let completed: Option<Completed<'a>> = match kind {
            EventKind::StreamStart => None,
            EventKind::StreamEnd => break,
            EventKind::DocumentStart {
                explicit,
                tag_directives,
            } => {
                opening = Opening {
                    start: if explicit { start.pos } else { boundary },
                    explicit,
                    tag_directives,
                };
                None
            }
            EventKind::DocumentEnd { explicit } => {
                let text_end = start.pos.min(input.len());
                if let Some(root) = root.take() {
                    docs.push(Document {
                        root,
                        start: opening.start.min(text_end),
                        explicit_start: opening.explicit,
                        tag_directives: opening.tag_directives,
                        end: text_end,
                        aliases: std::mem::take(&mut aliases),
                    });
                }
                boundary = if explicit {
                    after_line(input, end.pos)
                } else {
                    text_end
                };
                aliases.clear();
                anchors.clear();
                None
            }
            EventKind::Alias(name) => {
                // The most recent node of that anchor is one still open around the alias: the
                // structure would contain itself (even when an earlier node had the anchor).
                if stack
                    .iter()
                    .any(|f| f.anchor.is_some_and(|(a, _)| a == name))
                {
                    return Err(YamlError::RecursiveAlias {
                        line: start.line + 1,
                        col: start.col + 1,
                        name: name.to_string(),
                    });
                }
                let Some(anchored) = anchors.get(name) else {
                    return Err(YamlError::UnknownAnchor {
                        line: start.line + 1,
                        col: start.col + 1,
                        name: name.to_string(),
                    });
                };
                // Counted before the copy, so an expansion bomb never gets to allocate.
                alias_nodes = alias_nodes.saturating_add(anchored.cost);
                if alias_nodes > limits.max_alias_nodes {
                    return Err(YamlError::TooManyAliasNodes {
                        limit: limits.max_alias_nodes,
                    });
                }
                nodes = nodes.saturating_add(anchored.cost);
                if nodes > limits.max_nodes {
                    return Err(YamlError::TooManyNodes {
                        limit: limits.max_nodes,
                    });
                }
                aliases.push((start.pos, anchored.at.pos));
                let mut node = anchored.node.clone();
                node.span = Span::new(start.pos, end.pos);
                node.indicator = indicator;
                Some((node, anchored.cost, None))
            }
            EventKind::Scalar {
                value,
                style,
                anchor,
                tag,
                plain_implicit,
            } => {
                nodes += 1;
                let (tag, forces_string) = match tag.as_deref() {
                    None => (None, false),
                    Some(t) => written_tag(t),
                };
                let node = Node {
                    value: Value::Scalar(Scalar {
                        text: value,
                        plain: plain_implicit && !forces_string,
                    }),
                    span: Span::new(start.pos, end.pos),
                    style: style.into(),
                    tag,
                    indicator,
                };
                // Long text repeated by aliases costs memory and output as many nodes would.
                let cost = scalar_cost(&node);
                Some((node, cost, anchor.map(|a| (a, start))))
            }
            EventKind::SequenceStart { anchor, tag, flow }
            | EventKind::MappingStart { anchor, tag, flow } => {
                nodes += 1;
                if stack.len() >= limits.max_depth {
                    return Err(YamlError::TooDeep {
                        limit: limits.max_depth,
                        line: start.line + 1,
                    });
                }
                let value = if is_seq {
                    Value::Seq(Vec::new())
                } else {
                    Value::Map(Vec::new())
                };
                stack.push(Frame {
                    node: Node {
                        value,
                        span: Span::new(start.pos, end.pos),
                        style: if flow { Style::Flow } else { Style::Block },
                        tag: tag.as_deref().and_then(|t| written_tag(t).0),
                        indicator,
                    },
                    anchor: anchor.map(|a| (a, start)),
                    cost: 1,
                    first: children.len(),
                });
                None
            }
            EventKind::SequenceEnd | EventKind::MappingEnd => {
                let Some(Frame {
                    mut node,
                    anchor,
                    cost,
                    first,
                }) = stack.pop()
                else {
                    return Err(YamlError::Syntax {
                        line: start.line + 1,
                        col: start.col + 1,
                        message: "unbalanced collection end".into(),
                    });
                };
                let last = children[first..].last().map(|n| n.span.end());
                // `]` and `}` close a flow collection; a block one ends with its last child.
                let span_end = if end.pos > start.pos {
                    end.pos
                } else {
                    last.unwrap_or(node.span.end()).max(node.span.start())
                };
                node.span = Span::new(node.span.start(), span_end);
                let mut own = children.drain(first..);
                match &mut node.value {
                    Value::Map(entries) => {
                        entries.reserve_exact(own.len() / 2);
                        while let (Some(k), Some(v)) = (own.next(), own.next()) {
                            entries.push((k, v));
                        }
                    }
                    Value::Seq(items) => items.extend(own),
                    Value::Scalar(_) => {}
                }
                Some((node, cost, anchor))
            }
        };
        if nodes > limits.max_nodes {
            return Err(YamlError::TooManyNodes {
                limit: limits.max_nodes,
            });
        }
        let Some((node, cost, anchor)) = completed else {
            continue;
        };
        if let Some((name, at)) = anchor {
            // Defined again: later aliases name this node (YAML 1.2, go-yaml v3).
            let node = node.clone();
            anchors.insert(name, Anchored { node, cost, at });
        }
        let mut node = node;
        if let (Some(hook), [root_map, list]) = (hook.as_deref_mut(), stack.as_slice()) {
            let in_items = matches!(root_map.node.value, Value::Map(_))
                && matches!(list.node.value, Value::Seq(_))
                && list.node.style == Style::Block
                && list.first > root_map.first
                && children[list.first - 1]
                    .scalar()
                    .is_some_and(|key| key.text == "items");
            if in_items {
                hook(&children[root_map.first..list.first], &mut node);
            }
        }
        let Some(parent) = stack.last_mut() else {
            root = Some(node);
            continue;
        };
        parent.cost = parent.cost.saturating_add(cost);
        children.push(node);
    }
    Ok(docs)
}

/// The offset just past the line break that ends the line holding `at` (or the end of input).
fn after_line(input: &str, at: usize) -> usize {
    let bytes = input.as_bytes();
    let mut i = at.min(bytes.len());
    while i < bytes.len() {
        let n = super::chars::break_len(bytes, i);
        if n > 0 {
            return i + n;
        }
        i += 1;
    }
    bytes.len()
}

/// What a scalar weighs when an alias repeats it: one node, and one more per 64 bytes of text.
fn scalar_cost(node: &Node) -> usize {
    1 + node.scalar().map_or(0, |s| s.text.len() / 64)
}

/// How a resolved tag is kept: the text to write it back with, and whether it makes the
/// scalar a string.
///
/// `!!str` only says "string": that is kept as the scalar's type, not as a tag. Other
/// core-schema tags are written `!!name`, local tags `!name`, anything else verbatim.
fn written_tag(tag: &str) -> (Option<Tag>, bool) {
    const CORE: &str = "tag:yaml.org,2002:";
    if tag == "!" {
        return (None, false);
    }
    if tag == "tag:yaml.org,2002:str" {
        return (None, true);
    }
    let simple = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if let Some(name) = tag.strip_prefix(CORE).filter(|n| simple(n)) {
        return (Some(Box::new(format!("!!{name}"))), false);
    }
    if let Some(name) = tag.strip_prefix('!').filter(|n| simple(n)) {
        return (Some(Box::new(format!("!{name}"))), false);
    }
    let uri: String = tag
        .chars()
        .flat_map(|c| {
            let keep = c.is_ascii_alphanumeric() || "-_;/?:@&=+$.!~*'(),[]".contains(c);
            let mut buf = [0u8; 4];
            let bytes: Vec<u8> = c.encode_utf8(&mut buf).as_bytes().to_vec();
            let text: String = if keep {
                c.to_string()
            } else {
                bytes.iter().map(|b| format!("%{b:02X}")).collect()
            };
            text.chars().collect::<Vec<_>>()
        })
        .collect();
    (Some(Box::new(format!("!<{uri}>"))), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Document<'_>>, YamlError> {
        parse_stream(text, &Limits::default())
    }

    /// What go-yaml v3 (kpt, kustomize) and libyaml's parser accept, and YAML 1.2 allows: an
    /// anchor defined again; an alias names the most recent node of that anchor.
    #[test]
    fn a_redefined_anchor_names_its_most_recent_node() {
        let docs = read("a: &x one\nb: *x\nc: &x [two]\nd: *x\ne: &x three\nf: *x\n").unwrap();
        let root = &docs[0].root;
        assert_eq!(root.get("b").and_then(Node::as_str), Some("one"));
        let d = root.get("d").and_then(Node::as_seq).expect("a list");
        assert_eq!(d[0].as_str(), Some("two"));
        assert_eq!(root.get("f").and_then(Node::as_str), Some("three"));
    }

    /// The refusals libyaml's loader and go-yaml make stay: an alias to an anchor of another
    /// document, and one inside the node its anchor is being defined on, even when an earlier
    /// node had that anchor (go-yaml's decoder: "anchor value contains itself").
    #[test]
    fn aliases_to_other_documents_and_into_themselves_stay_refused() {
        assert!(matches!(
            read("--- &x 1\n--- *x\n"),
            Err(YamlError::UnknownAnchor { .. })
        ));
        assert!(matches!(
            read("a: &x 1\nb: &x [*x]\n"),
            Err(YamlError::RecursiveAlias { .. })
        ));
    }
}
