//! Argo CD's ApplicationSet rules as the plan computes them, against the references Argo CD
//! itself runs: Application names rendered by Go's text/template with sprig and by
//! valyala/fasttemplate (tests/appsets/render, built from Debian's packages by the test), and
//! label selectors matched by kustomize's (apimachinery's `labels.Parse` and `Matches`). Where the
//! plan computes a name, the reference must render the same text; where it does not, nothing is
//! claimed.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use capi2argo_core::internals::appsets::{
    ClusterView, Rendered, Selector, Syntax, Template, cluster_params, sanitize_name,
};
use capi2argo_core::{Limits, SecretId};
use capi2argo_yaml::parse_stream;
use serde_json::{Value as Json, json};

use crate::common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The reference renderer, built once per run into target/; `None` (said loudly) without Go,
/// sprig or fasttemplate.
fn renderer() -> Option<PathBuf> {
    common::go_reference(
        "appsets-render",
        "tests/appsets/render",
        &[
            (
                "github.com/Masterminds/sprig",
                "golang-github-masterminds-sprig-dev",
            ),
            (
                "github.com/valyala/fasttemplate",
                "golang-github-valyala-fasttemplate-dev",
            ),
        ],
        "Application names were NOT compared with Go's text/template and fasttemplate",
    )
}

fn secret_id(name: &str) -> SecretId {
    SecretId {
        namespace: "argocd".into(),
        name: format!("cluster-{name}"),
    }
}

