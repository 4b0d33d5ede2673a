//! Services in Docker containers (testcontainers-rs), the harness's last resort: when no URL is given and no
//! server binary is on PATH, a reachable Docker engine runs the official image (`nats`, `postgres`,
//! `qdrant/qdrant`), so `cargo test` works on a machine with Docker and nothing else.
//!
//! A container keeps its files and its log between a stop and a start (it is removed only when dropped), and its
//! ports are mapped to fixed host ports, so a test that kills a server and starts it again finds it at the same
//! URL with the same store, as a restarted pod would. Nothing is bind-mounted: configuration is copied in, and the
//! log is read back through the engine, so no file owned by the container's user is left on the host.

use std::{
    future::Future,
    sync::OnceLock,
    time::{Duration, Instant},
};

use futures::StreamExt;
use testcontainers::{
    ContainerAsync, GenericImage, ImageExt,
    bollard::query_parameters::{KillContainerOptions, LogsOptions},
    core::{IntoContainerPort, client::docker_client_instance},
    runners::AsyncRunner,
};

/// The images the harness runs, each overridable by its variable (a registry mirror, a newer tag). NATS is the
/// version the deployment files pin (`docker-compose.yml`, `.ci/run`).
pub const NATS_IMAGE: (&str, &str) = ("SLEUTH_TEST_NATS_IMAGE", "nats:2.15.1-alpine");
pub const POSTGRES_IMAGE: (&str, &str) = ("SLEUTH_TEST_POSTGRES_IMAGE", "postgres:17");
pub const QDRANT_IMAGE: (&str, &str) = ("SLEUTH_TEST_QDRANT_IMAGE", "qdrant/qdrant:v1.16.3");

/// True when `SLEUTH_TEST_DOCKER=1`: every service comes from a container even where a URL, a binary or a local
/// server would have served, to check this path on a machine that has them all.
pub fn forced() -> bool {
    std::env::var("SLEUTH_TEST_DOCKER").is_ok_and(|v| v == "1" || v == "true")
}

/// The harness's own runtime for the engine's API: tests call the harness from synchronous code and from tokio
/// runtimes of either flavour, and testcontainers' calls need a runtime of their own that no test blocks.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sleuth-test-docker")
            .enable_all()
            .build()
            .expect("a tokio runtime for the Docker harness")
    })
}

/// Runs `work` on the harness's runtime from any thread, async or not, and waits for it.
fn block<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    let handle = runtime().handle().clone();
    std::thread::spawn(move || handle.block_on(work)).join().expect("a Docker harness call panicked")
}

/// `Ok` when a Docker engine answers a ping (`DOCKER_HOST`, else the default socket), else why not.
pub fn engine() -> Result<(), String> {
    block(async {
        let docker = docker_client_instance().await.map_err(|e| format!("no Docker client configuration: {e}"))?;
        let answer = tokio::time::timeout(Duration::from_secs(5), docker.ping()).await;
        match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("the Docker engine does not answer: {e}")),
            Err(_) => Err("the Docker engine did not answer a ping in 5 s".to_string()),
        }
    })
}

/// What to run: an image, its command, environment, files copied in before it starts, and container ports
/// published on fixed host ports.
#[derive(Clone, Debug)]
pub struct Spec {
    /// `name:tag`.
    pub image: String,
    pub cmd: Vec<String>,
    pub env: Vec<(String, String)>,
    /// (path in the container, contents).
    pub files: Vec<(String, Vec<u8>)>,
    /// (host port, container port).
    pub ports: Vec<(u16, u16)>,
}

impl Spec {
    /// A spec for the image in `variable`, else `default`.
    pub fn of((variable, default): (&str, &str)) -> Spec {
        let image = std::env::var(variable).ok().filter(|i| !i.is_empty()).unwrap_or_else(|| default.to_string());
        Spec { image, cmd: Vec::new(), env: Vec::new(), files: Vec::new(), ports: Vec::new() }
    }
}

/// A running (or stopped) container of the test's, removed when dropped.
pub struct Container {
    inner: Option<ContainerAsync<GenericImage>>,
    pub image: String,
}

impl Container {
    /// Creates and starts the container. Panics, naming the image and what to do, when the engine cannot.
    pub fn start(spec: &Spec) -> Container {
        let spec = spec.clone();
        let image = spec.image.clone();
        let (name, tag) = image.rsplit_once(':').unwrap_or((image.as_str(), "latest"));
        let (name, tag) = (name.to_string(), tag.to_string());
        let started = block(async move {
            let mut request =
                GenericImage::new(name, tag).with_cmd(spec.cmd).with_startup_timeout(Duration::from_secs(120));
            for (key, value) in spec.env {
                request = request.with_env_var(key, value);
            }
            for (path, contents) in spec.files {
                request = request.with_copy_to(path, contents);
            }
            for (host, container) in spec.ports {
                request = request.with_mapped_port(host, container.tcp());
            }
            request.start().await
        });
        match started {
            Ok(container) => Container { inner: Some(container), image },
            Err(e) => panic!(
                "cannot start a {image} container: {e}. The harness runs it because no server was configured \
                 (SLEUTH_TEST_*_URL) and none is on PATH; `docker pull {image}`, or set its SLEUTH_TEST_*_IMAGE \
                 variable to an image the engine has"
            ),
        }
    }

    fn id(&self) -> String {
        self.inner.as_ref().map(|c| c.id().to_string()).expect("the container is there until dropped")
    }

    /// Sends `signal` to the container's main process and waits until the container has stopped: SIGKILL is a
    /// crash; SIGTERM or SIGINT a clean shutdown (for up to `grace`, then SIGKILL).
    pub fn signal(&mut self, signal: &str, grace: Duration) {
        let (id, signal) = (self.id(), signal.to_string());
        block(async move {
            let Ok(docker) = docker_client_instance().await else { return };
            let _ = docker.kill_container(&id, Some(KillContainerOptions { signal })).await;
            let deadline = Instant::now() + grace;
            loop {
                let running = docker
                    .inspect_container(&id, None)
                    .await
                    .ok()
                    .and_then(|c| c.state)
                    .and_then(|s| s.running)
                    .unwrap_or(false);
                if !running {
                    return;
                }
                if Instant::now() > deadline {
                    let kill = KillContainerOptions { signal: "SIGKILL".into() };
                    let _ = docker.kill_container(&id, Some(kill)).await;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }

    /// Starts the stopped container again: the same files, the same host ports.
    pub fn start_again(&mut self) {
        let container = self.inner.take().expect("the container is there until dropped");
        let (container, started) = block(async move {
            let started = container.start().await;
            (container, started)
        });
        self.inner = Some(container);
        if let Err(e) = started {
            panic!("cannot start the {} container again: {e}", self.image);
        }
    }

    /// Everything the container has written to stdout and stderr since it was created, across restarts.
    pub fn logs(&self) -> String {
        let id = self.id();
        block(async move {
            let Ok(docker) = docker_client_instance().await else { return String::new() };
            let options = LogsOptions { stdout: true, stderr: true, ..Default::default() };
            let mut stream = docker.logs(&id, Some(options));
            let mut text = String::new();
            while let Some(Ok(chunk)) = stream.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            }
            text
        })
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if let Some(container) = self.inner.take() {
            block(async move {
                let _ = container.rm().await;
            });
        }
    }
}

/// Waits until `ready` holds, or panics after `limit` with the container's log.
pub fn wait_until(container: &Container, limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < limit,
            "the {} container was not {what} in {limit:?}; its log:\n{}",
            container.image,
            container.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
