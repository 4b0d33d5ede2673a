//! Lose a NATS node under load and lose nothing (issue 68): sleuth on a three-node JetStream cluster
//! (`sleuth_tests::cluster`, the shipped `nats.conf` on every node), every stream and bucket on three replicas
//! (`sleuth setup` with `nats.replicas = 3`), two `sleuth serve --stages all` processes and a client that all hold
//! the three nodes' URLs. A client sends questions at a steady rate while one fault happens, each test its own:
//! SIGKILL of the loop bucket's leader, of the meta leader, of a random node; a node frozen with SIGSTOP for
//! longer than the clients need to notice; a rolling restart of all three. Then the test checks what must hold:
//!
//! - every request gets exactly one final answer: no error, one stored `final` event, no dead letter;
//! - no request's loop state goes backwards: every write of a request's state names, as the revision it
//!   expects, the revision of the write before it (a compare-and-swap chain, read live from the bucket's stream);
//! - the answers equal those the same questions get on the cluster before the fault;
//! - the slowest request stays under [`slowest`], derived below from the settings;
//! - afterwards every stream's three replicas hold the same last sequence and message count.
//!
//! Seen to catch planted faults (2026-12-06): commits without `Nats-Expected-Last-Subject-Sequence` after a
//! request's creation fail every test here ("write … names no expected revision", from the watcher, which ends the
//! test as soon as it fails); before `4effe3ce` and `31b0befd`, five rounds of the leader kills dead-lettered a
//! request and the SIGSTOP refused one as `unavailable`. A stage that acks its work on receipt is caught by
//! `crash::`, not here: no stage process dies in these tests, and no hop fails during an election (a stage's
//! store and publish calls wait it out within the hop), so an ack on a failed hop is never reached either.
//!
//! `SLEUTH_CLUSTER_RATE` (questions per second, default 20) and `SLEUTH_CLUSTER_ROUNDS` (how many times a test
//! repeats its fault, default 1) make the long run BENCHMARKS.md records:
//! `SLEUTH_CLUSTER_ROUNDS=10 cargo test --release -p sleuth-tests --test e2e -- --nocapture --test-threads 1 cluster::`
//! `SLEUTH_CLUSTER_NODES=1` (a lone server, one replica) and `SLEUTH_CLUSTER_SYNC=default` (nats-server's default
//! flush instead of the shipped fsync per write) give the shapes the healthy cluster's load is measured against.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use futures::StreamExt;
use sleuth_actors::{client, config::Config, telemetry::TraceHeaders};
use sleuth_messages::{AskReply, AskRequest, subjects::LoopKind};
use sleuth_tests::{
    cluster::{NatsCluster, Shape},
    final_events_of, gist,
    process::*,
    unique,
};

/// Questions of the demo data, asked in turn.
const QUESTIONS: [&str; 4] = [
    "Which anime is Luffy in?",
    "Who wrote One Piece?",
    "Compare Naruto and Bleach",
    "Which characters appear in Naruto?",
];

/// How long a node stays down after a kill before it is started again, as a pod's restart takes.
const DOWN_FOR: Duration = Duration::from_secs(3);

/// The slowest a request may take across one fault. A request meets at most one fault, and each term is a setting:
/// - the raft groups behind the streams elect a new leader within nats-server's election timeout, at most 9 s
///   (`maxElectionTimeout`), and a client's connection to the dead node is dropped within three pings,
///   6 s ([`sleuth_actors::nats_client::PING_INTERVAL`]); these overlap, so 9 s;
/// - a work message that a stage took but could not ack is redelivered after `nats.ack_wait_ms`, 4 s, and a
///   stage's pull request that the dead node held expires and is sent again within 3 s (`bus/nats.rs`);
/// - a question that no intake took up is sent again every 2 s (`client::RESEND_AFTER`);
/// - the request itself takes well under 1 s on the demo data.
///
/// 9 + 4 + 3 + 2 + 1 = 19 s, and twice over for slack on a shared 2-core machine: 40 s.
///
/// With several rounds ([`rounds`]), a fault 2 s after the cluster is healthy again, a request sent in the first
/// can meet every one, and the work that piled up while the streams had no leader drains between them: [`slowest`]
/// is this bound once per round.
const SLOWEST_PER_FAULT: Duration = Duration::from_secs(40);

