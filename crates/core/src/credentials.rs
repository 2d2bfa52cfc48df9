//! The credential rule: where, in a text the function reads or writes, the values it keeps
//! secret stand, so that a host showing such text (the playground) hides exactly those.
//!
//! What counts is taken from the tables the converter reads and writes with, so the rule and
//! the function cannot drift apart:
//! - a kubeconfig's user credentials (`CREDENTIAL_USER_FIELDS`: token, password, client
//!   key), every `exec.env` value, the values of the exec plugins' credential flags
//!   (`CREDENTIAL_FLAGS`), an `auth-provider`'s settings, and the `user:password` of a server
//!   or proxy URL;
//! - Argo CD's `config`: the fields its table calls credentials (password, bearer token, client key, exec
//!   env), credential flags in `execProviderConfig.args`, a proxy URL's `user:password`;
//! - a Secret's values: a kubeconfig or an Argo CD `config` under `stringData` shows all but
//!   its credentials; any value under `data` is base64 (a credential in it cannot be hidden in
//!   part) and is hidden whole; the keys known to be public (`PUBLIC_SECRET_KEYS`) stay
//!   visible; and any other value of a Secret is hidden, as a Secret holds secrets unless the
//!   function knows better;
//! - the copy of an object kubectl keeps in `kubectl.kubernetes.io/last-applied-configuration`,
//!   the function config's inline `resources`, the items of a typed list (`SecretList`), and a
//!   kubeconfig kept as text in any other object, by the same rules;
//! - every copy of a key given twice (YAML readers disagree on which one counts).
//!
//! Certificates, CA data, servers and names stay visible: they are public.

use std::ops::Range;

use crate::convert::argocd::{CLUSTER_CONFIG_FIELDS, SECRET_DATA_KEYS, credential_paths};
use crate::convert::exec::credential_args;
use crate::convert::kubeconfig::{CREDENTIAL_USER_FIELDS, userinfo};
use krm::b64;
use yaml::Limits;
use yaml::{Document, Node, Value, YamlError, content_map, parse_stream, value_range};

/// Secret keys whose values are public: what Argo CD reads from a cluster Secret besides
/// `config` (`SECRET_DATA_KEYS`), and the CA certificate, namespace, certificate and user name
/// of Kubernetes' built-in Secret types (service account tokens, `kubernetes.io/tls`,
/// `kubernetes.io/basic-auth`). A server URL among them still has its `user:password` hidden.
pub const PUBLIC_SECRET_KEYS: &[&str] = &["ca.crt", "namespace", "tls.crt", "username"];

/// The annotation in which `kubectl apply` keeps a copy of the object as applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn is_public_key(key: &str) -> bool {
    (SECRET_DATA_KEYS.contains(&key) && key != "config") || PUBLIC_SECRET_KEYS.contains(&key)
}

/// The byte ranges of every credential value in `text` (a ResourceList, a List, a stream of
/// documents, a kubeconfig; YAML or JSON), sorted and merged. `Err` when `text` is not YAML.
pub fn credential_ranges(text: &str, limits: &Limits) -> Result<Vec<Range<usize>>, YamlError> {
    let mut found = Vec::new();
    let rule = Rule { limits };
    for doc in parse_stream(text, limits)? {
        rule.resource(text, &doc.root, None, &mut found);
    }
    Ok(merge(found))
}

