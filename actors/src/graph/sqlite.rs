//! [`SqliteGraph`]: the graph in one SQLite file, for the embedded default. The same fixed queries as Postgres,
//! with JSON arrays (`json_each`) in place of `= ANY($1)` and UUIDs as text. Reads run under the client-side
//! timeout; SQLite has no statement timeout of its own.

use std::{collections::BTreeMap, path::Path, str::FromStr, sync::LazyLock, time::Duration};

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{
    ConnectOptions as _, Connection as _, QueryBuilder, Row, Sqlite, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous},
};
use uuid::Uuid;

use super::{
    Adjacent, Entity, Expand, GraphError, GraphStats, GraphStore, GraphWrite, Timeouts,
    sql::{JsonColumns, entity_from, last_wins, search_names, within},
};
use crate::access::Access;

pub struct SqliteGraph {
    pool: SqlitePool,
    timeouts: Timeouts,
}

/// The expansion, between nodes that the access in `?7` and `?8` may read (see [`hidden_at`]).
static EXPAND_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "
SELECT node, neighbor, relation, weight, outgoing FROM (
    SELECT x.*, row_number() OVER (
        PARTITION BY x.node ORDER BY x.weight DESC, x.neighbor, x.relation, x.outgoing DESC) AS rank
    FROM (
        SELECT src AS node, dst AS neighbor, relation, weight, 1 AS outgoing FROM edges
        WHERE ?3 AND src IN (SELECT value FROM json_each(?1)) AND relation IN (SELECT value FROM json_each(?2))
        UNION ALL
        SELECT dst, src, relation, weight, 0 FROM edges
        WHERE ?4 AND dst IN (SELECT value FROM json_each(?1)) AND relation IN (SELECT value FROM json_each(?2))
    ) x
    WHERE (json_array_length(?5) = 0
       OR EXISTS (SELECT 1 FROM entities n WHERE n.id = x.neighbor
                  AND n.entity_type IN (SELECT value FROM json_each(?5))))
      AND NOT EXISTS (SELECT 1 FROM entities n WHERE n.id = x.neighbor AND {})
      AND NOT EXISTS (SELECT 1 FROM entities f WHERE f.id = x.node AND {})
) ranked
WHERE rank <= ?6
ORDER BY node, rank",
        hidden_at("n", 7),
        hidden_at("f", 7)
    )
});

const ENTITY_COLUMNS: &str = "id, entity_type, name, aliases, popularity, attributes, readers";

/// The readers check on the entity row `alias` for the access bound as parameters 1 (a JSON array of reader keys)
/// and 2 (everything): a shared entity (no readers), or one whose readers include a key.
fn readable(alias: &str) -> String {
    readable_at(alias, 1)
}

/// [`readable`] with the keys in parameter `param` and the everything flag in `param + 1`.
fn readable_at(alias: &str, param: usize) -> String {
    format!("(?{all} OR {alias}.readers = '[]' OR {})", holds_key(alias, param), all = param + 1)
}

/// The negation of [`readable_at`], asked as `NOT EXISTS` of an owned entity so that the probe uses the partial
/// index `entities_owned` (owned entities only), as on Postgres.
fn hidden_at(alias: &str, param: usize) -> String {
    format!("({alias}.readers <> '[]' AND NOT (?{all} OR {}))", holds_key(alias, param), all = param + 1)
}

/// Whether the readers of `alias` include one of the keys in the JSON array bound as parameter `param`.
fn holds_key(alias: &str, param: usize) -> String {
    format!(
        "EXISTS (SELECT 1 FROM json_each({alias}.readers) r WHERE r.value IN (SELECT value FROM json_each(?{param})))"
    )
}

/// Rows in one multi-row statement: 8 parameters each stays well under SQLite's 32,766.
const ROWS_PER_STATEMENT: usize = 500;

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".into())
}

fn ids_json(ids: &[Uuid]) -> String {
    json(&ids.iter().map(Uuid::to_string).collect::<Vec<_>>())
}

fn uuid_of(row: &SqliteRow, column: &str) -> Result<Uuid, GraphError> {
    let text: String = row.try_get(column)?;
    Ok(Uuid::parse_str(&text).with_context(|| format!("{column} {text:?} is not a UUID"))?)
}

fn sqlite_entity(row: &SqliteRow) -> Result<Entity, GraphError> {
    let (aliases, attributes, readers): (String, String, String) =
        (row.try_get("aliases")?, row.try_get("attributes")?, row.try_get("readers")?);
    entity_from(
        uuid_of(row, "id")?,
        row.try_get("entity_type")?,
        row.try_get("name")?,
        row.try_get("popularity")?,
        JsonColumns { aliases: &aliases, attributes: &attributes, readers: &readers },
    )
}

