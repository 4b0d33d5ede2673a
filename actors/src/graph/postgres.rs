//! [`PgGraph`]: the graph in PostgreSQL. Fixed SQL with bound parameters only; every read runs in a transaction
//! with `SET LOCAL statement_timeout` and under a client-side timeout that cancels it.

use std::sync::LazyLock;

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Row, Transaction, postgres::PgPoolOptions};
use uuid::Uuid;

use super::{
    Adjacent, Entity, Expand, GraphError, GraphStats, GraphStore, GraphWrite, Timeouts, schema,
    sql::{JsonColumns, entity_from, last_wins, search_names, within},
};
use crate::access::Access;

/// Rows per multi-row statement when writing.
const WRITE_CHUNK: usize = 5_000;

pub struct PgGraph {
    pool: PgPool,
    timeouts: Timeouts,
}

/// The expansion, between nodes that the access in `$7` and `$8` may read (see [`hidden_at`]).
static EXPAND_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "
SELECT node, neighbor, relation, weight, outgoing FROM (
    SELECT x.*, row_number() OVER (
        PARTITION BY x.node ORDER BY x.weight DESC, x.neighbor, x.relation, x.outgoing DESC) AS rank
    FROM (
        SELECT src AS node, dst AS neighbor, relation, weight, TRUE AS outgoing FROM edges
        WHERE $3 AND src = ANY($1) AND relation = ANY($2)
        UNION ALL
        SELECT dst, src, relation, weight, FALSE FROM edges
        WHERE $4 AND dst = ANY($1) AND relation = ANY($2)
    ) x
    WHERE (cardinality($5::text[]) = 0
       OR EXISTS (SELECT 1 FROM entities n WHERE n.id = x.neighbor AND n.entity_type = ANY($5)))
      AND NOT EXISTS (SELECT 1 FROM entities n WHERE n.id = x.neighbor AND {})
      AND NOT EXISTS (SELECT 1 FROM entities f WHERE f.id = x.node AND {})
) ranked
WHERE rank <= $6
ORDER BY node, rank",
        hidden_at("n", 7),
        hidden_at("f", 7)
    )
});

const ENTITY_COLUMNS: &str = "id, entity_type, name, aliases::text AS aliases, popularity, \
                              attributes::text AS attributes, readers::text AS readers";

/// The readers check on the entity row `alias` for the access bound as parameters 1 (reader keys, `text[]`) and 2
/// (everything): a shared entity (no readers), or one whose readers include a key (`?|`: any of the strings is an
/// element).
fn readable(alias: &str) -> String {
    readable_at(alias, 1)
}

/// [`readable`] with the keys in parameter `param` and the everything flag in `param + 1`.
fn readable_at(alias: &str, param: usize) -> String {
    format!("(${all}::boolean OR {alias}.readers = '[]'::jsonb OR {})", holds_key(alias, param), all = param + 1)
}

/// The negation of [`readable_at`], written so that a traversal asks it as `NOT EXISTS` of an owned entity: the
/// probe uses the partial index `entities_owned`, which holds owned entities only, so a graph with few of them
/// pays almost nothing per edge (a lookup of every neighbour's row doubled the `path` benchmark's time).
fn hidden_at(alias: &str, param: usize) -> String {
    format!(
        "({alias}.readers <> '[]'::jsonb AND NOT (${all}::boolean OR {}))",
        holds_key(alias, param),
        all = param + 1
    )
}

/// Whether the readers of `alias` include one of the keys bound as parameter `param` (`?|`: any of the strings is
/// an element).
fn holds_key(alias: &str, param: usize) -> String {
    format!("{alias}.readers ?| ${param}::text[]")
}

impl PgGraph {
    /// Connects, creates the `pg_trgm` extension and the schema (sqlx migrations) if needed.
    pub async fn connect(url: &str, pool_max_size: u32, timeouts: Timeouts) -> anyhow::Result<PgGraph> {
        PgGraph::open(url, pool_max_size, timeouts, true).await
    }

    /// Connects; then migrates the schema when `migrate`, else only checks that it is migrated (a serving process
    /// on a role that may read the graph and nothing more: `database.migrate = false`).
    pub async fn open(url: &str, pool_max_size: u32, timeouts: Timeouts, migrate: bool) -> anyhow::Result<PgGraph> {
        let pool = PgPoolOptions::new()
            .max_connections(pool_max_size)
            // A database that went away shows within half a query's time (sqlx retries a refused connection until
            // then), before the query's own timeout could call it slow; the graph's guard takes it from there.
            .acquire_timeout(timeouts.query / 2)
            .connect(url)
            .await
            .with_context(|| format!("cannot connect to the graph database at {}", crate::secrets::redact_url(url)))?;
        match migrate {
            true => schema::migrate(&pool).await?,
            false => schema::check(&pool).await?,
        }
        Ok(PgGraph { pool, timeouts })
    }

