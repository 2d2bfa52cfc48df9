//! Application names as the ApplicationSet controller renders them (applicationset/utils/utils.go,
//! `Render.Replace`): fasttemplate's `{{param}}` substitution, or a Go template, of which the
//! plain substitutions are computed here — field chains (`.name`, `.metadata.labels.env`),
//! `index` with literal keys, and a few pure string functions (`lower`, `upper`, `trim`,
//! `trimPrefix`, `trimSuffix`, `replace`, `trunc`, Argo CD's `normalize`). Anything else is said
//! to be beyond what a plan can compute, never guessed.

use std::collections::BTreeSet;

use super::params::{Lookup, Params};

/// A template's text, read once: what it renders to for given parameters, and which
/// parameters it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    /// Go template actions this module does not compute (a `range`, a variable, a call it does
    /// not know): the text's value is not computed, and it may read any parameter.
    opaque: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// fasttemplate: the tag as written (kept as `{{tag}}` when no string parameter has it).
    Tag(String),
    /// Go: a pipeline of commands.
    Pipeline(Vec<Command>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg {
    Field(String),
    Str(String),
    Int(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Command {
    /// A field chain or a literal, alone.
    Value(Arg),
    /// A function and its arguments (the previous command's value comes last).
    Call(Func, Vec<Arg>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Index,
    Lower,
    Upper,
    Trim,
    TrimPrefix,
    TrimSuffix,
    Replace,
    Trunc,
    Normalize,
}

impl Func {
    fn named(name: &str) -> Option<Func> {
        Some(match name {
            "index" => Func::Index,
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "trim" => Func::Trim,
            "trimPrefix" => Func::TrimPrefix,
            "trimSuffix" => Func::TrimSuffix,
            "replace" => Func::Replace,
            "trunc" => Func::Trunc,
            "normalize" => Func::Normalize,
            _ => return None,
        })
    }
}

/// What a template renders to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendered {
    /// The text, as the controller renders it.
    Text(String),
    /// It reads a parameter whose value the plan cannot know (another generator's: git, SCM,
    /// pull requests, a plugin) or that is missing, or it does what this module does not compute.
    NotComputed,
}

/// Which parameters a template reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// These parameters (flat keys; a key may be a map's prefix, such as `metadata.labels`).
    Keys(BTreeSet<String>),
    /// Any of them.
    Any,
}

impl Reads {
    /// Whether it reads the flat parameter `key` (or a map holding it, or a key below it).
    pub fn reads(&self, key: &str) -> bool {
        match self {
            Reads::Any => true,
            Reads::Keys(keys) => keys.iter().any(|k| {
                k == key
                    || key
                        .strip_prefix(k.as_str())
                        .is_some_and(|r| r.starts_with('.'))
                    || k.strip_prefix(key).is_some_and(|r| r.starts_with('.'))
            }),
        }
    }
}

impl Template {
    /// Reads `text` as the controller would: a Go template when `go`, else fasttemplate's tags.
    pub fn parse(text: &str, go: bool) -> Template {
        if go { parse_go(text) } else { parse_fast(text) }
    }

    /// A text whose value is never computed and which may read any parameter.
    pub fn opaque() -> Template {
        Template {
            parts: Vec::new(),
            opaque: true,
        }
    }

    /// The text for these parameters.
    pub fn render(&self, params: &Params) -> Rendered {
        if self.opaque {
            return Rendered::NotComputed;
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Tag(tag) => match params.get(tag.trim()) {
                    // fasttemplate keeps a tag no string parameter has, braces and all.
                    _ if tag.trim().is_empty() => out.push_str(&format!("{{{{{tag}}}}}")),
                    Lookup::Found(v) => out.push_str(v),
                    Lookup::Missing | Lookup::Map => out.push_str(&format!("{{{{{tag}}}}}")),
                    Lookup::Unknown => return Rendered::NotComputed,
                },
                Part::Pipeline(commands) => match pipeline(commands, params) {
                    Some(v) => out.push_str(&v),
                    None => return Rendered::NotComputed,
                },
            }
        }
        Rendered::Text(out)
    }

    /// The parameters it reads.
    pub fn reads(&self) -> Reads {
        if self.opaque {
            return Reads::Any;
        }
        let mut keys = BTreeSet::new();
        for part in &self.parts {
            match part {
                Part::Text(_) => {}
                Part::Tag(tag) => {
                    keys.insert(tag.trim().to_string());
                }
                Part::Pipeline(commands) => {
                    for (i, command) in commands.iter().enumerate() {
                        match command {
                            Command::Value(arg) => keys.extend(field(arg)),
                            // `index .metadata.labels "env"` reads that one label.
                            Command::Call(Func::Index, args) if i == 0 => match index_key(args) {
                                Some(key) => {
                                    keys.insert(key);
                                }
                                None => keys.extend(args.iter().filter_map(field)),
                            },
                            Command::Call(_, args) => keys.extend(args.iter().filter_map(field)),
                        }
                    }
                }
            }
        }
        Reads::Keys(keys)
    }
}

fn field(arg: &Arg) -> Option<String> {
    match arg {
        Arg::Field(f) => Some(f.clone()),
        _ => None,
    }
}

/// `index .a.b "k" "l"`: the flat key `a.b.k.l`, when every key is a literal.
fn index_key(args: &[Arg]) -> Option<String> {
    let (Arg::Field(base), keys) = args.split_first()? else {
        return None;
    };
    let mut key = base.clone();
    for k in keys {
        let Arg::Str(k) = k else { return None };
        if !key.is_empty() {
            key.push('.');
        }
        key.push_str(k);
    }
    Some(key)
}

/// fasttemplate with `{{` and `}}`: text between tags as it is; an unclosed tag is an error to
/// fasttemplate, which fails the render (not computed).
fn parse_fast(text: &str) -> Template {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        if start > 0 {
            parts.push(Part::Text(rest[..start].to_string()));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Template {
                parts,
                opaque: true,
            };
        };
        parts.push(Part::Tag(after[..end].to_string()));
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    Template {
        parts,
        opaque: false,
    }
}

/// A Go template: literal text, and actions whose pipelines this module computes; any other
/// action makes the template opaque.
fn parse_go(text: &str) -> Template {
    let opaque = Template {
        parts: Vec::new(),
        opaque: true,
    };
    let mut parts: Vec<Part> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let mut literal = rest[..start].to_string();
        let mut action = &rest[start + 2..];
        // `{{- ` trims the white space before the action; ` -}}` the white space after it.
        if let Some(trimmed) = action.strip_prefix("- ") {
            literal.truncate(literal.trim_end().len());
            action = trimmed;
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        let Some(end) = action.find("}}") else {
            return opaque;
        };
        let mut body = &action[..end];
        rest = &action[end + 2..];
        if let Some(b) = body.strip_suffix(" -") {
            body = b;
            rest = rest.trim_start();
        }
        if body.trim_start().starts_with("/*") {
            continue;
        }
        match parse_pipeline(body) {
            Some(commands) => parts.push(Part::Pipeline(commands)),
            None => return opaque,
        }
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    Template {
        parts,
        opaque: false,
    }
}

/// `cmd | cmd | …`, each command a field chain, a literal or a known function with arguments.
fn parse_pipeline(body: &str) -> Option<Vec<Command>> {
    let tokens = tokens(body)?;
    let mut commands = Vec::new();
    for command in tokens.split(|t| *t == Token::Pipe) {
        let (head, args) = command.split_first()?;
        let args: Vec<Arg> = args.iter().map(Token::arg).collect::<Option<_>>()?;
        let command = match head {
            Token::Ident(name) => Command::Call(Func::named(name)?, args),
            other if args.is_empty() && commands.is_empty() => Command::Value(other.arg()?),
            _ => return None,
        };
        commands.push(command);
    }
    (!commands.is_empty()).then_some(commands)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Field(String),
    Str(String),
    Int(i64),
    Ident(String),
    Pipe,
}

impl Token {
    fn arg(&self) -> Option<Arg> {
        match self {
            Token::Field(f) => Some(Arg::Field(f.clone())),
            Token::Str(s) => Some(Arg::Str(s.clone())),
            Token::Int(i) => Some(Arg::Int(*i)),
            _ => None,
        }
    }
}

/// The tokens of an action; `None` for anything beyond field chains, literals, identifiers and
/// pipes (variables, parentheses, keywords the controller would evaluate as control structure).
fn tokens(body: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = body.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '|' {
            out.push(Token::Pipe);
            i += 1;
        } else if c == '.' || (c == '$' && chars.get(i + 1) == Some(&'.')) {
            if c == '$' {
                i += 1;
            }
            let mut path = Vec::new();
            while chars.get(i) == Some(&'.') {
                let start = i + 1;
                i = start;
                while i < chars.len() && word(chars[i]) {
                    i += 1;
                }
                if i == start {
                    // `.` alone is the whole parameter map.
                    return None;
                }
                path.push(chars[start..i].iter().collect::<String>());
            }
            out.push(Token::Field(path.join(".")));
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i)? {
                    '"' => break,
                    '\\' => {
                        i += 1;
                        s.push(match chars.get(i)? {
                            'n' => '\n',
                            't' => '\t',
                            '\\' => '\\',
                            '"' => '"',
                            _ => return None,
                        });
                    }
                    other => s.push(*other),
                }
                i += 1;
            }
            i += 1;
            out.push(Token::Str(s));
        } else if c == '`' {
            let end = chars[i + 1..].iter().position(|&c| c == '`')? + i + 1;
            out.push(Token::Str(chars[i + 1..end].iter().collect()));
            i = end + 1;
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if chars.get(i).is_some_and(|c| word(*c) || *c == '.') {
                return None;
            }
            out.push(Token::Int(
                chars[start..i].iter().collect::<String>().parse().ok()?,
            ));
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            out.push(Token::Ident(name));
        } else {
            return None;
        }
    }
    Some(out)
}

