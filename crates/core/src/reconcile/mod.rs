//! Reconciliation, in five steps, each a module of its own, each taking what the one before
//! gave:
//!
//! 1. [`scan`]: find the kubeconfig Secrets, the Argo CD Secrets the function owns, the Clusters
//!    (what it found: [`found`]);
//! 2. [`convert`]: make each cluster's Argo CD Secret ([`argo_secret`]) from the kubeconfig
//!    Secret [`choice`] picks, unless its [`lifecycle`] skips it (fleet metadata from
//!    [`fleet`]), and settle which conversions are one cluster ([`collide`]); a host that plans
//!    again and again gets back each cluster's conversion while what it was made from stays
//!    ([`memo`]);
//! 3. [`plan`]: decide, for every Argo CD Secret the function owns or would write, what happens
//!    to it — create, update, unchanged, rename, prune or kept, and why — as a value, in the
//!    words of [`decision`];
//! 4. [`guard`]: hold back what the settings do not allow (`allowEmpty`, `maxPrune`,
//!    `allowRename`, and what [`applications`] judges ApplicationSets would delete), then
//!    [`tokens`]: the token Secrets no Argo CD Secret uses any more;
//! 5. [`render`]: write the output the plan describes.
//!
//! Nothing is written before the plan has passed its guards; the plan itself ([`public`]) is
//! what `capi2argo plan` shows ([`view`]). What every step reads and reports to is
//! [`context`]'s. A step imports only the modules below it, never a step that comes after it,
//! so the order above is the order of the code.

mod applications;
mod argo_secret;
mod changes;
mod choice;
mod collide;
mod context;
mod convert;
mod decision;
mod draft;
mod fleet;
mod found;
mod guard;
mod ids;
mod lifecycle;
mod memo;
mod outcome;
mod plan;
mod public;
mod reads;
mod render;
mod scan;
mod sealed_output;
mod tokens;
pub mod view;

use crate::config::Config;
use krm::finding::{Finding, ResourceRef, Severity};
use krm::{self, Input};
use yaml::Limits;

use context::Ctx;
use outcome::Outcomes;

pub use context::Output;
pub use convert::ConversionMemo;

pub use decision::{Action, Guard, Held};
pub use ids::SecretId;
pub use outcome::{ClusterOutcome, ClusterState};
pub use public::{Entry, Plan};
pub use reads::cut_unread;
pub(crate) use scan::has_sound_metadata;
pub use tokens::{TokenDelete, Unbind};

/// What a reconciliation produced besides its output.
#[derive(Debug)]
pub struct Reconciled {
    /// Every result.
    pub results: Vec<Finding>,
    /// What happened to each Argo CD cluster Secret, after the guards.
    pub plan: Plan,
}

/// What a run gives reconciliation besides its input and configuration.
pub struct Run<'r> {
    pub limits: &'r Limits,
    /// Results the run made before reconciling (where its settings came from).
    pub notes: Vec<Finding>,
    /// The functionConfig, for results about the configuration.
    pub function_config: Option<ResourceRef>,
    /// The host's time (Unix seconds), when it gives one: certificates are checked against it.
    pub now: Option<i64>,
    pub output: Output,
    /// The host listed what the settings read ([`crate::Options::host_listed`]).
    pub host_listed: bool,
    /// The host's randomness ([`crate::Options::random`]), for sealing.
    pub random: Option<[u8; 32]>,
    /// It was pinned ([`crate::Options::random_pinned`]).
    pub random_pinned: bool,
    /// What the host kept from its earlier plans, when it keeps a planner.
    pub memory: Option<Memory<'r>>,
}

/// What a host that plans again and again (the planner) keeps between its plans.
#[derive(Clone, Copy)]
pub struct Memory<'r> {
    /// Certificates read before.
    pub certificates: &'r crate::validate::tls::Memo,
    /// Each cluster's conversion, while what it was made from stays.
    pub conversions: &'r ConversionMemo,
    /// Each input item's stamp, which the host makes new whenever the object changes; items
    /// past its end have none (they are never remembered).
    pub stamps: &'r [u64],
    /// Whether each input item's metadata was found sound ([`has_sound_metadata`]) when the
    /// host kept it; items past its end are checked by the scan.
    pub sound: &'r [bool],
}

