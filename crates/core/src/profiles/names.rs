//! The names the reference consumer gives a profile's Argo CD Secret and its name label, long
//! names bounded as its `clusterProfileSecretName` and `clusterProfileNameLabelValue` bound them
//! (`controller.go` at f49fb228): the same inputs give the same names, so a team can move
//! between the two tools without a rename.

use sha2::{Digest, Sha256};

/// How many hex digits of the SHA-256 a bounded name ends in (128 bits).
const HASH_LENGTH: usize = 32;
const MAX_NAME: usize = 253;
const MAX_LABEL_VALUE: usize = 63;

/// `cluster-<profile>`; a name longer than a Secret's may be becomes
/// `clusterprofile-<profile>` cut, then `-` and the profile name's digest.
pub fn secret_name(profile: &str) -> String {
    let raw = format!("cluster-{profile}");
    if raw.len() <= MAX_NAME {
        return raw;
    }
    bounded(&format!("clusterprofile-{profile}"), profile, MAX_NAME, "-")
}

/// The profile's name as a label value: itself, or cut to fit with `_` and its digest (an
/// underscore no Kubernetes name holds, so no raw name is ever mistaken for a cut one).
pub fn label_value(profile: &str) -> String {
    if profile.len() <= MAX_LABEL_VALUE {
        return profile.to_string();
    }
    bounded(profile, profile, MAX_LABEL_VALUE, "_")
}

fn bounded(value: &str, hashed: &str, max: usize, separator: &str) -> String {
    let digest = Sha256::digest(hashed.as_bytes());
    let hash: String = digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..HASH_LENGTH]
        .to_string();
    let keep = max - HASH_LENGTH - separator.len();
    // Names are ASCII (DNS subdomains); a cut never splits a character.
    let cut = value.get(..keep).unwrap_or(value);
    format!("{}{separator}{hash}", cut.trim_end_matches(['-', '_', '.']))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's own test vectors (controller_test.go, `TestGeneratedClusterProfileMetadata`
    /// and `TestLongClusterProfileSecretLifecycle` at f49fb228).
    #[test]
    fn long_names_are_bounded_as_the_reference_bounds_them() {
        let long = "s".repeat(246);
        assert_eq!(
            secret_name(&long),
            format!(
                "clusterprofile-{}-c487d7cd89959dbc1df6f5deec5584b5",
                "s".repeat(205)
            )
        );
        assert_eq!(secret_name(&long).len(), 253);
        assert_eq!(
            label_value(&"l".repeat(64)),
            format!("{}_6714e95219c67c4cda7eeff21b662ca5", "l".repeat(30))
        );
        assert_eq!(secret_name("spoke-1"), "cluster-spoke-1");
        assert_eq!(label_value("spoke-1"), "spoke-1");
        assert_eq!(secret_name(&"a".repeat(245)).len(), 253);
    }
}