/// The bound on the slowest request: [`SLOWEST_PER_FAULT`] for each round.
fn slowest() -> Duration {
    SLOWEST_PER_FAULT * rounds() as u32
}

/// Each request's own time budget (`timeout_ms`): past [`slowest`], so a request that exceeds the bound fails this
/// test as too slow, not as cut short by its deadline; at most `loop.max_timeout_ms` (300 s).
fn request_budget() -> Duration {
    (slowest() + Duration::from_secs(20)).min(Duration::from_secs(300))
}

/// How long the client waits for any one answer: past the request's budget, so a stalled request is measured.
fn client_timeout() -> Duration {
    request_budget() + Duration::from_secs(60)
}

/// One cluster test at a time: each runs three servers, two sleuth processes and a steady load on 2 cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn rate() -> u64 {
    std::env::var("SLEUTH_CLUSTER_RATE").ok().and_then(|r| r.parse().ok()).filter(|r| *r > 0).unwrap_or(20)
}

/// The cluster's shape: the shipped one unless `SLEUTH_CLUSTER_NODES` or `SLEUTH_CLUSTER_SYNC` say otherwise.
fn shape() -> Shape {
    let nodes = match std::env::var("SLEUTH_CLUSTER_NODES").as_deref() {
        Err(_) | Ok("3") => 3,
        Ok("1") => 1,
        Ok(other) => panic!("SLEUTH_CLUSTER_NODES is 1 or 3, not {other:?}"),
    };
    let sync_always = match std::env::var("SLEUTH_CLUSTER_SYNC").as_deref() {
        Err(_) | Ok("always") => true,
        Ok("default") => false,
        Ok(other) => panic!("SLEUTH_CLUSTER_SYNC is always or default, not {other:?}"),
    };
    Shape { nodes, sync_always }
}

fn rounds() -> usize {
    std::env::var("SLEUTH_CLUSTER_ROUNDS").ok().and_then(|r| r.parse().ok()).filter(|r| *r > 0).unwrap_or(1)
}

/// The cluster with sleuth on it: set up on three replicas, two `serve --stages all` processes, and the
/// healthy cluster's answer to each of [`QUESTIONS`].
struct Rig {
    cluster: NatsCluster,
    /// The names the processes use, with the admin user's URL, for the test's own reads.
    config: Config,
    client: async_nats::Client,
    healthy: HashMap<&'static str, String>,
    _processes: Vec<ServeProcess>,
    _dirs: Vec<tempfile::TempDir>,
}

async fn rig() -> Rig {
    let shape = shape();
    let cluster = tokio::task::spawn_blocking(move || NatsCluster::start_as(shape)).await.unwrap();
    let name = unique("cluster");
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let deployments: Vec<Deployment> = dirs
        .iter()
        .map(|dir| {
            let mut deployment = Deployment::seeded(&cluster.url_as("sleuth"), &name, dir.path());
            // accounts.conf names the default subjects (`sleuth.v1`, no suffix).
            deployment.prefix = "sleuth.v1".into();
            deployment.suffix = String::new();
            deployment.env.push(("SLEUTH__NATS__REPLICAS".into(), shape.nodes.to_string()));
            if let Ok(log) = std::env::var("SLEUTH_CLUSTER_RUST_LOG") {
                deployment.env.push(("RUST_LOG".into(), log));
            }
            deployment
        })
        .collect();
    let setup = run_cli(&deployments[0], &["setup"], &[("SLEUTH__NATS__URL", &cluster.url_as("admin"))]);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    let processes: Vec<ServeProcess> =
        deployments.iter().map(|deployment| ServeProcess::start(deployment, "all", &[])).collect();
    let mut config = deployments[0].config();
    config.nats.url = Some(cluster.url_as("admin"));
    config.nats.replicas = shape.nodes;
    let client = sleuth_actors::nats_client::connect(&cluster.url_as("client"), "sleuth cluster client").await.unwrap();
    let mut healthy = HashMap::new();
    for question in QUESTIONS {
        let reply = client::ask_with(
            &client,
            &config.subjects(),
            AskRequest::new(question),
            client_timeout(),
            None,
            &TraceHeaders::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("the healthy cluster does not answer {question:?}: {e:#}"));
        healthy.insert(question, gist(&reply));
    }
    Rig { cluster, config, client, healthy, _processes: processes, _dirs: dirs }
}

