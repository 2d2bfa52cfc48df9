//! Input forms: a KRM ResourceList, a `kind: List` (what `kubectl get -o yaml` prints) or a
//! stream of documents, read into items that know how they are written when kept.

use yaml::Limits;
use yaml::{
    Document, EntryHook, Indicator, Node, Style, Value, YamlError, line_start, parse_stream_with,
};

use super::verbatim::{self, Origin, Rewrite, Text};

/// The form the input came in, which the output is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A KRM ResourceList; `json` when it came as JSON (and so goes back as JSON).
    ResourceList {
        /// Whether the ResourceList was written as JSON.
        json: bool,
    },
    /// A `kind: List` or a multi-document stream; goes back as a multi-document YAML stream.
    Stream,
}

/// One resource of the input.
#[derive(Debug)]
pub struct Item<'a> {
    /// The resource's tree (cut down, for a reader of part of it, by [`parse_reading`]'s `cut`).
    pub node: Node<'a>,
    /// How the item is written when it is kept.
    pub text: Text,
    /// Whether the text is a whole document that begins with its own `---` (or directives).
    pub explicit_start: bool,
    /// Read for conversion but not part of the output (resources named by the config).
    pub source_only: bool,
}

impl<'a> Item<'a> {
    /// An item that is not in the input as text.
    pub fn generated(node: Node<'a>, source_only: bool) -> Self {
        Item {
            node,
            text: Text::Rewrite(Rewrite::Generated),
            explicit_start: false,
            source_only,
        }
    }
}

/// The input read: its text, its form, its resources and a ResourceList's functionConfig.
#[derive(Debug)]
pub struct Input<'a> {
    /// The input text.
    pub text: &'a str,
    /// The form it came in, and so the form of the output.
    pub form: Form,
    /// The resources, in order: a ResourceList's items, or a stream's documents with every
    /// List's entries taken out of it.
    pub items: Vec<Item<'a>>,
    /// A ResourceList's functionConfig, when it has one.
    pub function_config: Option<Node<'a>>,
    /// How the functionConfig entry (`functionConfig:` and its value) is written back.
    pub function_config_text: Option<Text>,
    /// Column of the `-` in a block `items:` list; generated items must line up with it.
    pub dash_indent: usize,
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    /// The input is longer than [`Limits::max_input_bytes`].
    #[error("input is over the limit of {limit} bytes (--max-input-bytes)")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The input is not valid UTF-8.
    #[error("input is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Where the first invalid byte stands.
        offset: usize,
    },
    /// The input is not YAML the reader reads.
    #[error("{0}")]
    Yaml(#[from] YamlError),
    /// A ResourceList's `items` is no list; this says what it is instead.
    #[error("ResourceList items must be a list, got {0}")]
    ItemsNotAList(&'static str),
    /// More resources than [`Limits::max_items`].
    #[error("input has {count} resources, over the limit of {limit}")]
    TooManyItems {
        /// How many resources the input has.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A ResourceList holds one of its own keys (`apiVersion`, `kind`, `items`,
    /// `functionConfig`, `results`) twice; this names it.
    #[error("ResourceList has more than one {0:?} key")]
    DuplicateKey(String),
    /// A ResourceList among other documents; this counts the documents.
    #[error("a ResourceList must be the only document of the input, but there are {0}")]
    ResourceListInStream(usize),
    /// A ResourceList as an entry of a List: taken out, it would read as the input's own
    /// ResourceList the next time.
    #[error("a ResourceList cannot be an item of a List")]
    ResourceListInList,
}

/// What a reader that does not read an item needs of it: what results name it by.
pub const NAMING_KEYS: &[&str] = &["apiVersion", "kind", "metadata"];

/// What a reader cuts from an item it reads only part of; whether it cut anything.
pub type Cut = fn(&mut Node) -> bool;

/// Decodes and parses the input into its form and items.
pub fn parse<'a>(input: &'a [u8], limits: &Limits) -> Result<Input<'a>, InputError> {
    parse_reading(input, limits, None)
}

