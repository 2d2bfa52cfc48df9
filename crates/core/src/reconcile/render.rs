//! Step 5: the output the plan describes — the input's items in order, each owned Secret
//! replaced where it stands or left out as the plan says, new Secrets last.

use std::collections::{HashMap, HashSet};

use krm::finding::Severity;
use krm::{self, Out};

use super::context::Ctx;
use super::decision::{Action, Steps};
use super::found::Scan;
use super::sealed_output;

/// Writes the output to `sink`; the input items at `gone` (token Secrets no one uses) are left out.
pub(super) fn render<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    steps: Steps<'x, 'a>,
    gone: &HashSet<usize>,
    sink: &mut krm::Sink,
) {
    let Steps {
        steps, mut store, ..
    } = steps;
    let mut replaced: HashMap<usize, Out<'x, 'a>> = HashMap::new();
    let mut removed: HashSet<usize> = gone.clone();
    let mut appended: Vec<Out> = Vec::new();
    for step in steps {
        match (step.action, step.old, step.out) {
            (Action::Create, _, Some(out)) => appended.push(out),
            (Action::Update { .. } | Action::Rename { .. }, Some(old), Some(out))
                if in_place(ctx, old, &step.secret) =>
            {
                replaced.insert(old, out);
            }
            (Action::Rename { .. }, Some(old), out) => {
                removed.insert(old);
                appended.extend(out);
            }
            (Action::Prune, Some(old), _) => {
                removed.insert(old);
            }
            _ => {}
        }
    }
    // Sealed, what holds a credential goes out sealed or not at all; first, so that a second
    // copy of an item goes with it below.
    if ctx.sealer.is_some() {
        sealed_output::seal_or_leave_out(ctx, scan, &mut removed, &mut replaced, &mut store);
    }
    // A copy goes wherever its first goes: out when the first is removed or rewritten.
    for &super::found::SecondCopy { copy, first } in &scan.copies {
        if removed.contains(&first) || replaced.contains_key(&first) {
            removed.insert(copy);
            let what = ctx.object(copy).resource_ref();
            ctx.report(
                copy,
                Severity::Info,
                None,
                format!("{what} is given twice (items {first} and {copy}): the second copy goes with the first"),
            );
        }
    }
    if ctx.sealer.is_some() {
        sealed_output::nothing_plain_left(ctx, &mut removed, &mut replaced, &mut store);
    }
    let input = ctx.input;
    let mut out: Vec<Out> = Vec::with_capacity(input.items.len() + appended.len());
    for (index, item) in input.items.iter().enumerate() {
        if removed.contains(&index) || item.source_only {
            continue;
        }
        out.push(replaced.remove(&index).unwrap_or(Out::Keep(item)));
    }
    out.extend(appended);
    krm::render(input, &out, &store, &ctx.results, sink);
}

/// Whether the Secret at input index `old` is the one `secret` names (a rewrite in place).
fn in_place(ctx: &Ctx, old: usize, secret: &super::ids::SecretId) -> bool {
    let object = ctx.object(old);
    object.namespace() == secret.namespace && object.name() == Some(secret.name.as_str())
}
