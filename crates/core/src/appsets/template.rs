//! Application names as the ApplicationSet controller renders them (applicationset/utils/utils.go,
//! `Render.Replace`): fasttemplate's `{{param}}` substitution, or a Go template, of which the
//! plain substitutions are computed here — field chains (`.name`, `.metadata.labels.env`),
//! `index` with literal keys, and a few pure string functions (`lower`, `upper`, `trim`,
//! `trimPrefix`, `trimSuffix`, `replace`, `trunc`, Argo CD's `normalize`). Anything else is said
//! to be beyond what a plan can compute, never guessed.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use std::collections::BTreeSet;

use super::params::{Lookup, Params};

/// How a template's text is read: fasttemplate's tags, or a Go template with the
/// ApplicationSet's `goTemplateOptions` that matter to a name (`missingkey=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Fast,
    Go { missing: Missing },
}

/// Go's `missingkey` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// `default` (or `invalid`): a missing key prints `<no value>`.
    NoValue,
    /// `zero`: the element type's zero value (not computed here).
    Zero,
    /// `error`: a missing key fails the template.
    Error,
}

impl Syntax {
    /// The syntax of an ApplicationSet's templates: `goTemplate` and its `goTemplateOptions`.
    pub fn of(go: bool, options: &[String]) -> Syntax {
        if !go {
            return Syntax::Fast;
        }
        let missing = options
            .iter()
            .rev()
            .find_map(|o| match o.trim() {
                "missingkey=error" => Some(Missing::Error),
                "missingkey=zero" => Some(Missing::Zero),
                "missingkey=default" | "missingkey=invalid" => Some(Missing::NoValue),
                _ => None,
            })
            .unwrap_or(Missing::NoValue);
        Syntax::Go { missing }
    }
}

/// A template's text, read once: what it renders to for given parameters, and which
/// parameters it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    syntax: Syntax,
    /// Go template actions this module does not compute (a `range`, a variable, a call it does
    /// not know): the text's value is not computed, and it may read any parameter.
    opaque: bool,
    /// fasttemplate refuses the text (a tag that never closes).
    broken: bool,
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
    /// A field chain, by its keys.
    Field(Vec<String>),
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
    /// pull requests, a plugin), or it does what this module does not compute.
    NotComputed,
    /// The controller's renderer fails on it (a missing key with `missingkey=error`, `index` of
    /// nothing, a value of the wrong type): the ApplicationSet generates nothing.
    Failed(String),
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

/// A value met while evaluating a Go pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Text(String),
    Int(i64),
    /// A map of the parameters (its flat path), of strings or of anything.
    Map {
        path: String,
        strings: bool,
    },
    /// Nothing: a missing key (printed `<no value>`).
    Nil,
}

/// Why a pipeline has no value.
enum Stop {
    NotComputed,
    Failed(String),
}

impl Template {
    /// Reads `text` as the controller would.
    pub fn parse(text: &str, syntax: Syntax) -> Template {
        match syntax {
            Syntax::Fast => parse_fast(text),
            Syntax::Go { .. } => parse_go(text, syntax),
        }
    }

    /// A text whose value is never computed and which may read any parameter.
    pub fn opaque() -> Template {
        Template {
            parts: Vec::new(),
            syntax: Syntax::Fast,
            opaque: true,
            broken: false,
        }
    }

