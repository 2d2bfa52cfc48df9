//! The text of new items until the output is written. What a new Argo CD Secret copies from its
//! kubeconfig — certificates, keys, tokens — is most of its text, and stands in the input
//! already (base64 inside the kubeconfig Secret's base64): the store keeps where, not a copy, and
//! the writer decodes it again as the item goes out. A large fleet's new Secrets then wait for
//! the plan's guards as a few hundred bytes each.

use std::ops::Range;

use super::b64;
use super::sink::Sink;

/// Where a long value of a new item stands in the input: the bytes `skip..skip + len` of what
/// the base64 text `outer` of the input decodes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    outer: Range<usize>,
    skip: usize,
    len: usize,
}

impl Origin {
    /// Where the bytes `at..at + len` of what `encoded` (base64 text that is a slice of
    /// `input`, in one run) decodes to stand in the input; `None` when `encoded` is not a slice
    /// of `input`. Line-wrapped base64 does not decode piece by piece: its pieces land elsewhere,
    /// and [`origins`] finds they do not read back.
    fn of(input: &str, encoded: &str, at: usize, len: usize) -> Option<Origin> {
        let start = (encoded.as_ptr() as usize).checked_sub(input.as_ptr() as usize)?;
        if start + encoded.len() > input.len() {
            return None;
        }
        // Every four characters decode to three bytes on their own.
        let first = 4 * (at / 3);
        let last = (4 * (at + len).div_ceil(3)).min(encoded.len());
        Some(Origin {
            outer: start + first..start + last,
            skip: at % 3,
            len,
        })
    }

    /// The value's bytes, read from `input` again.
    fn bytes(&self, input: &str) -> Option<Vec<u8>> {
        let mut bytes = b64::decode_exact(input.get(self.outer.clone())?.as_bytes()).ok()?;
        if bytes.len() < self.skip + self.len {
            return None;
        }
        bytes.truncate(self.skip + self.len);
        bytes.drain(..self.skip);
        Some(bytes)
    }

    /// The value, read from `input` again.
    fn read(&self, input: &str) -> Option<String> {
        String::from_utf8(self.bytes(input)?).ok()
    }
}

/// One piece of a kept text: written, or read from the input.
#[derive(Debug)]
enum Piece {
    Text { chunk: usize, range: Range<usize> },
    Input(Origin),
}

/// The text of new items until the output is written, in chunks of at least [`CHUNK`] bytes.
///
/// One allocation per Secret would sit between the short-lived allocations of the conversions
/// around it, and what those free could then only be reused piecemeal. Chunks this large are
/// mapped apart from the heap (glibc maps allocations past its threshold, 128 KiB at first), and
/// each holds thousands of Secrets' text.
#[derive(Debug, Default)]
pub struct TextStore {
    chunks: Vec<String>,
    pieces: Vec<Piece>,
    /// Where a text is written before its long values are cut out of it.
    scratch: String,
}

/// The smallest chunk of a [`TextStore`]: 1 MiB.
pub const CHUNK: usize = 1 << 20;

/// Where a [`TextStore`] keeps one text: its pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pieces: Range<usize>,
}

impl TextStore {
    /// Keeps what `write` writes, with each of `values` found in it (in order) kept as where it
    /// stands in `input` instead — when it reads back from there exactly.
    pub fn write(&mut self, write: impl FnOnce(&mut String), values: &[(&str, Origin)]) -> Stored {
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        write(&mut text);
        let first = self.pieces.len();
        // Where each value stands, in the order of the text (not of the list).
        let mut cuts: Vec<(usize, usize, &Origin)> = values
            .iter()
            .filter_map(|(value, origin)| Some((find_long(&text, value)?, value.len(), origin)))
            .collect();
        cuts.sort_unstable_by_key(|&(at, ..)| at);
        let mut from = 0;
        for (at, len, origin) in cuts {
            if at < from {
                continue;
            }
            self.keep(&text[from..at]);
            self.pieces.push(Piece::Input(origin.clone()));
            from = at + len;
        }
        self.keep(&text[from..]);
        self.scratch = text;
        Stored {
            pieces: first..self.pieces.len(),
        }
    }