/// Reconciles the input's items under `config`, writes the output to `sink` (unless only the
/// plan is asked for), and returns the results and the plan.
pub fn reconcile(input: &mut Input, config: &Config, run: Run, sink: &mut krm::Sink) -> Reconciled {
    let mut scanning = Ctx {
        input: &*input,
        config,
        limits: run.limits,
        function_config: run.function_config.clone(),
        now: run.now,
        results: run.notes,
        outcomes: Outcomes::default(),
        judges_applications: false,
        sealer: None,
        projects: None,
        certificates: run.memory.map(|m| m.certificates),
        conversions: None,
        sound: run.memory.map(|m| m.sound),
        until: None,
    };
    let mut scan = scan::scan(&mut scanning);
    if !run.host_listed {
        said_what_was_read(&mut scanning, &scan, run.output);
    }
    let judgment =
        applications::JudgmentInputs::of(&mut scanning, &mut scan, run.output, run.host_listed);
    let results = scanning.results;
    let impersonates = config.access.mode == crate::access::CredentialMode::ServiceAccount
        && config.access.role == crate::access::Role::Impersonate;
    let projects = impersonates.then(|| {
        let read = crate::projects::read(&input.items, &config.argo_namespace);
        (read, run.host_listed)
    });
    reads::cut_unread_after_scan(input, &scan, config);
    let mut ctx = Ctx {
        input: &*input,
        config,
        limits: run.limits,
        function_config: run.function_config,
        now: run.now,
        results,
        outcomes: Outcomes::default(),
        judges_applications: judgment.is_some(),
        sealer: config
            .sealing()
            .zip(run.random)
            .map(|(sealing, seed)| crate::seal::Sealer::new(sealing, seed)),
        projects,
        certificates: run.memory.map(|m| m.certificates),
        conversions: run.memory.map(|m| (m.conversions, m.stamps)),
        sound: None,
        until: None,
    };
    if ctx.sealer.is_some() && run.random_pinned {
        ctx.report_config(
            Severity::Warning,
            Some("seal".into()),
            "sealed with pinned randomness (CAPI2ARGO_RANDOM): for tests only; anyone who knows the value can open what this run sealed".into(),
        );
    }
    let mut converted = convert::convert_all(&mut ctx, &scan, run.output);
    let mut needs = std::mem::take(&mut converted.tokens);
    let revocable = std::mem::take(&mut converted.revocable);
    let settled = collide::resolve(&mut ctx, &scan, converted.conversions);
    let mut steps = plan::plan(
        &mut ctx,
        &scan,
        settled,
        converted.unsettled,
        converted.store,
    );
    // Per-Secret errors become warnings with strict=false; a guard's refusal does not.
    if !config.strict {
        for r in &mut ctx.results {
            if r.severity == Severity::Error && r.resource.is_some() {
                r.severity = Severity::Warning;
            }
        }
    }
    // What the plan would do to Applications before any guard holds a step back: what each
    // guard then protects.
    let unguarded = judgment.as_ref().map(|j| j.judge(&ctx, &steps));
    let judge = judgment.as_ref().zip(unguarded.as_ref());
    guard::check(&mut ctx, &scan, &mut steps, &mut needs, judge);
    retire_replaced_tokens(&steps, &mut needs);
    // A fleet's judgment is the plan's dearest part: made again only when a guard held a step.
    let judged = match &judgment {
        Some(j) if !steps.held.is_empty() => Some(j.judge(&ctx, &steps)),
        _ => unguarded.clone(),
    };
    if let (Some(judgment), Some(judged)) = (&judgment, &judged) {
        judgment.report(&mut ctx, judged);
    }
    if let (Some(before), Some(after)) = (&unguarded, &judged) {
        guard::protected(&mut steps, before, after);
    }
    steps.report_login_moves(&mut ctx);
    // What explains a failure first: errors, then warnings, then information (kpt cuts long
    // result lists short).
    ctx.results.sort_by_key(|f| f.severity);
    let revocable: Vec<_> = needs.iter().chain(&revocable).cloned().collect();
    let token_deletes = tokens::deletes(&mut ctx, &scan, &steps, &revocable);
    let mut plan = public::plan(&mut ctx, &steps, run.output);
    plan.credentials = config.access.mode;
    plan.applications = judged.unwrap_or_default();
    plan.tokens = needs;
    if run.output == Output::Resources {
        let gone = scan
            .tokens
            .values()
            .chain(scan.token_extras.iter().map(|(_, t)| t))
            .filter(|t| token_deletes.iter().any(|d| d.secret == t.id))
            .map(|t| t.index)
            .collect();
        render::render(&mut ctx, &scan, steps, &gone, sink);
    }
    plan.token_deletes = token_deletes;
    Reconciled {
        results: ctx.results,
        plan,
    }
}

