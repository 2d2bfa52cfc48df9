//! Input forms (ResourceList, List, YAML stream) and output assembly that copies untouched items byte for byte.

use std::borrow::Cow;

use crate::emit::{write_block, write_document, write_json, write_seq_item};
use crate::limits::Limits;
use crate::results::Diagnostic;
use crate::yaml::{Node, Value, YAML_SPACE, YamlError, line_start, parse_stream};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A KRM ResourceList; `json` when it came as JSON (and so goes back as JSON).
    ResourceList { json: bool },
    /// A `kind: List` or a multi-document stream; goes back as a multi-document YAML stream.
    Stream,
}

/// One resource of the input.
#[derive(Debug)]
pub struct Item<'a> {
    pub node: Node<'a>,
    /// The item's exact text, ready to emit in the output form, when it can be copied verbatim.
    pub text: Option<Cow<'a, str>>,
    /// Read for conversion but not part of the output (resources named by the config).
    pub source_only: bool,
}

#[derive(Debug)]
pub struct Input<'a> {
    pub form: Form,
    pub items: Vec<Item<'a>>,
    pub function_config: Option<Node<'a>>,
    /// Column of the `-` in a block `items:` list; generated items must line up with it.
    pub dash_indent: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    #[error("input is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("input is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("{0}")]
    Yaml(#[from] YamlError),
    #[error("ResourceList items must be a list, got {0}")]
    ItemsNotAList(&'static str),
    #[error("input has {count} resources, over the limit of {limit}")]
    TooManyItems { count: usize, limit: usize },
    #[error("ResourceList has more than one {0:?} key")]
    DuplicateKey(String),
    #[error("a ResourceList must be the only document of the input, but there are {0}")]
    ResourceListInStream(usize),
    #[error("a ResourceList cannot be an item of a List")]
    ResourceListInList,
}

/// Decodes and parses the input into its form and items.
pub fn parse<'a>(input: &'a [u8], limits: &Limits) -> Result<Input<'a>, InputError> {
    if input.len() > limits.max_input_bytes {
        return Err(InputError::TooLarge {
            size: input.len(),
            limit: limits.max_input_bytes,
        });
    }
    let text = std::str::from_utf8(input).map_err(|e| InputError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.trim_start_matches('\u{feff}');
    let mut docs = parse_stream(text, limits)?;
    // A ResourceList among other documents has no meaning (and would flip forms between runs).
    if docs.len() > 1 && docs.iter().any(|d| is_kind(&d.root, "ResourceList")) {
        return Err(InputError::ResourceListInStream(docs.len()));
    }
    let parsed = if docs.len() == 1 && is_kind(&docs[0].root, "ResourceList") {
        let doc = docs.remove(0);
        resource_list(text, doc.root, &doc.aliases, doc.text_end)?
    } else {
        stream(text, docs)
    };
    // Split out of its List, it would read as the input's own ResourceList the next time.
    if parsed.form == Form::Stream
        && parsed
            .items
            .iter()
            .any(|i| is_kind(&i.node, "ResourceList"))
    {
        return Err(InputError::ResourceListInList);
    }
    if parsed.items.len() > limits.max_items {
        return Err(InputError::TooManyItems {
            count: parsed.items.len(),
            limit: limits.max_items,
        });
    }
    Ok(parsed)
}

fn is_kind(node: &Node, kind: &str) -> bool {
    node.get("kind").and_then(Node::as_str) == Some(kind)
}

/// Whether an alias stands in `start..end`: such an item is written out expanded, since its
/// text would lose its anchor once items are moved, dropped or split into documents.
fn has_alias(aliases: &[usize], start: usize, end: usize) -> bool {
    let first = aliases.partition_point(|&a| a < start);
    aliases.get(first).is_some_and(|&a| a < end)
}

