//! Which of a cluster's kubeconfig Secrets its Argo CD Secret is made from: each one read (a
//! ClusterProfile's access provider read as a kubeconfig is), the one Argo CD should use chosen,
//! and why it is a fallback when a better one failed.

use std::borrow::Cow;

use crate::config::Mode;
use crate::convert::argocd::Sensitive;
use crate::convert::kubeconfig::{self, Connection, Credentials};
use crate::profiles::{self, access::Access};
use crate::sources::{Kind, SERVER_ANNOTATION, Variant};
use krm::finding::{Finding, Severity};
use krm::object::Object;

use super::context::Ctx;
use super::found::Candidate;

/// What reading one kubeconfig Secret gave.
pub(super) struct Read<'x> {
    pub connection: Option<Connection>,
    /// The kubeconfig, and its base64 text in the input when it came from `data`.
    pub text: Cow<'x, str>,
    pub encoded: Option<&'x str>,
    /// The Secret field the kubeconfig was read from (`data.value`, `stringData.config`…).
    pub field: String,
    pub diagnostics: Vec<Finding>,
    /// Its login needs a person: another kubeconfig of the cluster is the right choice, not a fallback.
    pub interactive: bool,
    /// Argo CD can reach its server.
    pub reachable: bool,
}

/// The kubeconfig Secret a cluster's Argo CD Secret is made from, and what it gave.
pub(super) struct Chosen<'c, 'x> {
    pub member: &'c Candidate,
    pub read: Read<'x>,
    /// Why it is a fallback, which may not replace a working Secret.
    pub degraded: Option<String>,
}

