//! Prometheus metrics through the `metrics` facade and `metrics-exporter-prometheus`. Every metric sleuth
//! exports is named here (the runtime's per-stage counters are the [`Counter`]s), so `/metrics` and
//! ARCHITECTURE.md can be checked against one list.
//!
//! The [`Counter`]s, which tests and `nats micro stats` also read, are incremented through
//! [`crate::runtime::Stats`], which increments the Prometheus counter in the same call, so the two can never
//! disagree.

use std::sync::OnceLock;

use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use sleuth_messages::{LoopState, Outcome, Stage};

pub const REQUESTS_STARTED: &str = "sleuth_requests_started_total";
pub const REQUESTS_FINISHED: &str = "sleuth_requests_finished_total";
pub const REQUEST_DURATION: &str = "sleuth_request_duration_seconds";
pub const REQUEST_TURNS: &str = "sleuth_request_turns";
pub const STAGE_DURATION: &str = "sleuth_stage_handle_seconds";
pub const WORK_IN_FLIGHT: &str = "sleuth_work_in_flight";
pub const LLM_TOKENS: &str = "sleuth_llm_tokens_total";
pub const LLM_CALLS: &str = "sleuth_llm_calls_total";
pub const LLM_ERRORS: &str = "sleuth_llm_errors_total";
pub const LLM_FALLBACKS: &str = "sleuth_llm_fallbacks_total";
pub const LLM_REPAIRS: &str = "sleuth_llm_repairs_total";
pub const LLM_BREAKER_OPEN: &str = "sleuth_llm_breaker_open";
pub const BACKEND_BREAKER_OPEN: &str = "sleuth_backend_breaker_open";
pub const BACKEND_UNAVAILABLE: &str = "sleuth_backend_unavailable_total";
pub const CACHE_HITS: &str = "sleuth_retrieval_cache_hits_total";
pub const CACHE_MISSES: &str = "sleuth_retrieval_cache_misses_total";
pub const TENANT_REFUSED: &str = "sleuth_tenant_refused_total";
pub const GATEWAY_REQUESTS: &str = "sleuth_gateway_requests_total";
pub const GATEWAY_REQUEST_DURATION: &str = "sleuth_gateway_request_seconds";
pub const GATEWAY_OPEN_STREAMS: &str = "sleuth_gateway_open_streams";

/// Seconds: from a millisecond search to a two-minute loop.
const SECONDS_BUCKETS: &[f64] =
    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];
const TURN_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// True once a recorder is installed. Without one (the CLI, the embedded default) nothing is recorded, and the
/// functions below return before building a single label.
pub fn recording() -> bool {
    HANDLE.get().is_some()
}

/// Installs the Prometheus recorder (once per process) and returns the handle that renders `/metrics`.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(REQUEST_TURNS.into()), TURN_BUCKETS)?
        .build_recorder();
    let handle = recorder.handle();
    match metrics::set_global_recorder(recorder) {
        Ok(()) => {
            describe();
            let _ = HANDLE.set(handle.clone());
            Ok(handle)
        }
        // Another recorder won a race (tests start several nodes in one process): use the one installed.
        Err(_) => HANDLE.get().cloned().ok_or_else(|| anyhow::anyhow!("a foreign metrics recorder is installed")),
    }
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(REQUESTS_STARTED, "requests accepted by intake, by route");
    describe_counter!(
        REQUESTS_FINISHED,
        "requests ended, by route and termination reason (in flight = started - finished)"
    );
    describe_histogram!(REQUEST_DURATION, metrics::Unit::Seconds, "request latency, by route and termination reason");
    describe_histogram!(REQUEST_TURNS, "loop turns per finished request, by route");
    describe_histogram!(STAGE_DURATION, metrics::Unit::Seconds, "time to handle one delivery, by stage and outcome");
    describe_gauge!(WORK_IN_FLIGHT, "deliveries being handled in this process, by stage");
    describe_counter!(LLM_TOKENS, "LLM tokens the server reported, by model, agent and direction");
    describe_counter!(LLM_CALLS, "LLM calls that returned a completion, by model and agent");
    describe_counter!(LLM_ERRORS, "failed LLM attempts, by model, agent and error type");
    describe_counter!(LLM_FALLBACKS, "agent steps decided by the deterministic twin, by agent");
    describe_counter!(LLM_REPAIRS, "LLM replies sent back for repair, by agent and schema");
    describe_gauge!(LLM_BREAKER_OPEN, "1 while the LLM circuit breaker keeps calls out");
    describe_gauge!(BACKEND_BREAKER_OPEN, "1 while a backend's circuit breaker keeps calls out, by backend");
    describe_counter!(
        BACKEND_UNAVAILABLE,
        "calls a backend guard gave up on (the loop used a fallback), by backend and why"
    );
    describe_counter!(CACHE_HITS, "retrieval cache hits in this process");
    describe_counter!(CACHE_MISSES, "retrieval cache misses in this process");
    describe_counter!(TENANT_REFUSED, "requests intake refused because their tenant was at a limit, by limit");
    describe_counter!(GATEWAY_REQUESTS, "HTTP requests the gateway answered, by path and status");
    describe_histogram!(GATEWAY_REQUEST_DURATION, metrics::Unit::Seconds, "gateway response time, by path");
    describe_gauge!(GATEWAY_OPEN_STREAMS, "SSE and streamed chat responses the gateway holds open");
    for counter in Counter::ALL {
        describe_counter!(counter.metric(), counter.help());
    }
}

