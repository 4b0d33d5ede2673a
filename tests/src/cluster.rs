//! A three-node JetStream cluster on loopback, for the tests that lose a node under load (`e2e/cluster.rs`). Each
//! node runs the shipped `deploy/nats/nats.conf` unchanged (the deploy accounts, `sync_interval: always`): its
//! store directory, ports, server name and routes are given as flags, as the Helm chart gives a pod its cluster
//! block. Nodes can be SIGKILLed, stopped, frozen (SIGSTOP) and started again on their own store and ports, and
//! each node's monitoring port says who leads what and what each replica holds.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::{free_port, nats};

/// The cluster's name, in every node's `--cluster_name`.
const CLUSTER: &str = "sleuth";
/// How long a node may take to listen after it is started.
const LISTEN_WITHIN: Duration = Duration::from_secs(20);
/// How long a newly started cluster may take to elect a meta leader and report every node healthy before the
/// start is retried on fresh ports.
const START_HEALTHY_WITHIN: Duration = Duration::from_secs(45);

pub struct ClusterNode {
    /// The server name (`-n`), as `nats server list` and the monitoring endpoints give it.
    pub name: String,
    pub port: u16,
    pub monitor: u16,
    args: Vec<String>,
    child: Option<Child>,
    log: PathBuf,
    frozen: bool,
}

/// A node's name and its answer to a monitoring request: status and body, `None` when it did not answer.
type NodeAnswer = (String, Option<(u16, String)>);

/// Each running node's name and its own copy of a stream: the last sequence and message count it holds.
pub type ReplicaStates = Vec<(String, Option<(u64, u64)>)>;

pub struct NatsCluster {
    pub nodes: Vec<ClusterNode>,
    _stores: tempfile::TempDir,
}

/// What [`NatsCluster::start_as`] starts: how many nodes, and whether each keeps the shipped
/// `sync_interval: always` (an fsync per write) or nats-server's default (a flush every two minutes). The other
/// shapes are what BENCHMARKS.md measures the shipped one against.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// 3, or 1 for a lone server (no cluster block, no routes).
    pub nodes: usize,
    pub sync_always: bool,
}

