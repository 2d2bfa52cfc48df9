//! TLS data in a cluster Secret as client-go reads it: base64 (Go's `[]byte` in JSON) of PEM
//! certificates and a private key, and whether the client key belongs to its certificate.

use krm::b64;
use x509_cert::Certificate;
use x509_cert::der::{Decode, asn1::ObjectIdentifier};

/// rsaEncryption (RFC 8017).
const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// id-ecPublicKey (RFC 5480).
const EC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// id-Ed25519 (RFC 8410).
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// One PEM block: its label and DER bytes.
pub(crate) struct Block {
    pub label: String,
    pub der: Vec<u8>,
}

/// Go's `[]byte` JSON decoding: standard base64 with padding; line breaks are skipped.
pub fn go_bytes(text: &str) -> Option<Vec<u8>> {
    b64::decode_without(text.as_bytes(), b"\r\n").ok()
}

/// Standard base64 with any ASCII white space in it (a PEM body's line breaks).
fn decode_body(body: &str) -> Option<Vec<u8>> {
    b64::decode_without(body.as_bytes(), b64::ASCII_WHITESPACE).ok()
}

/// The PEM blocks of `text`; `Err` names what is wrong without quoting the text.
pub(crate) fn blocks(text: &[u8]) -> Result<Vec<Block>, String> {
    let text = std::str::from_utf8(text).map_err(|_| "is not PEM text".to_string())?;
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = dashes(rest, |at| at.starts_with("-----BEGIN ")) {
        let after = &rest[start + 11..];
        let label_end = dashes(after, |at| at.starts_with("-----"))
            .ok_or("has a PEM header without its closing dashes")?;
        let label = &after[..label_end];
        let body_start = label_end + 5;
        let end_line = |at: &str| {
            at.strip_prefix("-----END ")
                .and_then(|at| at.strip_prefix(label))
                .is_some_and(|at| at.starts_with("-----"))
        };
        let end = dashes(&after[body_start..], end_line)
            .ok_or_else(|| format!("has a {label} block without its END line"))?;
        let der = decode_body(&after[body_start..body_start + end])
            .ok_or_else(|| format!("has a {label} block that is not base64"))?;
        out.push(Block {
            label: label.to_string(),
            der,
        });
        rest = &after[body_start + end + "-----END -----".len() + label.len()..];
    }
    if out.is_empty() {
        return Err("holds no PEM block".into());
    }
    Ok(out)
}

