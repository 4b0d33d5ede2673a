//! The Qdrant server backend against a real server. These tests need one, so they are `#[ignore]`d by default
//! and say so in the test summary; run them with
//! `SLEUTH_TEST_QDRANT_URL=http://localhost:6334 cargo test -p sleuth-tests --test e2e -- --ignored qdrant_server::`,
//! or without the URL to start a server of their own from a `qdrant` binary (`SLEUTH_TEST_QDRANT_BIN` or PATH) or,
//! without one, in a `qdrant/qdrant` container on a Docker engine.
//! The translation of every plan and filter into the gRPC query model is tested without a server in
//! `actors/src/index/server.rs`.

use sleuth_actors::{
    config::{Config, EmbedderKind, IndexBackend},
    index::{FieldType, PayloadFilter},
    ingest::{self, Document},
    retrieval::Retriever,
};
use sleuth_messages::JsonMap;
use sleuth_tests::own_qdrant::OwnQdrant;

/// The server in `SLEUTH_TEST_QDRANT_URL`, else one of the test's own (kept running while the guard lives).
fn qdrant_url() -> (String, Option<OwnQdrant>) {
    match std::env::var("SLEUTH_TEST_QDRANT_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let own = OwnQdrant::start();
            (own.url.clone(), Some(own))
        }
    }
}

/// A config on the server backend with collections of its own, and the server's guard.
fn server_config() -> (Config, Option<OwnQdrant>) {
    let mut config = Config::default();
    config.retrieval.backend = IndexBackend::Qdrant;
    let (url, server) = qdrant_url();
    config.retrieval.qdrant_url = Some(url);
    config.retrieval.collection = format!("sleuth_test_{}", uuid::Uuid::new_v4().simple());
    (config, server)
}

fn doc(id: &str, text: &str, year: i64) -> Document {
    let mut metadata = JsonMap::new();
    metadata.insert("year".into(), year.into());
    Document {
        parts: Vec::new(),
        id: id.into(),
        title: id.into(),
        text: text.into(),
        metadata,
        ownership: Default::default(),
    }
}

#[tokio::test]
#[ignore = "needs a Qdrant server: SLEUTH_TEST_QDRANT_URL, a qdrant binary or a Docker engine; pass --ignored"]
async fn server_backend_ingests_idempotently_and_searches_hybrid_with_filters() {
    let (mut config, _server) = server_config();
    config.retrieval.filter_fields.insert("year".into(), FieldType::Integer);
    config.embedder.kind = EmbedderKind::Local;
    let r = Retriever::open(&config).await.expect("open the server backend");
    let docs = vec![
        doc("cats", "Domestic cats purr and chase mice.", 2001),
        doc("bread", "Sourdough bread rises with wild yeast.", 2015),
    ];
    let first = ingest::ingest(&r, docs.clone(), false).await.unwrap();
    assert_eq!((first.inserted, first.unchanged), (2, 0));
    let again = ingest::ingest(&r, docs, false).await.unwrap();
    assert_eq!((again.inserted, again.unchanged), (0, 2));
    let hits = r.search("kitten napping", &PayloadFilter::default(), 2).await.unwrap();
    assert_eq!(hits[0].doc_id, "cats");
    let filters: JsonMap = [("year".to_string(), serde_json::json!({"gte": 2010}))].into_iter().collect();
    let hits = r.search("kitten", &r.parse_filter(&filters).unwrap(), 2).await.unwrap();
    assert!(hits.iter().all(|h| h.doc_id == "bread"), "{hits:?}");
    assert_eq!(r.fetch(&PayloadFilter::doc_ids(vec!["bread".into()]), 8).await.unwrap().len(), 1);
    assert_eq!(r.index.delete(&["cats".into()]).await.unwrap(), 1);
    assert_eq!(r.index.count(&Default::default()).await.unwrap(), 1);
}

