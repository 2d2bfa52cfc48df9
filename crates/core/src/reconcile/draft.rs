//! The Argo CD Secret a conversion would write, drafted as soon as the conversion is made: with
//! the annotations of the Secret of its name it would replace (or kpt's path for a new one),
//! checked by the validator, compared with the owned Secret of its name, and kept as text whose
//! long values are read again from the input when it is written. A conversion then waits for the
//! plan and its guards as a decision's worth of memory, not as a copy of the Secret.

use crate::appsets::ClusterView;
use crate::convert::argocd::ClusterSecret;
use crate::convert::login::{Login, login_of_json};
use crate::validate;
use krm::finding::{Finding, Severity};
use krm::object::{Object, PATH_ANNOTATION};
use krm::{Form, Out, TextStore, store};

use super::changes::changes;
use super::context::{Ctx, Output};
use super::found::{Scan, Target};
use super::ids::SecretId;

/// A drafted Argo CD Secret.
pub(super) struct Draft<'x, 'a> {
    /// What the validator refuses in it, as results for its kubeconfig Secret (said when the
    /// conversion is placed, and nothing is written then).
    pub invalid: Vec<String>,
    /// What differs from the owned Secret of its name, when there is one.
    pub changed: Vec<String>,
    /// The Secret as the output holds it; `None` when it is what the Secret it replaces is
    /// already (an unchanged Secret is never written, so its text is not kept).
    pub out: Option<Out<'x, 'a>>,
    /// The Secret as the ApplicationSet controller would see it, when there is something to
    /// judge (`Ctx::judges_applications`).
    pub view: Option<Box<ClusterView>>,
    /// What the owned Secret it replaces logs in with, and the field that says it: read once,
    /// with the draft, not again by every plan that finds them the same.
    pub replaces: Option<(String, Login)>,
}

/// What the Argo CD Secret at input index `at` logs in with, and the field its `config` is.
pub(super) fn login_at(ctx: &Ctx, at: usize) -> Option<(String, Login)> {
    let (field, config) = ctx.object(at).secret_value("config").ok().flatten()?;
    Some((field, login_of_json(&config)?))
}

/// Where a kubeconfig was read from: its Secret (input index) and field, the base64 text in the
/// input (for a `data` value) and the kubeconfig it decodes to.
pub(super) struct Read<'k> {
    pub from: usize,
    /// Its cluster's outcome, which learns when its credentials expire.
    pub outcome: usize,
    pub field: &'k str,
    pub encoded: Option<&'k str>,
    pub decoded: &'k str,
    /// It is a ClusterProfile's access provider (`field`), whose `cluster` holds the
    /// certificate, not a kubeconfig.
    pub profile: bool,
}

