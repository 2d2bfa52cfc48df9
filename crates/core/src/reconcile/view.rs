//! The plan shown: one line per Argo CD cluster Secret for people, JSON for tools, and the API
//! requests that carry it out, each conditional on what was read. The text and JSON never hold
//! a value from a Secret's data besides the cluster's name and server (a server's user and
//! password left out); the requests, which write the new Secrets, hold their credentials.

use crate::access;
use crate::appsets::{AppChange, AppRef, AppSetPlan, ApplicationEffect, ApplicationResources};
use crate::config::API_VERSION;
use crate::validate::expiry::instant;
use yaml::{Node, Value};

use crate::validate::expiry;

use super::decision::{Action, Held};
use super::ids::SecretId;
use super::outcome::{ClusterOutcome, ClusterState};
use super::public::{Entry, Plan, Write};
use crate::request::Request;
use krm::{Preconditions, Secret};

/// How `capi2argo plan` shows the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    /// One line per Secret and a summary line.
    Text,
    /// The plan as one JSON object (`kind: Plan`).
    Json,
    /// The API requests that carry the plan out, one per line: `create PATH BODY`,
    /// `replace PATH BODY` and `delete PATH BODY`, as `kubectl <verb> --raw PATH -f -` takes
    /// them. A create fails when a Secret of its name exists by then; a replace carries the
    /// `resourceVersion` read, so the API server refuses it when the Secret changed since; a
    /// delete carries `DeleteOptions` with the `uid` and `resourceVersion` read. Writes come
    /// first, so a rename's new Secret exists before the old one goes.
    Requests,
}

/// The actions in the order the summary counts them.
const WORDS: &[&str] = &["create", "update", "rename", "prune", "kept", "unchanged"];

impl Plan {
    /// The plan in `format`.
    pub fn show(&self, format: PlanFormat) -> String {
        let mut text = String::new();
        match format {
            PlanFormat::Text => self.text(&mut text),
            PlanFormat::Json => {
                yaml::emit::write_json(&mut text, &self.json(), Some(0));
                text.push('\n');
            }
            PlanFormat::Requests => {
                for r in self.requests() {
                    let (verb, path, body) = (r.verb().word(), r.path(), r.body());
                    text.push_str(&format!("{verb} {path} {body}\n"));
                }
            }
        }
        text
    }

    /// The API requests that carry the plan out, writes first (a rename's new Secret exists
    /// before the old one goes), then deletes. Only a plan made without output
    /// ([`Output::PlanOnly`](super::Output::PlanOnly)) holds the Secrets it writes.
    pub fn requests(&self) -> Vec<Request> {
        let writes = self.writes.iter().map(write_request);
        let deletes = self.deletes().map(|e| {
            let id = match &e.action {
                Action::Rename { from, .. } => from,
                _ => &e.secret,
            };
            delete_request(id, &e.uid, &e.resource_version)
        });
        let tokens = self
            .token_deletes
            .iter()
            .map(|d| delete_request(&d.secret, &d.uid, &d.resource_version));
        writes.chain(deletes).chain(tokens).collect()
    }

