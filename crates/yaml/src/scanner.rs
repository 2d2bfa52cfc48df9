//! The scanner: YAML text to tokens with byte spans, rule for rule as libyaml 0.2.5 scans.
//!
//! libyaml is the reference reading (it is the parser inside PyYAML, and go-yaml, which kpt,
//! kustomize and kubectl write with, is a port of it): every rule below is one of its rules, so
//! what it accepts is accepted and what it refuses is refused, with its message. Two things are
//! our own: tokens carry byte offsets, and scalar text is borrowed from the input wherever it
//! stands there unchanged — long runs of ordinary characters (base64 above all) are taken in
//! bulk instead of one character at a time.

use std::borrow::Cow;
use std::collections::VecDeque;

use super::chars::{
    at, break_len, char_count, is_alpha, is_blank, is_blankz, is_bom, is_break, is_breakz,
    is_document_marker, skip_words, width,
};

/// A position: byte offset, and line and column counted in characters from 0 (as libyaml counts them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mark {
    pub pos: usize,
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

#[derive(Debug)]
pub enum TokenKind<'a> {
    StreamStart,
    StreamEnd,
    VersionDirective {
        major: u32,
        minor: u32,
    },
    TagDirective {
        handle: String,
        prefix: String,
    },
    DocumentStart,
    DocumentEnd,
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowSequenceEnd,
    FlowMappingStart,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Alias(&'a str),
    Anchor(&'a str),
    Tag {
        handle: String,
        suffix: String,
    },
    Scalar {
        value: Cow<'a, str>,
        style: ScalarStyle,
    },
}

#[derive(Debug)]
pub struct Token<'a> {
    pub kind: TokenKind<'a>,
    pub start: Mark,
    pub end: Mark,
}

/// The problem reported when flow collections nest deeper than the scanner's limit. libyaml
/// 0.2.5 has no limit (later versions stop at 1000): without one, every token would cost time
/// in proportion to the depth, and a long run of `[` quadratic time.
pub const TOO_DEEP: &str = "flow collections nest deeper than the limit";

/// What went wrong and where, in libyaml's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// What was being read, and where that began (`while scanning a simple key`).
    pub context: Option<(&'static str, Mark)>,
    pub problem: &'static str,
    pub mark: Mark,
}

/// A possible simple key (`key:` without `?`): where it starts and which token it would precede.
#[derive(Debug, Clone, Copy, Default)]
struct SimpleKey {
    possible: bool,
    required: bool,
    token_number: usize,
    mark: Mark,
}

/// Text being collected for a scalar: a slice of the input for as long as it is one, a copy
/// once folding or an escape makes it differ.
struct Text<'a> {
    src: &'a str,
    range: Option<(usize, usize)>,
    owned: Option<String>,
}

impl<'a> Text<'a> {
    fn new(src: &'a str) -> Self {
        Text {
            src,
            range: None,
            owned: None,
        }
    }

    fn slice(&mut self, start: usize, end: usize) {
        if start == end {
            return;
        }
        if let Some(owned) = &mut self.owned {
            owned.push_str(&self.src[start..end]);
            return;
        }
        match self.range {
            None => self.range = Some((start, end)),
            Some((s, e)) if e == start => self.range = Some((s, end)),
            Some(_) => {
                let src = self.src;
                self.owned_mut().push_str(&src[start..end]);
            }
        }
    }

    fn push_str(&mut self, text: &str) {
        if !text.is_empty() {
            self.owned_mut().push_str(text);
        }
    }

    fn owned_mut(&mut self) -> &mut String {
        let (src, range) = (self.src, self.range);
        self.owned.get_or_insert_with(|| {
            let mut s = String::new();
            if let Some((a, b)) = range {
                s.push_str(&src[a..b]);
            }
            s
        })
    }

    fn finish(self) -> Cow<'a, str> {
        match (self.owned, self.range) {
            (Some(s), _) => Cow::Owned(s),
            (None, Some((a, b))) => Cow::Borrowed(&self.src[a..b]),
            (None, None) => Cow::Borrowed(""),
        }
    }
}

/// Whether a byte may continue a plain scalar's run of ordinary characters without a closer
/// look: not a blank, break, `:` or `#`, not a flow indicator, and not the first byte of NEL/LS/PS.
const fn plain_table(flow: bool) -> [bool; 256] {
    let mut t = [true; 256];
    let stops: &[u8] = b"\0 \t\r\n:";
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] = false;
        i += 1;
    }
    // Non-ASCII characters are taken one at a time (they may be breaks, and count one
    // column each whatever their width): the runs below are ASCII, a column per byte.
    let mut b = 0x80;
    while b < 0x100 {
        t[b] = false;
        b += 1;
    }
    if flow {
        let flow_stops: &[u8] = b",[]{}";
        let mut i = 0;
        while i < flow_stops.len() {
            t[flow_stops[i] as usize] = false;
            i += 1;
        }
    }
    t
}

static PLAIN_BLOCK: [bool; 256] = plain_table(false);
static PLAIN_FLOW: [bool; 256] = plain_table(true);

/// Bytes that end a quoted scalar's run of ordinary characters: quotes, backslash, blanks,
/// breaks and the first bytes of NEL/LS/PS.
const fn quoted_table() -> [bool; 256] {
    let mut t = [true; 256];
    let stops: &[u8] = b"\0 \t\r\n'\"\\";
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] = false;
        i += 1;
    }
    let mut b = 0x80;
    while b < 0x100 {
        t[b] = false;
        b += 1;
    }
    t
}

static QUOTED: [bool; 256] = quoted_table();

/// The line breaks of a scalar, as libyaml collects them: the first one apart (it decides
/// whether lines fold into a space) from the ones after it.
#[derive(Default)]
struct Breaks {
    /// The first break: `"\n"` for CR, LF, CR LF and NEL; LS and PS as themselves.
    leading: Option<&'static str>,
    trailing: String,
}

