//! [`Traced`]: any [`GraphStore`] with one span per query, after OTel's database conventions: the system
//! (`postgresql` or `sqlite`) and the query's name, never its bound values.

use std::{future::Future, sync::Arc};

use async_trait::async_trait;
use tracing::{Instrument, field::Empty};
use uuid::Uuid;

use super::{Adjacent, Entity, Expand, GraphError, GraphStats, GraphStore, GraphWrite};
use crate::{access::Access, scoped_span};

pub struct Traced(pub Arc<dyn GraphStore>);

impl Traced {
    fn system(&self) -> &'static str {
        match self.0.backend() {
            "postgres" => "postgresql",
            other => other,
        }
    }

    async fn query<T>(
        &self,
        name: &'static str,
        rows: impl Fn(&T) -> usize,
        run: impl Future<Output = Result<T, GraphError>>,
    ) -> Result<T, GraphError> {
        let span = scoped_span!(
            "db.query",
            otel.name = %format_args!("{name} {}", self.system()),
            otel.kind = "client",
            db.system.name = self.system(),
            db.operation.name = name,
            db.query.summary = name,
            db.response.returned_rows = Empty,
        );
        let result = run.instrument(span.clone()).await;
        match &result {
            Ok(out) => {
                span.record("db.response.returned_rows", rows(out) as u64);
            }
            Err(e) => crate::telemetry::record_error(&span, e),
        }
        result
    }
}

#[async_trait]
impl GraphStore for Traced {
    fn backend(&self) -> &'static str {
        self.0.backend()
    }

    async fn expand(&self, frontier: &[Uuid], step: &Expand) -> Result<Vec<Adjacent>, GraphError> {
        self.query("expand", Vec::len, self.0.expand(frontier, step)).await
    }

    async fn entities(&self, ids: &[Uuid], access: &Access) -> Result<Vec<Entity>, GraphError> {
        self.query("hydrate", Vec::len, self.0.entities(ids, access)).await
    }

    async fn search(
        &self,
        text: &str,
        entity_type: Option<&str>,
        limit: u32,
        access: &Access,
    ) -> Result<Vec<Entity>, GraphError> {
        self.query("search", Vec::len, self.0.search(text, entity_type, limit, access)).await
    }

    async fn all_names(&self) -> Result<Vec<(Uuid, String)>, GraphError> {
        self.query("all_names", Vec::len, self.0.all_names()).await
    }

    async fn content_hashes(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, GraphError> {
        self.query("content_hashes", Vec::len, self.0.content_hashes(ids)).await
    }

    async fn write(&self, write: &GraphWrite) -> Result<(), GraphError> {
        self.query("write", |_| 0, self.0.write(write)).await
    }

    async fn stats(&self, access: &Access) -> Result<GraphStats, GraphError> {
        self.query("stats", |_| 1, self.0.stats(access)).await
    }

    async fn close(&self) {
        self.0.close().await
    }
}
