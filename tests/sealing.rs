//! `seal: sealedSecrets`: the SealedSecrets the command writes open, with the test
//! controller's private key and an unsealer written here from the format Sealed Secrets reads
//! (bitnami-labs/sealed-secrets pkg/crypto: a 2-byte length, the RSA-OAEP-SHA-256 ciphertext of
//! an AES-256 key, then AES-GCM with a zero nonce; the OAEP label is the scope's), to exactly
//! the Secret the command writes without sealing; later runs keep what did not change.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, KeyInit, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use capi2argo_yaml::Node;
use pkcs8::DecodePrivateKey;
use rsa::Oaep;
use sha2::Sha256;

use crate::common::{self, TempDir};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

fn kubeadm() -> Vec<u8> {
    fs::read(fixture("providers/kubeadm.yaml")).expect("fixture")
}

/// A functionConfig that seals with `certificate` (a file under tests/fixtures/sealing), and
/// `more` settings.
fn sealing_config(dir: &TempDir, certificate: &str, more: &[(&str, &str)]) -> PathBuf {
    let pem = fs::read_to_string(fixture(&format!("sealing/{certificate}"))).expect("certificate");
    let mut data = serde_json::json!({ "seal": "sealedSecrets", "sealingCertificate": pem });
    for (k, v) in more {
        data[*k] = serde_json::Value::String(v.to_string());
    }
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "fn" }, "data": data,
    });
    let path = dir.path(&format!("{certificate}-{}.json", more.len()));
    fs::write(&path, config.to_string()).expect("config written");
    path
}

struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

fn run(args: &[&str], input: &[u8]) -> Run {
    let out = common::capi2argo(args, input, None);
    Run {
        stdout: String::from_utf8(out.stdout).expect("UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8"),
        code: out.status.code().expect("an exit code"),
    }
}

fn sealed_run(config: &Path, input: &[u8]) -> Run {
    let path = config.to_str().expect("UTF-8 path");
    let run = run(&["--fn-config", path], input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
}

/// The command with `args` on `input`, its randomness `random` (64 hex digits) or, with `None`,
/// the system's.
fn run_random(random: Option<&str>, args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut command = common::binary();
    match random {
        Some(random) => command.env(capi2argo_core::host::RANDOM_VARIABLE, random),
        None => command.env_remove(capi2argo_core::host::RANDOM_VARIABLE),
    };
    command.env(capi2argo_core::host::NOW_VARIABLE, common::pinned_now());
    let mut child = command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("written");
    child.wait_with_output().expect("ends")
}

/// `capi2argo plan` with the functionConfig at `config`.
fn plan_with(config: &Path, input: &[u8]) -> Run {
    run(
        &["plan", "--fn-config", config.to_str().expect("UTF-8")],
        input,
    )
}

fn documents(text: &str) -> Vec<Node<'static>> {
    capi2argo_yaml::parse_stream(text, &capi2argo_core::Limits::default())
        .expect("YAML")
        .into_iter()
        .map(|d| d.root.into_owned())
        .collect()
}

fn kind<'n>(node: &'n Node) -> &'n str {
    node.get("kind").and_then(Node::as_str).unwrap_or_default()
}

fn strings(node: Option<&Node>) -> BTreeMap<String, String> {
    node.and_then(Node::as_map)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
        .collect()
}

/// The one SealedSecret of an output.
fn the_sealed_secret(output: &str) -> Node<'static> {
    let sealed: Vec<Node> = documents(output)
        .into_iter()
        .filter(|d| kind(d) == "SealedSecret")
        .collect();
    assert_eq!(sealed.len(), 1, "one SealedSecret in:\n{output}");
    sealed.into_iter().next().expect("one")
}

/// The test controller's private key.
fn private_key(name: &str) -> rsa::PrivateKey {
    let pem = fs::read_to_string(fixture(&format!("sealing/{name}"))).expect("key");
    rsa::PrivateKey::from_pkcs8_pem(&pem).expect("a PKCS#8 RSA key")
}

/// One sealed value opened, as the Sealed Secrets controller opens it.
fn open(key: &rsa::PrivateKey, value: &str, label: &[u8]) -> Result<Vec<u8>, String> {
    let bytes = B64.decode(value).map_err(|e| e.to_string())?;
    let length = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
    let (sealed_key, sealed_value) = bytes[2..].split_at(length);
    let session = key
        .decrypt(Oaep::<Sha256>::new_with_label(label.to_vec()), sealed_key)
        .map_err(|e| format!("the session key does not open: {e}"))?;
    let cipher = Aes256Gcm::new_from_slice(&session).map_err(|e| e.to_string())?;
    cipher
        .decrypt(&Nonce::<Aes256Gcm>::default(), sealed_value)
        .map_err(|e| format!("the value does not open: {e}"))
}

/// The label a scope seals under (sealed-secrets' EncryptionLabel).
fn label(scope: &str, namespace: &str, name: &str) -> Vec<u8> {
    match scope {
        "namespace-wide" => namespace.as_bytes().to_vec(),
        "cluster-wide" => Vec::new(),
        _ => format!("{namespace}/{name}").into_bytes(),
    }
}

