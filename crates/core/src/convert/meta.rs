//! Kubernetes' rules for names, label keys and values and annotation keys (apimachinery's), checked and
//! made to hold, with stable hash-shortening for names that are too long.

/// Longest Secret name (a DNS-1123 subdomain).
pub const MAX_NAME: usize = 253;
/// Longest label value.
pub const MAX_LABEL_VALUE: usize = 63;

/// FNV-1a (32 bit): tiny, stable across versions and platforms, and what Argo CD itself uses for names.
pub fn fnv32a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// FNV-1a (64 bit), for spreading names evenly.
pub fn fnv64a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Whether `s` is a DNS-1123 label (a namespace name): `[a-z0-9-]`, alphanumeric at both ends, 1 to 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain (most object names): labels joined by dots, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= MAX_NAME && s.split('.').all(is_dns1123_label)
}

/// Makes a valid DNS-1123 subdomain: lowercase, `[a-z0-9.-]`, alphanumeric at both ends, at most 253 characters.
pub fn dns1123_subdomain(name: &str) -> String {
    let mut cleaned = String::with_capacity(name.len());
    for c in name.chars() {
        match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '.' | '-') => cleaned.push(c),
            // Characters a name cannot hold become one `-`, never a run of them.
            _ if !cleaned.ends_with('-') => cleaned.push('-'),
            _ => {}
        }
    }
    let trimmed = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    shorten(trimmed, name, MAX_NAME)
}

/// Makes a valid DNS-1123 label, which is what a Cluster API cluster's name must be and what a
/// label value can always hold: lowercase, `[a-z0-9-]`, alphanumeric at both ends, at most
/// `max` characters (63 at most; a longer name is cut and ends in its hash). `None` when nothing
/// of `name` is left.
pub fn dns1123_label(name: &str, max: usize) -> Option<String> {
    let mut cleaned = String::with_capacity(name.len());
    for c in name.chars() {
        match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => cleaned.push(c),
            // Anything else (`.`, `:`, `/` of an ARN) becomes one `-`, never a run of them.
            _ if !cleaned.is_empty() && !cleaned.ends_with('-') => cleaned.push('-'),
            _ => {}
        }
    }
    let trimmed = cleaned.trim_matches('-');
    (!trimmed.is_empty()).then(|| shorten(trimmed, name, max.clamp(9, MAX_LABEL_VALUE)))
}

/// Makes a valid label value: `[A-Za-z0-9._-]`, alphanumeric at both ends, at most 63 characters.
pub fn label_value(value: &str) -> String {
    // Most values are label values already (Kubernetes names are): taken as they are, without
    // the character-by-character copy a plan would otherwise make for every cluster's keys.
    if is_label_value(value) {
        return value.to_string();
    }
    let cleaned: String = value
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '-',
        })
        .collect();
    let trimmed = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    shorten(trimmed, value, MAX_LABEL_VALUE)
}

/// The name part of a label or annotation key (after any `prefix/`), cut to 63 characters with
/// the hash suffix the names use when it is longer; `original` is what the hash is of.
pub fn key_name(name: &str, original: &str) -> String {
    shorten(name, original, MAX_LABEL_VALUE)
}

/// A label or annotation key, as apimachinery's `IsQualifiedName` checks it: an optional
/// DNS-1123 subdomain prefix (at most 253 characters) and `/`, then a name of 1 to 63
/// characters from `[A-Za-z0-9._-]`, alphanumeric at both ends.
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= MAX_NAME
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(format!("{key:?} is not a valid label or annotation key"))
    }
}

/// A label value, as apimachinery's `IsValidLabelValue` checks it: empty, or 1 to 63 characters
/// from `[A-Za-z0-9._-]`, alphanumeric at both ends.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if is_label_value(value) {
        Ok(())
    } else {
        Err(format!("{value:?} is not a valid label value"))
    }
}

/// Whether `value` is a label value: empty, or at most 63 characters of `[A-Za-z0-9._-]`,
/// alphanumeric at both ends.
fn is_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= MAX_LABEL_VALUE
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
}

/// Cuts `text` to `max` characters, ending in `-<hash of original>` so distinct long names stay distinct.
fn shorten(text: &str, original: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let suffix = format!("{:08x}", fnv32a(original));
    let keep =
        text[..max - suffix.len() - 1].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{keep}-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv32a_matches_reference_vectors() {
        assert_eq!(fnv32a(""), 0x811c_9dc5);
        assert_eq!(fnv32a("a"), 0xe40c_292c);
        assert_eq!(fnv32a("foobar"), 0xbf9c_f968);
        assert_eq!(fnv64a("foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn names_are_lowercased_and_cleaned() {
        assert_eq!(dns1123_subdomain("cluster-Prod_EU"), "cluster-prod-eu");
        assert_eq!(dns1123_subdomain("cluster-a.b"), "cluster-a.b");
        assert_eq!(dns1123_subdomain("cluster-ünï_cødé"), "cluster-n-c-d");
        assert_eq!(dns1123_subdomain("a--b"), "a--b");
    }

    #[test]
    fn long_names_get_a_stable_hash_suffix() {
        let long = format!("cluster-{}", "x".repeat(300));
        let short = dns1123_subdomain(&long);
        assert_eq!(short.len(), MAX_NAME);
        assert_eq!(short, dns1123_subdomain(&long));
        assert_ne!(short, dns1123_subdomain(&format!("{long}y")));
        assert!(short.ends_with(&format!("-{:08x}", fnv32a(&long))));
    }

    #[test]
    fn dns1123_labels_hold_any_context_name() {
        let arn = "arn:aws:eks:eu-west-1:123456789012:cluster/payments-platform-production-eu-west-1-blue";
        let label = |name: &str| dns1123_label(name, MAX_LABEL_VALUE);
        let long = label(arn).unwrap();
        assert!(is_dns1123_label(&long), "{long}");
        assert!(check_label_value(&long).is_ok());
        assert_eq!(long.len(), MAX_LABEL_VALUE);
        assert!(long.starts_with("arn-aws-eks-eu-west-1-123456789012-cluster-payments"));
        assert_ne!(label(arn), label(&format!("{arn}-green")));
        assert!(dns1123_label(arn, 52).unwrap().len() <= 52);
        assert_eq!(label("kind-Kind.local").as_deref(), Some("kind-kind-local"));
        assert_eq!(label("--x__y--").as_deref(), Some("x-y"));
        assert_eq!(label("ünï").as_deref(), Some("n"));
        assert_eq!(label("日本"), None);
    }

    #[test]
    fn label_values_fit_in_63_characters() {
        let name = format!("{}-kubeconfig", "c".repeat(63));
        let value = label_value(&name);
        assert_eq!(value.len(), MAX_LABEL_VALUE);
        assert_eq!(label_value("prod-eu-1-kubeconfig"), "prod-eu-1-kubeconfig");
    }

    #[test]
    fn a_value_is_taken_as_it_is_only_when_it_is_a_label_value_already() {
        for (value, label) in [
            ("", ""),
            ("a.b_c-1", "a.b_c-1"),
            ("-a-", "a"),
            ("_a.", "a"),
            ("a b/c", "a-b-c"),
            ("über", "ber"),
        ] {
            assert_eq!(label_value(value), label, "{value:?}");
        }
        let exact = "c".repeat(MAX_LABEL_VALUE);
        assert_eq!(label_value(&exact), exact);
        let over = "c".repeat(MAX_LABEL_VALUE + 1);
        assert_eq!(label_value(&over).len(), MAX_LABEL_VALUE);
        assert_ne!(
            label_value(&over),
            exact,
            "a longer value is cut with its hash"
        );
    }
}