    fn keep(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let room = self.chunks.last().map_or(0, |c| c.capacity() - c.len());
        if room < text.len() {
            self.chunks
                .push(String::with_capacity(CHUNK.max(text.len())));
        }
        let chunk = self.chunks.len() - 1;
        let buf = &mut self.chunks[chunk];
        let start = buf.len();
        buf.push_str(text);
        self.pieces.push(Piece::Text {
            chunk,
            range: start..buf.len(),
        });
    }

    /// Writes a kept text to `sink`, its long values read from `input` (the input the values
    /// were found in), ending in a line break.
    pub fn write_out(&self, at: &Stored, input: &str, sink: &mut Sink) {
        let mut ends_in_break = true;
        for piece in &self.pieces[at.pieces.clone()] {
            match piece {
                Piece::Text { chunk, range } => {
                    let text = &self.chunks[*chunk][range.clone()];
                    sink(text);
                    ends_in_break = text.ends_with('\n');
                }
                Piece::Input(origin) => {
                    sink(&origin.read(input).unwrap_or_default());
                    ends_in_break = false;
                }
            }
        }
        if !ends_in_break {
            sink("\n");
        }
    }

    /// A kept text whole (for JSON output, which reads it back).
    pub fn text(&self, at: &Stored, input: &str) -> String {
        let mut text = String::new();
        self.write_out(at, input, &mut |s| text.push_str(s));
        text
    }
}

/// The values of `candidates` that stand in `decoded` (what the base64 text `encoded`, a slice
/// of `input`, decodes to), each with its origin. Base64 in one run (no line breaks: exactly four
/// characters for every three bytes, which its length tells) decodes four characters at a time
/// into three bytes, so a value's bytes read back from the run around it, as they are; anything
/// else keeps its values in the text.
pub fn origins<'v>(
    input: &str,
    encoded: &str,
    decoded: &str,
    candidates: &[&'v str],
) -> Vec<(&'v str, Origin)> {
    if encoded.len() != 4 * decoded.len().div_ceil(3) {
        return Vec::new();
    }
    candidates
        .iter()
        .filter_map(|value| {
            let at = find_long(decoded, value)?;
            Some((*value, Origin::of(input, encoded, at, value.len())?))
        })
        .collect()
}

