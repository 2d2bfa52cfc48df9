//! The value format Sealed Secrets opens (bitnami-labs/sealed-secrets pkg/crypto): a fresh
//! AES-256 key sealed to the controller's RSA key with OAEP over SHA-256 and the scope's label,
//! then the value under that key with AES-GCM and a zero nonce (each key seals one value only).
//! Laid out as a 2-byte big-endian length of the RSA ciphertext, the RSA ciphertext, and the
//! GCM ciphertext with its tag.

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, KeyInit, Nonce};
use rand_chacha::ChaCha20Rng;
use rand_core::Rng;
use rsa::{Oaep, PublicKey};
use sha2::Sha256;

/// Why a value could not be sealed (an RSA key too small for OAEP over SHA-256).
#[derive(Debug, thiserror::Error)]
#[error("sealing failed: {0}")]
pub struct SealError(String);

impl SealError {
    /// A Secret's value that cannot be read, by its field.
    pub fn unreadable(field: &str, why: &str) -> Self {
        SealError(format!("{field} {why}"))
    }
}

/// `plaintext` sealed to `key` under `label`, with randomness from `rng`.
pub fn seal(
    rng: &mut ChaCha20Rng,
    key: &PublicKey,
    plaintext: &[u8],
    label: &[u8],
) -> Result<Vec<u8>, SealError> {
    let mut session = [0u8; 32];
    rng.fill_bytes(&mut session);
    let padding = Oaep::<Sha256>::new_with_label(label.to_vec());
    let sealed_key = key
        .encrypt(rng, padding, &session)
        .map_err(|e| SealError(e.to_string()))?;
    let length = u16::try_from(sealed_key.len())
        .map_err(|_| SealError("the RSA key is longer than the format holds".into()))?;
    let cipher = Aes256Gcm::new_from_slice(&session).map_err(|e| SealError(e.to_string()))?;
    let sealed_value = cipher
        .encrypt(&Nonce::<Aes256Gcm>::default(), plaintext)
        .map_err(|e| SealError(e.to_string()))?;
    let mut out = Vec::with_capacity(2 + sealed_key.len() + sealed_value.len());
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&sealed_key);
    out.extend_from_slice(&sealed_value);
    Ok(out)
}