    /// The entries whose existing Secret goes: prunes, and renames to a Secret of another name.
    pub fn deletes(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| match &e.action {
            Action::Prune => true,
            Action::Rename { from, .. } => *from != e.secret,
            _ => false,
        })
    }

    /// How many entries take each action, in the summary's order.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        WORDS
            .iter()
            .map(|w| {
                let n = self
                    .entries
                    .iter()
                    .filter(|e| e.action.word() == *w)
                    .count();
                (*w, n)
            })
            .collect()
    }

    /// The plan as text without the line of each unchanged Secret (what follows such a line
    /// stays): what a host that logs what changes reads, without writing a line for every
    /// Secret of a large fleet.
    pub fn text_of_changes(&self) -> String {
        let mut text = String::new();
        self.text_with(&mut text, false);
        text
    }

    fn text(&self, out: &mut String) {
        self.text_with(out, true);
    }

    fn text_with(&self, out: &mut String, unchanged: bool) {
        let by_cluster = self.applications.by_cluster();
        for e in &self.entries {
            let word = e.action.word();
            let cluster = match &e.action {
                Action::Rename { from, .. } => from,
                _ => &e.secret,
            };
            if !unchanged && e.action == Action::Unchanged {
                for (set, change) in by_cluster.get(cluster).into_iter().flatten() {
                    out.push_str(&application_line(set, change));
                }
                continue;
            }
            let line = match &e.action {
                Action::Create => match &e.source {
                    Some(source) => format!("{} ({}) from {source}", e.secret, e.cluster),
                    None => format!("{} ({})", e.secret, e.cluster),
                },
                Action::Update { changed } => {
                    format!("{} ({}): {}", e.secret, e.cluster, changed.join(", "))
                }
                Action::Rename {
                    from,
                    from_cluster,
                    from_source,
                } => {
                    let mut line = if *from == e.secret {
                        format!("{} ({from_cluster} -> {})", e.secret, e.cluster)
                    } else {
                        format!("{from} ({from_cluster}) -> {} ({})", e.secret, e.cluster)
                    };
                    if let (Some(was), Some(now)) = (from_source, &e.source) {
                        line.push_str(&format!(": made from {now}, was {was}"));
                    }
                    line
                }
                Action::Kept { reason } => format!("{} ({}): {reason}", e.secret, e.cluster),
                Action::Prune | Action::Unchanged => format!("{} ({})", e.secret, e.cluster),
            };
            out.push_str(&format!("{word:<9} {line}\n"));
            for (set, change) in by_cluster.get(cluster).into_iter().flatten() {
                out.push_str(&application_line(set, change));
            }
        }
        // A cluster that gets no Argo CD Secret this time has no entry: it has a line of its own.
        let unplaced: Vec<&ClusterOutcome> = self
            .clusters
            .iter()
            .filter(|c| c.secret.is_none())
            .collect();
        for c in &unplaced {
            let reason = c.reason.as_deref().unwrap_or_default();
            out.push_str(&format!(
                "{:<9} {} ({}): {reason}\n",
                c.state.word(),
                c.source,
                c.cluster
            ));
        }
        let mut counts: Vec<String> = self
            .counts()
            .into_iter()
            .map(|(w, n)| match w {
                "kept" | "unchanged" => format!("{n} {w}"),
                _ => format!("{n} to {w}"),
            })
            .collect();
        let failed = unplaced
            .iter()
            .filter(|c| c.state == ClusterState::Failed)
            .count();
        if failed > 0 {
            counts.push(format!("{failed} failed without an Argo CD Secret"));
        }
        let waiting = unplaced
            .iter()
            .filter(|c| c.state == ClusterState::Waiting)
            .count();
        if waiting > 0 {
            counts.push(format!("{waiting} waiting for a token"));
        }
        self.token_lines(out);
        self.application_lines(out);
        if let Some(line) = self.posture_line() {
            out.push_str(&line);
        }
        out.push_str(&format!("plan: {}\n", counts.join(", ")));
        if !self.overrides.is_empty() {
            let given: Vec<String> = self
                .overrides
                .iter()
                .map(|o| format!("--set {o}"))
                .collect();
            out.push_str(&format!(
                "held: if all of the change is meant, one run with {} lets it through\n",
                given.join(" ")
            ));
        }
    }

    /// What the plan makes ApplicationSets do that no entry shows (the local cluster's), what
    /// of them it cannot judge, the Applications that lose their cluster, what each guard
    /// protected, and a summary. Nothing when the input held no ApplicationSet or Application.
    fn application_lines(&self, out: &mut String) {
        let apps = &self.applications;
        for set in &apps.sets {
            for change in set.changes.iter().filter(|c| c.cluster.is_none()) {
                out.push_str(&application_line(set, change));
            }
            if let Some(why) = &set.refused {
                out.push_str(&format!(
                    "{:<9} {}: Argo CD refuses it: {why}\n",
                    "appset", set.application_set
                ));
            }
            for why in &set.beyond {
                out.push_str(&format!(
                    "{:<9} {}: not judged in full: {why}\n",
                    "appset", set.application_set
                ));
            }
        }
        for s in &apps.stranded {
            out.push_str(&format!(
                "{:<9} application {}: its destination ({}) no longer resolves: it stops syncing\n",
                "stranded", s.application, s.destination
            ));
        }
        for held in self.guards.iter().filter(|h| !h.applications.is_empty()) {
            let names: Vec<String> = held.applications.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "{:<9} {} kept {} {} from deletion: {}\n",
                "guard",
                held.guard.setting(),
                names.len(),
                if names.len() == 1 {
                    "Application"
                } else {
                    "Applications"
                },
                super::guard::listed_names(&names)
            ));
        }
        if let Some(summary) = self.application_summary() {
            out.push_str(&format!("applications: {summary}\n"));
        }
    }

    /// How many Applications the plan makes ApplicationSets delete, keep and create, lose their
    /// cluster, and the guards kept; `None` when nothing was judged.
    fn application_summary(&self) -> Option<String> {
        let apps = &self.applications;
        let protected: usize = self.guards.iter().map(|h| h.applications.len()).sum();
        if apps.sets.is_empty() && apps.stranded.is_empty() && protected == 0 {
            return None;
        }
        let mut deletes = 0;
        let mut undeploying = 0;
        let mut kept = 0;
        let mut creates = 0;
        let mut more = false;
        for c in apps.sets.iter().flat_map(|s| &s.changes) {
            match &c.effect {
                ApplicationEffect::Delete { resources, .. } => {
                    deletes += 1;
                    undeploying += usize::from(*resources == ApplicationResources::Undeployed);
                }
                ApplicationEffect::Keep { .. } => kept += 1,
                ApplicationEffect::Create { more: m, .. } => {
                    creates += 1;
                    more |= *m;
                }
            }
        }
        let mut parts = vec![format!(
            "{deletes} to delete ({undeploying} undeploying their resources), {kept} kept by policy, {creates}{} to create",
            if more { " or more" } else { "" }
        )];
        if !apps.stranded.is_empty() {
            parts.push(format!("{} losing their cluster", apps.stranded.len()));
        }
        if protected > 0 {
            parts.push(format!("{protected} kept by guards"));
        }
        let unjudged = apps
            .sets
            .iter()
            .filter(|s| s.refused.is_some() || !s.beyond.is_empty())
            .count();
        if unjudged > 0 {
            parts.push(format!("{unjudged} ApplicationSet(s) not judged in full"));
        }
        Some(parts.join(", "))
    }

    /// What Argo CD holds for the fleet once the plan is carried out, in one line, admin keys
    /// first.
    fn posture_line(&self) -> Option<String> {
        let total: usize = self.posture.iter().map(|(_, n)| n).sum();
        let ((kind, n), rest) = self.posture.split_first()?;
        let verb = if *n == 1 { "gives" } else { "give" };
        let clusters = if total == 1 { "cluster" } else { "clusters" };
        let mut line = format!("posture: {n} of {total} {clusters} {verb} Argo CD {kind}");
        for (kind, n) in rest {
            line.push_str(&format!("; {n} {kind}"));
        }
        line.push('\n');
        Some(line)
    }

    /// `credentials: serviceAccount`: what each cluster logs in with, and the token Secrets
    /// that go. Nothing is said in `admin` mode, where every Secret logs in as its kubeconfig.
    fn token_lines(&self, out: &mut String) {
        if self.credentials == access::CredentialMode::Admin && self.token_deletes.is_empty() {
            return;
        }
        if self.credentials == access::CredentialMode::ServiceAccount {
            out.push_str("credentials: serviceAccount (a bound ServiceAccount token each)\n");
        }
        for t in &self.tokens {
            let state = match (t.due, &t.access, t.expires) {
                (_, Err(why), _) => format!("cannot be minted: {why}"),
                (Some(due), _, _) => format!("to mint ({})", due.describe()),
                (None, _, Some(expires)) => format!("expires {}", instant(expires)),
                (None, _, None) => "current".into(),
            };
            let state = if t.reapply {
                format!(
                    "{state}; what it may do changed: its RBAC is applied again, the token kept"
                )
            } else {
                state
            };
            let state = match t.retire.len() {
                0 => state,
                n => format!(
                    "{state}; {n} replaced token{} revoked now",
                    if n == 1 { "" } else { "s" }
                ),
            };
            out.push_str(&format!(
                "{:<9} {} ({}) as {}: {state}\n",
                "token", t.secret, t.cluster, t.grant.account
            ));
            match &t.grant.granted {
                access::Granted::Impersonate(accounts) => {
                    out.push_str(&format!(
                        "{:<9}   reads everything; syncs only as the AppProjects' ServiceAccounts\n",
                        ""
                    ));
                    for a in accounts {
                        let projects: Vec<String> = a
                            .projects
                            .iter()
                            .map(|(p, r)| format!("{p} as {r}"))
                            .collect();
                        let elsewhere = a.elsewhere();
                        let bound_in = if elsewhere.is_empty() {
                            String::new()
                        } else {
                            format!(", bound in {}", elsewhere.join(", "))
                        };
                        out.push_str(&format!(
                            "{:<9}   impersonates {}/{} ({}{bound_in})\n",
                            "",
                            a.namespace,
                            a.name,
                            projects.join(", ")
                        ));
                    }
                    for note in &t.not_provisioned {
                        out.push_str(&format!("{:<9}   not set up: {note}\n", ""));
                    }
                }
                granted => out.push_str(&format!("{:<9}   {}\n", "", granted_words(granted))),
            }
        }
        for d in &self.token_deletes {
            let unbind = match &d.unbind {
                Ok(_) => ", its token revoked".to_string(),
                Err(why) => format!(", its token not revoked ({why})"),
            };
            let revoke = if d.revoke.is_some() {
                ", its ServiceAccount and RBAC revoked"
            } else {
                ""
            };
            out.push_str(&format!(
                "{:<9} {} (token of {}){unbind}{revoke}\n",
                "delete", d.secret, d.kubeconfig
            ));
        }
    }

    /// The plan as a JSON object, written by the same emitter as JSON output.
    fn json(&self) -> Node<'static> {
        let strings = |v: &[String]| Node::seq(v.iter().cloned().map(Node::string).collect());
        let by_cluster = self.applications.by_cluster();
        let entries = self
            .entries
            .iter()
            .map(|e| {
                let mut fields = vec![
                    ("action", Node::string(e.action.word())),
                    ("secret", id(&e.secret)),
                    ("cluster", Node::string(e.cluster.clone())),
                    ("server", Node::string(e.server.clone())),
                ];
                if let Some(source) = &e.source {
                    fields.push(("source", id(source)));
                }
                if let Some(uid) = &e.uid {
                    fields.push(("uid", Node::string(uid.clone())));
                }
                if let Some(version) = &e.resource_version {
                    fields.push(("resourceVersion", Node::string(version.clone())));
                }
                match &e.action {
                    Action::Update { changed } => fields.push(("changed", strings(changed))),
                    Action::Rename {
                        from,
                        from_cluster,
                        from_source,
                    } => {
                        fields.push(("from", id(from)));
                        fields.push(("fromCluster", Node::string(from_cluster.clone())));
                        if let Some(was) = from_source {
                            fields.push(("fromSource", id(was)));
                        }
                    }
                    Action::Kept { reason } => {
                        fields.push(("reason", Node::string(reason.clone())))
                    }
                    _ => {}
                }
                let cluster = match &e.action {
                    Action::Rename { from, .. } => from,
                    _ => &e.secret,
                };
                let changes: Vec<Node<'static>> = by_cluster
                    .get(cluster)
                    .into_iter()
                    .flatten()
                    .map(|(set, change)| application_json(Some(set), change))
                    .collect();
                if !changes.is_empty() {
                    fields.push(("applications", Node::seq(changes)));
                }
                Node::map(fields)
            })
            .collect();
        let summary = self
            .counts()
            .into_iter()
            .map(|(w, n)| (w, Node::plain(n.to_string())))
            .collect();
        let clusters = self.clusters.iter().map(cluster_json).collect();
        let guards = self.guards.iter().map(guard_json).collect();
        let mut fields = vec![
            ("apiVersion", Node::string(API_VERSION)),
            ("kind", Node::string("Plan")),
            ("entries", Node::seq(entries)),
            ("clusters", Node::seq(clusters)),
            ("guards", Node::seq(guards)),
            ("summary", Node::map(summary)),
        ];
        if !self.overrides.is_empty() {
            let given = self
                .overrides
                .iter()
                .map(|o| Node::string(o.clone()))
                .collect();
            fields.push(("overrides", Node::seq(given)));
        }
        if let Some(summary) = self.application_summary() {
            let sets = self
                .applications
                .sets
                .iter()
                .map(|set| {
                    let mut fields = vec![
                        (
                            "applicationSet",
                            Node::map(vec![
                                (
                                    "namespace",
                                    Node::string(set.application_set.namespace.clone()),
                                ),
                                ("name", Node::string(set.application_set.name.clone())),
                            ]),
                        ),
                        ("applications", Node::plain(set.applications.to_string())),
                        ("policy", Node::string(set.policy.clone())),
                        (
                            "changes",
                            Node::seq(
                                set.changes
                                    .iter()
                                    .map(|c| {
                                        let mut node = application_json(None, c);
                                        if let (Some(cluster), Value::Map(entries)) =
                                            (&c.cluster, &mut node.value)
                                        {
                                            entries.push((Node::string("cluster"), id(cluster)));
                                        }
                                        node
                                    })
                                    .collect(),
                            ),
                        ),
                    ];
                    if let Some(why) = &set.refused {
                        fields.push(("refused", Node::string(why.clone())));
                    }
                    if !set.beyond.is_empty() {
                        fields.push(("notJudged", strings(&set.beyond)));
                    }
                    Node::map(fields)
                })
                .collect();
            fields.push(("applicationSets", Node::seq(sets)));
            let stranded = self
                .applications
                .stranded
                .iter()
                .map(|s| {
                    Node::map(vec![
                        ("application", app(&s.application)),
                        ("destination", Node::string(s.destination.clone())),
                    ])
                })
                .collect();
            fields.push(("stranded", Node::seq(stranded)));
            fields.push(("applicationSummary", Node::string(summary)));
        }
        if !self.posture.is_empty() {
            let posture = self
                .posture
                .iter()
                .map(|(kind, n)| {
                    Node::map(vec![
                        ("credential", Node::string(kind.to_string())),
                        ("clusters", Node::plain(n.to_string())),
                    ])
                })
                .collect();
            fields.push(("posture", Node::seq(posture)));
        }
        if self.credentials == access::CredentialMode::ServiceAccount
            || !self.token_deletes.is_empty()
        {
            let word = match self.credentials {
                access::CredentialMode::Admin => "admin",
                access::CredentialMode::ServiceAccount => "serviceAccount",
            };
            fields.push(("credentials", Node::string(word)));
            fields.push((
                "tokens",
                Node::seq(self.tokens.iter().map(token_json).collect()),
            ));
            let deletes = self
                .token_deletes
                .iter()
                .map(|d| {
                    let mut fields = vec![
                        ("secret", id(&d.secret)),
                        ("kubeconfig", id(&d.kubeconfig)),
                        ("revoke", Node::plain(d.revoke.is_some().to_string())),
                        ("revokeToken", Node::plain(d.unbind.is_ok().to_string())),
                    ];
                    if let Err(why) = &d.unbind {
                        fields.push(("tokenNotRevoked", Node::string(why.clone())));
                    }
                    Node::map(fields)
                })
                .collect();
            fields.push(("tokenDeletes", Node::seq(deletes)));
        }
        Node::map(fields)
    }
}