/// Ranges sorted, empty ones dropped, overlapping and touching ones joined.
fn merge(mut found: Vec<Range<usize>>) -> Vec<Range<usize>> {
    found.retain(|r| !r.is_empty());
    found.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(found.len());
    for r in found {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// What a viewer hides of `text` that need not be YAML throughout (a paste being edited): the
/// rule's ranges where it reads, and nothing unread. Past a syntax error, the documents before
/// the broken one are read whole by the rule, the broken one is hidden but for the key of the
/// line the error names (shown only where that line can hold nothing but a key: what comes
/// before it parses, it is indented no deeper than the line before it, and its key is plain),
/// and reading goes on with the documents after it.
pub fn credential_ranges_lenient(text: &str, limits: &Limits) -> Vec<Range<usize>> {
    let mut hidden = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let rest = &text[start..];
        let shift = |ranges: Vec<Range<usize>>| {
            ranges
                .into_iter()
                .map(move |r| r.start + start..r.end + start)
        };
        let error = match credential_ranges(rest, limits) {
            Ok(ranges) => {
                hidden.extend(shift(ranges));
                break;
            }
            Err(error) => error,
        };
        let starts = line_starts(rest);
        // An error past the last line (an unclosed flow at the end) names no line to show.
        let Some(line) = error.line().filter(|&l| (1..=starts.len()).contains(&l)) else {
            hidden.push(start..text.len());
            break;
        };
        let at = starts[line - 1];
        let end = starts.get(line).copied().unwrap_or(rest.len());
        let marker = |&&s: &&usize| is_document_marker(&rest[s..]);
        let document = starts[..line - 1]
            .iter()
            .rev()
            .find(marker)
            .copied()
            .unwrap_or(0);
        let next = starts[line..]
            .iter()
            .find(marker)
            .copied()
            .unwrap_or(rest.len());
        match credential_ranges(&rest[..document], limits) {
            Ok(ranges) => hidden.extend(shift(ranges)),
            Err(_) => hidden.push(start..start + document),
        }
        hidden.push(start + document..start + at);
        match shown_key(rest, &starts, line, document, limits) {
            Some(colon) => hidden.push((start + at + colon + 1).min(start + end)..start + end),
            None => hidden.push(start + at..start + end),
        }
        hidden.push(start + end..start + next);
        start += next;
    }
    merge(hidden)
}

/// Of line `line` (from 1; the line a YAML error names, in its document from `document`), the
/// offset of the `:` ending its key, where the line can hold nothing but a key and a value:
/// what comes before it parses (no quote or flow is open), it is indented no deeper than the
/// line before it (it continues no scalar), and its key is plain text.
fn shown_key(
    text: &str,
    starts: &[usize],
    line: usize,
    document: usize,
    limits: &Limits,
) -> Option<usize> {
    let at = starts[line - 1];
    let shown = line_text(text, at, starts);
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let previous = starts[..line - 1]
        .iter()
        .rev()
        .filter(|&&s| s >= document)
        .map(|&s| line_text(text, s, starts))
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    if previous.is_some_and(|p| indent(shown) > indent(p)) {
        return None;
    }
    let colon = shown
        .find(": ")
        .or_else(|| shown.strip_suffix(':').map(str::len))?;
    let key = shown[..colon].trim_start().trim_start_matches("- ");
    let plain =
        !key.is_empty() && !key.contains(['"', '\'', '{', '[', '&', '*', '!', '|', '>', '#']);
    (plain && credential_ranges(&text[..at], limits).is_ok()).then_some(colon)
}

/// The text of the line starting at `at`, without its line break.
fn line_text<'t>(text: &'t str, at: usize, starts: &[usize]) -> &'t str {
    let end = starts
        .iter()
        .find(|&&s| s > at)
        .copied()
        .unwrap_or(text.len());
    text[at..end].trim_end_matches(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
}

/// Where each line of `text` starts, by the YAML reader's own line breaks (so the line an
/// error names is the line meant).
fn line_starts(text: &str) -> Vec<usize> {
    yaml::line_starts(text)
}

/// Whether a line opens a document (`---`) or ends one (`...`).
fn is_document_marker(line: &str) -> bool {
    ["---", "..."].iter().any(|m| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\n', '\r']))
    })
}

/// Where the `user:password` of a URL stands (a server's or a proxy's, which the function carries
/// into an Argo CD Secret as they are): the rule for a URL shown on its own.
pub fn url_credentials(url: &str) -> Option<Range<usize>> {
    userinfo(url)
}

struct Rule<'l> {
    limits: &'l Limits,
}