fn resource_list<'a>(
    text: &'a str,
    root: Node<'a>,
    aliases: &[usize],
    text_end: usize,
) -> Result<Input<'a>, InputError> {
    let json = root.flow;
    let Value::Map(entries) = root.value else {
        return Err(InputError::ItemsNotAList("no mapping"));
    };
    for key in ["apiVersion", "kind", "items", "functionConfig", "results"] {
        let count = entries
            .iter()
            .filter(|(k, _)| k.scalar().is_some_and(|s| s.text == key))
            .count();
        if count > 1 {
            return Err(InputError::DuplicateKey(key.to_string()));
        }
    }
    let items_pos = entries
        .iter()
        .position(|(k, _)| k.scalar().is_some_and(|s| s.text == "items"));
    // The items' text ends where the next top-level key begins, or with the document (before
    // a `...` line).
    let items_end = items_pos
        .and_then(|i| entries.get(i + 1))
        .map_or(text_end, |(k, _)| line_start(text, k.start));
    let mut function_config = None;
    let mut items_node = None;
    for (key, value) in entries {
        match key.scalar().map(|s| s.text.as_ref()) {
            Some("items") => items_node = Some(value),
            Some("functionConfig") => function_config = Some(value),
            _ => {}
        }
    }
    let mut dash_indent = 0;
    let items = match items_node {
        None => Vec::new(),
        Some(node) if node.is_null() => Vec::new(),
        Some(Node {
            value: Value::Seq(nodes),
            flow,
            ..
        }) => {
            if flow || json {
                nodes
                    .into_iter()
                    .map(|node| Item {
                        node,
                        text: None,
                        source_only: false,
                    })
                    .collect()
            } else {
                let starts: Vec<usize> = nodes.iter().map(|n| entry_start(text, n.start)).collect();
                if let Some(&first) = starts.first() {
                    dash_indent = text[line_start(text, first)..first].len();
                }
                let bounds: Vec<usize> = starts.iter().map(|&s| line_start(text, s)).collect();
                nodes
                    .into_iter()
                    .enumerate()
                    .map(|(i, node)| {
                        let end = bounds.get(i + 1).copied().unwrap_or(items_end);
                        let chunk = &text[bounds[i]..end.max(bounds[i])];
                        Item {
                            node,
                            text: (!has_alias(aliases, bounds[i], end))
                                .then(|| with_newline(Cow::Borrowed(chunk))),
                            source_only: false,
                        }
                    })
                    .collect()
            }
        }
        Some(other) => return Err(InputError::ItemsNotAList(other.type_name())),
    };
    Ok(Input {
        form: Form::ResourceList { json },
        items,
        function_config,
        dash_indent,
    })
}

/// The offset of the `-` that opens a block sequence entry whose node starts at `node_start`.
///
/// The dash may stand on an earlier line, followed by nothing or by a comment (`- # note`).
fn entry_start(text: &str, node_start: usize) -> usize {
    let line = line_start(text, node_start);
    // The dash on the node's own line, with nothing but properties or a comment between (an
    // empty entry `- # note` starts after its comment).
    let before = &text[line..node_start];
    if is_dash_prelude(before) {
        return line + before.len() - before.trim_start_matches(YAML_SPACE).len();
    }
    let mut end = line;
    while end > 0 {
        let start = line_start(text, end - 1);
        let content = text[start..end].trim_matches(YAML_SPACE);
        let indent = text[start..end].len() - text[start..end].trim_start_matches(YAML_SPACE).len();
        if is_dash_prelude(content) {
            return start + indent;
        }
        if !(content.is_empty() || content.starts_with('#')) {
            break;
        }
        end = start;
    }
    node_start
}

/// A sequence entry's dash line whose node starts further on: `-`, then nothing but properties
/// (`&anchor`, `!tag`), a block scalar header (`|`, `>-`, `|2`) and a comment.
fn is_dash_prelude(line: &str) -> bool {
    let Some(rest) = line.trim_matches(YAML_SPACE).strip_prefix('-') else {
        return false;
    };
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return false;
    }
    for token in rest.split([' ', '\t']).filter(|t| !t.is_empty()) {
        if token.starts_with('#') {
            return true;
        }
        let header = token.starts_with(['|', '>'])
            && token[1..]
                .chars()
                .all(|c| matches!(c, '+' | '-' | '1'..='9'));
        if !(header || token.starts_with(['&', '!'])) {
            return false;
        }
    }
    true
}

