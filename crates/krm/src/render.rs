//! Output: items written in the input's form, kept ones straight from the input, new ones by the emitter.

use crate::finding::Finding;
use yaml::Node;
use yaml::emit::{write_block, write_document, write_json, write_seq_item};

use super::input::{Form, Input, Item};
use super::sink::Sink;
use super::store::{Origin, Stored, TextStore};
use super::verbatim::Text;

/// An output item: an input item kept as it was, or a new one.
pub enum Out<'x, 'a> {
    /// An input item, written as its `text` says: copied, moved or written by the emitter.
    Keep(&'x Item<'a>),
    /// A new item as a tree: JSON output writes the whole list as one value.
    New(Node<'static>),
    /// A new item already written as the YAML it becomes, kept in a [`TextStore`]: a large
    /// fleet's new Secrets wait for the output as their text, their long values left in the
    /// input where they came from.
    Written(Stored),
}

impl<'x, 'a> Out<'x, 'a> {
    /// A new item for `input`'s output, written into `store` at once when the output is YAML;
    /// each of `values` that the text holds as it stands in the input (`Origin`) is kept as
    /// where it stands, and read again when the item is written.
    pub fn new(
        input: &Input,
        node: Node<'static>,
        values: &[(&str, Origin)],
        store: &mut TextStore,
    ) -> Self {
        if input.form == (Form::ResourceList { json: true }) {
            return Out::New(node);
        }
        Out::Written(store.write(|text| write_new(text, input, &node), values))
    }
}

/// Writes the output in the input's form: verbatim items straight from the input, generated ones
/// through one reused buffer.
pub fn render(
    input: &Input,
    items: &[Out],
    store: &TextStore,
    results: &[Finding],
    sink: &mut Sink,
) {
    let Some(mut writer) = Writer::new(input) else {
        render_json(input, items, store, results, sink);
        return;
    };
    for item in items {
        writer.item(item, store, sink);
    }
    writer.finish(results, sink);
}

/// A JSON ResourceList: one value, written once every item is known.
fn render_json(
    input: &Input,
    items: &[Out],
    store: &TextStore,
    results: &[Finding],
    sink: &mut Sink,
) {
    let items_node = Node::seq(
        items
            .iter()
            .map(|i| match i {
                Out::Keep(item) => item.node.clone().into_owned(),
                Out::New(node) => node.clone(),
                // `Out::new` keeps trees for JSON output; text written for YAML
                // output is read back rather than lost.
                Out::Written(at) => read_back(&store.text(at, input.text)),
            })
            .collect(),
    );
    let mut entries = vec![
        ("apiVersion", Node::string("config.kubernetes.io/v1")),
        ("kind", Node::string("ResourceList")),
        ("items", items_node),
    ];
    if let Some(fc) = &input.function_config {
        entries.push(("functionConfig", fc.clone().into_owned()));
    }
    if !results.is_empty() {
        entries.push(("results", crate::finding::list_node(results)));
    }
    let mut buf = String::new();
    write_json(&mut buf, &Node::map(entries), Some(0));
    buf.push('\n');
    flush(&mut buf, sink);
}

/// A new item's YAML for `input`'s output: an entry of the ResourceList's `items` (its `-` lined
/// up with the input's) or a document's body.
fn write_new(text: &mut String, input: &Input, node: &Node) {
    match input.form {
        Form::ResourceList { .. } => {
            text.push_str(&" ".repeat(input.dash_indent));
            write_seq_item(text, node, input.dash_indent);
        }
        Form::Stream => write_document(text, node),
    }
}

/// YAML output (a ResourceList's or a stream's) written an item at a time, so that an item can
/// go out as soon as it is known.
pub struct Writer<'i, 'a> {
    input: &'i Input<'a>,
    /// How many items are out.
    written: usize,
    buf: String,
}

impl<'i, 'a> Writer<'i, 'a> {
    /// A writer for `input`'s output; `None` when that is JSON, written as one value.
    pub fn new(input: &'i Input<'a>) -> Option<Self> {
        if input.form == (Form::ResourceList { json: true }) {
            return None;
        }
        Some(Writer {
            input,
            written: 0,
            buf: String::new(),
        })
    }

