//! Argo CD's glob (util/glob, on github.com/gobwas/glob compiled without separators): what an
//! AppProject's `destinationServiceAccounts` match a cluster's server and a namespace with.
//! `*` is any text, `?` any one character, `[abc]`, `[a-z]` and `[!abc]` one character of (or
//! not of) a class, `{a,b}` any of the alternatives (which may hold patterns themselves), and
//! `\` takes the next character as it is. A pattern that does not compile matches nothing, as
//! Argo CD's `MatchWithError` refuses it; where gobwas forgives (an alternative left open, a `\`
//! at the end), so does this. tests/projects.rs holds the two to each other.

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(Vec<Token>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    Any,
    One,
    Class {
        not: bool,
        ranges: Vec<(char, char)>,
    },
    Either(Vec<Vec<Token>>),
}

/// Why a pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GlobError(String);

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut at = 0;
        let tokens = sequence(&chars, &mut at, false)?;
        if at < chars.len() {
            return Err(GlobError(format!("unexpected {:?}", chars[at])));
        }
        Ok(Glob(tokens))
    }

    /// Whether `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        ends_at(&self.0, &text, 0).contains(&text.len())
    }

    /// Whether the pattern matches exactly one text (it holds no wildcard, class or
    /// alternative): that text.
    pub fn literal(&self) -> Option<String> {
        self.0
            .iter()
            .map(|t| match t {
                Token::Char(c) => Some(*c),
                _ => None,
            })
            .collect()
    }
}

/// Tokens up to the end, or (inside `{…}`) up to the `,` or `}` that ends an alternative.
fn sequence(chars: &[char], at: &mut usize, nested: bool) -> Result<Vec<Token>, GlobError> {
    let mut tokens = Vec::new();
    while let Some(&c) = chars.get(*at) {
        match c {
            ',' | '}' if nested => break,
            '*' => {
                *at += 1;
                if tokens.last() != Some(&Token::Any) {
                    tokens.push(Token::Any);
                }
            }
            '?' => {
                *at += 1;
                tokens.push(Token::One);
            }
            '[' => tokens.push(class(chars, at)?),
            '{' => {
                *at += 1;
                let mut alternatives = vec![sequence(chars, at, true)?];
                loop {
                    match chars.get(*at) {
                        Some(',') => {
                            *at += 1;
                            alternatives.push(sequence(chars, at, true)?);
                        }
                        Some('}') => {
                            *at += 1;
                            break;
                        }
                        // gobwas closes an alternative the pattern leaves open.
                        _ => break,
                    }
                }
                tokens.push(Token::Either(alternatives));
            }
            '\\' => {
                // A `\` that ends the pattern escapes nothing, and is dropped (as gobwas does).
                if let Some(escaped) = chars.get(*at + 1) {
                    tokens.push(Token::Char(*escaped));
                }
                *at += 2;
            }
            _ => {
                tokens.push(Token::Char(c));
                *at += 1;
            }
        }
    }
    Ok(tokens)
}

/// A class `[…]`, `at` on its `[`.
fn class(chars: &[char], at: &mut usize) -> Result<Token, GlobError> {
    *at += 1;
    let not = chars.get(*at) == Some(&'!');
    if not {
        *at += 1;
    }
    let mut ranges = Vec::new();
    loop {
        let c = *chars
            .get(*at)
            .ok_or_else(|| GlobError("unclosed [".into()))?;
        if c == ']' {
            *at += 1;
            break;
        }
        let c = if c == '\\' {
            *at += 1;
            *chars
                .get(*at)
                .ok_or_else(|| GlobError("unclosed [".into()))?
        } else {
            c
        };
        *at += 1;
        if chars.get(*at) == Some(&'-') {
            let end = *chars
                .get(*at + 1)
                .filter(|e| **e != ']')
                .ok_or_else(|| GlobError(format!("the range {c}- has no end")))?;
            if end < c {
                return Err(GlobError(format!("the range {c}-{end} is backwards")));
            }
            ranges.push((c, end));
            *at += 2;
        } else {
            ranges.push((c, c));
        }
    }
    if ranges.is_empty() {
        return Err(GlobError("an empty class []".into()));
    }
    Ok(Token::Class { not, ranges })
}

/// Every position in `text` at which `tokens`, started at `from`, can end.
fn ends_at(tokens: &[Token], text: &[char], from: usize) -> Vec<usize> {
    let mut ends = vec![from];
    for token in tokens {
        let mut next: Vec<usize> = Vec::new();
        for &at in &ends {
            match token {
                Token::Char(c) => {
                    if text.get(at) == Some(c) {
                        next.push(at + 1);
                    }
                }
                Token::One => {
                    if at < text.len() {
                        next.push(at + 1);
                    }
                }
                Token::Class { not, ranges } => {
                    if let Some(c) = text.get(at) {
                        let within = ranges.iter().any(|(a, b)| (a..=b).contains(&c));
                        if within != *not {
                            next.push(at + 1);
                        }
                    }
                }
                Token::Any => next.extend(at..=text.len()),
                Token::Either(alternatives) => {
                    for alternative in alternatives {
                        next.extend(ends_at(alternative, text, at));
                    }
                }
            }
        }
        next.sort_unstable();
        next.dedup();
        if next.is_empty() {
            return next;
        }
        ends = next;
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        Glob::new(pattern)
            .expect("the pattern compiles")
            .matches(text)
    }

    /// The cases of gobwas/glob's own tests that apply without separators, and Argo CD's
    /// (util/glob/glob_test.go, util/settings/impersonation_test.go).
    #[test]
    fn it_matches_as_argo_cds_glob_does() {
        assert!(m("*", ""));
        assert!(m("*", "https://kubernetes.default.svc"));
        assert!(m("https://*", "https://a.example:6443"));
        assert!(!m("https://*", "http://a.example"));
        assert!(
            m("*.example:6443", "https://a/b.example:6443"),
            "* crosses every character"
        );
        assert!(m("guestbook-?", "guestbook-1"));
        assert!(!m("guestbook-?", "guestbook-12"));
        assert!(m("team-[ab]", "team-a"));
        assert!(!m("team-[ab]", "team-c"));
        assert!(m("team-[!ab]", "team-c"));
        assert!(m("ns-[0-9]", "ns-7"));
        assert!(m("{dev,prod}-*", "prod-eu"));
        assert!(m("{dev,{pre,}prod}", "preprod"));
        assert!(m("{dev,{pre,}prod}", "prod"));
        assert!(!m("{dev,prod}", "test"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("", ""));
        assert!(!m("", "a"));
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_an_error() {
        for bad in ["[abc", "[a-]", "[]", "[z-a]"] {
            assert!(Glob::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_pattern_without_wildcards_is_its_one_text() {
        assert_eq!(
            Glob::new("guestbook").unwrap().literal().as_deref(),
            Some("guestbook")
        );
        assert_eq!(Glob::new("a\\*").unwrap().literal().as_deref(), Some("a*"));
        assert_eq!(Glob::new("guest*").unwrap().literal(), None);
        assert_eq!(Glob::new("{a}").unwrap().literal(), None);
    }
}
