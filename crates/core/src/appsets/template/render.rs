//! What a template renders to for a parameter set: fasttemplate's substitution, or Go's
//! text/template evaluation of the pipelines the language computes (field chains, `index`, and
//! a few pure string functions), bounded in length.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use super::syntax::{Arg, Command, Func, Missing, Part, Syntax, Template, join};
use crate::appsets::params::{Lookup, Params};

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
