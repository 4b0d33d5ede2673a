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

fn start_on(port: u16) -> Option<NatsServer> {
    let store = tempfile::tempdir().expect("cannot create a temporary directory");
    let mut child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store.path())
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
