//! SQL injection against the graph on PostgreSQL: 60 hostile strings as entity ids, names, aliases and
//! attributes (ingested with `ingest graph`'s code), as typeahead prefixes and entity types (the `search` lane's
//! query), and as graph intents' filters, edge types and document ids (the graph stage's validation and
//! traversal). The server of the test's own logs every statement (`log_statement = all`); afterwards no logged
//! statement carries any of the strings (they appear only as bound parameter values), every string comes back
//! byte for byte, and every table, including a canary the strings try to drop, is intact.

use std::{collections::BTreeMap, io::Write};

use sleuth_actors::{
    access::Access,
    config::Config,
    graph, ingest,
    stages::graph::{check, execute},
};
use sleuth_messages::{EntityRef, EntityType, GraphIntent, GraphLimits, GraphQueryType, JsonMap};
use sleuth_tests::own_postgres::OwnPostgres;
use sqlx::{Executor, Row, postgres::PgPoolOptions};

/// Classic payloads: quote breaking, stacked statements, comments, UNION, boolean and time-based blind
/// injection, dollar quoting, LIKE wildcards, escapes, encodings and PostgreSQL specifics.
const PAYLOADS: &[&str] = &[
    "'; DROP TABLE canary; --",
    "' OR '1'='1",
    "' OR 1=1 --",
    "\" OR \"\"=\"",
    "') OR ('1'='1",
    "'; DELETE FROM entities; --",
    "'; TRUNCATE edges CASCADE; --",
    "1; DROP TABLE entity_names",
    "' UNION SELECT id, name FROM entities --",
    "' UNION ALL SELECT NULL, NULL, NULL --",
    "'||pg_sleep(5)||'",
    "'; SELECT pg_sleep(5); --",
    "1' AND (SELECT COUNT(*) FROM pg_user) > 0 --",
    "$$; DROP TABLE canary; $$",
    "$tag$ DROP TABLE canary $tag$",
    "E'\\x27; DROP TABLE canary; --'",
    "\\'; DROP TABLE canary; --",
    "%' OR '%'='",
    "%",
    "_",
    "\\",
    "\\%",
    "a%b_c\\d",
    "'/**/OR/**/1=1--",
    "admin'--",
    "' OR 'x'='x'; UPDATE entities SET name='pwned'; --",
    "'; INSERT INTO canary VALUES ('pwned'); --",
    "'; ALTER TABLE entities DROP COLUMN name; --",
    "'; CREATE TABLE pwned (x int); --",
    "'; COPY canary TO '/tmp/pwned'; --",
    "'; GRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC; --",
    "' AND 1=CAST((SELECT version()) AS int) --",
    "';SET statement_timeout=0;--",
    "'; COMMIT; DROP TABLE canary; BEGIN; --",
    "'::text; DROP TABLE canary; --",
    "ʼ OR 1=1 --",
    "＇ OR １=１ --",
    "' OR 1=1 \u{2014}",
    "line\nbreak'; DROP TABLE canary; --",
    "tab\t'; DROP TABLE canary; --",
    "'; EXECUTE 'DROP TABLE canary'; --",
    "'; DO $$ BEGIN EXECUTE 'DROP TABLE canary'; END $$; --",
    "1) OR (1=1",
    "')) OR 1=1 --",
    "' HAVING 1=1 --",
    "' GROUP BY name HAVING 1=1 --",
    "' ORDER BY 1 --",
    "<script>alert(1)</script>",
    "${jndi:ldap://x/a}",
    "{{7*7}}",
    "' OR EXISTS(SELECT 1 FROM canary) --",
    "0x27204f5220313d31",
    "'; LISTEN x; NOTIFY x, 'pwned'; --",
    "' || (SELECT string_agg(name, ',') FROM entities) || '",
    "'; VACUUM FULL; --",
    "'; LOCK TABLE entities IN ACCESS EXCLUSIVE MODE; --",
    "' AND SUBSTRING(current_user,1,1)='p",
    "\u{0}'; DROP TABLE canary; --",
    "🙂'; DROP TABLE canary; --",
    "'; RESET ALL; --",
];