/// The SealedSecret unsealed: the Secret the controller would write (metadata, type, data).
fn unseal(sealed: &Node, key: &rsa::PrivateKey) -> (Node<'static>, BTreeMap<String, String>) {
    let annotations = strings(sealed.path(&["metadata", "annotations"]));
    let scope = if annotations
        .get("sealedsecrets.bitnami.com/cluster-wide")
        .map(String::as_str)
        == Some("true")
    {
        "cluster-wide"
    } else if annotations
        .get("sealedsecrets.bitnami.com/namespace-wide")
        .map(String::as_str)
        == Some("true")
    {
        "namespace-wide"
    } else {
        "strict"
    };
    let name = sealed
        .path(&["metadata", "name"])
        .and_then(Node::as_str)
        .expect("name");
    let namespace = sealed
        .path(&["metadata", "namespace"])
        .and_then(Node::as_str)
        .expect("ns");
    let data = strings(sealed.path(&["spec", "encryptedData"]))
        .into_iter()
        .map(|(k, v)| {
            let plain = open(key, &v, &label(scope, namespace, name))
                .unwrap_or_else(|e| panic!("encryptedData.{k}: {e}"));
            (k, String::from_utf8(plain).expect("UTF-8 value"))
        })
        .collect();
    let template = sealed
        .path(&["spec", "template"])
        .expect("a template")
        .clone()
        .into_owned();
    (template, data)
}

/// The Argo CD Secret the command writes without sealing.
fn plain_secret(input: &[u8]) -> Node<'static> {
    let run = run(&[], input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    documents(&run.stdout)
        .into_iter()
        .find(|d| {
            d.path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
                .and_then(Node::as_str)
                == Some("cluster")
        })
        .expect("an Argo CD Secret")
}

#[test]
fn sealed_values_open_to_the_secret_written_without_sealing_in_every_scope() {
    let dir = TempDir::new("sealing", "scopes");
    let plain = plain_secret(&kubeadm());
    let key = private_key("controller.key");
    for scope in ["strict", "namespace-wide", "cluster-wide"] {
        let config = sealing_config(&dir, "controller.crt", &[("sealScope", scope)]);
        let sealed = the_sealed_secret(&sealed_run(&config, &kubeadm()).stdout);
        let (template, data) = unseal(&sealed, &key);
        assert_eq!(
            data,
            strings(plain.get("stringData")),
            "{scope}: the values"
        );
        // The SealedSecret carries the Secret's labels too: the plan (and `kubectl get -l`)
        // reads it by them.
        assert_eq!(
            strings(sealed.path(&["metadata", "labels"])),
            strings(plain.path(&["metadata", "labels"]))
        );
        for field in ["metadata", "type"] {
            let (a, b) = (template.get(field), plain.get(field));
            assert!(
                a.zip(b)
                    .is_some_and(|(a, b)| capi2argo_yaml::same_content(a, b)),
                "{scope}: the template's {field} is the Secret's"
            );
        }
        // Under another name (or, namespace-wide, in another namespace) nothing opens.
        if scope != "cluster-wide" {
            let config = strings(sealed.path(&["spec", "encryptedData"]))["config"].clone();
            assert!(open(&key, &config, &label(scope, "elsewhere", "cluster-other")).is_err());
        }
        // The renewed key, which did not seal it, cannot open it either.
        let other = private_key("renewed.key");
        let server = strings(sealed.path(&["spec", "encryptedData"]))["server"].clone();
        assert!(
            open(
                &other,
                &server,
                &label(scope, "argocd", "cluster-prod-eu-1")
            )
            .is_err()
        );
    }
}

#[test]
fn sealed_output_holds_no_credential_of_the_input() {
    let dir = TempDir::new("sealing", "no-credential");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let run = sealed_run(&config, &kubeadm());
    let input = String::from_utf8(kubeadm()).expect("UTF-8");
    // Every data value of every input Secret (keys, certificates, the kubeconfig) and what it
    // decodes to: none is in the output or on standard error.
    let mut secrets = 0;
    for doc in documents(&input).iter().filter(|d| kind(d) == "Secret") {
        for (key, value) in strings(doc.get("data")) {
            let decoded = String::from_utf8(B64.decode(&value).expect("base64")).expect("UTF-8");
            for needle in [value.as_str(), decoded.as_str()] {
                assert!(!run.stdout.contains(needle), "the output holds {key}");
                assert!(!run.stderr.contains(needle), "standard error holds {key}");
            }
            secrets += 1;
        }
    }
    assert!(secrets >= 10, "the fixture's Secrets were read ({secrets})");
    let plain = plain_secret(&kubeadm());
    for (key, value) in strings(plain.get("stringData"))
        .iter()
        .filter(|(k, _)| *k == "config")
    {
        assert!(
            !run.stdout.contains(value.as_str()),
            "the output holds {key} in plain text"
        );
    }
    assert!(
        documents(&run.stdout)
            .iter()
            .all(|d| kind(d) == "SealedSecret"),
        "the output is SealedSecrets alone:\n{}",
        run.stdout
    );
}