pub struct Scanner<'a> {
    src: &'a str,
    bytes: &'a [u8],
    mark: Mark,
    tokens: VecDeque<Token<'a>>,
    tokens_parsed: usize,
    token_available: bool,
    stream_start_produced: bool,
    stream_end_produced: bool,
    flow_level: usize,
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    simple_keys: Vec<SimpleKey>,
    error: Option<Box<SyntaxError>>,
    max_flow_level: usize,
}

/// Errors are boxed: every token passes through a `Result`, and an unboxed error would make
/// each one as large as the error (a mark and a context) instead of a pointer.
type Scan<T> = Result<T, Box<SyntaxError>>;

impl<'a> Scanner<'a> {
    /// A scanner over `src`. A byte order mark opening the stream is the reader's: it is
    /// skipped and counts as no column (any other one is a character, at a column).
    pub fn new(src: &'a str, max_flow_level: usize) -> Self {
        let bom = if src.starts_with('\u{feff}') { 3 } else { 0 };
        Scanner {
            src,
            bytes: src.as_bytes(),
            mark: Mark {
                pos: bom,
                line: 0,
                col: 0,
            },
            tokens: VecDeque::new(),
            tokens_parsed: 0,
            token_available: false,
            stream_start_produced: false,
            stream_end_produced: false,
            flow_level: 0,
            indent: -1,
            indents: Vec::new(),
            simple_key_allowed: false,
            simple_keys: Vec::new(),
            error: None,
            max_flow_level,
        }
    }

