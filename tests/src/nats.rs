//! A NATS server with JetStream for one test: the one in `SLEUTH_TEST_NATS_URL`, or a fresh `nats-server -js`.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

pub struct NatsServer {
    pub url: String,
    child: Option<Child>,
    _store: Option<tempfile::TempDir>,
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free port")
}

/// Starts (or finds) a JetStream-enabled NATS server. Panics with an install hint when there is none.
pub fn nats_server() -> NatsServer {
    if let Ok(url) = std::env::var("SLEUTH_TEST_NATS_URL")
        && !url.is_empty()
    {
        return NatsServer { url, child: None, _store: None };
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

/// The accounts of `deploy/nats/accounts.conf`: one user per stage, plus `admin`, `client`, `sleuth` and `sys`.
pub const USERS: [&str; 10] =
    ["admin", "client", "intake", "planner", "retrieve", "graph", "grader", "synthesizer", "sleuth", "sys"];

/// The password every test user of [`with_accounts`] gets.
pub fn password(user: &str) -> String {
    format!("test-{user}-secret")
}

/// A `nats-server` of our own (never `SLEUTH_TEST_NATS_URL`: it needs these accounts) running with the
/// repository's `deploy/nats/accounts.conf`, its passwords set by [`password`]. `url` carries no user.
pub fn with_accounts() -> NatsServer {
    let accounts = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/nats/accounts.conf");
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
        let mut cmd = Command::new("nats-server");
        cmd.arg("-c").arg(&file);
        for user in USERS {
            cmd.env(format!("SLEUTH_{}_PASSWORD", user.to_uppercase()), password(user));
        }
        if let Some(server) = spawn(cmd, port, dir) {
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
    cmd.args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"]).arg(store.path());
    spawn(cmd, port, store)
}

fn spawn(mut cmd: Command, port: u16, store: tempfile::TempDir) -> Option<NatsServer> {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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
    Some(NatsServer { url: format!("nats://127.0.0.1:{port}"), child: Some(child), _store: Some(store) })
}
