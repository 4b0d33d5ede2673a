//! The runtime that runs stages: the delivery handler (load → work → CAS → publish → ack), supervised worker
//! actors, the dead-letter watcher, cancellation, the deadline watchdog, and the [`NodeContext`] they share.

pub mod admission;
pub mod cancel;
pub mod dead_letters;
pub mod endpoint;
pub mod finish;
pub mod handler;
pub mod intake;
pub mod kv;
pub mod lanes;
pub mod quota;
pub mod ready;
pub mod responder;
pub mod startup;
mod stats;
pub mod supervisor;
#[cfg(test)]
mod tests;
pub mod watchdog;
pub mod worker;

use std::sync::Arc;

use sleuth_messages::{LoopState, Stage, WorkItem, subjects::Subjects};

pub use cancel::Cancellations;
pub use stats::{Counter, Stats};

use crate::{
    bus::{Bus, BusError},
    config::Config,
    entity_types::{EntityTypes, KnownTypes},
    llm::LlmAgent,
    machine::{self, Outbound},
    store::{Conversations, IndexGeneration, StateStore, bucket::MemoryBucket},
    telemetry::{TraceHeaders, context},
};

/// What every stage in a process shares: configuration, the bus, the state store and the counters.
pub struct NodeContext {
    pub config: Arc<Config>,
    /// Subject and stream names, derived once from `config`.
    pub subjects: Subjects,
    pub bus: Arc<dyn Bus>,
    pub store: Arc<dyn StateStore>,
    pub stats: Arc<Stats>,
    /// The work in flight in this process, by request, so a cancellation can drop it.
    pub cancels: Arc<Cancellations>,
    /// Recent turns per `conversation_id`, for intake's follow-up resolution.
    pub conversations: Arc<Conversations>,
    /// Moved by ingestion; the retrieval caches drop what an older generation computed.
    pub generation: Arc<IndexGeneration>,
    /// The LLM that rewrites a conversation's follow-ups at intake, when one is configured.
    pub rewriter: Option<LlmAgent>,
    /// Set when the process shuts down: workers finish what they hold and take nothing more.
    pub drain: Drain,
    /// The entity graph's types as this process knows them: declared in config, plus the graph's own when this
    /// process opens it.
    pub entity_types: KnownTypes,
    /// Intake's view of the planner queue, to refuse what could not start before its deadline.
    pub admission: Arc<admission::Admission>,
    /// What each tenant has under way and has spent, for intake's limits per tenant.
    pub quotas: Arc<quota::Quotas>,
}

/// Graceful shutdown: the signal to stop taking work, and the deliveries still being handled, each with the
/// moment its handling began (so that `/healthz` can tell a worker that hangs on one).
#[derive(Debug, Default)]
pub struct Drain {
    pub stopping: tokio_util::sync::CancellationToken,
    busy: Arc<std::sync::Mutex<InFlight>>,
}

#[derive(Debug, Default)]
struct InFlight {
    next: u64,
    since: std::collections::BTreeMap<u64, tokio::time::Instant>,
}

/// Counts one delivery being handled, for as long as it lives (a panic included).
pub struct Busy(Arc<std::sync::Mutex<InFlight>>, u64);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).since.remove(&self.1);
    }
}

impl Drain {
    pub fn busy(&self) -> Busy {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let id = busy.next;
        busy.next += 1;
        busy.since.insert(id, tokio::time::Instant::now());
        Busy(self.busy.clone(), id)
    }

    /// Deliveries being handled right now.
    pub fn in_flight(&self) -> usize {
        self.busy.lock().unwrap_or_else(|e| e.into_inner()).since.len()
    }

    /// How long the delivery handled longest has been in hand, if any is.
    pub fn longest_in_flight(&self) -> Option<std::time::Duration> {
        let busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.since.values().min().map(|since| since.elapsed())
    }

    /// `/healthz`'s view: a delivery in hand for longer than `limit` means a worker hangs (every call a stage
    /// makes is bounded by the request's deadline, at most `loop.max_timeout_ms`), and only a restart frees it.
    pub fn hung(&self, limit: std::time::Duration) -> Result<(), String> {
        match self.longest_in_flight() {
            Some(held) if held > limit => Err(format!(
                "a worker has held one delivery for {} s, over stages.hung_after_ms ({} s)",
                held.as_secs(),
                limit.as_secs()
            )),
            _ => Ok(()),
        }
    }
}