    /// The next token, left in place.
    #[inline]
    pub fn peek(&mut self) -> Scan<&Token<'a>> {
        // The parser looks at most tokens twice: the second look is this test and a `front`,
        // with the scanning machinery kept out of line.
        if !self.token_available {
            self.fetch_or_fail()?;
        }
        let mark = self.mark;
        self.tokens.front().ok_or_else(|| {
            Box::new(SyntaxError {
                context: None,
                problem: "unexpected end of tokens",
                mark,
            })
        })
    }

    /// Scans up to the next token (a failed scan fails every later call the same way).
    #[inline(never)]
    fn fetch_or_fail(&mut self) -> Scan<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if let Err(e) = self.fetch_more_tokens() {
            self.error = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Takes the next token.
    pub fn next_token(&mut self) -> Scan<Token<'a>> {
        self.peek()?;
        self.token_available = false;
        self.tokens_parsed += 1;
        let token = self.tokens.pop_front().ok_or_else(|| {
            Box::new(SyntaxError {
                context: None,
                problem: "unexpected end of tokens",
                mark: self.mark,
            })
        })?;
        if matches!(token.kind, TokenKind::StreamEnd) {
            self.stream_end_produced = true;
        }
        Ok(token)
    }

    fn error<T>(&self, context: Option<(&'static str, Mark)>, problem: &'static str) -> Scan<T> {
        Err(Box::new(SyntaxError {
            context,
            problem,
            mark: self.mark,
        }))
    }

    #[inline]
    fn b(&self, k: usize) -> u8 {
        at(self.bytes, self.mark.pos + k)
    }

    #[inline]
    fn is_breakz_here(&self) -> bool {
        is_breakz(self.bytes, self.mark.pos)
    }

    #[inline]
    fn is_blankz_at(&self, k: usize) -> bool {
        is_blankz(self.bytes, self.mark.pos + k)
    }

    #[inline]
    fn is_break_here(&self) -> bool {
        is_break(self.bytes, self.mark.pos)
    }

    #[inline]
    fn at_end(&self) -> bool {
        self.mark.pos >= self.bytes.len()
    }

    /// Moves past one character on the current line.
    #[inline]
    fn skip(&mut self) {
        self.mark.pos += width(self.b(0));
        self.mark.col += 1;
    }

    /// Moves past a line break.
    #[inline]
    fn skip_line(&mut self) {
        let n = break_len(self.bytes, self.mark.pos);
        if n > 0 {
            self.mark.pos += n;
            self.mark.col = 0;
            self.mark.line += 1;
        }
    }

    /// Moves past a line break, noting it as a scalar reads it.
    fn read_line(&mut self) -> &'static str {
        let n = break_len(self.bytes, self.mark.pos);
        let text = match (self.b(0), n) {
            (0xE2, 3) if self.b(2) == 0xA8 => "\u{2028}",
            (0xE2, 3) => "\u{2029}",
            _ => "\n",
        };
        self.skip_line();
        text
    }

    fn fetch_more_tokens(&mut self) -> Scan<()> {
        loop {
            let need = if self.tokens.is_empty() {
                true
            } else {
                self.stale_simple_keys()?;
                let parsed = self.tokens_parsed;
                self.simple_keys
                    .iter()
                    .any(|k| k.possible && k.token_number == parsed)
            };
            if !need {
                break;
            }
            self.fetch_next_token()?;
        }
        self.token_available = true;
        Ok(())
    }

    fn fetch_next_token(&mut self) -> Scan<()> {
        if !self.stream_start_produced {
            return self.fetch_stream_start();
        }
        self.scan_to_next_token()?;
        self.stale_simple_keys()?;
        self.unroll_indent(self.mark.col as isize);
        if self.at_end() {
            return self.fetch_stream_end();
        }
        let c = self.b(0);
        if self.mark.col == 0 {
            if c == b'%' {
                return self.fetch_directive();
            }
            if is_document_marker(self.bytes, self.mark.pos) {
                let kind = if c == b'-' {
                    TokenKind::DocumentStart
                } else {
                    TokenKind::DocumentEnd
                };
                return self.fetch_document_indicator(kind);
            }
        }
        let next_blankz = self.is_blankz_at(1);
        match c {
            b'[' => return self.fetch_flow_collection_start(TokenKind::FlowSequenceStart),
            b'{' => return self.fetch_flow_collection_start(TokenKind::FlowMappingStart),
            b']' => return self.fetch_flow_collection_end(TokenKind::FlowSequenceEnd),
            b'}' => return self.fetch_flow_collection_end(TokenKind::FlowMappingEnd),
            b',' => return self.fetch_flow_entry(),
            b'-' if next_blankz => return self.fetch_block_entry(),
            b'?' if self.flow_level > 0 || next_blankz => return self.fetch_key(),
            b':' if self.flow_level > 0 || next_blankz => return self.fetch_value(),
            b'*' => return self.fetch_anchor(true),
            b'&' => return self.fetch_anchor(false),
            b'!' => return self.fetch_tag(),
            b'|' if self.flow_level == 0 => return self.fetch_block_scalar(true),
            b'>' if self.flow_level == 0 => return self.fetch_block_scalar(false),
            b'\'' => return self.fetch_flow_scalar(true),
            b'"' => return self.fetch_flow_scalar(false),
            _ => {}
        }
        // A plain scalar starts with any non-blank character but the indicators; `-`, `?` and
        // `:` start one when a non-blank character follows (`-` also in flow context).
        let indicator = matches!(
            c,
            b'-' | b'?'
                | b':'
                | b','
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'#'
                | b'&'
                | b'*'
                | b'!'
                | b'|'
                | b'>'
                | b'\''
                | b'"'
                | b'%'
                | b'@'
                | b'`'
        );
        let next_blank = is_blank(self.b(1));
        if !(self.is_blankz_at(0) || indicator)
            || (c == b'-' && !next_blank)
            || (self.flow_level == 0 && (c == b'?' || c == b':') && !next_blankz)
        {
            return self.fetch_plain_scalar();
        }
        self.error(
            Some(("while scanning for the next token", self.mark)),
            "found character that cannot start any token",
        )
    }

    /// Whether more than 1024 characters lie between `pos` and the current position (a simple
    /// key may not be longer). Characters are counted only when the bytes alone cannot tell.
    fn over_1024_chars_since(&self, pos: usize) -> bool {
        let bytes = self.mark.pos - pos;
        if bytes <= 1024 {
            return false;
        }
        // Four bytes per character at most: past 4 * 1025 bytes there are over 1024 of them.
        let stop = (pos + 4 * 1025).min(self.mark.pos);
        char_count(&self.bytes[pos..stop]) > 1024
    }

    /// Called before every token: most of the time no simple key is pending at all.
    #[inline]
    fn stale_simple_keys(&mut self) -> Scan<()> {
        if self.simple_keys.iter().any(|k| k.possible) {
            self.drop_stale_simple_keys()
        } else {
            Ok(())
        }
    }

    #[inline(never)]
    fn drop_stale_simple_keys(&mut self) -> Scan<()> {
        for i in 0..self.simple_keys.len() {
            let key = self.simple_keys[i];
            // A simple key is limited to a single line and to 1024 characters.
            if key.possible
                && (key.mark.line < self.mark.line || self.over_1024_chars_since(key.mark.pos))
            {
                if key.required {
                    return self.error(
                        Some(("while scanning a simple key", key.mark)),
                        "could not find expected ':'",
                    );
                }
                self.simple_keys[i].possible = false;
            }
        }
        Ok(())
    }

    fn save_simple_key(&mut self) -> Scan<()> {
        // Required in block context when the key starts at the indentation column.
        let required = self.flow_level == 0 && self.indent == self.mark.col as isize;
        if self.simple_key_allowed {
            let key = SimpleKey {
                possible: true,
                required,
                token_number: self.tokens_parsed + self.tokens.len(),
                mark: self.mark,
            };
            self.remove_simple_key()?;
            if let Some(top) = self.simple_keys.last_mut() {
                *top = key;
            }
        }
        Ok(())
    }

    fn remove_simple_key(&mut self) -> Scan<()> {
        if let Some(key) = self.simple_keys.last_mut() {
            if key.possible && key.required {
                let mark = key.mark;
                return self.error(
                    Some(("while scanning a simple key", mark)),
                    "could not find expected ':'",
                );
            }
            key.possible = false;
        }
        Ok(())
    }

    fn increase_flow_level(&mut self) -> Scan<()> {
        if self.flow_level >= self.max_flow_level {
            return self.error(None, TOO_DEEP);
        }
        self.simple_keys.push(SimpleKey::default());
        self.flow_level += 1;
        Ok(())
    }

    fn decrease_flow_level(&mut self) {
        if self.flow_level > 0 {
            self.flow_level -= 1;
            self.simple_keys.pop();
        }
    }

    /// Opens a block collection when `column` is deeper than the current indentation: the
    /// start token goes at the end of the queue, or before token `number` (for a simple key
    /// found only once its `:` came).
    fn roll_indent(
        &mut self,
        column: usize,
        number: Option<usize>,
        kind: TokenKind<'a>,
        mark: Mark,
    ) {
        if self.flow_level > 0 {
            return;
        }
        if self.indent < column as isize {
            self.indents.push(self.indent);
            self.indent = column as isize;
            let token = Token {
                kind,
                start: mark,
                end: mark,
            };
            match number {
                None => self.tokens.push_back(token),
                Some(n) => self.tokens.insert(n - self.tokens_parsed, token),
            }
        }
    }

    /// Closes the block collections deeper than `column`.
    fn unroll_indent(&mut self, column: isize) {
        if self.flow_level > 0 {
            return;
        }
        while self.indent > column {
            self.tokens.push_back(Token {
                kind: TokenKind::BlockEnd,
                start: self.mark,
                end: self.mark,
            });
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn push(&mut self, kind: TokenKind<'a>, start: Mark, end: Mark) {
        self.tokens.push_back(Token { kind, start, end });
    }

    fn fetch_stream_start(&mut self) -> Scan<()> {
        self.indent = -1;
        self.simple_keys.push(SimpleKey::default());
        self.simple_key_allowed = true;
        self.stream_start_produced = true;
        self.push(TokenKind::StreamStart, self.mark, self.mark);
        Ok(())
    }

    fn fetch_stream_end(&mut self) -> Scan<()> {
        // Force a new line.
        if self.mark.col != 0 {
            self.mark.col = 0;
            self.mark.line += 1;
        }
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        self.push(TokenKind::StreamEnd, self.mark, self.mark);
        Ok(())
    }

    fn fetch_directive(&mut self) -> Scan<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_directive()?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_document_indicator(&mut self, kind: TokenKind<'a>) -> Scan<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        self.skip();
        self.skip();
        self.push(kind, start, self.mark);
        Ok(())
    }

    fn fetch_flow_collection_start(&mut self, kind: TokenKind<'a>) -> Scan<()> {
        self.save_simple_key()?;
        self.increase_flow_level()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        self.skip();
        self.push(kind, start, self.mark);
        Ok(())
    }

    fn fetch_flow_collection_end(&mut self, kind: TokenKind<'a>) -> Scan<()> {
        self.remove_simple_key()?;
        self.decrease_flow_level();
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        self.push(kind, start, self.mark);
        Ok(())
    }

    fn fetch_flow_entry(&mut self) -> Scan<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        self.skip();
        self.push(TokenKind::FlowEntry, start, self.mark);
        Ok(())
    }

    fn fetch_block_entry(&mut self) -> Scan<()> {
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                return self.error(
                    None,
                    "block sequence entries are not allowed in this context",
                );
            }
            self.roll_indent(
                self.mark.col,
                None,
                TokenKind::BlockSequenceStart,
                self.mark,
            );
        }
        // In flow context `-` is an error the parser reports, where it can name the context.
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        self.skip();
        self.push(TokenKind::BlockEntry, start, self.mark);
        Ok(())
    }

    fn fetch_key(&mut self) -> Scan<()> {
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                return self.error(None, "mapping keys are not allowed in this context");
            }
            self.roll_indent(self.mark.col, None, TokenKind::BlockMappingStart, self.mark);
        }
        self.remove_simple_key()?;
        self.simple_key_allowed = self.flow_level == 0;
        let start = self.mark;
        self.skip();
        self.push(TokenKind::Key, start, self.mark);
        Ok(())
    }

    fn fetch_value(&mut self) -> Scan<()> {
        let key = self.simple_keys.last().copied().unwrap_or_default();
        if key.possible {
            // The simple key turns out to be one: a KEY token goes before it.
            let token = Token {
                kind: TokenKind::Key,
                start: key.mark,
                end: key.mark,
            };
            self.tokens
                .insert(key.token_number - self.tokens_parsed, token);
            self.roll_indent(
                key.mark.col,
                Some(key.token_number),
                TokenKind::BlockMappingStart,
                key.mark,
            );
            if let Some(top) = self.simple_keys.last_mut() {
                top.possible = false;
            }
            self.simple_key_allowed = false;
        } else {
            // The value of a complex key (`? key`).
            if self.flow_level == 0 {
                if !self.simple_key_allowed {
                    return self.error(None, "mapping values are not allowed in this context");
                }
                self.roll_indent(self.mark.col, None, TokenKind::BlockMappingStart, self.mark);
            }
            self.simple_key_allowed = self.flow_level == 0;
        }
        let start = self.mark;
        self.skip();
        self.push(TokenKind::Value, start, self.mark);
        Ok(())
    }

    fn fetch_anchor(&mut self, alias: bool) -> Scan<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_anchor(alias)?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_tag(&mut self) -> Scan<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_tag()?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_block_scalar(&mut self, literal: bool) -> Scan<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let token = self.scan_block_scalar(literal)?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_flow_scalar(&mut self, single: bool) -> Scan<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_flow_scalar(single)?;
        self.tokens.push_back(token);
        Ok(())
    }

    fn fetch_plain_scalar(&mut self) -> Scan<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_plain_scalar()?;
        self.tokens.push_back(token);
        Ok(())
    }

    /// Skips blanks, comments and line breaks up to the next token.
    fn scan_to_next_token(&mut self) -> Scan<()> {
        loop {
            // A byte order mark may start a line; it counts as a column.
            if self.mark.col == 0 && is_bom(self.bytes, self.mark.pos) {
                self.skip();
            }
            // Tabs are allowed in flow context, and in block context except at the start of a
            // line and after `-`, `?` or `:` (where a simple key may start).
            let tabs = self.flow_level > 0 || !self.simple_key_allowed;
            loop {
                match self.b(0) {
                    b' ' => {}
                    b'\t' if tabs => {}
                    _ => break,
                }
                self.mark.pos += 1;
                self.mark.col += 1;
            }
            if self.b(0) == b'#' {
                self.skip_comment();
            }
            if self.is_break_here() {
                self.skip_line();
                if self.flow_level == 0 {
                    self.simple_key_allowed = true;
                }
            } else {
                return Ok(());
            }
        }
    }

    /// Moves to the line break (or end) that ends a comment.
    fn skip_comment(&mut self) {
        let (i, chars) = line_end(self.bytes, self.mark.pos);
        self.mark.col += chars;
        self.mark.pos = i;
    }

    /// Skips blanks and a comment to the end of the line; `Err` unless the line ends there.
    fn finish_line(&mut self, context: (&'static str, Mark)) -> Scan<()> {
        while is_blank(self.b(0)) {
            self.skip();
        }
        if self.b(0) == b'#' {
            self.skip_comment();
        }
        if !self.is_breakz_here() {
            return self.error(Some(context), "did not find expected comment or line break");
        }
        if self.is_break_here() {
            self.skip_line();
        }
        Ok(())
    }

    fn scan_directive(&mut self) -> Scan<Token<'a>> {
        let start = self.mark;
        self.skip();
        let context = ("while scanning a directive", start);
        let name_start = self.mark.pos;
        while is_alpha(self.b(0)) {
            self.skip();
        }
        let name = &self.src[name_start..self.mark.pos];
        if name.is_empty() {
            return self.error(Some(context), "could not find expected directive name");
        }
        if !self.is_blankz_at(0) {
            return self.error(Some(context), "found unexpected non-alphabetical character");
        }
        let kind = match name {
            "YAML" => {
                let (major, minor) = self.scan_version_directive_value(start)?;
                TokenKind::VersionDirective { major, minor }
            }
            "TAG" => {
                let (handle, prefix) = self.scan_tag_directive_value(start)?;
                TokenKind::TagDirective { handle, prefix }
            }
            _ => return self.error(Some(context), "found unknown directive name"),
        };
        let end = self.mark;
        self.finish_line(context)?;
        Ok(Token { kind, start, end })
    }

    fn scan_version_directive_value(&mut self, start: Mark) -> Scan<(u32, u32)> {
        while is_blank(self.b(0)) {
            self.skip();
        }
        let major = self.scan_version_number(start)?;
        if self.b(0) != b'.' {
            return self.error(
                Some(("while scanning a %YAML directive", start)),
                "did not find expected digit or '.' character",
            );
        }
        self.skip();
        let minor = self.scan_version_number(start)?;
        Ok((major, minor))
    }

    fn scan_version_number(&mut self, start: Mark) -> Scan<u32> {
        let context = Some(("while scanning a %YAML directive", start));
        let mut length = 0;
        let mut value = 0u32;
        while self.b(0).is_ascii_digit() {
            length += 1;
            if length > 9 {
                return self.error(context, "found extremely long version number");
            }
            value = value * 10 + u32::from(self.b(0) - b'0');
            self.skip();
        }
        if length == 0 {
            return self.error(context, "did not find expected version number");
        }
        Ok(value)
    }

    fn scan_tag_directive_value(&mut self, start: Mark) -> Scan<(String, String)> {
        while is_blank(self.b(0)) {
            self.skip();
        }
        let handle = self.scan_tag_handle(true, start)?;
        if !is_blank(self.b(0)) {
            return self.error(
                Some(("while scanning a %TAG directive", start)),
                "did not find expected whitespace",
            );
        }
        while is_blank(self.b(0)) {
            self.skip();
        }
        let prefix = self.scan_tag_uri(true, true, None, start)?;
        if !self.is_blankz_at(0) {
            return self.error(
                Some(("while scanning a %TAG directive", start)),
                "did not find expected whitespace or line break",
            );
        }
        Ok((handle, prefix))
    }

    fn scan_anchor(&mut self, alias: bool) -> Scan<Token<'a>> {
        let start = self.mark;
        self.skip();
        let name_start = self.mark.pos;
        while is_alpha(self.b(0)) {
            self.skip();
        }
        let end = self.mark;
        let name = &self.src[name_start..end.pos];
        let c = self.b(0);
        if name.is_empty()
            || !(self.is_blankz_at(0)
                || matches!(c, b'?' | b':' | b',' | b']' | b'}' | b'%' | b'@' | b'`'))
        {
            let context = if alias {
                "while scanning an alias"
            } else {
                "while scanning an anchor"
            };
            return self.error(
                Some((context, start)),
                "did not find expected alphabetic or numeric character",
            );
        }
        let kind = if alias {
            TokenKind::Alias(name)
        } else {
            TokenKind::Anchor(name)
        };
        Ok(Token { kind, start, end })
    }

    fn scan_tag(&mut self) -> Scan<Token<'a>> {
        let start = self.mark;
        let (handle, suffix) = if self.b(1) == b'<' {
            // The verbatim form `!<uri>`.
            self.skip();
            self.skip();
            let suffix = self.scan_tag_uri(true, false, None, start)?;
            if self.b(0) != b'>' {
                return self.error(
                    Some(("while scanning a tag", start)),
                    "did not find the expected '>'",
                );
            }
            self.skip();
            (String::new(), suffix)
        } else {
            // `!suffix` or `!handle!suffix`.
            let handle = self.scan_tag_handle(false, start)?;
            if handle.len() > 1 && handle.starts_with('!') && handle.ends_with('!') {
                let suffix = self.scan_tag_uri(false, false, None, start)?;
                (handle, suffix)
            } else {
                let suffix = self.scan_tag_uri(false, false, Some(&handle), start)?;
                // The non-specific tag `!` alone.
                if suffix.is_empty() {
                    (String::new(), "!".to_string())
                } else {
                    ("!".to_string(), suffix)
                }
            }
        };
        // A tag ends at a blank, or at `,` in flow context.
        if !(self.is_blankz_at(0) || (self.flow_level > 0 && self.b(0) == b',')) {
            return self.error(
                Some(("while scanning a tag", start)),
                "did not find expected whitespace or line break",
            );
        }
        Ok(Token {
            kind: TokenKind::Tag { handle, suffix },
            start,
            end: self.mark,
        })
    }

    fn scan_tag_handle(&mut self, directive: bool, start: Mark) -> Scan<String> {
        let context = if directive {
            "while scanning a tag directive"
        } else {
            "while scanning a tag"
        };
        if self.b(0) != b'!' {
            return self.error(Some((context, start)), "did not find expected '!'");
        }
        let from = self.mark.pos;
        self.skip();
        while is_alpha(self.b(0)) {
            self.skip();
        }
        if self.b(0) == b'!' {
            self.skip();
        } else if directive && self.mark.pos - from != 1 {
            // In a %TAG directive a handle is `!`, `!!` or `!name!`.
            return self.error(
                Some(("while parsing a tag directive", start)),
                "did not find expected '!'",
            );
        }
        Ok(self.src[from..self.mark.pos].to_string())
    }

    /// A tag's URI characters (URI escapes decoded); `head` is what a handle-looking start
    /// turned out to be, the part after its `!` leading the result.
    fn scan_tag_uri(
        &mut self,
        uri_char: bool,
        directive: bool,
        head: Option<&str>,
        start: Mark,
    ) -> Scan<String> {
        let context = if directive {
            "while parsing a %TAG directive"
        } else {
            "while parsing a tag"
        };
        let head = head.unwrap_or("");
        let mut length = head.len();
        let mut out: Vec<u8> = head.as_bytes().get(1..).unwrap_or_default().to_vec();
        loop {
            let c = self.b(0);
            let ok = is_alpha(c)
                || b";/?:@&=+$.%!~*'()".contains(&c)
                || (uri_char && b",[]".contains(&c));
            if !ok || c == 0 {
                break;
            }
            if c == b'%' {
                self.scan_uri_escapes(context, start, &mut out)?;
            } else {
                let w = width(c);
                out.extend_from_slice(&self.bytes[self.mark.pos..self.mark.pos + w]);
                self.skip();
            }
            length += 1;
        }
        if length == 0 {
            return self.error(Some((context, start)), "did not find expected tag URI");
        }
        // libyaml keeps tags as C strings: an escaped NUL (`%00`) ends the tag there.
        if let Some(nul) = out.iter().position(|&b| b == 0) {
            out.truncate(nul);
        }
        // Escapes decode to UTF-8 sequences checked octet by octet, as libyaml checks them; a
        // sequence that still is no character is kept as the replacement character.
        Ok(String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    fn scan_uri_escapes(
        &mut self,
        context: &'static str,
        start: Mark,
        out: &mut Vec<u8>,
    ) -> Scan<()> {
        let mut width = 0usize;
        loop {
            if !(self.b(0) == b'%'
                && self.b(1).is_ascii_hexdigit()
                && self.b(2).is_ascii_hexdigit())
            {
                return self.error(Some((context, start)), "did not find URI escaped octet");
            }
            let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
            let octet = (hex(self.b(1)) << 4) + hex(self.b(2));
            if width == 0 {
                width = match octet {
                    o if o & 0x80 == 0 => 1,
                    o if o & 0xE0 == 0xC0 => 2,
                    o if o & 0xF0 == 0xE0 => 3,
                    o if o & 0xF8 == 0xF0 => 4,
                    _ => {
                        return self.error(
                            Some((context, start)),
                            "found an incorrect leading UTF-8 octet",
                        );
                    }
                };
            } else if octet & 0xC0 != 0x80 {
                return self.error(
                    Some((context, start)),
                    "found an incorrect trailing UTF-8 octet",
                );
            }
            out.push(octet);
            self.skip();
            self.skip();
            self.skip();
            width -= 1;
            if width == 0 {
                return Ok(());
            }
        }
    }

    fn scan_block_scalar(&mut self, literal: bool) -> Scan<Token<'a>> {
        let start = self.mark;
        self.skip();
        let context = ("while scanning a block scalar", start);
        let mut chomping = 0i8;
        let mut increment = 0usize;
        let chomp = |c: u8| if c == b'+' { 1 } else { -1 };
        if matches!(self.b(0), b'+' | b'-') {
            chomping = chomp(self.b(0));
            self.skip();
            if self.b(0).is_ascii_digit() {
                if self.b(0) == b'0' {
                    return self.error(Some(context), "found an indentation indicator equal to 0");
                }
                increment = usize::from(self.b(0) - b'0');
                self.skip();
            }
        } else if self.b(0).is_ascii_digit() {
            if self.b(0) == b'0' {
                return self.error(Some(context), "found an indentation indicator equal to 0");
            }
            increment = usize::from(self.b(0) - b'0');
            self.skip();
            if matches!(self.b(0), b'+' | b'-') {
                chomping = chomp(self.b(0));
                self.skip();
            }
        }
        self.finish_line(context)?;
        let mut end = self.mark;
        let mut indent = if increment > 0 {
            if self.indent >= 0 {
                self.indent as usize + increment
            } else {
                increment
            }
        } else {
            0
        };
        let mut text = Text::new(self.src);
        let mut leading: Option<&'static str> = None;
        let mut trailing = String::new();
        self.scan_block_scalar_breaks(&mut indent, &mut trailing, start, &mut end)?;
        let mut leading_blank = false;
        while self.mark.col == indent && !self.at_end() {
            // At the start of a non-empty line.
            let trailing_blank = is_blank(self.b(0));
            if !literal && leading == Some("\n") && !leading_blank && !trailing_blank {
                // Folding: one break between two text lines becomes a space.
                if trailing.is_empty() {
                    text.push_str(" ");
                }
            } else if let Some(b) = leading {
                text.push_str(b);
            }
            text.push_str(&trailing);
            trailing.clear();
            leading_blank = is_blank(self.b(0));
            let line_start = self.mark.pos;
            let (i, chars) = line_end(self.bytes, line_start);
            self.mark.col += chars;
            self.mark.pos = i;
            text.slice(line_start, i);
            leading = Some(self.read_line_or_end());
            self.scan_block_scalar_breaks(&mut indent, &mut trailing, start, &mut end)?;
        }
        // Chomping: `-` drops the final break, `+` keeps the trailing empty lines too.
        if chomping != -1 {
            if let Some(b) = leading {
                text.push_str(b);
            }
        }
        if chomping == 1 {
            text.push_str(&trailing);
        }
        let style = if literal {
            ScalarStyle::Literal
        } else {
            ScalarStyle::Folded
        };
        Ok(Token {
            kind: TokenKind::Scalar {
                value: text.finish(),
                style,
            },
            start,
            end,
        })
    }

    /// Reads the line break at the end of a block scalar line; at the end of input there is
    /// none, and nothing is added.
    fn read_line_or_end(&mut self) -> &'static str {
        if self.is_break_here() {
            self.read_line()
        } else {
            ""
        }
    }

    /// Skips indentation and empty lines inside a block scalar, collecting the breaks, and
    /// fixes the indentation from the first non-empty line when no indicator gave it.
    fn scan_block_scalar_breaks(
        &mut self,
        indent: &mut usize,
        breaks: &mut String,
        start: Mark,
        end: &mut Mark,
    ) -> Scan<()> {
        let mut max_indent = 0;
        *end = self.mark;
        loop {
            while (*indent == 0 || self.mark.col < *indent) && self.b(0) == b' ' {
                self.mark.pos += 1;
                self.mark.col += 1;
            }
            max_indent = max_indent.max(self.mark.col);
            if (*indent == 0 || self.mark.col < *indent) && self.b(0) == b'\t' {
                return self.error(
                    Some(("while scanning a block scalar", start)),
                    "found a tab character where an indentation space is expected",
                );
            }
            if !self.is_break_here() {
                break;
            }
            breaks.push_str(self.read_line());
            *end = self.mark;
        }
        if *indent == 0 {
            let floor = (self.indent + 1).max(1) as usize;
            *indent = max_indent.max(floor);
        }
        Ok(())
    }

    fn scan_flow_scalar(&mut self, single: bool) -> Scan<Token<'a>> {
        let start = self.mark;
        self.skip();
        let context = ("while scanning a quoted scalar", start);
        let quote = if single { b'\'' } else { b'"' };
        let mut text = Text::new(self.src);
        let mut breaks = Breaks::default();
        loop {
            if self.mark.col == 0 && is_document_marker(self.bytes, self.mark.pos) {
                return self.error(Some(context), "found unexpected document indicator");
            }
            if self.at_end() {
                return self.error(Some(context), "found unexpected end of stream");
            }
            let mut leading_blanks = false;
            // Non-blank characters.
            while !self.is_blankz_at(0) {
                let run = self.mark.pos;
                let mut i = run;
                while QUOTED[usize::from(at(self.bytes, i))] {
                    i += 1;
                }
                if i > run {
                    self.mark.col += i - run;
                    self.mark.pos = i;
                    text.slice(run, i);
                    continue;
                }
                let c = self.b(0);
                if single && c == b'\'' && self.b(1) == b'\'' {
                    text.push_str("'");
                    self.skip();
                    self.skip();
                } else if c == quote {
                    break;
                } else if !single && c == b'\\' && is_break(self.bytes, self.mark.pos + 1) {
                    // An escaped line break: the break and the next line's indentation vanish.
                    self.skip();
                    self.skip_line();
                    leading_blanks = true;
                    break;
                } else if !single && c == b'\\' {
                    self.scan_escape(&mut text, context)?;
                } else {
                    // `'` or `"` of the other kind, `\` in single quotes, or the first byte of
                    // a character that is not a break after all.
                    let w = width(c);
                    text.slice(self.mark.pos, self.mark.pos + w);
                    self.skip();
                }
            }
            if self.b(0) == quote {
                break;
            }
            // Blanks and breaks between words.
            let mut whitespace: Option<(usize, usize)> = None;
            while is_blank(self.b(0)) || self.is_break_here() {
                if is_blank(self.b(0)) {
                    if !leading_blanks {
                        let (s, _) = whitespace.unwrap_or((self.mark.pos, self.mark.pos));
                        whitespace = Some((s, self.mark.pos + 1));
                    }
                    self.mark.pos += 1;
                    self.mark.col += 1;
                } else if !leading_blanks {
                    whitespace = None;
                    breaks.leading = Some(self.read_line());
                    leading_blanks = true;
                } else {
                    let b = self.read_line();
                    breaks.trailing.push_str(b);
                }
            }
            if leading_blanks {
                fold(&mut text, &mut breaks);
            } else if let Some((s, e)) = whitespace {
                text.slice(s, e);
            }
        }
        self.skip();
        let style = if single {
            ScalarStyle::SingleQuoted
        } else {
            ScalarStyle::DoubleQuoted
        };
        Ok(Token {
            kind: TokenKind::Scalar {
                value: text.finish(),
                style,
            },
            start,
            end: self.mark,
        })
    }

    /// One escape sequence of a double-quoted scalar, the backslash at the current position.
    fn scan_escape(&mut self, text: &mut Text<'a>, context: (&'static str, Mark)) -> Scan<()> {
        let start = context.1;
        let simple = match self.b(1) {
            b'0' => Some("\0"),
            b'a' => Some("\x07"),
            b'b' => Some("\x08"),
            b't' | b'\t' => Some("\t"),
            b'n' => Some("\n"),
            b'v' => Some("\x0B"),
            b'f' => Some("\x0C"),
            b'r' => Some("\r"),
            b'e' => Some("\x1B"),
            b' ' => Some(" "),
            b'"' => Some("\""),
            b'/' => Some("/"),
            b'\\' => Some("\\"),
            b'N' => Some("\u{85}"),
            b'_' => Some("\u{a0}"),
            b'L' => Some("\u{2028}"),
            b'P' => Some("\u{2029}"),
            b'x' | b'u' | b'U' => None,
            _ => {
                return self.error(
                    Some(("while parsing a quoted scalar", start)),
                    "found unknown escape character",
                );
            }
        };
        let code_length = match self.b(1) {
            b'x' => 2,
            b'u' => 4,
            b'U' => 8,
            _ => 0,
        };
        self.skip();
        self.skip();
        if let Some(s) = simple {
            text.push_str(s);
            return Ok(());
        }
        let mut value: u32 = 0;
        for k in 0..code_length {
            let d = self.b(k);
            let Some(digit) = (d as char).to_digit(16).filter(|_| d.is_ascii_hexdigit()) else {
                return self.error(
                    Some(("while parsing a quoted scalar", start)),
                    "did not find expected hexdecimal number",
                );
            };
            value = (value << 4) + digit;
        }
        let Some(c) = char::from_u32(value) else {
            return self.error(
                Some(("while parsing a quoted scalar", start)),
                "found invalid Unicode character escape code",
            );
        };
        let mut buf = [0u8; 4];
        text.push_str(c.encode_utf8(&mut buf));
        for _ in 0..code_length {
            self.skip();
        }
        Ok(())
    }

    fn scan_plain_scalar(&mut self) -> Scan<Token<'a>> {
        let start = self.mark;
        let mut end = self.mark;
        let indent = self.indent + 1;
        let mut text = Text::new(self.src);
        let mut breaks = Breaks::default();
        let mut whitespace: Option<(usize, usize)> = None;
        let mut leading_blanks = false;
        let table = if self.flow_level > 0 {
            &PLAIN_FLOW
        } else {
            &PLAIN_BLOCK
        };
        loop {
            if self.mark.col == 0 && is_document_marker(self.bytes, self.mark.pos) {
                break;
            }
            if self.b(0) == b'#' {
                break;
            }
            while !self.is_blankz_at(0) {
                let c = self.b(0);
                if self.flow_level > 0
                    && c == b':'
                    && matches!(self.b(1), b',' | b'?' | b'[' | b']' | b'{' | b'}')
                {
                    return self.error(
                        Some(("while scanning a plain scalar", start)),
                        "found unexpected ':'",
                    );
                }
                if (c == b':' && self.is_blankz_at(1))
                    || (self.flow_level > 0 && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                if leading_blanks {
                    fold(&mut text, &mut breaks);
                    leading_blanks = false;
                } else if let Some((s, e)) = whitespace.take() {
                    text.slice(s, e);
                }
                // This character, and the run of ordinary ASCII characters after it.
                let run = self.mark.pos;
                let first = run + width(c);
                let mut i = first;
                if self.flow_level == 0 {
                    // Past blanks, breaks, `:` and non-ASCII: what is left stops no block run.
                    i = skip_words(self.bytes, i, 0x21, b':');
                }
                while table[usize::from(at(self.bytes, i))] {
                    i += 1;
                }
                self.mark.col += 1 + (i - first);
                self.mark.pos = i;
                text.slice(run, i);
                end = self.mark;
            }
            if !(is_blank(self.b(0)) || self.is_break_here()) {
                break;
            }
            while is_blank(self.b(0)) || self.is_break_here() {
                if is_blank(self.b(0)) {
                    if leading_blanks && (self.mark.col as isize) < indent && self.b(0) == b'\t' {
                        return self.error(
                            Some(("while scanning a plain scalar", start)),
                            "found a tab character that violates indentation",
                        );
                    }
                    if !leading_blanks {
                        let (s, _) = whitespace.unwrap_or((self.mark.pos, self.mark.pos));
                        whitespace = Some((s, self.mark.pos + 1));
                    }
                    self.mark.pos += 1;
                    self.mark.col += 1;
                } else if !leading_blanks {
                    whitespace = None;
                    breaks.leading = Some(self.read_line());
                    leading_blanks = true;
                } else {
                    let b = self.read_line();
                    breaks.trailing.push_str(b);
                }
            }
            if self.flow_level == 0 && (self.mark.col as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
        Ok(Token {
            kind: TokenKind::Scalar {
                value: text.finish(),
                style: ScalarStyle::Plain,
            },
            start,
            end,
        })
    }
}

/// Where the line from `start` ends (at a break of any kind, or the end) and how many
/// characters lie before it: ASCII in bulk, anything else one character at a time.
fn line_end(bytes: &[u8], start: usize) -> (usize, usize) {
    let (mut i, mut chars) = (start, 0);
    loop {
        let run = i;
        // Tab stops a word too, and is then taken byte by byte.
        i = skip_words(bytes, i, 0x20, 0x7F);
        while i < bytes.len() && LINE[usize::from(bytes[i])] {
            i += 1;
        }
        chars += i - run;
        match bytes.get(i) {
            None | Some(b'\n' | b'\r') => return (i, chars),
            Some(&b) if b >= 0x80 && !is_break(bytes, i) => {
                i += width(b);
                chars += 1;
            }
            Some(_) => return (i, chars),
        }
    }
}

/// ASCII bytes that do not end a line.
const LINE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x80 {
        t[b] = b != b'\n' as usize && b != b'\r' as usize;
        b += 1;
    }
    t
};

/// Line folding in flow and plain scalars: a single `\n` break between two words becomes a
/// space, more breaks stay as breaks (less the first); LS and PS are kept as they are.
fn fold(text: &mut Text, breaks: &mut Breaks) {
    match breaks.leading.take() {
        Some("\n") => {
            if breaks.trailing.is_empty() {
                text.push_str(" ");
            } else {
                text.push_str(&breaks.trailing);
            }
        }
        Some(other) => {
            text.push_str(other);
            text.push_str(&breaks.trailing);
        }
        None => text.push_str(&breaks.trailing),
    }
    breaks.trailing.clear();
}