/// Reads a cluster's kubeconfig Secrets and picks the one Argo CD should use: a user
/// kubeconfig whose login Argo CD renews (push mode), else the plain one whose server Argo CD can
/// reach (vcluster's exported Secret over its `vc-<name>`, which points at the pod's own
/// loopback), else any plain one, a user one, and a sibling last. Every member's findings are
/// reported; those of one not chosen as warnings naming the one that was.
pub(super) fn choose<'c, 'x>(
    ctx: &mut Ctx<'x, '_>,
    members: &[&'c Candidate],
) -> Option<Chosen<'c, 'x>> {
    let mut reads: Vec<Read> = members.iter().map(|c| read(ctx, c)).collect();
    let chosen = pick(ctx.config.mode, members, &reads);
    for (i, read) in reads.iter_mut().enumerate() {
        for mut d in std::mem::take(&mut read.diagnostics) {
            if let Some(c) = chosen.filter(|&c| c != i) {
                if d.severity != Severity::Error {
                    continue;
                }
                // A broken alternative does not stop the cluster; it is still worth fixing.
                d.severity = Severity::Warning;
                d.message = format!(
                    "{} (not used: {} converted instead)",
                    d.message, members[c].id.name
                );
            }
            ctx.results.push(d);
        }
    }
    let chosen = chosen?;
    let member = members[chosen];
    let degraded = fallback_reason(ctx.config.mode, members, &reads, member);
    let read = reads.swap_remove(chosen);
    Some(Chosen {
        member,
        read,
        degraded,
    })
}

/// The member Argo CD should use, by the order [`choose`] gives.
fn pick(mode: Mode, members: &[&Candidate], reads: &[Read<'_>]) -> Option<usize> {
    let by_variant = |v: Variant| {
        let mut found: Vec<usize> = (0..members.len())
            .filter(|&i| members[i].variant == v && reads[i].connection.is_some())
            .collect();
        // Reachable first, otherwise in the order of their names.
        found.sort_by_key(|&i| !reads[i].reachable);
        found.first().copied()
    };
    let (plain, user, sibling) = (
        by_variant(Variant::Plain),
        by_variant(Variant::User),
        by_variant(Variant::Sibling),
    );
    let renewed_user = (0..members.len()).find(|&i| {
        members[i].variant == Variant::User
            && reads[i]
                .connection
                .as_ref()
                .is_some_and(|c| c.config.uses_argocd_k8s_auth())
    });
    match mode {
        Mode::Pull => plain.or(user).or(sibling),
        Mode::Push => renewed_user.or(plain).or(user).or(sibling),
    }
}

/// A user kubeconfig (the long-lived login the provider writes) that failed, with the plain one
/// standing in: a fallback, which may not replace a working Secret. One whose login needs a
/// person never worked in Argo CD, so nothing falls back from it.
fn fallback_reason(
    mode: Mode,
    members: &[&Candidate],
    reads: &[Read<'_>],
    chosen: &Candidate,
) -> Option<String> {
    if mode != Mode::Push || chosen.variant != Variant::Plain {
        return None;
    }
    let (failed, _) = members
        .iter()
        .zip(reads)
        .find(|(m, r)| m.variant == Variant::User && r.connection.is_none() && !r.interactive)?;
    Some(format!(
        "{} could not be converted, and {} is a fallback",
        failed.id.name, chosen.id.name
    ))
}

/// How Argo CD reaches a ClusterProfile's cluster, read as a kubeconfig is: the access
/// provider's entry is the field, what it is worth saying about it the diagnostics.
fn read_profile<'x>(ctx: &Ctx<'x, '_>, c: &Candidate) -> Read<'x> {
    let object = ctx.object(c.index);
    let reached =
        match profiles::access::access(object.node, &c.id.name, &ctx.config.access_providers) {
            Ok(Access::Reached(reached)) => *reached,
            Ok(Access::Withdrawn) => {
                let finding = Finding::error("names no access provider: each entry needs a name")
                    .at("status.accessProviders");
                return Read::failed(object.finding(finding));
            }
            Err(finding) => return Read::failed(object.finding(finding)),
        };
    let reachable = object.annotation(SERVER_ANNOTATION).is_some()
        || kubeconfig::unreachable_host(&reached.server).is_none();
    Read {
        diagnostics: reached
            .notes
            .into_iter()
            .map(|f| object.finding(f))
            .collect(),
        connection: Some(Connection {
            server: reached.server,
            config: reached.config,
            cluster_entry: c.id.name.clone(),
        }),
        text: Cow::Borrowed(""),
        encoded: None,
        field: reached.field,
        interactive: false,
        reachable,
    }
}

/// Decodes and reads one kubeconfig Secret.
fn read<'x>(ctx: &Ctx<'x, '_>, c: &Candidate) -> Read<'x> {
    let object = ctx.object(c.index);
    let source = &ctx.config.sources[c.source];
    if source.kind == Kind::ClusterProfiles {
        return read_profile(ctx, c);
    }
    let (field, text) = match kubeconfig_text(object, &source.keys) {
        Ok(Some(found)) => found,
        Ok(None) => {
            let held = crate::sources::keys_held(object);
            let found = if held.is_empty() {
                String::new()
            } else {
                format!(" (it has {})", held.join(", "))
            };
            let message = format!(
                "is missing: a {} kubeconfig Secret holds the kubeconfig under data.{}{found}",
                source.platform,
                source.keys.join(" or data.")
            );
            let at = format!("data.{}", source.keys[0]);
            return Read::failed(object.finding(Finding::error(message).at(at)));
        }
        Err(finding) => return Read::failed(object.finding(finding)),
    };
    let credentials = match ctx.config.mode {
        Mode::Push => Credentials::Read,
        Mode::Pull => Credentials::Skip,
    };
    let reading = kubeconfig::read(
        &text,
        ctx.config.context.as_deref(),
        credentials,
        ctx.limits,
    );
    let mut diagnostics: Vec<Finding> = reading
        .findings
        .iter()
        .map(|f| {
            let message = match f.field.as_deref().filter(|p| !p.is_empty()) {
                None => format!("kubeconfig {}", f.message),
                Some(path) => format!("kubeconfig {path}: {}", f.message),
            };
            object.finding(Finding::new(f.severity, message).at(field.as_str()))
        })
        .collect();
    let mut connection = reading.connection;
    let encoded = field
        .strip_prefix("data.")
        .and_then(|key| object.data_text(key));
    // Rancher keeps the token beside the kubeconfig rather than in it.
    if let Some(conn) = connection
        .as_mut()
        .filter(|c| credentials == Credentials::Read && !c.config.has_credentials())
    {
        match object.secret_value("token") {
            Ok(Some((_, token))) if !token.trim().is_empty() => {
                conn.config.bearer_token = Some(Sensitive(token.trim().to_string()));
            }
            // A token that is there but unreadable is an error on its own field, not an
            // anonymous login.
            Err(finding) => {
                diagnostics.push(object.finding(finding));
                connection = None;
            }
            _ => diagnostics.push(
                object.finding(
                    Finding::warning(
                        "kubeconfig has no credentials: Argo CD will connect anonymously",
                    )
                    .at(field.as_str()),
                ),
            ),
        }
    }
    let reachable = object.annotation(SERVER_ANNOTATION).is_some()
        || connection
            .as_ref()
            .is_some_and(|c| kubeconfig::unreachable_host(&c.server).is_none());
    Read {
        connection,
        text,
        encoded,
        field,
        diagnostics,
        interactive: reading.interactive,
        reachable,
    }
}

impl Read<'_> {
    fn failed(finding: Finding) -> Self {
        Read {
            connection: None,
            text: Cow::Borrowed(""),
            encoded: None,
            field: String::new(),
            diagnostics: vec![finding],
            interactive: false,
            reachable: false,
        }
    }
}

/// The kubeconfig a Secret holds under the first of `keys` it has: the field and its text.
fn kubeconfig_text<'n>(
    object: Object<'n, '_>,
    keys: &[String],
) -> Result<Option<(String, Cow<'n, str>)>, Finding> {
    for key in keys {
        if let Some(found) = object.secret_value(key)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}