impl SqliteGraph {
    /// Opens (creating if needed) the database file and migrates it.
    pub async fn open(path: &Path, timeouts: Timeouts) -> anyhow::Result<SqliteGraph> {
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            // Writers queue behind one another (WAL allows one at a time); a large write on a starved machine
            // (the demo graph's first load next to other work) can hold the lock for seconds.
            .busy_timeout(Duration::from_secs(30));
        // Create the file and switch it to WAL on one connection first: when the pool's first two connections
        // both do it on a fresh file, one fails with "database is locked" before its busy timeout applies.
        let first =
            options.connect().await.with_context(|| format!("cannot create the graph at {}", path.display()))?;
        first.close().await?;
        Self::with_options(options, 4, timeouts)
            .await
            .with_context(|| format!("cannot open the graph at {}", path.display()))
    }

    /// A private in-memory graph (tests, `--ephemeral` runs).
    pub async fn in_memory(timeouts: Timeouts) -> anyhow::Result<SqliteGraph> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // One connection: every connection to `:memory:` is a separate database.
        Self::with_options(options, 1, timeouts).await
    }

    async fn with_options(
        options: SqliteConnectOptions,
        connections: u32,
        timeouts: Timeouts,
    ) -> anyhow::Result<SqliteGraph> {
        let pool = SqlitePoolOptions::new()
            .max_connections(connections)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await.context("cannot migrate the graph schema in SQLite")?;
        Ok(SqliteGraph { pool, timeouts })
    }
}

