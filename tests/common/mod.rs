//! Helpers shared by the integration tests: scratch directories, running the binary, loud skips,
//! and a stand-in for the Kubernetes API that kubectl can talk to.

pub mod apiserver;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A scratch directory, removed when the test ends, whatever the outcome.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `<tmp>/capi2argo-<suite>-<pid>-<name>`, empty.
    pub fn new(suite: &str, name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("capi2argo-{suite}-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir created");
        TempDir(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The binary under test: the one cargo built, or `CAPI2ARGO_TEST_BINARY` (a release build, a
/// cross-compiled one), started through `CAPI2ARGO_TEST_RUNNER` when that is set (an emulator
/// such as `qemu-aarch64-static`, words split on blanks). `make test` runs the golden cases
/// this way with the release binaries for x86_64 and, under qemu, aarch64.
pub fn binary() -> Command {
    let binary = match std::env::var_os("CAPI2ARGO_TEST_BINARY").filter(|b| !b.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "CAPI2ARGO_TEST_BINARY={} is not a file",
                path.display()
            );
            path
        }
        None => PathBuf::from(env!("CARGO_BIN_EXE_capi2argo")),
    };
    let runner = std::env::var("CAPI2ARGO_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(binary);
            command
        }
        None => Command::new(binary),
    }
}

/// The time the tests run the function at (`tests/golden/now`), so that what certificates say
/// about "now" never changes with the day the tests run; a golden case's own `now` file
/// overrides it.
/// The randomness every test run is given (tests/golden/random, 64 hex digits), so that sealed
/// output is the same bytes each time.
pub fn pinned_random() -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/random"))
        .expect("tests/golden/random")
        .trim()
        .to_string()
}

pub fn pinned_now() -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/now"))
        .expect("tests/golden/now")
        .trim()
        .to_string()
}

/// Runs the binary under test (see [`binary`]) with `args`, feeding `stdin`, optionally in `cwd`, at the pinned time.
pub fn capi2argo(args: &[&str], stdin: &[u8], cwd: Option<&Path>) -> Output {
    capi2argo_at(args, stdin, cwd, &pinned_now())
}

/// [`capi2argo`] at the time `now` (RFC 3339).
pub fn capi2argo_at(args: &[&str], stdin: &[u8], cwd: Option<&Path>, now: &str) -> Output {
    let mut command = binary();
    command.env(capi2argo_core::host::NOW_VARIABLE, now);
    command.env(capi2argo_core::host::RANDOM_VARIABLE, pinned_random());
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    let mut child = command.spawn().expect("binary starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("input written");
    child.wait_with_output().expect("binary finishes")
}

/// Says loudly that a test is skipped and why. Written straight to the standard error stream,
/// which the test harness does not capture, so it shows in every run (and `make test` counts it).
pub fn skip(reason: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n*** SKIPPED test: {reason} ***\n"
    );
}

/// kustomize from `$KUSTOMIZE`; `None` (after a loud message saying what is `skipped`) when it
/// is not set.
pub fn kustomize(skipped: &str) -> Option<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("KUSTOMIZE").filter(|p| !p.is_empty()) {
        let path = std::path::PathBuf::from(path);
        assert!(path.exists(), "KUSTOMIZE={} does not exist", path.display());
        return Some(path);
    }
    skip(&format!(
        "KUSTOMIZE is not set (`make test` installs kustomize 4.5.4 and sets it), so {skipped}"
    ));
    None
}

/// Whether `program args…` runs; if not, says loudly what is skipped.
pub fn available(program: &str, args: &[&str], skipped: &str) -> bool {
    let found = Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(&format!("`{program}` is not available, so {skipped}"));
    }
    found
}

/// `program` with the freshly built binary first on `PATH` (kpt and kustomize resolve
/// `exec: capi2argo` there).
pub fn with_binary_on_path(program: &str) -> Command {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_capi2argo"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut command = Command::new(program);
    command.env("PATH", path);
    command.env(capi2argo_core::host::NOW_VARIABLE, pinned_now());
    command.env(capi2argo_core::host::RANDOM_VARIABLE, pinned_random());
    command
}

/// The documentation a user reads, as `(path, text)`: the README, then the book's chapters
/// (`docs/src/*.md`) in name order.
pub fn documentation() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec!["README.md".to_string()];
    let mut chapters: Vec<String> = fs::read_dir(root.join("docs/src"))
        .expect("docs/src")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/src/{name}"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(root.join(&path)).expect("a documentation file");
            (path, text)
        })
        .collect()
}

