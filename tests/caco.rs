//! Moving from CACO, as the book says (docs/src/moving-from-caco.md): its commands, pasted into
//! bash and zsh, against the Argo CD Secrets CACO's own reconciler wrote for the providers'
//! fixtures (tests/fixtures/caco/), with CACO's Deployment beside them. The real kubectl talks
//! to the recording stand-in for the API server (tests/kube/apiserver.py).

use std::collections::BTreeSet;
use std::fs;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::common::{self, TempDir, root, text};

/// The Argo CD Secrets CACO wrote, with the cluster `name` each carries.
const CACO_WROTE: [(&str, &str); 3] = [
    ("cluster-prod-eu-1", "prod-eu-1"),
    (
        "cluster-payments-eks",
        "aws-prod_payments-eks-control-plane",
    ),
    ("cluster-dev-team-a", "my-vcluster"),
];

/// The provider fixtures CACO was given.
const PROVIDERS: [&str; 4] = ["kubeadm", "eks", "vcluster", "k3s"];

/// The objects of a YAML file of the repository.
fn objects(path: &str) -> Vec<Value> {
    let bytes = fs::read(root().join(path)).expect("fixture");
    serde_json::from_str(
        &capi2argo_core::items_json(&bytes, &capi2argo_core::Limits::default()).expect("reads"),
    )
    .expect("JSON")
}

/// The commands of the page's first `sh` block, in order.
fn the_books_commands() -> Vec<String> {
    let page = common::chapter("moving-from-caco.md");
    let block = page
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the page shows its commands");
    block.lines().map(str::to_string).collect()
}

/// What the management cluster holds before the move: the kubeconfig Secrets, the Clusters,
/// CACO's Argo CD Secrets, and CACO's Deployment as its Helm chart names it.
fn management_cluster() -> Vec<Value> {
    let mut store: Vec<Value> = PROVIDERS
        .iter()
        .flat_map(|p| objects(&format!("tests/fixtures/providers/{p}.yaml")))
        .chain(objects("tests/fixtures/caco/clusters.yaml"))
        .chain(objects("tests/fixtures/caco/argocd-secrets.yaml"))
        .collect();
    store.push(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "capi2argo-operator", "namespace": "capi2argo"},
        "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "capi2argo-cluster-operator"}},
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": "capi2argo-cluster-operator"}},
                "spec": {"containers": [{"name": "capi2argo-cluster-operator",
                    "image": "ghcr.io/dntosas/capi2argo-cluster-operator:v1.5.0"}]}}},
    }));
    for (i, object) in store.iter_mut().enumerate() {
        object["metadata"]["uid"] = format!("00000000-0000-4000-8000-{i:012}").into();
        object["metadata"]["resourceVersion"] = (300 + i).to_string().into();
    }
    store
}

/// The cluster `name` of each Argo CD Secret in `argocd`, by Secret name.
fn names(api: &common::apiserver::StandIn) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = api
        .live_secrets("argocd")
        .iter()
        .map(|s| {
            let name = s["data"]["name"].as_str().unwrap_or_default();
            let name = String::from_utf8(B64.decode(name).expect("base64")).expect("UTF-8");
            (
                s["metadata"]["name"].as_str().expect("name").to_string(),
                name,
            )
        })
        .collect();
    names.sort();
    names
}

