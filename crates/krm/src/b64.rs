//! Base64 as Kubernetes data, kubeconfigs and Go's `[]byte` JSON fields carry it: standard
//! alphabet, canonical padding, line breaks tolerated, clean text never copied. Every base64
//! reading and writing of the function goes through here.
//!
//! Decoding is done with SIMD where the CPU has it (base64-simd): Secret values and
//! certificates are most of a fleet's bytes. Its rules are the ones the `base64` crate's
//! `STANDARD` engine had here before (padding required, non-zero trailing bits refused); the
//! tests below hold the two to the same answers.

use std::borrow::Cow;

use yaml::skip_words;

/// Why a text is not base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("is not valid base64")]
pub struct DecodeError;

/// The bytes `str::is_ascii_whitespace` names: what line-wrapped base64 and PEM bodies hold
/// between their runs.
pub const ASCII_WHITESPACE: &[u8] = b" \t\n\x0c\r";

/// The text without ASCII whitespace (line-wrapped base64), borrowed when there is none.
pub fn compact(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_whitespace()) {
        // Only ASCII bytes are taken out, so what is left is still UTF-8.
        Cow::Owned(
            String::from_utf8_lossy(&without(text.as_bytes(), ASCII_WHITESPACE)).into_owned(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` with the bytes of `skip` left out. Every byte of `skip` is a space or a control
/// character: runs of printable ASCII between them are copied eight bytes a step.
fn without(text: &[u8], skip: &[u8]) -> Vec<u8> {
    debug_assert!(skip.iter().all(|&b| b <= b' '));
    let mut clean = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let run = skip_words(text, i, b' ' + 1, 0x7f);
        clean.extend_from_slice(&text[i..run]);
        let word_end = (run + 8).min(text.len());
        clean.extend(text[run..word_end].iter().filter(|b| !skip.contains(b)));
        i = word_end;
    }
    clean
}

/// Decodes standard base64 with nothing else in it.
pub fn decode_exact(text: &[u8]) -> Result<Vec<u8>, DecodeError> {
    base64_simd::STANDARD
        .decode_to_vec(text)
        .map_err(|_| DecodeError)
}

/// Decodes standard base64, ignoring whitespace; returns the compact text it decoded too.
pub fn decode(text: &str) -> Result<(Vec<u8>, Cow<'_, str>), DecodeError> {
    // Most values are one line: decode them as they are, and look for whitespace only on failure.
    if let Ok(bytes) = decode_exact(text.as_bytes()) {
        return Ok((bytes, Cow::Borrowed(text)));
    }
    let compact = compact(text);
    Ok((decode_exact(compact.as_bytes())?, compact))
}

/// Decodes standard base64 with the bytes of `skip` (spaces or control characters) left out
/// wherever they stand: a PEM body's line breaks, Go's tolerated CR and LF.
pub fn decode_without(text: &[u8], skip: &[u8]) -> Result<Vec<u8>, DecodeError> {
    // Most values are one line: the decoder itself finds out, at SIMD speed, before any copy.
    if let Ok(bytes) = decode_exact(text) {
        return Ok(bytes);
    }
    let clean = without(text, skip);
    if clean.len() == text.len() {
        return Err(DecodeError);
    }
    decode_exact(&clean)
}

/// Standard base64, padded.
pub fn encode(bytes: &[u8]) -> String {
    base64_simd::STANDARD.encode_to_string(bytes)
}

/// The URL-safe alphabet without padding (a JWT's parts); a trailing `=` is tolerated.
pub fn decode_url(text: &str) -> Result<Vec<u8>, DecodeError> {
    base64_simd::URL_SAFE_NO_PAD
        .decode_to_vec(text.trim_end_matches('=').as_bytes())
        .map_err(|_| DecodeError)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn clean_text_is_borrowed_and_wrapped_text_compacted() {
        assert!(matches!(compact("aGk="), Cow::Borrowed("aGk=")));
        assert_eq!(compact("aG\n k=\r\n"), "aGk=");
        assert_eq!(
            compact("\tQUJDREVGR0hJSktM\x0cTU5PUFFS é\r\n"),
            "QUJDREVGR0hJSktMTU5PUFFSé"
        );
        assert_eq!(
            decode("aG\nk=").unwrap(),
            (b"hi".to_vec(), Cow::Borrowed("aGk="))
        );
        assert!(matches!(decode("aGk=").unwrap().1, Cow::Borrowed("aGk=")));
        assert!(decode("not base64!").is_err());
        assert_eq!(decode_without(b"aG\r\nk=", b"\r\n").unwrap(), b"hi");
        assert!(decode_without(b"aG k=", b"\r\n").is_err());
        // Long wrapped text: runs copied a word at a time, breaks anywhere in a word.
        let wrapped: String = (0..40)
            .map(|i| format!("{}\r\n", "QUJD".repeat(i % 5 + 1)))
            .collect();
        let expected: Vec<u8> = (0..40).flat_map(|i| b"ABC".repeat(i % 5 + 1)).collect();
        assert_eq!(
            decode_without(wrapped.as_bytes(), b"\r\n").unwrap(),
            expected
        );
    }

    /// A small deterministic generator (xorshift): the same cases on every run.
    fn texts() -> impl Iterator<Item = Vec<u8>> {
        const ALPHABET: &[u8] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n";
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..200_000).map(move |_| {
            let len = (next() % 80) as usize;
            // Mostly the plain alphabet, so that many texts decode and the padding and
            // trailing-bit rules get exercised, not only the refusals.
            let wild = next() % 4 == 0;
            let padding = (next() % 3) as usize;
            let mut text: Vec<u8> = (0..len)
                .map(|_| {
                    let n = next() as usize;
                    if wild {
                        ALPHABET[n % ALPHABET.len()]
                    } else {
                        ALPHABET[n % 64]
                    }
                })
                .collect();
            text.extend(std::iter::repeat_n(b'=', padding));
            text
        })
    }

    #[test]
    fn decodes_as_the_reference_decoder_does() {
        let reference = &base64::engine::general_purpose::STANDARD;
        let mut decoded = 0;
        for text in texts() {
            let ours = decode_exact(&text).ok();
            assert_eq!(
                ours,
                reference.decode(&text).ok(),
                "{:?}",
                String::from_utf8_lossy(&text)
            );
            decoded += usize::from(ours.is_some());
        }
        // The cases reach both answers in numbers.
        assert!(decoded > 10_000, "only {decoded} texts decoded");
    }

    #[test]
    fn url_alphabet_decodes_as_the_reference_decoder_does() {
        let reference = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        for text in texts() {
            let text = String::from_utf8(text).unwrap();
            assert_eq!(
                decode_url(&text).ok(),
                reference.decode(text.trim_end_matches('=')).ok(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn encodes_as_the_reference_encoder_does() {
        for text in texts().take(20_000) {
            assert_eq!(
                encode(&text),
                base64::engine::general_purpose::STANDARD.encode(&text)
            );
        }
    }
}