impl Shape {
    /// The production shape: three nodes, each with the shipped `nats.conf`.
    pub const SHIPPED: Shape = Shape { nodes: 3, sync_always: true };
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.resume();
            if let Some(child) = &mut node.child {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl NatsCluster {
    /// Three nodes of nats-server ([`nats::binary`], 2.15.1 in CI) with the deploy accounts, their passwords set by
    /// [`nats::password`], routed to each other, once every node is ready and the cluster has a meta leader.
    pub fn start() -> NatsCluster {
        NatsCluster::start_as(Shape::SHIPPED)
    }

    /// [`NatsCluster::start`] in another [`Shape`].
    pub fn start_as(shape: Shape) -> NatsCluster {
        assert!(matches!(shape.nodes, 1 | 3), "a cluster of 1 or 3 nodes, not {}", shape.nodes);
        for _ in 0..5 {
            if let Some(cluster) = NatsCluster::try_start(shape) {
                return cluster;
            }
        }
        panic!("a {shape:?} nats-server cluster did not come up on five sets of ports; see the logs above");
    }

    fn try_start(shape: Shape) -> Option<NatsCluster> {
        let stores = tempfile::tempdir().expect("a temporary directory");
        let ports: Vec<(u16, u16, u16)> = (0..shape.nodes).map(|_| (free_port(), free_port(), free_port())).collect();
        let routes =
            ports.iter().map(|(_, _, route)| format!("nats://127.0.0.1:{route}")).collect::<Vec<_>>().join(",");
        let conf = config_file(stores.path(), shape.sync_always);
        let mut nodes = Vec::new();
        for (i, (port, monitor, route)) in ports.into_iter().enumerate() {
            let name = format!("n{i}");
            let store = stores.path().join(&name);
            std::fs::create_dir_all(&store).expect("a store directory");
            let mut args: Vec<String> = vec![
                "-c".into(),
                conf.display().to_string(),
                "-sd".into(),
                store.display().to_string(),
                "-a".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                "-m".into(),
                monitor.to_string(),
                "-n".into(),
                name.clone(),
            ];
            if shape.nodes > 1 {
                args.extend([
                    "--cluster_name".into(),
                    CLUSTER.into(),
                    "--cluster".into(),
                    format!("nats://127.0.0.1:{route}"),
                    "--routes".into(),
                    routes.clone(),
                ]);
            }
            let log = stores.path().join(format!("{name}.log"));
            nodes.push(ClusterNode { name, port, monitor, args, child: None, log, frozen: false });
        }
        let mut cluster = NatsCluster { nodes, _stores: stores };
        for node in &mut cluster.nodes {
            node.spawn();
        }
        for node in &mut cluster.nodes {
            if !node.listening(LISTEN_WITHIN) {
                eprintln!("cluster node {} did not come up:\n{}", node.name, node.said());
                return None;
            }
        }
        // A node can listen and still never join: a route port another process took between `free_port` and
        // the spawn, or a first election that stalls. Such a start is retried on fresh ports, like one that
        // never listened, with what each node logged.
        if let Err(answers) = cluster.healthy_within(START_HEALTHY_WITHIN) {
            eprintln!("the cluster did not become healthy within {START_HEALTHY_WITHIN:?}: {answers:?}");
            for node in &cluster.nodes {
                eprintln!("--- {} ---\n{}", node.name, node.said());
            }
            return None;
        }
        Some(cluster)
    }

    /// The comma-separated URLs of every node, as `user` of the deploy accounts: what `nats.url` takes.
    pub fn url_as(&self, user: &str) -> String {
        let pass = nats::password(user);
        self.nodes.iter().map(|n| format!("nats://{user}:{pass}@127.0.0.1:{}", n.port)).collect::<Vec<_>>().join(",")
    }

    /// The index of the node named `name`.
    pub fn index_of(&self, name: &str) -> usize {
        self.nodes.iter().position(|n| n.name == name).unwrap_or_else(|| panic!("no cluster node named {name}"))
    }

    /// Blocks until every running node says it is healthy (`/healthz`: JetStream up and current with its peers),
    /// as a readiness probe does; fails the test after 60 s with each node's answer.
    pub fn wait_ready(&self) {
        if let Err(answers) = self.healthy_within(Duration::from_secs(60)) {
            panic!("the cluster is not healthy within 60 s: {answers:?}");
        }
    }

    /// Polls every running node's `/healthz` until all answer 200, or gives each node's last answer after
    /// `within` (`None` for a node that did not answer).
    fn healthy_within(&self, within: Duration) -> Result<(), Vec<NodeAnswer>> {
        let deadline = Instant::now() + within;
        loop {
            let answers: Vec<NodeAnswer> =
                self.nodes.iter().filter(|n| n.child.is_some()).map(|n| (n.name.clone(), n.get("/healthz"))).collect();
            if answers.iter().all(|(_, a)| a.as_ref().is_some_and(|(status, _)| *status == 200)) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(answers);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The JetStream meta leader's name, as a running node sees it.
    pub fn meta_leader(&self) -> Option<String> {
        self.live().find_map(|n| {
            let jsz = n.json("/jsz")?;
            jsz["meta_cluster"]["leader"].as_str().filter(|l| !l.is_empty()).map(str::to_string)
        })
    }

    /// The name of the node that leads `stream` of the SLEUTH account, as a running node sees it.
    pub fn stream_leader(&self, stream: &str) -> Option<String> {
        self.live().find_map(|n| {
            let detail = n.stream_detail(stream)?;
            detail["cluster"]["leader"].as_str().filter(|l| !l.is_empty()).map(str::to_string)
        })
    }

    /// Each running node's own copy of `stream`: its name and the last sequence and message count it holds.
    pub fn replica_states(&self, stream: &str) -> ReplicaStates {
        self.live()
            .map(|n| {
                let state = n.stream_detail(stream).map(|d| {
                    (d["state"]["last_seq"].as_u64().unwrap_or(0), d["state"]["messages"].as_u64().unwrap_or(0))
                });
                (n.name.clone(), state)
            })
            .collect()
    }

    /// Blocks until every running node holds the same last sequence and message count of each of `streams`; fails
    /// the test after `within` with what each replica holds.
    pub fn assert_replicas_agree(&self, streams: &[String], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let states: Vec<(&String, ReplicaStates)> = streams.iter().map(|s| (s, self.replica_states(s))).collect();
            let agree = states.iter().all(|(_, replicas)| {
                replicas.len() == self.nodes.len()
                    && replicas.iter().all(|(_, state)| state.is_some() && *state == replicas[0].1)
            });
            if agree {
                return;
            }
            assert!(Instant::now() < deadline, "the streams' replicas do not agree within {within:?}: {states:?}");
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// SIGKILL: the node dies as a machine does, without a word to its peers. Its store stays.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].stop(false);
    }

    /// SIGTERM, as Kubernetes stops a pod for an upgrade: the node steps down from what it leads and flushes.
    pub fn stop(&mut self, i: usize) {
        self.nodes[i].stop(true);
    }

    /// Starts a stopped node again on its own ports and store, as a restarted pod on its volume.
    pub fn start_again(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        assert!(node.child.is_none(), "node {} is still running", node.name);
        let deadline = Instant::now() + LISTEN_WITHIN;
        loop {
            node.spawn();
            if node.listening(Duration::from_secs(5)) {
                return;
            }
            // The old process's ports may be held for a moment after it died.
            node.stop(false);
            assert!(Instant::now() < deadline, "node {} did not start again:\n{}", node.name, node.said());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGSTOP: the node hangs, holding its connections open, until [`NatsCluster::resume`].
    pub fn freeze(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        node.signal("-STOP");
        node.frozen = true;
    }

    /// SIGCONT for a frozen node.
    pub fn resume(&mut self, i: usize) {
        self.nodes[i].resume();
    }

    /// Every line any node logged at warning level or above that says a write was lost or a store is corrupt.
    pub fn data_loss_lines(&self) -> Vec<String> {
        self.nodes
            .iter()
            .flat_map(|n| {
                n.said()
                    .lines()
                    .filter(|l| {
                        let l = l.to_lowercase();
                        l.contains("corrupt") || l.contains("lost data") || l.contains("data loss")
                    })
                    .map(|l| format!("{}: {l}", n.name))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn live(&self) -> impl Iterator<Item = &ClusterNode> {
        self.nodes.iter().filter(|n| n.child.is_some() && !n.frozen)
    }
}

/// The shipped `deploy/nats/nats.conf`, or a copy of it in `dir` without `sync_interval: always` (beside a copy
/// of the `accounts.conf` it includes).
fn config_file(dir: &std::path::Path, sync_always: bool) -> PathBuf {
    let deploy = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/nats"));
    let shipped = deploy.join("nats.conf");
    if sync_always {
        return shipped;
    }
    let text = std::fs::read_to_string(&shipped).expect("deploy/nats/nats.conf");
    assert!(text.contains("sync_interval: always"), "deploy/nats/nats.conf no longer says sync_interval: always");
    let copy = dir.join("nats.conf");
    std::fs::write(&copy, text.replace("sync_interval: always", "")).expect("a copy of nats.conf");
    std::fs::copy(deploy.join("accounts.conf"), dir.join("accounts.conf")).expect("a copy of accounts.conf");
    copy
}

impl ClusterNode {
    fn spawn(&mut self) {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", self.log.display()));
        let envs = nats::USERS.map(|user| (format!("SLEUTH_{}_PASSWORD", user.to_uppercase()), nats::password(user)));
        let child = Command::new(nats::binary())
            .args(&self.args)
            .envs(envs)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start nats-server {}: {e}", nats::binary().display()));
        self.child = Some(child);
    }

    /// True once the node listens on its client port and still runs; false when it exited or `within` passed.
    fn listening(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut().expect("a started node");
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                return false;
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                std::thread::sleep(Duration::from_millis(100));
                // Another test's server may have taken the port: ours must still be running.
                return child.try_wait().is_ok_and(|s| s.is_none());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn stop(&mut self, graceful: bool) {
        self.resume();
        let Some(mut child) = self.child.take() else { return };
        if graceful {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    fn resume(&mut self) {
        if self.frozen {
            self.signal("-CONT");
            self.frozen = false;
        }
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill").args([signal, &child.id().to_string()]).status();
        }
    }

    /// What the node has logged since the test started it, across restarts.
    pub fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET` on the node's monitoring port: status and body, `None` when it does not answer within 2 s.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.monitor)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let status = response.split_whitespace().nth(1)?.parse().ok()?;
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
        Some((status, body))
    }

    fn json(&self, path: &str) -> Option<serde_json::Value> {
        let (status, body) = self.get(path)?;
        (status == 200).then(|| serde_json::from_str(&body).ok()).flatten()
    }

    /// This node's view of `stream` in the SLEUTH account (`/jsz`), its own replica's state included.
    fn stream_detail(&self, stream: &str) -> Option<serde_json::Value> {
        let jsz = self.json("/jsz?accounts=true&streams=true&acc=SLEUTH")?;
        jsz["account_details"]
            .as_array()?
            .iter()
            .find_map(|account| account["stream_detail"].as_array()?.iter().find(|s| s["name"] == stream).cloned())
    }
}
