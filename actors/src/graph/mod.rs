//! The entity graph: typed entities and allowlisted relations in PostgreSQL or SQLite behind [`GraphStore`].
//! A backend answers one traversal query, [`GraphStore::expand`] (a frontier's capped adjacency, batched);
//! the bounded primitives in `primitives.rs` are built on it, so both backends have the same semantics.
//!
//! Every read on a request's behalf sees only the entities its [`Access`] may read (an entity's `readers`,
//! checked in the query): a traversal neither starts from nor reaches a node it may not read, and an edge counts
//! only when both of its ends may be read.

/// `GraphStore::stats` of a sqlx pool: both SQL backends count the entities an access (`$keys`, `$all`) may read
/// by type, and the edges between them by relation; `$readable(alias)` is the backend's readers check on
/// parameters 1 and 2.
macro_rules! count_stats {
    ($pool:expr, $readable:expr, $keys:expr, $all:expr) => {{
        let mut stats = GraphStats::default();
        let entities =
            format!("SELECT entity_type, count(*) AS n FROM entities e WHERE {} GROUP BY entity_type", $readable("e"));
        for r in sqlx::query(&entities).bind($keys).bind($all).fetch_all($pool).await? {
            stats.entities_by_type.insert(r.try_get("entity_type")?, r.try_get::<i64, _>("n")? as u64);
        }
        let edges = format!(
            "SELECT x.relation, count(*) AS n FROM edges x
             JOIN entities s ON s.id = x.src JOIN entities d ON d.id = x.dst
             WHERE {} AND {} GROUP BY x.relation",
            $readable("s"),
            $readable("d")
        );
        for r in sqlx::query(&edges).bind($keys).bind($all).fetch_all($pool).await? {
            stats.edges_by_relation.insert(r.try_get("relation")?, r.try_get::<i64, _>("n")? as u64);
        }
        Ok(stats)
    }};
}

pub mod bench;
pub mod guarded;
pub mod mentions;
pub mod owner;
pub mod postgres;
pub mod primitives;
pub mod schema;
pub mod sqlite;
pub mod traced;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use anyhow::Context as _;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sleuth_messages::{EntityRef, EntityType, JsonMap};
use uuid::Uuid;

use crate::{access::Access, config::Config};

/// Namespace of the UUIDs given to documents, so a document's graph node is a function of its id.
const DOCUMENT_NAMESPACE: Uuid = Uuid::from_u128(0x5e0d_7a11_9c1b_4d6e_8f00_d0c5_0000_0001);

/// The JSON columns of an entity row, as text.
struct JsonColumns<'a> {
    aliases: &'a str,
    attributes: &'a str,
    readers: &'a str,
}

/// An entity from the columns both SQL backends store it in (aliases, attributes and readers as JSON text).
fn entity_from(
    id: Uuid,
    entity_type: String,
    name: String,
    popularity: f64,
    json: JsonColumns<'_>,
) -> Result<Entity, GraphError> {
    Ok(Entity {
        id,
        entity_type,
        name,
        aliases: serde_json::from_str(json.aliases).context("entity aliases are not a JSON array")?,
        popularity,
        attributes: serde_json::from_str(json.attributes).context("entity attributes are not a JSON object")?,
        readers: serde_json::from_str(json.readers).context("entity readers are not a JSON array")?,
    })
}

/// The node id an entity reference names: documents by their id, other entities by their UUID.
pub fn node_of(entity: &EntityRef) -> Result<Uuid, String> {
    if entity.entity_type.is_document() {
        return Ok(document_node(&entity.id));
    }
    Uuid::parse_str(entity.id.trim()).map_err(|_| {
        format!(
            "{} id {:?} is not a UUID; resolve the entity with a qdrant_search first",
            entity.entity_type, entity.id
        )
    })
}

/// The protocol's reference to a stored entity: documents by their `doc_id`.
pub fn entity_ref(entity: &Entity) -> Option<EntityRef> {
    let entity_type = EntityType::parse(&entity.entity_type)?;
    let id = if entity_type.is_document() { entity.doc_id()?.to_string() } else { entity.id.to_string() };
    Some(EntityRef { entity_type, id })
}

/// The graph node of document `doc_id`.
pub fn document_node(doc_id: &str) -> Uuid {
    Uuid::new_v5(&DOCUMENT_NAMESPACE, doc_id.as_bytes())
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    pub id: Uuid,
    pub entity_type: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub popularity: f64,
    #[serde(default)]
    pub attributes: JsonMap,
    /// Who may read it (`access::Ownership::readers`); empty: shared with everyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

impl Entity {
    /// The node of a document: its title is its name, its id is kept in `attributes.doc_id`, its readers are the
    /// document's.
    pub fn document(doc_id: &str, title: &str, readers: Vec<String>) -> Entity {
        let mut attributes = JsonMap::new();
        attributes.insert("doc_id".into(), doc_id.into());
        Entity {
            id: document_node(doc_id),
            entity_type: EntityType::DOCUMENT.as_str().into(),
            name: title.into(),
            aliases: Vec::new(),
            popularity: 0.0,
            attributes,
            readers,
        }
    }

    /// What identifies the row's content, for idempotent ingestion.
    pub fn content_hash(&self) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(serde_json::to_vec(self).unwrap_or_default()))
    }

    /// The `doc_id` of a document node.
    pub fn doc_id(&self) -> Option<&str> {
        self.attributes.get("doc_id").and_then(|v| v.as_str())
    }
}

/// One directed, typed edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub src: Uuid,
    pub dst: Uuid,
    pub relation: String,
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default = "Edge::default_weight")]
    pub weight: f64,
}

impl Edge {
    fn default_weight() -> f64 {
        1.0
    }
}

/// Which way edges are followed from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Out,
    In,
    #[default]
    Both,
}

impl Direction {
    pub fn reversed(self) -> Direction {
        match self {
            Direction::Out => Direction::In,
            Direction::In => Direction::Out,
            Direction::Both => Direction::Both,
        }
    }
    pub fn follows_out(self) -> bool {
        self != Direction::In
    }
    pub fn follows_in(self) -> bool {
        self != Direction::Out
    }
}

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

/// Runs `fut` under the client-side timeout; dropping it cancels the query.
pub(crate) async fn within<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, GraphError>>,
) -> Result<T, GraphError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Err(GraphError::Timeout(_))) => Err(GraphError::Timeout(limit)),
        Ok(result) => result,
        Err(_) => Err(GraphError::Timeout(limit)),
    }
}

/// The rows of `items` deduplicated by `key`, the last one winning, in first-seen order.
pub(crate) fn last_wins<T: Clone, K: Ord + Clone>(items: &[T], key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen: BTreeMap<K, usize> = BTreeMap::new();
    let mut out: Vec<T> = Vec::new();
    for item in items {
        match seen.get(&key(item)) {
            Some(&i) => out[i] = item.clone(),
            None => {
                seen.insert(key(item), out.len());
                out.push(item.clone());
            }
        }
    }
    out
}

/// The lowercased names and aliases an entity is found by.
pub(crate) fn search_names(entity: &Entity) -> Vec<String> {
    let mut names: Vec<String> = std::iter::once(&entity.name)
        .chain(&entity.aliases)
        .map(|n| n.trim().to_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}
