//! What a SealedSecret records of its values so that a later run tells an unchanged one without
//! opening it (annotation `capi2argo.dev/sealed`): the sealing key's id, the scope, a random salt
//! and one fingerprint per value.
//!
//! A fingerprint is HMAC-SHA-256 of the value under a key derived from the salt; the key of the
//! `config` value (which holds the cluster's credential: a client key or a token) is derived
//! from the salt and that value itself. So `config`'s fingerprint can be computed, or a guess
//! tested against it, only by one who holds the credential: to anyone else it is random bytes.
//! The other values (`name`, `server`, `project`, `namespaces`, `shared`…) are the cluster's
//! configuration, not its credential: one who guesses one of them exactly can test the guess
//! against its fingerprint (the salt keeps equal values in two Secrets from looking equal, and
//! a guess must be made for each Secret). They are keyed apart from the credential so that a new
//! credential seals `config` again alone, and any other change only the value that changed. A
//! `config` that holds no secret at all (an exec login, `mode: pull`) has nothing to key with:
//! one who guesses all of it can test the guess.

use std::collections::BTreeMap;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use krm::b64;

/// The annotation on the SealedSecret (never in its template: the unsealed Secret is exactly
/// the one the run would write without sealing).
pub const RECORD_ANNOTATION: &str = "capi2argo.dev/sealed";

/// The bytes of a fingerprint kept (128 bits).
const FINGERPRINT_BYTES: usize = 16;

/// The record, as its annotation holds it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Which key sealed the values: the first 16 bytes of the SHA-256 of the certificate's
    /// SubjectPublicKeyInfo, base64.
    pub key: String,
    /// `strict`, `namespace-wide` or `cluster-wide`.
    pub scope: String,
    /// 16 random bytes, base64.
    pub salt: String,
    /// Each value's fingerprint, by data key, base64.
    pub values: BTreeMap<String, String>,
}

impl Record {
    /// The record an annotation holds; `None` when it is not one.
    pub fn parse(text: &str) -> Option<Record> {
        serde_json::from_str(text).ok()
    }

    /// The annotation's text.
    pub fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The id a record gives the sealing key.
pub fn key_id(spki_digest: &[u8; 32]) -> String {
    b64::encode(&spki_digest[..16])
}

/// The fingerprints of `values` (data key, plaintext) under `salt`, for the Secret whose
/// `config` is `config`, sealed under `label`.
pub fn fingerprints(
    salt: &[u8],
    config: &[u8],
    label: &[u8],
    values: &[(String, Vec<u8>)],
) -> BTreeMap<String, String> {
    // HKDF-Extract (RFC 5869): the salt keys an HMAC over what the fingerprints are keyed by —
    // for `config`, the credential-bearing value itself.
    let extract = |context: &[u8], secret: &[u8]| {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(salt).expect("HMAC takes any key");
        mac.update(context);
        mac.update(secret);
        mac.finalize().into_bytes()
    };
    let credential = extract(b"capi2argo sealed fingerprints v1 credential\0", config);
    let configuration = extract(b"capi2argo sealed fingerprints v1 configuration\0", &[]);
    values
        .iter()
        .map(|(name, value)| {
            let key = if name == "config" {
                &credential
            } else {
                &configuration
            };
            let mut mac =
                <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
            for part in [label, name.as_bytes(), value] {
                mac.update(&(part.len() as u64).to_be_bytes());
                mac.update(part);
            }
            let digest = mac.finalize().into_bytes();
            (name.clone(), b64::encode(&digest[..FINGERPRINT_BYTES]))
        })
        .collect()
}
