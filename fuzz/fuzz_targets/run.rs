//! Fuzzes the whole function: any bytes in, never a panic, the same output every time, the
//! output stable under a second run, and items cut while they are read written as whole ones.
#![no_main]

use capi2argo::krm::{self, Text};
use capi2argo::yaml::same_content;
use capi2argo::{Limits, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = Options {
        // Small limits keep each execution fast; the code paths are the same.
        limits: Limits {
            max_input_bytes: 1 << 20,
            max_nodes: 200_000,
            max_alias_nodes: 10_000,
            ..Limits::default()
        },
        ..Default::default()
    };
    // A reader that reads no kind cuts every item it may: each must still be written as the
    // whole item is (copied from the same text, or emitted from the same tree).
    let limits = &options.limits;
    if let (Ok(cut), Ok(whole)) = (
        krm::parse_reading(data, limits, Some(|_| false)),
        krm::parse(data, limits),
    ) {
        assert_eq!(cut.items.len(), whole.items.len());
        for (c, w) in cut.items.iter().zip(&whole.items) {
            assert_eq!(c.text, w.text, "a cut item is written differently");
            if !matches!(w.text, Text::Span(_)) {
                assert!(same_content(&c.node, &w.node), "a cut item is emitted cut");
            }
        }
    }
    if let Ok(first) = capi2argo::run(data, &options) {
        // Determinism: the same input gives the same output, results and their order included
        // (hash maps are seeded anew for every map, so an order taken from one shows here).
        let same = capi2argo::run(data, &options).expect("the same input is read the same way");
        assert_eq!(first.output, same.output, "same input, different output");
        // Idempotence: the function's own output goes through unchanged (results aside).
        let second = capi2argo::run(first.output.as_bytes(), &options)
            .expect("the function's own output is valid input");
        // Results may differ (nothing left to prune, say): compare everything before them, in
        // YAML and in JSON output alike.
        let cut = |s: &str| capi2argo::krm::render::results_start(s).unwrap_or(s.len());
        assert_eq!(
            &first.output[..cut(&first.output)],
            &second.output[..cut(&second.output)]
        );
    }
});
