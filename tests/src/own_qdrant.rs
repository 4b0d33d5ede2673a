//! A Qdrant server of the test's own: the `qdrant` binary run on free ports with its storage in a temporary
//! directory, for tests that kill the server under a running deployment and start it again on the same storage.
//! The binary is `SLEUTH_TEST_QDRANT_BIN`, else `qdrant` on PATH, else the official image in a Docker container
//! (`docker.rs`). There is no Qdrant package to install, so a test that needs one is `#[ignore]`d and `.ci/run`
//! runs it when a binary or a Docker engine is there.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::{
    docker::{self, Container, Spec},
    free_port,
};

pub struct OwnQdrant {
    /// The gRPC URL, e.g. `http://127.0.0.1:40123`.
    pub url: String,
    /// The container the server runs in, when the harness fell back to Docker; then `bin` is unused.
    container: Option<Container>,
    bin: PathBuf,
    http_port: u16,
    grpc_port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

/// The `qdrant` binary: `SLEUTH_TEST_QDRANT_BIN`, else the first `qdrant` on PATH.
pub fn qdrant_bin() -> Option<PathBuf> {
    if let Ok(bin) = std::env::var("SLEUTH_TEST_QDRANT_BIN") {
        return Some(PathBuf::from(bin));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("qdrant")).find(|p| p.is_file())
}

impl OwnQdrant {
    pub fn start() -> OwnQdrant {
        let dir = tempfile::tempdir().expect("temp dir");
        let (http_port, grpc_port) = (free_port(), free_port());
        let url = format!("http://127.0.0.1:{grpc_port}");
        let bin = match qdrant_bin().filter(|_| !docker::forced()) {
            Some(bin) => bin,
            None => {
                if let Err(why) = docker::engine() {
                    panic!(
                        "this test runs a Qdrant server of its own: set SLEUTH_TEST_QDRANT_BIN to a qdrant binary \
                         (1.16 or newer; README: \"A Qdrant server\"), put one on PATH, or run a Docker engine for \
                         the harness's container ({why})"
                    )
                }
                let mut spec = Spec::of(docker::QDRANT_IMAGE);
                spec.env = vec![("QDRANT__TELEMETRY_DISABLED".into(), "true".into())];
                spec.ports = vec![(http_port, 6333), (grpc_port, 6334)];
                let container = Container::start(&spec);
                let server = OwnQdrant {
                    url,
                    container: Some(container),
                    bin: PathBuf::new(),
                    http_port,
                    grpc_port,
                    child: None,
                    dir,
                };
                server.wait_ready();
                return server;
            }
        };
        let mut server = OwnQdrant { url, container: None, bin, http_port, grpc_port, child: None, dir };
        server.start_again();
        server
    }

    fn wait_ready(&self) {
        let container = self.container.as_ref().expect("a server in a container");
        docker::wait_until(container, Duration::from_secs(60), "ready", || self.ready());
    }

    /// Starts the server on its ports and storage, and waits until it answers `/readyz`.
    pub fn start_again(&mut self) {
        if let Some(container) = &mut self.container {
            container.start_again();
            self.wait_ready();
            return;
        }
        assert!(self.child.is_none(), "the Qdrant server is already running");
        let storage = self.dir.path().join("storage");
        let log =
            std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).expect("the Qdrant log file");
        let child = Command::new(&self.bin)
            .current_dir(self.dir.path())
            .env("QDRANT__SERVICE__HOST", "127.0.0.1")
            .env("QDRANT__SERVICE__HTTP_PORT", self.http_port.to_string())
            .env("QDRANT__SERVICE__GRPC_PORT", self.grpc_port.to_string())
            .env("QDRANT__STORAGE__STORAGE_PATH", storage.join("data"))
            .env("QDRANT__STORAGE__SNAPSHOTS_PATH", storage.join("snapshots"))
            .env("QDRANT__TELEMETRY_DISABLED", "true")
            .stdout(Stdio::from(log.try_clone().expect("log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.bin.display()));
        self.child = Some(child);
        let started = Instant::now();
        while !self.ready() {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("qdrant exited with {status} before it was ready:\n{}", self.log());
            }
            assert!(started.elapsed() < Duration::from_secs(60), "qdrant not ready in 60 s:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILLs the server: no shutdown, recovery from its write-ahead log at the next start.
    pub fn kill(&mut self) {
        if let Some(container) = &mut self.container {
            container.signal("SIGKILL", Duration::from_secs(10));
            return;
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        if let Some(container) = &self.container {
            return container.logs();
        }
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("qdrant.log")
    }

    /// True when the HTTP port answers `GET /readyz` with 200.
    fn ready(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.http_port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request =
            format!("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", self.http_port);
        let mut response = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut response).is_ok()
            && response.starts_with("HTTP/1.1 200")
    }
}

impl Drop for OwnQdrant {
    fn drop(&mut self) {
        // A container is removed, killed or not, when its field drops.
        if self.container.is_none() {
            self.kill();
        }
    }
}
