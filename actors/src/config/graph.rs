//! The `database` and `graph` sections: where the entity graph lives, and the graph stage's vocabulary and caps.

use serde::{Deserialize, Serialize};

/// Where the entity graph lives.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `postgres://…`: the graph lives in PostgreSQL. `None`: SQLite at `<data_dir>/graph.sqlite`.
    pub url: Option<String>,
    pub pool_max_size: u32,
    /// Whether opening the PostgreSQL graph runs its schema migrations (which need the schema owner's rights). A
    /// serving process on a read-only role sets it false: it then only checks that the schema is migrated, and
    /// `sleuth setup` migrates it. SQLite, one process's file, is always migrated.
    pub migrate: bool,
    /// A role `sleuth setup` lets read the graph's tables (and nothing else): the serving processes' own.
    pub reader_role: Option<String>,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig { url: None, pool_max_size: 8, migrate: true, reader_role: None }
    }
}

impl DatabaseConfig {
    /// `reader_role` is a plain PostgreSQL identifier: it is written into `GRANT` statements, which bind no
    /// parameters.
    pub fn check(&self) -> Result<(), String> {
        if let Some(role) = &self.reader_role {
            let first = role.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_');
            let rest = role.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !first || !rest || role.len() > 63 {
                return Err(format!(
                    "database.reader_role: {role:?} must be a lower-case PostgreSQL name (a-z, 0-9, _; at most 63)"
                ));
            }
        }
        Ok(())
    }
}

/// The graph stage's vocabulary and hard caps, enforced whatever an intent asks for (seed 000 §3.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphConfig {
    /// The relations an edge may have and an intent may traverse. Anything else is refused.
    pub relations: Vec<String>,
    pub max_hops: u32,
    pub max_fanout_per_hop: u32,
    pub max_results: u32,
    /// Server-side `statement_timeout` per query (Postgres).
    pub statement_timeout_ms: u64,
    /// Client-side timeout per primitive; the query is cancelled when it fires.
    pub query_timeout_ms: u64,
    /// Record `mentions` edges between documents when ingesting them.
    pub link_mentions: bool,
    /// Shortest document title or name that counts as a mention, in characters.
    pub min_mention_chars: usize,
    /// Load the bundled demo graph (anime, manga, characters) when the embedded graph and entity collection are
    /// empty. Only with `retrieval.demo_corpus`, the in-process index and SQLite: never into a database you named.
    pub demo_graph: bool,
    /// Let the deterministic planner resolve the entities a question names and traverse the graph between them.
    pub resolve_entities: bool,
    /// The graph's entity types ("city", "person"), lowercase identifiers, known to every stage from the start.
    /// The types found in the graph are added to them: the processes that open it (and `sleuth ingest graph`)
    /// announce them in the `sleuth_meta` KV bucket, which the other processes follow. When not empty,
    /// `sleuth ingest graph` refuses entities of other types.
    pub entity_types: Vec<String>,
}

impl Default for GraphConfig {
    fn default() -> Self {
        GraphConfig {
            relations: [
                "prequel",
                "sequel",
                "spinoff",
                "adapted_from",
                "same_studio",
                "shared_staff",
                "co_appears",
                "appears_in",
                "shares_franchise",
                "mentions",
            ]
            .map(String::from)
            .to_vec(),
            max_hops: 4,
            max_fanout_per_hop: 100,
            max_results: 100,
            statement_timeout_ms: 2_000,
            query_timeout_ms: 3_000,
            link_mentions: true,
            min_mention_chars: 4,
            demo_graph: true,
            resolve_entities: true,
            entity_types: Vec::new(),
        }
    }
}