/// One request of the load: its id, question, what came back and how long it took.
struct Asked {
    id: uuid::Uuid,
    question: &'static str,
    reply: Result<AskReply, String>,
    sent: Instant,
    took: Duration,
}

/// Every write to a request's own subjects in the loop bucket (its state and the commits that carry it), in
/// stream order: its stream sequence and the sequence it expected as the request's last (its compare-and-swap).
type Writes = HashMap<uuid::Uuid, Vec<(u64, u64)>>;

/// Reads the loop bucket's stream from the start, live, until it has read up to the sequence sent on `done`.
fn watch_writes(config: &Config, done: tokio::sync::oneshot::Receiver<u64>) -> tokio::task::JoinHandle<Writes> {
    let (url, subjects) = (config.nats.url.clone().unwrap(), config.subjects());
    tokio::spawn(async move {
        let client = sleuth_actors::nats_client::connect(&url, "sleuth cluster watcher").await.unwrap();
        let js = async_nats::jetstream::new(client);
        let stream = js.get_stream(subjects.loops_stream()).await.expect("the loop bucket's stream");
        let consumer = stream
            .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
                filter_subject: subjects.loops_all(),
                ..Default::default()
            })
            .await
            .expect("an ordered consumer on the loop bucket");
        let mut messages = consumer.messages().await.expect("the loop bucket's messages");
        let mut writes = Writes::new();
        let (mut done, mut until, mut read) = (done, None, 0);
        loop {
            if until.is_some_and(|last| read >= last) {
                return writes;
            }
            tokio::select! {
                last = &mut done, if until.is_none() => {
                    until = Some(last.expect("the test says up to where to read"));
                }
                message = messages.next() => match message {
                    Some(Ok(message)) => {
                        let sequence = message.info().expect("a JetStream message").stream_sequence;
                        read = read.max(sequence);
                        let Some(subject) = subjects.parse_loop(&message.subject) else { continue };
                        if matches!(subject.kind, LoopKind::Work(..)) {
                            continue; // an action slot's work, written once after its commit, outside the chain
                        }
                        let expected = message
                            .headers
                            .as_ref()
                            .and_then(|h| h.get("Nats-Expected-Last-Subject-Sequence"))
                            .and_then(|v| v.as_str().parse().ok())
                            .unwrap_or_else(|| panic!("write {sequence} on {} names no expected revision", message.subject));
                        writes.entry(subject.request_id).or_default().push((sequence, expected));
                    }
                    Some(Err(e)) => eprintln!("loop bucket watcher: {e} (the ordered consumer recreates itself)"),
                    None => panic!("the loop bucket's message stream ended"),
                }
            }
        }
    })
}

/// Awaits `task`, unless the watcher of the loop bucket ends first: it ends early only by failing a check (a write
/// with no expected revision), and that failure is the test's, at once, rather than after the load's timeouts.
async fn unless_watcher_fails<T>(
    task: tokio::task::JoinHandle<T>,
    watcher: &mut tokio::task::JoinHandle<Writes>,
) -> Result<T, tokio::task::JoinError> {
    tokio::pin!(task);
    tokio::select! {
        done = &mut task => done,
        ended = &mut *watcher => match ended {
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("the loop bucket's watcher stopped while the load ran: {e}"),
            Ok(_) => panic!("the loop bucket's watcher returned before the test said up to where to read"),
        },
    }
}