    /// The text for these parameters.
    pub fn render(&self, params: &Params) -> Rendered {
        if self.broken {
            return Rendered::Failed("fasttemplate: cannot find end tag".into());
        }
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
                    Lookup::Missing | Lookup::Map { .. } => out.push_str(&format!("{{{{{tag}}}}}")),
                    Lookup::Unknown => return Rendered::NotComputed,
                },
                Part::Pipeline(commands) => match self.pipeline(commands, params) {
                    Ok(Val::Text(v)) => out.push_str(&v),
                    Ok(Val::Int(i)) => out.push_str(&i.to_string()),
                    Ok(Val::Nil) => out.push_str("<no value>"),
                    // Go prints a map as `map[k:v …]`: not a name anyone writes on purpose.
                    Ok(Val::Map { .. }) | Err(Stop::NotComputed) => return Rendered::NotComputed,
                    Err(Stop::Failed(why)) => return Rendered::Failed(why),
                },
            }
            if out.len() > MAX_RENDERED {
                return Rendered::NotComputed;
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

    fn missing(&self) -> Missing {
        match self.syntax {
            Syntax::Go { missing } => missing,
            Syntax::Fast => Missing::NoValue,
        }
    }

    /// A pipeline's value, as Go's text/template evaluates it.
    fn pipeline(&self, commands: &[Command], params: &Params) -> Result<Val, Stop> {
        let mut value: Option<Val> = None;
        for command in commands {
            value = Some(match command {
                Command::Value(arg) => self.arg(arg, params)?,
                Command::Call(func, args) => self.call(*func, args, value.take(), params)?,
            });
        }
        value.ok_or(Stop::NotComputed)
    }

    fn arg(&self, arg: &Arg, params: &Params) -> Result<Val, Stop> {
        match arg {
            Arg::Field(keys) => self.walk(keys, params),
            Arg::Str(s) => Ok(Val::Text(s.clone())),
            Arg::Int(i) => Ok(Val::Int(*i)),
        }
    }

    /// A field chain from the parameters' root: each key looked up in the map before it; a
    /// missing key is nothing, or an error with `missingkey=error`; a key of a string an error.
    fn walk(&self, keys: &[String], params: &Params) -> Result<Val, Stop> {
        let mut at = Val::Map {
            path: String::new(),
            strings: false,
        };
        for key in keys {
            at = match at {
                Val::Map { path, .. } => {
                    let path = join(&path, key);
                    match params.get(&path) {
                        Lookup::Found(v) => Val::Text(v.to_string()),
                        Lookup::Map { strings } => Val::Map { path, strings },
                        Lookup::Unknown => return Err(Stop::NotComputed),
                        Lookup::Missing => match self.missing() {
                            Missing::Error => {
                                return Err(Stop::Failed(format!(
                                    "map has no entry for key {key:?}"
                                )));
                            }
                            Missing::Zero => return Err(Stop::NotComputed),
                            Missing::NoValue => Val::Nil,
                        },
                    }
                }
                Val::Nil => match self.missing() {
                    Missing::Error => {
                        return Err(Stop::Failed(format!("nil data; no entry for key {key:?}")));
                    }
                    _ => Val::Nil,
                },
                Val::Text(_) | Val::Int(_) => {
                    return Err(Stop::Failed(format!(
                        "can't evaluate field {key} in type interface {{}}"
                    )));
                }
            };
        }
        Ok(at)
    }

    /// A function of the ones computed, as Go's builtins and sprig (and Argo CD, for
    /// `normalize`) define it; the piped value, when there is one, is its last argument.
    fn call(
        &self,
        func: Func,
        args: &[Arg],
        piped: Option<Val>,
        params: &Params,
    ) -> Result<Val, Stop> {
        let mut vals = args
            .iter()
            .map(|a| self.arg(a, params))
            .collect::<Result<Vec<Val>, Stop>>()?;
        vals.extend(piped);
        if func == Func::Index {
            return index(vals, params);
        }
        let text = |v: &Val| match v {
            Val::Text(s) => Ok(s.clone()),
            Val::Nil => Err(Stop::Failed("invalid value; expected string".into())),
            Val::Int(i) => Err(Stop::Failed(format!("expected string; found {i}"))),
            Val::Map { .. } => Err(Stop::Failed("wrong type for value; expected string".into())),
        };
        let arity = |n: usize| {
            if vals.len() == n {
                Ok(())
            } else {
                Err(Stop::Failed(format!(
                    "wrong number of args: want {n} got {}",
                    vals.len()
                )))
            }
        };
        Ok(Val::Text(match func {
            Func::Index => unreachable!("index is handled above"),
            Func::Lower | Func::Upper | Func::Trim | Func::Normalize => {
                arity(1)?;
                let s = text(&vals[0])?;
                // Go maps case and space rune by rune with its own tables: ASCII text is
                // computed, the rest is not.
                if func != Func::Normalize && !s.is_ascii() {
                    return Err(Stop::NotComputed);
                }
                match func {
                    Func::Lower => s.to_ascii_lowercase(),
                    Func::Upper => s.to_ascii_uppercase(),
                    Func::Trim => s
                        .trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b')
                        .to_string(),
                    _ => sanitize_name(&s),
                }
            }
            Func::TrimPrefix | Func::TrimSuffix => {
                arity(2)?;
                let (cut, s) = (text(&vals[0])?, text(&vals[1])?);
                if func == Func::TrimPrefix {
                    s.strip_prefix(cut.as_str()).unwrap_or(&s).to_string()
                } else {
                    s.strip_suffix(cut.as_str()).unwrap_or(&s).to_string()
                }
            }
            Func::Replace => {
                arity(3)?;
                let (old, new, s) = (text(&vals[0])?, text(&vals[1])?, text(&vals[2])?);
                go_replace_all(&s, &old, &new).ok_or(Stop::NotComputed)?
            }
            Func::Trunc => {
                arity(2)?;
                let Val::Int(n) = vals[0] else {
                    return Err(Stop::Failed("expected integer".into()));
                };
                trunc(n, &text(&vals[1])?).ok_or(Stop::NotComputed)?
            }
        }))
    }
}

