//! A credential plugin's command line, read the way its own flag parser (pflag, the AWS CLI) reads
//! it, remembering which flags were looked at so the rest can be reported by name.

/// One argument: a flag (`--name value`, `--name=value`, `-n value`) or a positional word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item<'p> {
    Flag {
        name: &'p str,
        value: Option<&'p str>,
    },
    Word(&'p str),
}

/// The parsed arguments and which flags a mapping has taken.
#[derive(Debug)]
pub struct Args<'p> {
    items: Vec<Item<'p>>,
    taken: Vec<bool>,
}

impl<'p> Args<'p> {
    /// Parses `args`; a flag in `takes_value` written without `=` consumes the next argument,
    /// as pflag does for a string flag. After `--` everything is a word.
    pub fn parse(args: &'p [String], takes_value: &[&str]) -> Self {
        let mut items = Vec::with_capacity(args.len());
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if arg == "--" {
                items.extend(iter.by_ref().map(|a| Item::Word(a.as_str())));
                break;
            }
            if !arg.starts_with('-') || arg.len() == 1 {
                items.push(Item::Word(arg));
                continue;
            }
            let (name, value) = match arg.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None if takes_value.contains(&arg.as_str()) => {
                    (arg.as_str(), iter.next().map(String::as_str))
                }
                None => (arg.as_str(), None),
            };
            items.push(Item::Flag { name, value });
        }
        let taken = vec![false; items.len()];
        Args { items, taken }
    }

    /// The positional words, in order.
    pub fn words(&self) -> impl Iterator<Item = &'p str> + '_ {
        self.items.iter().filter_map(|item| match item {
            Item::Word(w) => Some(*w),
            Item::Flag { .. } => None,
        })
    }

    /// Whether the words include `wanted` in this order (global options may sit between them,
    /// as in `aws --region r eks get-token`).
    pub fn has_words(&self, wanted: &[&str]) -> bool {
        let mut wanted = wanted.iter().peekable();
        for word in self.words() {
            if wanted.peek().is_some_and(|w| **w == word) {
                wanted.next();
            }
        }
        wanted.peek().is_none()
    }

    /// Whether any flag starts with `prefix` (without taking it).
    pub fn any_flag_starts_with(&self, prefix: &str) -> bool {
        self.items
            .iter()
            .any(|item| matches!(item, Item::Flag { name, .. } if name.starts_with(prefix)))
    }

    /// Takes every occurrence of the flag (any of its `names`); the last value wins, as in pflag.
    pub fn value(&mut self, names: &[&str]) -> Option<&'p str> {
        let mut found = None;
        for (item, taken) in self.items.iter().zip(self.taken.iter_mut()) {
            if let Item::Flag { name, value } = item {
                if !names.contains(name) {
                    continue;
                }
                *taken = true;
                found = value.or(found);
            }
        }
        found
    }

    /// Takes a boolean flag: `--flag` is true, `--flag=false` false (Go's `strconv.ParseBool`
    /// spellings); `None` when absent.
    pub fn switch(&mut self, names: &[&str]) -> Option<bool> {
        let mut found = None;
        for (item, taken) in self.items.iter().zip(self.taken.iter_mut()) {
            if let Item::Flag { name, value } = item {
                if !names.contains(name) {
                    continue;
                }
                *taken = true;
                found = Some(match value {
                    None => true,
                    Some(v) => matches!(*v, "1" | "t" | "T" | "true" | "TRUE" | "True"),
                });
            }
        }
        found
    }

    /// Takes the flags in `names`, returning the ones present (for "left out" reports).
    pub fn take(&mut self, names: &[&str]) -> Vec<&'p str> {
        let mut present = Vec::new();
        for (item, taken) in self.items.iter().zip(self.taken.iter_mut()) {
            if let Item::Flag { name, .. } = item {
                if !names.contains(name) {
                    continue;
                }
                *taken = true;
                if !present.contains(name) {
                    present.push(*name);
                }
            }
        }
        present
    }

    /// Flags no mapping took, each once, in order.
    pub fn untaken(&self) -> Vec<&'p str> {
        let mut names = Vec::new();
        for (item, taken) in self.items.iter().zip(&self.taken) {
            match item {
                Item::Flag { name, .. } if !taken && !names.contains(name) => names.push(*name),
                _ => {}
            }
        }
        names
    }
}

/// Where the values of `flags` stand in `args`, read as [`Args::parse`] reads a flag that takes
/// a value (`--flag=value`, or `--flag value` when written without `=`): each as the index of
/// the argument holding it and the byte range of the value within that argument.
pub fn flag_values(args: &[&str], flags: &[&str]) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        if arg == "--" {
            break;
        }
        if arg.starts_with('-') && arg.len() > 1 {
            match arg.split_once('=') {
                Some((name, _)) if flags.contains(&name) => {
                    found.push((i, name.len() + 1..arg.len()))
                }
                None if flags.contains(&arg) => {
                    if let Some(next) = args.get(i + 1) {
                        found.push((i + 1, 0..next.len()));
                    }
                    i += 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn values_inline_or_next_and_the_last_wins() {
        let raw = strings(&[
            "get-token",
            "-l",
            "spn",
            "--login=msi",
            "--pop-enabled",
            "x",
        ]);
        let mut args = Args::parse(&raw, &["-l", "--login"]);
        assert_eq!(args.value(&["-l", "--login"]), Some("msi"));
        assert_eq!(args.switch(&["--pop-enabled"]), Some(true));
        assert_eq!(args.words().collect::<Vec<_>>(), vec!["get-token", "x"]);
        assert!(args.untaken().is_empty());
    }

    #[test]
    fn untaken_flags_are_named_once() {
        let raw = strings(&["--a", "--b=1", "--a", "--", "--c"]);
        let mut args = Args::parse(&raw, &[]);
        assert_eq!(args.take(&["--b"]), vec!["--b"]);
        assert_eq!(args.untaken(), vec!["--a"]);
        assert_eq!(args.words().collect::<Vec<_>>(), vec!["--c"]);
    }

    #[test]
    fn words_in_order_with_flags_between() {
        let raw = strings(&["--region", "eu-west-1", "eks", "get-token"]);
        let args = Args::parse(&raw, &["--region"]);
        assert!(args.has_words(&["eks", "get-token"]));
        assert!(!args.has_words(&["get-token", "eks"]));
    }

    #[test]
    fn flag_values_are_where_args_reads_them() {
        let raw = [
            "get-token",
            "--client-secret",
            "s1",
            "--password=p2",
            "-l",
            "spn",
            "--",
            "--password",
            "x",
        ];
        let found = flag_values(&raw, &["--client-secret", "--password"]);
        assert_eq!(found, vec![(2, 0..2), (3, 11..13)]);
        let owned = strings(&raw);
        let mut args = Args::parse(&owned, &["--client-secret", "--password", "-l"]);
        assert_eq!(
            args.value(&["--client-secret"]),
            Some(&raw[2][found[0].1.clone()])
        );
        assert_eq!(
            args.value(&["--password"]),
            Some(&raw[3][found[1].1.clone()])
        );
    }

    #[test]
    fn switches_read_go_booleans() {
        let raw = strings(&["--legacy=false", "--x=TRUE"]);
        let mut args = Args::parse(&raw, &[]);
        assert_eq!(args.switch(&["--legacy"]), Some(false));
        assert_eq!(args.switch(&["--x"]), Some(true));
        assert_eq!(args.switch(&["--y"]), None);
    }
}