    /// Writes `item` to `sink`: after the ResourceList's head when it is the first, or as a
    /// document of the stream.
    pub fn item(&mut self, item: &Out, store: &TextStore, sink: &mut Sink) {
        let input = self.input;
        let buf = &mut self.buf;
        match input.form {
            Form::ResourceList { .. } => {
                if self.written == 0 {
                    sink("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
                }
                match item {
                    Out::Keep(Item {
                        text: Text::Span(range),
                        ..
                    }) => copy(&input.text[range.clone()], sink),
                    Out::Keep(Item {
                        text: Text::Moved(moved),
                        ..
                    }) => copy(&moved.text(input.text).unwrap_or_default(), sink),
                    Out::Written(at) => store.write_out(at, input.text, sink),
                    Out::Keep(Item { node, .. }) | Out::New(node) => {
                        write_new(buf, input, node);
                        flush(buf, sink);
                    }
                }
            }
            Form::Stream => match item {
                Out::Keep(Item {
                    text: Text::Span(range),
                    explicit_start,
                    ..
                }) => {
                    let text = &input.text[range.clone()];
                    if !explicit_start {
                        sink("---\n");
                    } else if self.written > 0 && text.starts_with('%') {
                        // Directives must follow an ended document: after an open one,
                        // a `%` line would read as more of its last scalar.
                        sink("...\n");
                    }
                    copy(text, sink);
                }
                Out::Keep(Item {
                    text: Text::Moved(moved),
                    ..
                }) => {
                    sink("---\n");
                    copy(&moved.text(input.text).unwrap_or_default(), sink);
                }
                Out::Written(at) => {
                    sink("---\n");
                    store.write_out(at, input.text, sink);
                }
                Out::Keep(Item { node, .. }) | Out::New(node) => {
                    sink("---\n");
                    write_new(buf, input, node);
                    flush(buf, sink);
                }
            },
        }
        self.written += 1;
    }

    /// The rest of the output: a ResourceList's functionConfig and results.
    pub fn finish(mut self, results: &[Finding], sink: &mut Sink) {
        let input = self.input;
        let buf = &mut self.buf;
        if let Form::ResourceList { .. } = input.form {
            if self.written == 0 {
                sink("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n");
            }
            if let Some(Text::Span(range)) = &input.function_config_text {
                flush(buf, sink);
                copy(&input.text[range.clone()], sink);
            } else if let Some(fc) = &input.function_config {
                write_block(
                    buf,
                    &Node::map(vec![("functionConfig", fc.clone().into_owned())]),
                    0,
                );
            }
            if !results.is_empty() {
                buf.push_str("results:\n");
                write_block(buf, &crate::finding::list_node(results), 0);
            }
        }
        flush(buf, sink);
    }
}

/// The ResourceList a host returns when the input is unusable (exit 2 on the command line):
/// no items, one error result saying why. For hosts that have no exit code of their own.
pub fn failure_resource_list(message: &str) -> String {
    let mut out = String::from(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n",
    );
    let result = crate::finding::list_node(&[Finding::error(message)]);
    write_block(&mut out, &result, 0);
    out
}

/// Copied text, ending in a line break so that what follows starts on a line of its own.
fn copy(text: &str, sink: &mut Sink) {
    sink(text);
    if !ends_with_break(text) {
        sink("\n");
    }
}

/// Where a ResourceList's results begin in `output`, if it has them: a YAML `results:` line,
/// after any YAML line break (a copied item may end with a lone carriage return, or NEL, LS, PS,
/// and the section follows it directly), or the `"results"` member of JSON output. For the tests
/// and fuzz targets that compare two outputs with their results set aside.
pub fn results_start(output: &str) -> Option<usize> {
    output
        .match_indices("results:\n")
        .map(|(at, _)| at)
        .find(|&at| at > 0 && ends_with_break(&output[..at]))
        .or_else(|| output.find(",\n  \"results\": [").map(|at| at + 1))
}

fn ends_with_break(text: &str) -> bool {
    text.is_empty() || text.ends_with(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
}

/// A new item's YAML text as a tree again (the emitter's output always reads back).
fn read_back(text: &str) -> Node<'static> {
    yaml::parse_stream(text, &yaml::Limits::default())
        .ok()
        .and_then(|docs| docs.into_iter().next())
        .map_or_else(
            || Node::string(text.to_string()),
            |doc| doc.root.into_owned(),
        )
}

fn flush(buf: &mut String, sink: &mut Sink) {
    if !buf.is_empty() {
        sink(buf);
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::input::parse;
    use super::*;
    use yaml::Limits;

    fn keep_all(input: &str) -> String {
        let parsed = parse(input.as_bytes(), &Limits::default()).expect("parses");
        let out: Vec<Out> = parsed.items.iter().map(Out::Keep).collect();
        let mut text = String::new();
        render(&parsed, &out, &TextStore::default(), &[], &mut |s| {
            text.push_str(s)
        });
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
        render(&parsed, &out, &TextStore::default(), &[], &mut |s| {
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
    fn results_are_found_after_any_line_break() {
        let list = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n";
        assert_eq!(
            results_start(&format!("{list}- a\nresults:\n- x\n")),
            Some(list.len() + 4)
        );
        // Regression (fuzz finding): an item ending with a lone carriage return.
        assert_eq!(
            results_start(&format!("{list}-\rresults:\n- x\n")),
            Some(list.len() + 2)
        );
        assert_eq!(
            results_start(&format!("{list}- a\u{2028}results:\n")),
            Some(list.len() + 6)
        );
        assert_eq!(results_start(&format!("{list}- noresults:\n")), None);
        assert_eq!(results_start("results:\n"), None);
        let json = "{\n  \"items\": [],\n  \"results\": [\n  ]\n}\n";
        assert_eq!(
            results_start(json),
            Some(json.find("\n  \"results").unwrap())
        );
    }

    #[test]
    fn json_resource_lists_come_back_as_json() {
        let input = r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A","n":1}]}"#;
        assert_eq!(
            keep_all(input),
            "{\n  \"apiVersion\": \"config.kubernetes.io/v1\",\n  \"kind\": \"ResourceList\",\n  \"items\": [\n    {\n      \"kind\": \"A\",\n      \"n\": 1\n    }\n  ]\n}\n"
        );
    }

    /// A new item comes out the same whether it waits as a tree or as its written text, in
    /// every form (text meant for YAML output is read back if JSON output ever gets it).
    #[test]
    fn new_items_written_at_once_come_out_as_trees_would() {
        let secret = || {
            Node::map(vec![
                ("apiVersion", Node::string("v1")),
                ("kind", Node::string("Secret")),
                (
                    "stringData",
                    Node::map(vec![("config", Node::string("{\n  \"a\": 1\n}"))]),
                ),
            ])
        };
        for input in [
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n  - kind: A\n",
            "kind: A\n---\nkind: B\n",
            r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A"}]}"#,
        ] {
            let parsed = parse(input.as_bytes(), &Limits::default()).expect("parses");
            let mut store = TextStore::default();
            let mut written = |new: &dyn Fn(&Input, &mut TextStore) -> Out<'static, 'static>| {
                let mut out: Vec<Out> = parsed.items.iter().map(Out::Keep).collect();
                out.push(new(&parsed, &mut store));
                let mut text = String::new();
                render(&parsed, &out, &store, &[], &mut |s| text.push_str(s));
                text
            };
            let tree = written(&|_, _| Out::New(secret()));
            assert_eq!(
                written(&|input, store| Out::new(input, secret(), &[], store)),
                tree,
                "{input}"
            );
            if parsed.form == (Form::ResourceList { json: true }) {
                let yaml = |_: &Input, store: &mut TextStore| {
                    Out::Written(
                        store.write(|text| yaml::emit::write_document(text, &secret()), &[]),
                    )
                };
                assert_eq!(written(&yaml), tree);
            }
        }
    }
}