/// A pipeline's value, when every command in it is computed.
fn pipeline(commands: &[Command], params: &Params) -> Option<String> {
    let mut value: Option<String> = None;
    for command in commands {
        value = Some(match command {
            Command::Value(arg) => arg_text(arg, params)?,
            Command::Call(func, args) => call(*func, args, value.take(), params)?,
        });
    }
    value
}

fn arg_text(arg: &Arg, params: &Params) -> Option<String> {
    match arg {
        Arg::Field(f) => match params.get(f) {
            Lookup::Found(v) => Some(v.to_string()),
            _ => None,
        },
        Arg::Str(s) => Some(s.clone()),
        Arg::Int(_) => None,
    }
}

/// A function of the ones computed, as sprig (and Argo CD, for `normalize`) define it; the
/// piped value, when there is one, is its last argument.
fn call(func: Func, args: &[Arg], piped: Option<String>, params: &Params) -> Option<String> {
    if func == Func::Index {
        if piped.is_some() {
            return None;
        }
        return match params.get(&index_key(args)?) {
            Lookup::Found(v) => Some(v.to_string()),
            _ => None,
        };
    }
    let mut texts: Vec<String> = Vec::new();
    let mut ints: Vec<i64> = Vec::new();
    for a in args {
        match a {
            Arg::Int(i) => ints.push(*i),
            other => texts.push(arg_text(other, params)?),
        }
    }
    texts.extend(piped);
    let one = |texts: &[String]| (texts.len() == 1 && ints.is_empty()).then(|| texts[0].clone());
    match func {
        Func::Index => None,
        Func::Lower => one(&texts).map(|s| s.to_lowercase()),
        Func::Upper => one(&texts).map(|s| s.to_uppercase()),
        Func::Trim => one(&texts).map(|s| s.trim().to_string()),
        Func::Normalize => one(&texts).map(|s| sanitize_name(&s)),
        Func::TrimPrefix | Func::TrimSuffix if texts.len() == 2 && ints.is_empty() => {
            let (cut, s) = (&texts[0], &texts[1]);
            Some(if func == Func::TrimPrefix {
                s.strip_prefix(cut.as_str()).unwrap_or(s).to_string()
            } else {
                s.strip_suffix(cut.as_str()).unwrap_or(s).to_string()
            })
        }
        Func::Replace if texts.len() == 3 && ints.is_empty() => {
            let (old, new, s) = (&texts[0], &texts[1], &texts[2]);
            Some(go_replace_all(s, old, new))
        }
        Func::Trunc if texts.len() == 1 && ints.len() == 1 => Some(trunc(ints[0], &texts[0])),
        _ => None,
    }
}

