//! The entity graph on real PostgreSQL and SQLite: both backends answer every primitive identically on random
//! graphs with random owners and requesters (property test), a traversal never steps on an entity its requester
//! may not read, caps are clamped whatever the intent asks, a statement that waits too long is
//! cancelled (server-side `statement_timeout` and the client-side timeout), and `ingest graph` is all or nothing
//! and idempotent. Needs `SLEUTH_TEST_DATABASE_URL` (set by `.ci/run`).
// Proptest cases are tuples of query parameters, and `intent` takes them one by one.
#![allow(clippy::too_many_arguments, clippy::type_complexity)]

use std::time::Duration;

use proptest::{
    prelude::*,
    test_runner::{Config as ProptestConfig, TestRunner},
};
use sleuth_actors::{
    access::Access,
    config::GraphConfig,
    graph::{
        Direction, Edge, Entity, Expand, GraphError, GraphStore, GraphWrite, Timeouts, postgres::PgGraph,
        sqlite::SqliteGraph,
    },
    ingest,
    stages::graph::{Failure, execute},
};
use sleuth_messages::{EntityRef, EntityType, GraphIntent, GraphLimits, GraphQueryType, GraphResult, JsonMap};
use sleuth_tests::postgres::test_database;
use uuid::Uuid;

const RELATIONS: [&str; 3] = ["sequel", "co_appears", "appears_in"];

fn node(i: usize) -> Uuid {
    Uuid::from_u128(0x1000 + i as u128)
}

fn character(i: usize) -> Entity {
    let mut attributes = JsonMap::new();
    attributes.insert("group".into(), (i % 3).into());
    Entity {
        id: node(i),
        entity_type: "character".into(),
        name: format!("Character {i}"),
        aliases: vec![],
        popularity: (i % 5) as f64,
        attributes,
        readers: Vec::new(),
    }
}

fn edge(src: usize, dst: usize, relation: &str, weight: f64) -> Edge {
    Edge { src: node(src), dst: node(dst), relation: relation.into(), attributes: JsonMap::new(), weight }
}

fn intent(
    kind: GraphQueryType,
    start: usize,
    end: usize,
    hops: u32,
    fanout: u32,
    results: u32,
    relations: &[&str],
    direction: Direction,
) -> GraphIntent {
    let mut filters = JsonMap::new();
    filters.insert("direction".into(), serde_json::to_value(direction).unwrap());
    GraphIntent {
        rationale: "test".into(),
        query_type: kind,
        start: EntityRef { entity_type: EntityType::parse("character").unwrap(), id: node(start).to_string() },
        end: Some(EntityRef { entity_type: EntityType::parse("character").unwrap(), id: node(end).to_string() }),
        max_hops: hops,
        edge_types: relations.iter().map(|r| r.to_string()).collect(),
        filters,
        limits: GraphLimits { max_results: results, max_fanout_per_hop: fanout },
    }
}

/// The result without the field that names the backend.
fn comparable(mut result: GraphResult) -> GraphResult {
    result.meta.remove("backend");
    result
}

async fn run(store: &dyn GraphStore, config: &GraphConfig, intent: &GraphIntent) -> GraphResult {
    run_as(store, config, intent, &Access::shared()).await
}

async fn run_as(store: &dyn GraphStore, config: &GraphConfig, intent: &GraphIntent, access: &Access) -> GraphResult {
    match execute(store, config, intent, access).await {
        Ok(result) => comparable(result),
        Err(Failure::Invalid(message)) => panic!("valid intent refused: {message}"),
        Err(Failure::Graph(e)) => panic!("{} failed: {e}", store.backend()),
    }
}

#[derive(Debug, Clone)]
struct Case {
    nodes: usize,
    /// Each node's owner: see [`owned`].
    owners: Vec<u8>,
    edges: Vec<(usize, usize, usize, u8)>,
    /// The last field is the requester: see [`requester`].
    queries: Vec<(u8, usize, usize, u32, u32, u32, u8, u8, u8)>,
}

