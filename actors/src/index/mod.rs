//! The vector index behind the retrieve stage: the [`VectorIndex`] trait and its two backends, qdrant-edge
//! in-process ([`EdgeIndex`]) and a Qdrant server over gRPC ([`ServerIndex`]). Both translate the same
//! [`SearchPlan`] and store the same points: a dense vector, a BM25 sparse vector and the chunk as payload.

mod edge;
mod filter;
pub mod guarded;
mod points;
mod query;
mod server;
pub mod traced;

pub use edge::EdgeIndex;
pub use filter::{Condition, FieldType, FilterSchema, PayloadFilter};
pub use points::{
    Candidate, Chunk, DocState, Point, doc_ids_of, doc_state_from_payload, document_order, hit_from_payload, point_uuid,
};
pub use query::{DENSE, Lane, SPARSE, SearchPlan, SparseVector};
pub use server::ServerIndex;

use async_trait::async_trait;
use sleuth_messages::Hit;

/// The payload field holding a point's reader keys; every collection indexes it, and every read on a request's
/// behalf is restricted by it ([`PayloadFilter::readable_by`]).
pub const READERS: &str = "readers";

#[async_trait]
pub trait VectorIndex: Send + Sync + 'static {
    /// Runs a plan; results are best first.
    async fn search(&self, plan: &SearchPlan) -> anyhow::Result<Vec<Candidate>>;
    /// Chunks matching `filter` (an ID lookup when it names documents), in document order.
    async fn fetch(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>>;
    /// What is stored for `doc_id`, if anything.
    async fn doc_state(&self, doc_id: &str) -> anyhow::Result<Option<DocState>>;
    /// Replaces every chunk of the documents these points belong to with the points, in one batch.
    async fn replace(&self, points: Vec<Point>) -> anyhow::Result<()>;
    /// Removes every chunk of these documents; returns how many of them existed.
    async fn delete(&self, doc_ids: &[String]) -> anyhow::Result<usize>;
    /// Makes writes durable.
    async fn flush(&self) -> anyhow::Result<()>;
    /// Number of stored chunks matching `filter` (all of them when it is empty).
    async fn count(&self, filter: &PayloadFilter) -> anyhow::Result<usize>;
}