/// The draft of `secret`, unless the Secret of its name is one the plan will not replace (not
/// the function's, or held as it is). What its certificates' lifetimes say about the host's
/// time is said on the kubeconfig they came from, as warnings (the validator calls an expired one
/// an error; converting, the Secret is still written, the certificate being what its platform
/// gives until it rotates it).
pub(super) fn draft<'x, 'a>(
    ctx: &mut Ctx<'x, 'a>,
    scan: &Scan,
    store: &mut TextStore,
    output: Output,
    mut secret: ClusterSecret,
    kubeconfig: Read,
) -> Option<Draft<'x, 'a>> {
    let target = SecretId::new(&secret.namespace, &secret.secret_name);
    let (old, replaceable) = match scan.target(&target) {
        Target::Free => (None, true),
        Target::Replaces(owned) => (Some(owned.index), true),
        Target::Kept(_) => (None, false),
    };
    match old {
        Some(at) => secret.annotations = ctx.object(at).tool_annotations(),
        None if matches!(ctx.input.form, Form::ResourceList { .. }) => {
            secret.annotations = vec![(
                PATH_ANNOTATION.to_string(),
                format!("{}/{}.yaml", secret.namespace, secret.secret_name),
            )];
        }
        None => {}
    }
    let node = secret.to_node(ctx.config.data_field, true);
    let replaces = old.and_then(|at| login_at(ctx, at));
    let view = ctx
        .judges_applications
        .then(|| Box::new(ClusterView::of(Object::new(&node))));
    // The policy validate enforces by default: what convert writes, validate accepts.
    let policy = ctx.config.validation_policy();
    let checked = validate::check_dated_in(&node, &policy, ctx.now, ctx.certificates);
    ctx.holds_until(checked.dated_until);
    if let Some(o) = ctx.outcomes.get(kubeconfig.outcome) {
        o.expires = checked.expires;
    }
    let object = ctx.object(kubeconfig.from);
    // An expired certificate is an error here as in `validate` (what convert writes, validate
    // accepts): the Secret is not written, and one Argo CD has stays as it is.
    let mut expired = Vec::new();
    for (which, finding) in checked.dated {
        // A profile's certificate is a field of its access provider's cluster; a kubeconfig's,
        // a field inside the kubeconfig its Secret holds.
        let (message, field) = if kubeconfig.profile {
            let field = format!("{}.cluster.{}", kubeconfig.field, which.kubeconfig_field());
            (finding.message, field)
        } else {
            let message = format!(
                "kubeconfig {}: {}",
                which.kubeconfig_field(),
                finding.message
            );
            (message, kubeconfig.field.to_string())
        };
        if finding.severity == Severity::Error {
            expired.push(match kubeconfig.profile {
                true => format!("{field}: {message}"),
                false => message,
            });
            continue;
        }
        let said = Finding::warning(message).at(field);
        ctx.results.push(object.finding(said));
    }
    if !replaceable {
        return None;
    }
    // Its warnings repeat what the conversion already said.
    let target = Object::new(&node).resource_ref();
    let invalid = checked
        .findings
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| {
            let field = f.field.as_deref().unwrap_or_default();
            format!("{field}: {}", f.message)
        })
        .chain(expired)
        .map(|why| format!("{target} not written: {why}"))
        .collect();
    let changed = old.map_or_else(Vec::new, |at| {
        let before = &ctx.item(at).node;
        match &ctx.sealer {
            Some(sealer) => sealer.changes(before, &node, changes),
            None => changes(before, &node),
        }
    });
    // Sealed, the Secret is written as its SealedSecret; values whose plaintext the one it
    // replaces holds keep their ciphertext.
    let node = match ctx.sealer.as_mut() {
        Some(sealer) if !(output == Output::Resources && old.is_some() && changed.is_empty()) => {
            let before = old.map(|at| &ctx.input.items[at].node);
            match sealer.seal(&node, before) {
                Ok(sealed) => sealed,
                Err(e) => {
                    let why = format!("{target} not written: {e}");
                    return Some(Draft {
                        invalid: vec![why],
                        changed,
                        out: None,
                        view,
                        replaces,
                    });
                }
            }
        }
        _ => node,
    };
    let sealed = ctx.sealer.is_some();
    let out = match output {
        Output::PlanOnly => Some(Out::New(node)),
        Output::Resources if old.is_some() && changed.is_empty() => None,
        Output::Resources if sealed => Some(Out::new(ctx.input, node, &[], store)),
        Output::Resources => {
            let tls = &secret.config.tls_client_config;
            let long: Vec<&str> = [
                tls.ca_data.as_deref(),
                tls.cert_data.as_deref(),
                tls.key_data.as_ref().map(|k| k.0.as_str()),
                secret.config.bearer_token.as_ref().map(|t| t.0.as_str()),
            ]
            .into_iter()
            .flatten()
            .filter(|v| v.len() >= 64)
            .collect();
            let values = match kubeconfig.encoded {
                Some(encoded) => store::origins(ctx.input.text, encoded, kubeconfig.decoded, &long),
                None => Vec::new(),
            };
            Some(Out::new(ctx.input, node, &values, store))
        }
    };
    Some(Draft {
        invalid,
        changed,
        out,
        view,
        replaces,
    })
}
