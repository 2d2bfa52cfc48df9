//! A stand-in for the Kubernetes API (tests/kube/apiserver.py) that the real kubectl and kube-rs
//! clients talk to: the resources and endpoints its docstring lists (lists with pages, watches,
//! patches and server-side apply, Leases, Events, TokenRequest), optionally RBAC rules, a bearer
//! token and TLS, every request recorded. Not an API server (its docstring says what it lacks);
//! what a test shows with it is what the client sends and what the code around it does.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::TempDir;

/// A running stand-in, stopped when dropped.
pub struct StandIn {
    child: Child,
    /// How it was started, to start it again ([`StandIn::restart`]).
    command: Vec<std::ffi::OsString>,
    dir: TempDir,
    /// A kubeconfig pointing at it.
    pub kubeconfig: PathBuf,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

/// One request kubectl made.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Value,
    pub body: String,
    /// Its Content-Type (a patch's says which kind of patch), if it had one.
    pub content_type: Option<String>,
    /// Whether it carried the bearer token the stand-in was started with.
    pub authenticated: bool,
    /// Who it authenticated as (`None` when it was refused with 401).
    pub user: Option<String>,
    /// The status code of the answer (200 for a watch, whatever its stream then said).
    pub code: u16,
}

/// How the stand-in answers beyond its defaults (plain HTTP, anyone may do anything).
#[derive(Default)]
pub struct Options {
    /// RBAC rules (`{"namespace", "apiGroups", "resources", "verbs"}`); a request none allows
    /// is answered 403.
    pub rules: Option<Value>,
    /// The bearer token every request must carry.
    pub token: Option<String>,
    /// Serve HTTPS with this certificate and key (PEM files).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// More flags for the stand-in, as its usage names them: `--no-capi`, `--capi
    /// v1beta2,v1beta1`, `--latency MS`, `--history N`, `--bookmark-interval S`,
    /// `--min-token-expiration S`, `--token-user NAME`.
    pub args: Vec<String>,
}

impl StandIn {
    /// Starts the stand-in with `objects` (Secrets, and any other resource it serves, as JSON)
    /// in its store; `None`, with a loud skip, when there is no python3 to run it.
    pub fn start(name: &str, objects: &[Value]) -> Option<StandIn> {
        Self::start_with(name, objects, Options::default())
    }

    /// [`StandIn::start`] with RBAC rules, a token or TLS.
    pub fn start_with(name: &str, objects: &[Value], options: Options) -> Option<StandIn> {
        if !super::available("python3", &["--version"], &format!("{name} did NOT run")) {
            return None;
        }
        let dir = TempDir::new("apiserver", name);
        fs::write(
            dir.path("store.json"),
            serde_json::to_vec(objects).expect("JSON"),
        )
        .expect("store written");
        fs::write(dir.path("log.jsonl"), "").expect("log written");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kube/apiserver.py");
        let mut command = Command::new("python3");
        command
            .arg(script)
            .args(["store.json", "log.jsonl", "port"].map(|f| dir.path(f)));
        if let Some(rules) = &options.rules {
            fs::write(dir.path("rules.json"), rules.to_string()).expect("rules written");
            command.arg("--rules").arg(dir.path("rules.json"));
        }
        if let Some(token) = &options.token {
            command.args(["--token", token]);
        }
        if let Some((cert, key)) = &options.tls {
            command.arg("--tls").arg(cert).arg(key);
        }
        command.args(&options.args);
        let child = command.spawn().expect("python3 starts");
        let port = listening(&dir.path("port"));
        let (scheme, ca) = match &options.tls {
            Some((cert, _)) => (
                "https",
                format!("\n    certificate-authority: {}", cert.display()),
            ),
            None => ("http", String::new()),
        };
        let user = match &options.token {
            Some(token) => format!("\n    token: {token}"),
            None => " {}".to_string(),
        };
        let kubeconfig = dir.path("kubeconfig");
        fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: stand-in\n  cluster:\n    server: {scheme}://127.0.0.1:{port}{ca}\nusers:\n- name: nobody\n  user:{user}\ncontexts:\n- name: stand-in\n  context:\n    cluster: stand-in\n    user: nobody\ncurrent-context: stand-in\n"
            ),
        )
        .expect("kubeconfig written");
        let command = std::iter::once(command.get_program().to_os_string())
            .chain(command.get_args().map(|a| a.to_os_string()))
            .collect();
        Some(StandIn {
            child,
            command,
            dir,
            kubeconfig,
            port,
        })
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        fs::read_to_string(self.dir.path("log.jsonl"))
            .expect("log")
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("a JSON line");
                Request {
                    method: v["method"].as_str().unwrap_or_default().into(),
                    path: v["path"].as_str().unwrap_or_default().into(),
                    query: v["query"].clone(),
                    body: v["body"].as_str().unwrap_or_default().into(),
                    content_type: v["contentType"].as_str().map(String::from),
                    authenticated: v["authenticated"].as_bool().unwrap_or_default(),
                    user: v["user"].as_str().map(String::from),
                    code: v["code"]
                        .as_u64()
                        .and_then(|c| u16::try_from(c).ok())
                        .unwrap_or_default(),
                }
            })
            .collect()
    }

    /// The requests that changed something (PATCH, DELETE, POST, PUT).
    pub fn writes(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .collect()
    }

    /// Every object it holds now but the namespaces (a cluster's own four and those its objects
    /// live in, there from the start: [`StandIn::namespaces`] has them).
    pub fn objects(&self) -> Vec<Value> {
        self.everything()
            .into_iter()
            .filter(|o| o["kind"] != "Namespace")
            .collect()
    }

    /// The namespaces it holds now.
    pub fn namespaces(&self) -> Vec<Value> {
        self.everything()
            .into_iter()
            .filter(|o| o["kind"] == "Namespace")
            .collect()
    }

    fn everything(&self) -> Vec<Value> {
        serde_json::from_slice(&fs::read(self.dir.path("store.json")).expect("store"))
            .expect("JSON")
    }

    /// The Secrets it holds now.
    pub fn secrets(&self) -> Vec<Value> {
        self.objects()
            .into_iter()
            .filter(|o| o["kind"] == "Secret" && o["apiVersion"] == "v1")
            .collect()
    }

    /// The Secrets it holds now, as `namespace/name`.
    pub fn secret_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .secrets()
            .iter()
            .map(|s| {
                format!(
                    "{}/{}",
                    s["metadata"]["namespace"].as_str().unwrap_or_default(),
                    s["metadata"]["name"].as_str().unwrap_or_default()
                )
            })
            .collect();
        names.sort();
        names
    }
}

