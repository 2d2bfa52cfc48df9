//! The benchmark's floor: the least YAML work any implementation of capi2argo has to do, done
//! with the fastest YAML code available to this project (saphyr-parser's event stream, building
//! no values). The benchmark runs it exactly like the function: ResourceList on stdin, output on
//! stdout, one process per run.
//!
//! What it does, and nothing more:
//! 1. reads all of stdin and checks it is UTF-8;
//! 2. pulls every saphyr-parser event of the whole ResourceList, tracking only the mapping keys
//!    on the current path, and keeps each item's `kind` and `data.value` scalars (borrowed from
//!    the input when the parser can);
//! 3. for every item of `kind: Secret` with a `data.value`: base64-decodes it, checks the result
//!    is UTF-8, and pulls every parser event of that kubeconfig (no values built);
//! 4. "re-emits" the ResourceList by writing the input bytes back to stdout in one write.
//!
//! What it does NOT do (the function does all of these): look at names, labels or types; select
//! a context; base64-decode the certificate `*-data` fields inside the kubeconfig to check they
//! are PEM (`--decode-data` adds this); build or write the new Argo CD Secrets (about 1.5× each
//! kubeconfig's certificate text); produce results. So it is a lower bound, not a competitor.
//!
//! `--scan` replaces step 2 with a line scan (no YAML parse of the list): every line
//! `<indent>value: <base64>` is decoded and, when it is a kubeconfig, parsed as in step 3. That is
//! the "scan + kubeconfig parse" floor: what is left when the list itself costs next to nothing.
//!
//! Usage: capi2argo-floor [--decode-data] [--scan] < fleet.yaml > /dev/null
//! It prints a one-line summary (items, kubeconfigs, events) on stderr.

use std::borrow::Cow;
use std::hint::black_box;
use std::io::{Read, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use saphyr_parser::{Event, Parser};

/// One open collection on the parser's path.
enum Frame<'a> {
    /// A mapping: the key whose value comes next (`None` while a key is expected).
    Map {
        key: Option<Cow<'a, str>>,
        expect_key: bool,
    },
    Seq,
}

#[derive(Default)]
struct Item<'a> {
    kind: Option<Cow<'a, str>>,
    value: Option<Cow<'a, str>>,
}