fn cases() -> impl Strategy<Value = Case> {
    (2usize..24).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec(0..4u8, n),
            prop::collection::vec((0..n, 0..n, 0..3usize, 0..3u8), 0..70),
            prop::collection::vec((0..4u8, 0..n, 0..n, 1..5u32, 1..5u32, 1..8u32, 1..8u8, 0..3u8, 0..3u8), 1..6),
        )
            .prop_map(|(nodes, owners, edges, queries)| Case { nodes, owners, edges, queries })
    })
}

/// Readers of an entity: shared, ALPHA's, BETA's, or ALPHA's given to the group `g`.
fn owned(mut entity: Entity, owner: u8) -> Entity {
    let (tenant, groups): (Option<&str>, Vec<String>) = match owner {
        0 => (None, vec![]),
        1 => (Some("alpha"), vec![]),
        2 => (Some("beta"), vec![]),
        _ => (Some("alpha"), vec!["g".into()]),
    };
    entity.readers = sleuth_actors::access::Ownership::new(tenant, &groups).unwrap().readers();
    entity
}

/// Who asks: nobody's tenant (shared only), ALPHA, or BETA as a member of the group `g`.
fn requester(who: u8) -> Access {
    let groups = std::collections::BTreeMap::from([("g".to_string(), vec!["beta".to_string()])]);
    match who {
        0 => Access::shared(),
        1 => Access::of(Some(&sleuth_messages::Principal::tenant("ALPHA")), &groups),
        _ => Access::of(Some(&sleuth_messages::Principal::tenant("BETA")), &groups),
    }
}

#[test]
fn sqlite_and_postgres_answer_every_primitive_alike_on_random_graphs() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let db = rt.block_on(test_database());
    let pg = rt.block_on(PgGraph::connect(&db.url, 2, Timeouts::default())).expect("postgres graph");
    let lite = rt.block_on(SqliteGraph::in_memory(Timeouts::default())).expect("sqlite graph");
    let config = GraphConfig::default();
    let mut runner =
        TestRunner::new(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() });
    runner
        .run(&cases(), |case| {
            rt.block_on(async {
                let all: Vec<Uuid> = (0..24).map(node).collect();
                let write = GraphWrite {
                    entities: (0..case.nodes).map(|i| owned(character(i), case.owners[i])).collect(),
                    edges: case
                        .edges
                        .iter()
                        .filter(|(s, d, _, _)| s != d)
                        .map(|(s, d, r, w)| edge(*s, *d, RELATIONS[*r], [0.5, 1.0, 2.0][*w as usize]))
                        .collect(),
                    delete: all,
                    ..Default::default()
                };
                for store in [&pg as &dyn GraphStore, &lite] {
                    store.write(&write).await.expect("write");
                }
                for (kind, start, end, hops, fanout, results, mask, direction, who) in &case.queries {
                    let kind = [
                        GraphQueryType::Neighbors,
                        GraphQueryType::KHop,
                        GraphQueryType::Path,
                        GraphQueryType::Compare,
                    ][*kind as usize];
                    let relations: Vec<&str> =
                        RELATIONS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, r)| *r).collect();
                    let direction = [Direction::Out, Direction::In, Direction::Both][*direction as usize];
                    let q = intent(kind, *start, *end, *hops, *fanout, *results, &relations, direction);
                    let access = requester(*who);
                    let (a, b) = (run_as(&pg, &config, &q, &access).await, run_as(&lite, &config, &q, &access).await);
                    // What came back is readable by the requester, whatever the backend.
                    for reference in &a.node_ids {
                        let i = (0..case.nodes).find(|i| node(*i).to_string() == reference.id).unwrap();
                        let readers = owned(character(i), case.owners[i]).readers;
                        prop_assert!(access.may_read(&readers), "{:?} reached {} ({:?})", access, i, readers);
                    }
                    prop_assert_eq!(a, b, "{:?} as {:?} on {:?}", q, access, case.edges);
                }
                Ok(())
            })
        })
        .unwrap();
}

/// The nodes (of 0 to 3) that three `sequel` hops from node 0 reach for `access`, sorted.
async fn reach(store: &dyn GraphStore, access: &Access) -> Vec<usize> {
    let q = intent(GraphQueryType::KHop, 0, 0, 3, 10, 10, &["sequel"], Direction::Both);
    let ids = run_as(store, &GraphConfig::default(), &q, access).await.node_ids;
    let mut found: Vec<usize> = ids.iter().map(|r| (0..4).find(|i| node(*i).to_string() == r.id).unwrap()).collect();
    found.sort();
    found
}