impl NodeContext {
    /// A context whose conversations and index generation live in this process (the embedded mode, tests).
    pub fn in_memory(config: Arc<Config>, bus: Arc<dyn Bus>, store: Arc<dyn StateStore>) -> NodeContext {
        let ttl = std::time::Duration::from_secs(config.intake.conversation_ttl_s);
        let conversations =
            Conversations::new(Arc::new(MemoryBucket::new(Some(ttl))), config.intake.conversation_turns);
        NodeContext {
            subjects: config.subjects(),
            bus,
            store,
            stats: Arc::new(Stats::default()),
            cancels: Arc::new(Cancellations::default()),
            conversations: Arc::new(conversations),
            generation: Arc::new(IndexGeneration::new(Arc::new(MemoryBucket::new(None)))),
            rewriter: None,
            drain: Drain::default(),
            entity_types: KnownTypes::new(EntityTypes::new(&config.graph.entity_types)),
            admission: Arc::new(admission::Admission::new(config.intake.admission_min_backlog)),
            quotas: Default::default(),
            config,
        }
    }

    /// `messaging.system` of this process's bus.
    pub fn messaging_system(&self) -> &'static str {
        if self.config.nats.url.is_some() { "nats" } else { "sleuth_in_process" }
    }
}

/// Publishes everything the state calls for that `by` may send ([`machine::next_messages`]; `None` for an ending
/// from outside the loop), but `carried`: the work item the commit itself was (over NATS). `revision` is the store
/// revision `state` was committed at, when the caller just committed it: other work then carries the state
/// (over NATS), and its stage starts without reading the store. Every message carries the trace
/// context of the current span, the hop that published it, so the next hop's span is that hop's child; when
/// spans are not exported, `inherited` (the context this hop started from) passes through unchanged. The reply
/// to the requester's inbox is only sent when `replies` is set (by whoever committed the end, or its
/// redelivery): unlike work and events, a core NATS reply is not de-duplicated.
///
/// The publishes are sent in order and their acknowledgements awaited together, so a hop that publishes work
/// and two events waits for one round trip, not three. It returns once every one is acknowledged (the caller
/// acks its delivery only then), and fails if any failed: a redelivery publishes them again, de-duplicated.
pub async fn publish_all(
    ctx: &NodeContext,
    state: &LoopState,
    revision: Option<u64>,
    by: Option<Stage>,
    inherited: &TraceHeaders,
    replies: bool,
    carried: Option<&WorkItem>,
) -> Result<(), BusError> {
    let committed = revision.map(|revision| (state, revision));
    let trace = context::of_span(&tracing::Span::current(), inherited);
    let trace = &trace;
    let publishes = machine::next_messages(state, by).into_iter().map(|out| async move {
        match out {
            Outbound::Work(item) if Some(&item) == carried => Ok(()),
            Outbound::Work(item) => ctx.bus.publish_work(&item, committed, trace).await,
            Outbound::Event(event) => ctx.bus.publish_event(&event, state.owner.as_ref(), trace).await,
            Outbound::Deadline(envelope) => ctx.bus.publish_deadline(&envelope, trace).await,
            Outbound::Reply(to, reply) if replies => {
                // A lost reply is not fatal: the final event holds the same answer.
                if let Err(e) = ctx.bus.reply(&to, &reply, trace).await {
                    tracing::warn!(request_id = %state.request_id, error = %e, "cannot send reply");
                }
                Ok(())
            }
            Outbound::Reply(..) => Ok(()),
        }
    });
    futures::future::try_join_all(publishes).await.map(drop)
}

/// What happens once a request's end is committed, exactly once, by the process that committed it.
pub fn on_finished(state: &LoopState) {
    crate::telemetry::metrics::request_finished(state);
    crate::telemetry::record_root(state);
}

/// The stage names the span tree uses: `plan`, `retrieve`, `graph`, `grade`, `synthesize`.
pub fn span_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Intake => "intake",
        Stage::Planner => "plan",
        Stage::Retrieve => "retrieve",
        Stage::Graph => "graph",
        Stage::Grader => "grade",
        Stage::Synthesizer => "synthesize",
    }
}
