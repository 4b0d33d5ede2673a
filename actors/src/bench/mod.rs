//! `sleuth bench`: sends questions through the pipeline (embedded, or the cluster when a NATS URL is set) with
//! bounded concurrency and reports latency percentiles. It measures; it never fails on timing.

pub mod corpus;
pub mod null_work;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt;
use sleuth_messages::{AskRequest, CacheStats, Outcome};

use crate::{client, config::Config, node::Node};

/// What one run measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    pub mode: &'static str,
    pub requests: usize,
    pub concurrency: usize,
    pub errors: usize,
    pub wall: Duration,
    /// Client-observed latency of each successful request, sorted.
    pub latencies: Vec<Duration>,
    /// The retrieval cache's counters after the run (embedded only: a cluster's are in `nats micro stats`).
    pub cache: Option<CacheStats>,
}

impl BenchReport {
    /// The mean latency of the successful requests.
    pub fn mean(&self) -> Duration {
        let total: Duration = self.latencies.iter().sum();
        total / (self.latencies.len().max(1) as u32)
    }

    pub fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i]
    }
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        write!(
            f,
            "{} · {} requests, concurrency {} · {} errors · p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms · {:.0} req/s",
            self.mode,
            self.requests,
            self.concurrency,
            self.errors,
            ms(self.percentile(0.50)),
            ms(self.percentile(0.95)),
            ms(self.percentile(0.99)),
            ms(self.latencies.last().copied().unwrap_or_default()),
            self.requests as f64 / self.wall.as_secs_f64().max(1e-9),
        )?;
        if let Some(c) = &self.cache {
            write!(
                f,
                " · retrieval cache {} hits, {} misses ({:.0}% hit rate)",
                c.hits,
                c.misses,
                100.0 * c.hit_rate()
            )?;
        }
        Ok(())
    }
}

/// An answer, and the expected one when one is expected.
fn answered(outcome: &Outcome, expected: Option<&str>) -> bool {
    matches!(outcome, Outcome::Answer(a) if expected.is_none_or(|e| a.answer == e))
}

/// The questions `sleuth bench` asks when given none: one of each kind the demo data answers.
pub const DEFAULT_QUESTIONS: [&str; 4] = [
    "Which anime is Luffy in?",
    "How is Luffy related to Nami?",
    "Who directed Spirited Away?",
    "Compare Naruto and Bleach",
];

/// The question `sleuth bench --null-backends` asks when given none.
pub const NULL_QUESTION: &str = "How much does each turn of the agent loop cost in orchestration alone?";

/// `sleuth bench --null-backends`: the real runtime (bus, state store, compare-and-swap, handler) around null
/// work of `turns` turns per request, on the enhanced route with no embedder or demo corpus, so the run measures
/// the orchestration alone. Embedded, it runs in a scratch data directory that is removed after: an index opened
/// without an embedder holds no dense vectors, which the user's own index must never become. Returns the report
/// and its per-turn summary line.
pub async fn run_null(
    mut config: Config,
    questions: Vec<String>,
    requests: usize,
    concurrency: usize,
    turns: u32,
) -> anyhow::Result<(BenchReport, String)> {
    anyhow::ensure!(turns >= 1, "--turns must be at least 1");
    config.debug.null_work_turns = turns;
    config.intake.force_route = Some(sleuth_messages::Route::Enhanced);
    config.embedder.kind = crate::config::EmbedderKind::None;
    config.retrieval.demo_corpus = false;
    let scratch = tempfile::Builder::new().prefix("sleuth-bench-").tempdir()?;
    if config.nats.url.is_none() {
        config.data_dir = Some(scratch.path().to_path_buf());
    }
    let questions = if questions.is_empty() { vec![NULL_QUESTION.to_string()] } else { questions };
    let expected = (1..=turns).map(|t| format!("c{t}")).collect::<Vec<_>>().join(" ");
    let report = run(config, questions, requests, concurrency, Some(expected)).await?;
    let summary = format!(
        "null work, {turns} turns per request: {:.1} µs per turn (mean latency / turns), {:.0} turns/s",
        report.mean().as_secs_f64() * 1e6 / turns as f64,
        (report.latencies.len() as u64 * turns as u64) as f64 / report.wall.as_secs_f64().max(1e-9)
    );
    Ok((report, summary))
}

/// Asks `questions` round-robin, `requests` times in all, `concurrency` at a time. With `expected`, an answer
/// that is not exactly it counts as an error (null work's answers are known).
pub async fn run(
    config: Config,
    questions: Vec<String>,
    requests: usize,
    concurrency: usize,
    expected: Option<String>,
) -> anyhow::Result<BenchReport> {
    anyhow::ensure!(!questions.is_empty(), "bench needs at least one question");
    let concurrency = concurrency.max(1);
    let timeout = Duration::from_millis(config.loop_.timeout_ms + 5_000);
    let mode = if config.nats.url.is_some() { "nats" } else { "embedded" };
    let started = Instant::now();
    let mut cache = None;
    let results: Vec<Option<Duration>> = match config.nats.url.clone() {
        Some(url) => {
            let client = crate::nats_client::connect(&url, "sleuth bench").await?;
            let subjects = config.subjects();
            futures::stream::iter(0..requests)
                .map(|i| {
                    let (client, subjects, q) =
                        (client.clone(), subjects.clone(), questions[i % questions.len()].clone());
                    let expected = expected.clone();
                    async move {
                        let t = Instant::now();
                        let reply = client::ask_with(
                            &client,
                            &subjects,
                            AskRequest::new(q),
                            timeout,
                            None,
                            &Default::default(),
                        )
                        .await
                        .ok()?;
                        answered(&reply.outcome, expected.as_deref()).then(|| t.elapsed())
                    }
                })
                .buffer_unordered(concurrency)
                .collect()
                .await
        }
        None => {
            let node = Arc::new(Node::embedded(config).await?);
            let out = futures::stream::iter(0..requests)
                .map(|i| {
                    let (node, q) = (node.clone(), questions[i % questions.len()].clone());
                    let expected = expected.clone();
                    async move {
                        let t = Instant::now();
                        let reply = node.ask(AskRequest::new(q), None).await.ok()?;
                        answered(&reply.outcome, expected.as_deref()).then(|| t.elapsed())
                    }
                })
                .buffer_unordered(concurrency)
                .collect()
                .await;
            cache = node.cache.as_ref().map(|c| c.stats());
            if let Ok(node) = Arc::try_unwrap(node) {
                node.shutdown().await;
            }
            out
        }
    };
    let wall = started.elapsed();
    let mut latencies: Vec<Duration> = results.iter().flatten().copied().collect();
    latencies.sort();
    Ok(BenchReport {
        mode,
        requests,
        concurrency,
        errors: results.iter().filter(|r| r.is_none()).count(),
        wall,
        latencies,
        cache,
    })
}
