//! Scale-out of an I/O-bound stage: the LLM planner's throughput at 1, 2 and 4 replicas against a scripted
//! OpenAI-compatible server that answers every call after 200 ms. Every request goes down the agent route, so
//! each planner work item makes two calls (the plan, then a `final` step): 400 ms of waiting per item. A
//! benchmark, not a test: it asserts only that every request is answered and that the planners called the LLM,
//! and prints the table BENCHMARKS.md records.
//!
//! `cargo test --release -p sleuth-tests --test e2e -- --ignored --nocapture scale_out::`

use std::time::{Duration, Instant};

use sleuth_actors::client;
use sleuth_messages::AskRequest;
use sleuth_tests::{llm::ScriptedLlm, nats::nats_server, process::*, unique};

const REQUESTS: usize = 200;
const LLM_LATENCY: Duration = Duration::from_millis(200);

/// A valid plan and a valid `final` step, so the planners' time is the LLM's and not a fallback's.
const PLAN: &str = r#"{
  "goal": "answer from the documents",
  "strategy": "retrieve_then_answer",
  "retrieval_rounds": [],
  "literal_constraints": {"must_preserve_terms": [], "must_match_exactly": false},
  "acceptance_criteria": {"min_independent_sources": 1, "require_authoritative_source": false, "must_cover_entities": []},
  "stop_conditions": {"max_rounds": 3, "max_total_docs": 20, "no_new_information_rounds": 2},
  "answer_requirements": {"format": ["short"]},
  "budget": {"max_tokens": 100000},
  "safety": {"sensitivity": "public", "pii_allowed": false},
  "planner_meta": {"planner_version": "scripted", "rationale_tags": []}
}"#;
const FINAL: &str = r#"{"rationale": "answer now", "actions": [{"action": "final"}]}"#;

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
    let llm = ScriptedLlm::routed(&[("planner_state", PLAN), ("next_step", FINAL)], LLM_LATENCY, 300, 40).await;
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("scaleout"), dir.path());
    // Everything but the planner in one process with workers to spare, so the planner is the bottleneck.
    let _rest = ServeProcess::start(
        &deployment,
        "intake,retrieve,graph,grader,synthesizer",
        &[
            ("SLEUTH__STAGES__WORKERS", "16"),
            ("SLEUTH__TELEMETRY__HTTP_ADDR", "127.0.0.1:0"),
            ("SLEUTH__INTAKE__FORCE_ROUTE", "agent"),
        ],
    );
    let llm_env = [("SLEUTH__LLM__BASE_URL", llm.base_url.as_str()), ("SLEUTH__LLM__MODEL", "scripted-model")];
    let planners: Vec<ServeProcess> =
        (0..replicas).map(|_| ServeProcess::start(&deployment, "planner", &llm_env)).collect();
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
    assert!(llm.calls() >= 2 * REQUESTS, "the planners called the LLM: {} calls", llm.calls());
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