/// One Application change, as a line under the entry of the cluster it follows from.
fn application_line(set: &AppSetPlan, change: &AppChange) -> String {
    let from = format!("(ApplicationSet {})", set.application_set);
    let line = match &change.effect {
        ApplicationEffect::Delete {
            application,
            leaves,
            resources,
        } => format!(
            "delete {application} {from}: {}; {}",
            leaves.describe(),
            resources.describe()
        ),
        ApplicationEffect::Keep {
            application,
            leaves,
            policy,
        } => format!(
            "kept   {application} {from}: {}, but policy {policy} deletes no Application",
            leaves.describe()
        ),
        ApplicationEffect::Create {
            application: Some(application),
            ..
        } => format!("create {application} {from}"),
        ApplicationEffect::Create {
            application: None,
            more: false,
        } => format!("create one Application {from} (its name is not computed)"),
        ApplicationEffect::Create {
            application: None,
            more: true,
        } => format!("create Applications {from}: one for each entry of its other generator"),
    };
    let local = if change.cluster.is_none() {
        " [local cluster]"
    } else {
        ""
    };
    format!("{:<9}   app {line}{local}\n", "")
}

/// An Application or ApplicationSet, by namespace and name.
fn app(a: &AppRef) -> Node<'static> {
    Node::map(vec![
        ("namespace", Node::string(a.namespace.clone())),
        ("name", Node::string(a.name.clone())),
    ])
}

