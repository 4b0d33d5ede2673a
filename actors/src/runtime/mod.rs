//! The runtime that runs stages: the delivery handler (load → work → CAS → publish → ack), supervised worker
//! actors, the dead-letter watcher, and the [`NodeContext`] they share.

pub mod dead_letters;
pub mod handler;
pub mod supervisor;
#[cfg(test)]
mod tests;
pub mod worker;

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use sleuth_messages::{LoopState, Stage};

use crate::{
    bus::{Bus, BusError},
    config::Config,
    llm::LlmAgent,
    machine::{self, Outbound},
    store::{Conversations, IndexGeneration, StateStore, bucket::MemoryBucket},
};

/// What every stage in a process shares: configuration, the bus, the state store and the counters.
pub struct NodeContext {
    pub config: Arc<Config>,
    pub bus: Arc<dyn Bus>,
    pub store: Arc<dyn StateStore>,
    pub stats: Arc<Stats>,
    /// Recent turns per `conversation_id`, for intake's follow-up resolution.
    pub conversations: Arc<Conversations>,
    /// Moved by ingestion; the retrieval caches drop what an older generation computed.
    pub generation: Arc<IndexGeneration>,
    /// The LLM that rewrites a conversation's follow-ups at intake, when one is configured.
    pub rewriter: Option<LlmAgent>,
}

impl NodeContext {
    /// A context whose conversations and index generation live in this process (the embedded mode, tests).
    pub fn in_memory(config: Arc<Config>, bus: Arc<dyn Bus>, store: Arc<dyn StateStore>) -> NodeContext {
        let ttl = std::time::Duration::from_secs(config.intake.conversation_ttl_s);
        let conversations =
            Conversations::new(Arc::new(MemoryBucket::new(Some(ttl))), config.intake.conversation_turns);
        NodeContext {
            bus,
            store,
            stats: Arc::new(Stats::default()),
            conversations: Arc::new(conversations),
            generation: Arc::new(IndexGeneration::new(Arc::new(MemoryBucket::new(None)))),
            rewriter: None,
            config,
        }
    }
}

/// Counters per stage, read by tests and exported as metrics.
#[derive(Debug, Default)]
pub struct Stats {
    counters: Mutex<BTreeMap<(Stage, &'static str), Arc<AtomicU64>>>,
}

impl Stats {
    pub fn counter(&self, stage: Stage, name: &'static str) -> Arc<AtomicU64> {
        self.counters.lock().expect("stats poisoned").entry((stage, name)).or_default().clone()
    }

    pub fn incr(&self, stage: Stage, name: &'static str) {
        self.counter(stage, name).fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, stage: Stage, name: &'static str) -> u64 {
        self.counter(stage, name).load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> Vec<(Stage, &'static str, u64)> {
        self.counters
            .lock()
            .expect("stats poisoned")
            .iter()
            .map(|((stage, name), v)| (*stage, *name, v.load(Ordering::Relaxed)))
            .collect()
    }
}

/// Publishes everything the state calls for ([`machine::next_messages`]).
pub async fn publish_all(ctx: &NodeContext, state: &LoopState) -> Result<(), BusError> {
    let traceparent = state.traceparent.as_deref();
    for out in machine::next_messages(state) {
        match out {
            Outbound::Work(item) => ctx.bus.publish_work(&item, traceparent).await?,
            Outbound::Event(event) => ctx.bus.publish_event(&event, traceparent).await?,
            Outbound::Reply(to, reply) => {
                // A lost reply is not fatal: the final event holds the same answer.
                if let Err(e) = ctx.bus.reply(&to, &reply).await {
                    tracing::warn!(request_id = %state.request_id, error = %e, "cannot send reply");
                }
            }
        }
    }
    Ok(())
}
