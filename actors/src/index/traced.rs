//! [`Traced`]: any [`VectorIndex`] with one span per call, after OTel's database conventions
//! (`db.system.name = qdrant`, in-process or server, the collection, the operation, the rows returned).

use std::{future::Future, sync::Arc};

use async_trait::async_trait;
use sleuth_messages::Hit;
use tracing::{Instrument, field::Empty};

use super::{Candidate, DocState, PayloadFilter, Point, SearchPlan, VectorIndex};
use crate::scoped_span;

pub struct Traced {
    pub inner: Arc<dyn VectorIndex>,
    pub collection: String,
    /// `true` for qdrant-edge, `false` for a Qdrant server.
    pub in_process: bool,
}

impl Traced {
    async fn call<T>(
        &self,
        name: &'static str,
        rows: impl Fn(&T) -> usize,
        run: impl Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        let span = scoped_span!(
            "db.query",
            otel.name = %format_args!("{name} {}", self.collection),
            otel.kind = "client",
            db.system.name = "qdrant",
            db.collection.name = %self.collection,
            db.operation.name = name,
            db.response.returned_rows = Empty,
            sleuth.index = if self.in_process { "qdrant-edge" } else { "qdrant-server" },
        );
        let result = run.instrument(span.clone()).await;
        match &result {
            Ok(out) => {
                span.record("db.response.returned_rows", rows(out) as u64);
            }
            Err(e) => crate::telemetry::record_error(&span, &format!("{e:#}")),
        }
        result
    }
}

#[async_trait]
impl VectorIndex for Traced {
    async fn search(&self, plan: &SearchPlan) -> anyhow::Result<Vec<Candidate>> {
        self.call("query", Vec::len, self.inner.search(plan)).await
    }

    async fn fetch(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        self.call("scroll", Vec::len, self.inner.fetch(filter, limit)).await
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
        self.call("count", |_| 1, self.inner.count(filter)).await
    }
}