/// One Application change; under an entry, with the ApplicationSet it comes from.
fn application_json(set: Option<&AppSetPlan>, change: &AppChange) -> Node<'static> {
    let mut fields = Vec::new();
    if let Some(set) = set {
        fields.push(("applicationSet", app(&set.application_set)));
    }
    match &change.effect {
        ApplicationEffect::Delete {
            application,
            leaves,
            resources,
        } => {
            fields.push(("effect", Node::string("delete")));
            fields.push(("application", app(application)));
            fields.push(("why", Node::string(leaves.word())));
            fields.push(("resources", Node::string(resources.word())));
        }
        ApplicationEffect::Keep {
            application,
            leaves,
            policy,
        } => {
            fields.push(("effect", Node::string("kept")));
            fields.push(("application", app(application)));
            fields.push(("why", Node::string(leaves.word())));
            fields.push(("policy", Node::string(policy.clone())));
        }
        ApplicationEffect::Create { application, more } => {
            fields.push(("effect", Node::string("create")));
            if let Some(application) = application {
                fields.push(("application", app(application)));
            }
            if *more {
                fields.push(("more", Node::plain("true")));
            }
        }
    }
    Node::map(fields)
}

/// What a grant gives, in a few words.
fn granted_words(granted: &access::Granted) -> String {
    match granted {
        access::Granted::Admin => "may do everything (serviceAccountRole=admin)".into(),
        access::Granted::Namespaced {
            namespaces,
            cluster_resources,
        } => format!(
            "may do everything in {}{}",
            namespaces.join(", "),
            if *cluster_resources {
                ", and the cluster-scoped kinds Argo CD deploys"
            } else {
                ""
            }
        ),
        access::Granted::ClusterRole(role) => format!("bound to the ClusterRole {role}"),
        access::Granted::Impersonate(_) => {
            "reads everything; syncs only as the AppProjects' ServiceAccounts".into()
        }
    }
}