/// Go's `strings.Replace(s, old, new, -1)`: an empty `old` inserts `new` around every character.
fn go_replace_all(s: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut out = String::from(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    s.replace(old, new)
}

/// sprig's `trunc`: the first `n` bytes, or for a negative `n` the last; the text as it is when
/// shorter. A cut inside a character is what Go would print as an invalid byte: not computed.
fn trunc(n: i64, s: &str) -> String {
    let len = s.len() as i64;
    let cut = if n < 0 && len + n > 0 {
        s.get((len + n) as usize..)
    } else if n >= 0 && len > n {
        s.get(..n as usize)
    } else {
        Some(s)
    };
    cut.unwrap_or(s).to_string()
}

/// Argo CD's `SanitizeName` (applicationset/utils/template_functions.go): lowercase, every
/// character other than `-`, `a-z`, `0-9` and `.` becomes `-`, at most 253 characters, no `-`
/// or `.` at either end. The cluster generator's `nameNormalized` and the `normalize` function.
pub fn sanitize_name(name: &str) -> String {
    let mut out: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c == '-' || c == '.' || c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    out.truncate(253);
    out.trim_matches(|c| c == '-' || c == '.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params::known(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    fn text(template: &str, go: bool, p: &Params) -> Rendered {
        Template::parse(template, go).render(p)
    }

    #[test]
    fn fasttemplate_substitutes_trimmed_tags_and_keeps_the_rest() {
        let p = params(&[("name", "prod"), ("metadata.labels.env", "eu")]);
        assert_eq!(
            text("{{name}}-{{ metadata.labels.env }}-{{missing}}", false, &p),
            Rendered::Text("prod-eu-{{missing}}".into())
        );
        assert_eq!(text("{{name", false, &p), Rendered::NotComputed);
    }

    #[test]
    fn go_templates_compute_plain_substitutions_only() {
        let p = params(&[
            ("name", "Prod_01"),
            ("metadata.labels.app.kubernetes.io/part-of", "shop"),
        ]);
        let cases = [
            ("{{.name}}-guestbook", Some("Prod_01-guestbook")),
            ("{{ .name | normalize }}", Some("prod-01")),
            ("{{- .name | lower -}} x", Some("prod_01x")),
            (
                "{{index .metadata.labels \"app.kubernetes.io/part-of\"}}-{{.name}}",
                Some("shop-Prod_01"),
            ),
            ("{{ trunc 3 .name }}", Some("Pro")),
            ("{{ .name | trimSuffix \"_01\" }}", Some("Prod")),
            ("{{ replace \"_\" \"-\" .name }}", Some("Prod-01")),
            ("{{ .missing }}", None),
            ("{{ range .x }}a{{ end }}", None),
            ("{{ $x := .name }}{{ $x }}", None),
            ("{{ printf \"%s\" .name }}", None),
        ];
        for (template, want) in cases {
            let got = text(template, true, &p);
            let want = want.map_or(Rendered::NotComputed, |w| Rendered::Text(w.into()));
            assert_eq!(got, want, "{template}");
        }
    }

    #[test]
    fn what_a_template_reads() {
        let reads = Template::parse(
            "{{.path.basename}}-{{ index .metadata.labels \"env\" }}",
            true,
        )
        .reads();
        assert!(reads.reads("path.basename"));
        assert!(reads.reads("metadata.labels.env"));
        assert!(!reads.reads("name"));
        assert!(!reads.reads("metadata.labels.team"));
        assert_eq!(
            Template::parse("{{ range . }}{{ end }}", true).reads(),
            Reads::Any
        );
        assert!(Template::parse("{{name}}-x", false).reads().reads("name"));
    }

    #[test]
    fn sanitize_name_is_argo_cds() {
        // applicationset/generators/cluster_test.go: "production_01/west" → "production-01-west".
        assert_eq!(sanitize_name("production_01/west"), "production-01-west");
        assert_eq!(sanitize_name("-.Ab.C-"), "ab.c");
        assert_eq!(sanitize_name(&"a".repeat(300)).len(), 253);
    }
}
