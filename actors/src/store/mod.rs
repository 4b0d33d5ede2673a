//! Loop-state stores: [`StateStore`] keeps each request's [`LoopState`] with a revision for compare-and-swap.
//! Two implementations: the JetStream KV bucket `sleuth_loops` (`nats_loops.rs`), where a commit can be the next
//! work message itself, and an in-memory map. [`Conversations`] and
//! [`IndexGeneration`] keep intake's conversation turns and the ingestion counter in [`Bucket`]s of their own.

pub mod bucket;
pub mod conversations;
pub mod generation;
pub mod graph_types;
pub mod memory;
pub mod nats_loops;

pub use conversations::Conversations;
pub use generation::IndexGeneration;
pub use graph_types::GraphTypes;

/// The description of the `sleuth_meta` bucket, which holds deployment-wide values.
pub const META_DESCRIPTION: &str = "sleuth deployment counters";

use std::sync::Arc;

use async_trait::async_trait;
use sleuth_messages::{LoopState, WorkItem};
use uuid::Uuid;

use crate::telemetry::TraceHeaders;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The revision given to compare-and-swap is not the current one: reload and retry.
    #[error("revision conflict")]
    Conflict,
    #[error("a state for this request already exists")]
    AlreadyExists,
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    #[error("stored state is unreadable: {0}")]
    Corrupt(String),
}

#[async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Stores a new request's state; fails with `AlreadyExists` if the id is taken.
    async fn create(&self, state: &LoopState) -> Result<u64, StoreError>;
    /// The state and its revision, or `None` if unknown (or expired). Shared, not copied: a hop reads it and
    /// derives the next state from it (the in-process store hands out the `Arc` it keeps).
    async fn load(&self, request_id: Uuid) -> Result<Option<(Arc<LoopState>, u64)>, StoreError>;
    /// Replaces the state if its revision is still `revision`; returns the new revision. The in-process store keeps
    /// the `Arc` itself, so a hop's commit copies nothing.
    async fn compare_and_swap(&self, state: &Arc<LoopState>, revision: u64) -> Result<u64, StoreError>;
    /// Whether a commit can carry work ([`StateStore::commit_with_work`]), so a hop offers it the first work item
    /// its new state calls for.
    fn carries_work(&self) -> bool {
        false
    }
    /// Commits `state` (a swap on `revision`, or a new request's when `None`) and, where the store holds the work
    /// too, publishes `work` in the same write: over NATS the commit *is* that work message, with `trace` in its
    /// headers, so a hop is one round trip. Elsewhere it only commits, and the bus publishes the work after.
    async fn commit_with_work(
        &self,
        state: &Arc<LoopState>,
        revision: Option<u64>,
        work: &WorkItem,
        trace: &TraceHeaders,
    ) -> Result<Committed, StoreError> {
        let _ = (work, trace);
        let revision = match revision {
            Some(revision) => self.compare_and_swap(state, revision).await?,
            None => self.create(state).await?,
        };
        Ok(Committed { revision, carried: false })
    }
}

/// A commit's revision, and whether the work offered to it went with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    pub revision: u64,
    pub carried: bool,
}