/// Payloads with their index in [`PAYLOADS`].
type Indexed = Vec<(usize, &'static str)>;

/// A marker per payload, so the log can be searched for each one unambiguously.
fn marked(i: usize, payload: &str) -> String {
    format!("zqx{i:02}q {payload}")
}

fn line(value: serde_json::Value) -> String {
    format!("{value}\n")
}

async fn tables(pool: &sqlx::PgPool) -> BTreeMap<String, i64> {
    let names: Vec<String> = sqlx::query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut out = BTreeMap::new();
    for name in names {
        let n: i64 = sqlx::query(&format!("SELECT COUNT(*) FROM \"{name}\"")).fetch_one(pool).await.unwrap().get(0);
        out.insert(name, n);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_strings_reach_postgres_only_as_bound_values_and_every_table_survives() {
    assert!(PAYLOADS.len() >= 50, "{} payloads", PAYLOADS.len());
    let pg = OwnPostgres::start_with("-c log_statement=all");
    let mut config = Config::default();
    config.database.url = Some(pg.url.clone());
    let store = graph::open(&config).await.expect("the graph on the test's own server");
    let admin = PgPoolOptions::new().max_connections(1).connect(&pg.url).await.unwrap();
    admin.execute("CREATE TABLE canary (note text); INSERT INTO canary VALUES ('alive')").await.unwrap();

    // A NUL cannot be stored in PostgreSQL text: that payload is refused at ingestion as a whole (all or nothing),
    // so it is ingested on its own and must fail cleanly.
    let (storable, nul): (Indexed, Indexed) =
        PAYLOADS.iter().copied().enumerate().partition(|(_, p)| !p.contains('\u{0}'));

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
        path
    };
    let mut entities = String::new();
    let mut edges = String::new();
    let mut previous: Option<String> = None;
    for (i, p) in &storable {
        let name = marked(*i, p);
        entities += &line(serde_json::json!({
            "id": name, "type": "character", "name": name, "aliases": [p, format!("alias {name}")],
            "attributes": {"description": name, "note": p}
        }));
        if let Some(src) = previous.replace(name.clone()) {
            edges +=
                &line(serde_json::json!({"src": src, "dst": name, "relation": "co_appears", "attributes": {"why": p}}));
        }
    }
    let (entities_path, edges_path) = (write("entities.jsonl", &entities), write("edges.jsonl", &edges));
    let summary = ingest::graph::ingest(store.as_ref(), None, &entities_path, &edges_path, &config.graph, false)
        .await
        .expect("hostile names are just names");
    eprintln!("ingested: {summary}");
    for (i, p) in &nul {
        let name = marked(*i, p);
        let one = write("nul.jsonl", &line(serde_json::json!({"id": "nul", "type": "character", "name": name})));
        let empty = write("none.jsonl", "");
        let err = ingest::graph::ingest(store.as_ref(), None, &one, &empty, &config.graph, false).await;
        assert!(err.is_err(), "a NUL in text cannot be stored; it must be refused, not half-written");
    }
    let after_ingest = tables(&admin).await;

    for (i, p) in &storable {
        let name = marked(*i, p);
        // Typeahead: the exact name comes back byte for byte, with its aliases.
        let found = store.search(&name, None, 100, &Access::shared()).await.expect("search");
        let hit = found.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("{name:?} not found: {found:?}"));
        assert!(hit.aliases.iter().any(|a| a == p), "{:?}", hit.aliases);
        assert_eq!(hit.attributes.get("note").and_then(|v| v.as_str()), Some(*p));
        // The payload itself as a prefix and as an entity type.
        store.search(p, None, 10, &Access::shared()).await.expect("a hostile prefix is a prefix");
        store
            .search(&name, Some(p), 10, &Access::shared())
            .await
            .expect("a hostile type is a type that matches nothing");
        // Graph intents: hostile filters and edge types are refused by validation, before any query.
        let mut filters = JsonMap::new();
        filters.insert("entity_type".into(), serde_json::json!(p));
        let mut intent = GraphIntent {
            rationale: String::new(),
            query_type: GraphQueryType::Neighbors,
            start: EntityRef { entity_type: EntityType::DOCUMENT, id: name.clone() },
            end: None,
            max_hops: 2,
            edge_types: vec![],
            filters,
            limits: GraphLimits::default(),
        };
        assert!(check(&config.graph, &intent, &Access::shared()).is_err(), "entity_type filter {p:?} must be refused");
        intent.filters = JsonMap::new();
        intent.filters.insert("direction".into(), serde_json::json!(p));
        assert!(check(&config.graph, &intent, &Access::shared()).is_err(), "direction {p:?} must be refused");
        intent.filters = JsonMap::new();
        intent.edge_types = vec![p.to_string()];
        assert!(check(&config.graph, &intent, &Access::shared()).is_err(), "edge type {p:?} must be refused");
        // A hostile document id is hashed into a node id and traversed: nothing is there.
        intent.edge_types = vec![];
        let result = execute(store.as_ref(), &config.graph, &intent, &Access::shared())
            .await
            .ok()
            .expect("a traversal from nowhere");
        assert_eq!(result.count, 0);
    }

    // Every table is intact: the canary, and exactly what ingestion wrote.
    assert_eq!(tables(&admin).await, after_ingest);
    let canary: Vec<String> =
        sqlx::query("SELECT note FROM canary").fetch_all(&admin).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(canary, vec!["alive".to_string()]);
    assert_eq!(after_ingest.get("entities"), Some(&(storable.len() as i64)));
    assert_eq!(after_ingest.get("edges"), Some(&(storable.len() as i64 - 1)));
    store.close().await;
    admin.close().await;

    // The statement log: a new entry starts with a timestamp, continuation lines with a tab. The statements
    // ("statement:", "execute …:", and the "STATEMENT:" echoed after an error) never carry a payload's marker;
    // the parameters ("DETAIL:  parameters:") do.
    let log = pg.log();
    let mut entries: Vec<String> = Vec::new();
    for l in log.lines() {
        match entries.last_mut() {
            Some(last) if !l.starts_with(|c: char| c.is_ascii_digit()) => {
                last.push('\n');
                last.push_str(l);
            }
            _ => entries.push(l.to_string()),
        }
    }
    let statements: Vec<&String> = entries
        .iter()
        .filter(|e| e.contains("LOG:  statement:") || e.contains("LOG:  execute") || e.contains("STATEMENT:"))
        .collect();
    let parameters = entries.iter().filter(|e| e.contains("DETAIL:  parameters:")).count();
    assert!(
        statements.len() > 100 && parameters > 100,
        "{} statements, {parameters} with parameters",
        statements.len()
    );
    for (i, _) in PAYLOADS.iter().enumerate() {
        let marker = format!("zqx{i:02}q");
        if let Some(s) = statements.iter().find(|s| s.contains(&marker)) {
            panic!("payload {i} reached a statement's text:\n{s}");
        }
        assert!(
            !storable.iter().any(|(j, _)| *j == i)
                || entries.iter().any(|e| e.contains("parameters:") && e.contains(&marker)),
            "payload {i} never went to the server as a parameter: the check above proves nothing for it"
        );
    }
    eprintln!(
        "{} payloads; {} statements logged, {parameters} with bound parameters; none carried a payload",
        PAYLOADS.len(),
        statements.len()
    );
}
