//! [`SqliteGraph`]: the graph in one SQLite file, for the embedded default. The same fixed queries as Postgres,
//! with JSON arrays (`json_each`) in place of `= ANY($1)` and UUIDs as text. Reads run under the client-side
//! timeout; SQLite has no statement timeout of its own.

use std::{path::Path, str::FromStr, time::Duration};

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{
    ConnectOptions as _, Connection as _, Row, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous},
};
use uuid::Uuid;

use super::{
    Adjacent, Entity, Expand, GraphError, GraphStats, GraphStore, GraphWrite, Timeouts, last_wins,
    postgres::entity_from, search_names, within,
};

pub struct SqliteGraph {
    pool: SqlitePool,
    timeouts: Timeouts,
}

const EXPAND_SQL: &str = "
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
    WHERE json_array_length(?5) = 0
       OR EXISTS (SELECT 1 FROM entities n WHERE n.id = x.neighbor
                  AND n.entity_type IN (SELECT value FROM json_each(?5)))
) ranked
WHERE rank <= ?6
ORDER BY node, rank";

const ENTITY_COLUMNS: &str = "id, entity_type, name, aliases, popularity, attributes";

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
    entity_from(
        uuid_of(row, "id")?,
        row.try_get("entity_type")?,
        row.try_get("name")?,
        &row.try_get::<String, _>("aliases")?,
        row.try_get("popularity")?,
        &row.try_get::<String, _>("attributes")?,
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
            let rows = sqlx::query(EXPAND_SQL)
                .bind(ids_json(frontier))
                .bind(json(&step.relations))
                .bind(step.direction.follows_out())
                .bind(step.direction.follows_in())
                .bind(json(&step.node_types))
                .bind(i64::from(step.fanout))
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

    async fn entities(&self, ids: &[Uuid]) -> Result<Vec<Entity>, GraphError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        within(self.timeouts.query, async {
            let sql = format!("SELECT {ENTITY_COLUMNS} FROM entities WHERE id IN (SELECT value FROM json_each(?1))");
            let rows = sqlx::query(&sql).bind(ids_json(ids)).fetch_all(&self.pool).await?;
            rows.iter().map(sqlite_entity).collect()
        })
        .await
    }

    async fn search(&self, text: &str, entity_type: Option<&str>, limit: u32) -> Result<Vec<Entity>, GraphError> {
        let text = text.trim().to_lowercase();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        // Prefix as an index range; a substring match stands in for Postgres' trigram similarity.
        let upper = format!("{text}\u{10FFFF}");
        within(self.timeouts.query, async {
            let sql = format!(
                "SELECT {ENTITY_COLUMNS} FROM entities
                 WHERE id IN (SELECT entity_id FROM entity_names WHERE (name >= ?1 AND name < ?2) OR instr(name, ?1) > 0)
                   AND (?3 IS NULL OR entity_type = ?3)
                 ORDER BY popularity DESC, name, id
                 LIMIT ?4"
            );
            let rows = sqlx::query(&sql).bind(&text).bind(&upper).bind(entity_type).bind(i64::from(limit)).fetch_all(&self.pool).await?;
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
        let mut tx = self.pool.begin().await?;
        for id in &write.delete {
            sqlx::query("DELETE FROM entities WHERE id = ?1").bind(id.to_string()).execute(&mut *tx).await?;
        }
        for e in last_wins(&write.entities, |e| e.id) {
            let id = e.id.to_string();
            sqlx::query(
                "INSERT INTO entities (id, entity_type, name, aliases, popularity, attributes, content_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (id) DO UPDATE SET entity_type = excluded.entity_type, name = excluded.name,
                     aliases = excluded.aliases, popularity = excluded.popularity,
                     attributes = excluded.attributes, content_hash = excluded.content_hash",
            )
            .bind(&id)
            .bind(&e.entity_type)
            .bind(&e.name)
            .bind(json(&e.aliases))
            .bind(e.popularity)
            .bind(json(&e.attributes))
            .bind(e.content_hash())
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM entity_names WHERE entity_id = ?1").bind(&id).execute(&mut *tx).await?;
            for name in search_names(&e) {
                sqlx::query("INSERT INTO entity_names (entity_id, name) VALUES (?1, ?2)")
                    .bind(&id)
                    .bind(name)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        for (src, relation) in &write.replace_edges_from {
            sqlx::query("DELETE FROM edges WHERE src = ?1 AND relation = ?2")
                .bind(src.to_string())
                .bind(relation)
                .execute(&mut *tx)
                .await?;
        }
        for e in last_wins(&write.edges, |e| (e.src, e.relation.clone(), e.dst)) {
            sqlx::query(
                "INSERT INTO edges (src, dst, relation, attributes, weight) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (src, relation, dst) DO UPDATE SET attributes = excluded.attributes, weight = excluded.weight",
            )
            .bind(e.src.to_string())
            .bind(e.dst.to_string())
            .bind(&e.relation)
            .bind(json(&e.attributes))
            .bind(e.weight)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn stats(&self) -> Result<GraphStats, GraphError> {
        let mut stats = GraphStats::default();
        for r in sqlx::query("SELECT entity_type, count(*) AS n FROM entities GROUP BY entity_type")
            .fetch_all(&self.pool)
            .await?
        {
            stats.entities_by_type.insert(r.try_get("entity_type")?, r.try_get::<i64, _>("n")? as u64);
        }
        for r in
            sqlx::query("SELECT relation, count(*) AS n FROM edges GROUP BY relation").fetch_all(&self.pool).await?
        {
            stats.edges_by_relation.insert(r.try_get("relation")?, r.try_get::<i64, _>("n")? as u64);
        }
        Ok(stats)
    }
}
