//! What the two SQL backends (`postgres.rs`, `sqlite.rs`) share: an entity read from its row, the client-side
//! timeout every query runs under, de-duplicated writes, the names an entity is searched by, and the statistics
//! query ([`count_stats`]).

use std::{collections::BTreeMap, time::Duration};

use anyhow::Context as _;
use uuid::Uuid;

use super::{Entity, GraphError};

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

/// The JSON columns of an entity row, as text.
pub(crate) struct JsonColumns<'a> {
    pub(crate) aliases: &'a str,
    pub(crate) attributes: &'a str,
    pub(crate) readers: &'a str,
}

/// An entity from the columns both SQL backends store it in (aliases, attributes and readers as JSON text).
pub(crate) fn entity_from(
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
