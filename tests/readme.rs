//! Every command the README and the book (`docs/`) show is run as written — in the checkout or a
//! scratch copy of what it needs, with the built binary on `PATH` — here or by the test named
//! next to it; and the tables and samples they show are the ones the code has.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{self, TempDir};

/// Who runs each command of the README and the book. A command missing here fails
/// `every_readme_command_is_run_by_a_test`: add it, with the test that runs it. The install
/// commands of the release and the image are listed by the tests that run them as written
/// (`common::INSTALL`, `common::NPM_INSTALL`, `registry::README`).
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "mkdir -p my-package/argocd",
        "sealing::the_books_sealed_package_workflow",
    ),
    (
        "kubectl get secrets -A -l cluster.x-k8s.io/cluster-name -o yaml | capi2argo --fn-config my-package/seal.yaml > my-package/argocd/clusters.yaml",
        "sealing::the_books_sealed_package_workflow (the real kubectl against the API stand-in)",
    ),
    (
        "kpt fn render my-package --allow-exec",
        "sealing::the_books_sealed_package_workflow (the real kpt, as CI renders the committed package: nothing changes)",
    ),
    (
        "git -C my-package add -A && git -C my-package commit -m \"Argo CD clusters\"",
        "sealing::the_books_sealed_package_workflow (what git holds after the commit)",
    ),
    (
        "{ kubectl get secrets -A -l cluster.x-k8s.io/cluster-name -o yaml; echo ---; cat my-package/argocd/clusters.yaml; } | capi2argo --fn-config my-package/seal.yaml > clusters.yaml && mv clusters.yaml my-package/argocd/clusters.yaml",
        "sealing::the_books_sealed_package_workflow (the fleet again: the committed file unchanged)",
    ),
    (
        "make controller-image",
        "registry::the_readmes_controller_install_works_as_written (this machine's platform, as written)",
    ),
    (
        "docker tag ghcr.io/capi2argo/capi2argo-controller:v0.1.0 registry.example.com/capi2argo/capi2argo-controller:v0.1.0",
        "registry::the_readmes_controller_install_works_as_written (a docker-registry of its own in place of yours)",
    ),
    (
        "docker push registry.example.com/capi2argo/capi2argo-controller:v0.1.0",
        "registry::the_readmes_controller_install_works_as_written",
    ),
    (
        "kubectl apply -k my-controller",
        "registry::the_readmes_controller_install_works_as_written (the README's kustomization, against the API stand-in)",
    ),
    (
        "kubectl -n argocd rollout status deployment/capi2argo-controller",
        "registry::the_readmes_controller_install_works_as_written (the replicas marked ready on the stand-in, as the Deployment controller would)",
    ),
    (
        "cargo install --locked --path .",
        "readme::install_and_release_build_as_written",
    ),
    (
        "cargo build --locked --release",
        "readme::install_and_release_build_as_written",
    ),
    (
        "capi2argo tests/fixtures/providers/kubeadm.yaml",
        "readme::quick_start_converts_the_example",
    ),
    (
        "fleet() { kubectl get secrets -A -l cluster.x-k8s.io/cluster-name -o yaml; echo ---; kubectl get clusters.cluster.x-k8s.io -A -o yaml; echo ---; kubectl get secrets,applicationsets,applications -n argocd -o yaml; echo ---; kubectl get deployments,configmaps -n argocd -l app.kubernetes.io/part-of=capi2argo -o yaml; }",
        "readme::kubectl_pipeline_against_a_stand_in (the real kubectl, in bash and in zsh; tests/kube/apiserver.py stands in for the API server)",
    ),
    (
        "fleet | capi2argo plan",
        "readme::kubectl_pipeline_against_a_stand_in",
    ),
    (
        "fleet | capi2argo plan -o requests | (while read -r verb url body; do printf '%s\\n' \"$body\" | kubectl \"$verb\" --raw \"$url\" -f - > /dev/null || exit 1; done)",
        "readme::kubectl_pipeline_against_a_stand_in",
    ),
    (
        "kubectl get secrets -A -o yaml | capi2argo --set namespacedNames=true --set argoNamespace=gitops",
        "readme::kubectl_pipelines_with_a_lists_worth_of_secrets (no cluster here: kubectl's ends stand in)",
    ),
    (
        "kubectl get secrets -n argocd -l argocd.argoproj.io/secret-type=cluster -o yaml | capi2argo validate --findings",
        "readme::validate_pipeline_as_written (no cluster here: kubectl's List stands in)",
    ),
    (
        "kubectl -n capi2argo patch deployment capi2argo-operator --type=merge -p '{\"spec\":{\"replicas\":0}}'",
        "caco::the_books_move_from_caco_keeps_every_cluster_caco_registered (bash and zsh; CACO's own Secrets, the stand-in)",
    ),
    (
        "fleet | capi2argo plan --set nameFrom=kubeconfig",
        "caco::the_books_move_from_caco_keeps_every_cluster_caco_registered",
    ),
    (
        "fleet | capi2argo plan -o requests --set nameFrom=kubeconfig | (while read -r verb url body; do printf '%s\\n' \"$body\" | kubectl \"$verb\" --raw \"$url\" -f - > /dev/null || exit 1; done)",
        "caco::the_books_move_from_caco_keeps_every_cluster_caco_registered",
    ),
    (
        "kpt fn source my-package | capi2argo plan --set namespacedNames=true",
        "kpt::a_packages_plan_before_rendering (a copy of Kptfile-examples/mixed-fleet as my-package, its configMap as --set)",
    ),
    (
        "make musl",
        "container:: and release-golden (make test builds both musl binaries, runs the golden cases with them)",
    ),
    (
        "make release",
        "the release suite's dist:: tests (tests/release/; make test runs make release first and points them at dist/release)",
    ),
    (
        "make oci-images push-images REGISTRY=registry.example.com/capi2argo",
        "registry:: (make test runs make oci-images; the test runs make push-images to a registry of its own)",
    ),
    (
        "make image",
        "container:: tests (make test builds the images with make cmp-image first)",
    ),
    (
        "kpt fn eval my-package --exec capi2argo -- namespacedNames=true",
        "readme::kpt_eval_as_written",
    ),
    (
        "kpt fn eval my-package --image ghcr.io/capi2argo/capi2argo:v0.1.0 --image-pull-policy never -- namespacedNames=true",
        "container::kpt_fn_eval_image_as_written",
    ),
    (
        "kubectl kustomize --enable-alpha-plugins DIR",
        "container::kubectl_kustomize_runs_the_container_function",
    ),
    (
        "node --no-warnings wasm/run-wasi.mjs dist/capi2argo.wasm < tests/fixtures/providers/kubeadm.yaml",
        "tests/wasm/readme.test.mjs",
    ),
    (
        "KPT_FN_WASM_RUNTIME=nodejs kpt fn eval my-package --allow-alpha-wasm --exec dist/capi2argo-kpt.wasm -- namespacedNames=true",
        "tests/wasm/readme.test.mjs",
    ),
    (
        "kwctl run --request-path admission-request.json --settings-json '{\"forbidInsecure\": true}' file://$PWD/dist/capi2argo-policy.wasm",
        "tests/wasm/policy_wasmtime.py (the argv and stdin kwctl's WASI runtime gives the module; kwctl itself is in no package registry)",
    ),
    (
        "kwctl run --raw --request-path raw-request.json file://$PWD/dist/capi2argo-raw-policy.wasm",
        "tests/wasm/policy_wasmtime.py (the raw policy, as kwctl --raw runs it)",
    ),
    (
        "make playground",
        "tests/playground/playground.test.mjs (make test builds the page and opens it in Chromium)",
    ),
    (
        "make controller-image",
        "deploy::sync:: and deploy::controller:: tests (make test builds the image first, with make images)",
    ),
    (
        "kubectl kustomize my-controller",
        "deploy::the_books_overlays_run_the_image_from_your_registry (the book's kustomization, rendered)",
    ),
    (
        "kubectl -n argocd delete configmaps -l app.kubernetes.io/part-of=capi2argo,app.kubernetes.io/component=settings --field-selector \"metadata.name!=$(kubectl -n argocd get deployment capi2argo-controller -o jsonpath='{.spec.template.spec.volumes[?(@.name==\"settings\")].configMap.name}')\"",
        "deploy::lifecycle::the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say (against the stand-in)",
    ),
    (
        "kubectl -n argocd delete job capi2argo-controller-once --ignore-not-found",
        "deploy::lifecycle::the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say (against the stand-in, which refuses a Job's changed template as Kubernetes does)",
    ),
    (
        "kubectl apply -k my-once -l app.kubernetes.io/component=once",
        "deploy::lifecycle::the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say (against the stand-in, twice)",
    ),
    (
        "kubectl -n argocd logs -f job/capi2argo-controller-once",
        "not run: the stand-in runs no pods; the Job's log is `capi2argo-controller --once`'s, which controller::once_carries_out_one_plan_and_exits_with_its_code reads",
    ),
    (
        "kubectl delete -k my-controller",
        "deploy::lifecycle::the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say (against the stand-in)",
    ),
    (
        "kubectl -n argocd delete configmaps -l app.kubernetes.io/part-of=capi2argo,app.kubernetes.io/component=settings",
        "deploy::lifecycle::the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say (against the stand-in)",
    ),
    (
        "kubectl -n argocd delete lease capi2argo-controller",
        "deploy::lifecycle::the_books_one_off_runs_upgrade_and_uninstall_leave_what_they_say (against the stand-in)",
    ),
    (
        "kubectl kustomize deploy",
        "deploy:: tests (deploy::render, then schemas, Pod Security, RBAC)",
    ),
    (
        "kubectl apply -k deploy",
        "deploy::sync::sync_carries_out_the_plan_and_nothing_else (against the stand-in)",
    ),
    (
        "kubectl apply -k deploy/namespaced",
        "deploy::sync::namespaced_sync_reads_and_writes_only_its_namespaces (against the stand-in)",
    ),
    (
        "kubectl -n argocd create job capi2argo-once --from=cronjob/capi2argo-sync --dry-run=client -o json | kubectl patch --local -f - --type=json -o json -p '[{\"op\": \"add\", \"path\": \"/spec/template/spec/containers/0/args\", \"value\": [\"--set\", \"maxPrune=100%\"]}]' | kubectl create -f -",
        "deploy::sync::a_one_off_run_lets_a_mass_change_through (against the stand-in)",
    ),
    ("make", "readme::make_alone_lists_the_targets"),
    ("make test", ".ci/run (CI runs exactly this)"),
    (
        "make docs",
        "make test runs it, then docs::every_link_of_the_book_resolves",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The one README command containing `fragment`, as listed (and so as the README shows it).
pub fn command_containing(fragment: &str) -> &'static str {
    let found: Vec<&str> = COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| c.contains(fragment))
        .collect();
    assert_eq!(found.len(), 1, "one README command contains {fragment:?}");
    found[0]
}