/// Per-document access on the server backend, as the embedded index enforces it (`actors/tests/integration/
/// access.rs`): the readers' filter is part of the server's own query, so a search, a fetch by id and a count made
/// for a tenant see only the shared documents, that tenant's, and those given to a group it is in.
#[tokio::test]
#[ignore = "needs a Qdrant server: SLEUTH_TEST_QDRANT_URL, a qdrant binary or a Docker engine; pass --ignored"]
async fn server_backend_filters_every_read_by_who_may_read_it() {
    use std::collections::BTreeMap;

    use sleuth_actors::access::{Access, Ownership};
    use sleuth_messages::Principal;

    let (mut config, _server) = server_config();
    config.embedder.kind = EmbedderKind::Local;
    let r = Retriever::open(&config).await.expect("open the server backend");
    let owned = |tenant: &str, groups: &[&str]| {
        Ownership::new(Some(tenant), &groups.iter().map(|g| g.to_string()).collect::<Vec<_>>()).unwrap()
    };
    let docs = vec![
        Document { ownership: Ownership::shared(), ..doc("harbor", "Port Velm Harbor keeps the Zephyr Vault.", 1900) },
        Document { ownership: owned("ALPHA", &[]), ..doc("vault", "The Zephyr Vault door code is 4471.", 1902) },
        Document {
            ownership: owned("ALPHA", &["finance"]),
            ..doc("ledger", "The Kestrel Ledger records 9310 crowns paid to the Zephyr Vault.", 1903)
        },
    ];
    ingest::ingest(&r, docs, false).await.unwrap();
    let groups = BTreeMap::from([("finance".to_string(), vec!["BETA".to_string()])]);
    let access = |tenant: &str| Access::of(Some(&Principal::tenant(tenant)), &groups);
    let ids = |hits: Vec<sleuth_messages::Hit>| {
        let mut ids: Vec<String> = hits.into_iter().map(|h| h.doc_id).collect();
        ids.sort();
        ids.dedup();
        ids
    };
    let everything = PayloadFilter::doc_ids(vec!["harbor".into(), "vault".into(), "ledger".into()]);
    for (tenant, readable) in
        [("ALPHA", vec!["harbor", "ledger", "vault"]), ("BETA", vec!["harbor", "ledger"]), ("GAMMA", vec!["harbor"])]
    {
        let filter = PayloadFilter::default().readable_by(&access(tenant));
        let searched = ids(r.search("Zephyr Vault door code", &filter, 8).await.unwrap());
        assert_eq!(searched, readable, "{tenant} searched");
        let fetched = ids(r.fetch(&everything.clone().readable_by(&access(tenant)), 8).await.unwrap());
        assert_eq!(fetched, readable, "{tenant} fetched by id");
        assert_eq!(r.index.count(&filter).await.unwrap(), readable.len(), "{tenant} counted");
    }
}

/// Without an embedder the collection holds BM25 vectors alone (no empty dense vector per point, as on the
/// embedded backend), is searched by BM25, and an embedder that later opens it is told to ingest again.
#[tokio::test]
#[ignore = "needs a Qdrant server: SLEUTH_TEST_QDRANT_URL, a qdrant binary or a Docker engine; pass --ignored"]
async fn server_backend_without_an_embedder_keeps_bm25_alone_and_refuses_a_later_one() {
    let (mut config, _server) = server_config();
    config.retrieval.entity_collection = format!("{}_entities", config.retrieval.collection);
    config.embedder.kind = EmbedderKind::None;
    let r = Retriever::open(&config).await.expect("open the server backend without an embedder");
    let docs = vec![
        doc("cats", "Domestic cats purr and chase mice.", 2001),
        doc("bread", "Sourdough bread rises with wild yeast.", 2015),
    ];
    assert_eq!(ingest::ingest(&r, docs, false).await.unwrap().inserted, 2);
    let hits = r.search("which cats chase mice", &PayloadFilter::default(), 2).await.unwrap();
    assert_eq!(hits[0].doc_id, "cats");
    drop(r);
    config.embedder.kind = EmbedderKind::Local;
    let error = Retriever::open(&config).await.err().expect("an embedder on a BM25-only collection");
    assert!(format!("{error:#}").contains("created with no dense vector"), "{error:#}");
}
