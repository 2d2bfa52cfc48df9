//! Step 5: the output the plan describes — the input's items in order, each owned Secret
//! replaced where it stands or left out as the plan says, new Secrets last.

use std::collections::{HashMap, HashSet};

use krm::finding::Severity;
use krm::{self, Out};

use super::context::Ctx;
use super::decision::{Action, Steps};
use super::found::Scan;

/// Writes the output to `sink`; the input items at `gone` (token Secrets no one uses) are left out.
pub(super) fn render(
    ctx: &mut Ctx,
    scan: &Scan,
    steps: Steps,
    gone: &HashSet<usize>,
    sink: &mut krm::Sink,
) {
    let Steps {
        steps, mut store, ..
    } = steps;
    let mut replaced: HashMap<usize, Out> = HashMap::new();
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
    // Sealed, the output holds no credential: the kubeconfig Secrets read are not written back.
    if ctx.sealer.is_some() && !ctx.config.keep_kubeconfig_secrets {
        let left: HashSet<usize> = scan
            .kubeconfigs
            .iter()
            .chain(&scan.credential_secrets)
            .copied()
            .filter(|i| !removed.contains(i))
            .collect();
        if !left.is_empty() {
            let count = left.len();
            removed.extend(left);
            ctx.report_config(
                Severity::Info,
                Some("seal".into()),
                format!(
                    "{count} Secret{} of the clusters (kubeconfigs, and the CA and keys Cluster API made for a cluster) not written back: sealed, the output holds no credential (keepKubeconfigSecrets=true writes them back)",
                    if count == 1 { "" } else { "s" }
                ),
            );
        }
    }
    // A plain owned Secret the plan keeps as it is (a guard held it, or nothing changed in a
    // package from before sealing) is still written sealed: the same Secret once opened, and
    // no credential in the output.
    // The token Secrets that travel with the package are written as SealedSecrets of
    // themselves in the same way.
    if let Some(sealer) = ctx.sealer.as_mut() {
        let mut kept_plain = 0;
        let indices = scan
            .owned
            .iter()
            .map(|o| o.index)
            .chain(scan.token_secrets.iter().copied());
        for index in indices {
            let node = &ctx.input.items[index].node;
            let plain = krm::object::Object::new(node).is_secret();
            if !plain || removed.contains(&index) || replaced.contains_key(&index) {
                continue;
            }
            if let Ok(sealed) = sealer.seal(node, None) {
                replaced.insert(index, Out::new(ctx.input, sealed, &[], &mut store));
                kept_plain += 1;
            }
        }
        if kept_plain > 0 {
            ctx.report_config(
                Severity::Info,
                Some("seal".into()),
                format!(
                    "{kept_plain} Secret{} kept as {} (an owned Argo CD Secret not changed or held by a guard, a ServiceAccount token Secret) written sealed: the same Secret once opened",
                    if kept_plain == 1 { "" } else { "s" },
                    if kept_plain == 1 { "it is" } else { "they are" }
                ),
            );
        }
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
