//! The sealing certificate: the PEM `kubeseal --fetch-cert` prints, read for the RSA public key
//! the Sealed Secrets controller decrypts with, and for when it is valid.

use rsa::PublicKey;
use rsa::pkcs8::DecodePublicKey;
use sha2::{Digest, Sha256};
use x509_cert::Certificate;
use x509_cert::der::{Decode, Encode};

use crate::validate::expiry::date;
use crate::validate::tls::blocks;

/// Why a `sealingCertificate` cannot seal, said without quoting it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    #[error("is not a PEM certificate ({0}): give the PEM `kubeseal --fetch-cert` prints")]
    NotPem(String),
    #[error("holds a {0} block, not a CERTIFICATE: give the PEM `kubeseal --fetch-cert` prints")]
    NotACertificate(String),
    #[error(
        "holds a private key, not a certificate: give the certificate `kubeseal --fetch-cert` prints; the controller's private key never leaves its cluster"
    )]
    PrivateKey,
    #[error("is not a readable X.509 certificate")]
    Unreadable,
    #[error(
        "holds {0}, not RSA: the Sealed Secrets controller seals with RSA-OAEP, so its certificate holds an RSA key"
    )]
    NotRsa(String),
    #[error("has an RSA public key that cannot be read: {0}")]
    BadKey(String),
    #[error(
        "expired on {0}: the Sealed Secrets controller renews its key every 30 days; fetch the current certificate (kubeseal --fetch-cert)"
    )]
    Expired(String),
    #[error("is not valid before {0}")]
    NotYetValid(String),
}

/// A certificate to seal with.
#[derive(Clone)]
pub struct SealingCertificate {
    /// The public key the values are sealed to.
    pub key: PublicKey,
    /// SHA-256 of the certificate's SubjectPublicKeyInfo: what tells a changed key.
    pub key_id: [u8; 32],
    pub not_before: i64,
    pub not_after: i64,
}

impl std::fmt::Debug for SealingCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealingCertificate")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SealingCertificate {
    fn eq(&self, other: &Self) -> bool {
        self.key_id == other.key_id
    }
}

/// rsaEncryption (RFC 8017), as DER.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

impl SealingCertificate {
    /// Reads the first certificate of `pem` (kubeseal prints one).
    pub fn read(pem: &str) -> Result<Self, CertificateError> {
        let blocks = blocks(pem.trim().as_bytes()).map_err(CertificateError::NotPem)?;
        let block = blocks
            .first()
            .ok_or_else(|| CertificateError::NotPem("no PEM block in it".into()))?;
        if block.label.ends_with("PRIVATE KEY") {
            return Err(CertificateError::PrivateKey);
        }
        if block.label != "CERTIFICATE" {
            return Err(CertificateError::NotACertificate(block.label.clone()));
        }
        let cert = Certificate::from_der(&block.der).map_err(|_| CertificateError::Unreadable)?;
        let tbs = cert.tbs_certificate();
        let spki = tbs.subject_public_key_info();
        if spki.algorithm.oid.as_bytes() != RSA_ENCRYPTION {
            return Err(CertificateError::NotRsa(key_name(
                spki.algorithm.oid.as_bytes(),
            )));
        }
        let der = spki.to_der().map_err(|_| CertificateError::Unreadable)?;
        let key = PublicKey::from_public_key_der(&der)
            .map_err(|e| CertificateError::BadKey(e.to_string()))?;
        let seconds = |t: &x509_cert::time::Time| {
            i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX)
        };
        Ok(SealingCertificate {
            key,
            key_id: Sha256::digest(&der).into(),
            not_before: seconds(&tbs.validity().not_before),
            not_after: seconds(&tbs.validity().not_after),
        })
    }

    /// Whether it is valid at `now` (Unix seconds); without a time, it is taken as valid.
    pub fn check_at(&self, now: Option<i64>) -> Result<(), CertificateError> {
        match now {
            Some(now) if now > self.not_after => {
                Err(CertificateError::Expired(date(self.not_after)))
            }
            Some(now) if now < self.not_before => {
                Err(CertificateError::NotYetValid(date(self.not_before)))
            }
            _ => Ok(()),
        }
    }
}

/// A key algorithm's common name, by its OID's DER bytes.
fn key_name(oid: &[u8]) -> String {
    match oid {
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01] => "an EC key".into(),
        [0x2b, 0x65, 0x70] => "an Ed25519 key".into(),
        _ => "a key of another kind".into(),
    }
}