#[test]
fn the_books_move_from_caco_keeps_every_cluster_caco_registered() {
    if !common::available(
        "kubectl",
        &["version", "--client"],
        "the move from CACO was NOT run",
    ) {
        return;
    }
    let commands = the_books_commands();
    assert_eq!(commands.len(), 3, "stop CACO, plan, carry it out");
    let fleet = crate::readme::command_containing("fleet() {");
    let shells: Vec<&str> = ["bash", "zsh"]
        .into_iter()
        .filter(|shell| {
            common::available(
                shell,
                &["-c", "true"],
                &format!("the move from CACO was NOT run in {shell}"),
            )
        })
        .collect();
    let store = management_cluster();
    for shell in shells {
        let Some(api) = common::apiserver::StandIn::start(&format!("caco-{shell}"), &store) else {
            return;
        };
        let run = |script: &str, name: &str| {
            let dir = TempDir::new("caco", &format!("{name}-{shell}"));
            common::with_binary_on_path(shell)
                .arg("-c")
                .arg(format!("{fleet}\n{script}\necho shell-still-here\n"))
                .current_dir(&dir.0)
                .env("KUBECONFIG", &api.kubeconfig)
                .output()
                .expect("the shell runs")
        };
        let before: BTreeSet<(String, String)> = names(&api).into_iter().collect();
        let caco: BTreeSet<(String, String)> = CACO_WROTE
            .iter()
            .map(|(s, n)| (s.to_string(), n.to_string()))
            .collect();
        assert_eq!(before, caco, "the Secrets CACO wrote");

        // The check can fail: without nameFrom=kubeconfig, EKS and vcluster would be renamed,
        // and the guard holds them.
        let out = run("fleet | capi2argo plan", "without-name-from");
        let plan = text(&out.stdout);
        for held in ["cluster-payments-eks", "cluster-dev-team-a"] {
            assert!(
                plan.lines()
                    .any(|l| l.starts_with("kept") && l.contains(held) && l.contains("rename")),
                "{shell}: {held} held back from a rename:\n{plan}"
            );
        }

        let out = run(&commands.join("\n"), "move");
        let stdout = text(&out.stdout);
        assert!(
            stdout.ends_with("shell-still-here\n"),
            "{shell}: the commands ended the shell:\n{stdout}{}",
            text(&out.stderr)
        );
        // The EKS cluster's login moves from CACO's copied token to Argo CD's own AWS
        // identity: the plan says so before anything is written.
        let stderr = text(&out.stderr);
        assert!(
            stderr.lines().any(
                |l| l.starts_with("warning: Secret argocd/cluster-payments-eks:")
                    && l.contains("the login changes from a token that expires")
            ),
            "{shell}: the EKS login change is warned about:\n{stderr}"
        );
        let deployment = api
            .objects()
            .into_iter()
            .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "capi2argo-operator")
            .expect("CACO's Deployment");
        assert_eq!(deployment["spec"]["replicas"], 0, "{shell}: CACO stopped");
        for (secret, _) in CACO_WROTE {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with("update") && l.contains(&format!("argocd/{secret} "))),
                "{shell}: {secret} is updated in place:\n{stdout}"
            );
        }
        assert!(
            !stdout
                .lines()
                .any(|l| ["rename", "prune", "kept"].iter().any(|v| l.starts_with(v))),
            "{shell}: nothing renamed, pruned or held:\n{stdout}"
        );
        let writes: Vec<(String, String)> = api
            .writes()
            .into_iter()
            .filter(|r| r.path.contains("/secrets"))
            .map(|r| (r.method, r.path))
            .collect();
        assert!(
            writes.iter().all(|(m, _)| m != "DELETE"),
            "{shell}: nothing deleted: {writes:?}"
        );
        // Every cluster keeps its Secret and its name; k3s, which CACO never registered (its
        // Cluster is missing), is registered now.
        let after: BTreeSet<(String, String)> = names(&api).into_iter().collect();
        let mut expected = caco.clone();
        expected.insert(("cluster-retail-k3s-07".into(), "retail-k3s-07".into()));
        assert_eq!(after, expected, "{shell}: the names Argo CD knows");

        // A second plan finds every Secret as it was left.
        let out = run(&commands[1], "again");
        let again = text(&out.stdout);
        assert_eq!(
            again.lines().filter(|l| l.starts_with("unchanged")).count(),
            4,
            "{shell}: all unchanged:\n{again}"
        );
    }
}

/// The book's table of CACO's Helm values names, for each, settings that exist (or the command
/// and flags that stand in for one), so none of them is a typo a user would paste in vain.
#[test]
fn the_helm_values_table_names_real_settings() {
    let page = common::chapter("moving-from-caco.md");
    let table = page
        .split("## CACO's Helm values as settings")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("the table's section");
    let keys: BTreeSet<&str> = capi2argo_core::KEYS.iter().map(|k| k.name).collect();
    let flags = ["--resync-period", "--leader-elect", "capi2argo plan"];
    let mut named = 0;
    for row in table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| CACO"))
    {
        let ours = row.rsplit(" | ").next().expect("a last column");
        for name in ours.split('`').skip(1).step_by(2) {
            let setting = name.split(':').next().unwrap_or(name).trim();
            assert!(
                keys.contains(setting)
                    || flags.contains(&setting)
                    || ["true", "false", "argocd", "kubeconfig", "deploy/controller"]
                        .contains(&setting),
                "`{name}` in the Helm values table is no setting: {row}"
            );
            named += 1;
        }
    }
    assert!(named >= 10, "the table names the settings ({named})");
}