#[tokio::test]
async fn a_traversal_never_steps_on_an_entity_its_requester_may_not_read() {
    let db = test_database().await;
    let pg = PgGraph::connect(&db.url, 2, Timeouts::default()).await.unwrap();
    let lite = SqliteGraph::in_memory(Timeouts::default()).await.unwrap();
    // 0 (shared) - 1 (ALPHA's) - 2 (shared), and 0 - 3 (ALPHA's, given to the group g of BETA).
    let write = GraphWrite {
        entities: vec![owned(character(0), 0), owned(character(1), 1), owned(character(2), 0), owned(character(3), 3)],
        edges: vec![edge(0, 1, "sequel", 1.0), edge(1, 2, "sequel", 1.0), edge(0, 3, "sequel", 2.0)],
        ..Default::default()
    };
    let config = GraphConfig::default();
    let gamma = Access::of(Some(&sleuth_messages::Principal::tenant("GAMMA")), &Default::default());
    let (alpha, beta_in_g) = (requester(1), requester(2));
    for store in [&pg as &dyn GraphStore, &lite] {
        store.write(&write).await.unwrap();
        let backend = store.backend();
        assert_eq!(reach(store, &alpha).await, [1, 2, 3], "{backend}: the owner walks through its own entities");
        assert_eq!(reach(store, &beta_in_g).await, [3], "{backend}: a group member reads what the group was given");
        assert!(reach(store, &gamma).await.is_empty(), "{backend}: 2 is shared but only reachable through ALPHA's 1");
        assert!(reach(store, &Access::shared()).await.is_empty(), "{backend}");
        let path = intent(GraphQueryType::Path, 0, 2, 4, 10, 10, &[], Direction::Both);
        assert_eq!(run_as(store, &config, &path, &alpha).await.paths.len(), 1, "{backend}");
        assert!(run_as(store, &config, &path, &gamma).await.paths.is_empty(), "{backend}: no path through 1");
        // A path from a node to itself takes no step, and still does not confirm one it may not read.
        let to_itself = intent(GraphQueryType::Path, 1, 1, 4, 10, 10, &[], Direction::Both);
        assert_eq!(run_as(store, &config, &to_itself, &alpha).await.paths.len(), 1, "{backend}");
        let result = run_as(store, &config, &to_itself, &gamma).await;
        assert!(result.paths.is_empty() && result.node_ids.is_empty(), "{backend}: {result:?}");
        // From a node it may not read, nothing: not its neighbours, not its name.
        let from_hidden = intent(GraphQueryType::Neighbors, 1, 1, 1, 10, 10, &[], Direction::Both);
        let result = run_as(store, &config, &from_hidden, &gamma).await;
        assert!(result.node_ids.is_empty() && !result.summary.contains("Character 1"), "{backend}: {result:?}");
        assert!(store.entities(&[node(1), node(3)], &gamma).await.unwrap().is_empty(), "{backend}: hydrate");
        assert_eq!(store.entities(&[node(1), node(3)], &alpha).await.unwrap().len(), 2, "{backend}");
        // Typeahead (Postgres also finds similar names, such as the shared "Character 0").
        let typed = |found: Vec<Entity>| {
            let mut ids: Vec<Uuid> = found.iter().map(|e| e.id).collect();
            ids.sort();
            ids
        };
        let found = typed(store.search("character", None, 10, &gamma).await.unwrap());
        assert_eq!(found, [node(0), node(2)], "{backend}: typeahead finds the shared ones only");
        let found = typed(store.search("character", None, 10, &alpha).await.unwrap());
        assert_eq!(found.len(), 4, "{backend}");
        let counted = |stats: sleuth_actors::graph::GraphStats| {
            (stats.entities_by_type.values().sum::<u64>(), stats.edges_by_relation.values().sum::<u64>())
        };
        assert_eq!(counted(store.stats(&gamma).await.unwrap()), (2, 0), "{backend}: stats count what may be read");
        assert_eq!(counted(store.stats(&alpha).await.unwrap()), (4, 3), "{backend}");
        assert_eq!(counted(store.stats(&Access::everything()).await.unwrap()), (4, 3), "{backend}");
    }
}