#[async_trait]
impl GraphStore for SqliteGraph {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn expand(&self, frontier: &[Uuid], step: &Expand) -> Result<Vec<Adjacent>, GraphError> {
        if frontier.is_empty() || step.relations.is_empty() {
            return Ok(Vec::new());
        }
        within(self.timeouts.query, async {
            let rows = sqlx::query(&EXPAND_SQL)
                .bind(ids_json(frontier))
                .bind(json(&step.relations))
                .bind(step.direction.follows_out())
                .bind(step.direction.follows_in())
                .bind(json(&step.node_types))
                .bind(i64::from(step.fanout))
                .bind(json(&step.readable.keys()))
                .bind(step.readable.is_everything())
                .fetch_all(&self.pool)
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(Adjacent {
                        node: uuid_of(r, "node")?,
                        neighbor: uuid_of(r, "neighbor")?,
                        relation: r.try_get("relation")?,
                        weight: r.try_get("weight")?,
                        outgoing: r.try_get::<i64, _>("outgoing")? != 0,
                    })
                })
                .collect()
        })
        .await
    }

    async fn entities(&self, ids: &[Uuid], access: &Access) -> Result<Vec<Entity>, GraphError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        within(self.timeouts.query, async {
            let sql = format!(
                "SELECT {ENTITY_COLUMNS} FROM entities e WHERE {} AND id IN (SELECT value FROM json_each(?3))",
                readable("e")
            );
            let rows = sqlx::query(&sql)
                .bind(json(&access.keys()))
                .bind(access.is_everything())
                .bind(ids_json(ids))
                .fetch_all(&self.pool)
                .await?;
            rows.iter().map(sqlite_entity).collect()
        })
        .await
    }

    async fn search(
        &self,
        text: &str,
        entity_type: Option<&str>,
        limit: u32,
        access: &Access,
    ) -> Result<Vec<Entity>, GraphError> {
        let text = text.trim().to_lowercase();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        // Prefix as an index range; a substring match stands in for Postgres' trigram similarity.
        let upper = format!("{text}\u{10FFFF}");
        within(self.timeouts.query, async {
            let sql = format!(
                "SELECT {ENTITY_COLUMNS} FROM entities e
                 WHERE id IN (SELECT entity_id FROM entity_names WHERE (name >= ?3 AND name < ?4) OR instr(name, ?3) > 0)
                   AND (?5 IS NULL OR entity_type = ?5) AND {}
                 ORDER BY popularity DESC, name, id
                 LIMIT ?6",
                readable("e")
            );
            let rows = sqlx::query(&sql)
                .bind(json(&access.keys()))
                .bind(access.is_everything())
                .bind(&text)
                .bind(&upper)
                .bind(entity_type)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?;
            rows.iter().map(sqlite_entity).collect()
        })
        .await
    }

    async fn all_names(&self) -> Result<Vec<(Uuid, String)>, GraphError> {
        let rows = sqlx::query("SELECT id, name, aliases FROM entities").fetch_all(&self.pool).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let id = uuid_of(&r, "id")?;
            out.push((id, r.try_get("name")?));
            let aliases: Vec<String> = serde_json::from_str(&r.try_get::<String, _>("aliases")?).unwrap_or_default();
            out.extend(aliases.into_iter().map(|a| (id, a)));
        }
        Ok(out)
    }

    async fn content_hashes(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, GraphError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(5_000) {
            let rows =
                sqlx::query("SELECT id, content_hash FROM entities WHERE id IN (SELECT value FROM json_each(?1))")
                    .bind(ids_json(chunk))
                    .fetch_all(&self.pool)
                    .await?;
            for r in rows {
                out.push((uuid_of(&r, "id")?, r.try_get("content_hash")?));
            }
        }
        Ok(out)
    }

    async fn write(&self, write: &GraphWrite) -> Result<(), GraphError> {
        // A statement per table and batch, not per row: each statement is a hop to sqlx's SQLite thread, which
        // cost more than SQLite's own work (6,119 documents made ~37,000 hops).
        let mut tx = self.pool.begin().await?;
        for ids in write.delete.chunks(ROWS_PER_STATEMENT) {
            sqlx::query("DELETE FROM entities WHERE id IN (SELECT value FROM json_each(?1))")
                .bind(ids_json(ids))
                .execute(&mut *tx)
                .await?;
        }
        let entities = last_wins(&write.entities, |e| e.id);
        for batch in entities.chunks(ROWS_PER_STATEMENT) {
            let mut upsert = QueryBuilder::<Sqlite>::new(
                "INSERT INTO entities (id, entity_type, name, aliases, popularity, attributes, content_hash, readers) ",
            );
            upsert.push_values(batch, |mut row, e| {
                row.push_bind(e.id.to_string())
                    .push_bind(&e.entity_type)
                    .push_bind(&e.name)
                    .push_bind(json(&e.aliases))
                    .push_bind(e.popularity)
                    .push_bind(json(&e.attributes))
                    .push_bind(e.content_hash())
                    .push_bind(json(&e.readers));
            });
            upsert.push(
                " ON CONFLICT (id) DO UPDATE SET entity_type = excluded.entity_type, name = excluded.name,
                     aliases = excluded.aliases, popularity = excluded.popularity,
                     attributes = excluded.attributes, content_hash = excluded.content_hash,
                     readers = excluded.readers",
            );
            upsert.build().execute(&mut *tx).await?;
            let ids: Vec<Uuid> = batch.iter().map(|e| e.id).collect();
            sqlx::query("DELETE FROM entity_names WHERE entity_id IN (SELECT value FROM json_each(?1))")
                .bind(ids_json(&ids))
                .execute(&mut *tx)
                .await?;
            let names: Vec<(String, String)> =
                batch.iter().flat_map(|e| search_names(e).into_iter().map(|n| (e.id.to_string(), n))).collect();
            for names in names.chunks(ROWS_PER_STATEMENT) {
                let mut insert = QueryBuilder::<Sqlite>::new("INSERT INTO entity_names (entity_id, name) ");
                insert.push_values(names, |mut row, (id, name)| {
                    row.push_bind(id).push_bind(name);
                });
                insert.build().execute(&mut *tx).await?;
            }
        }
        let mut replaced: BTreeMap<&str, Vec<Uuid>> = BTreeMap::new();
        for (src, relation) in &write.replace_edges_from {
            replaced.entry(relation.as_str()).or_default().push(*src);
        }
        for (relation, sources) in replaced {
            for sources in sources.chunks(ROWS_PER_STATEMENT) {
                sqlx::query("DELETE FROM edges WHERE relation = ?1 AND src IN (SELECT value FROM json_each(?2))")
                    .bind(relation)
                    .bind(ids_json(sources))
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let edges = last_wins(&write.edges, |e| (e.src, e.relation.clone(), e.dst));
        for batch in edges.chunks(ROWS_PER_STATEMENT) {
            let mut upsert = QueryBuilder::<Sqlite>::new("INSERT INTO edges (src, dst, relation, attributes, weight) ");
            upsert.push_values(batch, |mut row, e| {
                row.push_bind(e.src.to_string())
                    .push_bind(e.dst.to_string())
                    .push_bind(&e.relation)
                    .push_bind(json(&e.attributes))
                    .push_bind(e.weight);
            });
            upsert.push(
                " ON CONFLICT (src, relation, dst) DO UPDATE SET attributes = excluded.attributes, \
                 weight = excluded.weight",
            );
            upsert.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn stats(&self, access: &Access) -> Result<GraphStats, GraphError> {
        count_stats!(&self.pool, readable, json(&access.keys()), access.is_everything())
    }
}