/// Sends [`QUESTIONS`] at [`rate`] per second while `faults` runs on the cluster, and for 2 s after; then checks
/// everything the module's doc lists. `what` names the fault in the printed table row.
async fn under_load(what: &str, mut faults: impl FnMut(&mut NatsCluster) + Send + 'static) {
    let _one = ONE_AT_A_TIME.lock().await;
    let Rig { cluster, config, client, healthy, _processes, _dirs } = rig().await;
    let (watched, watching) = tokio::sync::oneshot::channel();
    let mut watcher = watch_writes(&config, watching);

    let stop = Arc::new(AtomicBool::new(false));
    let began = Instant::now();
    let sender = {
        let (client, subjects, stop) = (client.clone(), config.subjects(), stop.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate()));
            let mut asks = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                tick.tick().await;
                let question = QUESTIONS[i % QUESTIONS.len()];
                i += 1;
                let (client, subjects) = (client.clone(), subjects.clone());
                asks.push(tokio::spawn(async move {
                    let id = uuid::Uuid::now_v7();
                    let timeout_ms = Some(request_budget().as_millis() as u64);
                    let request = AskRequest { request_id: Some(id), timeout_ms, ..AskRequest::new(question) };
                    let began = Instant::now();
                    let reply =
                        client::ask_with(&client, &subjects, request, client_timeout(), None, &TraceHeaders::default())
                            .await
                            .map_err(|e| format!("{e:#}"));
                    Asked { id, question, reply, sent: began, took: began.elapsed() }
                }));
            }
            let mut asked = Vec::new();
            for ask in asks {
                asked.push(ask.await.unwrap());
            }
            asked
        })
    };
    let faulted = tokio::task::spawn_blocking(move || {
        let mut cluster = cluster;
        // Load first, then the fault.
        std::thread::sleep(Duration::from_secs(2));
        for round in 0..rounds() {
            if round > 0 {
                std::thread::sleep(Duration::from_secs(2));
            }
            faults(&mut cluster);
        }
        cluster.wait_ready();
        cluster
    });
    let cluster = unless_watcher_fails(faulted, &mut watcher).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    let asked = unless_watcher_fails(sender, &mut watcher).await.unwrap();
    let wall = began.elapsed();

    // Replies first: the checks below read the cluster the load no longer writes to.
    let failed: Vec<String> = asked
        .iter()
        .filter_map(|a| a.reply.as_ref().err().map(|e| format!("{} ({:?}): {e}", a.id, a.question)))
        .collect();
    let mut took: Vec<Duration> = asked.iter().map(|a| a.took).collect();
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)].as_millis();
    println!("| fault | shape | rate | rounds | requests | wall time | failed | p50 | p95 | p99 | max |");
    let shape = shape();
    println!(
        "| {what} | {} node(s), sync {} | {}/s | {} | {} | {:.1} s | {} | {} ms | {} ms | {} ms | {} ms |",
        shape.nodes,
        if shape.sync_always { "always" } else { "default" },
        rate(),
        rounds(),
        asked.len(),
        wall.as_secs_f64(),
        failed.len(),
        at(0.5),
        at(0.95),
        at(0.99),
        took.last().unwrap().as_millis()
    );
    // When the load met the fault: each second's requests, their median and slowest time.
    let mut by_second: std::collections::BTreeMap<u64, Vec<u128>> = Default::default();
    for a in &asked {
        by_second.entry(a.sent.duration_since(began).as_secs()).or_default().push(a.took.as_millis());
    }
    let timeline: Vec<String> = by_second
        .iter_mut()
        .map(|(s, t)| {
            t.sort();
            format!("{s}s: {} / {} ms", t[t.len() / 2], t[t.len() - 1])
        })
        .collect();
    println!("sent at: median / slowest: {}", timeline.join(", "));
    assert!(failed.is_empty(), "{} of {} requests failed:\n{}", failed.len(), asked.len(), failed.join("\n"));
    for a in &asked {
        let reply = a.reply.as_ref().unwrap();
        assert_eq!(
            gist(reply),
            healthy[a.question],
            "request {} ({:?}) answered unlike the healthy cluster",
            a.id,
            a.question
        );
    }
    let slowest = asked.iter().max_by_key(|a| a.took).unwrap();
    let bound = self::slowest();
    assert!(slowest.took < bound, "request {} took {:?}, over the bound of {bound:?}", slowest.id, slowest.took);

    let ids: Vec<uuid::Uuid> = asked.iter().map(|a| a.id).collect();
    let finals = final_events_of(&config, &ids, Duration::from_secs(30)).await;
    for a in &asked {
        assert_eq!(finals.get(&a.id), Some(&1), "request {} has exactly one stored final event", a.id);
    }
    let js = async_nats::jetstream::new(
        sleuth_actors::nats_client::connect(&config.nats.url.clone().unwrap(), "sleuth cluster check").await.unwrap(),
    );
    let subjects = config.subjects();
    let dead = js
        .get_stream(subjects.dead_stream())
        .await
        .expect("the dead-letter stream")
        .info()
        .await
        .unwrap()
        .state
        .messages;
    assert_eq!(dead, 0, "no request ended in a dead letter");

    let last = js.get_stream(subjects.loops_stream()).await.unwrap().info().await.unwrap().state.last_sequence;
    watched.send(last).unwrap();
    let writes = tokio::time::timeout(Duration::from_secs(60), watcher)
        .await
        .unwrap_or_else(|_| panic!("the loop bucket's watcher did not read up to {last} within 60 s"))
        .unwrap();
    // A request's writes, in stream order, each expecting the one before it. The bucket keeps one message per key,
    // so a write that a later one of its key replaced before the watcher read it is missing: a write may then expect
    // a revision after the last one seen, never one before it (its state would have gone back) and never the same
    // one as another write (two writers would both have committed on one state).
    let mut unseen = 0;
    for a in &asked {
        let chain = writes.get(&a.id).unwrap_or_else(|| panic!("request {} wrote no state", a.id));
        let mut last = 0;
        for &(sequence, expected) in chain {
            assert!(
                expected >= last && expected < sequence,
                "request {}: the write at revision {sequence} expected {expected}, but the state before it was at {last} (its writes: {chain:?})",
                a.id
            );
            unseen += usize::from(expected > last);
            last = sequence;
        }
    }
    println!("compare-and-swap chains hold for every request ({unseen} writes replaced before the watcher read them)");

    let mut streams = Vec::new();
    let mut names = js.stream_names();
    while let Some(name) = names.next().await {
        streams.push(name.expect("a stream name"));
    }
    let checked = streams.clone();
    tokio::task::spawn_blocking(move || {
        cluster.assert_replicas_agree(&checked, Duration::from_secs(30));
        let lost = cluster.data_loss_lines();
        assert!(lost.is_empty(), "a node logged lost or corrupt data:\n{}", lost.join("\n"));
    })
    .await
    .unwrap();
    println!("replicas agree on {streams:?}");
}

