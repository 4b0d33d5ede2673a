//! The query model both backends translate: a [`SearchPlan`] of one or two lanes (dense, BM25 sparse), a payload
//! filter, and RRF fusion when there are two. `edge.rs` turns it into a qdrant-edge `QueryRequest` and `server.rs`
//! into a gRPC `QueryPoints`, so the same intent means the same query in-process and on a Qdrant server.

use super::PayloadFilter;

/// Named vectors of every collection.
pub const DENSE: &str = "dense";
pub const SPARSE: &str = "bm25";

#[derive(Debug, Clone, PartialEq)]
pub struct SparseVector {
    pub indices: Vec<u32>,
    pub values: Vec<f32>,
}

impl SparseVector {
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// One retrieval lane.
#[derive(Debug, Clone, PartialEq)]
pub enum Lane {
    /// Cosine similarity on the named vector [`DENSE`].
    Dense(Vec<f32>),
    /// BM25 (IDF applied by the engine) on the named sparse vector [`SPARSE`].
    Sparse(SparseVector),
}

impl Lane {
    pub fn vector_name(&self) -> &'static str {
        match self {
            Lane::Dense(_) => DENSE,
            Lane::Sparse(_) => SPARSE,
        }
    }
}

/// A hybrid query: each lane fetches `prefetch_limit` candidates under `filter`, and with two lanes the lists
/// are fused by Reciprocal Rank Fusion with constant `rrf_k` (Qdrant scores rank r, counted from 0, as
/// 1 / (k + r); its default k is 2, and the original paper's 60 is k = 61 here).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPlan {
    pub lanes: Vec<Lane>,
    pub filter: PayloadFilter,
    pub prefetch_limit: usize,
    pub rrf_k: u32,
    pub limit: usize,
    /// Minimum cosine similarity for the dense lane; BM25 scores are unbounded and are not thresholded.
    pub dense_threshold: Option<f32>,
    /// Return each hit's dense vector (for reranking).
    pub with_dense: bool,
}

impl SearchPlan {
    /// Whether the lanes are fused (two lanes) or one lane is queried directly.
    pub fn fused(&self) -> bool {
        self.lanes.len() > 1
    }

    /// The threshold that applies to `lane`.
    pub fn threshold_for(&self, lane: &Lane) -> Option<f32> {
        match lane {
            Lane::Dense(_) => self.dense_threshold,
            Lane::Sparse(_) => None,
        }
    }
}