/// [`parse`], for a reader that reads only part of each item: `cut` takes from each entry of a
/// ResourceList, while the input is read, what that reader never reads (and says whether it took
/// anything), so a large list's trees never hold memory past their own entry. A cut item that
/// would have to be written from its tree (not copied) brings the whole input to be read again,
/// uncut: the output never loses a field.
pub fn parse_reading<'a>(
    input: &'a [u8],
    limits: &Limits,
    cut: Option<Cut>,
) -> Result<Input<'a>, InputError> {
    let Some(cut_entry) = cut else {
        return read(input, limits, None);
    };
    let mut cut: Vec<usize> = Vec::new();
    let mut hook = |root: &[Node], entry: &mut Node| {
        let in_list = root.chunks(2).any(|kv| {
            kv[0].as_str() == Some("kind")
                && kv.get(1).and_then(Node::as_str) == Some("ResourceList")
        });
        if in_list && verbatim::may_cut(entry) && cut_entry(entry) {
            cut.push(entry.span.start());
        }
    };
    let parsed = read(input, limits, Some(&mut hook))?;
    // The cuts hold where every cut entry became an item of a ResourceList that is copied
    // from the input (not part of a document that merely holds such a list, nor an item the
    // output writes from its tree).
    let holds = matches!(parsed.form, Form::ResourceList { .. })
        && parsed.items.iter().all(|item| {
            matches!(item.text, Text::Span(_) | Text::Moved(_))
                || cut.binary_search(&item.node.span.start()).is_err()
        });
    if cut.is_empty() || holds {
        Ok(parsed)
    } else {
        parse(input, limits)
    }
}

fn read<'a>(
    input: &'a [u8],
    limits: &Limits,
    hook: Option<&mut EntryHook>,
) -> Result<Input<'a>, InputError> {
    if input.len() > limits.max_input_bytes {
        return Err(InputError::TooLarge {
            limit: limits.max_input_bytes,
        });
    }
    let text = std::str::from_utf8(input).map_err(|e| InputError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let mut docs = parse_stream_with(text, limits, hook)?;
    // A ResourceList among other documents has no meaning (and would flip forms between runs).
    if docs.len() > 1 && docs.iter().any(|d| is_kind(&d.root, "ResourceList")) {
        return Err(InputError::ResourceListInStream(docs.len()));
    }
    let mut parsed = if docs.len() == 1 && is_kind(&docs[0].root, "ResourceList") {
        resource_list(text, docs.remove(0))?
    } else {
        stream(text, docs, limits)
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
    // Items the emitter writes keep the quoting of YAML they came in; JSON's quotes only
    // said "string", and such items come out as kubectl would write them.
    for item in &mut parsed.items {
        if matches!(item.text, Text::Rewrite(_)) && item.node.is_json() {
            item.node.forget_json_quotes();
        }
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

/// Where each entry of a block sequence begins (the start of its `-` line) and where the last
/// one ends, so that consecutive entries tile the list's text.
fn entry_ranges(text: &str, entries: &[Node], end: usize) -> Vec<std::ops::Range<usize>> {
    let starts: Vec<usize> = entries
        .iter()
        .map(|n| line_start(text, n.indicator.map_or(n.span.start(), Indicator::pos)))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(i, &s)| s..starts.get(i + 1).copied().unwrap_or(end).max(s))
        .collect()
}

/// Where a key's text begins: at its `?` when it is written with one (the key node itself
/// may begin lines below).
fn key_start(key: &Node) -> usize {
    key.indicator.map_or(key.span.start(), Indicator::pos)
}

/// Where the text of a root mapping's value for `key` ends: the line of the next key, or the
/// end of the document.
fn value_end(text: &str, entries: &[(Node, Node)], index: usize, doc_end: usize) -> usize {
    entries
        .get(index + 1)
        .map_or(doc_end, |(k, _)| line_start(text, key_start(k)))
}

fn resource_list<'a>(text: &'a str, doc: Document<'a>) -> Result<Input<'a>, InputError> {
    // JSON in, JSON out; a flow-style YAML ResourceList is YAML, and goes back as YAML.
    let json = doc.root.is_json();
    let origin = Origin {
        aliases: &doc.aliases,
        tag_directives: doc.tag_directives,
    };
    let Value::Map(entries) = doc.root.value else {
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
    let items_at = entries
        .iter()
        .position(|(k, _)| k.scalar().is_some_and(|s| s.text == "items"));
    let items_end = items_at.map_or(doc.end, |i| value_end(text, &entries, i, doc.end));
    let function_config_text = entries
        .iter()
        .position(|(k, _)| k.scalar().is_some_and(|s| s.text == "functionConfig"))
        .map(|i| {
            let (key, value) = &entries[i];
            let range = line_start(text, key_start(key))..value_end(text, &entries, i, doc.end);
            verbatim::in_place(text, value, range, &origin)
        });
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
            style,
            ..
        }) => {
            let flow = json || style == Style::Flow;
            let ranges = entry_ranges(text, &nodes, items_end);
            if let Some(dash) = nodes.first().and_then(|n| n.indicator).map(Indicator::pos) {
                dash_indent = text[line_start(text, dash)..dash].chars().count();
            }
            nodes
                .into_iter()
                .zip(ranges)
                .map(|(node, range)| {
                    let text = if flow {
                        Text::Rewrite(Rewrite::Flow)
                    } else {
                        verbatim::in_place(text, &node, range, &origin)
                    };
                    Item {
                        node,
                        text,
                        explicit_start: false,
                        source_only: false,
                    }
                })
                .collect()
        }
        Some(other) => return Err(InputError::ItemsNotAList(other.type_name())),
    };
    Ok(Input {
        text,
        form: Form::ResourceList { json },
        items,
        function_config,
        function_config_text,
        dash_indent,
    })
}

