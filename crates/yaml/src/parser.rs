//! The parser: tokens to events (documents, collections, scalars), as libyaml 0.2.5's state machine produces them.
//!
//! An explicit stack of states, never recursion, so nesting cannot exhaust the call stack.
//! Besides libyaml's marks, the event of a block sequence entry records where its `-` stands,
//! and a key written with `?` where its `?` stands, so a node's text can be cut out of the
//! input without looking for its indicator again.

use std::borrow::Cow;

use super::scanner::{Mark, ScalarStyle, Scanner, SyntaxError, Token, TokenKind};

#[derive(Debug)]
pub enum EventKind<'a> {
    StreamStart,
    StreamEnd,
    DocumentStart {
        explicit: bool,
        /// Whether `%TAG` directives were declared for this document.
        tag_directives: bool,
    },
    DocumentEnd {
        explicit: bool,
    },
    Alias(&'a str),
    Scalar {
        value: Cow<'a, str>,
        style: ScalarStyle,
        anchor: Option<&'a str>,
        tag: Option<String>,
        /// Plain without a tag (or with the non-specific `!`): resolved by its text.
        plain_implicit: bool,
    },
    SequenceStart {
        anchor: Option<&'a str>,
        tag: Option<String>,
        flow: bool,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<&'a str>,
        tag: Option<String>,
        flow: bool,
    },
    MappingEnd,
}

#[derive(Debug)]
pub struct Event<'a> {
    pub kind: EventKind<'a>,
    pub start: Mark,
    pub end: Mark,
    /// The byte offset of the indicator the node's text begins with: a block sequence entry's
    /// `-`, an explicit key's `?`.
    pub indicator: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StreamStart,
    ImplicitDocumentStart,
    DocumentStart,
    DocumentContent,
    DocumentEnd,
    BlockNode,
    BlockSequenceFirstEntry,
    BlockSequenceEntry,
    IndentlessSequenceEntry,
    BlockMappingFirstKey,
    BlockMappingKey,
    BlockMappingValue,
    FlowSequenceFirstEntry,
    FlowSequenceEntry,
    FlowSequenceEntryMappingKey,
    FlowSequenceEntryMappingValue,
    FlowSequenceEntryMappingEnd,
    FlowMappingFirstKey,
    FlowMappingKey,
    FlowMappingValue,
    FlowMappingEmptyValue,
    End,
}

type Parse<T> = Result<T, Box<SyntaxError>>;

pub struct Parser<'a> {
    scanner: Scanner<'a>,
    state: State,
    states: Vec<State>,
    marks: Vec<Mark>,
    tag_directives: Vec<(String, String)>,
    /// The `-` or `?` whose node comes next.
    indicator: Option<usize>,
}

