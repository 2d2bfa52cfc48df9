//! Reading a template's text as the controller does: fasttemplate's tags, or a Go template's
//! literal text and actions, each action's pipeline tokenized and read when it is one the
//! language computes; any other makes the template opaque.

use super::syntax::{Arg, Command, Func, Part, Syntax, Template};

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
