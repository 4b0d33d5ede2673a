//! Chaos at scale: two replicas of every stage, each its own `sleuth serve` process, questions in flight at
//! concurrency 16, and a killer that SIGKILLs a random stage process every 1 to 2 s and starts it again. Every
//! request gets exactly one final answer, the same one the embedded mode gives, and no final event is stored
//! twice. The run prints what BENCHMARKS.md records: requests, kills, redeliveries, latencies.
//!
//! `SLEUTH_CHAOS_REQUESTS` sets the number of questions (default 1,000, what CI runs and BENCHMARKS.md records):
//! `cargo test --release -p sleuth-tests --test e2e -- --nocapture chaos::`

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use sleuth_actors::{client, config::Config, node::Node, telemetry::TraceHeaders};
use sleuth_messages::AskRequest;
use sleuth_tests::{final_events_of, gist, nats::nats_server, process::*, seeded::seed_data_dir, unique};

const CONCURRENCY: usize = 16;
const STAGES: [&str; 6] = ["intake", "planner", "retrieve", "graph", "grader", "synthesizer"];
/// Questions of every kind the demo data answers, and one it does not.
const QUESTIONS: [&str; 8] = [
    "Which anime is Luffy in?",
    "How is Luffy related to Nami?",
    "Who wrote One Piece?",
    "Who is the captain of the Straw Hat Pirates?",
    "What did Luffy eat that made his body rubber?",
    "Compare Naruto and Bleach",
    "Which characters appear in Naruto?",
    "What is the capital of France?",
];

/// The embedded mode's answers to [`QUESTIONS`], on a data directory of its own (returned: the index is flushed
/// by actors that outlive `shutdown` by a moment, so the directory must outlive it too).
async fn embedded_answers() -> (HashMap<&'static str, String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    seed_data_dir(dir.path());
    let config = Config { data_dir: Some(dir.path().to_path_buf()), ..Config::default() };
    let node = Node::embedded(config).await.expect("the embedded node starts");
    let mut answers = HashMap::new();
    for question in QUESTIONS {
        let reply = node.ask(AskRequest::new(question), None).await.expect("the embedded node answers");
        answers.insert(question, gist(&reply));
    }
    node.shutdown().await;
    (answers, dir)
}

/// A random number generator good enough to pick victims (xorshift), seeded from the clock and printed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `sleuth_…_total` counters summed over a process's stages, from its `/metrics`.
async fn counters(process: &ServeProcess) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    let url = format!("http://{}/metrics", process.http_addr);
    let Ok(Ok(response)) = tokio::time::timeout(Duration::from_secs(2), reqwest::get(&url)).await else { return sums };
    let body = response.text().await.unwrap_or_default();
    let Ok(scrape) = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))) else { return sums };
    for sample in scrape.samples {
        if let prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) = sample.value {
            *sums.entry(sample.metric).or_insert(0.0) += v;
        }
    }
    sums
}