fn error<T>(context: Option<(&'static str, Mark)>, problem: &'static str, mark: Mark) -> Parse<T> {
    Err(Box::new(SyntaxError {
        context,
        problem,
        mark,
    }))
}

impl<'a> Parser<'a> {
    /// A parser over `src` that refuses flow collections nested deeper than `max_depth`.
    pub fn new(src: &'a str, max_depth: usize) -> Self {
        Parser {
            scanner: Scanner::new(src, max_depth),
            state: State::StreamStart,
            states: Vec::new(),
            marks: Vec::new(),
            tag_directives: Vec::new(),
            indicator: None,
        }
    }

    /// The next event; `Ok(None)` once the stream has ended.
    pub fn next_event(&mut self) -> Parse<Option<Event<'a>>> {
        if self.state == State::End {
            return Ok(None);
        }
        let event = self.step()?;
        Ok(Some(event))
    }

    fn peek(&mut self) -> Parse<&Token<'a>> {
        self.scanner.peek()
    }

    fn skip(&mut self) -> Parse<Token<'a>> {
        self.scanner.next_token()
    }

    fn pop_state(&mut self) -> State {
        self.states.pop().unwrap_or(State::End)
    }

    fn event(&mut self, kind: EventKind<'a>, start: Mark, end: Mark) -> Event<'a> {
        let indicator = match kind {
            EventKind::SequenceEnd
            | EventKind::MappingEnd
            | EventKind::DocumentStart { .. }
            | EventKind::DocumentEnd { .. }
            | EventKind::StreamStart
            | EventKind::StreamEnd => None,
            _ => self.indicator.take(),
        };
        Event {
            kind,
            start,
            end,
            indicator,
        }
    }

    fn step(&mut self) -> Parse<Event<'a>> {
        match self.state {
            State::StreamStart => self.parse_stream_start(),
            State::ImplicitDocumentStart => self.parse_document_start(true),
            State::DocumentStart => self.parse_document_start(false),
            State::DocumentContent => self.parse_document_content(),
            State::DocumentEnd => self.parse_document_end(),
            State::BlockNode => self.parse_node(true, false),
            State::BlockSequenceFirstEntry => self.parse_block_sequence_entry(true),
            State::BlockSequenceEntry => self.parse_block_sequence_entry(false),
            State::IndentlessSequenceEntry => self.parse_indentless_sequence_entry(),
            State::BlockMappingFirstKey => self.parse_block_mapping_key(true),
            State::BlockMappingKey => self.parse_block_mapping_key(false),
            State::BlockMappingValue => self.parse_block_mapping_value(),
            State::FlowSequenceFirstEntry => self.parse_flow_sequence_entry(true),
            State::FlowSequenceEntry => self.parse_flow_sequence_entry(false),
            State::FlowSequenceEntryMappingKey => self.parse_flow_sequence_entry_mapping_key(),
            State::FlowSequenceEntryMappingValue => self.parse_flow_sequence_entry_mapping_value(),
            State::FlowSequenceEntryMappingEnd => self.parse_flow_sequence_entry_mapping_end(),
            State::FlowMappingFirstKey => self.parse_flow_mapping_key(true),
            State::FlowMappingKey => self.parse_flow_mapping_key(false),
            State::FlowMappingValue => self.parse_flow_mapping_value(false),
            State::FlowMappingEmptyValue => self.parse_flow_mapping_value(true),
            State::End => error(None, "no more events", Mark::default()),
        }
    }

    fn parse_stream_start(&mut self) -> Parse<Event<'a>> {
        let token = self.skip()?;
        if !matches!(token.kind, TokenKind::StreamStart) {
            return error(None, "did not find expected <stream-start>", token.start);
        }
        self.state = State::ImplicitDocumentStart;
        Ok(self.event(EventKind::StreamStart, token.start, token.start))
    }

    fn parse_document_start(&mut self, implicit: bool) -> Parse<Event<'a>> {
        if !implicit {
            while matches!(self.peek()?.kind, TokenKind::DocumentEnd) {
                self.skip()?;
            }
        }
        let token = self.peek()?;
        let start = token.start;
        let starts_explicitly = matches!(
            token.kind,
            TokenKind::VersionDirective { .. }
                | TokenKind::TagDirective { .. }
                | TokenKind::DocumentStart
                | TokenKind::StreamEnd
        );
        if implicit && !starts_explicitly {
            self.process_directives()?;
            self.states.push(State::DocumentEnd);
            self.state = State::BlockNode;
            return Ok(self.event(
                EventKind::DocumentStart {
                    explicit: false,
                    tag_directives: false,
                },
                start,
                start,
            ));
        }
        if matches!(token.kind, TokenKind::StreamEnd) {
            let token = self.skip()?;
            self.state = State::End;
            return Ok(self.event(EventKind::StreamEnd, token.start, token.end));
        }
        let tag_directives = self.process_directives()?;
        let token = self.peek()?;
        if !matches!(token.kind, TokenKind::DocumentStart) {
            return error(None, "did not find expected <document start>", token.start);
        }
        let token = self.skip()?;
        self.states.push(State::DocumentEnd);
        self.state = State::DocumentContent;
        Ok(self.event(
            EventKind::DocumentStart {
                explicit: true,
                tag_directives,
            },
            start,
            token.end,
        ))
    }

    fn parse_document_content(&mut self) -> Parse<Event<'a>> {
        let token = self.peek()?;
        if matches!(
            token.kind,
            TokenKind::VersionDirective { .. }
                | TokenKind::TagDirective { .. }
                | TokenKind::DocumentStart
                | TokenKind::DocumentEnd
                | TokenKind::StreamEnd
        ) {
            let mark = token.start;
            self.state = self.pop_state();
            return Ok(self.empty_scalar(mark));
        }
        self.parse_node(true, false)
    }

    fn parse_document_end(&mut self) -> Parse<Event<'a>> {
        let token = self.peek()?;
        let (start, mut end) = (token.start, token.start);
        let explicit = matches!(token.kind, TokenKind::DocumentEnd);
        if explicit {
            end = token.end;
            self.skip()?;
        }
        self.tag_directives.clear();
        self.state = State::DocumentStart;
        Ok(self.event(EventKind::DocumentEnd { explicit }, start, end))
    }

    fn parse_node(&mut self, block: bool, indentless_sequence: bool) -> Parse<Event<'a>> {
        let token = self.skip_if_alias()?;
        if let Some(event) = token {
            return Ok(event);
        }
        let first = self.peek()?;
        let mut start = first.start;
        let mut end = first.start;
        let mut anchor = None;
        let mut tag_parts: Option<(String, String)> = None;
        let mut tag_mark = start;
        if let TokenKind::Anchor(name) = first.kind {
            anchor = Some(name);
            end = first.end;
            self.skip()?;
            let next = self.peek()?;
            if let TokenKind::Tag { .. } = next.kind {
                tag_mark = next.start;
                end = next.end;
                if let TokenKind::Tag { handle, suffix } = self.skip()?.kind {
                    tag_parts = Some((handle, suffix));
                }
            }
        } else if let TokenKind::Tag { .. } = first.kind {
            start = first.start;
            tag_mark = first.start;
            end = first.end;
            if let TokenKind::Tag { handle, suffix } = self.skip()?.kind {
                tag_parts = Some((handle, suffix));
            }
            let next = self.peek()?;
            if let TokenKind::Anchor(name) = next.kind {
                anchor = Some(name);
                end = next.end;
                self.skip()?;
            }
        }
        // The token after the properties is looked at before the tag is resolved, as libyaml
        // does: a scanner error there comes first.
        self.peek()?;
        let tag = match tag_parts {
            None => None,
            Some((handle, suffix)) if handle.is_empty() => Some(suffix),
            Some((handle, suffix)) => {
                let prefix = self
                    .tag_directives
                    .iter()
                    .find(|(h, _)| *h == handle)
                    .map(|(_, p)| p.clone());
                match prefix {
                    Some(prefix) => Some(prefix + &suffix),
                    None => {
                        return error(
                            Some(("while parsing a node", start)),
                            "found undefined tag handle",
                            tag_mark,
                        );
                    }
                }
            }
        };
        let token = self.peek()?;
        let token_start = token.start;
        let token_end = token.end;
        if indentless_sequence && matches!(token.kind, TokenKind::BlockEntry) {
            self.state = State::IndentlessSequenceEntry;
            return Ok(self.event(
                EventKind::SequenceStart {
                    anchor,
                    tag,
                    flow: false,
                },
                start,
                token_end,
            ));
        }
        match token.kind {
            TokenKind::Scalar { .. } => {
                let token = self.skip()?;
                let TokenKind::Scalar { value, style } = token.kind else {
                    return error(None, "expected a scalar", token.start);
                };
                let plain_implicit =
                    (style == ScalarStyle::Plain && tag.is_none()) || tag.as_deref() == Some("!");
                self.state = self.pop_state();
                Ok(self.event(
                    EventKind::Scalar {
                        value,
                        style,
                        anchor,
                        tag,
                        plain_implicit,
                    },
                    start,
                    token.end,
                ))
            }
            TokenKind::FlowSequenceStart => {
                self.state = State::FlowSequenceFirstEntry;
                Ok(self.event(
                    EventKind::SequenceStart {
                        anchor,
                        tag,
                        flow: true,
                    },
                    start,
                    token_end,
                ))
            }
            TokenKind::FlowMappingStart => {
                self.state = State::FlowMappingFirstKey;
                Ok(self.event(
                    EventKind::MappingStart {
                        anchor,
                        tag,
                        flow: true,
                    },
                    start,
                    token_end,
                ))
            }
            TokenKind::BlockSequenceStart if block => {
                self.state = State::BlockSequenceFirstEntry;
                Ok(self.event(
                    EventKind::SequenceStart {
                        anchor,
                        tag,
                        flow: false,
                    },
                    start,
                    token_end,
                ))
            }
            TokenKind::BlockMappingStart if block => {
                self.state = State::BlockMappingFirstKey;
                Ok(self.event(
                    EventKind::MappingStart {
                        anchor,
                        tag,
                        flow: false,
                    },
                    start,
                    token_end,
                ))
            }
            _ if anchor.is_some() || tag.is_some() => {
                // Properties with no content: an empty scalar, resolved by its text only when
                // it has no tag (libyaml: `implicit = !tag || !*tag`; even `!` makes it a string).
                self.state = self.pop_state();
                let plain_implicit = tag.is_none();
                Ok(self.event(
                    EventKind::Scalar {
                        value: Cow::Borrowed(""),
                        style: ScalarStyle::Plain,
                        anchor,
                        tag,
                        plain_implicit,
                    },
                    start,
                    end,
                ))
            }
            _ => error(
                Some((
                    if block {
                        "while parsing a block node"
                    } else {
                        "while parsing a flow node"
                    },
                    start,
                )),
                "did not find expected node content",
                token_start,
            ),
        }
    }

    /// An alias is a whole node on its own.
    fn skip_if_alias(&mut self) -> Parse<Option<Event<'a>>> {
        if !matches!(self.peek()?.kind, TokenKind::Alias(_)) {
            return Ok(None);
        }
        let token = self.skip()?;
        let TokenKind::Alias(name) = token.kind else {
            return Ok(None);
        };
        self.state = self.pop_state();
        Ok(Some(self.event(
            EventKind::Alias(name),
            token.start,
            token.end,
        )))
    }

    fn empty_scalar(&mut self, mark: Mark) -> Event<'a> {
        self.event(
            EventKind::Scalar {
                value: Cow::Borrowed(""),
                style: ScalarStyle::Plain,
                anchor: None,
                tag: None,
                plain_implicit: true,
            },
            mark,
            mark,
        )
    }

    fn parse_block_sequence_entry(&mut self, first: bool) -> Parse<Event<'a>> {
        if first {
            let token = self.skip()?;
            self.marks.push(token.start);
        }
        let token = self.peek()?;
        match token.kind {
            TokenKind::BlockEntry => {
                let token = self.skip()?;
                self.indicator = Some(token.start.pos);
                let next = self.peek()?;
                if matches!(next.kind, TokenKind::BlockEntry | TokenKind::BlockEnd) {
                    self.state = State::BlockSequenceEntry;
                    Ok(self.empty_scalar(token.end))
                } else {
                    self.states.push(State::BlockSequenceEntry);
                    self.parse_node(true, false)
                }
            }
            TokenKind::BlockEnd => {
                let token = self.skip()?;
                self.state = self.pop_state();
                self.marks.pop();
                Ok(self.event(EventKind::SequenceEnd, token.start, token.end))
            }
            _ => {
                let mark = token.start;
                let context = self.marks.pop().unwrap_or_default();
                error(
                    Some(("while parsing a block collection", context)),
                    "did not find expected '-' indicator",
                    mark,
                )
            }
        }
    }

    fn parse_indentless_sequence_entry(&mut self) -> Parse<Event<'a>> {
        let token = self.peek()?;
        if matches!(token.kind, TokenKind::BlockEntry) {
            let token = self.skip()?;
            self.indicator = Some(token.start.pos);
            let next = self.peek()?;
            if matches!(
                next.kind,
                TokenKind::BlockEntry | TokenKind::Key | TokenKind::Value | TokenKind::BlockEnd
            ) {
                self.state = State::IndentlessSequenceEntry;
                Ok(self.empty_scalar(token.end))
            } else {
                self.states.push(State::IndentlessSequenceEntry);
                self.parse_node(true, false)
            }
        } else {
            let mark = token.start;
            self.state = self.pop_state();
            Ok(self.event(EventKind::SequenceEnd, mark, mark))
        }
    }

    fn parse_block_mapping_key(&mut self, first: bool) -> Parse<Event<'a>> {
        if first {
            let token = self.skip()?;
            self.marks.push(token.start);
        }
        let token = self.peek()?;
        match token.kind {
            TokenKind::Key => {
                let token = self.skip()?;
                // A simple key's token is empty, at the key; an explicit one is its `?`.
                if token.end.pos > token.start.pos {
                    self.indicator = Some(token.start.pos);
                }
                let next = self.peek()?;
                if matches!(
                    next.kind,
                    TokenKind::Key | TokenKind::Value | TokenKind::BlockEnd
                ) {
                    self.state = State::BlockMappingValue;
                    Ok(self.empty_scalar(token.end))
                } else {
                    self.states.push(State::BlockMappingValue);
                    self.parse_node(true, true)
                }
            }
            TokenKind::BlockEnd => {
                let token = self.skip()?;
                self.state = self.pop_state();
                self.marks.pop();
                Ok(self.event(EventKind::MappingEnd, token.start, token.end))
            }
            _ => {
                let mark = token.start;
                let context = self.marks.pop().unwrap_or_default();
                error(
                    Some(("while parsing a block mapping", context)),
                    "did not find expected key",
                    mark,
                )
            }
        }
    }

    fn parse_block_mapping_value(&mut self) -> Parse<Event<'a>> {
        let token = self.peek()?;
        if matches!(token.kind, TokenKind::Value) {
            let token = self.skip()?;
            let next = self.peek()?;
            if matches!(
                next.kind,
                TokenKind::Key | TokenKind::Value | TokenKind::BlockEnd
            ) {
                self.state = State::BlockMappingKey;
                Ok(self.empty_scalar(token.end))
            } else {
                self.states.push(State::BlockMappingKey);
                self.parse_node(true, true)
            }
        } else {
            let mark = token.start;
            self.state = State::BlockMappingKey;
            Ok(self.empty_scalar(mark))
        }
    }

    fn parse_flow_sequence_entry(&mut self, first: bool) -> Parse<Event<'a>> {
        if first {
            let token = self.skip()?;
            self.marks.push(token.start);
        }
        let mut token = self.peek()?;
        if !matches!(token.kind, TokenKind::FlowSequenceEnd) {
            if !first {
                if matches!(token.kind, TokenKind::FlowEntry) {
                    self.skip()?;
                    token = self.peek()?;
                } else {
                    let mark = token.start;
                    let context = self.marks.pop().unwrap_or_default();
                    return error(
                        Some(("while parsing a flow sequence", context)),
                        "did not find expected ',' or ']'",
                        mark,
                    );
                }
            }
            if matches!(token.kind, TokenKind::Key) {
                let token = self.skip()?;
                self.state = State::FlowSequenceEntryMappingKey;
                return Ok(self.event(
                    EventKind::MappingStart {
                        anchor: None,
                        tag: None,
                        flow: true,
                    },
                    token.start,
                    token.end,
                ));
            }
            if !matches!(token.kind, TokenKind::FlowSequenceEnd) {
                self.states.push(State::FlowSequenceEntry);
                return self.parse_node(false, false);
            }
        }
        let token = self.skip()?;
        self.state = self.pop_state();
        self.marks.pop();
        Ok(self.event(EventKind::SequenceEnd, token.start, token.end))
    }

    fn parse_flow_sequence_entry_mapping_key(&mut self) -> Parse<Event<'a>> {
        let token = self.peek()?;
        if !matches!(
            token.kind,
            TokenKind::Value | TokenKind::FlowEntry | TokenKind::FlowSequenceEnd
        ) {
            self.states.push(State::FlowSequenceEntryMappingValue);
            return self.parse_node(false, false);
        }
        let mark = token.end;
        self.skip()?;
        self.state = State::FlowSequenceEntryMappingValue;
        Ok(self.empty_scalar(mark))
    }

    fn parse_flow_sequence_entry_mapping_value(&mut self) -> Parse<Event<'a>> {
        let mut token = self.peek()?;
        if matches!(token.kind, TokenKind::Value) {
            self.skip()?;
            token = self.peek()?;
            if !matches!(
                token.kind,
                TokenKind::FlowEntry | TokenKind::FlowSequenceEnd
            ) {
                self.states.push(State::FlowSequenceEntryMappingEnd);
                return self.parse_node(false, false);
            }
        }
        let mark = token.start;
        self.state = State::FlowSequenceEntryMappingEnd;
        Ok(self.empty_scalar(mark))
    }

    fn parse_flow_sequence_entry_mapping_end(&mut self) -> Parse<Event<'a>> {
        let mark = self.peek()?.start;
        self.state = State::FlowSequenceEntry;
        Ok(self.event(EventKind::MappingEnd, mark, mark))
    }

    fn parse_flow_mapping_key(&mut self, first: bool) -> Parse<Event<'a>> {
        if first {
            let token = self.skip()?;
            self.marks.push(token.start);
        }
        let mut token = self.peek()?;
        if !matches!(token.kind, TokenKind::FlowMappingEnd) {
            if !first {
                if matches!(token.kind, TokenKind::FlowEntry) {
                    self.skip()?;
                    token = self.peek()?;
                } else {
                    let mark = token.start;
                    let context = self.marks.pop().unwrap_or_default();
                    return error(
                        Some(("while parsing a flow mapping", context)),
                        "did not find expected ',' or '}'",
                        mark,
                    );
                }
            }
            if matches!(token.kind, TokenKind::Key) {
                self.skip()?;
                let token = self.peek()?;
                if !matches!(
                    token.kind,
                    TokenKind::Value | TokenKind::FlowEntry | TokenKind::FlowMappingEnd
                ) {
                    self.states.push(State::FlowMappingValue);
                    return self.parse_node(false, false);
                }
                let mark = token.start;
                self.state = State::FlowMappingValue;
                return Ok(self.empty_scalar(mark));
            }
            if !matches!(token.kind, TokenKind::FlowMappingEnd) {
                self.states.push(State::FlowMappingEmptyValue);
                return self.parse_node(false, false);
            }
        }
        let token = self.skip()?;
        self.state = self.pop_state();
        self.marks.pop();
        Ok(self.event(EventKind::MappingEnd, token.start, token.end))
    }

    fn parse_flow_mapping_value(&mut self, empty: bool) -> Parse<Event<'a>> {
        let token = self.peek()?;
        if empty {
            let mark = token.start;
            self.state = State::FlowMappingKey;
            return Ok(self.empty_scalar(mark));
        }
        if matches!(token.kind, TokenKind::Value) {
            self.skip()?;
            let token = self.peek()?;
            if !matches!(token.kind, TokenKind::FlowEntry | TokenKind::FlowMappingEnd) {
                self.states.push(State::FlowMappingKey);
                return self.parse_node(false, false);
            }
        }
        let mark = self.peek()?.start;
        self.state = State::FlowMappingKey;
        Ok(self.empty_scalar(mark))
    }

    /// Reads `%YAML` and `%TAG` directives; returns whether any `%TAG` was declared.
    fn process_directives(&mut self) -> Parse<bool> {
        let mut version = false;
        let mut declared: Vec<(String, String)> = Vec::new();
        loop {
            let token = self.peek()?;
            match &token.kind {
                TokenKind::VersionDirective { major, minor } => {
                    if version {
                        return error(None, "found duplicate %YAML directive", token.start);
                    }
                    // 1.1 and 1.2 are read; any other version is incompatible.
                    if *major != 1 || !matches!(minor, 1 | 2) {
                        return error(None, "found incompatible YAML document", token.start);
                    }
                    version = true;
                    self.skip()?;
                }
                TokenKind::TagDirective { .. } => {
                    let token = self.skip()?;
                    let TokenKind::TagDirective { handle, prefix } = token.kind else {
                        continue;
                    };
                    if self.tag_directives.iter().any(|(h, _)| *h == handle) {
                        return error(None, "found duplicate %TAG directive", token.start);
                    }
                    self.tag_directives.push((handle.clone(), prefix.clone()));
                    declared.push((handle, prefix));
                }
                _ => break,
            }
        }
        for (handle, prefix) in [("!", "!"), ("!!", "tag:yaml.org,2002:")] {
            if !self.tag_directives.iter().any(|(h, _)| h == handle) {
                self.tag_directives
                    .push((handle.to_string(), prefix.to_string()));
            }
        }
        Ok(!declared.is_empty())
    }
}
