//! Base64 as Kubernetes data and kubeconfigs carry it: whitespace tolerated, clean text never copied.

use std::borrow::Cow;

use base64::Engine;

/// The text without ASCII whitespace (line-wrapped base64), borrowed when there is none.
pub fn compact(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_whitespace()) {
        Cow::Owned(text.chars().filter(|c| !c.is_ascii_whitespace()).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// Decodes standard base64, ignoring whitespace; returns the compact text it decoded too.
pub fn decode(text: &str) -> Result<(Vec<u8>, Cow<'_, str>), base64::DecodeError> {
    let engine = &base64::engine::general_purpose::STANDARD;
    // Most values are one line: decode them as they are, and look for whitespace only on failure.
    if let Ok(bytes) = engine.decode(text) {
        return Ok((bytes, Cow::Borrowed(text)));
    }
    let compact = compact(text);
    Ok((engine.decode(compact.as_bytes())?, compact))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_borrowed_and_wrapped_text_compacted() {
        assert!(matches!(compact("aGk="), Cow::Borrowed("aGk=")));
        assert_eq!(compact("aG\n k=\r\n"), "aGk=");
        assert_eq!(
            decode("aG\nk=").unwrap(),
            (b"hi".to_vec(), Cow::Borrowed("aGk="))
        );
        assert!(matches!(decode("aGk=").unwrap().1, Cow::Borrowed("aGk=")));
        assert!(decode("not base64!").is_err());
    }
}