impl Rule<'_> {
    /// Any node: kubeconfigs and Secrets are read by their rules; anything else is walked (a
    /// list's items, a ResourceList's functionConfig, the inline `resources` of the function's
    /// config), its text values read when they hold a kubeconfig, and a ConfigMap's `resources`
    /// text (the function's config as kpt gives it) as the stream of objects it holds. `implied`
    /// is the kind a typed list (`SecretList`) leaves to its items.
    fn resource(
        &self,
        text: &str,
        node: &Node,
        implied: Option<&str>,
        out: &mut Vec<Range<usize>>,
    ) {
        let entries = match &node.value {
            Value::Seq(items) => {
                for item in items {
                    self.resource(text, item, implied, out);
                }
                return;
            }
            Value::Map(entries) => entries,
            Value::Scalar(_) => return,
        };
        let kind = node.get("kind").and_then(Node::as_str).or(implied);
        if is_kubeconfig(node) {
            kubeconfig(text, node, out);
        } else if kind == Some("Secret") {
            self.secret(text, node, out);
        } else {
            let item_kind = kind
                .and_then(|k| k.strip_suffix("List"))
                .filter(|k| !k.is_empty() && *k != "Resource");
            for (key, value) in entries {
                let items = key.as_str() == Some("items");
                self.resource(text, value, item_kind.filter(|_| items), out);
                // A kubeconfig kept as text in any object is one, wherever it is.
                if value
                    .as_str()
                    .is_some_and(|v| v.contains("users") || v.contains("clusters"))
                {
                    self.inside(
                        text,
                        value,
                        Unknown::Shown,
                        out,
                        |_, inner, docs, found| match docs {
                            [doc] if is_kubeconfig(&doc.root) => {
                                kubeconfig(inner, &doc.root, found);
                                true
                            }
                            _ => false,
                        },
                    );
                }
            }
            if kind == Some("ConfigMap") {
                for resources in paths(node, &["data", "resources"]) {
                    self.inside(text, resources, Unknown::Hidden, out, Self::documents);
                }
            }
        }
        for copy in paths(node, &["metadata", "annotations", LAST_APPLIED]) {
            self.inside(text, copy, Unknown::Hidden, out, Self::documents);
        }
    }

    fn secret(&self, text: &str, node: &Node, out: &mut Vec<Range<usize>>) {
        // Every `data` and `stringData`, a key given twice too: readers disagree on which counts.
        for section in ["stringData", "data"] {
            for entries in values(node, section).filter_map(Node::as_map) {
                self.section(text, section, entries, out);
            }
        }
    }

    fn section(
        &self,
        text: &str,
        section: &str,
        entries: &[(Node, Node)],
        out: &mut Vec<Range<usize>>,
    ) {
        for (key, value) in entries {
            if value.is_null() {
                continue;
            }
            // A key that is not text is no key the function knows: its value is hidden.
            let key = key.as_str().unwrap_or_default();
            if section == "data" {
                let public = is_public_key(key)
                    && value
                        .as_str()
                        .and_then(|v| b64::decode(v).ok())
                        .is_some_and(|(bytes, _)| {
                            String::from_utf8(bytes).is_ok_and(|s| userinfo(&s).is_none())
                        });
                if !public {
                    out.push(value_range(text, value));
                }
            } else if is_public_key(key) && value.scalar().is_some() {
                url_userinfo(text, value, out);
            } else {
                self.inside(
                    text,
                    value,
                    Unknown::Hidden,
                    out,
                    |_, inner, docs, found| match docs {
                        [doc] if is_kubeconfig(&doc.root) => {
                            kubeconfig(inner, &doc.root, found);
                            true
                        }
                        [doc] if is_cluster_config(&doc.root) => {
                            cluster_config(inner, &doc.root, found);
                            true
                        }
                        _ => false,
                    },
                );
            }
        }
    }

    /// Reads the text of the string `value` as YAML and lets `read` find the credentials in
    /// its documents; they are mapped back onto `text`. When the value is no string, is not
    /// YAML or `read` does not know what it holds, `unknown` says whether the whole value is
    /// hidden; when the ranges cannot be mapped back, it is.
    /// Every document of a text held in a value, read as the objects it holds.
    fn documents(&self, inner: &str, docs: &[Document], found: &mut Vec<Range<usize>>) -> bool {
        for doc in docs {
            self.resource(inner, &doc.root, None, found);
        }
        true
    }

    fn inside(
        &self,
        text: &str,
        value: &Node,
        unknown: Unknown,
        out: &mut Vec<Range<usize>>,
        read: impl FnOnce(&Self, &str, &[Document], &mut Vec<Range<usize>>) -> bool,
    ) {
        let hide = |out: &mut Vec<Range<usize>>| {
            if unknown == Unknown::Hidden {
                out.push(value_range(text, value));
            }
        };
        let Some(content) = value.as_str() else {
            return hide(out);
        };
        let Ok(docs) = parse_stream(content, self.limits) else {
            return hide(out);
        };
        let mut inner = Vec::new();
        if !read(self, content, &docs, &mut inner) {
            return hide(out);
        }
        inner.retain(|r| !r.is_empty());
        if inner.is_empty() {
            return;
        }
        match content_map(text, value) {
            Some(map) => out.extend(inner.into_iter().map(|r| map.range(r))),
            None => out.push(value_range(text, value)),
        }
    }
}