/// Renders the text exposition, or `None` when no recorder was installed.
pub fn render() -> Option<String> {
    HANDLE.get().map(|h| h.render())
}

pub fn request_started(route: &str) {
    if !recording() {
        return;
    }
    counter!(REQUESTS_STARTED, "route" => route.to_string()).increment(1);
}

/// Records a request that just ended; called once, by whoever committed its end.
pub fn request_finished(state: &LoopState) {
    if !recording() {
        return;
    }
    let route = format!("{:?}", state.analysis.route).to_lowercase();
    let reason = match &state.outcome {
        Some(Outcome::Answer(a)) => a.termination_reason.as_str().to_string(),
        Some(Outcome::Error(e)) => format!("error_{}", format!("{:?}", e.kind).to_lowercase()),
        None => "unknown".to_string(),
    };
    let seconds = state.finished_ms.unwrap_or(state.created_ms).saturating_sub(state.created_ms) as f64 / 1000.0;
    counter!(REQUESTS_FINISHED, "route" => route.clone(), "reason" => reason.clone()).increment(1);
    histogram!(REQUEST_DURATION, "route" => route.clone(), "reason" => reason).record(seconds);
    histogram!(REQUEST_TURNS, "route" => route).record(state.turns.len() as f64);
}

pub fn stage_handled(stage: Stage, outcome: &'static str, seconds: f64) {
    if !recording() {
        return;
    }
    histogram!(STAGE_DURATION, "stage" => stage.as_str(), "outcome" => outcome).record(seconds);
}

/// Counts one delivery in flight for as long as the guard lives.
pub struct InFlight(Stage);

impl InFlight {
    pub fn start(stage: Stage) -> Option<InFlight> {
        if !recording() {
            return None;
        }
        gauge!(WORK_IN_FLIGHT, "stage" => stage.as_str()).increment(1.0);
        Some(InFlight(stage))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        gauge!(WORK_IN_FLIGHT, "stage" => self.0.as_str()).decrement(1.0);
    }
}

pub fn llm_call(model: &str, agent: &'static str, input_tokens: u32, output_tokens: u32) {
    if !recording() {
        return;
    }
    counter!(LLM_CALLS, "model" => model.to_string(), "agent" => agent).increment(1);
    counter!(LLM_TOKENS, "model" => model.to_string(), "agent" => agent, "direction" => "input")
        .increment(u64::from(input_tokens));
    counter!(LLM_TOKENS, "model" => model.to_string(), "agent" => agent, "direction" => "output")
        .increment(u64::from(output_tokens));
}

pub fn llm_error(model: &str, agent: &'static str, error_type: &'static str) {
    if !recording() {
        return;
    }
    counter!(LLM_ERRORS, "model" => model.to_string(), "agent" => agent, "type" => error_type).increment(1);
}

pub fn tenant_refused(tenant: &str, limit: &'static str) {
    if !recording() {
        return;
    }
    counter!(TENANT_REFUSED, "tenant" => tenant.to_string(), "limit" => limit).increment(1);
}

/// One HTTP request the gateway answered.
pub fn gateway_request(path: String, status: u16, seconds: f64) {
    if !recording() {
        return;
    }
    counter!(GATEWAY_REQUESTS, "path" => path.clone(), "status" => status.to_string()).increment(1);
    histogram!(GATEWAY_REQUEST_DURATION, "path" => path).record(seconds);
}

/// A streamed response opened (`true`) or closed. Not skipped without a recorder, so that opens and closes always
/// pair up.
pub fn gateway_stream(opened: bool) {
    let open = gauge!(GATEWAY_OPEN_STREAMS);
    if opened { open.increment(1.0) } else { open.decrement(1.0) }
}

pub fn llm_fallback(agent: &'static str) {
    if !recording() {
        return;
    }
    counter!(LLM_FALLBACKS, "agent" => agent).increment(1);
}

pub fn llm_repair(agent: &'static str, schema: &'static str) {
    if !recording() {
        return;
    }
    counter!(LLM_REPAIRS, "agent" => agent, "schema" => schema).increment(1);
}

pub fn llm_breaker(open: bool) {
    if !recording() {
        return;
    }
    gauge!(LLM_BREAKER_OPEN).set(if open { 1.0 } else { 0.0 });
}

