//! Copy or rewrite: how each kept item is written, decided once, by named rules.
//!
//! An item is copied from the input byte for byte whenever the copy reads the same where it
//! lands; otherwise the emitter writes it, and the reason is recorded. The rules:
//!
//! - [`Rewrite::Flow`]: entries of a flow list (`items: [...]`, JSON) have no lines of their own.
//! - [`Rewrite::AliasOutside`]: an alias whose anchor lies outside the item would dangle once
//!   items are moved, dropped or split into documents; the item is written with it expanded.
//! - [`Rewrite::TagDirective`]: a tag may use a handle that a `%TAG` directive of the document
//!   declares, and the directive does not travel with an item; the emitter writes tags in full.
//! - [`Rewrite::Moved`]: a List entry becomes a document of its own, so its lines move left;
//!   the moved text is read again and kept only when it reads the same as the entry did.
//!
//! ResourceList items and stream documents keep their columns and their context (an entry of
//! the `items` block sequence, a document of a stream), so the copy reads as the original did.

use std::ops::Range;

use yaml::Limits;
use yaml::{Node, Style, Value, YAML_SPACE, line_start, parse_stream, same_content};

/// How a kept item is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// Copied from the input: this byte range.
    Span(Range<usize>),
    /// A List entry moved left into a document of its own, checked to read the same; its text
    /// is made again from the input as it is written (a copy of every entry would hold as much
    /// memory as the input itself).
    Moved(Moved),
    /// Written by the emitter, for this reason.
    Rewrite(Rewrite),
}

/// Why an item is written by the emitter instead of copied from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// The text ends without a line break where one cannot be added without changing a value:
    /// after a block scalar (its chomping counts that break) or on a line of blanks.
    Unterminated,
    /// An entry of a flow list (`items: [...]`, JSON): it has no lines of its own.
    Flow,
    /// An alias in the item names an anchor outside it; the item is written with it expanded.
    AliasOutside,
    /// The item has tags, and its document has `%TAG` directives that do not travel with it;
    /// the emitter writes tags in full.
    TagDirective,
    /// A List entry that could not move left into a document of its own, or that did not read
    /// the same once moved.
    Moved,
    /// Not from the input at all (resources brought by the config, nested List entries).
    Generated,
}

/// What the rules need to know about the document an item comes from.
pub struct Origin<'d> {
    /// Every alias of the document and the anchor it names.
    pub aliases: &'d [(usize, usize)],
    /// Whether the document has `%TAG` directives, which declare handles its tags may use.
    pub tag_directives: bool,
}

impl Origin<'_> {
    /// The rules that hold wherever the item goes: aliases and tag handles.
    fn portable(&self, node: &Node, range: &Range<usize>) -> Result<(), Rewrite> {
        let inside = |p: usize| range.contains(&p);
        if self
            .aliases
            .iter()
            .any(|&(alias, anchor)| inside(alias) && !inside(anchor))
        {
            return Err(Rewrite::AliasOutside);
        }
        if self.tag_directives && has_tag(node) {
            return Err(Rewrite::TagDirective);
        }
        Ok(())
    }
}

/// Whether an item's tree can be cut down (by a reader that reads none of it) and the rules
/// still decide as they would on the whole tree: they read a tree only for its tags and for a
/// block scalar at its end. (A cut that leaves a block scalar at the end makes the item a
/// rewrite: the reader notices that and reads the input again, uncut.)
pub fn may_cut(node: &Node) -> bool {
    !has_tag(node) && !ends_in_block_scalar(node)
}

fn has_tag(node: &Node) -> bool {
    node.tag.is_some()
        || match &node.value {
            Value::Scalar(_) => false,
            Value::Seq(items) => items.iter().any(has_tag),
            Value::Map(entries) => entries.iter().any(|(k, v)| has_tag(k) || has_tag(v)),
        }
}

/// A ResourceList entry or a whole document, copied into the same place of the output.
pub fn in_place(input: &str, node: &Node, range: Range<usize>, origin: &Origin) -> Text {
    if let Err(reason) = origin.portable(node, &range) {
        return Text::Rewrite(reason);
    }
    if !terminates(&input[range.clone()], node) {
        return Text::Rewrite(Rewrite::Unterminated);
    }
    Text::Span(range)
}