/// Where in `text` the first place that begins with a dash and passes `marker` is. Every PEM
/// marker begins with a dash and a base64 body holds none, so the search hops from dash to
/// dash (a `memchr`) instead of matching the whole marker at every byte.
fn dashes(text: &str, marker: impl Fn(&str) -> bool) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find('-') {
        let at = from + i;
        if marker(&text[at..]) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The public key a certificate or private key stands for, comparable across the two.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PublicKey {
    Rsa {
        modulus: Vec<u8>,
        exponent: Vec<u8>,
    },
    /// An elliptic-curve point (uncompressed or compressed, as encoded), or an Ed25519 key.
    Point(Vec<u8>),
    /// The private key does not carry its public half (a PKCS#8 Ed25519 key, an EC key
    /// without the optional public key): nothing to compare without deriving it.
    Unknown,
}

fn rsa_public(der: &[u8]) -> Option<PublicKey> {
    let key = pkcs1::RsaPublicKey::<pkcs1::UintRef>::from_der(der).ok()?;
    Some(PublicKey::Rsa {
        modulus: key.modulus.as_bytes().to_vec(),
        exponent: key.public_exponent.as_bytes().to_vec(),
    })
}

fn rsa_private(der: &[u8]) -> Option<PublicKey> {
    let key = pkcs1::RsaPrivateKeyRef::from_der(der).ok()?;
    Some(PublicKey::Rsa {
        modulus: key.modulus.as_bytes().to_vec(),
        exponent: key.public_exponent.as_bytes().to_vec(),
    })
}

fn ec_private(der: &[u8]) -> Option<PublicKey> {
    let key = sec1::EcPrivateKey::from_der(der).ok()?;
    Some(match key.public_key {
        Some(point) => PublicKey::Point(point.to_vec()),
        None => PublicKey::Unknown,
    })
}

/// The public key of a certificate.
fn certificate_key(cert: &Certificate) -> Result<PublicKey, String> {
    let spki = cert.tbs_certificate().subject_public_key_info();
    let bits = spki.subject_public_key.raw_bytes();
    let oid = spki.algorithm.oid;
    if oid == RSA {
        rsa_public(bits).ok_or_else(|| "has an unreadable RSA public key".to_string())
    } else if oid == EC || oid == ED25519 {
        Ok(PublicKey::Point(bits.to_vec()))
    } else {
        Ok(PublicKey::Unknown)
    }
}

/// The public half of a private key's PEM block.
fn private_key(block: &Block) -> Result<PublicKey, String> {
    let unreadable = || format!("is not a readable {}", block.label);
    match block.label.as_str() {
        "RSA PRIVATE KEY" => rsa_private(&block.der).ok_or_else(unreadable),
        "EC PRIVATE KEY" => ec_private(&block.der).ok_or_else(unreadable),
        "PRIVATE KEY" => {
            let info = pkcs8::PrivateKeyInfoRef::from_der(&block.der).map_err(|_| unreadable())?;
            let inner = info.private_key.as_bytes();
            let oid = info.algorithm.oid;
            if oid == RSA {
                rsa_private(inner).ok_or_else(unreadable)
            } else if oid == EC {
                match ec_private(inner).ok_or_else(unreadable)? {
                    PublicKey::Unknown => Ok(info.public_key.map_or(PublicKey::Unknown, |k| {
                        PublicKey::Point(k.raw_bytes().to_vec())
                    })),
                    known => Ok(known),
                }
            } else {
                Ok(info.public_key.map_or(PublicKey::Unknown, |k| {
                    PublicKey::Point(k.raw_bytes().to_vec())
                }))
            }
        }
        "ENCRYPTED PRIVATE KEY" => Err("is encrypted: client-go cannot use it".into()),
        other => Err(format!("holds a {other} block, not a private key")),
    }
}

/// When a certificate is valid, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: i64,
    pub not_after: i64,
}

/// The certificates of a PEM text (`caData`, `certData`), read once: whether every block is a
/// readable certificate (and the first one's public key: the client certificate's, for
/// `certData`), and when each readable one is valid.
#[derive(Debug, Clone)]
pub struct Certificates {
    first: Result<PublicKey, String>,
    /// The first certificate's subject organizations: the groups Kubernetes authenticates a
    /// client certificate as.
    pub groups: Vec<String>,
    /// The validity of every readable certificate, in order.
    pub validities: Vec<Validity>,
}

/// Certificates already read, by the SHA-256 of their PEM: a host that plans the same fleet
/// again and again (the controller, through [`crate::Planner`]) reads each certificate once, not
/// once a plan. What a plan did not read is forgotten after it ([`Memo::sweep`]), so the memo
/// holds the fleet's certificates and no more.
#[derive(Default)]
pub struct Memo {
    read: std::sync::Mutex<std::collections::HashMap<[u8; 32], (Certificates, bool)>>,
}

impl Memo {
    /// [`certificates`] of `pem`, read once.
    pub fn certificates(&self, pem: &[u8]) -> Certificates {
        use sha2::{Digest, Sha256};
        let digest: [u8; 32] = Sha256::digest(pem).into();
        let lock = || self.read.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((read, used)) = lock().get_mut(&digest) {
            *used = true;
            return read.clone();
        }
        let read = certificates(pem);
        lock().insert(digest, (read.clone(), true));
        read
    }

    /// Forgets the certificates no read asked for since the last sweep.
    pub fn sweep(&self) {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        read.retain(|_, (_, used)| std::mem::take(used));
    }