fn stream<'a>(text: &'a str, docs: Vec<Document<'a>>, limits: &Limits) -> Input<'a> {
    let mut items = Vec::new();
    for doc in docs {
        if doc.root.is_null() {
            continue;
        }
        if !is_list_node(&doc.root) {
            let origin = Origin {
                aliases: &[],
                tag_directives: false,
            };
            items.push(Item {
                text: verbatim::in_place(text, &doc.root, doc.start..doc.end, &origin),
                node: doc.root,
                explicit_start: doc.explicit_start,
                source_only: false,
            });
            continue;
        }
        let origin = Origin {
            aliases: &doc.aliases,
            tag_directives: doc.tag_directives,
        };
        let typed = typed_list(&doc.root);
        let Value::Map(entries) = doc.root.value else {
            continue;
        };
        let Some(at) = entries
            .iter()
            .position(|(k, _)| k.scalar().is_some_and(|s| s.text == "items"))
        else {
            continue;
        };
        let list_end = value_end(text, &entries, at, doc.end);
        let Some((_, list)) = entries.into_iter().nth(at) else {
            continue;
        };
        let flow = list.is_flow();
        let Value::Seq(nodes) = list.value else {
            continue;
        };
        let ranges = if flow {
            Vec::new()
        } else {
            entry_ranges(text, &nodes, list_end)
        };
        for (i, node) in nodes.into_iter().enumerate() {
            // An empty entry is no resource, as an empty document is none.
            if node.is_null() {
                continue;
            }
            if is_list_node(&node) {
                // A List inside a List is flattened too, as a second run would see it.
                flatten_list(node, &mut items);
                continue;
            }
            if let Some((api_version, kind)) = &typed {
                if node.get("kind").is_none() {
                    // A typed list's items leave their type to the list: written out on
                    // their own, they say it.
                    items.push(Item::generated(with_type(node, api_version, kind), false));
                    continue;
                }
            }
            let item_text = match ranges.get(i) {
                Some(range) => verbatim::moved(text, &node, range.clone(), &origin, limits),
                None => Text::Rewrite(Rewrite::Flow),
            };
            items.push(Item {
                node,
                text: item_text,
                explicit_start: false,
                source_only: false,
            });
        }
    }
    Input {
        text,
        form: Form::Stream,
        items,
        function_config: None,
        function_config_text: None,
        dash_indent: 0,
    }
}

/// A list of resources whose items can be taken out: `kind: List` (what `kubectl get` prints)
/// or a typed list such as `SecretList` (what the API server returns, `kubectl get --raw`).
fn is_list_node(node: &Node) -> bool {
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or_default();
    kind.ends_with("List")
        && kind != "ResourceList"
        && node
            .get("items")
            .is_some_and(|i| i.as_seq().is_some() || i.is_null())
}

/// The items of a nested List, at any depth; the emitter writes them.
fn flatten_list<'a>(list: Node<'a>, items: &mut Vec<Item<'a>>) {
    let typed = typed_list(&list);
    let Value::Map(entries) = list.value else {
        return;
    };
    let Some((_, list)) = entries
        .into_iter()
        .find(|(k, _)| k.scalar().is_some_and(|s| s.text == "items"))
    else {
        return;
    };
    let Value::Seq(nodes) = list.value else {
        return;
    };
    for node in nodes.into_iter().filter(|n| !n.is_null()) {
        if is_list_node(&node) {
            flatten_list(node, items);
        } else {
            let node = match &typed {
                Some((api_version, kind)) if node.get("kind").is_none() => {
                    with_type(node, api_version, kind)
                }
                _ => node,
            };
            items.push(Item::generated(node, false));
        }
    }
}