/// A replaced token's binding is revoked once Argo CD's Secret carries the token that replaced
/// it: its step writes nothing this run (it was written with the new token before). Revoked
/// sooner, Argo CD would hold a revoked token until its Secret is written.
fn retire_replaced_tokens(steps: &decision::Steps, needs: &mut [crate::access::TokenNeed]) {
    for need in needs.iter_mut().filter(|n| !n.retired().is_empty()) {
        let mut its = steps
            .steps
            .iter()
            .filter(|s| s.source.as_ref() == Some(&need.kubeconfig))
            .peekable();
        let written = its.peek().is_some() && its.all(|s| s.action == decision::Action::Unchanged);
        if written && need.due.is_none() {
            need.retire_now();
        }
    }
}

/// Says when the input reads as less than it should: nothing at all (an empty file, a failed
/// `kubectl get`), kubeconfig Secrets without any of the Cluster objects their source reads
/// (whose ignore label, lifecycle and metadata are then lost), or, for a plan, no Secret of Argo
/// CD's namespace at all (every cluster then looks new, and nothing can be pruned or renamed).
/// Not asked when the host listed it all from the API server: there, absent is absent.
fn said_what_was_read(ctx: &mut Ctx, scan: &found::Scan, output: Output) {
    if ctx.input.items.is_empty() {
        let message = "the input holds no resources: nothing was read, so nothing is converted (an empty file, or a `kubectl get` that failed?)";
        ctx.report_config(Severity::Warning, None, message.into());
        return;
    }
    let reads_clusters = scan
        .candidates
        .iter()
        .filter(|c| ctx.config.sources[c.source].reads.clusters)
        .count();
    if reads_clusters > 0 && scan.clusters.is_empty() {
        let message = format!(
            "{reads_clusters} kubeconfig {} came without any Cluster object (clusters.cluster.x-k8s.io): a Cluster's ignore label, its paused and deletion state (skipNotReady) and copyClusterLabels/copyClusterAnnotations are not applied; read the Clusters too",
            if reads_clusters == 1 {
                "Secret"
            } else {
                "Secrets"
            }
        );
        ctx.report_config(Severity::Warning, None, message);
    }
    let argo = &ctx.config.argo_namespace;
    let reads_argo = scan.secrets.keys().any(|id| id.namespace == *argo);
    if output == Output::PlanOnly && !scan.candidates.is_empty() && !reads_argo {
        // Its own Secrets elsewhere say where Argo CD likely runs.
        let elsewhere: std::collections::BTreeSet<&str> = scan
            .owned
            .iter()
            .map(|o| ctx.object(o.index).namespace())
            .collect();
        let message = match elsewhere.first() {
            Some(other) => format!(
                "the input holds no Secret of Argo CD's namespace {argo}, but capi2argo's Argo CD Secrets in {}: if Argo CD runs there, set argoNamespace={other}; as it is, every cluster is planned as new in {argo}",
                elsewhere.iter().copied().collect::<Vec<_>>().join(", ")
            ),
            None => format!(
                "the input holds no Secret of Argo CD's namespace {argo}: every cluster is planned as new there, and none of its Secrets can be pruned or renamed; read that namespace's Secrets too (or set argoNamespace where Argo CD runs)"
            ),
        };
        ctx.report_config(Severity::Warning, None, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    /// Reconciles a YAML stream; the output text and the results.
    pub(super) fn run(input: &str, config: &Config) -> (String, Vec<Finding>) {
        let (out, results, _) = run_plan(input, config);
        (out, results)
    }

    /// Reconciles a YAML stream; the output text, the results and the plan.
    pub(super) fn run_plan(input: &str, config: &Config) -> (String, Vec<Finding>, Plan) {
        let limits = Limits::default();
        let mut parsed = krm::parse(input.as_bytes(), &limits).expect("input parses");
        let mut out = String::new();
        let run = Run {
            limits: &limits,
            notes: Vec::new(),
            function_config: None,
            now: None,
            output: Output::Resources,
            host_listed: false,
            random: None,
            random_pinned: false,
            memory: None,
        };
        let reconciled = reconcile(&mut parsed, config, run, &mut |s| out.push_str(s));
        (out, reconciled.results, reconciled.plan)
    }

    /// Scans a YAML stream alone: what the scan found, and its results.
    pub(super) fn scan_of(input: &str, config: &Config) -> (found::Scan, Vec<Finding>) {
        let limits = Limits::default();
        let parsed = krm::parse(input.as_bytes(), &limits).expect("input parses");
        let mut ctx = Ctx {
            input: &parsed,
            config,
            limits: &limits,
            function_config: None,
            now: None,
            results: Vec::new(),
            outcomes: Outcomes::default(),
            judges_applications: false,
            sealer: None,
            projects: None,
            certificates: None,
            conversions: None,
            sound: None,
            until: None,
        };
        let scan = scan::scan(&mut ctx);
        (scan, ctx.results)
    }

    /// An owned Argo CD Secret made from the kubeconfig Secret `fleet/<cluster>-kubeconfig`.
    pub(super) fn owned_secret(name: &str, cluster: &str, server: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n    capi-to-argocd/owned: \"true\"\n    capi-to-argocd/cluster-secret-name: {cluster}-kubeconfig\n    capi-to-argocd/cluster-namespace: fleet\ntype: Opaque\nstringData:\n  name: {cluster}\n  server: {server}\n  config: '{{\"bearerToken\":\"static-token\",\"tlsClientConfig\":{{\"insecure\":false}}}}'\n---\n"
        )
    }

    /// A CAPI kubeconfig Secret in namespace `fleet`, its user entry given (indented as one).
    pub(super) fn kubeconfig_secret(name: &str, user: &str) -> String {
        let cluster = name
            .trim_end_matches("-kubeconfig")
            .trim_end_matches("-user");
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: fleet\n  labels:\n    cluster.x-k8s.io/cluster-name: {cluster}\nstringData:\n  value: |\n    apiVersion: v1\n    kind: Config\n    clusters:\n    - name: c\n      cluster: {{server: 'https://{cluster}.fleet.example:6443'}}\n    users:\n    - name: u\n      user:\n{user}    contexts:\n    - name: x\n      context: {{cluster: c, user: u}}\n    current-context: x\n---\n"
        )
    }

    pub(super) const TOKEN: &str = "        token: static-token\n";
    const AWS: &str = "        exec:\n          apiVersion: client.authentication.k8s.io/v1beta1\n          command: aws\n          args: [eks, get-token, --cluster-name, eks-1]\n";
    const DEVICECODE: &str = "        exec:\n          apiVersion: client.authentication.k8s.io/v1beta1\n          command: kubelogin\n          args: [get-token, --server-id, s]\n";

    fn errors(results: &[Finding]) -> Vec<&str> {
        results
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.message.as_str())
            .collect()
    }

    /// New Secrets come out in the order of conversion, whether they go out at once or wait:
    /// one that may clash with another cluster's waits, and every one after it with it (here
    /// the other cluster fails, so nothing clashes in the end).
    #[test]
    fn new_secrets_come_out_in_conversion_order_written_at_once_or_not() {
        let secret = |ns: &str, cluster: &str| {
            kubeconfig_secret(&format!("{cluster}-kubeconfig"), TOKEN).replace("fleet", ns)
        };
        let broken = secret("b", "p").replace("current-context: x", "current-context: none");
        let input = secret("a", "z") + &broken + &secret("a", "p") + &secret("a", "k");
        let (out, results) = run(&input, &Config::default());
        let names: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("  name: cluster-"))
            .collect();
        assert_eq!(names, ["k", "p", "z"], "{out}");
        assert_eq!(errors(&results).len(), 1, "{results:?}");
    }

    #[test]
    fn name_clashes_are_reported_in_the_same_order_every_time() {
        // Regression: clashes were gathered in a hash map, so two of them came out in either
        // order (golden case regression-collision-results-order).
        let input = ["p", "q", "r"]
            .iter()
            .flat_map(|c| {
                ["a", "b"].map(|ns| {
                    kubeconfig_secret(&format!("{c}-kubeconfig"), TOKEN).replace("fleet", ns)
                })
            })
            .collect::<String>();
        let (_, first) = run(&input, &Config::default());
        assert_eq!(errors(&first).len(), 6);
        for _ in 0..16 {
            let (_, again) = run(&input, &Config::default());
            assert_eq!(errors(&again), errors(&first));
        }
    }

    #[test]
    fn a_user_kubeconfig_argocd_can_renew_wins_in_push_mode_only() {
        let input = kubeconfig_secret("eks-1-kubeconfig", TOKEN)
            + &kubeconfig_secret("eks-1-user-kubeconfig", AWS);
        let (out, results) = run(&input, &Config::default());
        assert!(out.contains("awsAuthConfig"), "{out}");
        assert!(out.contains("cluster-secret-name: eks-1-user-kubeconfig"));
        assert!(errors(&results).is_empty(), "{results:?}");
        let pull = Config {
            mode: Mode::Pull,
            ..Config::default()
        };
        let (out, _) = run(&input, &pull);
        assert!(
            out.contains("cluster-secret-name: eks-1-kubeconfig"),
            "{out}"
        );
    }

    #[test]
    fn a_login_that_needs_a_person_never_wins_and_is_no_fallback() {
        let input = kubeconfig_secret("aks-1-kubeconfig", TOKEN)
            + &kubeconfig_secret("aks-1-kubeconfig-user", DEVICECODE)
            // What an earlier version wrote from the device-code kubeconfig: replaceable.
            + "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-aks-1\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n    capi-to-argocd/owned: \"true\"\n    capi-to-argocd/cluster-secret-name: aks-1-kubeconfig-user\n    capi-to-argocd/cluster-namespace: fleet\nstringData:\n  name: aks-1\n  server: https://c.example:6443\n  config: '{\"tlsClientConfig\":{\"insecure\":false},\"execProviderConfig\":{\"command\":\"argocd-k8s-auth\",\"args\":[\"azure\"],\"env\":{\"AAD_LOGIN_METHOD\":\"devicecode\"},\"apiVersion\":\"client.authentication.k8s.io/v1beta1\"}}'\n";
        let (out, results) = run(&input, &Config::default());
        assert!(errors(&results).is_empty(), "{results:?}");
        assert!(out.contains("static-token"), "{out}");
        assert!(!out.contains("devicecode"), "{out}");
        // Alone, it is an error and nothing is written for the cluster.
        let (out, results) = run(
            &kubeconfig_secret("aks-2-kubeconfig-user", DEVICECODE),
            &Config::default(),
        );
        assert_eq!(errors(&results).len(), 1, "{results:?}");
        assert!(!out.contains("cluster-aks-2"), "{out}");
    }

    #[test]
    fn two_clusters_writing_one_secret_are_both_errors() {
        let input = kubeconfig_secret("a-kubeconfig", TOKEN).replace("fleet", "one")
            + &kubeconfig_secret("a-kubeconfig", TOKEN).replace("fleet", "two");
        let (out, results) = run(&input, &Config::default());
        assert_eq!(errors(&results).len(), 2, "{results:?}");
        assert!(!out.contains("argocd.argoproj.io/secret-type"), "{out}");
        let namespaced = Config {
            namespaced_names: true,
            ..Config::default()
        };
        let (out, results) = run(&input, &namespaced);
        assert!(errors(&results).is_empty());
        assert!(
            out.contains("cluster-one-a") && out.contains("cluster-two-a"),
            "{out}"
        );
    }

    #[test]
    fn owned_secrets_are_pruned_unowned_never_touched() {
        let argo = |name: &str, owned: bool| {
            let owned = if owned {
                "    capi-to-argocd/owned: \"true\"\n"
            } else {
                ""
            };
            format!(
                "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n{owned}    capi-to-argocd/cluster-secret-name: gone-kubeconfig\n    capi-to-argocd/cluster-namespace: fleet\nstringData:\n  name: gone\n  server: https://gone.example:6443\n"
            )
        };
        // A cluster that is still there: the source is not empty, so allowEmpty does not hold.
        let input = argo("cluster-gone", true)
            + &argo("cluster-hand-made", false)
            + "---\n"
            + &kubeconfig_secret("kept-kubeconfig", TOKEN);
        let (out, _) = run(&input, &Config::default());
        assert!(!out.contains("name: cluster-gone"), "{out}");
        assert!(out.contains("name: cluster-hand-made"), "{out}");
        let keep = Config {
            prune: false,
            ..Config::default()
        };
        let (out, _) = run(&input, &keep);
        assert!(out.contains("name: cluster-gone"), "{out}");
    }
}