    /// How many it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.read.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Reads the certificates of `pem`, through `memo` when there is one.
pub fn certificates_in(memo: Option<&Memo>, pem: &[u8]) -> Certificates {
    match memo {
        Some(memo) => memo.certificates(pem),
        None => certificates(pem),
    }
}

/// Reads the certificates of `pem`.
pub fn certificates(pem: &[u8]) -> Certificates {
    let blocks = match blocks(pem) {
        Ok(blocks) => blocks,
        Err(reason) => {
            return Certificates {
                first: Err(reason),
                validities: Vec::new(),
                groups: Vec::new(),
            };
        }
    };
    let mut first = None;
    let mut wrong = None;
    let mut validities = Vec::new();
    let mut groups = Vec::new();
    for block in &blocks {
        if block.label != "CERTIFICATE" {
            wrong
                .get_or_insert_with(|| format!("holds a {} block, not a CERTIFICATE", block.label));
            continue;
        }
        let Ok(cert) = Certificate::from_der(&block.der) else {
            wrong.get_or_insert_with(|| "is not an X.509 certificate".to_string());
            continue;
        };
        let validity = cert.tbs_certificate().validity();
        let seconds = |t: &x509_cert::time::Time| {
            i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX)
        };
        validities.push(Validity {
            not_before: seconds(&validity.not_before),
            not_after: seconds(&validity.not_after),
        });
        if wrong.is_none() && first.is_none() {
            groups = organizations(&cert);
            match certificate_key(&cert) {
                Ok(key) => first = Some(key),
                Err(reason) => wrong = Some(reason),
            }
        }
    }
    let first = match (wrong, first) {
        (Some(reason), _) => Err(reason),
        (None, Some(key)) => Ok(key),
        (None, None) => Err("holds no certificate".into()),
    };
    Certificates {
        first,
        validities,
        groups,
    }
}

/// The subject's organization names (OID 2.5.4.10), as the API server reads groups from them.
fn organizations(cert: &Certificate) -> Vec<String> {
    cert.tbs_certificate()
        .subject()
        .iter()
        // id-at-organizationName, 2.5.4.10, as DER: compared as bytes, no OID formatting linked.
        .filter(|attr| attr.oid.as_bytes() == [0x55, 0x04, 0x0a])
        .filter_map(|attr| {
            std::str::from_utf8(attr.value.value())
                .ok()
                .map(String::from)
        })
        .collect()
}

/// The validity of every certificate in `pem`, in order (blocks that are not readable
/// certificates are left out: the other checks say what is wrong with them).
pub fn validities(pem: &[u8]) -> Vec<Validity> {
    certificates(pem).validities
}