/// Go's builtin `index`: each key looked up in the map before it; a missing key is the map's
/// zero value (`""` in a map of strings, nothing in a map of anything); nothing or a string
/// cannot be indexed.
fn index(mut vals: Vec<Val>, params: &Params) -> Result<Val, Stop> {
    if vals.is_empty() {
        return Err(Stop::Failed("wrong number of args for index".into()));
    }
    let keys = vals.split_off(1);
    let mut at = vals.remove(0);
    for key in keys {
        let Val::Text(key) = key else {
            return Err(Stop::NotComputed);
        };
        at = match at {
            Val::Map { path, strings } => {
                let path = join(&path, &key);
                match params.get(&path) {
                    Lookup::Found(v) => Val::Text(v.to_string()),
                    Lookup::Map { strings } => Val::Map { path, strings },
                    Lookup::Unknown => return Err(Stop::NotComputed),
                    Lookup::Missing if strings => Val::Text(String::new()),
                    Lookup::Missing => Val::Nil,
                }
            }
            Val::Nil => {
                return Err(Stop::Failed(
                    "error calling index: index of untyped nil".into(),
                ));
            }
            Val::Text(_) | Val::Int(_) => {
                return Err(Stop::Failed(
                    "error calling index: can't index item of type string".into(),
                ));
            }
        };
    }
    Ok(at)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn field(arg: &Arg) -> Option<String> {
    match arg {
        Arg::Field(keys) => Some(keys.join(".")),
        _ => None,
    }
}

/// `index .a.b "k" "l"`: the flat key `a.b.k.l`, when every key is a literal.
fn index_key(args: &[Arg]) -> Option<String> {
    let (Arg::Field(base), keys) = args.split_first()? else {
        return None;
    };
    let mut key = base.join(".");
    for k in keys {
        let Arg::Str(k) = k else { return None };
        key = join(&key, k);
    }
    Some(key)
}

/// fasttemplate with `{{` and `}}`, as `Render.Replace` calls it: a text with no line holding
/// `{{` and then `}}` is not a template at all (its `isTemplatedRegex`); else text between tags
/// as it is, and a tag that never closes fails the render.
fn parse_fast(text: &str) -> Template {
    let mut template = Template {
        parts: Vec::new(),
        syntax: Syntax::Fast,
        opaque: false,
        broken: false,
    };
    let templated = text
        .lines()
        .any(|l| l.find("{{").is_some_and(|at| l[at + 2..].contains("}}")));
    if !templated {
        template.parts.push(Part::Text(text.to_string()));
        return template;
    }
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        if start > 0 {
            template.parts.push(Part::Text(rest[..start].to_string()));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            template.broken = true;
            return template;
        };
        template.parts.push(Part::Tag(after[..end].to_string()));
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        template.parts.push(Part::Text(rest.to_string()));
    }
    template
}

/// What Go's trim markers (`{{- `, ` -}}`) trim.
const GO_SPACE: &[char] = &[' ', '\t', '\r', '\n'];