fn view(
    name: &str,
    server: &str,
    project: Option<&str>,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> ClusterView {
    let pairs = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    // Every cluster but the local one comes from a Secret.
    let secret = (server != "https://kubernetes.default.svc").then(|| secret_id(name));
    ClusterView {
        secret,
        name: name.into(),
        server: server.into(),
        project: project.map(String::from),
        labels: pairs(labels),
        annotations: pairs(annotations),
    }
}

/// Clusters whose names and labels stress what a template does to them: Argo CD's own test
/// cluster (applicationset/generators/cluster_test.go), Unicode, dots and slashes in keys.
fn clusters() -> Vec<ClusterView> {
    vec![
        view(
            "prod-eu-1",
            "https://prod-eu-1.example:6443",
            None,
            &[
                ("argocd.argoproj.io/secret-type", "cluster"),
                ("env", "prod"),
                ("app.kubernetes.io/part-of", "shop"),
                ("capi-to-argocd/cluster-namespace", "fleet-eu"),
            ],
            &[("my-custom-annotation", "v1.2.3")],
        ),
        view(
            "production_01/west",
            "https://production-01.example.com",
            Some("prod-project"),
            &[("environment", "production"), ("org", "bar")],
            &[("foo.argoproj.io", "production")],
        ),
        view("Ünïcode-名前 x", "https://u.example", None, &[], &[]),
        view(
            "in-cluster",
            "https://kubernetes.default.svc",
            Some(""),
            &[],
            &[],
        ),
    ]
}

const GO_TEMPLATES: &[&str] = &[
    "{{.name}}-guestbook",
    "{{.nameNormalized}}",
    "{{ .name | lower }}",
    "{{ .name | upper }}",
    "{{.server}}",
    "{{ .project }}-x",
    "{{index .metadata.labels \"app.kubernetes.io/part-of\"}}-{{.name}}",
    "{{ index .metadata.annotations \"my-custom-annotation\" }}",
    "{{ .metadata.labels.env }}",
    "{{ trunc 5 .name }}",
    "{{ trunc -3 .name }}",
    "{{ trunc 100 .name }}",
    "{{ trunc 0 .name }}",
    "{{ .name | trimSuffix \"-1\" }}",
    "{{ trimPrefix \"prod-\" .name }}",
    "{{ replace \"-\" \"_\" .name }}",
    "{{ replace \"\" \"x\" .name }}",
    "{{ .name | replace \"o\" \"0\" | upper }}",
    "{{- .name -}} a",
    "a {{- .name }}",
    "a {{ .name -}} b",
    "{{ .name | trim }}",
    "{{ \"literal\" }}-{{ `raw` }}",
    "{{ .values.revision }}-{{ .values.clusterName | lower }}",
    "{{ .metadata.labels.missing }}",
    "no template at all",
    "{{ .name }}}}",
    "{{/* a comment */}}{{ .name }}",
    "{{ printf \"%s-%s\" .name .server }}",
    "{{ .name | quote }}",
    "{{ range $k, $v := .metadata.labels }}{{ $k }}{{ end }}",
];

const FAST_TEMPLATES: &[&str] = &[
    "{{name}}-guestbook",
    "{{ name }}",
    "{{nameNormalized}}",
    "{{metadata.labels.env}}",
    "{{ metadata.annotations.my-custom-annotation }}",
    "{{metadata.labels.app.kubernetes.io/part-of}}",
    "{{missing}}-x",
    "{{}}",
    "{{ }}",
    "{{name",
    "no template",
    "{{values.revision}}/{{values.clusterName}}",
    "{{server}}{{name}}",
    "{{ name}}x{{project }}",
    "{{{{name}}}}",
];

/// Every (template, cluster, options) the test asks both sides about.
fn requests() -> Vec<Json> {
    let mut out = Vec::new();
    let values_go = BTreeMap::from([
        (
            "revision",
            "{{index .metadata.annotations \"my-custom-annotation\"}}",
        ),
        ("clusterName", "{{.name}}"),
    ]);
    let values_fast = BTreeMap::from([
        ("revision", "{{metadata.annotations.my-custom-annotation}}"),
        ("clusterName", "{{ name }}"),
    ]);
    for c in clusters() {
        let cluster = json!({
            "name": c.name,
            "nameNormalized": sanitize_name(&c.name),
            "server": c.server,
            "project": c.project.clone().unwrap_or_default(),
            "labels": c.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
            "annotations": c.annotations.iter().cloned().collect::<BTreeMap<_, _>>(),
            "local": c.secret.is_none(),
        });
        for options in [vec![], vec!["missingkey=error"]] {
            for t in GO_TEMPLATES {
                out.push(json!({"go": true, "options": options, "template": t, "cluster": cluster, "values": values_go}));
            }
        }
        for t in FAST_TEMPLATES {
            out.push(json!({"go": false, "options": [], "template": t, "cluster": cluster, "values": values_fast}));
        }
    }
    out
}

/// What the plan computes for a request: the text, or that the renderer fails (`Err`); `None`
/// when it computes neither.
fn computed(request: &Json) -> Option<Result<String, String>> {
    let options: Vec<String> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    let syntax = Syntax::of(request["go"].as_bool().unwrap(), &options);
    let c = &request["cluster"];
    let pairs = |v: &Json| -> Vec<(String, String)> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect()
    };
    let local = c["local"].as_bool().unwrap();
    let view = ClusterView {
        secret: (!local).then(|| secret_id(c["name"].as_str().unwrap())),
        name: c["name"].as_str().unwrap().into(),
        server: c["server"].as_str().unwrap().into(),
        project: Some(c["project"].as_str().unwrap().into()),
        labels: pairs(&c["labels"]),
        annotations: pairs(&c["annotations"]),
    };
    let values = pairs(&request["values"]);
    let params = match cluster_params(&view, &values, syntax) {
        Ok(params) => params,
        Err((_, why)) => return Some(Err(why)),
    };
    match Template::parse(request["template"].as_str().unwrap(), syntax).render(&params) {
        Rendered::Text(t) => Some(Ok(t)),
        Rendered::NotComputed => None,
        Rendered::Failed(why) => Some(Err(why)),
    }
}

