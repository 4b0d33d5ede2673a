//! Real `sleuth serve` processes: built once with cargo, started with a test's own subjects and data directory,
//! and killed with SIGKILL when the test says so.

use std::{
    collections::VecDeque,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, OnceLock, mpsc},
    time::Duration,
};

/// How many of a process's last stderr lines a readiness failure shows.
const TAIL_LINES: usize = 40;
/// How long a `sleuth serve` may take to report that it is serving.
const READY_WITHIN_S: u64 = 60;

/// The `sleuth` binary: `SLEUTH_BIN`, or the one `cargo test --workspace --release` builds next to the test executables
/// (sleuth-actors has integration tests, so cargo builds its binary before running any test).
pub fn sleuth_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("SLEUTH_BIN") {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("test executable path");
        let dir = exe.parent().and_then(Path::parent).expect("target directory");
        let bin = dir.join(format!("sleuth{}", std::env::consts::EXE_SUFFIX));
        assert!(
            bin.exists(),
            "the sleuth binary is missing at {}: run the tests with `cargo test --workspace --release` (which builds it) or set SLEUTH_BIN",
            bin.display()
        );
        bin
    })
    .clone()
}

/// One deployment's settings, shared by every process of a test.
#[derive(Clone, Debug)]
pub struct Deployment {
    pub nats_url: String,
    pub prefix: String,
    pub suffix: String,
    pub data_dir: PathBuf,
    /// Extra `SLEUTH__…` variables for every process.
    pub env: Vec<(String, String)>,
}

impl Deployment {
    /// A deployment whose data directory starts with the demo data already indexed ([`crate::seeded`]), so its
    /// processes start in seconds.
    pub fn seeded(nats_url: &str, name: &str, data_dir: &Path) -> Deployment {
        crate::seeded::seed_data_dir(data_dir);
        Deployment::new(nats_url, name, data_dir)
    }

    pub fn new(nats_url: &str, name: &str, data_dir: &Path) -> Deployment {
        Deployment {
            nats_url: nats_url.to_string(),
            prefix: format!("sleuthtest.{name}"),
            suffix: format!("_{name}"),
            data_dir: data_dir.to_path_buf(),
            env: Vec::new(),
        }
    }

    /// The environment a `sleuth` process of this deployment runs with.
    pub fn vars(&self) -> Vec<(String, String)> {
        let mut vars = vec![
            ("SLEUTH__NATS__URL".to_string(), self.nats_url.clone()),
            ("SLEUTH__NATS__PREFIX".to_string(), self.prefix.clone()),
            ("SLEUTH__NATS__SUFFIX".to_string(), self.suffix.clone()),
            ("SLEUTH__DATA_DIR".to_string(), self.data_dir.display().to_string()),
            // `--stages all` runs the HTTP gateway too: a free port each, so parallel tests do not clash.
            ("SLEUTH__GATEWAY__HTTP_ADDR".to_string(), "127.0.0.1:0".to_string()),
        ];
        vars.extend(self.env.iter().cloned());
        vars
    }

    /// The same names as the processes use, for the test's own NATS calls.
    pub fn config(&self) -> sleuth_actors::config::Config {
        let mut config = sleuth_actors::config::Config::default();
        config.nats.url = Some(self.nats_url.clone());
        config.nats.prefix = self.prefix.clone();
        config.nats.suffix = self.suffix.clone();
        config.data_dir = Some(self.data_dir.clone());
        for (k, v) in &self.env {
            if k == "SLEUTH__NATS__ACK_WAIT_MS" {
                config.nats.ack_wait_ms = v.parse().expect("ack wait");
            }
        }
        config
    }
}

