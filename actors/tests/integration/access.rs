//! Per-document access, embedded (SQLite graph, qdrant-edge, BM25 only so no model is needed): a document owned
//! by a tenant answers that tenant's questions and its groups' members', and nobody else's, whatever was asked
//! before (the retrieval cache is keyed by who may read) and whatever links to it (a shared document naming it).

use std::collections::BTreeMap;

use sleuth_actors::{
    access::{Access, Ownership},
    config::{Config, EmbedderKind},
    index::PayloadFilter,
    ingest::{self, Document},
    node::Node,
};
use sleuth_messages::{AskReply, AskRequest, JsonMap, Outcome, Principal};

fn doc(id: &str, title: &str, text: &str, ownership: Ownership) -> Document {
    Document {
        parts: Vec::new(),
        id: id.into(),
        title: title.into(),
        text: text.into(),
        metadata: JsonMap::new(),
        ownership,
    }
}

fn owned(tenant: &str, groups: &[&str]) -> Ownership {
    Ownership::new(Some(tenant), &groups.iter().map(|g| g.to_string()).collect::<Vec<_>>()).unwrap()
}

/// A shared document that names ALPHA's vault, ALPHA's vault, and ALPHA's ledger given to the group `finance`.
fn corpus() -> Vec<Document> {
    vec![
        doc(
            "harbor",
            "Port Velm Harbor",
            "Port Velm Harbor has a lighthouse on its north pier. The harbor office keeps the Zephyr Vault.",
            Ownership::shared(),
        ),
        doc(
            "vault",
            "Zephyr Vault",
            "The Zephyr Vault door code is 4471. The Zephyr Vault was built in 1902 under the harbor office.",
            owned("ALPHA", &[]),
        ),
        doc(
            "ledger",
            "Kestrel Ledger",
            "The Kestrel Ledger records a payment of 9310 crowns to the harbor office of Port Velm.",
            owned("alpha", &["finance"]),
        ),
    ]
}

fn groups() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([("finance".to_string(), vec!["beta".to_string()])])
}

async fn node(dir: &std::path::Path) -> Node {
    let mut config = Config { data_dir: Some(dir.to_path_buf()), ..Config::default() };
    config.retrieval.demo_corpus = false;
    config.embedder.kind = EmbedderKind::None;
    config.tenants.groups = groups();
    let node = Node::embedded(config).await.unwrap();
    let retriever = node.retriever.clone().unwrap();
    ingest::ingest(&retriever, corpus(), false).await.unwrap();
    node
}

fn tenant(name: &str) -> Option<Principal> {
    Some(Principal::tenant(name))
}

/// Everything the reply carries, as text: the answer, the short answer, the citations and their cards.
async fn ask(node: &Node, question: &str, by: Option<Principal>) -> String {
    let reply: AskReply = node.ask_as(AskRequest::new(question), by, None).await.expect("a reply");
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    serde_json::to_string(&reply).unwrap()
}

#[tokio::test]
async fn an_owned_document_answers_its_owner_and_its_groups_and_nobody_else() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;
    let vault = "What is the Zephyr Vault door code?";
    // ALPHA first, so its hits are in the retrieval cache when the others ask the same question.
    assert!(ask(&node, vault, tenant("ALPHA")).await.contains("4471"), "the owner reads its document");
    for (who, by) in [("BETA", tenant("BETA")), ("sleuth's own account", None)] {
        let reply = ask(&node, vault, by).await;
        assert!(!reply.contains("4471") && !reply.contains("1902"), "{who} read ALPHA's vault: {reply}");
    }
    let ledger = "How many crowns does the Kestrel Ledger record?";
    assert!(ask(&node, ledger, tenant("BETA")).await.contains("9310"), "BETA is in the ledger's group");
    let reply = ask(&node, ledger, tenant("GAMMA")).await;
    assert!(!reply.contains("9310"), "GAMMA is not in the group: {reply}");

    // The index itself: a fetch by id and a count see only what may be read.
    let retriever = node.retriever.clone().unwrap();
    let gamma = Access::of(tenant("GAMMA").as_ref(), &groups());
    let by_id = PayloadFilter::doc_ids(vec!["vault".into(), "harbor".into()]);
    let fetched = retriever.fetch(&by_id.clone().readable_by(&gamma), 8).await.unwrap();
    assert_eq!(fetched.iter().map(|h| h.doc_id.as_str()).collect::<Vec<_>>(), ["harbor"]);
    let alpha = Access::of(tenant("alpha").as_ref(), &groups());
    assert_eq!(retriever.fetch(&by_id.readable_by(&alpha), 8).await.unwrap().len(), 2);
    assert_eq!(retriever.index.count(&PayloadFilter::default().readable_by(&gamma)).await.unwrap(), 1);
    assert_eq!(retriever.index.count(&PayloadFilter::default().readable_by(&alpha)).await.unwrap(), 3);

    // The graph: the shared harbor names the vault, but the mention leads nowhere for GAMMA.
    let graph = node.graph.clone().unwrap();
    let harbor = sleuth_actors::graph::document_node("harbor");
    let step = |readable: Access| sleuth_actors::graph::Expand {
        relations: vec![sleuth_actors::graph::mentions::MENTIONS.into()],
        direction: sleuth_actors::graph::Direction::Out,
        node_types: vec![],
        fanout: 10,
        readable,
    };
    assert_eq!(graph.expand(&[harbor], &step(alpha)).await.unwrap().len(), 1, "the harbor names the vault");
    assert!(graph.expand(&[harbor], &step(gamma)).await.unwrap().is_empty());
    node.shutdown().await;
}
