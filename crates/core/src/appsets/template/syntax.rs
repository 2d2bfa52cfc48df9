//! What a template's text is read into: its [`Syntax`] (fasttemplate, or a Go template and its
//! `missingkey` option) and its parts — literal text, fasttemplate tags, Go pipelines of field
//! chains, literals and the functions computed. [`parse`](super::parse) makes them;
//! [`render`](super::render) and [`reads`](super::reads) read them.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

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
    pub(super) parts: Vec<Part>,
    pub(super) syntax: Syntax,
    /// Go template actions this module does not compute (a `range`, a variable, a call it does
    /// not know): the text's value is not computed, and it may read any parameter.
    pub(super) opaque: bool,
    /// fasttemplate refuses the text (a tag that never closes).
    pub(super) broken: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Text(String),
    /// fasttemplate: the tag as written (kept as `{{tag}}` when no string parameter has it).
    Tag(String),
    /// Go: a pipeline of commands.
    Pipeline(Vec<Command>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Arg {
    /// A field chain, by its keys.
    Field(Vec<String>),
    Str(String),
    Int(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Command {
    /// A field chain or a literal, alone.
    Value(Arg),
    /// A function and its arguments (the previous command's value comes last).
    Call(Func, Vec<Arg>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
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
    pub(super) fn named(name: &str) -> Option<Func> {
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

/// A flat key: `key` below the map at `path` (the root when empty).
pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