/// A running `sleuth serve` process. Dropping it kills it.
pub struct ServeProcess {
    pub stages: String,
    /// Where it serves `/metrics`, `/healthz` and `/readyz`.
    pub http_addr: String,
    child: Child,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl ServeProcess {
    /// Starts `sleuth serve --stages <stages>` and waits until it reports that it is serving.
    pub fn start(deployment: &Deployment, stages: &str, extra_env: &[(&str, &str)]) -> ServeProcess {
        let mut cmd = Command::new(sleuth_bin());
        cmd.args(["serve", "--stages", stages])
            .env_remove("SLEUTH_CONFIG")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in deployment.vars() {
            cmd.env(k, v);
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start sleuth serve: {e}"));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel::<Option<String>>();
        let label = stages.to_string();
        // The last lines a process printed, so a process that dies before it is ready says why in the panic.
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
        let tail_writer = tail.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("metrics on http://") {
                    let addr = line[at + "metrics on http://".len()..].split('/').next().unwrap_or_default();
                    let _ = tx.send(Some(addr.to_string()));
                }
                if line.contains("serving; ctrl-c") {
                    let _ = tx.send(None);
                }
                if std::env::var_os("SLEUTH_TEST_LOGS").is_some() {
                    eprintln!("[{label}] {line}");
                }
                let mut tail = tail_writer.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        let until = std::time::Instant::now() + Duration::from_secs(READY_WITHIN_S);
        let mut http_addr = String::new();
        let mut ready = false;
        while let Ok(signal) = rx.recv_timeout(until.saturating_duration_since(std::time::Instant::now())) {
            match signal {
                Some(addr) => http_addr = addr,
                None => {
                    ready = true;
                    break;
                }
            }
        }
        if !ready {
            let _ = child.kill();
            let status = child.wait().ok();
            // Give the reader a moment to drain what the process printed last.
            std::thread::sleep(Duration::from_millis(200));
            let last: Vec<String> = tail.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect();
            panic!(
                "sleuth serve --stages {stages} did not become ready within {READY_WITHIN_S} s (exit: {status:?}); its last lines:\n{}",
                last.join("\n")
            );
        }
        ServeProcess { stages: stages.to_string(), http_addr, child, tail }
    }

    /// SIGKILL: no shutdown hooks, no acks, exactly like a crashed pod.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as Kubernetes sends on scale-in, then waits up to `within` for the exit. Returns the exit
    /// status, or `None` if the process was still running (it is then killed).
    pub fn terminate(mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The last lines the process printed, for a failing assertion's message.
    pub fn last_lines(&self) -> String {
        self.tail.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// `GET http://<http_addr><path>`: status and body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let url = format!("http://{}{path}", self.http_addr);
        let response = reqwest::get(&url).await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every stage in its own process.
pub fn start_all_separately(deployment: &Deployment) -> Vec<ServeProcess> {
    ["retrieve", "graph", "synthesizer", "grader", "planner", "intake"]
        .into_iter()
        .map(|stage| ServeProcess::start(deployment, stage, &[]))
        .collect()
}

/// Runs the `sleuth` command line against `deployment` (its NATS URL, subjects and data directory, plus
/// `extra_env`) and waits for it. Its stderr is part of any failure message the caller prints.
pub fn run_cli(deployment: &Deployment, args: &[&str], extra_env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(sleuth_bin());
    cmd.args(args).env_remove("SLEUTH_CONFIG").stdin(Stdio::null());
    for (k, v) in deployment.vars() {
        cmd.env(k, v);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().unwrap_or_else(|e| panic!("cannot run sleuth {args:?}: {e}"))
}

/// The request id `sleuth ask` prints on its last line (`· request <uuid>`).
pub fn printed_request_id(stdout: &str) -> Option<uuid::Uuid> {
    let at = stdout.rfind("request ")?;
    stdout[at + "request ".len()..].split_whitespace().next()?.parse().ok()
}

/// Starts the `sleuth` command line like [`run_cli`] without waiting for it; its stdout and stderr are piped.
pub fn spawn_cli(deployment: &Deployment, args: &[&str], extra_env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(sleuth_bin());
    cmd.args(args).env_remove("SLEUTH_CONFIG").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in deployment.vars() {
        cmd.env(k, v);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap_or_else(|e| panic!("cannot start sleuth {args:?}: {e}"))
}

/// A file of the bundled demo graph (`actors/data/demo_graph`), for `sleuth ingest graph`.
pub fn demo_graph_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../actors/data/demo_graph").join(name)
}

/// Asks `question` over the deployment's NATS and returns the reply with the request's stored loop state.
pub async fn ask_with_state(
    deployment: &Deployment,
    question: &str,
) -> (sleuth_messages::AskReply, sleuth_messages::LoopState) {
    let config = deployment.config();
    let reply = sleuth_actors::client::ask_remote(
        &deployment.nats_url,
        &config.subjects(),
        sleuth_messages::AskRequest::new(question),
        Duration::from_secs(60),
        None,
    )
    .await
    .expect("answer over nats");
    let state = crate::stored_state(&config, reply.request_id.expect("request id")).await.expect("state in kv");
    (reply, state)
}
