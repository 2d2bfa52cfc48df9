//! Character rules: which bytes YAML reads as blanks, line breaks and indicators, as libyaml reads them.
//!
//! libyaml follows YAML 1.1 here, and so do go-yaml and everything built on it (kpt, kustomize,
//! kubectl): besides `\r`, `\n` and `\r\n`, the characters NEL (U+0085), LS (U+2028) and
//! PS (U+2029) break lines. A reader that treats them as ordinary text (YAML 1.2) misreads what
//! those tools write, so every rule in this module counts them as breaks.

/// The byte at `at`, or 0 past the end. A NUL byte never occurs inside accepted input
/// ([`first_disallowed`] refuses it), so 0 means "end of input", as it does in libyaml.
#[inline]
pub fn at(bytes: &[u8], at: usize) -> u8 {
    bytes.get(at).copied().unwrap_or(0)
}

/// A space or a tab.
#[inline]
pub fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The length of the line break starting at `i` (CR LF counts as one break of two bytes), or 0.
#[inline]
pub fn break_len(bytes: &[u8], i: usize) -> usize {
    match at(bytes, i) {
        b'\n' => 1,
        b'\r' => {
            if at(bytes, i + 1) == b'\n' {
                2
            } else {
                1
            }
        }
        0xC2 if at(bytes, i + 1) == 0x85 => 2,
        0xE2 if at(bytes, i + 1) == 0x80 && matches!(at(bytes, i + 2), 0xA8 | 0xA9) => 3,
        _ => 0,
    }
}

/// Whether a line break (of any kind) starts at `i`.
#[inline]
pub fn is_break(bytes: &[u8], i: usize) -> bool {
    match at(bytes, i) {
        b'\n' | b'\r' => true,
        0xC2 | 0xE2 => break_len(bytes, i) > 0,
        _ => false,
    }
}

/// A line break or the end of input.
#[inline]
pub fn is_breakz(bytes: &[u8], i: usize) -> bool {
    i >= bytes.len() || is_break(bytes, i)
}

/// A blank, a line break or the end of input.
#[inline]
pub fn is_blankz(bytes: &[u8], i: usize) -> bool {
    is_blank(at(bytes, i)) || is_breakz(bytes, i)
}

/// Letters, digits, `_` and `-`: what anchors, directive names and tag handles are made of.
#[inline]
pub fn is_alpha(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The width in bytes of the UTF-8 character whose first byte is `b`.
#[inline]
pub fn width(b: u8) -> usize {
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// How many characters `bytes` holds (it is valid UTF-8: every byte that is not a continuation starts one).
#[inline]
pub fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// Whether `---` or `...` followed by a blank, a break or the end starts at `i` (a document
/// marker, when `i` is the start of a line).
#[inline]
pub fn is_document_marker(bytes: &[u8], i: usize) -> bool {
    let c = at(bytes, i);
    (c == b'-' || c == b'.')
        && at(bytes, i + 1) == c
        && at(bytes, i + 2) == c
        && is_blankz(bytes, i + 3)
}

/// A byte order mark (U+FEFF) at `i`.
#[inline]
pub fn is_bom(bytes: &[u8], i: usize) -> bool {
    bytes.get(i..i + 3) == Some(b"\xEF\xBB\xBF")
}

/// The first character libyaml's reader refuses ("control characters are not allowed"), as its
/// byte offset and code point. YAML allows tab, line feed, carriage return, NEL and the
/// printable ranges; every other C0/C1 control, DEL, U+FFFE and U+FFFF is refused.
pub fn first_disallowed(text: &str) -> Option<(usize, u32)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    loop {
        // Most bytes pass by table: printable ASCII, tab and breaks, and the bytes of every
        // character past U+07FF that is not U+FFFE/U+FFFF (valid UTF-8 holds no surrogates).
        // Words first, then the word that stopped them byte by byte, then words again. 0x7F
        // (DEL) is refused: as the stop byte, it sends its word to the bytes.
        i = skip_words(bytes, i, 0x20, 0x7F);
        let word_end = (i + 8).min(bytes.len());
        while i < word_end && PASSES[usize::from(bytes[i])] {
            i += 1;
        }
        if i == word_end {
            if i == bytes.len() {
                return None;
            }
            continue;
        }
        let b = bytes[i];
        if b < 0x80 {
            return Some((i, u32::from(b)));
        }
        let w = width(b);
        let c = text[i..i + w].chars().next().map_or(0, u32::from);
        let allowed = c == 0x85
            || (0xA0..=0xD7FF).contains(&c)
            || (0xE000..=0xFFFD).contains(&c)
            || (0x10000..=0x10FFFF).contains(&c);
        if !allowed {
            return Some((i, c));
        }
        i += w;
    }
}

/// Bytes that need no closer look for [`first_disallowed`]: printable ASCII, tab, line feed,
/// carriage return, continuation bytes, and lead bytes of characters that are all allowed
/// (not 0xC2, which starts the C1 controls, and not 0xEF, which starts U+FFFE and U+FFFF).
const PASSES: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 0x7F {
        t[b] = true;
        b += 1;
    }
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[b'\r' as usize] = true;
    let mut b = 0x80;
    while b < 0x100 {
        t[b] = b != 0xC2 && b != 0xEF;
        b += 1;
    }
    t
};