pub fn backend_breaker(backend: &'static str, open: bool) {
    if !recording() {
        return;
    }
    gauge!(BACKEND_BREAKER_OPEN, "backend" => backend).set(if open { 1.0 } else { 0.0 });
}

pub fn backend_unavailable(backend: &'static str, why: &'static str) {
    if !recording() {
        return;
    }
    counter!(BACKEND_UNAVAILABLE, "backend" => backend, "why" => why).increment(1);
}

/// The retrieval cache keeps its own counters (they are also `nats micro stats sleuth-retrieve`); the
/// exported counters are set from them when `/metrics` is scraped, so both show the same numbers.
pub fn retrieval_cache(hits: u64, misses: u64) {
    if !recording() {
        return;
    }
    counter!(CACHE_HITS).absolute(hits);
    counter!(CACHE_MISSES).absolute(misses);
}

/// What the runtime counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counter {
    /// A delivery whose work was committed.
    Applied,
    /// A delivery whose effect was already recorded: re-published and acked, nothing re-done.
    Duplicates,
    /// A delivery for a request whose state is gone.
    Orphans,
    /// A delivery that arrived more than once (JetStream redelivered it).
    Redeliveries,
    /// A compare-and-swap that lost to another writer and was retried.
    CasConflicts,
    /// A delivery whose handling failed and was handed back for redelivery.
    Failures,
    /// A request ended with an error after its work failed `max_deliver` times.
    DeadLetters,
    /// A worker actor that panicked and was restarted.
    Restarts,
    /// A stage supervisor that failed and was restarted.
    StageRestarts,
    /// In-flight work dropped because its request was cancelled.
    Cancelled,
    /// A request answered by the deadline watchdog.
    WatchdogAnswers,
    /// A delivery that started from the loop state its message carried, without reading the store.
    StateCarried,
}

impl Counter {
    pub const ALL: [Counter; 12] = [
        Counter::Applied,
        Counter::Duplicates,
        Counter::Orphans,
        Counter::Redeliveries,
        Counter::CasConflicts,
        Counter::Failures,
        Counter::DeadLetters,
        Counter::Restarts,
        Counter::StageRestarts,
        Counter::Cancelled,
        Counter::WatchdogAnswers,
        Counter::StateCarried,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Counter::Applied => "applied",
            Counter::Duplicates => "duplicates",
            Counter::Orphans => "orphans",
            Counter::Redeliveries => "redeliveries",
            Counter::CasConflicts => "cas_conflicts",
            Counter::Failures => "failures",
            Counter::DeadLetters => "dead_letters",
            Counter::Restarts => "restarts",
            Counter::StageRestarts => "stage_restarts",
            Counter::Cancelled => "cancelled",
            Counter::WatchdogAnswers => "watchdog_answers",
            Counter::StateCarried => "state_carried",
        }
    }

    /// The Prometheus counter, labelled by `stage`.
    pub fn metric(self) -> &'static str {
        match self {
            Counter::Applied => "sleuth_work_applied_total",
            Counter::Duplicates => "sleuth_duplicates_skipped_total",
            Counter::Orphans => "sleuth_orphans_total",
            Counter::Redeliveries => "sleuth_redeliveries_total",
            Counter::CasConflicts => "sleuth_cas_conflicts_total",
            Counter::Failures => "sleuth_work_failures_total",
            Counter::DeadLetters => "sleuth_dead_letters_total",
            Counter::Restarts => "sleuth_worker_restarts_total",
            Counter::StageRestarts => "sleuth_stage_restarts_total",
            Counter::Cancelled => "sleuth_cancelled_work_total",
            Counter::WatchdogAnswers => "sleuth_watchdog_answers_total",
            Counter::StateCarried => "sleuth_state_carried_total",
        }
    }

    pub fn help(self) -> &'static str {
        match self {
            Counter::Applied => "deliveries whose work was committed, by stage",
            Counter::Duplicates => "deliveries whose effect was already recorded, by stage",
            Counter::Orphans => "deliveries for a request whose state is gone, by stage",
            Counter::Redeliveries => "deliveries that arrived more than once, by stage",
            Counter::CasConflicts => "compare-and-swap conflicts that were retried, by stage",
            Counter::Failures => "deliveries handed back for redelivery after a failure, by stage",
            Counter::DeadLetters => "requests ended with an error after max_deliver failures, by stage",
            Counter::Restarts => "worker actors restarted after a panic, by stage",
            Counter::StageRestarts => "stage supervisors restarted, by stage",
            Counter::Cancelled => "in-flight deliveries dropped because their request was cancelled, by stage",
            Counter::WatchdogAnswers => "requests the deadline watchdog answered, by the stage they waited on",
            Counter::StateCarried => "deliveries that started from the state their message carried, by stage",
        }
    }
}
