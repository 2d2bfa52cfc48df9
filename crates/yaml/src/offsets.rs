//! Where a scalar's content stands in the text it was read from, byte for byte.
//!
//! A scalar's value is not its text: quotes, escapes and a block's indentation come between.
//! Whoever points at part of a value in the text (a token inside a kubeconfig that is itself the
//! value of a Secret key) needs the one mapped onto the other. Only styles whose every content
//! line is one line of the text are mapped: single-line plain and quoted scalars, and literal
//! blocks. Folded blocks and multi-line flow scalars join lines, so a content byte there may
//! have no place of its own; they are not mapped, and neither is anything whose mapping does not
//! read back as the scalar's own content.

use std::ops::Range;

use super::chars::break_len;
use super::node::{Node, Style};

/// A run of content bytes and the text they come from: the same bytes when `source_len ==
/// len`, else one escape (`\n`, `''`) or one line break standing for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    content: usize,
    len: usize,
    source: usize,
    source_len: usize,
}

/// The map from a scalar's content offsets to offsets in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentMap {
    segments: Vec<Segment>,
    /// Where the content ends in the text.
    end: usize,
}

impl ContentMap {
    /// The range of the text that content bytes `range` come from (an escape or line break
    /// partly inside it counts whole).
    pub fn range(&self, range: Range<usize>) -> Range<usize> {
        if range.is_empty() {
            let at = self.start_of(range.start);
            return at..at;
        }
        self.start_of(range.start)..self.end_of(range.end - 1)
    }

    /// Where the content begins and ends in the text.
    pub fn whole(&self) -> Range<usize> {
        self.segments.first().map_or(self.end, |s| s.source)..self.end
    }

    fn find(&self, at: usize) -> Option<&Segment> {
        let i = self.segments.partition_point(|s| s.content + s.len <= at);
        self.segments.get(i)
    }

    fn start_of(&self, at: usize) -> usize {
        match self.find(at) {
            Some(s) if s.len == s.source_len => s.source + (at - s.content),
            Some(s) => s.source,
            None => self.end,
        }
    }

    fn end_of(&self, last: usize) -> usize {
        match self.find(last) {
            Some(s) if s.len == s.source_len => s.source + (last - s.content) + 1,
            Some(s) => s.source + s.source_len,
            None => self.end,
        }
    }
}

/// Builds a map while the text is walked, and checks it spells the content.
struct Builder<'c> {
    content: &'c [u8],
    segments: Vec<Segment>,
    /// Content bytes mapped so far.
    done: usize,
}

impl<'c> Builder<'c> {
    fn new(content: &'c str) -> Self {
        Builder {
            content: content.as_bytes(),
            segments: Vec::new(),
            done: 0,
        }
    }

    /// The content continues with `source_text` itself, found at `source`.
    fn same(&mut self, source: usize, source_text: &[u8]) -> Option<()> {
        if source_text.is_empty() {
            return Some(());
        }
        let end = self.done + source_text.len();
        (self.content.get(self.done..end)? == source_text).then_some(())?;
        self.push(source, source_text.len(), source_text.len());
        Some(())
    }

    /// The content continues with `decoded`, which `source_len` bytes at `source` stand for.
    fn stands_for(&mut self, source: usize, source_len: usize, decoded: &[u8]) -> Option<()> {
        let end = self.done + decoded.len();
        (self.content.get(self.done..end)? == decoded).then_some(())?;
        self.push(source, decoded.len(), source_len);
        Some(())
    }

    fn push(&mut self, source: usize, len: usize, source_len: usize) {
        let content = self.done;
        self.done += len;
        // Runs of the text itself that follow each other are one segment.
        if let Some(last) = self.segments.last_mut() {
            let linear = last.len == last.source_len && len == source_len;
            if linear && last.source + last.source_len == source {
                last.len += len;
                last.source_len += source_len;
                return;
            }
        }
        self.segments.push(Segment {
            content,
            len,
            source,
            source_len,
        });
    }

    fn finish(self, end: usize) -> Option<ContentMap> {
        (self.done == self.content.len()).then_some(ContentMap {
            segments: self.segments,
            end,
        })
    }
}