impl StandIn {
    /// One request over plain HTTP, as another client of the API server would make it (a stand-in
    /// started without TLS; with its token, when it has one): the status code and the JSON
    /// answer (`null` when it is not JSON). Safe while a client under test talks to it, unlike
    /// reading the store's file.
    pub fn send(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.send_as(method, path, body, "application/json")
    }

    /// A JSON merge patch (RFC 7386) of the object at `path`, as [`StandIn::send`] sends.
    pub fn send_patch(&self, path: &str, patch: &Value) -> (u16, Value) {
        self.send_as("PATCH", path, Some(patch), "application/merge-patch+json")
    }

    fn send_as(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        content_type: &str,
    ) -> (u16, Value) {
        use std::io::{Read, Write};
        let body = body.map(Value::to_string).unwrap_or_default();
        let token = fs::read_to_string(&self.kubeconfig).ok().and_then(|k| {
            k.lines()
                .find_map(|l| l.trim().strip_prefix("token: ").map(String::from))
        });
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("the stand-in answers");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("request written");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("answer read");
        let code = answer
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let json = answer
            .split_once("\r\n\r\n")
            .and_then(|(_, b)| serde_json::from_str(b).ok())
            .unwrap_or(Value::Null);
        (code, json)
    }

    /// The Secrets of `namespace` now, by name, read over HTTP.
    pub fn live_secrets(&self, namespace: &str) -> Vec<Value> {
        let (code, list) = self.send(
            "GET",
            &format!("/api/v1/namespaces/{namespace}/secrets"),
            None,
        );
        assert_eq!(code, 200, "{list}");
        list["items"].as_array().cloned().unwrap_or_default()
    }
}

impl StandIn {
    /// Stops it as a crash would, waits `down`, and starts it again on the same port over the
    /// store it had written: the objects are all there, the history of events is not, so a
    /// client resuming a watch from before is answered 410 Expired and must list again.
    pub fn restart(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(down);
        let _ = fs::remove_file(self.dir.path("port"));
        self.child = Command::new(&self.command[0])
            .args(&self.command[1..])
            .args(["--port", &self.port.to_string()])
            .spawn()
            .expect("python3 starts");
        assert_eq!(listening(&self.dir.path("port")), self.port);
    }
}

/// The port a starting stand-in says it listens on, once it says it.
fn listening(port_file: &Path) -> u16 {
    let started = Instant::now();
    loop {
        if let Ok(port) = fs::read_to_string(port_file) {
            if !port.is_empty() {
                return port.trim().parse().expect("a port");
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the stand-in did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