#[test]
fn a_second_run_beside_the_kubeconfig_secrets_or_without_them_changes_nothing() {
    let dir = TempDir::new("sealing", "idempotent");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let first = sealed_run(&config, &kubeadm()).stdout;
    let mut beside = kubeadm();
    beside.extend_from_slice(first.as_bytes());
    assert_eq!(
        sealed_run(&config, &beside).stdout,
        first,
        "beside its kubeconfig Secrets"
    );
    let alone = sealed_run(&config, first.as_bytes());
    assert_eq!(alone.stdout, first, "re-rendered without them");
    assert!(alone.stderr.contains("kept as it is"), "{}", alone.stderr);
}

/// The kubeadm fixture with its kubeconfig's text changed by `edit`.
fn kubeadm_edited(edit: impl Fn(&str) -> String) -> Vec<u8> {
    edited(&kubeadm(), "prod-eu-1-kubeconfig", edit)
}

/// A fixture's Secrets with the kubeconfig of the Secret `name` changed by `edit`.
fn edited(fixture: &[u8], name: &str, edit: impl Fn(&str) -> String) -> Vec<u8> {
    let text = String::from_utf8(fixture.to_vec()).expect("UTF-8");
    let mut out = String::new();
    for doc in text.split("\n---\n") {
        if doc.contains(&format!("name: {name}\n")) {
            let encoded = doc
                .lines()
                .find_map(|l| l.trim_start().strip_prefix("value: "))
                .expect("the kubeconfig's value");
            let kubeconfig =
                String::from_utf8(B64.decode(encoded).expect("base64")).expect("UTF-8");
            out.push_str(&doc.replace(encoded, &B64.encode(edit(&kubeconfig))));
        } else {
            out.push_str(doc);
        }
        out.push_str("\n---\n");
    }
    out.into_bytes()
}

#[test]
fn a_changed_value_is_sealed_again_and_the_others_keep_their_ciphertext() {
    let dir = TempDir::new("sealing", "changed");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let first = sealed_run(&config, &kubeadm()).stdout;
    let before = strings(the_sealed_secret(&first).path(&["spec", "encryptedData"]));
    let server = |k: &str| {
        k.replace(
            "https://prod-eu-1-api.example.net:6443",
            "https://prod-eu-1-api.example.net:7443",
        )
    };
    let moved = kubeadm_edited(server);
    assert_ne!(moved, kubeadm(), "the fixture's server was changed");
    let mut input = moved.clone();
    input.extend_from_slice(first.as_bytes());
    let plan = plan_with(&config, &input);
    assert!(
        plan.stdout.contains("): server\n"),
        "the plan names the value:\n{}",
        plan.stdout
    );
    let second = sealed_run(&config, &input).stdout;
    let after = strings(the_sealed_secret(&second).path(&["spec", "encryptedData"]));
    assert_ne!(
        before["server"], after["server"],
        "the server is sealed again"
    );
    assert_eq!(before["name"], after["name"], "name keeps its ciphertext");
    assert_eq!(
        before["config"], after["config"],
        "config keeps its ciphertext"
    );
    let (_, data) = unseal(&the_sealed_secret(&second), &private_key("controller.key"));
    assert_eq!(data["server"], "https://prod-eu-1-api.example.net:7443");
    // A new certificate seals everything again, and says so.
    let renewed = sealing_config(&dir, "renewed.crt", &[]);
    let mut input = kubeadm();
    input.extend_from_slice(first.as_bytes());
    let plan = plan_with(&renewed, &input);
    assert!(
        plan.stdout.contains("): sealingCertificate\n"),
        "{}",
        plan.stdout
    );
    let resealed = the_sealed_secret(&sealed_run(&renewed, &input).stdout);
    let (_, data) = unseal(&resealed, &private_key("renewed.key"));
    assert_eq!(
        data,
        unseal(&the_sealed_secret(&first), &private_key("controller.key")).1
    );
}

#[test]
fn a_plain_owned_secret_is_replaced_by_its_sealed_secret() {
    let dir = TempDir::new("sealing", "from-plain");
    let plain = run(&[], &kubeadm()).stdout;
    let config = sealing_config(&dir, "controller.crt", &[]);
    let plan = run(
        &["plan", "--fn-config", config.to_str().expect("UTF-8")],
        plain.as_bytes(),
    );
    assert!(plan.stdout.contains("): sealed\n"), "{}", plan.stdout);
    let sealed = sealed_run(&config, plain.as_bytes()).stdout;
    assert!(
        documents(&sealed).iter().all(|d| kind(d) == "SealedSecret"),
        "{sealed}"
    );
}