/// An item's text ready to emit: ending in a line break, and without byte order marks at the
/// starts of its trailing blank and comment lines. A mark there stood between documents in the
/// input, and would break whatever follows the item in the output (elsewhere, inside a quoted
/// scalar say, a mark is text and stays).
fn with_newline(chunk: Cow<'_, str>) -> Cow<'_, str> {
    let tail = trailing_blank_lines(&chunk);
    let chunk = if chunk[tail..].contains('\u{feff}') {
        let mut out = String::with_capacity(chunk.len());
        out.push_str(&chunk[..tail]);
        let mut line_start = true;
        for c in chunk[tail..].chars() {
            if c == '\u{feff}' && line_start {
                continue;
            }
            line_start = matches!(c, '\n' | '\r');
            out.push(c);
        }
        Cow::Owned(out)
    } else {
        chunk
    };
    if chunk.ends_with('\n') || chunk.is_empty() {
        chunk
    } else {
        Cow::Owned(format!("{chunk}\n"))
    }
}

/// Where the lines at the end of `chunk` that hold only marks, blanks and a comment begin.
fn trailing_blank_lines(chunk: &str) -> usize {
    let mut cut = chunk.len();
    while cut > 0 {
        let body = chunk[..cut].trim_end_matches(['\n', '\r']);
        let start = body.rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let line = body[start..].trim_start_matches(['\u{feff}', ' ', '\t']);
        if !(line.is_empty() || line.starts_with('#')) {
            break;
        }
        cut = start;
    }
    cut
}

fn stream<'a>(text: &'a str, docs: Vec<crate::yaml::Document<'a>>) -> Input<'a> {
    let mut items = Vec::new();
    for doc in docs {
        if doc.root.is_null() {
            continue;
        }
        if !is_list_node(&doc.root) {
            // A byte order mark may open a document (even after comments), but not once the
            // document follows `---`: marks before the content are dropped.
            let content = doc.root.start.clamp(doc.text_start, doc.text_end);
            let prefix = &text[doc.text_start..content];
            let chunk: Cow<str> = if prefix.contains('\u{feff}') {
                Cow::Owned(format!(
                    "{}{}",
                    prefix.replace('\u{feff}', ""),
                    &text[content..doc.text_end]
                ))
            } else {
                Cow::Borrowed(&text[doc.text_start..doc.text_end])
            };
            // A span that lost its content (an odd marker layout) is written by the emitter instead,
            // and so is content that shared the `---` line and would read as a marker on its own.
            let copyable = !chunk.trim_matches(YAML_SPACE).is_empty()
                && !opens_with_marker(&chunk)
                && !is_multi_line_string(&doc.root, &chunk);
            let text = copyable.then(|| with_newline(chunk));
            items.push(Item {
                node: doc.root,
                text,
                source_only: false,
            });
            continue;
        }
        let aliases = doc.aliases;
        let Value::Map(entries) = doc.root.value else {
            continue;
        };
        let pos = entries
            .iter()
            .position(|(k, _)| k.scalar().is_some_and(|s| s.text == "items"));
        let list_end = pos
            .and_then(|i| entries.get(i + 1))
            .map_or(doc.text_end, |(k, _)| line_start(text, k.start));
        let Some((
            _,
            Node {
                value: Value::Seq(nodes),
                flow,
                ..
            },
        )) = pos.and_then(|p| entries.into_iter().nth(p))
        else {
            continue;
        };
        // Entries of a flow list are written by the emitter: no spans needed (and looking for
        // line starts on a one-line list would be quadratic).
        let starts: Vec<usize> = if flow {
            Vec::new()
        } else {
            nodes
                .iter()
                .map(|n| line_start(text, entry_start(text, n.start)))
                .collect()
        };
        for (i, node) in nodes.into_iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(list_end);
            let item_text = if flow
                || node.flow
                || has_alias(&aliases, starts[i], end)
                || is_multi_line_string(&node, &text[starts[i]..end.max(starts[i])])
            {
                None
            } else {
                let content_col = node.start - line_start(text, node.start);
                // Lines moved to column 0 may read as markers there (`- ...`, `  --- key: v`).
                deindent(&text[starts[i]..end.max(starts[i])], content_col)
                    .filter(|t| !t.split('\n').any(opens_with_marker))
                    .map(|t| with_newline(Cow::Owned(t)))
            };
            // An empty entry is no resource, as an empty document is none.
            if node.is_null() {
                continue;
            }
            if is_list_node(&node) {
                // A List inside a List is flattened too, as a second run would see it.
                flatten_list(node, &mut items);
                continue;
            }
            items.push(Item {
                node,
                text: item_text,
                source_only: false,
            });
        }
    }
    Input {
        form: Form::Stream,
        items,
        function_config: None,
        dash_indent: 0,
    }
}

/// Whether text that will stand at the start of a document would open with `---` or `...`.
fn opens_with_marker(text: &str) -> bool {
    ["---", "..."]
        .iter()
        .any(|m| crate::yaml::starts_with_marker(text, m))
}