/// `command`, checked to be one the README shows.
pub fn listed(command: &str) -> &'static str {
    COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .find(|c| *c == command)
        .unwrap_or_else(|| panic!("the README shows no `{command}`"))
}

/// The commands of the `sh` blocks of the README and the book: continuation lines joined,
/// comments dropped.
fn readme_commands() -> BTreeSet<String> {
    let text: String = common::documentation()
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    let mut commands = BTreeSet::new();
    for block in text.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap_or_default();
        let mut current = String::new();
        for line in block.lines() {
            let line = line.trim_end();
            if let Some(part) = line.strip_suffix('\\') {
                current.push_str(part.trim_end());
                current.push(' ');
                continue;
            }
            current.push_str(line);
            let command = strip_comment(&current);
            if !command.is_empty() {
                commands.insert(squeeze(&command));
            }
            current.clear();
        }
    }
    commands
}

/// The command without a trailing ` # comment`.
fn strip_comment(line: &str) -> String {
    let line = line.trim();
    if line.starts_with('#') {
        return String::new();
    }
    match line.find("  #").or_else(|| line.find(" # ")) {
        Some(i) => line[..i].trim().to_string(),
        None => line.to_string(),
    }
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_readme_command_is_run_by_a_test() {
    let listed: BTreeSet<String> = COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .chain(common::INSTALL)
        .chain([common::NPM_INSTALL])
        .chain(crate::registry::README)
        .map(squeeze)
        .collect();
    let shown = readme_commands();
    let unlisted: Vec<&String> = shown.difference(&listed).collect();
    let stale: Vec<&String> = listed.difference(&shown).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "README commands no test runs: {unlisted:#?}\nlisted but no longer in the README: {stale:#?}"
    );
}