#[tokio::test]
async fn caps_are_clamped_whatever_the_intent_asks() {
    let db = test_database().await;
    let pg = PgGraph::connect(&db.url, 2, Timeouts::default()).await.unwrap();
    // A hub (0) with 300 spokes, and a chain 301 → 302 → … → 309.
    let mut write = GraphWrite { entities: (0..310).map(character).collect(), ..Default::default() };
    write.edges.extend((1..=300).map(|i| edge(0, i, "co_appears", 1.0)));
    write.edges.extend((301..309).map(|i| edge(i, i + 1, "sequel", 1.0)));
    pg.write(&write).await.unwrap();
    let config = GraphConfig { max_hops: 3, max_fanout_per_hop: 20, max_results: 25, ..GraphConfig::default() };

    let greedy = intent(GraphQueryType::Neighbors, 0, 0, 99, 10_000, 10_000, &[], Direction::Both);
    let result = run(&pg, &config, &greedy).await;
    assert_eq!(result.node_ids.len(), 25, "max_results is clamped to the server's 25");
    assert_eq!(result.meta["caps"]["max_hops"], 3);

    let far = intent(GraphQueryType::KHop, 301, 0, 99, 10_000, 10_000, &["sequel"], Direction::Out);
    let result = run(&pg, &config, &far).await;
    assert_eq!(result.node_ids.len(), 3, "max_hops is clamped to 3: {}", result.summary);

    // Through the hub: found despite its fan-out, within the caps.
    let across = intent(GraphQueryType::Path, 7, 250, 4, 10_000, 10, &[], Direction::Both);
    let result = run(&pg, &config, &across).await;
    assert_eq!(result.paths.len(), 1, "{}", result.summary);
    assert_eq!(result.paths[0].nodes.len(), 3);

    let none = intent(GraphQueryType::Path, 301, 0, 4, 10, 10, &[], Direction::Both);
    let result = run(&pg, &config, &none).await;
    assert_eq!((result.count, result.paths.len()), (0, 0), "no path is a valid, empty result: {}", result.summary);

    let shared = Access::shared();
    let mut bad = greedy.clone();
    bad.edge_types = vec!["drop table edges".into()];
    assert!(
        matches!(execute(&pg, &config, &bad, &shared).await, Err(Failure::Invalid(m)) if m.contains("not allowed"))
    );
    let mut bad = greedy;
    bad.start.id = "luffy".into();
    assert!(matches!(execute(&pg, &config, &bad, &shared).await, Err(Failure::Invalid(m)) if m.contains("not a UUID")));
}

async fn locked_expand(timeouts: Timeouts) -> Result<(), GraphError> {
    let db = test_database().await;
    let pg = PgGraph::connect(&db.url, 2, timeouts).await.unwrap();
    pg.write(&GraphWrite {
        entities: vec![character(0), character(1)],
        edges: vec![edge(0, 1, "sequel", 1.0)],
        ..Default::default()
    })
    .await
    .unwrap();
    let locker = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&db.url).await.unwrap();
    let mut tx = locker.begin().await.unwrap();
    sqlx::query("LOCK TABLE edges IN ACCESS EXCLUSIVE MODE").execute(&mut *tx).await.unwrap();
    let step = Expand {
        relations: vec!["sequel".into()],
        direction: Direction::Both,
        node_types: vec![],
        fanout: 10,
        readable: Access::shared(),
    };
    let blocked = pg.expand(&[node(0)], &step).await.map(|_| ());
    tx.rollback().await.unwrap();
    // Once the lock is gone, the same pool answers again.
    let after = pg.expand(&[node(0)], &step).await.expect("the pool recovers after a cancelled query");
    assert_eq!(after.len(), 1);
    blocked
}

#[tokio::test]
async fn the_server_cancels_a_statement_past_its_timeout() {
    let result =
        locked_expand(Timeouts { statement: Duration::from_millis(300), query: Duration::from_secs(30) }).await;
    assert!(matches!(result, Err(GraphError::Timeout(_))), "{result:?}");
}