/// A document that is a string written over several lines (a block scalar, mostly) is not
/// copied: saphyr-parser 0.3 misses a `---` after a document-level block scalar whose lines
/// start in column 0 (or that is empty), and every document after it would become part of that
/// string on the next run. The emitter writes such strings indented, or quoted.
fn is_multi_line_string(node: &Node, chunk: &str) -> bool {
    node.scalar().is_some_and(|s| {
        !s.plain && (s.text.is_empty() || chunk.trim_end_matches(YAML_SPACE).contains(['\n', '\r']))
    })
}

/// A `kind: List` whose items can be taken out (what `kubectl get` prints).
fn is_list_node(node: &Node) -> bool {
    is_kind(node, "List")
        && node
            .get("items")
            .is_some_and(|i| i.as_seq().is_some() || i.is_null())
}

/// The items of a nested List, at any depth; the emitter writes them.
fn flatten_list<'a>(list: Node<'a>, items: &mut Vec<Item<'a>>) {
    let Value::Map(entries) = list.value else {
        return;
    };
    let Some((
        _,
        Node {
            value: Value::Seq(nodes),
            ..
        },
    )) = entries
        .into_iter()
        .find(|(k, _)| k.scalar().is_some_and(|s| s.text == "items"))
    else {
        return;
    };
    for node in nodes.into_iter().filter(|n| !n.is_null()) {
        if is_list_node(&node) {
            flatten_list(node, items);
        } else {
            items.push(Item {
                node,
                text: None,
                source_only: false,
            });
        }
    }
}

