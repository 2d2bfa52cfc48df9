//! End-to-end proof that the TLS credentials in a generated Argo CD Secret really work: a local
//! `openssl s_server` that requires client certificates accepts them, and refuses a foreign client.
//!
//! Everything runs on 127.0.0.1 in a temporary directory, with bounded waits. Without the
//! `openssl` or `curl` command-line tools the test is skipped, loudly.

use crate::common::TempDir;

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

/// The TLS server process, killed when the test ends, whatever the outcome.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tool_available(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A loud skip: the suite still passes where the tools are missing, but says so.
fn skip_without_tools() -> bool {
    let missing: Vec<&str> = [("openssl", "version"), ("curl", "--version")]
        .into_iter()
        .filter(|(tool, arg)| !tool_available(tool, arg))
        .map(|(tool, _)| tool)
        .collect();
    if missing.is_empty() {
        return false;
    }
    crate::common::skip(&format!(
        "{} not on PATH, so the generated TLS credentials were NOT tested against a real TLS server",
        missing.join(" and ")
    ));
    true
}

fn run_ok(command: &mut Command) -> Output {
    let out = command.output().expect("command starts");
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A self-contained openssl configuration: the system one must not change the certificates.
const OPENSSL_CNF: &str = "\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
";

/// Certificates and keys made with the `openssl` CLI in one directory.
struct Pki<'a> {
    dir: &'a TempDir,
    serial: u32,
}

impl Pki<'_> {
    /// Runs `openssl` with whitespace-separated `args` (every name here is a plain word).
    fn openssl(&self, args: &str) {
        run_ok(
            Command::new("openssl")
                .current_dir(&self.dir.0)
                .env("OPENSSL_CONF", "openssl.cnf")
                .args(args.split_whitespace()),
        );
    }

    /// A self-signed CA: `<name>.crt`, `<name>.key`.
    fn ca(&self, name: &str) {
        self.openssl(&format!(
            "req -x509 -config openssl.cnf -extensions ca -newkey {KEY} -nodes -days 2 \
             -subj /CN={name} -keyout {name}.key -out {name}.crt"
        ));
    }

    /// A leaf certificate `<name>.crt`/`<name>.key` for `subject`, signed by CA `ca`, with the
    /// extensions of config section `profile`.
    fn leaf(&mut self, name: &str, subject: &str, ca: &str, profile: &str) {
        self.serial += 1;
        self.openssl(&format!(
            "req -new -config openssl.cnf -newkey {KEY} -nodes -subj {subject} \
             -keyout {name}.key -out {name}.csr"
        ));
        self.openssl(&format!(
            "x509 -req -in {name}.csr -CA {ca}.crt -CAkey {ca}.key -set_serial {} -days 2 \
             -extfile openssl.cnf -extensions {profile} -out {name}.crt",
            self.serial
        ));
    }

    fn b64(&self, file: &str) -> String {
        B64.encode(fs::read(self.dir.path(file)).expect("PEM file"))
    }
}

/// P-256 keys: quick to make, and as good as RSA for this proof.
const KEY: &str = "ec -pkeyopt ec_paramgen_curve:prime256v1";

fn free_loopback_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A CAPI kubeconfig Secret for cluster `name` whose kubeconfig embeds the given PEMs (base64).
fn capi_secret(name: &str, server: &str, ca: &str, cert: &str, key: &str) -> String {
    let kubeconfig = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
    certificate-authority-data: {ca}
contexts:
- name: {name}-admin@{name}
  context:
    cluster: {name}
    user: {name}-admin
current-context: {name}-admin@{name}
users:
- name: {name}-admin
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
"
    );
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: {name}-kubeconfig
  namespace: fleet
  labels:
    cluster.x-k8s.io/cluster-name: {name}
type: cluster.x-k8s.io/secret
data:
  value: {}
",
        B64.encode(kubeconfig)
    )
}

/// The generated Argo CD Secret's `stringData`: (`server`, parsed `config`).
fn argo_server_and_config(output: &str) -> (String, serde_json::Value) {
    let docs = capi2argo_yaml::parse_stream(output, &capi2argo_core::Limits::default())
        .expect("output is YAML");
    let argo: Vec<_> = docs
        .iter()
        .filter(|d| {
            d.root
                .path(&["metadata", "labels", "argocd.argoproj.io/secret-type"])
                .and_then(|n| n.as_str())
                == Some("cluster")
        })
        .collect();
    assert_eq!(argo.len(), 1, "exactly one Argo CD Secret in:\n{output}");
    let field = |key: &str| {
        argo[0]
            .root
            .path(&["stringData", key])
            .and_then(|n| n.as_str())
            .unwrap_or_else(|| panic!("stringData.{key} in:\n{output}"))
            .to_string()
    };
    let config = serde_json::from_str(&field("config")).expect("config is JSON");
    (field("server"), config)
}

/// Writes `tlsClientConfig.<key>`, base64-decoded, to `<file>` and returns its path.
fn write_tls_field(dir: &TempDir, config: &serde_json::Value, key: &str, file: &str) -> PathBuf {
    let text = config["tlsClientConfig"][key]
        .as_str()
        .unwrap_or_else(|| panic!("tlsClientConfig.{key} is a string in {config}"));
    let pem = B64.decode(text).expect("base64");
    assert!(
        pem.starts_with(b"-----BEGIN "),
        "tlsClientConfig.{key} is PEM"
    );
    let path = dir.path(file);
    fs::write(&path, pem).expect("PEM written");
    path
}