/// The map of a scalar node read from `text`, or `None` when its style joins lines, it is an
/// alias, or the text does not spell its content.
pub fn content_map(text: &str, node: &Node) -> Option<ContentMap> {
    let content = node.scalar()?.text.as_ref();
    let bytes = text.as_bytes();
    let (start, end) = (node.span.start(), node.span.end());
    if start > end || end > bytes.len() {
        return None;
    }
    let start = after_properties(bytes, start, end);
    let mut b = Builder::new(content);
    match node.style {
        Style::Plain => {
            let source = &bytes[start..end];
            if source.iter().any(|&c| c == b'\n' || c == b'\r') || source.first() == Some(&b'*') {
                return None;
            }
            b.same(start, source)?;
            b.finish(end)
        }
        Style::SingleQuoted => {
            let inner = quoted(bytes, start, end, b'\'')?;
            let mut i = inner.start;
            let mut run = i;
            while i < inner.end {
                match bytes[i] {
                    b'\n' | b'\r' => return None,
                    b'\'' => {
                        b.same(run, &bytes[run..i])?;
                        b.stands_for(i, 2, b"'")?;
                        i += 2;
                        run = i;
                    }
                    _ => i += 1,
                }
            }
            b.same(run, &bytes[run..inner.end])?;
            b.finish(inner.end)
        }
        Style::DoubleQuoted => {
            let inner = quoted(bytes, start, end, b'"')?;
            let mut i = inner.start;
            let mut run = i;
            while i < inner.end {
                match bytes[i] {
                    b'\n' | b'\r' => return None,
                    b'\\' => {
                        b.same(run, &bytes[run..i])?;
                        let (width, decoded) = escape(bytes, i)?;
                        let mut buf = [0; 4];
                        b.stands_for(i, width, decoded.encode_utf8(&mut buf).as_bytes())?;
                        i += width;
                        run = i;
                    }
                    _ => i += 1,
                }
            }
            b.same(run, &bytes[run..inner.end])?;
            b.finish(inner.end)
        }
        Style::Literal => literal(bytes, start, end, b),
        _ => None,
    }
}

/// The range of `text` that a scalar's value takes: its content when it maps, else its whole
/// text less the quotes or the block header around it.
pub fn value_range(text: &str, node: &Node) -> Range<usize> {
    if let Some(map) = content_map(text, node) {
        return map.whole();
    }
    let bytes = text.as_bytes();
    let end = node.span.end().min(bytes.len());
    let mut start = after_properties(bytes, node.span.start().min(end), end);
    let mut stop = end;
    match node.style {
        Style::Literal | Style::Folded => {
            // The content begins on the line after the header.
            while start < stop && bytes[start] != b'\n' {
                start += 1;
            }
            start = (start + 1).min(stop);
        }
        Style::SingleQuoted | Style::DoubleQuoted if stop >= start + 2 => {
            start += 1;
            stop -= 1;
        }
        _ => {}
    }
    while stop > start && bytes[stop - 1].is_ascii_whitespace() {
        stop -= 1;
    }
    start..stop
}

/// Past any `&anchor` and `!tag` written before the scalar itself.
fn after_properties(bytes: &[u8], mut at: usize, end: usize) -> usize {
    while at < end && matches!(bytes[at], b'&' | b'!') {
        while at < end && !bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        while at < end && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
    }
    at
}

/// The text between a scalar's quotes.
fn quoted(bytes: &[u8], start: usize, end: usize, quote: u8) -> Option<Range<usize>> {
    (end >= start + 2 && bytes[start] == quote && bytes[end - 1] == quote)
        .then_some(start + 1..end - 1)
}