/// Every name the plan computes is the text Argo CD's own renderers give, and where it says the
/// renderer fails (which makes the ApplicationSet generate nothing), the renderer fails.
#[test]
fn names_the_plan_computes_are_what_argo_cds_renderers_give() {
    let Some(binary) = renderer() else { return };
    let requests = requests();
    let mut child = Command::new(&binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the renderer runs");
    let mut input = String::new();
    for r in &requests {
        input.push_str(&r.to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("the renderer answers");
    writer.join().unwrap().expect("written");
    assert!(out.status.success(), "the renderer failed");
    let answers: Vec<Json> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), requests.len());
    let mut compared = 0;
    let mut problems = Vec::new();
    for (request, answer) in requests.iter().zip(&answers) {
        let Some(ours) = computed(request) else {
            continue;
        };
        compared += 1;
        match (&ours, answer["text"].as_str()) {
            (Ok(ours), Some(theirs)) if theirs == ours => {}
            (Err(_), None) => {}
            (_, other) => problems.push(format!(
                "{} (go: {}, options {}) for {}: plan {ours:?}, Argo CD's renderer {:?}",
                request["template"],
                request["go"],
                request["options"],
                request["cluster"]["name"],
                other.map_or_else(|| answer["error"].to_string(), String::from)
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Most requests are computed; the rest are what the plan says it does not compute.
    assert!(
        compared * 10 >= requests.len() * 7,
        "only {compared} of {} names were computed",
        requests.len()
    );
}

/// Selectors and labels the plan and kustomize both judge: kustomize selects by apimachinery's
/// `labels.Parse` (`patches` with a `labelSelector` target), the set-based form of the same
/// requirements a `matchLabels`/`matchExpressions` selector builds.
#[test]
fn selectors_match_what_apimachinery_matches() {
    let Some(kustomize) =
        common::kustomize("label selectors were NOT compared with apimachinery's (kustomize's)")
    else {
        return;
    };
    // Each selector: as an ApplicationSet writes it, and as kustomize's labelSelector says it.
    let selectors = [
        ("matchLabels: {env: prod}", "env=prod"),
        ("matchLabels: {env: prod, org: foo}", "env=prod,org=foo"),
        (
            "matchExpressions: [{key: env, operator: In, values: [prod, staging]}]",
            "env in (prod,staging)",
        ),
        (
            "matchExpressions: [{key: env, operator: NotIn, values: [prod]}]",
            "env notin (prod)",
        ),
        ("matchExpressions: [{key: org, operator: Exists}]", "org"),
        (
            "matchExpressions: [{key: org, operator: DoesNotExist}]",
            "!org",
        ),
        (
            "matchLabels: {app.kubernetes.io/part-of: shop}\nmatchExpressions: [{key: env, operator: NotIn, values: [dev, test]}]",
            "app.kubernetes.io/part-of=shop,env notin (dev,test)",
        ),
        ("matchLabels: {env: ''}", "env="),
    ];
    let label_sets: [&[(&str, &str)]; 7] = [
        &[],
        &[("env", "prod")],
        &[("env", "prod"), ("org", "foo")],
        &[("env", "staging"), ("org", "")],
        &[("env", "")],
        &[("env", "dev"), ("app.kubernetes.io/part-of", "shop")],
        &[("app.kubernetes.io/part-of", "shop")],
    ];
    let dir = tempdir("selectors");
    let mut objects = String::new();
    for (i, labels) in label_sets.iter().enumerate() {
        let labels: String = labels
            .iter()
            .map(|(k, v)| format!("    {k}: {v:?}\n"))
            .collect();
        let labels = if labels.is_empty() {
            String::new()
        } else {
            format!("  labels:\n{labels}")
        };
        objects.push_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n{labels}data:\n  base: x\n---\n"
        ));
    }
    fs::write(dir.join("objects.yaml"), objects).unwrap();
    let mut kustomization = String::from(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- objects.yaml\npatches:\n",
    );
    for (s, (_, parsed)) in selectors.iter().enumerate() {
        kustomization.push_str(&format!(
            "- target:\n    labelSelector: {parsed:?}\n  patch: |-\n    - op: add\n      path: /data/s{s}\n      value: \"yes\"\n"
        ));
    }
    fs::write(dir.join("kustomization.yaml"), kustomization).unwrap();
    let out = Command::new(&kustomize)
        .arg("build")
        .arg(&dir)
        .output()
        .expect("kustomize runs");
    assert!(
        out.status.success(),
        "kustomize build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = String::from_utf8(out.stdout).unwrap();
    let docs = parse_stream(&built, &Limits::default()).expect("kustomize's YAML");
    let mut checked = 0;
    for (s, (written, _)) in selectors.iter().enumerate() {
        let selector_docs = parse_stream(written, &Limits::default()).unwrap();
        let selector = Selector::read(Some(&selector_docs[0].root), "selector", true)
            .expect("a selector apimachinery takes");
        for (i, labels) in label_sets.iter().enumerate() {
            let ours = selector.matches(|k| labels.iter().find(|(l, _)| *l == k).map(|(_, v)| *v));
            let doc = docs
                .iter()
                .find(|d| {
                    d.root.path(&["metadata", "name"]).and_then(|n| n.as_str())
                        == Some(format!("c{i}").as_str())
                })
                .expect("every object built");
            let theirs = doc.root.path(&["data", &format!("s{s}")]).is_some();
            assert_eq!(
                ours, theirs,
                "selector {written:?} on labels {labels:?}: plan {ours}, apimachinery (kustomize) {theirs}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, selectors.len() * label_sets.len());
}

fn tempdir(name: &str) -> PathBuf {
    let dir = root().join("target/appsets").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}