#[test]
fn an_unusable_sealing_certificate_is_an_error_naming_the_setting() {
    let dir = TempDir::new("sealing", "refused");
    let not_a_certificate = dir.path("key.json");
    let key = fs::read_to_string(fixture("sealing/controller.key")).expect("key");
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "fn" },
        "data": { "seal": "sealedSecrets", "sealingCertificate": key },
    });
    fs::write(&not_a_certificate, config.to_string()).expect("written");
    let missing = dir.path("missing.json");
    fs::write(
        &missing,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fn"},"data":{"seal":"sealedSecrets"}}"#,
    )
    .expect("written");
    // A value the setting cannot take is a usage error (exit 2, as any unusable --fn-config);
    // a certificate missing beside `seal`, or expired, an error result (exit 1).
    let cases = [
        (
            sealing_config(&dir, "ec.crt", &[]),
            "holds an EC key, not RSA",
            2,
        ),
        (
            not_a_certificate,
            "holds a private key, not a certificate",
            2,
        ),
        (missing, "give the PEM", 1),
    ];
    for (config, says, code) in cases {
        let run = run(
            &["--fn-config", config.to_str().expect("UTF-8")],
            &kubeadm(),
        );
        assert_eq!(run.code, code, "{}", run.stderr);
        assert!(run.stderr.contains("sealingCertificate"), "{}", run.stderr);
        assert!(run.stderr.contains(says), "{says}: {}", run.stderr);
        let body = key.lines().nth(1).expect("the key's first line");
        assert!(!run.stderr.contains(body), "the key is never shown");
        assert!(!run.stdout.contains("SealedSecret"), "nothing is sealed");
    }
    // Expired: the certificate is valid ten years from when it was made.
    let config = sealing_config(&dir, "controller.crt", &[]);
    let run = common::capi2argo_at(
        &["--fn-config", config.to_str().expect("UTF-8")],
        &kubeadm(),
        None,
        "2040-01-01T00:00:00Z",
    );
    let stderr = String::from_utf8(run.stderr).expect("UTF-8");
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("sealingCertificate"), "{stderr}");
    assert!(stderr.contains("expired on 20"), "{stderr}");
}

