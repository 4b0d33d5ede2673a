//! [`Bm25`]: the sparse lane's term weights, computed client-side with qdrant-edge's BM25 model for both backends,
//! so a Qdrant server and the embedded engine index and query the same terms. IDF is applied by the engine.

use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};

use crate::index::SparseVector;

pub struct Bm25(EdgeBm25);

impl Bm25 {
    pub fn english() -> anyhow::Result<Bm25> {
        EdgeBm25::new(EdgeBm25Config { language: Some("english".into()), ..Default::default() })
            .map(Bm25)
            .map_err(|e| anyhow::anyhow!("cannot build the BM25 model: {e}"))
    }

    pub fn query(&self, text: &str) -> SparseVector {
        let v = self.0.embed_query(text);
        SparseVector { indices: v.indices, values: v.values }
    }

    pub fn document(&self, text: &str) -> SparseVector {
        let v = self.0.embed_document(text);
        SparseVector { indices: v.indices, values: v.values }
    }
}