fn add(into: &mut BTreeMap<String, f64>, from: BTreeMap<String, f64>) {
    for (k, v) in from {
        *into.entry(k).or_insert(0.0) += v;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_gets_exactly_one_answer_while_stage_processes_are_killed() {
    let requests: usize = std::env::var("SLEUTH_CHAOS_REQUESTS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let (expected, _embedded_dir) = embedded_answers().await;

    let nats = nats_server();
    let name = unique("chaos");
    // Each replica set has its own copy of the data: one process per file may own an embedded index or a
    // SQLite graph, and a stage's replicas on Kubernetes have a volume each too.
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let deployments: Vec<Deployment> = dirs
        .iter()
        .map(|dir| {
            let mut deployment = Deployment::seeded(&nats.url, &name, dir.path());
            deployment.env.push(("SLEUTH__TELEMETRY__HTTP_ADDR".into(), "127.0.0.1:0".into()));
            deployment
        })
        .collect();
    let config = deployments[0].config();
    let start = |replica: usize, stage: &str| ServeProcess::start(&deployments[replica], stage, &[]);
    let slots: Vec<(usize, &str)> = (0..2).flat_map(|r| STAGES.iter().map(move |s| (r, *s))).collect();
    let processes: Arc<Vec<Mutex<Option<ServeProcess>>>> =
        Arc::new(slots.iter().map(|(r, s)| Mutex::new(Some(start(*r, s)))).collect());
    println!("{} stage processes up: 2 replicas of {}", processes.len(), STAGES.join(", "));

    // The killer: every 1 to 2 s, SIGKILL a random process (its counters scraped just before) and start it again.
    let done = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let lost_counters = Arc::new(tokio::sync::Mutex::new(BTreeMap::new()));
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    println!("killer seed {seed}");
    let killer = {
        let (done, kills, lost, processes) = (done.clone(), kills.clone(), lost_counters.clone(), processes.clone());
        let (slots, deployments) =
            (slots.iter().map(|(r, s)| (*r, s.to_string())).collect::<Vec<_>>(), deployments.clone());
        tokio::spawn(async move {
            let mut dice = Dice(seed);
            while !done.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(1000 + dice.below(1000))).await;
                if done.load(Ordering::SeqCst) {
                    break;
                }
                let victim = dice.below(slots.len() as u64) as usize;
                let (replica, stage) = slots[victim].clone();
                let process = processes[victim].lock().unwrap().take().expect("every slot holds a process");
                add(&mut *lost.lock().await, counters(&process).await);
                process.kill();
                *kills.lock().unwrap().entry(stage.clone()).or_insert(0) += 1;
                let deployment = deployments[replica].clone();
                let restarted =
                    tokio::task::spawn_blocking(move || ServeProcess::start(&deployment, &stage, &[])).await.unwrap();
                *processes[victim].lock().unwrap() = Some(restarted);
            }
        })
    };

    let client = sleuth_actors::nats_client::connect(&nats.url, "sleuth chaos client").await.unwrap();
    let subjects = config.subjects();
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let askers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (client, subjects, next) = (client.clone(), subjects.clone(), next.clone());
            tokio::spawn(async move {
                let mut answered = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= requests {
                        return answered;
                    }
                    let question = QUESTIONS[i % QUESTIONS.len()];
                    let request = AskRequest { request_id: Some(uuid::Uuid::now_v7()), ..AskRequest::new(question) };
                    let id = request.request_id.unwrap();
                    let asked = Instant::now();
                    let trace = TraceHeaders::default();
                    let reply = client::ask_with(&client, &subjects, request, Duration::from_secs(60), None, &trace)
                        .await
                        .unwrap_or_else(|e| panic!("request {i} ({id}, {question:?}) got no answer: {e:#}"));
                    answered.push((id, question, reply, asked.elapsed()));
                }
            })
        })
        .collect();
    let mut replies = Vec::new();
    for asker in askers {
        replies.extend(asker.await.unwrap());
    }
    let wall = began.elapsed();
    done.store(true, Ordering::SeqCst);
    killer.await.unwrap();

    let mut totals = lost_counters.lock().await.clone();
    for slot in processes.iter() {
        let process = slot.lock().unwrap().take();
        if let Some(process) = process {
            add(&mut totals, counters(&process).await);
        }
    }
    let ids: Vec<uuid::Uuid> = replies.iter().map(|r| r.0).collect();
    let finals = final_events_of(&config, &ids, Duration::from_secs(30)).await;
    let mut latencies: Vec<Duration> = replies.iter().map(|r| r.3).collect();
    latencies.sort();
    let kills = kills.lock().unwrap().clone();
    let count = |name: &str| totals.get(name).copied().unwrap_or(0.0);
    println!(
        "| requests | concurrency | wall time | kills | redeliveries | duplicates skipped | lost replies | duplicated finals | p50 | p95 | max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let stored_twice = finals.values().filter(|n| **n > 1).count();
    println!(
        "| {requests} | {CONCURRENCY} | {:.1} s | {} ({kills:?}) | {} | {} | {} | {stored_twice} | {} ms | {} ms | {} ms |",
        wall.as_secs_f64(),
        kills.values().sum::<usize>(),
        count("sleuth_redeliveries_total"),
        count("sleuth_duplicates_skipped_total"),
        requests - replies.len(),
        latencies[latencies.len() / 2].as_millis(),
        latencies[latencies.len() * 95 / 100].as_millis(),
        latencies.last().unwrap().as_millis(),
    );
    println!("stage counters (summed over every process, scraped before each kill): {totals:?}");

    assert_eq!(replies.len(), requests, "every request is answered");
    assert!(kills.values().sum::<usize>() > 0, "the killer killed something");
    for (id, question, reply, _) in &replies {
        assert_eq!(gist(reply), expected[question], "request {id} ({question:?}) answered unlike the embedded mode");
        assert_eq!(finals.get(id), Some(&1), "request {id} has exactly one stored final event");
    }
    assert_eq!(count("sleuth_dead_letters_total"), 0.0, "no request ended in a dead letter");
    assert_eq!(finals.len(), requests, "no final event for a request nobody asked");
}