/// A Go template: literal text, and actions whose pipelines this module computes; any other
/// action makes the template opaque.
fn parse_go(text: &str, syntax: Syntax) -> Template {
    let opaque = Template {
        parts: Vec::new(),
        syntax,
        opaque: true,
        broken: false,
    };
    let mut parts: Vec<Part> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let mut literal = rest[..start].to_string();
        let mut action = &rest[start + 2..];
        // `{{- ` trims the white space before the action; ` -}}` the white space after it.
        if let Some(trimmed) = action.strip_prefix("- ") {
            literal.truncate(literal.trim_end_matches(GO_SPACE).len());
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
            rest = rest.trim_start_matches(GO_SPACE);
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
        syntax,
        opaque: false,
        broken: false,
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
    Field(Vec<String>),
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
    // Go's lexer: space is ' ', \t, \r, \n; an identifier's letters may be any Unicode letter,
    // but only ASCII ones are read here (others leave the template not computed).
    let space = |c: char| matches!(c, ' ' | '\t' | '\r' | '\n');
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        if space(c) {
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
            // A field chain ends at white space, a pipe or the action's end; anything else
            // (`-`, `/`) is Go's syntax error or beyond this module.
            if chars
                .get(i)
                .is_some_and(|c| !c.is_whitespace() && *c != '|')
            {
                return None;
            }
            out.push(Token::Field(path));
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
        } else if c.is_ascii_alphabetic() {
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

/// Go's `strings.Replace(s, old, new, -1)`: an empty `old` inserts `new` around every
/// character. A result longer than [`MAX_RENDERED`] is not computed (`None`): a few chained
/// replaces would otherwise grow past any memory.
fn go_replace_all(s: &str, old: &str, new: &str) -> Option<String> {
    let inserts = if old.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(old).count()
    };
    if s.len().saturating_add(inserts.saturating_mul(new.len())) > MAX_RENDERED {
        return None;
    }
    if old.is_empty() {
        let mut out = String::from(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return Some(out);
    }
    Some(s.replace(old, new))
}

/// The longest text a template is rendered to: far past any name (253 characters) or value a
/// selector compares; a longer one is not computed.
const MAX_RENDERED: usize = 64 * 1024;

/// sprig's `trunc`: the first `n` bytes, or for a negative `n` the last; the text as it is when
/// shorter. A cut inside a character is what Go would print as an invalid byte: not computed.
fn trunc(n: i64, s: &str) -> Option<String> {
    let len = s.len() as i64;
    let cut = if n < 0 && len + n > 0 {
        s.get((len + n) as usize..)
    } else if n >= 0 && len > n {
        s.get(..n as usize)
    } else {
        Some(s)
    };
    cut.map(String::from)
}

/// Argo CD's `SanitizeName` (applicationset/utils/template_functions.go): lowercase, every
/// character other than `-`, `a-z`, `0-9` and `.` becomes `-`, at most 253 characters, no `-`
/// or `.` at either end. The cluster generator's `nameNormalized` and the `normalize` function.
pub fn sanitize_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('-' | '.' | 'a'..='z' | '0'..='9') => c,
            // The only runes Go's unicode.ToLower takes into ASCII: the Kelvin sign and the
            // dotted capital I.
            '\u{212A}' => 'k',
            '\u{0130}' => 'i',
            _ => '-',
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

    const GO: Syntax = Syntax::Go {
        missing: Missing::NoValue,
    };

    fn text(template: &str, go: bool, p: &Params) -> Rendered {
        let syntax = if go { GO } else { Syntax::Fast };
        Template::parse(template, syntax).render(p)
    }

    #[test]
    fn fasttemplate_substitutes_trimmed_tags_and_keeps_the_rest() {
        let p = params(&[("name", "prod"), ("metadata.labels.env", "eu")]);
        assert_eq!(
            text("{{name}}-{{ metadata.labels.env }}-{{missing}}", false, &p),
            Rendered::Text("prod-eu-{{missing}}".into())
        );
        // Not a template at all to Argo CD: no line has `{{` and then `}}`.
        assert_eq!(text("{{name", false, &p), Rendered::Text("{{name".into()));
        assert!(matches!(
            text("{{name}} {{x", false, &p),
            Rendered::Failed(_)
        ));
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
            ("{{ .missing }}", Some("<no value>")),
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

    /// Regression: `replace ""` chained three times over a name asked for gigabytes (an
    /// ApplicationSet could take the controller down).
    #[test]
    fn chained_replaces_of_nothing_stop_at_the_bound() {
        let big = "x".repeat(2000);
        let template = format!(
            "{{{{ .name | replace \"\" \"{big}\" | replace \"\" \"{big}\" | replace \"\" \"{big}\" }}}}"
        );
        let p = params(&[("name", "prod")]);
        assert_eq!(text(&template, true, &p), Rendered::NotComputed);
        let once = format!("{{{{ .name | replace \"\" \"{big}\" }}}}");
        assert!(matches!(text(&once, true, &p), Rendered::Text(t) if t.len() == 5 * 2000 + 4));
    }

    #[test]
    fn what_a_template_reads() {
        let reads = Template::parse(
            "{{.path.basename}}-{{ index .metadata.labels \"env\" }}",
            GO,
        )
        .reads();
        assert!(reads.reads("path.basename"));
        assert!(reads.reads("metadata.labels.env"));
        assert!(!reads.reads("name"));
        assert!(!reads.reads("metadata.labels.team"));
        assert_eq!(
            Template::parse("{{ range . }}{{ end }}", GO).reads(),
            Reads::Any
        );
        assert!(
            Template::parse("{{name}}-x", Syntax::Fast)
                .reads()
                .reads("name")
        );
    }

    #[test]
    fn sanitize_name_is_argo_cds() {
        // applicationset/generators/cluster_test.go: "production_01/west" → "production-01-west".
        assert_eq!(sanitize_name("production_01/west"), "production-01-west");
        assert_eq!(sanitize_name("-.Ab.C-"), "ab.c");
        assert_eq!(sanitize_name(&"a".repeat(300)).len(), 253);
        // Go's strings.ToLower maps rune by rune (unicode.ToLower): the dotted capital I and the
        // Kelvin sign become ASCII letters, every other non-ASCII rune a `-`.
        assert_eq!(sanitize_name("\u{130}stanbul-\u{212A}"), "istanbul-k");
        assert_eq!(sanitize_name("Straße Ä"), "stra-e");
    }
}