/// One chapter of the book, `docs/src/<name>`.
pub fn chapter(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/src")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The repository's root (the crate's manifest directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command's output as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that a command succeeded, showing its output when it did not.
pub fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// A plain HTTP/1.0 GET on localhost: the status and the body.
pub fn http_get(port: u16, path: &str, accept: &str) -> Option<(u16, Vec<u8>)> {
    let accept = if accept.is_empty() {
        String::new()
    } else {
        format!("Accept: {accept}\r\n")
    };
    exchange(
        port,
        &format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{accept}\r\n"),
    )
}

/// `METHOD path` with a JSON body and an `Authorization` header: the status code and the JSON
/// answer.
pub fn http_send(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
    authorization: &str,
) -> Option<(u16, serde_json::Value)> {
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {authorization}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, answer) = exchange(port, &request)?;
    Some((status, serde_json::from_slice(&answer).unwrap_or_default()))
}

/// One HTTP/1.0 request written as it is: the status code and the body of the answer.
fn exchange(port: u16, request: &str) -> Option<(u16, Vec<u8>)> {
    use std::io::{Read, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let end = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let status = text(&response[..end])
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((status, response[end + 4..].to_vec()))
}

/// A port on 127.0.0.1 nobody listens on right now, and never handed out before in this run.
/// Regression: the system gives a port just closed to the next caller again, so a controller's
/// metrics and health ports (two calls in a row) were once the same and its health server failed.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// The README's install commands, as written (tests/readme.rs holds the README to them).
pub const INSTALL: [&str; 3] = [
    "(cd dist/release && sha256sum --check SHA256SUMS)",
    "mkdir -p ~/.local/bin && tar -xzf dist/release/capi2argo-0.1.0-x86_64-unknown-linux-musl.tar.gz -C ~/.local/bin --strip-components=1 capi2argo-0.1.0-x86_64-unknown-linux-musl/capi2argo",
    "~/.local/bin/capi2argo --version",
];

/// The book's install of the npm package from the release (tests/readme.rs holds the book to it).
pub const NPM_INSTALL: &str = "npm install ../capi2argo/dist/release/capi2argo-capi2argo-0.1.0.tgz";

/// `capi2argo <version> (<7 hex digits> <YYYY-MM-DD>)`, `(<7 hex digits>)` or `(commit unknown)`.
pub fn well_formed(line: &str, version: &str) -> Option<String> {
    let inner = line
        .strip_prefix(&format!("capi2argo {version} ("))?
        .strip_suffix(")\n")?;
    let hex7 = |t: &str| t.len() == 7 && t.bytes().all(|b| b.is_ascii_hexdigit());
    let date = |t: &str| {
        let b = t.as_bytes();
        t.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && t.bytes()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
    };
    let ok = inner == "commit unknown"
        || hex7(inner)
        || inner
            .split_once(' ')
            .is_some_and(|(h, d)| hex7(h) && date(d));
    ok.then(|| inner.to_string())
}

/// Debian's Go path, where its Go library packages (`golang-*-dev`) install.
pub const DEBIAN_GOPATH: &str = "/usr/share/gocode";

/// A Go program of this repository (`source`: its folder, or its one file, under the root),
/// built against Debian's Go packages into `target/<name>/<name>`: the upstream code a test
/// compares with. `None`, said loudly, without Go or one of `packages` (Go import paths, each
/// with the Debian package that installs it); `what` says what is then not compared.
pub fn go_reference(
    name: &str,
    source: &str,
    packages: &[(&str, &str)],
    what: &str,
) -> Option<PathBuf> {
    if !available("go", &["version"], what) {
        return None;
    }
    for (package, debian) in packages {
        if !Path::new(DEBIAN_GOPATH).join("src").join(package).is_dir() {
            skip(&format!(
                "{package} is not installed (apt-get install {debian}), so {what}"
            ));
            return None;
        }
    }
    let dir = root().join("target").join(name);
    fs::create_dir_all(&dir).expect("the reference's folder in target/");
    let binary = dir.join(name);
    let source = root().join(source);
    let (folder, target) = if source.is_dir() {
        (source.as_path(), ".".into())
    } else {
        (
            source.parent().expect("a file in a folder"),
            source.clone().into_os_string(),
        )
    };
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(target)
        .current_dir(folder)
        .env("GO111MODULE", "off")
        .env("GOPATH", DEBIAN_GOPATH)
        // One build cache for every reference: the standard library is compiled once.
        .env("GOCACHE", root().join("target/go-cache"))
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go build of {} failed: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(binary)
}