/// Turns a `- key: …` list entry into a standalone document by removing `col` columns, if every line allows it.
fn deindent(chunk: &str, col: usize) -> Option<String> {
    // Lines broken by a lone `\r` are left to the emitter.
    if chunk.replace("\r\n", "\n").contains('\r') {
        return None;
    }
    let mut out = String::with_capacity(chunk.len());
    for (i, line) in chunk.split_inclusive('\n').enumerate() {
        let body = line.trim_end_matches(['\n', '\r']);
        if i == 0 {
            if is_dash_prelude(body) {
                // The node starts below: what stays of the dash line is its properties, block
                // scalar header or comment, at column 0.
                let rest = body.trim_start_matches(YAML_SPACE)[1..].trim_start_matches(YAML_SPACE);
                if !rest.is_empty() {
                    out.push_str(rest);
                    out.push_str(&line[body.len()..]);
                }
            } else {
                // The dash line: replace everything up to the content column.
                out.push_str(line.get(col..)?);
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

/// An output item: an input item kept as it was, or a new node.
pub enum Out<'x, 'a> {
    Keep(&'x Item<'a>),
    New(Node<'static>),
}

/// Where the output goes, piece by piece, so it never has to be held whole.
pub type Sink<'s> = dyn FnMut(&str) + 's;

/// Writes the output in the input's form: verbatim items straight from the input, generated ones
/// through one reused buffer.
pub fn render(input: &Input, items: &[Out], results: &[Diagnostic], sink: &mut Sink) {
    let mut buf = String::new();
    match input.form {
        Form::ResourceList { json: true } => {
            let items_node = Node {
                value: Value::Seq(
                    items
                        .iter()
                        .map(|i| match i {
                            Out::Keep(item) => item.node.clone(),
                            Out::New(node) => node.clone(),
                        })
                        .collect(),
                ),
                start: 0,
                flow: false,
            };
            let mut root = Node::map(vec![
                ("apiVersion", Node::string("config.kubernetes.io/v1")),
                ("kind", Node::string("ResourceList")),
            ]);
            if let Value::Map(e) = &mut root.value {
                e.push((Node::string("items"), items_node));
                if let Some(fc) = &input.function_config {
                    e.push((Node::string("functionConfig"), fc.clone()));
                }
                if !results.is_empty() {
                    e.push((Node::string("results"), crate::results::list_node(results)));
                }
            }
            write_json(&mut buf, &root, Some(0));
            buf.push('\n');
        }
        Form::ResourceList { json: false } => {
            sink("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n");
            sink(if items.is_empty() {
                "items: []\n"
            } else {
                "items:\n"
            });
            let pad = " ".repeat(input.dash_indent);
            for item in items {
                match item {
                    Out::Keep(Item {
                        text: Some(text), ..
                    }) => sink(text),
                    Out::Keep(Item { node, .. }) | Out::New(node) => {
                        buf.push_str(&pad);
                        write_seq_item(&mut buf, node, input.dash_indent);
                        flush(&mut buf, sink);
                    }
                }
            }
            if let Some(fc) = &input.function_config {
                write_block(
                    &mut buf,
                    &Node::map(vec![("functionConfig", fc.clone().into_owned())]),
                    0,
                );
            }
            if !results.is_empty() {
                buf.push_str("results:\n");
                write_block(&mut buf, &crate::results::list_node(results), 0);
            }
        }
        Form::Stream => {
            for item in items {
                sink("---\n");
                match item {
                    Out::Keep(Item {
                        text: Some(text), ..
                    }) => sink(text),
                    Out::Keep(Item { node, .. }) | Out::New(node) => {
                        write_document(&mut buf, node);
                        flush(&mut buf, sink);
                    }
                }
            }
        }
    }
    flush(&mut buf, sink);
}

fn flush(buf: &mut String, sink: &mut Sink) {
    if !buf.is_empty() {
        sink(buf);
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep_all(input: &str) -> String {
        let parsed = parse(input.as_bytes(), &Limits::default()).expect("parses");
        let out: Vec<Out> = parsed.items.iter().map(Out::Keep).collect();
        let mut text = String::new();
        render(&parsed, &out, &[], &mut |s| text.push_str(s));
        text
    }

    #[test]
    fn resource_list_items_are_copied_byte_for_byte() {
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- # a note\n  # more\n\n  kind: Z\n- apiVersion: v1\n  kind: ConfigMap # why\n  data:\n    script: |\n      echo \"hi\"\n    list: [a, b]\n    q: 'x'\n-\n  kind: B\n# trailing\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n";
        assert_eq!(keep_all(input), input);
    }

    #[test]
    fn verbatim_items_reach_the_sink_as_slices_of_the_input() {
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: A\n  data: {x: y}\n- kind: B\n";
        let parsed = parse(input.as_bytes(), &Limits::default()).expect("parses");
        let out: Vec<Out> = parsed.items.iter().map(Out::Keep).collect();
        let range = input.as_bytes().as_ptr_range();
        let mut borrowed = Vec::new();
        render(&parsed, &out, &[], &mut |s| {
            if range.contains(&s.as_ptr()) {
                borrowed.push(s.to_string());
            }
        });
        assert_eq!(borrowed, ["- kind: A\n  data: {x: y}\n", "- kind: B\n"]);
    }

    #[test]
    fn indented_items_keep_their_indentation() {
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n  - kind: A\n  - kind: B\n";
        assert_eq!(keep_all(input), input);
    }

    #[test]
    fn list_items_become_documents() {
        let input = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  data:\n    k: |\n      x\n\n      y\n- {kind: B}\nmetadata:\n  resourceVersion: \"\"\n";
        assert_eq!(
            keep_all(input),
            "---\napiVersion: v1\nkind: Secret\ndata:\n  k: |\n    x\n\n    y\n---\nkind: B\n"
        );
    }

    #[test]
    fn stream_documents_are_copied_and_the_output_is_stable() {
        let input = "a: 1 # c\n---\n---\nb: \"2\"\n";
        let once = keep_all(input);
        assert_eq!(once, "---\na: 1 # c\n---\nb: \"2\"\n");
        assert_eq!(keep_all(&once), once);
    }

    #[test]
    fn json_resource_lists_come_back_as_json() {
        let input = r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A","n":1}]}"#;
        assert_eq!(
            keep_all(input),
            "{\n  \"apiVersion\": \"config.kubernetes.io/v1\",\n  \"kind\": \"ResourceList\",\n  \"items\": [\n    {\n      \"kind\": \"A\",\n      \"n\": 1\n    }\n  ]\n}\n"
        );
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let limits = Limits::default();
        assert_eq!(
            parse(b"a: \xff", &limits).unwrap_err(),
            InputError::NotUtf8 { offset: 3 }
        );
        assert_eq!(
            parse(b"kind: ResourceList\nitems: 3\n", &limits).unwrap_err(),
            InputError::ItemsNotAList("a number")
        );
        assert!(matches!(
            parse(b"a: [", &limits).unwrap_err(),
            InputError::Yaml(_)
        ));
    }
}