/// Skips whole 8-byte words whose bytes are all ASCII, at least `lo`, and none of them `stop`:
/// long runs of ordinary text (base64 above all) pass eight bytes a step. Returns where the
/// first word that fails begins; the caller looks at it byte by byte.
#[inline]
pub fn skip_words(bytes: &[u8], mut i: usize, lo: u8, stop: u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = ONES * u64::from(lo);
    let stops = ONES * u64::from(stop);
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // A byte under `lo`, a byte with the high bit set, or a byte equal to `stop` (zero
        // after the xor): the classic SWAR tests, which never miss one.
        let under = w.wrapping_sub(below) & !w & HIGH;
        let x = w ^ stops;
        let equal = x.wrapping_sub(ONES) & !x & HIGH;
        if (under | (w & HIGH) | equal) != 0 {
            break;
        }
        i += 8;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_line_breaks_are_breaks() {
        for (text, len) in [
            ("\n", 1),
            ("\r\n", 2),
            ("\r", 1),
            ("\u{85}", 2),
            ("\u{2028}", 3),
            ("\u{2029}", 3),
            ("\u{2027}", 0),
            ("é", 0),
        ] {
            assert_eq!(break_len(text.as_bytes(), 0), len, "{text:?}");
        }
    }

    #[test]
    fn words_stop_at_the_first_byte_that_needs_a_look() {
        let text = b"0123456789abcdef:ghijklmnopqrstuv";
        assert_eq!(skip_words(text, 0, 0x21, b':'), 16);
        assert_eq!(skip_words(b"abcdefgh ijklmnop", 0, 0x21, b':'), 8);
        assert_eq!(skip_words("abcdefghé0123456".as_bytes(), 0, 0x21, b':'), 8);
        assert_eq!(skip_words(b"abc", 0, 0x21, b':'), 0);
        for (i, b) in [0u8, 9, 10, 13, 31, 0x7F, 0x80, 0xFF]
            .into_iter()
            .enumerate()
        {
            let mut word = *b"abcdefgh";
            word[i % 8] = b;
            assert_eq!(skip_words(&word, 0, 0x20, 0x7F), 0, "{b:#x}");
        }
    }

    #[test]
    fn control_characters_are_refused_like_libyaml() {
        assert_eq!(first_disallowed("a\tb\r\n\u{85}é\u{feff}"), None);
        assert_eq!(first_disallowed("ab\u{b}"), Some((2, 0x0B)));
        assert_eq!(first_disallowed("a\u{7f}"), Some((1, 0x7F)));
        assert_eq!(first_disallowed("é\u{9f}"), Some((2, 0x9F)));
        assert_eq!(first_disallowed("\u{fffe}"), Some((0, 0xFFFE)));
        assert_eq!(first_disallowed("\0"), Some((0, 0)));
    }
}