/// Runs `command` with `sh -c` in `dir`, the built binary first on `PATH`.
fn sh(dir: &Path, command: &str) -> Output {
    common::with_binary_on_path("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .output()
        .expect("sh runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn quick_start_converts_the_example() {
    let out = sh(&root(), "capi2argo tests/fixtures/providers/kubeadm.yaml");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The README shows these lines of the output.
    for line in [
        "  name: cluster-prod-eu-1\n",
        "  namespace: argocd\n",
        "    argocd.argoproj.io/secret-type: cluster\n",
        "    capi-to-argocd/cluster-secret-name: prod-eu-1-kubeconfig\n",
        "  server: https://prod-eu-1-api.example.net:6443\n",
        "        \"insecure\": false,\n",
    ] {
        assert!(stdout.contains(line), "output lacks {line:?}");
    }
    // The input first, as the README says, and the warning it names.
    assert!(
        stdout.find("name: prod-eu-1-ca").expect("the CA Secret")
            < stdout
                .find("name: cluster-prod-eu-1")
                .expect("the new Secret")
    );
    assert!(
        text(&out.stderr).contains("came without any Cluster object"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn make_alone_lists_the_targets() {
    if !common::available("make", &["--version"], "`make` alone was NOT run") {
        return;
    }
    let out = sh(&root(), "make");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for target in [
        "make test",
        "make example",
        "make wasm",
        "make fuzz",
        "make bench",
    ] {
        assert!(
            stdout.contains(target),
            "`make` does not list {target}:\n{stdout}"
        );
    }
}

/// kubectl's ends of the pipe need a cluster; here `kubectl get … -o yaml` is what it prints
/// (a `kind: List`, as in the provider fixtures) and `kubectl apply -l
/// capi-to-argocd/owned=true` is its label selector, applied to what capi2argo writes.
#[test]
fn kubectl_pipelines_with_a_lists_worth_of_secrets() {
    let list = fs::read(root().join("tests/fixtures/providers/kubeadm.yaml")).expect("fixture");
    let out = common::capi2argo(&[], &list, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let documents: Vec<String> = text(&out.stdout)
        .split("\n---\n")
        .map(String::from)
        .collect();
    let selected: Vec<&String> = documents
        .iter()
        .filter(|d| d.contains("    capi-to-argocd/owned: \"true\"\n"))
        .collect();
    assert_eq!(
        selected.len(),
        1,
        "the selector picks the one generated Secret"
    );
    assert!(selected[0].contains("name: cluster-prod-eu-1\n"));
    let out = common::capi2argo(
        &[
            "--set",
            "namespacedNames=true",
            "--set",
            "argoNamespace=gitops",
        ],
        &list,
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("  name: cluster-fleet-eu-prod-eu-1\n  namespace: gitops\n"));
}

/// The README's kubectl pipeline, command for command, with the real kubectl talking to a
/// stand-in for the API server that records every request (no API server can be had here):
/// exactly what the plan creates is created and what it prunes is deleted, each conditional on
/// what was read, and the repository credential beside them is never touched; a second run
/// makes no request; a Secret someone changed is replaced with the resourceVersion read; and an
/// input that lost its kubeconfig Secrets changes nothing.
#[test]
fn kubectl_pipeline_against_a_stand_in() {
    if !common::available(
        "kubectl",
        &["version", "--client"],
        "the README's kubectl pipeline was NOT run",
    ) {
        return;
    }
    let commands: Vec<&str> = COMMANDS
        .iter()
        .filter(|(_, test)| test.starts_with("readme::kubectl_pipeline_against_a_stand_in"))
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(
        commands.len(),
        3,
        "the README's pipeline has three commands"
    );
    // Pasted into one interactive shell, one line after another: the function the first line
    // defines is there for the next, and nothing may end the shell (the echo after them runs).
    // The last command's exit status is printed too.
    let script = format!(
        "{}\necho \"status=$?\"\necho shell-still-here\n",
        commands.join("\n")
    );
    let shells: Vec<&str> = ["bash", "zsh"]
        .into_iter()
        .filter(|shell| {
            common::available(
                shell,
                &["-c", "true"],
                &format!("the README's pipeline was NOT run in {shell}"),
            )
        })
        .collect();
    let fixture = fs::read(root().join("tests/fixtures/providers/kubeadm.yaml")).expect("fixture");
    let items: Vec<serde_json::Value> = serde_json::from_str(
        &capi2argo_core::items_json(&fixture, &capi2argo_core::Limits::default())
            .expect("the fixture reads"),
    )
    .expect("JSON");
    let retired = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "cluster-retired", "namespace": "argocd", "labels": {
            "argocd.argoproj.io/secret-type": "cluster", "capi-to-argocd/owned": "true",
            "capi-to-argocd/cluster-secret-name": "retired-kubeconfig",
            "capi-to-argocd/cluster-namespace": "fleet-eu"}},
        "data": {"name": "cmV0aXJlZA==", "server": "aHR0cHM6Ly9yZXRpcmVkOjY0NDM="},
    });
    let repository = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "repo-fleet", "namespace": "argocd", "labels": {
            "argocd.argoproj.io/secret-type": "repository"}},
        "data": {"url": "aHR0cHM6Ly9naXQuZXhhbXBsZS5jb20vZmxlZXQ="},
    });
    // An ApplicationSet over every cluster, and the Application it generated for the retired one:
    // the plan says that it goes.
    let appset = serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "guestbook", "namespace": "argocd"},
        "spec": {"goTemplate": true, "generators": [{"clusters": {}}],
                 "template": {"metadata": {"name": "{{.name}}-guestbook"},
                              "spec": {"project": "default", "destination": {"server": "{{.server}}", "namespace": "guestbook"}}}},
    });
    let application = serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "retired-guestbook", "namespace": "argocd",
                     "finalizers": ["resources-finalizer.argocd.argoproj.io"],
                     "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                          "name": "guestbook", "uid": "5e7a", "controller": true}]},
        "spec": {"project": "default", "destination": {"server": "https://retired:6443", "namespace": "guestbook"}},
    });
    let mut store: Vec<serde_json::Value> = items
        .into_iter()
        .chain([retired, repository, appset, application])
        .collect();
    for (i, secret) in store.iter_mut().enumerate() {
        secret["metadata"]["uid"] = format!("00000000-0000-4000-8000-{i:012}").into();
        secret["metadata"]["resourceVersion"] = (200 + i).to_string().into();
    }
    let run = |api: &common::apiserver::StandIn, shell: &str, name: &str| {
        let dir = TempDir::new("readme", &format!("{name}-{shell}"));
        let out = common::with_binary_on_path(shell)
            .arg("-c")
            .arg(&script)
            .current_dir(&dir.0)
            .env("KUBECONFIG", &api.kubeconfig)
            .output()
            .expect("the shell runs");
        assert!(
            text(&out.stdout).ends_with("shell-still-here\n"),
            "{shell}: the pasted commands ended the shell:\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(
            fs::read_dir(&dir.0).expect("dir").next().is_none(),
            "{shell}: the commands left a file (the fleet's credentials) behind"
        );
        out
    };
    for shell in shells {
        let pipeline = |api: &common::apiserver::StandIn, name: &str| run(api, shell, name);
        let Some(api) =
            common::apiserver::StandIn::start(&format!("readme-pipeline-{shell}"), &store)
        else {
            return;
        };
        let before = api.secret_names();
        let out = pipeline(&api, "pipeline");
        assert!(
            text(&out.stdout).contains("status=0\n"),
            "{shell}: every request carried out: {}",
            text(&out.stdout)
        );
        assert!(
            text(&out.stdout).contains("app delete argocd/retired-guestbook (ApplicationSet argocd/guestbook): its cluster is removed from Argo CD"),
            "{shell}: the plan says which Application goes: {}",
            text(&out.stdout)
        );
        let writes: Vec<(String, String)> = api
            .writes()
            .into_iter()
            .map(|r| (r.method, r.path))
            .collect();
        assert_eq!(
            writes,
            [
                ("POST".into(), "/api/v1/namespaces/argocd/secrets".into()),
                (
                    "DELETE".into(),
                    "/api/v1/namespaces/argocd/secrets/cluster-retired".into()
                ),
            ],
            "exactly the plan's create and prune"
        );
        let requests = api.writes();
        let created: serde_json::Value = serde_json::from_str(&requests[0].body).expect("a Secret");
        assert_eq!(created["metadata"]["name"], "cluster-prod-eu-1");
        let options: serde_json::Value =
            serde_json::from_str(&requests[1].body).expect("DeleteOptions");
        let gone = store
            .iter()
            .find(|o| o["metadata"]["name"] == "cluster-retired")
            .expect("the retired cluster's Secret");
        assert_eq!(
            options["preconditions"],
            serde_json::json!({
                "uid": gone["metadata"]["uid"],
                "resourceVersion": gone["metadata"]["resourceVersion"],
            }),
            "the deletion is conditional on what was read"
        );
        let mut expected: Vec<String> = before
            .into_iter()
            .filter(|n| n != "argocd/cluster-retired")
            .chain(["argocd/cluster-prod-eu-1".to_string()])
            .collect();
        expected.sort();
        assert_eq!(
            api.secret_names(),
            expected,
            "the repository credential stays"
        );
        // A second run finds its Secret as the API server stores it: unchanged, nothing written.
        let out = pipeline(&api, "pipeline-again");
        assert_eq!(
            api.writes().len(),
            2,
            "a second run wrote something: {:?}",
            api.writes()
        );
        assert!(
            text(&out.stdout).contains("unchanged argocd/cluster-prod-eu-1 (prod-eu-1)"),
            "{}",
            text(&out.stdout)
        );

        // Someone edited the Argo CD Secret's server: it is replaced, conditional on the
        // resourceVersion read.
        let mut edited = api.secrets();
        let mut version = String::new();
        for secret in &mut edited {
            if secret["metadata"]["name"] == "cluster-prod-eu-1" {
                secret["data"]["server"] = "aHR0cHM6Ly9lbHNld2hlcmU6NjQ0Mw==".into();
                version = secret["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
            }
        }
        drop(api);
        let Some(api) =
            common::apiserver::StandIn::start(&format!("readme-pipeline-edited-{shell}"), &edited)
        else {
            return;
        };
        pipeline(&api, "pipeline-edited");
        let writes = api.writes();
        assert_eq!(writes.len(), 1, "{writes:?}");
        assert_eq!(writes[0].method, "PUT");
        assert_eq!(
            writes[0].path,
            "/api/v1/namespaces/argocd/secrets/cluster-prod-eu-1"
        );
        let replaced: serde_json::Value = serde_json::from_str(&writes[0].body).expect("a Secret");
        assert_eq!(replaced["metadata"]["resourceVersion"], version.as_str());
        drop(api);

        // Regression (the loop stopped at a refused request but the pipeline exited 0, so a
        // script went on as if all was applied): another writer changes the Secret between the
        // read and the replace; the API server refuses the stale replace with 409, the loop
        // stops there and its status is 1, and the shell is still there.
        let Some(api) = common::apiserver::StandIn::start_with(
            &format!("readme-pipeline-refused-{shell}"),
            &edited,
            common::apiserver::Options {
                args: vec![
                    "--interfere".into(),
                    "PUT".into(),
                    "/api/v1/namespaces/argocd/secrets/cluster-prod-eu-1".into(),
                ],
                ..Default::default()
            },
        ) else {
            return;
        };
        let out = pipeline(&api, "pipeline-refused");
        assert!(
            text(&out.stdout).contains("status=1\n"),
            "{shell}: a refused request ends the loop with status 1:\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("Conflict") || text(&out.stderr).contains("409"),
            "{}",
            text(&out.stderr)
        );
        drop(api);

        // The same cluster, but the kubeconfig Secrets' selector matches nothing (a typo, a
        // half-failed get): the guard holds, nothing is deleted.
        let only_argocd: Vec<serde_json::Value> = store
            .iter()
            .filter(|o| o["metadata"]["namespace"] == "argocd")
            .cloned()
            .collect();
        let Some(api) = common::apiserver::StandIn::start(
            &format!("readme-pipeline-empty-{shell}"),
            &only_argocd,
        ) else {
            return;
        };
        let out = pipeline(&api, "pipeline-empty");
        assert!(
            text(&out.stderr).contains("allowEmpty=false"),
            "{}",
            text(&out.stderr)
        );
        assert!(api.writes().is_empty(), "{:?}", api.writes());
    }
}