/// For a typed list (`SecretList`): the apiVersion and kind of its items.
fn typed_list(list: &Node) -> Option<(String, String)> {
    let kind = list.get("kind")?.as_str()?;
    let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty())?;
    let api_version = list.get("apiVersion").and_then(Node::as_str)?;
    Some((api_version.to_string(), item_kind.to_string()))
}

/// The item with `apiVersion` and `kind` in front, as a list item standing alone needs them.
fn with_type<'a>(node: Node<'a>, api_version: &str, kind: &str) -> Node<'a> {
    let Value::Map(entries) = node.value else {
        return node;
    };
    let mut typed = vec![
        (Node::string("apiVersion"), Node::string(api_version)),
        (Node::string("kind"), Node::string(kind)),
    ];
    typed.extend(entries);
    Node {
        value: Value::Map(typed),
        ..node
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml::same_content;

    const LIST: &str = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n";

    /// A reader of Secrets alone: anything else is cut to what names it.
    fn secrets_only(item: &mut Node) -> bool {
        let kind = item.get("kind").and_then(Node::as_str).unwrap_or_default();
        kind != "Secret" && item.retain_keys(NAMING_KEYS)
    }

    #[test]
    fn items_a_reader_does_not_read_are_cut_to_what_names_them_and_still_copied_whole() {
        let input = format!(
            "{LIST}- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    k: v\n- apiVersion: v1\n  kind: Secret\n  data:\n    k: dg==\n"
        );
        let parsed = parse_reading(input.as_bytes(), &Limits::default(), Some(secrets_only))
            .expect("parses");
        let [config_map, secret] = &parsed.items[..] else {
            panic!("two items");
        };
        assert!(config_map.node.get("data").is_none());
        assert_eq!(
            config_map
                .node
                .path(&["metadata", "name"])
                .and_then(Node::as_str),
            Some("a")
        );
        assert!(secret.node.get("data").is_some());
        let Text::Span(range) = &config_map.text else {
            panic!("copied");
        };
        assert!(input[range.clone()].contains("k: v"));
    }

    /// Regression: cut items that the output writes from their trees instead of copying them
    /// (an alias to an anchor outside the item, a tag under a `%TAG` directive, a block scalar
    /// at the very end of an input without a final line break, a document that is no
    /// ResourceList) lost every field but their metadata. They are never cut, or the input is
    /// read again whole.
    #[test]
    fn cut_items_written_from_their_trees_are_read_whole() {
        for input in [
            format!("{LIST}- &a {{kind: X}}\n- kind: ConfigMap\n  data:\n    x: *a\n"),
            format!(
                "{LIST}- kind: ConfigMap\n  metadata:\n    name: &n a\n  data:\n    x: *n\n- kind: B\n  data:\n    y: *n\n"
            ),
            format!(
                "%TAG !e! tag:example.com,2000:\n---\n{LIST}- kind: ConfigMap\n  data:\n    x: !e!foo bar\n"
            ),
            format!("{LIST}- kind: ConfigMap\n  data:\n    x: |\n      text"),
            format!(
                "{LIST}- kind: ConfigMap\n  data:\n    x: 1\n  metadata:\n    note: |\n      text"
            ),
            // Found by fuzzing: a document that is no ResourceList (its first `kind` says so)
            // but names one before its `items`, written from its tree.
            "kind: Other\nkind: ResourceList\nitems:\n- kind: ConfigMap\n  data:\n    x: 1\nnote: |\n  text"
                .to_string(),
        ] {
            let cut = parse_reading(input.as_bytes(), &Limits::default(), Some(secrets_only))
                .expect("parses");
            let whole = parse(input.as_bytes(), &Limits::default()).expect("parses");
            assert_eq!(cut.items.len(), whole.items.len());
            for (c, w) in cut.items.iter().zip(&whole.items) {
                assert_eq!(c.text, w.text, "{input}");
                if !matches!(w.text, Text::Span(_)) {
                    assert!(same_content(&c.node, &w.node), "{input}");
                }
            }
        }
    }
}