/// A double-quoted scalar's escape at `at`: how many bytes it takes and the character it stands
/// for (YAML 1.1's escapes, as libyaml reads them). An escaped line break folds lines: `None`.
fn escape(bytes: &[u8], at: usize) -> Option<(usize, char)> {
    let simple = |c: char| Some((2, c));
    match *bytes.get(at + 1)? {
        b'0' => simple('\0'),
        b'a' => simple('\u{7}'),
        b'b' => simple('\u{8}'),
        b't' | b'\t' => simple('\t'),
        b'n' => simple('\n'),
        b'v' => simple('\u{b}'),
        b'f' => simple('\u{c}'),
        b'r' => simple('\r'),
        b'e' => simple('\u{1b}'),
        b' ' => simple(' '),
        b'"' => simple('"'),
        b'/' => simple('/'),
        b'\\' => simple('\\'),
        b'N' => simple('\u{85}'),
        b'_' => simple('\u{a0}'),
        b'L' => simple('\u{2028}'),
        b'P' => simple('\u{2029}'),
        kind @ (b'x' | b'u' | b'U') => {
            let digits = match kind {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let hex = std::str::from_utf8(bytes.get(at + 2..at + 2 + digits)?).ok()?;
            let code = u32::from_str_radix(hex, 16).ok()?;
            Some((2 + digits, char::from_u32(code)?))
        }
        _ => None,
    }
}

/// A literal block (`|`): each content line is one line of the text, less the block's
/// indentation; each content line break is one line break of the text.
fn literal(bytes: &[u8], start: usize, end: usize, mut b: Builder) -> Option<ContentMap> {
    // The line that begins at `from`: where it ends, and the width of its line break.
    let line = |from: usize| {
        let mut stop = from;
        while stop < bytes.len() && break_len(bytes, stop) == 0 {
            stop += 1;
        }
        (stop, break_len(bytes, stop))
    };
    // The header line (`|`, `|-`, `|+2`, a comment) ends at the first line break.
    let (header_end, header_break) = line(start);
    if header_end >= end {
        return None;
    }
    let first = header_end + header_break;
    // The indentation is that of the first line that holds more than spaces.
    let mut at = first;
    let indent = loop {
        let (stop, width) = line(at);
        let text = &bytes[at..stop];
        let spaces = text.iter().take_while(|&&c| c == b' ').count();
        if spaces < text.len() {
            break spaces;
        }
        if width == 0 {
            return None;
        }
        at = stop + width;
    };
    let content = b.content;
    let (mut at, mut last_end) = (first, first);
    while b.done < content.len() {
        let (stop, width) = line(at);
        let text = &bytes[at..stop];
        let rest = &content[b.done..];
        let wanted = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        if wanted == 0 {
            // An empty content line: a line of at most the indentation's spaces.
            if text.len() > indent || text.iter().any(|&c| c != b' ') {
                return None;
            }
        } else {
            if text.len() < indent || text[..indent].iter().any(|&c| c != b' ') {
                return None;
            }
            b.same(at + indent, &text[indent..])?;
        }
        last_end = stop;
        if b.done < content.len() {
            if width == 0 {
                return None;
            }
            b.stands_for(stop, width, b"\n")?;
            last_end = stop + width;
        }
        at = stop + width;
    }
    b.finish(last_end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::parse_stream;

    /// Every mapped scalar of `yaml`: its content, and the text each content range maps to.
    fn check(yaml: &str, key: &str) -> Option<ContentMap> {
        let docs = parse_stream(yaml, &Limits::default()).unwrap();
        let node = docs[0].root.get(key).unwrap();
        let map = content_map(yaml, node)?;
        let content = node.as_str().unwrap();
        // Every run of plain characters maps onto the same characters in the text.
        for (i, c) in content.char_indices() {
            let r = map.range(i..i + c.len_utf8());
            if c.is_ascii_alphanumeric() {
                assert_eq!(
                    &yaml[r.clone()],
                    &content[i..i + c.len_utf8()],
                    "{key} at {i}"
                );
            } else {
                assert!(!r.is_empty(), "{key} at {i}");
            }
        }
        Some(map)
    }

    #[test]
    fn plain_and_quoted_scalars_map_onto_their_text() {
        let yaml = "a: plain token\nb: 'it''s ok'\nc: \"tab\\there \\u00e9 \\\"q\\\" end\"\nd: &x !!str tagged\n";
        for key in ["a", "b", "c", "d"] {
            assert!(check(yaml, key).is_some(), "{key}");
        }
        let map = check(yaml, "c").unwrap();
        // `\t` is two bytes of text for one of content.
        assert_eq!(&yaml[map.range(3..4)], "\\t");
        assert_eq!(&yaml[map.whole()], "tab\\there \\u00e9 \\\"q\\\" end");
        let docs = parse_stream(yaml, &Limits::default()).unwrap();
        assert_eq!(
            &yaml[value_range(yaml, docs[0].root.get("b").unwrap())],
            "it''s ok"
        );
    }

    #[test]
    fn literal_blocks_map_line_by_line() {
        let yaml = "v: |\n  apiVersion: v1\n\n  users:\n  - user:\n      token: abc.def\nw: |-\r\n    x\r\n    y\r\n";
        let map = check(yaml, "v").unwrap();
        let docs = parse_stream(yaml, &Limits::default()).unwrap();
        let content = docs[0].root.get("v").unwrap().as_str().unwrap();
        let at = content.find("abc.def").unwrap();
        assert_eq!(&yaml[map.range(at..at + 7)], "abc.def");
        assert!(check(yaml, "w").is_some());
    }

    #[test]
    fn folding_styles_and_aliases_are_not_mapped() {
        let yaml =
            "a: >\n  folded\n  text\nb: \"two\n  lines\"\nc: plain\n  continued\nd: &x v\ne: *x\n";
        for key in ["a", "b", "c", "e"] {
            assert!(check(yaml, key).is_none(), "{key}");
        }
        let docs = parse_stream(yaml, &Limits::default()).unwrap();
        assert_eq!(
            &yaml[value_range(yaml, docs[0].root.get("a").unwrap())],
            "  folded\n  text"
        );
        assert_eq!(
            &yaml[value_range(yaml, docs[0].root.get("b").unwrap())],
            "two\n  lines"
        );
    }

    #[test]
    fn a_literal_block_with_more_indented_first_line_is_not_guessed() {
        let yaml = "v: |2\n    indented\n  less\n";
        assert!(check(yaml, "v").is_none());
    }
}
