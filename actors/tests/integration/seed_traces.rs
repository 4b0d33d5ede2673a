//! Seed 000's two traces end to end on the embedded default (SQLite graph, qdrant-edge, the real model, the
//! bundled demo graph and corpus loaded on first use): "Which anime is Luffy in?" resolves Luffy in the entity
//! collection, asks the graph for the anime he appears in and fetches them by id; "How is Luffy related to
//! Nami?" resolves both, asks the graph for the path between them and answers with the path as evidence.

use crate::common;

use common::demo::node;
use sleuth_actors::{ingest::graph::entity_id, node::Node};
use sleuth_messages::{
    Action, AgentResponse, AskRequest, EntityRef, EntityType, GraphQueryType, LoopState, Outcome, TerminationReason,
};

async fn ask(node: &Node, question: &str) -> (AgentResponse, LoopState) {
    let reply = node.ask(AskRequest::new(question), None).await.expect("answer");
    let request_id = reply.request_id.expect("request id");
    let (state, _) = node.ctx.store.load(request_id).await.unwrap().expect("stored state");
    match reply.outcome {
        Outcome::Answer(answer) => (answer, std::sync::Arc::unwrap_or_clone(state)),
        Outcome::Error(e) => panic!("{question}: expected an answer, got {e}"),
    }
}

fn entity(entity_type: EntityType, key: &str) -> EntityRef {
    EntityRef { entity_type, id: entity_id(key).to_string() }
}

fn actions(state: &LoopState, turn: usize) -> &[Action] {
    &state.turns[turn].step.actions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn which_anime_is_luffy_in() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;
    let (answer, state) = ask(&node, "Which anime is Luffy in?").await;
    let luffy = entity(EntityType::parse("character").unwrap(), "character:monkey-d-luffy");
    let one_piece = entity(EntityType::parse("anime").unwrap(), "anime:one-piece");

    // Turn 1: resolve Luffy in the entity collection, as anything but an anime (the documents are searched
    // alongside).
    assert!(
        actions(&state, 0).iter().any(|a| matches!(a, Action::QdrantSearch { search_intent: s }
            if !s.entity_type.is_document() && s.query.as_deref() == Some("Luffy")
                && s.filters.get("entity_type").and_then(|t| t.as_array())
                    .is_some_and(|t| t.contains(&"character".into()) && !t.contains(&"anime".into())))),
        "{:?}",
        actions(&state, 0)
    );
    // Turn 2: the anime next to his UUID in the graph.
    let Action::PgGraph { graph_intent } = &actions(&state, 1)[0] else {
        panic!("turn 2 is not pg_graph: {:?}", actions(&state, 1))
    };
    assert_eq!((graph_intent.query_type, &graph_intent.start), (GraphQueryType::Neighbors, &luffy));
    // Turn 3: the anime rows by id (seed 000 §8 step 4).
    let Action::QdrantSearch { search_intent } = &actions(&state, 2)[0] else { panic!("turn 3 is not a fetch") };
    assert_eq!(search_intent.entity_type, EntityType::parse("anime").unwrap());
    assert!(
        search_intent.filters["id"].as_array().unwrap().iter().any(|v| v.as_str() == Some(one_piece.id.as_str())),
        "{search_intent:?}"
    );

    assert_eq!(answer.termination_reason, TerminationReason::Sufficient, "{answer:?}");
    assert!(answer.result_entities.contains(&one_piece), "{:?}", answer.result_entities);
    assert!(answer.answer.contains("Monkey D. Luffy (character) appears in One Piece (anime)"), "{}", answer.answer);
    assert!(
        answer.citations.iter().any(|c| c.hit_id.starts_with("graph:") && c.doc_id == one_piece.id),
        "{:?}",
        answer.citations
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn how_is_luffy_related_to_nami() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;
    let (answer, state) = ask(&node, "How is Luffy related to Nami?").await;
    let luffy = entity(EntityType::parse("character").unwrap(), "character:monkey-d-luffy");
    let nami = entity(EntityType::parse("character").unwrap(), "character:nami");

    // Turn 1: two lookups in the entity collection, in parallel (any type: neither name says its type); turn
    // 2: the path between the two UUIDs.
    let queries: Vec<_> = actions(&state, 0)
        .iter()
        .filter_map(|a| match a {
            Action::QdrantSearch { search_intent } if !search_intent.entity_type.is_document() => {
                search_intent.query.clone()
            }
            _ => None,
        })
        .collect();
    assert_eq!(queries, vec!["Luffy".to_string(), "Nami".to_string()]);
    let Action::PgGraph { graph_intent } = &actions(&state, 1)[0] else {
        panic!("turn 2 is not pg_graph: {:?}", actions(&state, 1))
    };
    assert_eq!(graph_intent.query_type, GraphQueryType::Path);
    assert_eq!((&graph_intent.start, graph_intent.end.as_ref()), (&luffy, Some(&nami)));
    assert!(graph_intent.max_hops <= 3);

    // The answer: the chain, cited; the path as structured evidence; the two characters as the result.
    assert_eq!(answer.termination_reason, TerminationReason::Sufficient, "{answer:?}");
    let paths = answer.evidence["paths"].as_array().expect("evidence.paths");
    let nodes: Vec<EntityRef> = serde_json::from_value(paths[0]["nodes"].clone()).unwrap();
    assert_eq!((nodes.first(), nodes.last()), (Some(&luffy), Some(&nami)), "{paths:?}");
    assert!(nodes.iter().all(|n| answer.source_entities.contains(n)), "every node of the path is a source entity");
    assert_eq!(answer.result_entities, vec![luffy, nami]);
    let path_card = paths[0]["card"].as_u64().unwrap() as u32;
    let path_citation = answer
        .citations
        .iter()
        .find(|c| c.card == path_card && c.hit_id.starts_with("path:"))
        .unwrap_or_else(|| panic!("the path card is not cited: {:?}", answer.citations));
    assert!(
        answer.answer.contains("Nami") && answer.answer.contains(&format!("[{}]", path_citation.n)),
        "{}",
        answer.answer
    );
    // Citations read in order: [1], [2], … by first appearance, whatever the cards' numbers.
    let numbers: Vec<u32> = answer.citations.iter().map(|c| c.n).collect();
    assert_eq!(numbers, (1..=numbers.len() as u32).collect::<Vec<_>>());
    let first = |n: u32| answer.answer.find(&format!("[{n}]")).expect("every citation is in the answer");
    assert!(numbers.windows(2).all(|w| first(w[0]) < first(w[1])), "{}", answer.answer);
    node.shutdown().await;
}