/// Whether the text can be followed by a line break (the output needs one after every item)
/// and still read the same: it has one already, or its last line ends in text that is no block
/// scalar's (a break after a block scalar's last line adds to its value, one after blanks
/// makes them a line of the scalar).
fn terminates(text: &str, node: &Node) -> bool {
    if text.is_empty() || text.ends_with(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        return true;
    }
    let last_line = text
        .rsplit(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
        .next()
        .unwrap_or(text);
    !last_line.trim_matches([' ', '\t']).is_empty() && !ends_in_block_scalar(node)
}

fn ends_in_block_scalar(node: &Node) -> bool {
    match &node.value {
        Value::Scalar(_) => matches!(node.style, Style::Literal | Style::Folded),
        Value::Seq(items) => items.last().is_some_and(ends_in_block_scalar),
        Value::Map(entries) => entries.last().is_some_and(|(_, v)| ends_in_block_scalar(v)),
    }
}

/// An entry of a List's block `items` list, which becomes a document: its lines move left by
/// the entry's content column, and the result must read as the entry did.
pub fn moved(
    input: &str,
    node: &Node,
    range: Range<usize>,
    origin: &Origin,
    limits: &Limits,
) -> Text {
    if node.is_flow() || node.style == Style::Flow {
        return Text::Rewrite(Rewrite::Flow);
    }
    if let Err(reason) = origin.portable(node, &range) {
        return Text::Rewrite(reason);
    }
    let Some(dash) = node.indicator.map(|i| i.pos()) else {
        return Text::Rewrite(Rewrite::Moved);
    };
    let entry = Moved {
        range,
        start: node.span.start(),
        dash,
    };
    let Some(text) = entry.text(input) else {
        return Text::Rewrite(Rewrite::Moved);
    };
    let reads_the_same = parse_stream(&text, limits).is_ok_and(|docs| {
        docs.len() == 1 && same_content(&docs[0].root, node) && same_form(&docs[0].root, node)
    });
    if reads_the_same {
        Text::Moved(entry)
    } else {
        Text::Rewrite(Rewrite::Moved)
    }
}

/// A List entry that moves left: its range, where its node begins and where its dash stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    range: Range<usize>,
    start: usize,
    dash: usize,
}

impl Moved {
    /// The entry's lines moved left by its content column, its dash line reduced to what
    /// follows the dash; `None` when a line cannot move that far (fewer spaces than that before
    /// its text), or the entry's lines are broken otherwise than by `\n` and `\r\n`.
    pub fn text(&self, input: &str) -> Option<String> {
        deindent(input, self.start, self.dash, self.range.clone())
    }
}

/// Whether two trees were written alike: the same scalar styles and collection styles.
fn same_form(a: &Node, b: &Node) -> bool {
    a.style == b.style
        && match (&a.value, &b.value) {
            (Value::Scalar(_), Value::Scalar(_)) => true,
            (Value::Seq(x), Value::Seq(y)) => x.iter().zip(y).all(|(p, q)| same_form(p, q)),
            (Value::Map(x), Value::Map(y)) => x
                .iter()
                .zip(y)
                .all(|((k1, v1), (k2, v2))| same_form(k1, k2) && same_form(v1, v2)),
            _ => false,
        }
}

/// The entry's lines with `col` columns removed, its dash line reduced to what follows the
/// dash; `None` when a line cannot move that far (fewer spaces than that before its text).
fn deindent(input: &str, start: usize, dash: usize, range: Range<usize>) -> Option<String> {
    let chunk = &input[range.clone()];
    // Lines broken by a lone `\r`, NEL, LS or PS are left to the emitter.
    if chunk.contains(['\u{85}', '\u{2028}', '\u{2029}'])
        || chunk.replace("\r\n", "\n").contains('\r')
    {
        return None;
    }
    let node_line = line_start(input, start);
    let col = input[node_line..start].chars().count();
    if !input[node_line..start]
        .bytes()
        .all(|b| b == b' ' || b == b'-')
    {
        // Something other than indentation and the dash stands before the entry (a mark).
        return None;
    }
    let mut out = String::with_capacity(chunk.len());
    let mut at = range.start;
    for line in chunk.split_inclusive('\n') {
        let line_at = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if line_at <= dash && dash < at {
            // The dash line: what stands after the dash, when the entry starts below it, or
            // the entry's first line from its start.
            if start < at {
                out.push_str(&input[start..at]);
            } else {
                let rest = input[dash + 1..line_at + body.len()].trim_start_matches(YAML_SPACE);
                if !rest.is_empty() {
                    out.push_str(rest);
                    out.push_str(&line[body.len()..]);
                }
            }
            continue;
        }
        let spaces = body.len() - body.trim_start_matches(' ').len();
        let content = body.trim_matches(YAML_SPACE);
        if content.is_empty() || content.starts_with('#') {
            out.push_str(&line[spaces.min(col)..]);
        } else if spaces >= col {
            out.push_str(&line[col..]);
        } else {
            return None;
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}
