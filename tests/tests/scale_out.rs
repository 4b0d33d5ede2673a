//! Scale-out of an I/O-bound stage: the planner's throughput at 1, 2 and 4 replicas, each work item held for
//! 200 ms (`debug.stage_delay_ms`, an awaited sleep standing in for an LLM call). A benchmark, not a test: it
//! asserts only that every request is answered, and prints the table BENCHMARKS.md records.
//!
//! `cargo test --release -p sleuth-tests --test scale_out -- --ignored --nocapture`

use std::time::{Duration, Instant};

use sleuth_actors::client;
use sleuth_messages::AskRequest;
use sleuth_tests::{nats::nats_server, process::*, unique};

const REQUESTS: usize = 200;
const HOLD_MS: &str = "200";

/// Planner work items this process applied, from its `/metrics`.
async fn planner_items(process: &ServeProcess) -> f64 {
    let (status, body) = process.get("/metrics").await;
    assert_eq!(status, 200, "{body}");
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("prometheus text");
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == "sleuth_work_applied_total" && s.labels.get("stage") == Some("planner"))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

/// Items per second the planners cleared with `replicas` of them, under `REQUESTS` concurrent requests.
async fn throughput(replicas: usize) -> (f64, f64, Duration) {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("scaleout"), dir.path());
    // Everything but the planner in one process with workers to spare, so the planner is the bottleneck.
    let _rest = ServeProcess::start(
        &deployment,
        "intake,retrieve,graph,grader,synthesizer",
        &[("SLEUTH__STAGES__WORKERS", "16"), ("SLEUTH__TELEMETRY__HTTP_ADDR", "127.0.0.1:0")],
    );
    let planners: Vec<ServeProcess> = (0..replicas)
        .map(|_| ServeProcess::start(&deployment, "planner", &[("SLEUTH__DEBUG__STAGE_DELAY_MS", HOLD_MS)]))
        .collect();
    let subjects = deployment.config().subjects();
    let started = Instant::now();
    let asks: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let (url, subjects) = (nats.url.clone(), subjects.clone());
            let question = ["Which anime is Luffy in?", "Who wrote One Piece?", "How is Luffy related to Nami?"][i % 3];
            tokio::spawn(async move {
                client::ask_remote(&url, &subjects, AskRequest::new(question), Duration::from_secs(600), None).await
            })
        })
        .collect();
    for ask in asks {
        ask.await.unwrap().expect("every request is answered");
    }
    let elapsed = started.elapsed();
    let mut items = 0.0;
    for planner in &planners {
        items += planner_items(planner).await;
    }
    (items / elapsed.as_secs_f64(), items, elapsed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run it with --ignored --nocapture"]
async fn planner_throughput_at_one_two_and_four_replicas() {
    let mut rows = Vec::new();
    for replicas in [1, 2, 4] {
        let (per_second, items, elapsed) = throughput(replicas).await;
        rows.push((replicas, per_second, items, elapsed));
    }
    let base = rows[0].1;
    println!("| planner replicas | work items | wall time | items/s | efficiency |");
    println!("|---|---|---|---|---|");
    for (replicas, per_second, items, elapsed) in rows {
        println!(
            "| {replicas} | {items} | {:.1} s | {per_second:.1} | {:.2} |",
            elapsed.as_secs_f64(),
            per_second / (base * replicas as f64)
        );
    }
}