/// `kubectl get secrets … -o yaml` prints a `kind: List`; here it holds the Argo CD Secret
/// capi2argo made from the kubeadm fixture, then the same Secret with a mistake in `config`.
#[test]
fn validate_pipeline_as_written() {
    let fixture = fs::read(root().join("tests/fixtures/providers/kubeadm.yaml")).expect("fixture");
    let out = common::capi2argo(&[], &fixture, None);
    let converted = text(&out.stdout);
    let secret = converted
        .split("\n---\n")
        .find(|d| d.contains("argocd.argoproj.io/secret-type: cluster"))
        .expect("an Argo CD Secret");
    let list = |item: &str| {
        let indented: String = item
            .trim_start_matches("---\n")
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect();
        format!("apiVersion: v1\nkind: List\nitems:\n-{}", &indented[1..])
    };
    let good = list(secret);
    let out = common::capi2argo(&["validate"], good.as_bytes(), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A good Secret gets one line: what its credential lets its holder do.
    assert_eq!(
        text(&out.stderr),
        "info: Secret argocd/cluster-prod-eu-1: stringData.config: credential: an admin client certificate (system:masters): everything, past RBAC and webhooks, revocable only by a new cluster CA\n"
    );
    let bad = list(&secret.replace("\"insecure\": false", "\"Insecure\": \"no\""));
    let out = common::capi2argo(&["validate"], bad.as_bytes(), None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "Secret argocd/cluster-prod-eu-1: stringData.config.tlsClientConfig.Insecure:"
        ),
        "{stderr}"
    );
    // The output is the input, item for item.
    assert!(text(&out.stdout).contains("\"Insecure\": \"no\""));
    // As the book has it: `--findings` prints the findings and a summary, never the input (its
    // credentials) — issue "The first hour".
    let out = common::capi2argo(&["validate", "--findings"], bad.as_bytes(), None);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("stringData.config.tlsClientConfig.Insecure:")
            && shown
                .lines()
                .last()
                .is_some_and(|l| l.starts_with("validate: 1 error")),
        "{shown}"
    );
    assert!(
        !shown.contains("keyData\": \""),
        "the input was printed: {shown}"
    );
    let out = common::capi2argo(&["validate", "--findings"], good.as_bytes(), None);
    assert_eq!(
        text(&out.stdout),
        "info: Secret argocd/cluster-prod-eu-1: stringData.config: credential: an admin client certificate (system:masters): everything, past RBAC and webhooks, revocable only by a new cluster CA\nvalidate: no problem found\n"
    );
}

