//! Loop-state stores: [`StateStore`] keeps each request's [`LoopState`] with a revision for compare-and-swap.
//! Two implementations: the JetStream KV bucket `sleuth_loops` and an in-memory map. [`Conversations`] and
//! [`IndexGeneration`] keep intake's conversation turns and the ingestion counter in [`Bucket`]s of their own.

pub mod bucket;
pub mod conversations;
pub mod generation;
pub mod graph_types;
pub mod memory;
pub mod nats_kv;

pub use conversations::Conversations;
pub use generation::IndexGeneration;
pub use graph_types::GraphTypes;

/// The description of the `sleuth_meta` bucket, which holds deployment-wide values.
pub const META_DESCRIPTION: &str = "sleuth deployment counters";

use std::sync::Arc;

use async_trait::async_trait;
use sleuth_messages::LoopState;
use uuid::Uuid;

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
}