/// What becomes of a text value whose content the rule does not recognize.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unknown {
    /// Hidden whole: a Secret's value, a copy of an object.
    Hidden,
    /// Left as it is: any other object's text.
    Shown,
}

/// Every value of a mapping under `key`: a key given twice counts twice.
fn values<'n, 'a>(node: &'n Node<'a>, key: &'n str) -> impl Iterator<Item = &'n Node<'a>> + 'n {
    node.as_map()
        .unwrap_or_default()
        .iter()
        .filter(move |(k, _)| k.scalar().is_some_and(|s| s.text == key))
        .map(|(_, v)| v)
}

/// Every node at the end of a path of keys, through every key given twice.
fn paths<'n, 'a>(node: &'n Node<'a>, keys: &[&'n str]) -> Vec<&'n Node<'a>> {
    match keys.split_first() {
        None => vec![node],
        Some((key, rest)) => values(node, key).flat_map(|v| paths(v, rest)).collect(),
    }
}

/// `kind: Config`, or no kind and the lists only a kubeconfig has.
fn is_kubeconfig(node: &Node) -> bool {
    match node.get("kind").and_then(Node::as_str) {
        Some(kind) => kind == "Config",
        None => node.get("users").is_some() || node.get("clusters").is_some(),
    }
}

/// A mapping with a key of Argo CD's `ClusterConfig` at its root.
fn is_cluster_config(node: &Node) -> bool {
    node.as_map().is_some_and(|entries| {
        entries.iter().any(|(k, _)| {
            k.as_str()
                .is_some_and(|k| CLUSTER_CONFIG_FIELDS.iter().any(|f| f.name == k))
        })
    })
}

/// The `user:password` of a URL value.
fn url_userinfo(text: &str, value: &Node, out: &mut Vec<Range<usize>>) {
    let Some(info) = value.as_str().and_then(userinfo) else {
        return;
    };
    match content_map(text, value) {
        Some(map) => out.push(map.range(info)),
        None => out.push(value_range(text, value)),
    }
}

/// The values of an exec plugin's credential flags, in a list of arguments.
fn flag_values(text: &str, args: &Node, out: &mut Vec<Range<usize>>) {
    let Some(items) = args.as_seq() else { return };
    let words: Vec<&str> = items
        .iter()
        .map(|a| a.scalar().map_or("", |s| s.text.as_ref()))
        .collect();
    for (index, range) in credential_args(&words) {
        let node = &items[index];
        match content_map(text, node) {
            Some(map) => out.push(map.range(range)),
            None => out.push(value_range(text, node)),
        }
    }
}

// The walkers below read every copy of a key given twice: readers disagree on which counts.

/// A user's credentials, wherever they stand under `node` (a `user:` misplaced by a hand edit is
/// no login the function reads, but its token is still a token): every credential field
/// (`CREDENTIAL_USER_FIELDS`, whatever it holds, a value of the wrong type too), every `exec`'s
/// `env` values and credential flags, and an `auth-provider`'s settings (a removed login the
/// function refuses, whose settings are tokens and secrets).
fn user_credentials(text: &str, node: &Node, out: &mut Vec<Range<usize>>) {
    match &node.value {
        Value::Map(entries) => {
            for (key, value) in entries {
                match key.as_str() {
                    Some(k) if CREDENTIAL_USER_FIELDS.contains(&k) => {
                        if !value.is_null() {
                            out.push(value_range(text, value));
                        }
                        continue;
                    }
                    Some("exec") => {
                        for env in values(value, "env").filter_map(Node::as_seq).flatten() {
                            for v in values(env, "value").filter(|v| !v.is_null()) {
                                out.push(value_range(text, v));
                            }
                        }
                        for args in values(value, "args") {
                            flag_values(text, args, out);
                        }
                    }
                    Some("auth-provider") => {
                        for config in values(value, "config") {
                            every_value(text, config, out);
                        }
                    }
                    _ => {}
                }
                user_credentials(text, value, out);
            }
        }
        Value::Seq(items) => {
            for item in items {
                user_credentials(text, item, out);
            }
        }
        Value::Scalar(_) => {}
    }
}

fn kubeconfig(text: &str, root: &Node, out: &mut Vec<Range<usize>>) {
    let entries = |list: &'static str| {
        values(root, list)
            .filter_map(Node::as_seq)
            .flatten()
            .collect::<Vec<_>>()
    };
    for entry in entries("clusters") {
        for cluster in values(entry, "cluster") {
            for key in ["server", "proxy-url"] {
                for url in values(cluster, key) {
                    url_userinfo(text, url, out);
                }
            }
        }
    }
    user_credentials(text, root, out);
}

fn cluster_config(text: &str, root: &Node, out: &mut Vec<Range<usize>>) {
    for path in credential_paths() {
        match path.split_last() {
            Some((&"*", parent)) => {
                for map in paths(root, parent) {
                    every_value(text, map, out);
                }
            }
            _ => {
                for value in paths(root, &path).into_iter().filter(|v| !v.is_null()) {
                    out.push(value_range(text, value));
                }
            }
        }
    }
    for args in paths(root, &["execProviderConfig", "args"]) {
        flag_values(text, args, out);
    }
    for url in values(root, "proxyUrl") {
        url_userinfo(text, url, out);
    }
}

/// Every value of a mapping.
fn every_value(text: &str, map: &Node, out: &mut Vec<Range<usize>>) {
    if let Value::Map(entries) = &map.value {
        for (_, value) in entries {
            if !value.is_null() {
                out.push(value_range(text, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts of the ranges found in `text`.
    fn hidden(text: &str) -> Vec<&str> {
        credential_ranges(text, &Limits::default())
            .unwrap()
            .into_iter()
            .map(|r| &text[r])
            .collect()
    }

    /// What the lenient rule leaves visible of `text`: the text with each hidden range as `#`.
    fn shown_lenient(text: &str) -> String {
        let mut out = String::new();
        let mut at = 0;
        for r in credential_ranges_lenient(text, &Limits::default()) {
            out.push_str(&text[at..r.start]);
            out.push('#');
            at = r.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Regression (the playground hid the whole input on a syntax error, so the line the error
    /// named could not be seen): the documents that read keep the rule, the error's line shows
    /// up to its value, and nothing unread is shown.
    #[test]
    fn a_syntax_error_shows_its_line_and_hides_nothing_unread() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\nstringData:\n  token: first-secret\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n  labels: x: y\nstringData:\n  token: second-secret\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: c\nstringData:\n  token: third-secret\n";
        let shown = shown_lenient(text);
        for secret in ["first-secret", "second-secret", "third-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("  name: a\n"), "{shown}");
        assert!(shown.contains("  name: c\n"), "{shown}");
        assert!(shown.contains("stringData:\n  token: #"), "{shown}");
        // The line the error names shows its key.
        let error = credential_ranges(text, &Limits::default()).expect_err("not YAML");
        let line = text
            .lines()
            .nth(error.line().expect("a line") - 1)
            .expect("line");
        let key = &line[..=line.find(':').expect("a key")];
        assert!(shown.contains(key), "{key:?} in {shown}");
        assert!(
            shown.contains("  labels:#"),
            "the value of that line is hidden: {shown}"
        );
        assert!(
            !shown.contains("name: b"),
            "the rest of the broken document is hidden: {shown}"
        );
    }

    /// Regression (the playground showed a token a hand edit had moved out of `users[].user`,
    /// found once a YAML error no longer hid the whole input): a credential field anywhere in a
    /// kubeconfig is hidden.
    #[test]
    fn a_credential_field_anywhere_in_a_kubeconfig_is_hidden() {
        let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\nuser:\n  token: misplaced-token\n";
        assert_eq!(hidden(text), ["misplaced-token"]);
    }

    /// Regressions (an outside review): a prefix of a document that parses is not that
    /// document (kubectl writes `data` before `kind`), a line the error names may continue a
    /// quoted or plain scalar, and line breaks are the YAML reader's.
    #[test]
    fn nothing_of_a_broken_document_shows_but_a_plain_key() {
        for (text, secrets) in [
            (
                "apiVersion: v1\ndata:\n  value: c2VjcmV0LXZhbHVl\n bad: x\nkind: Secret\n",
                &["c2VjcmV0LXZhbHVl"][..],
            ),
            (
                "apiVersion: v1\r\ndata:\r\n  value: c2VjcmV0LXZhbHVl\r\n bad: x\r\nkind: Secret\r\n",
                &["c2VjcmV0LXZhbHVl"],
            ),
            (
                "apiVersion: v1\rdata:\r  value: c2VjcmV0LXZhbHVl\r bad: x\rkind: Secret\r",
                &["c2VjcmV0LXZhbHVl"],
            ),
            (
                "apiVersion: v1\u{2028}data:\u{2028}  value: c2VjcmV0LXZhbHVl\u{2028} bad: x\u{2028}kind: Secret\u{2028}",
                &["c2VjcmV0LXZhbHVl"],
            ),
            (
                "kind: Secret\nstringData:\n  config: '{\"bearerToken\": \"eyJhbGciOi\n    JIUzI1NiJ9.sig\", \"x\": 1",
                &["eyJhbGciOi", "JIUzI1NiJ9"],
            ),
            (
                "kind: Secret\nstringData:\n  password: \"abc\n  def:ghi",
                &["abc", "def"],
            ),
            (
                "kind: Secret\nstringData:\n  token: abcdef\n    ghijkl: mno\n",
                &["abcdef", "ghijkl", "mno"],
            ),
        ] {
            let shown = shown_lenient(text);
            for secret in secrets {
                assert!(!shown.contains(secret), "{secret} shown in {shown:?}");
            }
        }
    }

    #[test]
    fn a_misplaced_users_exec_env_and_auth_provider_are_hidden() {
        let text = "apiVersion: v1\nkind: Config\nuser:\n  exec:\n    command: x\n    env:\n    - name: SECRET\n      value: envsecret\n  auth-provider:\n    config:\n      refresh-token: rtok\n";
        assert_eq!(hidden(text), ["envsecret", "rtok"]);
    }

    #[test]
    fn an_error_line_without_a_key_and_json_are_hidden_past_what_reads() {
        let broken = "kind: Secret\nstringData:\n  token: abc\n  - tail-of-a-secret\n";
        assert!(!shown_lenient(broken).contains("tail-of-a-secret"));
        let json = "{\"stringData\": {\"token\": \"s3cret\",,}}";
        assert!(!shown_lenient(json).contains("s3cret"));
        assert_eq!(
            credential_ranges_lenient("a: b\n", &Limits::default()),
            Vec::<Range<usize>>::new(),
            "YAML without credentials"
        );
    }

    const CA: &str =
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";

    fn kubeconfig(user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://admin:hunter2@api:6443\n    certificate-authority-data: {CA}\nusers:\n- name: u\n  user:\n{user}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n"
        )
    }

    #[test]
    fn a_kubeconfig_hides_its_credentials_and_nothing_public() {
        let text = kubeconfig(
            "    token: eyJhbGciOiJSUzI1NiJ9.e30.sig\n    username: admin\n    password: \"pw\\\"1\"\n    client-key-data: S0VZ\n    client-certificate-data: Q0VSVA==\n    exec:\n      command: kubelogin\n      args: [get-token, --client-secret, s3cr3t, '--password=p4ss']\n      env:\n      - {name: AZURE_TENANT_ID, value: tenant}\n    auth-provider:\n      name: oidc\n      config: {id-token: idt, client-id: cid}",
        );
        assert_eq!(
            hidden(&text),
            vec![
                "admin:hunter2",
                "eyJhbGciOiJSUzI1NiJ9.e30.sig",
                "pw\\\"1",
                "S0VZ",
                "s3cr3t",
                "p4ss",
                "tenant",
                "idt",
                "cid"
            ]
        );
    }

    #[test]
    fn a_kubeconfig_in_string_data_hides_only_its_credentials() {
        let inner = kubeconfig("    token: u-abcde:xyz123");
        let block: String = inner.lines().map(|l| format!("    {l}\n")).collect();
        let secret = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c-kubeconfig\nstringData:\n  value: |\n{block}data:\n  token: Zm9v\n  ca.crt: {CA}\n"
        );
        assert_eq!(
            hidden(&secret),
            vec!["admin:hunter2", "u-abcde:xyz123", "Zm9v"]
        );
        // The same as JSON: the kubeconfig is a JSON string, its line breaks escaped.
        let json = format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"stringData\": {{\"value\": {}}}}}",
            serde_json::Value::from(inner.as_str())
        );
        assert_eq!(hidden(&json), vec!["admin:hunter2", "u-abcde:xyz123"]);
    }

    #[test]
    fn data_values_are_hidden_whole_unless_public() {
        let secret = format!(
            "kind: Secret\ndata:\n  value: {}\n  name: bmFtZQ==\n  server: {}\n  other: {}\n",
            b64::encode(kubeconfig("    token: t").as_bytes()),
            b64::encode(b"https://u:p@api"),
            b64::encode(b"anything")
        );
        let found = hidden(&secret);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(!found.contains(&"bmFtZQ=="));
    }

    #[test]
    fn an_argo_cd_config_hides_its_credentials() {
        let config = r#"{
  "password": "pw",
  "bearerToken": "tok",
  "tlsClientConfig": {"insecure": false, "caData": "Q0E=", "keyData": "S0VZ", "certData": "Q0VSVA=="},
  "execProviderConfig": {"command": "argocd-k8s-auth", "args": ["azure", "--client-secret=cs"], "env": {"A": "1", "B": "2"}},
  "proxyUrl": "http://proxy-user:proxy-pass@proxy:3128"
}"#;
        let block: String = config.lines().map(|l| format!("    {l}\n")).collect();
        let secret = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-x\n  labels:\n    argocd.argoproj.io/secret-type: cluster\nstringData:\n  name: x\n  server: https://x\n  config: |-\n{block}"
        );
        assert_eq!(
            hidden(&secret),
            vec!["pw", "tok", "S0VZ", "cs", "1", "2", "proxy-user:proxy-pass"]
        );
    }

    #[test]
    fn unknown_secret_values_and_last_applied_copies_are_hidden() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- kind: Secret\n  metadata:\n    annotations:\n      kubectl.kubernetes.io/last-applied-configuration: '{\"kind\":\"Secret\",\"stringData\":{\"token\":\"abc\"}}'\n  stringData:\n    token: abc\n    namespace: default\n- kind: ConfigMap\n  data:\n    token: visible\n";
        assert_eq!(hidden(text), vec!["abc", "abc"]);
    }

    #[test]
    fn inline_resources_of_the_config_and_values_of_the_wrong_type_are_hidden() {
        let secret = "kind: Secret\nstringData:\n  token: inline-token\n";
        let capi2argo = format!(
            "kind: ResourceList\nitems: []\nfunctionConfig:\n  kind: Capi2Argo\n  spec:\n    resources:\n    - {}\n",
            secret.trim_end().replace('\n', "\n      ")
        );
        assert_eq!(hidden(&capi2argo), vec!["inline-token"]);
        let config_map = format!(
            "kind: ResourceList\nitems: []\nfunctionConfig:\n  kind: ConfigMap\n  data:\n    resources: |\n      {}\n      ---\n      kind: Secret\n      data: {{token: dG9r}}\n",
            secret.trim_end().replace('\n', "\n      ")
        );
        assert_eq!(hidden(&config_map), vec!["inline-token", "dG9r"]);
        let wrong = kubeconfig("    token: [a, b]\n    password: {p: q}");
        assert_eq!(hidden(&wrong), vec!["admin:hunter2", "[a, b]", "{p: q}"]);
    }

    #[test]
    fn keys_given_twice_typed_lists_and_kubeconfigs_in_any_object_are_read() {
        let twice = "kind: Secret\nstringData:\n  token: first\nstringData:\n  token: second\n";
        assert_eq!(hidden(twice), vec!["first", "second"]);
        let user = kubeconfig("    token: one\n    token: two");
        assert_eq!(hidden(&user), vec!["admin:hunter2", "one", "two"]);
        let typed = "apiVersion: v1\nkind: SecretList\nitems:\n- metadata: {name: x}\n  data: {value: a3ViZWNvbmZpZw==}\n";
        assert_eq!(hidden(typed), vec!["a3ViZWNvbmZpZw=="]);
        let inner = kubeconfig("    token: in-a-configmap");
        let block: String = inner.lines().map(|l| format!("    {l}\n")).collect();
        let config_map =
            format!("kind: ConfigMap\ndata:\n  kubeconfig: |\n{block}  other: users of clusters\n");
        assert_eq!(hidden(&config_map), vec!["admin:hunter2", "in-a-configmap"]);
    }

    #[test]
    fn text_that_is_not_yaml_is_an_error() {
        assert!(credential_ranges("a: [", &Limits::default()).is_err());
    }
}