#[tokio::test]
async fn the_client_cancels_a_query_past_its_timeout() {
    let result =
        locked_expand(Timeouts { statement: Duration::from_secs(30), query: Duration::from_millis(300) }).await;
    assert!(matches!(result, Err(GraphError::Timeout(d)) if d == Duration::from_millis(300)), "{result:?}");
}

#[tokio::test]
async fn ingest_graph_is_all_or_nothing_and_idempotent() {
    let db = test_database().await;
    let pg = PgGraph::connect(&db.url, 2, Timeouts::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let entities = dir.path().join("entities.jsonl");
    let edges = dir.path().join("edges.jsonl");
    std::fs::write(
        &entities,
        concat!(
            "{\"id\":\"one-piece\",\"type\":\"anime\",\"name\":\"One Piece\",\"popularity\":99}\n",
            "{\"id\":\"luffy\",\"type\":\"character\",\"name\":\"Monkey D. Luffy\",\"aliases\":[\"Luffy\"],\"popularity\":98}\n",
            "{\"id\":\"nami\",\"type\":\"character\",\"name\":\"Nami\",\"popularity\":90}\n",
        ),
    )
    .unwrap();
    let graph_config = GraphConfig::default();
    std::fs::write(&edges, "{\"src\":\"luffy\",\"dst\":\"one-piece\",\"relation\":\"appears_in\"}\n{\"src\":\"nami\",\"dst\":\"zoro\",\"relation\":\"co_appears\"}\n").unwrap();
    let err = ingest::graph::ingest(&pg, None, &entities, &edges, &graph_config, false).await.unwrap_err().to_string();
    assert!(err.contains("edges.jsonl:2") && err.contains("dangling"), "{err}");
    assert!(
        pg.stats(&Access::shared()).await.unwrap().entities_by_type.is_empty(),
        "nothing is written when a line is bad"
    );

    std::fs::write(&edges, "{\"src\":\"luffy\",\"dst\":\"one-piece\",\"relation\":\"appears_in\"}\n{\"src\":\"nami\",\"dst\":\"one-piece\",\"relation\":\"appears_in\"}\n").unwrap();
    let first = ingest::graph::ingest(&pg, None, &entities, &edges, &graph_config, false).await.unwrap();
    assert_eq!((first.entities, first.unchanged, first.edges), (3, 0, 2));
    let again = ingest::graph::ingest(&pg, None, &entities, &edges, &graph_config, false).await.unwrap();
    assert_eq!((again.entities, again.unchanged, again.edges), (3, 3, 2));
    let stats = pg.stats(&Access::shared()).await.unwrap();
    assert_eq!(stats.edges_by_relation.get("appears_in"), Some(&2));

    // The search lane: by alias prefix and by type, most popular first.
    let found = pg.search("luf", None, 10, &Access::shared()).await.unwrap();
    assert_eq!(found.first().map(|e| e.name.as_str()), Some("Monkey D. Luffy"));
    let characters = pg.search("n", Some("character"), 10, &Access::shared()).await.unwrap();
    assert!(characters.iter().all(|e| e.entity_type == "character"));
    // Hydration: many ids in one query.
    let ids: Vec<Uuid> = ["luffy", "nami", "nobody"].map(ingest::graph::entity_id).to_vec();
    assert_eq!(pg.entities(&ids, &Access::shared()).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_and_hydrate_lanes_answer_over_nats() {
    use sleuth_tests::{
        nats::nats_server,
        process::{Deployment, ServeProcess},
        unique,
    };
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::new(&nats.url, &unique("lanes"), dir.path());
    std::fs::create_dir_all(dir.path()).unwrap();
    let store = SqliteGraph::open(&dir.path().join("graph.sqlite"), Timeouts::default()).await.unwrap();
    let mut luffy = character(1);
    luffy.name = "Monkey D. Luffy".into();
    luffy.aliases = vec!["Luffy".into()];
    luffy.popularity = 99.0;
    let mut lucci = character(2);
    lucci.name = "Rob Lucci".into();
    lucci.aliases = vec!["Lucci".into()];
    store.write(&GraphWrite { entities: vec![luffy, lucci, character(3)], ..Default::default() }).await.unwrap();
    let _graph = ServeProcess::start(&deployment, "graph", &[]);
    let client = async_nats::connect(&nats.url).await.unwrap();
    let subjects = deployment.config().subjects();

    // JSON in, JSON out, as from `nats req sleuth.v1.search '{"text":"lu"}'`.
    let reply = client.request(subjects.search(), r#"{"text":"lu"}"#.into()).await.unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    let names: Vec<&str> = reply["entities"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names, ["Monkey D. Luffy", "Rob Lucci"], "prefix of a name or alias, most popular first: {reply}");

    let hydrate = serde_json::json!({"ids": [
        {"entity_type": "character", "id": node(3).to_string()},
        {"entity_type": "character", "id": node(1).to_string()},
        {"entity_type": "character", "id": node(9).to_string()},
    ]});
    let reply = client.request(subjects.hydrate(), serde_json::to_vec(&hydrate).unwrap().into()).await.unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    let names: Vec<&str> = reply["entities"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names, ["Character 3", "Monkey D. Luffy"], "in the order asked, unknown ids left out: {reply}");

    let reply = client.request(subjects.search(), r#"{"text":""}"#.into()).await.unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(reply["error"]["type"], "invalid_input", "{reply}");
}

/// Serving processes may run on a role that reads the graph and nothing more (`database.migrate = false`): before
/// `sleuth setup` has migrated the schema such a process refuses to start and says to run it; after setup, which
/// grants the role `SELECT`, it reads what the owner wrote, and its writes are refused by PostgreSQL itself.
#[tokio::test]
async fn a_reader_role_reads_the_graph_setup_migrated_and_may_not_write_it() {
    use sleuth_actors::graph::schema;
    use sqlx::Executor;

    let db = test_database().await;
    let role = sleuth_tests::unique("sleuth_reader").to_lowercase();
    let owner = sqlx::PgPool::connect(&db.url).await.unwrap();
    owner.execute(format!("CREATE ROLE {role} LOGIN").as_str()).await.unwrap();
    // The test server trusts local connections, so the role needs no password.
    let mut reader_url = reqwest::Url::parse(&db.url).unwrap();
    reader_url.set_username(&role).unwrap();
    reader_url.set_password(None).unwrap();
    let reader_url = reader_url.to_string();

    let refused = PgGraph::open(&reader_url, 2, Timeouts::default(), false).await.err().expect("an unmigrated schema");
    assert!(format!("{refused:#}").contains("sleuth setup"), "{refused:#}");

    let line = schema::prepare(&db.url, Some(&role)).await.unwrap();
    assert!(line.contains("migrated") && line.contains(&role), "{line}");
    // Setup is idempotent.
    schema::prepare(&db.url, Some(&role)).await.unwrap();
    let written = PgGraph::connect(&db.url, 2, Timeouts::default()).await.unwrap();
    written.write(&GraphWrite { entities: vec![character(0), character(1)], ..Default::default() }).await.unwrap();

    let reader = PgGraph::open(&reader_url, 2, Timeouts::default(), false).await.expect("the reader opens the graph");
    let found = reader.search("Character 1", None, 5, &Access::shared()).await.unwrap();
    assert!(found.iter().any(|e| e.id == node(1)), "{found:?}");
    let write = GraphWrite { entities: vec![character(2)], ..Default::default() };
    let denied = reader.write(&write).await.expect_err("a reader may not write");
    assert!(format!("{denied:?}").contains("permission denied"), "{denied:?}");
    assert!(reader.entities(&[node(2)], &Access::shared()).await.unwrap().is_empty(), "nothing was written");

    let missing = schema::prepare(&db.url, Some("no_such_reader_role")).await.expect_err("the role must exist");
    assert!(format!("{missing:#}").contains("CREATE ROLE"), "{missing:#}");

    reader.close().await;
    written.close().await;
    owner.execute(format!("DROP OWNED BY {role}").as_str()).await.unwrap();
    owner.execute(format!("DROP ROLE {role}").as_str()).await.unwrap();
    owner.close().await;
}