/// The node that leads the loop bucket's stream (`KV_sleuth_loops`), where every hop commits.
fn loop_leader(cluster: &NatsCluster) -> usize {
    let leader = cluster.stream_leader("KV_sleuth_loops").expect("the loop bucket has a leader");
    cluster.index_of(&leader)
}

fn kill_and_restart(cluster: &mut NatsCluster, victim: usize) {
    println!("SIGKILL {}", cluster.nodes[victim].name);
    cluster.kill(victim);
    std::thread::sleep(DOWN_FOR);
    cluster.start_again(victim);
    cluster.wait_ready();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_state_leader_is_killed_under_load() {
    under_load("SIGKILL the loop bucket's leader", |cluster| {
        let victim = loop_leader(cluster);
        kill_and_restart(cluster, victim);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_meta_leader_is_killed_under_load() {
    under_load("SIGKILL the meta leader", |cluster| {
        let leader = cluster.meta_leader().expect("the cluster has a meta leader");
        let victim = cluster.index_of(&leader);
        kill_and_restart(cluster, victim);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_node_is_killed_under_load() {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as usize;
    println!("victim seed {seed}");
    let mut dice = seed;
    under_load("SIGKILL a random node", move |cluster| {
        dice = dice.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let victim = (dice >> 33) % cluster.nodes.len();
        kill_and_restart(cluster, victim);
    })
    .await;
}

/// A hang, not a crash: the node keeps its connections open and answers nothing. Its clients leave it after three
/// unanswered pings; the other nodes elect new leaders for what it led.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_frozen_longer_than_the_ping_interval_under_load() {
    let hang = sleuth_actors::nats_client::PING_INTERVAL * 4;
    under_load("SIGSTOP the loop bucket's leader", move |cluster| {
        let victim = loop_leader(cluster);
        println!("SIGSTOP {} for {hang:?}", cluster.nodes[victim].name);
        cluster.freeze(victim);
        std::thread::sleep(hang);
        cluster.resume(victim);
        cluster.wait_ready();
    })
    .await;
}

/// An upgrade: each node in turn stopped with SIGTERM, as Kubernetes does, and started again once it is back,
/// the next one only when the cluster is healthy again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_of_every_node_under_load() {
    under_load("rolling restart", |cluster| {
        for i in 0..cluster.nodes.len() {
            println!("SIGTERM {}", cluster.nodes[i].name);
            cluster.stop(i);
            std::thread::sleep(Duration::from_secs(1));
            cluster.start_again(i);
            cluster.wait_ready();
        }
    })
    .await;
}

/// The same load on a healthy cluster, no fault: what the others are measured against.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_cluster_under_load() {
    under_load("none", |_| std::thread::sleep(DOWN_FOR * 3)).await;
}