/// Where `needle`, a long value, first stands in `haystack`. A searcher for a long needle costs
/// about its length to set up (most of a large fleet's conversion time, measured): its first
/// bytes are looked for instead, and each place they stand is checked for the rest.
fn find_long(haystack: &str, needle: &str) -> Option<usize> {
    const HEAD: usize = 24;
    let Some(head) = needle.get(..HEAD) else {
        return haystack.find(needle);
    };
    haystack
        .match_indices(head)
        .map(|(at, _)| at)
        .find(|&at| haystack[at..].starts_with(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_found_where_they_first_stand_whole() {
        let needle = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let hay = format!("x{}y{needle}z{needle}", &needle[..30]);
        assert_eq!(find_long(&hay, needle), hay.find(needle));
        assert_eq!(find_long("short", "or"), Some(2));
        assert_eq!(find_long(&needle[..30], needle), None);
    }

    #[test]
    fn a_value_inside_base64_reads_back_from_any_offset() {
        let inner =
            "prefix: x\nclient-certificate-data: TUlJQ2xvbmdjZXJ0aWZpY2F0ZWRhdGE=\ntail: y\n";
        let encoded = b64::encode(inner.as_bytes());
        for shift in 0..3 {
            let padded = format!("{}{inner}", " ".repeat(shift));
            let encoded_shifted = b64::encode(padded.as_bytes());
            let input = format!("data:\n  value: {encoded_shifted}\n");
            let at = input.find(&encoded_shifted).unwrap();
            let enc = &input[at..at + encoded_shifted.len()];
            let value = "TUlJQ2xvbmdjZXJ0aWZpY2F0ZWRhdGE=";
            let found = origins(&input, enc, &padded, &[value]);
            assert_eq!(found.len(), 1, "shift {shift}");
            assert_eq!(found[0].1.read(&input).as_deref(), Some(value));
        }
        // Not a slice of the input: nothing to point at.
        assert!(origins("other", &encoded, inner, &["client"]).is_empty());
        // Line-wrapped base64 (what `base64` writes at 76 columns) keeps its values in the text.
        let wrapped: String = encoded
            .as_bytes()
            .chunks(76)
            .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
            .collect();
        let input = format!("value: |\n{wrapped}");
        let enc = &input[9..];
        assert!(origins(&input, enc, inner, &["TUlJQ2xvbmdjZXJ0aWZpY2F0ZWRhdGE="]).is_empty());
    }

    /// Every stretch of every text, wherever it stands, reads back from its base64 as it is.
    #[test]
    fn every_stretch_reads_back_from_where_it_stands() {
        let inner: String = (0..97u32)
            .map(|i| char::from(b'!' + ((i * 37) % 90) as u8))
            .collect();
        let encoded = b64::encode(inner.as_bytes());
        let input = format!("value: {encoded}\n");
        let enc = &input[7..7 + encoded.len()];
        for at in 0..inner.len() {
            for len in 1..=inner.len() - at {
                let origin = Origin::of(&input, enc, at, len).unwrap();
                assert_eq!(origin.read(&input).as_deref(), Some(&inner[at..at + len]));
            }
        }
    }

    #[test]
    fn the_text_store_gives_back_every_text_across_chunks() {
        let mut store = TextStore::default();
        let mut texts: Vec<String> = (0..700).map(|i| format!("{i}:").repeat(i * 5)).collect();
        texts.push("x".repeat(CHUNK + 1));
        texts.push("after\n".into());
        let stored: Vec<Stored> = texts
            .iter()
            .map(|t| store.write(|s| s.push_str(t), &[]))
            .collect();
        for (text, at) in texts.iter().zip(&stored) {
            let want = if text.ends_with('\n') || text.is_empty() {
                text.clone()
            } else {
                format!("{text}\n")
            };
            assert_eq!(store.text(at, ""), want);
        }
        assert!(store.chunks.len() > 2);
    }

    #[test]
    fn a_kept_text_comes_out_whole_with_its_values_read_again() {
        let inner = "key: S0VZS0VZS0VZ\n";
        let encoded = b64::encode(inner.as_bytes());
        let input = format!("value: {encoded}\n");
        let enc = &input[7..7 + encoded.len()];
        let found = origins(&input, enc, inner, &["S0VZS0VZS0VZ"]);
        let mut store = TextStore::default();
        let written = |t: &mut String| t.push_str("config: {\"keyData\": \"S0VZS0VZS0VZ\"}");
        let at = store.write(written, &found);
        assert_eq!(store.pieces.len(), 3, "{:?}", store.pieces);
        // Values are cut wherever they stand, whatever the order they are given in.
        let two = "a: QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\nb: QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC\n";
        let encoded = b64::encode(two.as_bytes());
        let input2 = format!("v: {encoded}\n");
        let enc = &input2[3..3 + encoded.len()];
        let (a, b) = (
            "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB",
            "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC",
        );
        let found2 = origins(&input2, enc, two, &[b, a]);
        assert_eq!(found2.len(), 2);
        let mut store2 = TextStore::default();
        let both = store2.write(|t| t.push_str(&format!("[{a}, {b}]")), &found2);
        assert_eq!(store2.text(&both, &input2), format!("[{a}, {b}]\n"));
        assert_eq!(store2.chunks.concat(), "[, ]");
        assert_eq!(
            store.text(&at, &input),
            "config: {\"keyData\": \"S0VZS0VZS0VZ\"}\n"
        );
        // What the text does not hold stays out of it.
        let other = store.write(|t| t.push_str("plain\n"), &found);
        assert_eq!(store.text(&other, &input), "plain\n");
    }
}