/// Checks CA data; `Err` is what is wrong.
pub fn check_ca(ca: &Certificates) -> Result<(), String> {
    ca.first.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Checks a client certificate and key; `Err` is what is wrong. `Ok(false)` when the key does
/// not carry its public half, so the pair could not be compared.
pub fn check_pair(cert: &Certificates, key_pem: &[u8]) -> Result<bool, PairError> {
    let cert = cert
        .first
        .as_ref()
        .map_err(|e| PairError::Certificate(e.clone()))?;
    let keys = blocks(key_pem).map_err(PairError::Key)?;
    let [block] = keys.as_slice() else {
        return Err(PairError::Key("holds more than one PEM block".into()));
    };
    let key = private_key(block).map_err(PairError::Key)?;
    match (cert, &key) {
        (_, PublicKey::Unknown) | (PublicKey::Unknown, _) => Ok(false),
        (a, b) if a == b => Ok(true),
        _ => Err(PairError::Mismatch),
    }
}

/// What is wrong with a client certificate and key.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    #[error("{0}")]
    Certificate(String),
    #[error("{0}")]
    Key(String),
    #[error("the private key does not belong to the certificate (client-go refuses the pair)")]
    Mismatch,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `*-data` field of a provider fixture's first kubeconfig, decoded to PEM.
    fn fixture_pem(fixture: &str, field: &str) -> Vec<u8> {
        let text = match fixture {
            "kubeadm" => include_str!("../../../../tests/fixtures/providers/kubeadm.yaml"),
            "talos" => include_str!("../../../../tests/fixtures/providers/talos.yaml"),
            _ => unreachable!("a fixture this test knows"),
        };
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix("  value: "))
            .expect("a kubeconfig");
        let kubeconfig = String::from_utf8(go_bytes(value).expect("base64")).expect("utf-8");
        let data = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{field}: ")))
            .expect("the field");
        go_bytes(data).expect("base64 PEM")
    }

    /// Read through the memo, a certificate reads as it does alone; one no read asked for since
    /// the last sweep is forgotten at the next.
    #[test]
    fn the_memo_reads_each_certificate_once_and_forgets_those_unread() {
        let rsa = fixture_pem("kubeadm", "client-certificate-data");
        let ec = fixture_pem("talos", "client-certificate-data");
        let memo = Memo::default();
        for pem in [&rsa, &ec, &rsa] {
            let (read, alone) = (memo.certificates(pem), certificates(pem));
            assert_eq!(read.first, alone.first);
            assert_eq!(read.groups, alone.groups);
            assert_eq!(read.validities, alone.validities);
        }
        assert_eq!(memo.len(), 2);
        memo.sweep();
        memo.certificates(&ec);
        memo.sweep();
        assert_eq!(memo.len(), 1);
        memo.sweep();
        assert_eq!(memo.len(), 0);
    }

    #[test]
    fn rsa_and_ec_pairs_match_and_crossed_pairs_do_not() {
        let rsa_cert = fixture_pem("kubeadm", "client-certificate-data");
        let rsa_key = fixture_pem("kubeadm", "client-key-data");
        let ec_cert = fixture_pem("talos", "client-certificate-data");
        let ec_key = fixture_pem("talos", "client-key-data");
        assert_eq!(check_pair(&certificates(&rsa_cert), &rsa_key), Ok(true));
        assert_eq!(check_pair(&certificates(&ec_cert), &ec_key), Ok(true));
        assert_eq!(
            check_pair(&certificates(&rsa_cert), &ec_key),
            Err(PairError::Mismatch)
        );
        assert_eq!(
            check_pair(&certificates(&ec_cert), &rsa_key),
            Err(PairError::Mismatch)
        );
        assert!(
            check_ca(&certificates(&fixture_pem(
                "kubeadm",
                "certificate-authority-data"
            )))
            .is_ok()
        );
    }

    #[test]
    fn not_pem_and_wrong_blocks_are_named() {
        assert_eq!(
            check_ca(&certificates(b"hello")),
            Err("holds no PEM block".into())
        );
        let key = fixture_pem("kubeadm", "client-key-data");
        assert!(
            check_ca(&certificates(&key))
                .unwrap_err()
                .contains("not a CERTIFICATE")
        );
        let cert = fixture_pem("kubeadm", "client-certificate-data");
        assert!(matches!(
            check_pair(&certificates(&cert), &cert),
            Err(PairError::Key(_))
        ));
        assert_eq!(go_bytes("QUJD\nREVG"), Some(b"ABCDEF".to_vec()));
        assert_eq!(go_bytes("QUJD="), None);
    }

    /// The marker search hops from dash to dash: each marker is still found where it first
    /// stands whole, whatever dashes come before it.
    #[test]
    fn pem_markers_are_found_past_other_dashes() {
        let ok =
            |text: &str| blocks(text.as_bytes()).map(|b| (b[0].label.clone(), b[0].der.clone()));
        assert_eq!(
            ok("--- -----BEGIN X-Y-----\nQUJD\n-----END X-Y-----\n"),
            Ok(("X-Y".to_string(), b"ABC".to_vec()))
        );
        // Another block's END line is part of this body (and not base64), as before.
        assert_eq!(
            ok("-----BEGIN A-----\nQUJD\n-----END B-----\n-----END A-----\n"),
            Err("has a A block that is not base64".into())
        );
        assert_eq!(
            ok("-----BEGIN A-----\nQUJD\n-----END A----"),
            Err("has a A block without its END line".into())
        );
        assert_eq!(
            ok("-----BEGIN A--"),
            Err("has a PEM header without its closing dashes".into())
        );
        assert_eq!(ok("----BEGIN A-----"), Err("holds no PEM block".into()));
        let two =
            "-----BEGIN A-----\nQUJD\n-----END A-----\n-----BEGIN B-----\nREVG\n-----END B-----";
        let labels: Vec<String> = blocks(two.as_bytes())
            .unwrap()
            .into_iter()
            .map(|b| b.label)
            .collect();
        assert_eq!(labels, ["A", "B"]);
    }
    /// PKCS#8 keys as `openssl genpkey` writes them: EC (its SEC1 body carries the public key)
    /// and Ed25519 (v1: no public key, so the pair cannot be compared without deriving it).
    const P256_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgfSmNmn3EWSWUnrbl\nZb4Rufn8hufFjEqQhYNaahXxR3ShRANCAASJup9Osc8WW7Ni/dF54UhrEK+T7Enz\nsx1P8c1wi/Ucy2Te4RIKRFPUeRxxzP/hdmIp5vAPbfzMOAwAgrEndFVW\n-----END PRIVATE KEY-----\n";
    const P256_CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBbDCCAROgAwIBAgIUV58gWhhJebvRLS4X8aCHr2n7DcswCgYIKoZIzj0EAwIw\nDDEKMAgGA1UEAwwBeTAeFw0yNjExMjIxNjA2MDhaFw0yNjExMjMxNjA2MDhaMAwx\nCjAIBgNVBAMMAXkwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASJup9Osc8WW7Ni\n/dF54UhrEK+T7Enzsx1P8c1wi/Ucy2Te4RIKRFPUeRxxzP/hdmIp5vAPbfzMOAwA\ngrEndFVWo1MwUTAdBgNVHQ4EFgQU/N0xDe4T/dNCqr4d8PZ5lc3qfd8wHwYDVR0j\nBBgwFoAU/N0xDe4T/dNCqr4d8PZ5lc3qfd8wDwYDVR0TAQH/BAUwAwEB/zAKBggq\nhkjOPQQDAgNHADBEAiB01PB5abRQGQPb52TTBYyfo9gz5mSqLydmLv78y7Z5bQIg\nNLDMLDw2kT+0VctJKD5pz7R7/4HrC4z1QtUXf3621z0=\n-----END CERTIFICATE-----\n";
    const ED25519_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAxFX5Kvki2gRFTFIRe3d9Zk9CERHSj2cRgswzFRNGSW\n-----END PRIVATE KEY-----\n";
    const ED25519_CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBLDCB36ADAgECAhRYJMdZJHi0lUHDD3VitpCrswDhcDAFBgMrZXAwDDEKMAgG\nA1UEAwwBeDAeFw0yNjExMjIxNjA2MDhaFw0yNjExMjMxNjA2MDhaMAwxCjAIBgNV\nBAMMAXgwKjAFBgMrZXADIQAvN73aER7aOGU+byq1Nu18aH8Waqi/uZQeskmSwDsw\nBaNTMFEwHQYDVR0OBBYEFJ2UIVlgx7Lk8hw6/BnwlDy/uMy3MB8GA1UdIwQYMBaA\nFJ2UIVlgx7Lk8hw6/BnwlDy/uMy3MA8GA1UdEwEB/wQFMAMBAf8wBQYDK2VwA0EA\nw2Kjmn9yWfyyUbQbNBhCaFgdp7Z1gPQWoNknL2FeLvCPeK9XYyIbl3C/VvezffDh\nwljUrlNpjuyLM9lBHZ8DAQ==\n-----END CERTIFICATE-----\n";

    #[test]
    fn pkcs8_keys() {
        assert_eq!(
            check_pair(&certificates(P256_CERT.as_bytes()), P256_KEY.as_bytes()),
            Ok(true)
        );
        assert_eq!(
            check_pair(
                &certificates(ED25519_CERT.as_bytes()),
                ED25519_KEY.as_bytes()
            ),
            Ok(false)
        );
        assert_eq!(
            check_pair(&certificates(ED25519_CERT.as_bytes()), P256_KEY.as_bytes()),
            Err(PairError::Mismatch)
        );
    }
}
