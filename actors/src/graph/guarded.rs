//! [`Guarded`]: the graph's reads through its [`Guard`]: retried, timed and kept out while the circuit is open,
//! so a traversal against a database that went away fails fast with [`Unavailable`] and the loop searches the
//! documents instead. A query's own timeout is not an outage: it is returned as it is, neither retried nor
//! counted. Writes pass straight through: ingestion reports its own errors.
//!
//! [`Unavailable`]: crate::guard::Unavailable

use std::{future::Future, sync::Arc};

use async_trait::async_trait;
use uuid::Uuid;

use super::{Adjacent, Entity, Expand, GraphError, GraphStats, GraphStore, GraphWrite};
use crate::{
    access::Access,
    guard::{Exhausted, Guard},
};

pub struct Guarded {
    pub inner: Arc<dyn GraphStore>,
    pub guard: Guard,
}

impl Guarded {
    async fn read<T, F, Fut>(&self, query: F) -> Result<T, GraphError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, GraphError>>,
    {
        let outcome = self
            .guard
            .call(|| {
                let run = query();
                async move {
                    match run.await {
                        Ok(value) => Ok(Ok(value)),
                        Err(GraphError::Timeout(after)) => Ok(Err(after)),
                        Err(GraphError::Backend(e)) if pool_timed_out(&e) => Err(Exhausted(e).into()),
                        Err(GraphError::Backend(e)) => Err(e),
                    }
                }
            })
            .await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(after)) => Err(GraphError::Timeout(after)),
            Err(down) => Err(GraphError::Backend(down.into())),
        }
    }
}

/// sqlx kept trying to connect until the pool's acquire timeout: the database is not there, and trying again at
/// once would wait as long for the same answer.
fn pool_timed_out(error: &anyhow::Error) -> bool {
    error.chain().any(|c| matches!(c.downcast_ref::<sqlx::Error>(), Some(sqlx::Error::PoolTimedOut)))
}

#[async_trait]
impl GraphStore for Guarded {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn expand(&self, frontier: &[Uuid], step: &Expand) -> Result<Vec<Adjacent>, GraphError> {
        self.read(|| self.inner.expand(frontier, step)).await
    }

    async fn entities(&self, ids: &[Uuid], access: &Access) -> Result<Vec<Entity>, GraphError> {
        self.read(|| self.inner.entities(ids, access)).await
    }

    async fn search(
        &self,
        text: &str,
        entity_type: Option<&str>,
        limit: u32,
        access: &Access,
    ) -> Result<Vec<Entity>, GraphError> {
        self.read(|| self.inner.search(text, entity_type, limit, access)).await
    }

    async fn all_names(&self) -> Result<Vec<(Uuid, String)>, GraphError> {
        self.read(|| self.inner.all_names()).await
    }

    async fn content_hashes(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, GraphError> {
        self.read(|| self.inner.content_hashes(ids)).await
    }

    async fn write(&self, write: &GraphWrite) -> Result<(), GraphError> {
        self.inner.write(write).await
    }

    async fn stats(&self, access: &Access) -> Result<GraphStats, GraphError> {
        self.read(|| self.inner.stats(access)).await
    }

    async fn close(&self) {
        self.inner.close().await
    }
}
