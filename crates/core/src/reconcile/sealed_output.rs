//! Step 5 with `seal` on: what holds a credential goes out sealed or not at all. The Secrets
//! read from the clusters (kubeconfigs, Cluster API's CA and keys) are left out; an owned Argo
//! CD Secret the plan keeps as it is and a ServiceAccount token Secret are written as
//! SealedSecrets of themselves; and, failing closed, no plain Secret that carries one of those
//! marks is left in the output whatever path the scan took with it (given twice, unsound).

use std::collections::{HashMap, HashSet};

use krm::finding::Severity;
use krm::object::Object;
use krm::{Out, TextStore};

use crate::access;
use crate::convert::argocd::OWNED_LABEL;
use crate::sources::capi::CLUSTER_NAME_LABEL;

use super::context::Ctx;
use super::found::Scan;

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Leaves out the Secrets read from the clusters (unless `keepKubeconfigSecrets`), and seals
/// the plain owned Secrets the plan keeps and the token Secrets as they are.
pub(super) fn seal_or_leave_out<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    removed: &mut HashSet<usize>,
    replaced: &mut HashMap<usize, Out<'x, 'a>>,
    store: &mut TextStore,
) {
    if !ctx.config.keep_kubeconfig_secrets {
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
                    plural(count)
                ),
            );
        }
    }
    let indices: Vec<usize> = scan
        .owned
        .iter()
        .map(|o| o.index)
        .chain(scan.token_secrets.iter().copied())
        .collect();
    let sealed = seal_as_they_are(ctx, &indices, removed, replaced, store);
    if sealed > 0 {
        ctx.report_config(
            Severity::Info,
            Some("seal".into()),
            format!(
                "{sealed} Secret{} kept as {} (an owned Argo CD Secret not changed or held by a guard, a ServiceAccount token Secret) written sealed: the same Secret once opened",
                plural(sealed),
                if sealed == 1 { "it is" } else { "they are" }
            ),
        );
    }
}

/// Fails closed: a plain Secret still in the output that carries Cluster API's cluster label
/// is left out (unless `keepKubeconfigSecrets`), and one labelled as an owned Argo CD Secret or
/// a token Secret is sealed as it is.
pub(super) fn nothing_plain_left<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    removed: &mut HashSet<usize>,
    replaced: &mut HashMap<usize, Out<'x, 'a>>,
    store: &mut TextStore,
) {
    let mut left_out = Vec::new();
    let mut to_seal = Vec::new();
    for (index, item) in ctx.input.items.iter().enumerate() {
        let object = Object::new(&item.node);
        if removed.contains(&index) || replaced.contains_key(&index) || !object.is_secret() {
            continue;
        }
        if object.label(OWNED_LABEL) == Some("true") || access::is_token_secret(object) {
            to_seal.push(index);
        } else if object.label(CLUSTER_NAME_LABEL).is_some() && !ctx.config.keep_kubeconfig_secrets
        {
            left_out.push(index);
        }
    }
    for &index in &left_out {
        removed.insert(index);
        ctx.report(
            index,
            Severity::Info,
            None,
            "not written back: sealed, the output holds no Secret of a cluster's (keepKubeconfigSecrets=true writes it back)".into(),
        );
    }
    seal_as_they_are(ctx, &to_seal, removed, replaced, store);
}

/// Seals each plain Secret at `indices` not yet removed or replaced as it is; one that cannot be
/// sealed is left out, with an error. How many were sealed.
fn seal_as_they_are<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    indices: &[usize],
    removed: &mut HashSet<usize>,
    replaced: &mut HashMap<usize, Out<'x, 'a>>,
    store: &mut TextStore,
) -> usize {
    let Some(sealer) = ctx.sealer.as_mut() else {
        return 0;
    };
    let mut sealed = 0;
    let mut failed = Vec::new();
    for &index in indices {
        let node = &ctx.input.items[index].node;
        if !Object::new(node).is_secret()
            || removed.contains(&index)
            || replaced.contains_key(&index)
        {
            continue;
        }
        match sealer.seal(node, None) {
            Ok(node) => {
                replaced.insert(index, Out::new(ctx.input, node, &[], store));
                sealed += 1;
            }
            Err(e) => failed.push((index, e.to_string())),
        }
    }
    for (index, why) in failed {
        removed.insert(index);
        ctx.report(
            index,
            Severity::Error,
            None,
            format!(
                "not written: it cannot be sealed ({why}), and sealed output holds nothing plain"
            ),
        );
    }
    sealed
}
