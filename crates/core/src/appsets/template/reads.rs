//! Which parameters a template reads: what a changed parameter set can change of its name.

// Private to the library; the `internals` facade shows parts of it to this crate's own tests,
// which need no documentation of every item.
#![cfg_attr(feature = "internals", allow(missing_docs))]

use std::collections::BTreeSet;

use super::syntax::{Arg, Command, Func, Part, Template, join};

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

#[cfg(test)]
mod tests {
    use super::super::syntax::{Missing, Syntax};
    use super::*;

    const GO: Syntax = Syntax::Go {
        missing: Missing::NoValue,
    };

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
}