#[test]
fn kpt_eval_as_written() {
    if !common::available("kpt", &["version"], "the README's kpt command was NOT run") {
        return;
    }
    let dir = TempDir::new("readme", "kpt");
    let package = dir.path("my-package");
    fs::create_dir_all(&package).expect("package dir");
    fs::write(
        package.join("Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: my-package\n",
    )
    .expect("Kptfile");
    fs::copy(
        root().join("tests/fixtures/providers/kubeadm.yaml"),
        package.join("capi-secrets.yaml"),
    )
    .expect("fixture copied");
    let out = sh(
        &dir.0,
        "kpt fn eval my-package --exec capi2argo -- namespacedNames=true",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = package.join("argocd/cluster-fleet-eu-prod-eu-1.yaml");
    let secret = fs::read_to_string(&written).expect("kpt wrote the new Secret to its file");
    assert!(secret.contains("argocd.argoproj.io/secret-type: cluster"));
}

/// The two install commands, as written (the install going to a scratch root): the command
/// runs, and the release binary links nothing but glibc and libgcc_s, as the README says.
#[test]
fn install_and_release_build_as_written() {
    let dir = TempDir::new("readme", "install");
    let target = root().join("target/readme-install");
    let run = |command: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(root())
            .env("CARGO_INSTALL_ROOT", &dir.0)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{command}: {}", text(&out.stderr));
    };
    run("cargo install --locked --path .");
    let installed = dir.path("bin/capi2argo");
    let version = Command::new(&installed)
        .arg("--version")
        .output()
        .expect("installed binary runs");
    assert!(text(&version.stdout).starts_with("capi2argo "));
    run("cargo build --locked --release");
    let binary = target.join("release/capi2argo");
    if !common::available(
        "ldd",
        &["--version"],
        "the release binary's links were NOT checked",
    ) {
        return;
    }
    let links = Command::new("ldd").arg(&binary).output().expect("ldd runs");
    // In any order: the linker's order follows the crates' and says nothing to a user.
    let mut libraries: Vec<String> = text(&links.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|l| !l.starts_with("linux-vdso") && !l.starts_with("/lib64/ld-linux"))
        .collect();
    libraries.sort();
    assert_eq!(
        libraries,
        ["libc.so.6", "libgcc_s.so.1"],
        "the release binary links more than the README says"
    );
    let size = fs::metadata(&binary).expect("binary").len();
    // "About 2.5 MB": what rounds to 2.5 MB, and a little either side.
    assert!(
        (2_350_000..2_750_000).contains(&size),
        "the README says about 2.5 MB; it is {size} bytes"
    );
}

/// The book's settings table is the key table the function parses with, row for row.
#[test]
fn settings_table_is_the_key_table() {
    let readme = common::chapter("configuration.md");
    let rows: Vec<String> = capi2argo_core::KEYS
        .iter()
        .map(|k| {
            let default = match k.default {
                "none" | "all" => k.default.to_string(),
                d => format!("`{d}`"),
            };
            format!("| `{}` | {default} | {} |", k.name, k.doc)
        })
        .collect();
    let table = format!(
        "| key | default | meaning |\n|---|---|---|\n{}\n",
        rows.join("\n")
    );
    assert!(
        readme.contains(&table),
        "docs/src/configuration.md's settings table differs from the key table; it should read:\n{table}"
    );
}

/// Every crate a shipped build depends on has a row in the book's Dependencies table saying
/// why it is there.
/// The book's table of sources has one row per preset, in the presets' order, and no other.
#[test]
fn sources_table_is_the_preset_table() {
    let chapter = common::chapter("sources.md");
    let rows: Vec<&str> = chapter
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    assert_eq!(
        rows,
        capi2argo_core::source_presets(),
        "docs/src/sources.md's table of sources"
    );
}

#[test]
fn every_dependency_is_explained() {
    let readme = common::chapter("dependencies.md");
    let table = readme
        .split("# Dependencies")
        .nth(1)
        .and_then(|s| s.split("\n\n").find(|block| block.starts_with("| crate |")))
        .expect("a Dependencies table");
    let explained: BTreeSet<&str> = table
        .lines()
        .filter_map(|row| row.strip_prefix("| "))
        .flat_map(|row| row.split(" | ").next().unwrap_or_default().split(", "))
        .filter_map(|name| name.split('`').nth(1))
        .collect();
    let mut missing = Vec::new();
    for manifest in [
        "Cargo.toml",
        "crates/yaml/Cargo.toml",
        "crates/krm/Cargo.toml",
        "crates/core/Cargo.toml",
        "controller/Cargo.toml",
        "wasm/Cargo.toml",
        "wasm/kpt/Cargo.toml",
        "wasm/policy/Cargo.toml",
    ] {
        let text = fs::read_to_string(root().join(manifest)).expect(manifest);
        for section in ["[dependencies]", "[dev-dependencies]"] {
            let Some(body) = text.split(section).nth(1) else {
                continue;
            };
            for line in body.split("\n[").next().unwrap_or_default().lines() {
                let name = line.split([' ', '=']).next().unwrap_or_default();
                // The workspace's own crates are the layers (docs/src/development.md), not
                // dependencies to explain.
                let own = name.starts_with("capi2argo") || line.contains("package = \"capi2argo-");
                if name.is_empty() || name.starts_with('#') || own {
                    continue;
                }
                if !explained.contains(name) {
                    missing.push(format!("{manifest}: {name}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no row in docs/src/dependencies.md for {missing:?}"
    );
}

/// The plans the book shows are the golden cases `plan-text`'s and `appset-label-selectors`',
/// line for line.
#[test]
fn the_plan_shown_is_the_golden_plan() {
    let readme = common::chapter("fleet-safety.md");
    for case in ["plan-text", "appset-label-selectors"] {
        let plan =
            fs::read_to_string(root().join(format!("tests/golden/{case}/expected/output.yaml")))
                .expect("the golden plan");
        assert!(
            readme.contains(&format!("```\n{plan}```\n")),
            "docs/src/fleet-safety.md's plan differs from tests/golden/{case}; it should read:\n{plan}"
        );
    }
}