fn token_json(t: &access::TokenNeed) -> Node<'static> {
    let mut fields = vec![
        ("secret", id(&t.secret)),
        ("kubeconfig", id(&t.kubeconfig)),
        ("cluster", Node::string(t.cluster.clone())),
        ("grant", Node::string(t.grant.to_string())),
    ];
    if let Some(expires) = t.expires {
        fields.push(("expires", Node::string(instant(expires))));
    }
    if let Some(due) = t.due {
        fields.push(("due", Node::string(due.describe())));
    }
    if let Err(why) = &t.access {
        fields.push(("cannotMint", Node::string(why.clone())));
    }
    if let Some(binding) = &t.binding {
        fields.push(("boundTo", Node::string(binding.clone())));
    }
    if t.reapply {
        fields.push(("reapplyRbac", Node::plain("true")));
    }
    if let access::Granted::Impersonate(accounts) = &t.grant.granted {
        let accounts = accounts
            .iter()
            .map(|a| {
                let projects = a
                    .projects
                    .iter()
                    .map(|(p, r)| {
                        Node::map(vec![
                            ("project", Node::string(p.clone())),
                            ("clusterRole", Node::string(r.clone())),
                        ])
                    })
                    .collect();
                let bindings = a
                    .bindings
                    .iter()
                    .map(|(ns, role)| {
                        Node::map(vec![
                            ("namespace", Node::string(ns.clone())),
                            ("clusterRole", Node::string(role.clone())),
                        ])
                    })
                    .collect();
                Node::map(vec![
                    ("namespace", Node::string(a.namespace.clone())),
                    ("name", Node::string(a.name.clone())),
                    ("projects", Node::seq(projects)),
                    ("bindings", Node::seq(bindings)),
                ])
            })
            .collect();
        fields.push(("impersonates", Node::seq(accounts)));
        if !t.not_provisioned.is_empty() {
            let notes = t
                .not_provisioned
                .iter()
                .cloned()
                .map(Node::string)
                .collect();
            fields.push(("notSetUp", Node::seq(notes)));
        }
    }
    if !t.retire.is_empty() {
        let retire = t.retire.iter().cloned().map(Node::string).collect();
        fields.push(("revokeReplaced", Node::seq(retire)));
    }
    Node::map(fields)
}