fn main() {
    let decode_data = std::env::args().any(|a| a == "--decode-data");
    let scan = std::env::args().any(|a| a == "--scan");
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .expect("read stdin");
    let text = std::str::from_utf8(&input).expect("input is UTF-8");

    // 2. The whole ResourceList as an event stream.
    let mut stack: Vec<Frame> = Vec::with_capacity(64);
    let mut items: Vec<Item> = Vec::new();
    let mut current = Item::default();
    let mut events = 0usize;
    let events_of_list = if scan {
        None
    } else {
        Some(Parser::new_from_str(text))
    };
    for ev in events_of_list.into_iter().flatten() {
        let (ev, _span) = ev.expect("valid YAML");
        events += 1;
        // Is this event a mapping key? Then remember it and go on.
        if let Some(Frame::Map { key, expect_key }) = stack.last_mut() {
            if *expect_key {
                if let Event::Scalar(k, ..) = &ev {
                    *key = Some(k.clone());
                    *expect_key = false;
                    continue;
                }
                if matches!(ev, Event::MappingEnd) {
                    stack.pop();
                    if stack.len() == 2 && key_is(&stack, 0, "items") {
                        items.push(std::mem::take(&mut current));
                    }
                    value_done(&mut stack);
                    continue;
                }
                // A complex key: treated as a value under no key (never happens in K8s objects).
                *expect_key = false;
                *key = None;
            }
        }
        match ev {
            Event::MappingStart(..) => stack.push(Frame::Map {
                key: None,
                expect_key: true,
            }),
            Event::SequenceStart(..) => stack.push(Frame::Seq),
            Event::SequenceEnd => {
                stack.pop();
                value_done(&mut stack);
            }
            Event::Scalar(v, ..) => {
                // Paths: root{items}[i]{kind} and root{items}[i]{data}{value}.
                match stack.len() {
                    3 if key_is(&stack, 0, "items") && key_is(&stack, 2, "kind") => {
                        current.kind = Some(v)
                    }
                    4 if key_is(&stack, 0, "items")
                        && key_is(&stack, 2, "data")
                        && key_is(&stack, 3, "value") =>
                    {
                        current.value = Some(v)
                    }
                    _ => {}
                }
                value_done(&mut stack);
            }
            Event::Alias(_) => value_done(&mut stack),
            _ => {}
        }
    }

    // --scan: the values come from a line scan instead.
    if scan {
        for line in text.lines() {
            if let Some(v) = line.trim_start().strip_prefix("value: ") {
                items.push(Item {
                    kind: Some(Cow::Borrowed("Secret")),
                    value: Some(Cow::Borrowed(v)),
                });
            }
        }
    }

    // 3. Each kubeconfig: decode, then its event stream.
    let mut kubeconfigs = 0usize;
    let mut kc_events = 0usize;
    let mut decoded_bytes = 0usize;
    let mut buf = Vec::new();
    let mut data_buf = Vec::new();
    for item in &items {
        let (Some(kind), Some(value)) = (&item.kind, &item.value) else {
            continue;
        };
        if kind != "Secret" {
            continue;
        }
        buf.clear();
        if STANDARD.decode_vec(value.as_bytes(), &mut buf).is_err() {
            continue;
        }
        let Ok(kubeconfig) = std::str::from_utf8(&buf) else {
            continue;
        };
        kubeconfigs += 1;
        let mut last_key_is_data = false;
        // (is a mapping, expects a key next) per open collection; only used by --decode-data.
        let mut open: Vec<(bool, bool)> = Vec::with_capacity(16);
        for ev in Parser::new_from_str(kubeconfig) {
            let (ev, _span) = ev.expect("valid kubeconfig YAML");
            kc_events += 1;
            if !decode_data {
                continue;
            }
            // --decode-data: base64-decode every `*-data` value, as the PEM check needs.
            match &ev {
                Event::Scalar(s, ..) if matches!(open.last(), Some((true, true))) => {
                    last_key_is_data = s.ends_with("-data");
                    if let Some(top) = open.last_mut() {
                        top.1 = false;
                    }
                }
                Event::Scalar(s, ..) => {
                    if last_key_is_data {
                        data_buf.clear();
                        if STANDARD.decode_vec(s.as_bytes(), &mut data_buf).is_ok() {
                            decoded_bytes += black_box(&data_buf).len();
                        }
                    }
                    last_key_is_data = false;
                    after_value(&mut open);
                }
                Event::MappingStart(..) => {
                    last_key_is_data = false;
                    open.push((true, true));
                }
                Event::SequenceStart(..) => {
                    last_key_is_data = false;
                    open.push((false, false));
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    open.pop();
                    after_value(&mut open);
                }
                Event::Alias(_) => after_value(&mut open),
                _ => {}
            }
        }
    }
    black_box((kc_events, decoded_bytes));

    // 4. Re-emit: every item unchanged, so the input itself.
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&input).expect("write stdout");
    stdout.flush().expect("flush stdout");
    eprintln!(
        "floor: {} items, {} kubeconfigs, {} + {} events{}",
        items.len(),
        kubeconfigs,
        events,
        kc_events,
        if decode_data {
            format!(", {decoded_bytes} bytes of *-data decoded")
        } else {
            String::new()
        }
    );
}

/// After a value: the enclosing mapping expects a key again.
fn value_done(stack: &mut [Frame]) {
    if let Some(Frame::Map { expect_key, .. }) = stack.last_mut() {
        *expect_key = true;
    }
}

fn key_is(stack: &[Frame], depth: usize, name: &str) -> bool {
    matches!(&stack[depth], Frame::Map { key: Some(k), .. } if k == name)
}

/// After a value inside a kubeconfig: the enclosing mapping expects a key again.
fn after_value(open: &mut [(bool, bool)]) {
    if let Some((true, expect_key)) = open.last_mut() {
        *expect_key = true;
    }
}
