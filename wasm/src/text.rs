//! Offsets as JavaScript counts them: byte ranges of the core's UTF-8 text turned into ranges of
//! UTF-16 code units, for a page that marks them in a string.

use std::ops::Range;

/// The same ranges counted in UTF-16 code units (`ranges` sorted, on character boundaries of
/// `text`).
pub fn utf16_ranges(text: &str, ranges: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut bounds: Vec<usize> = ranges.iter().flat_map(|r| [r.start, r.end]).collect();
    let mut units = 0;
    let mut at = 0;
    for bound in &mut bounds {
        let target = (*bound).min(text.len());
        units += text[at..target].encode_utf16().count();
        at = target;
        *bound = units;
    }
    bounds.chunks(2).map(|p| p[0]..p[1]).collect()
}

/// Ranges as the flat array of start and end offsets a page takes.
pub fn flat(text: &str, ranges: &[Range<usize>]) -> Vec<u32> {
    utf16_ranges(text, ranges)
        .into_iter()
        .flat_map(|r| [r.start, r.end])
        .map(|at| u32::try_from(at).unwrap_or(u32::MAX))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_offsets_count_what_javascript_counts() {
        let text = "é😀 token: x y";
        let (x, y) = (text.find('x').unwrap(), text.find('y').unwrap());
        assert_eq!(
            utf16_ranges(text, &[0..2, x..x + 1, y..y + 1]),
            vec![0..1, 11..12, 13..14]
        );
        assert_eq!(text.encode_utf16().count(), 14);
    }
}