fn cluster_json(c: &ClusterOutcome) -> Node<'static> {
    let mut fields = vec![
        ("source", id(&c.source)),
        ("cluster", Node::string(c.cluster.clone())),
        ("state", Node::string(c.state.word())),
    ];
    if let Some(secret) = &c.secret {
        fields.push(("secret", id(secret)));
    }
    if let Some(reason) = &c.reason {
        fields.push(("reason", Node::string(reason.clone())));
    }
    if let Some(expires) = c.expires {
        fields.push(("expires", Node::string(expiry::instant(expires))));
    }
    Node::map(fields)
}

fn guard_json(held: &Held) -> Node<'static> {
    let mut fields = vec![
        ("guard", Node::string(held.guard.setting())),
        ("message", Node::string(held.message.clone())),
        ("secrets", Node::seq(held.secrets.iter().map(id).collect())),
    ];
    if !held.applications.is_empty() {
        let apps = held.applications.iter().map(app).collect();
        fields.push(("applications", Node::seq(apps)));
    }
    Node::map(fields)
}

fn id(s: &SecretId) -> Node<'static> {
    Node::map(vec![
        ("namespace", Node::string(s.namespace.clone())),
        ("name", Node::string(s.name.clone())),
    ])
}

/// The API path of a namespace's Secrets, or of one of them.
/// A create or a replace: the Secret as the API server stores it (values under `data`),
/// without the annotations kpt and kustomize keep for themselves, and, for a replace, on the
/// condition that it is still at the `resourceVersion` read.
fn write_request(write: &Write) -> Request {
    let secret = Secret::from_node(&write.node).unwrap_or_default();
    if write.replaces {
        Request::Replace {
            secret,
            preconditions: Preconditions {
                uid: None,
                resource_version: write.resource_version.clone(),
            },
        }
    } else {
        Request::Create(secret)
    }
}

