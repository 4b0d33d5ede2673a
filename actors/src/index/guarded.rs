//! [`Guarded`]: a Qdrant server's reads through the index's [`Guard`]: retried, timed and kept out while the
//! circuit is open, so a search against a server that went away fails fast with [`Unavailable`] and the loop
//! answers without it. Writes pass straight through: ingestion reports its own errors.
//!
//! [`Unavailable`]: crate::guard::Unavailable

use std::sync::Arc;

use async_trait::async_trait;
use sleuth_messages::Hit;

use super::{Candidate, DocState, PayloadFilter, Point, SearchPlan, VectorIndex};
use crate::guard::Guard;

pub struct Guarded {
    pub inner: Arc<dyn VectorIndex>,
    pub guard: Arc<Guard>,
}

#[async_trait]
impl VectorIndex for Guarded {
    async fn search(&self, plan: &SearchPlan) -> anyhow::Result<Vec<Candidate>> {
        Ok(self.guard.call(|| self.inner.search(plan)).await?)
    }

    async fn fetch(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        Ok(self.guard.call(|| self.inner.fetch(filter, limit)).await?)
    }

    async fn doc_state(&self, doc_id: &str) -> anyhow::Result<Option<DocState>> {
        self.inner.doc_state(doc_id).await
    }

    async fn replace(&self, points: Vec<Point>) -> anyhow::Result<()> {
        self.inner.replace(points).await
    }

    async fn delete(&self, doc_ids: &[String]) -> anyhow::Result<usize> {
        self.inner.delete(doc_ids).await
    }

    async fn flush(&self) -> anyhow::Result<()> {
        self.inner.flush().await
    }

    async fn count(&self, filter: &PayloadFilter) -> anyhow::Result<usize> {
        Ok(self.guard.call(|| self.inner.count(filter)).await?)
    }
}
