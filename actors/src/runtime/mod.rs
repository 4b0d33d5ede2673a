//! The runtime that runs stages: the delivery handler (load → work → CAS → publish → ack), supervised worker
//! actors, the dead-letter watcher, cancellation, the deadline watchdog, and the [`NodeContext`] they share.

pub mod cancel;
pub mod dead_letters;
pub mod finish;
pub mod handler;
pub mod intake;
pub mod kv;
pub mod patience;
pub mod publish;
pub mod responder;
mod stats;
pub mod supervisor;
#[cfg(test)]
mod tests;
pub mod watchdog;
pub mod worker;

use std::sync::Arc;

use sleuth_messages::subjects::Subjects;

pub use cancel::Cancellations;
pub use stats::{Counter, Stats};

use crate::{
    bus::Bus,
    config::Config,
    entity_types::{EntityTypes, KnownTypes},
    llm::LlmAgent,
    store::{Conversations, IndexGeneration, StateStore, bucket::MemoryBucket},
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
    pub admission: Arc<crate::tenancy::admission::Admission>,
    /// What each tenant has under way and has spent, for intake's limits per tenant.
    pub quotas: Arc<crate::tenancy::quota::Quotas>,
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
            admission: Arc::new(crate::tenancy::admission::Admission::new(config.intake.admission_min_backlog)),
            quotas: Default::default(),
            config,
        }
    }

    /// `messaging.system` of this process's bus.
    pub fn messaging_system(&self) -> &'static str {
        if self.config.nats.url.is_some() { "nats" } else { "sleuth_in_process" }
    }
}