/// A delete of the Secret only as it was read.
fn delete_request(id: &SecretId, uid: &Option<String>, version: &Option<String>) -> Request {
    Request::Delete {
        secret: id.clone(),
        preconditions: Preconditions {
            uid: uid.clone(),
            resource_version: version.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::reconcile::tests::{TOKEN, kubeconfig_secret, run, run_plan};

    /// The text of changes is the plan's text without the lines of unchanged Secrets, and
    /// nothing else is missing from it.
    #[test]
    fn the_text_of_changes_leaves_out_only_unchanged_secrets() {
        let config = Config::default();
        let fleet =
            kubeconfig_secret("a-kubeconfig", TOKEN) + &kubeconfig_secret("b-kubeconfig", TOKEN);
        let (written, _) = run(&fleet, &config);
        let again = written + "---\n" + &kubeconfig_secret("c-kubeconfig", TOKEN);
        let (_, _, plan) = run_plan(&again, &config);
        let whole = plan.show(PlanFormat::Text);
        assert_eq!(
            whole
                .lines()
                .filter(|l| l.starts_with("unchanged "))
                .count(),
            2,
            "{whole}"
        );
        let without: String = whole
            .lines()
            .filter(|l| !l.starts_with("unchanged "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(plan.text_of_changes(), without);
        assert!(without.contains("create "), "{without}");
    }
}
