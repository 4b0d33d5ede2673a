//! The entity graph: typed entities and allowlisted relations in PostgreSQL or SQLite behind [`GraphStore`].
//! A backend answers one traversal query, [`GraphStore::expand`] (a frontier's capped adjacency, batched);
//! the bounded primitives in `primitives.rs` are built on it, so both backends have the same semantics.
//!
//! Every read on a request's behalf sees only the entities its [`Access`] may read (an entity's `readers`,
//! checked in the query): a traversal neither starts from nor reaches a node it may not read, and an edge counts
//! only when both of its ends may be read.

pub mod bench;
pub mod guarded;
pub mod lanes;
pub mod mentions;
mod model;
pub mod owner;
#[macro_use]
mod sql;
pub mod postgres;
pub mod primitives;
pub mod schema;
pub mod sqlite;
pub mod statements;
pub mod traced;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use serde::Serialize;
use uuid::Uuid;

use crate::{access::Access, config::Config};

pub use self::model::{Direction, Edge, Entity, document_node, entity_ref, node_of};

/// One expansion step: which relations, which way, which node types, and at most `fanout` neighbours per node,
/// between nodes that `readable` may read.
#[derive(Debug, Clone)]
pub struct Expand {
    pub relations: Vec<String>,
    pub direction: Direction,
    /// Neighbour types to keep; empty keeps all.
    pub node_types: Vec<String>,
    pub fanout: u32,
    /// Who the traversal is for: frontier nodes it may not read expand to nothing, and neighbours it may not read
    /// are not reached (nor do they take a place in the fan-out).
    pub readable: Access,
}

/// A neighbour of a frontier node. Per node, neighbours come ordered by weight (highest first), then neighbour
/// id, relation and outgoing-before-incoming, the same order on every backend.
#[derive(Debug, Clone, PartialEq)]
pub struct Adjacent {
    pub node: Uuid,
    pub neighbor: Uuid,
    pub relation: String,
    pub weight: f64,
    /// `true` when the edge goes from `node` to `neighbor`.
    pub outgoing: bool,
}

/// One atomic write: entities and edges upserted, some nodes' edges of a relation replaced, nodes deleted.
#[derive(Debug, Clone, Default)]
pub struct GraphWrite {
    pub entities: Vec<Entity>,
    pub edges: Vec<Edge>,
    /// `(src, relation)`: the edges to drop before `edges` are written (e.g. a re-ingested document's mentions).
    pub replace_edges_from: Vec<(Uuid, String)>,
    pub delete: Vec<Uuid>,
}

/// What the graph holds, for `database_stats` and the CLI.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GraphStats {
    pub entities_by_type: BTreeMap<String, u64>,
    pub edges_by_relation: BTreeMap<String, u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("graph query timed out after {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Backend(#[from] anyhow::Error),
}

impl From<sqlx::Error> for GraphError {
    fn from(err: sqlx::Error) -> Self {
        // 57014: query_canceled, what `statement_timeout` raises.
        if let sqlx::Error::Database(db) = &err
            && db.code().as_deref() == Some("57014")
        {
            return GraphError::Timeout(Duration::ZERO);
        }
        GraphError::Backend(anyhow::Error::new(err).context("graph database error"))
    }
}

#[async_trait]
pub trait GraphStore: Send + Sync + 'static {
    /// `postgres` or `sqlite`.
    fn backend(&self) -> &'static str;

    /// The capped adjacency of every node in `frontier`, in one query, ordered by node then rank.
    async fn expand(&self, frontier: &[Uuid], step: &Expand) -> Result<Vec<Adjacent>, GraphError>;

    /// The entities with these ids that `access` may read (hydration), in no particular order; unknown ids are
    /// left out.
    async fn entities(&self, ids: &[Uuid], access: &Access) -> Result<Vec<Entity>, GraphError>;

    /// Typeahead: entities `access` may read with a name or alias starting with (or resembling) `text`, most
    /// popular first.
    async fn search(
        &self,
        text: &str,
        entity_type: Option<&str>,
        limit: u32,
        access: &Access,
    ) -> Result<Vec<Entity>, GraphError>;

    /// Every entity's id with its name and each alias: the dictionary mention links are matched against.
    async fn all_names(&self) -> Result<Vec<(Uuid, String)>, GraphError>;

    /// The content hashes of these entities as last written.
    async fn content_hashes(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, GraphError>;

    /// Applies `write` in one transaction: all of it or nothing.
    async fn write(&self, write: &GraphWrite) -> Result<(), GraphError>;

    /// What `access` may read of the graph, counted.
    async fn stats(&self, access: &Access) -> Result<GraphStats, GraphError>;

    /// Closes every connection and waits until they are closed. On SQLite the last one checkpoints the WAL into
    /// the database file, so the file is whole on its own once this returns.
    async fn close(&self);
}

/// Opens the configured graph: Postgres at `database.url`, else SQLite at `<data_dir>/graph.sqlite`.
/// Runs the migrations either way, unless `database.migrate` is off (Postgres: then the schema is only checked).
pub async fn open(config: &Config) -> anyhow::Result<Arc<dyn GraphStore>> {
    let timeouts = Timeouts {
        statement: Duration::from_millis(config.graph.statement_timeout_ms),
        query: Duration::from_millis(config.graph.query_timeout_ms),
    };
    let store: Arc<dyn GraphStore> = match &config.database.url {
        Some(url) => {
            let (pool, migrate) = (config.database.pool_max_size, config.database.migrate);
            Arc::new(postgres::PgGraph::open(url, pool, timeouts, migrate).await?)
        }
        None => {
            let dir = config.data_dir();
            std::fs::create_dir_all(&dir)?;
            Arc::new(sqlite::SqliteGraph::open(&dir.join("graph.sqlite"), timeouts).await?)
        }
    };
    let traced: Arc<dyn GraphStore> = Arc::new(traced::Traced(store));
    let guard = crate::guard::Guard::new(sleuth_messages::Backend::Graph, &config.backends);
    Ok(Arc::new(guarded::Guarded { inner: traced, guard }))
}

/// Per-query limits: `statement` is enforced by the database where it can, `query` by the client.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub statement: Duration,
    pub query: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { statement: Duration::from_secs(2), query: Duration::from_secs(3) }
    }
}