fn start_server(dir: &TempDir, port: u16) -> Server {
    let log = fs::File::create(dir.path("server.log")).expect("server log");
    let child = Command::new("openssl")
        .current_dir(&dir.0)
        .env("OPENSSL_CONF", "openssl.cnf")
        .args(
            format!(
                "s_server -accept 127.0.0.1:{port} -cert server.crt -key server.key \
                 -CAfile ca.crt -Verify 1 -verify_return_error -www -ign_eof"
            )
            .split_whitespace(),
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .expect("openssl s_server starts");
    let mut server = Server(child);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = server.0.try_wait().expect("server status") {
            panic!(
                "openssl s_server exited ({status}) before accepting connections:\n{}",
                fs::read_to_string(dir.path("server.log")).unwrap_or_default()
            );
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "openssl s_server did not accept connections on {addr} within 10 s:\n{}",
            fs::read_to_string(dir.path("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `curl` to `url` trusting `ca`, presenting `client` (cert, key) when given. Loopback only:
/// no proxy, no user curlrc, bounded time.
fn curl(dir: &TempDir, url: &str, ca: &Path, client: Option<(&Path, &Path)>) -> Output {
    let mut command = Command::new("curl");
    command
        .current_dir(&dir.0)
        .args(["-q", "--silent", "--show-error", "--fail", "--noproxy", "*"])
        .args(["--connect-timeout", "5", "--max-time", "10", "--cacert"])
        .arg(ca);
    for var in [
        "http_proxy",
        "https_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        command.env_remove(var);
    }
    if let Some((cert, key)) = client {
        command.arg("--cert").arg(cert).arg("--key").arg(key);
    }
    command.arg(url).output().expect("curl starts")
}

/// curl failed during the TLS exchange (exit 35: handshake, 56: the server's alert on read),
/// not because the server is gone (7) or the page was served.
fn assert_tls_refusal(dir: &TempDir, out: &Output, who: &str) {
    assert!(
        matches!(out.status.code(), Some(35 | 56)),
        "{who} was not refused by the TLS handshake ({}):\n{}{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        fs::read_to_string(dir.path("server.log")).unwrap_or_default()
    );
}

#[test]
fn generated_tls_client_config_authenticates_against_a_server_that_requires_client_certs() {
    if skip_without_tools() {
        return;
    }
    let dir = TempDir::new("tls", "e2e");
    fs::write(dir.path("openssl.cnf"), OPENSSL_CNF).expect("openssl.cnf");
    let mut pki = Pki {
        dir: &dir,
        serial: 0,
    };
    pki.ca("ca");
    pki.leaf("server", "/CN=localhost", "ca", "server");
    pki.leaf(
        "client",
        "/O=system:masters/CN=kubernetes-admin",
        "ca",
        "client",
    );
    pki.ca("foreign-ca");
    pki.leaf(
        "foreign",
        "/O=system:masters/CN=intruder",
        "foreign-ca",
        "client",
    );

    let port = free_loopback_port();
    let url = format!("https://127.0.0.1:{port}");
    let secret = capi_secret(
        "tls-e2e",
        &url,
        &pki.b64("ca.crt"),
        &pki.b64("client.crt"),
        &pki.b64("client.key"),
    );
    let outcome = capi2argo_core::run(secret.as_bytes(), &capi2argo_core::Options::default())
        .expect("the stream is usable input");
    assert!(!outcome.failed(), "no error results: {:?}", outcome.results);
    let (server, config) = argo_server_and_config(&outcome.output);
    assert_eq!(server, url, "stringData.server");
    let ca = write_tls_field(&dir, &config, "caData", "argo-ca.pem");
    let cert = write_tls_field(&dir, &config, "certData", "argo-cert.pem");
    let key = write_tls_field(&dir, &config, "keyData", "argo-key.pem");

    let server_process = start_server(&dir, port);
    let url = format!("{server}/");

    let ok = curl(&dir, &url, &ca, Some((&cert, &key)));
    let page = String::from_utf8_lossy(&ok.stdout);
    // `-www` reports the server's verification of the client certificate on the page.
    assert!(
        ok.status.success() && page.contains("Verify return code: 0 (ok)"),
        "the generated credentials were refused ({}):\n{}{page}\nserver log:\n{}",
        ok.status,
        String::from_utf8_lossy(&ok.stderr),
        fs::read_to_string(dir.path("server.log")).unwrap_or_default()
    );

    let foreign = curl(
        &dir,
        &url,
        &ca,
        Some((&dir.path("foreign.crt"), &dir.path("foreign.key"))),
    );
    assert_tls_refusal(&dir, &foreign, "a client certificate from a foreign CA");

    let anonymous = curl(&dir, &url, &ca, None);
    assert_tls_refusal(&dir, &anonymous, "a client without a certificate");
    drop(server_process); // stops it, so its log is complete
    let log = fs::read_to_string(dir.path("server.log")).unwrap_or_default();
    assert!(
        log.contains("CN = kubernetes-admin") && log.contains("CN = intruder"),
        "the server saw both client certificates:\n{log}"
    );
}