    /// A read transaction whose statements the server cancels after `statement_timeout`.
    async fn begin_read(&self) -> Result<Transaction<'static, Postgres>, GraphError> {
        let mut tx = self.pool.begin().await?;
        let ms = self.timeouts.statement.as_millis().max(1).to_string();
        sqlx::query("SELECT set_config('statement_timeout', $1, true)").bind(ms).execute(&mut *tx).await?;
        Ok(tx)
    }
}

fn pg_entity(row: &sqlx::postgres::PgRow) -> Result<Entity, GraphError> {
    let (aliases, attributes, readers): (String, String, String) =
        (row.try_get("aliases")?, row.try_get("attributes")?, row.try_get("readers")?);
    entity_from(
        row.try_get("id")?,
        row.try_get("entity_type")?,
        row.try_get("name")?,
        row.try_get("popularity")?,
        JsonColumns { aliases: &aliases, attributes: &attributes, readers: &readers },
    )
}

#[async_trait]
impl GraphStore for PgGraph {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn expand(&self, frontier: &[Uuid], step: &Expand) -> Result<Vec<Adjacent>, GraphError> {
        if frontier.is_empty() || step.relations.is_empty() {
            return Ok(Vec::new());
        }
        within(self.timeouts.query, async {
            let mut tx = self.begin_read().await?;
            let rows = sqlx::query(&EXPAND_SQL)
                .bind(frontier)
                .bind(&step.relations)
                .bind(step.direction.follows_out())
                .bind(step.direction.follows_in())
                .bind(&step.node_types)
                .bind(i64::from(step.fanout))
                .bind(step.readable.keys())
                .bind(step.readable.is_everything())
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            rows.iter()
                .map(|r| {
                    Ok(Adjacent {
                        node: r.try_get("node")?,
                        neighbor: r.try_get("neighbor")?,
                        relation: r.try_get("relation")?,
                        weight: r.try_get("weight")?,
                        outgoing: r.try_get("outgoing")?,
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
            let mut tx = self.begin_read().await?;
            let sql = format!("SELECT {ENTITY_COLUMNS} FROM entities e WHERE {} AND id = ANY($3)", readable("e"));
            let rows = sqlx::query(&sql)
                .bind(access.keys())
                .bind(access.is_everything())
                .bind(ids)
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            rows.iter().map(pg_entity).collect()
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
        let prefix = format!("{}%", text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        within(self.timeouts.query, async {
            let mut tx = self.begin_read().await?;
            let sql = format!(
                "SELECT {ENTITY_COLUMNS} FROM entities e
                 WHERE id IN (SELECT entity_id FROM entity_names WHERE name LIKE $3 OR name % $4)
                   AND ($5::text IS NULL OR entity_type = $5) AND {}
                 ORDER BY popularity DESC, name, id
                 LIMIT $6",
                readable("e")
            );
            let rows = sqlx::query(&sql)
                .bind(access.keys())
                .bind(access.is_everything())
                .bind(&prefix)
                .bind(&text)
                .bind(entity_type)
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            rows.iter().map(pg_entity).collect()
        })
        .await
    }

    async fn all_names(&self) -> Result<Vec<(Uuid, String)>, GraphError> {
        let rows = sqlx::query("SELECT id, name, aliases::text AS aliases FROM entities").fetch_all(&self.pool).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let id: Uuid = r.try_get("id")?;
            out.push((id, r.try_get("name")?));
            let aliases: Vec<String> = serde_json::from_str(&r.try_get::<String, _>("aliases")?).unwrap_or_default();
            out.extend(aliases.into_iter().map(|a| (id, a)));
        }
        Ok(out)
    }

    async fn content_hashes(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, GraphError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(WRITE_CHUNK) {
            let rows = sqlx::query("SELECT id, content_hash FROM entities WHERE id = ANY($1)")
                .bind(chunk)
                .fetch_all(&self.pool)
                .await?;
            for r in rows {
                out.push((r.try_get("id")?, r.try_get("content_hash")?));
            }
        }
        Ok(out)
    }

    async fn write(&self, write: &GraphWrite) -> Result<(), GraphError> {
        let mut tx = self.pool.begin().await?;
        for chunk in write.delete.chunks(WRITE_CHUNK) {
            sqlx::query("DELETE FROM entities WHERE id = ANY($1)").bind(chunk).execute(&mut *tx).await?;
        }
        for chunk in last_wins(&write.entities, |e| e.id).chunks(WRITE_CHUNK) {
            let ids: Vec<Uuid> = chunk.iter().map(|e| e.id).collect();
            let types: Vec<&str> = chunk.iter().map(|e| e.entity_type.as_str()).collect();
            let names: Vec<&str> = chunk.iter().map(|e| e.name.as_str()).collect();
            let aliases: Vec<String> =
                chunk.iter().map(|e| serde_json::to_string(&e.aliases).unwrap_or_default()).collect();
            let popularity: Vec<f64> = chunk.iter().map(|e| e.popularity).collect();
            let attributes: Vec<String> =
                chunk.iter().map(|e| serde_json::to_string(&e.attributes).unwrap_or_default()).collect();
            let hashes: Vec<String> = chunk.iter().map(Entity::content_hash).collect();
            let readers: Vec<String> =
                chunk.iter().map(|e| serde_json::to_string(&e.readers).unwrap_or_default()).collect();
            sqlx::query(
                "INSERT INTO entities (id, entity_type, name, aliases, popularity, attributes, content_hash, readers)
                 SELECT id, entity_type, name, aliases::jsonb, popularity, attributes::jsonb, content_hash,
                        readers::jsonb
                 FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[],
                             $8::text[])
                      AS u(id, entity_type, name, aliases, popularity, attributes, content_hash, readers)
                 ON CONFLICT (id) DO UPDATE SET entity_type = EXCLUDED.entity_type, name = EXCLUDED.name,
                     aliases = EXCLUDED.aliases, popularity = EXCLUDED.popularity,
                     attributes = EXCLUDED.attributes, content_hash = EXCLUDED.content_hash,
                     readers = EXCLUDED.readers",
            )
            .bind(&ids)
            .bind(&types)
            .bind(&names)
            .bind(&aliases)
            .bind(&popularity)
            .bind(&attributes)
            .bind(&hashes)
            .bind(&readers)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM entity_names WHERE entity_id = ANY($1)").bind(&ids).execute(&mut *tx).await?;
            let (owners, lowered): (Vec<Uuid>, Vec<String>) =
                chunk.iter().flat_map(|e| search_names(e).into_iter().map(move |n| (e.id, n))).unzip();
            sqlx::query("INSERT INTO entity_names (entity_id, name) SELECT * FROM UNNEST($1::uuid[], $2::text[])")
                .bind(&owners)
                .bind(&lowered)
                .execute(&mut *tx)
                .await?;
        }
        for chunk in write.replace_edges_from.chunks(WRITE_CHUNK) {
            let (srcs, relations): (Vec<Uuid>, Vec<&str>) = chunk.iter().map(|(s, r)| (*s, r.as_str())).unzip();
            sqlx::query(
                "DELETE FROM edges e USING UNNEST($1::uuid[], $2::text[]) AS r(src, relation)
                 WHERE e.src = r.src AND e.relation = r.relation",
            )
            .bind(&srcs)
            .bind(&relations)
            .execute(&mut *tx)
            .await?;
        }
        for chunk in last_wins(&write.edges, |e| (e.src, e.relation.clone(), e.dst)).chunks(WRITE_CHUNK) {
            let srcs: Vec<Uuid> = chunk.iter().map(|e| e.src).collect();
            let dsts: Vec<Uuid> = chunk.iter().map(|e| e.dst).collect();
            let relations: Vec<&str> = chunk.iter().map(|e| e.relation.as_str()).collect();
            let attributes: Vec<String> =
                chunk.iter().map(|e| serde_json::to_string(&e.attributes).unwrap_or_default()).collect();
            let weights: Vec<f64> = chunk.iter().map(|e| e.weight).collect();
            sqlx::query(
                "INSERT INTO edges (src, dst, relation, attributes, weight)
                 SELECT src, dst, relation, attributes::jsonb, weight
                 FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::float8[])
                      AS u(src, dst, relation, attributes, weight)
                 ON CONFLICT (src, relation, dst) DO UPDATE SET attributes = EXCLUDED.attributes, weight = EXCLUDED.weight",
            )
            .bind(&srcs)
            .bind(&dsts)
            .bind(&relations)
            .bind(&attributes)
            .bind(&weights)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn stats(&self, access: &Access) -> Result<GraphStats, GraphError> {
        count_stats!(&self.pool, readable, access.keys(), access.is_everything())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn direction_decides_which_halves_of_the_expansion_run() {
        use super::super::Direction;
        assert!(Direction::Out.follows_out() && !Direction::Out.follows_in());
        assert!(Direction::Both.follows_out() && Direction::Both.follows_in());
    }
}