#[test]
fn sealing_is_reproducible_only_with_pinned_randomness() {
    let dir = TempDir::new("sealing", "random");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let pinned = sealed_run(&config, &kubeadm()).stdout;
    assert_eq!(
        sealed_run(&config, &kubeadm()).stdout,
        pinned,
        "pinned: the same bytes"
    );
    let path = config.to_str().expect("UTF-8");
    let fresh = || {
        let out = run_random(None, &["--fn-config", path], &kubeadm());
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let one = fresh();
    let two = fresh();
    assert_ne!(one, two, "the system's randomness: fresh keys each run");
    let key = private_key("controller.key");
    assert_eq!(
        unseal(&the_sealed_secret(&one), &key).1,
        unseal(&the_sealed_secret(&two), &key).1
    );
}

/// The book's command line: the certificate's PEM text as a `--set` value, line breaks and all.
#[test]
fn the_certificate_is_given_on_the_command_line_as_the_book_shows() {
    let pem = fs::read_to_string(fixture("sealing/controller.crt")).expect("certificate");
    let setting = format!("sealingCertificate={pem}");
    let run = run(
        &["--set", "seal=sealedSecrets", "--set", &setting],
        &kubeadm(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (_, data) = unseal(
        &the_sealed_secret(&run.stdout),
        &private_key("controller.key"),
    );
    assert_eq!(data, strings(plain_secret(&kubeadm()).get("stringData")));
}

/// The book's workflow (docs/src/sealing.md), its commands as written in one shell: kubectl
/// reads the Cluster API Secrets from an API server (the stand-in) into the command, which seals
/// them into a kpt package; the real kpt renders it again as CI would (nothing changes); git
/// commits it; the fleet read again beside it changes nothing. What git holds opens to the
/// Argo CD Secret and holds no credential of the cluster's.
#[test]
fn the_books_sealed_package_workflow() {
    let tools = [
        ("kubectl", &["version", "--client"][..]),
        ("kpt", &["version"][..]),
        ("git", &["--version"][..]),
    ];
    if !tools.iter().all(|(tool, args)| {
        common::available(tool, args, "the book's sealed-package workflow was NOT run")
    }) {
        return;
    }
    let commands: Vec<&str> = crate::readme::COMMANDS
        .iter()
        .filter(|(_, test)| test.starts_with("sealing::the_books_sealed_package_workflow"))
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(commands.len(), 5, "the book's workflow has five commands");
    let items: Vec<serde_json::Value> = serde_json::from_str(
        &capi2argo_core::items_json(&kubeadm(), &capi2argo_core::Limits::default())
            .expect("the fixture reads"),
    )
    .expect("JSON");
    let Some(api) = common::apiserver::StandIn::start("sealing-workflow", &items) else {
        return;
    };
    let dir = TempDir::new("sealing", "workflow");
    let package = dir.path("my-package");
    let example = common::root().join("Kptfile-examples/sealed-fleet");
    fs::create_dir_all(&package).expect("package");
    for file in ["Kptfile", "seal.yaml", "README.md"] {
        fs::copy(example.join(file), package.join(file)).expect("copied");
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&package)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    git(&["init", "-q"]);
    git(&["config", "user.email", "platform@example.com"]);
    git(&["config", "user.name", "Platform team"]);
    let shell = |script: &str| {
        let out = common::with_binary_on_path("bash")
            .arg("-ec")
            .arg(script)
            .current_dir(&dir.0)
            .env("KUBECONFIG", &api.kubeconfig)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{script}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (last, first) = commands.split_last().expect("commands");
    shell(&first.join("\n"));
    let committed: Vec<String> = git(&["ls-files"]).lines().map(String::from).collect();
    assert_eq!(
        committed,
        ["Kptfile", "README.md", "argocd/clusters.yaml", "seal.yaml"],
        "the commit holds the package and the SealedSecrets, not the Cluster API Secrets"
    );
    let sealed = git(&["show", "HEAD:argocd/clusters.yaml"]);
    let (_, data) = unseal(&the_sealed_secret(&sealed), &private_key("controller.key"));
    assert_eq!(data, strings(plain_secret(&kubeadm()).get("stringData")));
    let tree = git(&["grep", "-h", "-e", "", "HEAD"]);
    for doc in documents(&String::from_utf8(kubeadm()).expect("UTF-8")) {
        for (key, value) in strings(doc.get("data")) {
            let decoded = String::from_utf8(B64.decode(&value).expect("base64")).expect("UTF-8");
            assert!(
                !tree.contains(&value) && !tree.contains(&decoded),
                "the commit holds {key}"
            );
        }
    }
    // CI's render of the committed package: nothing changes.
    let render = commands
        .iter()
        .find(|c| c.starts_with("kpt "))
        .expect("the render");
    shell(render);
    assert_eq!(
        git(&["status", "--porcelain"]),
        "",
        "a render again changes nothing"
    );
    // The fleet again beside the committed file, rendered: nothing changes either.
    shell(&format!("{last}\n{render}"));
    assert_eq!(
        git(&["status", "--porcelain"]),
        "",
        "the fleet again changes nothing"
    );
}

/// `validate` reads a SealedSecret as the Argo CD cluster Secret it opens to: what sealing
/// writes passes; a value not in the sealed format, or no `server`, is an error naming the field.
#[test]
fn validate_checks_a_sealed_secret_as_the_secret_it_opens_to() {
    let dir = TempDir::new("sealing", "validate");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let sealed = sealed_run(&config, &kubeadm()).stdout;
    let good = run(&["validate"], sealed.as_bytes());
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert!(
        good.stderr.contains("checked for form only"),
        "{}",
        good.stderr
    );
    let server =
        strings(the_sealed_secret(&sealed).path(&["spec", "encryptedData"]))["server"].clone();
    let broken = sealed.replace(&server, "bm90IHNlYWxlZA==");
    let run_broken = run(&["validate"], broken.as_bytes());
    assert_eq!(run_broken.code, 1, "{}", run_broken.stderr);
    assert!(
        run_broken
            .stderr
            .contains("spec.encryptedData.server: is not a sealed value"),
        "{}",
        run_broken.stderr
    );
    let serverless = sealed.replace(&format!("    server: {server}\n"), "");
    let run_serverless = run(&["validate"], serverless.as_bytes());
    assert_eq!(run_serverless.code, 1);
    assert!(
        run_serverless.stderr.contains("has no server"),
        "{}",
        run_serverless.stderr
    );
    assert!(
        !run_broken.stderr.contains("bm90IHNlYWxlZA"),
        "no value is shown"
    );
}

/// A sealed Secret's cluster name and server cannot be read: with ApplicationSets to judge, the
/// plan says it does not judge them, rather than judging from a fleet it cannot see.
#[test]
fn applications_over_a_sealed_fleet_are_not_judged_and_the_plan_says_so() {
    let dir = TempDir::new("sealing", "appsets");
    let config = sealing_config(&dir, "controller.crt", &[("readApplications", "true")]);
    let sealed = sealed_run(&config, &kubeadm()).stdout;
    let appset = "---\napiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: guestbook\n  namespace: argocd\nspec:\n  goTemplate: true\n  generators:\n  - clusters: {}\n  template:\n    metadata:\n      name: '{{.name}}-guestbook'\n    spec:\n      project: default\n      destination:\n        server: '{{.server}}'\n        namespace: guestbook\n";
    let mut input = kubeadm();
    input.extend_from_slice(sealed.as_bytes());
    input.extend_from_slice(appset.as_bytes());
    let plan = plan_with(&config, &input);
    assert!(
        plan.stderr
            .contains("what the plan does to Applications is not judged"),
        "{}",
        plan.stderr
    );
    assert!(!plan.stdout.contains("app "), "{}", plan.stdout);
    assert!(
        plan.stdout.contains("unchanged argocd/cluster-prod-eu-1"),
        "{}",
        plan.stdout
    );
}

/// Under kustomize (an `exec` transformer, `kustomize build --enable-alpha-plugins
/// --enable-exec`), sealing gives SealedSecrets alone, which open to the plain Secret.
#[test]
fn kustomize_builds_sealed_secrets_that_open() {
    let Some(kustomize) = common::kustomize("sealing under kustomize was NOT run") else {
        return;
    };
    let dir = TempDir::new("sealing", "kustomize");
    fs::copy(env!("CARGO_BIN_EXE_capi2argo"), dir.path("capi2argo")).expect("binary copied");
    fs::write(dir.path("capi.yaml"), kubeadm()).expect("capi.yaml");
    let pem = fs::read_to_string(fixture("sealing/controller.crt")).expect("certificate");
    let indented: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    fs::write(
        dir.path("fn.yaml"),
        format!(
            "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: capi2argo\n  annotations:\n    config.kubernetes.io/function: \"exec:\\n  path: ./capi2argo\\n\"\nspec:\n  seal: sealedSecrets\n  sealingCertificate: |\n{indented}"
        ),
    )
    .expect("fn.yaml");
    fs::write(
        dir.path("kustomization.yaml"),
        "resources:\n- capi.yaml\ntransformers:\n- fn.yaml\n",
    )
    .expect("kustomization.yaml");
    let out = std::process::Command::new(&kustomize)
        .args(["build", "--enable-alpha-plugins", "--enable-exec"])
        .arg(&dir.0)
        .env_remove(capi2argo_core::host::RANDOM_VARIABLE)
        .output()
        .expect("kustomize runs");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        documents(&stdout).iter().all(|d| kind(d) == "SealedSecret"),
        "{stdout}"
    );
    let (_, data) = unseal(&the_sealed_secret(&stdout), &private_key("controller.key"));
    assert_eq!(data, strings(plain_secret(&kubeadm()).get("stringData")));
}

/// Regression: with credentials=serviceAccount, the ServiceAccount token Secrets read, and the
/// plain Argo CD Secrets a guard held (maxCredentialChanges here), went out in plain text.
/// Both hold credentials: both are written sealed as they are.
#[test]
fn held_secrets_and_token_secrets_leave_no_plain_credential() {
    let input = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/plan-serviceaccount-requests/input.yaml"),
    )
    .expect("the case's input");
    let pem = fs::read_to_string(fixture("sealing/controller.crt")).expect("certificate");
    let certificate = format!("sealingCertificate={pem}");
    let args = [
        "--set",
        "credentials=serviceAccount",
        "--set",
        "seal=sealedSecrets",
        "--set",
        &certificate,
    ];
    let run = run(&args, &input);
    assert_eq!(run.code, 1, "a guard holds the move: {}", run.stderr);
    assert!(
        run.stderr.contains("maxCredentialChanges"),
        "{}",
        run.stderr
    );
    let text = String::from_utf8(input).expect("UTF-8");
    let mut tokens = 0;
    for doc in documents(&text) {
        for (section, values) in [("data", true), ("stringData", false)] {
            for (key, value) in strings(doc.get(section)) {
                let plain = if values {
                    String::from_utf8(B64.decode(&value).expect("base64")).expect("UTF-8")
                } else {
                    value.clone()
                };
                if key == "token" || key == "config" {
                    tokens += 1;
                    for needle in [&value, &plain] {
                        assert!(!run.stdout.contains(needle.as_str()), "{key} in the output");
                    }
                }
            }
        }
    }
    assert!(
        tokens >= 3,
        "the case's tokens and configs were read ({tokens})"
    );
    // Three Argo CD Secrets and their three token Secrets, each as a SealedSecret of itself.
    assert!(
        run.stdout.contains("name: token-cluster-a\n"),
        "{}",
        run.stdout
    );
    assert_eq!(documents(&run.stdout).len(), 6, "{}", run.stdout);
    assert!(
        documents(&run.stdout)
            .iter()
            .all(|d| kind(d) == "SealedSecret"),
        "{}",
        run.stdout
    );
}

/// A renewed credential (the kubeconfig's token) seals `config` again, and only `config`:
/// `name` and `server` keep their ciphertext, and the plan names `config`.
#[test]
fn a_renewed_credential_seals_config_again_alone() {
    let dir = TempDir::new("sealing", "credential");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let rosa = fs::read(fixture("providers/rosa.yaml")).expect("fixture");
    let first = sealed_run(&config, &rosa).stdout;
    let before = strings(the_sealed_secret(&first).path(&["spec", "encryptedData"]));
    let renewed = edited(&rosa, "rosa-hcp-01-kubeconfig", |k| {
        k.replace("token: sha256~", "token: sha256~renewed")
    });
    assert_ne!(renewed, rosa, "the token was changed");
    let mut input = renewed.clone();
    input.extend_from_slice(first.as_bytes());
    let plan = plan_with(&config, &input);
    assert!(plan.stdout.contains("): config\n"), "{}", plan.stdout);
    let second = sealed_run(&config, &input).stdout;
    let after = strings(the_sealed_secret(&second).path(&["spec", "encryptedData"]));
    assert_ne!(before["config"], after["config"], "config is sealed again");
    assert_eq!(before["name"], after["name"], "name keeps its ciphertext");
    assert_eq!(
        before["server"], after["server"],
        "server keeps its ciphertext"
    );
    let (_, data) = unseal(&the_sealed_secret(&second), &private_key("controller.key"));
    assert!(
        data["config"].contains("sha256~renewed"),
        "the new token is sealed"
    );
}

/// The guards hold on a sealed package as on a plain one: the plan reads each SealedSecret as
/// the owned Secret it stands for, by name.
#[test]
fn the_guards_hold_a_sealed_package() {
    let dir = TempDir::new("sealing", "guards");
    let config = sealing_config(&dir, "controller.crt", &[]);
    let providers = ["kubeadm", "k3s", "rke2", "talos"];
    let fleet: Vec<u8> = providers
        .iter()
        .flat_map(|p| {
            let mut text = fs::read(fixture(&format!("providers/{p}.yaml"))).expect("fixture");
            text.extend_from_slice(b"\n---\n");
            text
        })
        .collect();
    let sealed = sealed_run(&config, &fleet).stdout;
    assert_eq!(documents(&sealed).len(), 4, "four SealedSecrets");
    // Three clusters' Secrets missing from the input: maxPrune holds, and every SealedSecret stays.
    let mut input = kubeadm();
    input.extend_from_slice(b"\n---\n");
    input.extend_from_slice(sealed.as_bytes());
    let path = config.to_str().expect("UTF-8");
    let held = run(&["--fn-config", path], &input);
    assert_eq!(held.code, 1, "{}", held.stderr);
    assert!(held.stderr.contains("maxPrune"), "{}", held.stderr);
    assert_eq!(
        documents(&held.stdout)
            .iter()
            .filter(|d| kind(d) == "SealedSecret")
            .count(),
        4,
        "none is pruned"
    );
    // Every cluster renamed (namespacedNames): allowRename holds.
    let mut input = fleet.clone();
    input.extend_from_slice(sealed.as_bytes());
    let renamed = run(
        &["plan", "--fn-config", path, "--set", "namespacedNames=true"],
        &input,
    );
    assert_eq!(renamed.code, 1, "{}", renamed.stderr);
    assert!(renamed.stderr.contains("allowRename"), "{}", renamed.stderr);
    assert!(renamed.stdout.contains("kept "), "{}", renamed.stdout);
}

/// The real kpt renders the sealed-fleet example with every provider fixture's Secrets as its
/// `capi.yaml`: what the rendered package holds, file by file, contains none of the fixtures'
/// keys, certificates, tokens or kubeconfigs (each value, and what it decodes to).
#[test]
fn a_kpt_render_of_every_fixture_leaves_no_credential_in_the_package() {
    if !common::available("kpt", &["version"], "the sealed kpt render was NOT run") {
        return;
    }
    let dir = TempDir::new("sealing", "kpt-every-fixture");
    let example = common::root().join("Kptfile-examples/sealed-fleet");
    for file in ["Kptfile", "seal.yaml", "README.md"] {
        fs::copy(example.join(file), dir.path(file)).expect("copied");
    }
    let mut values: Vec<(String, String)> = Vec::new();
    let mut capi = String::new();
    let mut providers: Vec<PathBuf> = fs::read_dir(fixture("providers"))
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    providers.sort();
    for path in &providers {
        let text = fs::read_to_string(path).expect("fixture");
        for doc in documents(&text) {
            for (key, value) in strings(doc.get("data")) {
                let decoded = B64
                    .decode(&value)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .unwrap_or_default();
                for text in [value, decoded] {
                    // Long values only: a short one ("true", a name) may stand anywhere.
                    if text.len() >= 24 {
                        values.push((format!("{}: {key}", path.display()), text));
                    }
                }
            }
        }
        capi.push_str(&text);
        capi.push_str("\n---\n");
    }
    fs::write(dir.path("capi.yaml"), capi).expect("capi.yaml");
    let out = common::with_binary_on_path("kpt")
        .args([
            "fn",
            "render",
            dir.0.to_str().expect("UTF-8"),
            "--allow-exec",
        ])
        .output()
        .expect("kpt runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path("capi.yaml").exists(), "capi.yaml is gone");
    let mut files = Vec::new();
    let mut stack = vec![dir.0.clone()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).expect("dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let sealed = files
        .iter()
        .filter(|f| f.starts_with(dir.path("argocd")))
        .count();
    assert!(sealed >= 10, "a SealedSecret per cluster ({sealed})");
    assert!(
        values.len() > 40,
        "the fixtures' values were read ({})",
        values.len()
    );
    for file in &files {
        let text = fs::read_to_string(file).expect("text");
        for (what, value) in &values {
            assert!(
                !text.contains(value.as_str()),
                "{} holds {what}",
                file.display()
            );
        }
    }
}

/// `keepKubeconfigSecrets=true` writes the Secrets read back beside the SealedSecrets, as
/// without sealing, and says nothing of leaving them out.
#[test]
fn keep_kubeconfig_secrets_writes_them_back() {
    let dir = TempDir::new("sealing", "keep");
    let config = sealing_config(&dir, "controller.crt", &[("keepKubeconfigSecrets", "true")]);
    let run = sealed_run(&config, &kubeadm());
    let input = String::from_utf8(kubeadm()).expect("UTF-8");
    let kinds = |text: &str| {
        documents(text)
            .iter()
            .filter(|d| kind(d) == "Secret")
            .count()
    };
    assert_eq!(
        kinds(&run.stdout),
        kinds(&input),
        "every Secret read is back"
    );
    the_sealed_secret(&run.stdout);
    assert!(!run.stderr.contains("not written back"), "{}", run.stderr);
}

/// Regressions from an outside review of sealing, each a way plaintext or a bad request could
/// leave a sealed run.
mod review {
    use super::*;

    fn seal_args(pem: &str) -> Vec<String> {
        vec![
            "--set".into(),
            "seal=sealedSecrets".into(),
            "--set".into(),
            format!("sealingCertificate={pem}"),
        ]
    }

    fn sealed(args: &[String], input: &[u8]) -> Run {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args, input)
    }

    fn pem() -> String {
        fs::read_to_string(fixture("sealing/controller.crt")).expect("certificate")
    }

    /// kubectl's last-applied-configuration (the whole Secret, values included) on a Secret
    /// sealed as it is went into the template in plain text.
    #[test]
    fn last_applied_configuration_is_not_carried_into_the_template() {
        let plain = run(&[], &kubeadm()).stdout;
        let config = strings(plain_secret(&kubeadm()).get("stringData"))["config"].clone();
        let applied = serde_json::json!({"stringData": {"config": config}}).to_string();
        let annotated = plain.replacen(
            "  labels:\n    argocd.argoproj.io/secret-type",
            &format!(
                "  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: {}\n  labels:\n    argocd.argoproj.io/secret-type",
                serde_json::Value::String(applied)
            ),
            1,
        );
        assert_ne!(annotated, plain, "the annotation was added");
        let out = sealed(&seal_args(&pem()), annotated.as_bytes());
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            !out.stdout.contains("last-applied-configuration"),
            "{}",
            out.stdout
        );
        assert!(!out.stdout.contains("tlsClientConfig"), "{}", out.stdout);
    }

    /// A kubeconfig Secret given twice, or with metadata the scan does not read, passed
    /// through in plain text.
    #[test]
    fn no_kubeconfig_secret_passes_through_by_another_path() {
        let input = String::from_utf8(kubeadm()).expect("UTF-8");
        let twice = format!("{input}\n---\n{input}");
        let unsound = input.replacen(
            "  name: prod-eu-1-kubeconfig",
            "  name: prod-eu-1-kubeconfig\n  annotations: {x: 1}",
            1,
        );
        assert_ne!(unsound, input, "the annotation was added");
        for (what, text) in [("twice", twice), ("unsound", unsound)] {
            let out = sealed(&seal_args(&pem()), text.as_bytes());
            assert!(
                documents(&out.stdout)
                    .iter()
                    .all(|d| kind(d) == "SealedSecret"),
                "{what}: {}",
                out.stdout
            );
        }
    }

    /// `plan -o requests` would have sent SealedSecrets' emptied Secrets to the API server.
    #[test]
    fn a_sealed_plan_has_no_requests() {
        let mut args = vec!["plan".to_string(), "-o".into(), "requests".into()];
        args.extend(seal_args(&pem()));
        let out = sealed(&args, &kubeadm());
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("plan -o requests"), "{}", out.stderr);
        assert_eq!(out.stdout, "");
    }

    /// Randomness of zeros is a host that gave none; pinned randomness is said as a warning; a
    /// validator needs no randomness at all.
    #[test]
    fn randomness_of_zeros_is_refused_pinned_is_said_and_validate_needs_none() {
        let zeros = "0".repeat(64);
        let run_with = |random: &str, args: &[String], input: &[u8]| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_random(Some(random), &args, input)
        };
        let out = run_with(&zeros, &seal_args(&pem()), &kubeadm());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("no randomness"), "{stderr}");
        let out = run_with(&common::pinned_random(), &seal_args(&pem()), &kubeadm());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("sealed with pinned randomness"), "{stderr}");
        let sealed_output = String::from_utf8(out.stdout).expect("UTF-8");
        let mut args = vec!["validate".to_string()];
        args.extend(seal_args(&pem()));
        let out = run_with(&zeros, &args, sealed_output.as_bytes());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The Sealed Secrets controller's key renewal rebuilds a SealedSecret from its template:
    /// its own labels and capi2argo's record gone, it is still read as the owned Secret.
    #[test]
    fn a_sealed_secret_rebuilt_from_its_template_is_still_owned() {
        let dir = TempDir::new("sealing", "rebuilt");
        let config = sealing_config(&dir, "controller.crt", &[]);
        let first = sealed_run(&config, &kubeadm()).stdout;
        let start = first
            .find("  annotations:\n    capi2argo.dev/sealed")
            .expect("record");
        let end = first.find("spec:\n").expect("spec");
        let rebuilt = format!("{}{}", &first[..start], &first[end..]);
        assert!(!rebuilt.contains("capi2argo.dev/sealed"), "{rebuilt}");
        let mut input = kubeadm();
        input.extend_from_slice(rebuilt.as_bytes());
        let plan = plan_with(&config, &input);
        assert!(
            plan.stdout.contains("update    argocd/cluster-prod-eu-1"),
            "{}{}",
            plan.stdout,
            plan.stderr
        );
    }
}
