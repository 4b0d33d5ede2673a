//! Mention links and multi-hop bridging, embedded (SQLite graph, qdrant-edge, BM25 only so no model is needed):
//! ingestion records which documents name which, and the deterministic planner follows them from the document
//! the question names to the one it needs next. Also the entity lane on a graph of the user's own types, and
//! its absence on a corpus of documents.

use sleuth_actors::{
    config::{Config, EmbedderKind},
    graph::{self, Direction, Expand, document_node, mentions::MENTIONS},
    ingest::{self, Document},
    node::Node,
    retrieval::Retriever,
};
use sleuth_messages::{Action, AskRequest, JsonMap, Outcome};

fn doc(id: &str, title: &str, text: &str) -> Document {
    Document {
        parts: Vec::new(),
        id: id.into(),
        title: title.into(),
        text: text.into(),
        metadata: JsonMap::new(),
        ownership: Default::default(),
    }
}

fn corpus() -> Vec<Document> {
    let mut docs = vec![
        doc(
            "cinema",
            "The Private Life of Cinema",
            "The Private Life of Cinema is a 2011 documentary film by Quebec director Denys Desjardins. It premiered in Montreal.",
        ),
        doc(
            "desjardins",
            "Denys Desjardins",
            "Denys Desjardins is a Canadian filmmaker. Desjardins was born in 1966 in Sainte-Agathe-des-Monts, Quebec.",
        ),
        doc("montreal", "Montreal", "Montreal is the largest city of Quebec and hosts many film festivals."),
        doc(
            "lothair",
            "Lothair II",
            "Lothair II was king of Lotharingia. He was the son of Emperor Lothair I and Ermengarde of Tours.",
        ),
        doc(
            "ermengarde",
            "Ermengarde of Tours",
            "Ermengarde of Tours died on 20 March 851. She married Lothair I in 821.",
        ),
    ];
    // Distractors that share the question's words.
    for i in 0..12 {
        docs.push(doc(
            &format!("film-{i}"),
            &format!("Private Film {i}"),
            &format!("Private Film {i} is a documentary about the life of a cinema director, who was born in Paris in 19{i:02}."),
        ));
    }
    docs
}

async fn node(dir: &std::path::Path) -> Node {
    let mut config = Config { data_dir: Some(dir.to_path_buf()), ..Config::default() };
    config.retrieval.demo_corpus = false;
    config.embedder.kind = EmbedderKind::None;
    let node = Node::embedded(config).await.unwrap();
    let retriever = node.retriever.clone().unwrap();
    let summary = ingest::ingest(&retriever, corpus(), false).await.unwrap();
    assert_eq!(summary.links, 3, "mention links recorded: {summary}");
    node
}

#[tokio::test]
async fn ingestion_links_documents_that_name_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;
    let graph = node.graph.clone().unwrap();
    let step = Expand {
        relations: vec![MENTIONS.into()],
        direction: Direction::Out,
        node_types: vec![],
        fanout: 10,
        readable: sleuth_actors::access::Access::shared(),
    };
    let out = graph.expand(&[document_node("lothair")], &step).await.unwrap();
    let named: Vec<_> = out.iter().map(|a| a.neighbor).collect();
    assert_eq!(
        named,
        vec![document_node("ermengarde")],
        "Lothair II names Ermengarde of Tours (Lothair I has no document)"
    );
    let cinema = graph.expand(&[document_node("cinema")], &step).await.unwrap();
    let targets: Vec<_> = cinema.iter().map(|a| a.neighbor).collect();
    assert_eq!(targets, vec![document_node("desjardins"), document_node("montreal")], "first-mentioned first");

    // Re-ingesting a changed document replaces its links.
    let retriever = node.retriever.clone().unwrap();
    ingest::ingest(
        &retriever,
        vec![doc("cinema", "The Private Life of Cinema", "A documentary shot in Montreal.")],
        false,
    )
    .await
    .unwrap();
    let cinema = graph.expand(&[document_node("cinema")], &step).await.unwrap();
    assert_eq!(cinema.iter().map(|a| a.neighbor).collect::<Vec<_>>(), vec![document_node("montreal")]);
    node.shutdown().await;
}

#[tokio::test]
async fn the_planner_follows_mention_links_to_the_bridge_document() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;
    let request_id = uuid::Uuid::now_v7();
    let question = "Where was the director of film The Private Life Of Cinema born?";
    let request = AskRequest { request_id: Some(request_id), ..AskRequest::new(question) };
    let reply = node.ask(request, None).await.unwrap();
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    let (state, _) = node.ctx.store.load(request_id).await.unwrap().unwrap();
    let titles: Vec<&str> = state.cards.iter().map(|c| c.hit.title.as_str()).collect();
    assert!(titles.contains(&"Denys Desjardins"), "the bridge document was retrieved: {titles:?}");
    let graph_steps =
        state.turns.iter().flat_map(|t| &t.step.actions).filter(|a| matches!(a, Action::PgGraph { .. })).count();
    let bridged_by_graph = state.turns.iter().any(|t| {
        t.step.actions.iter().any(
            |a| matches!(a, Action::QdrantSearch { search_intent } if search_intent.filters.contains_key("doc_id")),
        )
    });
    assert!(
        graph_steps >= 1 && bridged_by_graph,
        "the loop expanded the anchor through the graph: {:#?}",
        state.turns.iter().map(|t| &t.step).collect::<Vec<_>>()
    );
    node.shutdown().await;
}

/// Asks `question` of `node` and returns the finished request's state.
async fn ask(node: &Node, question: &str) -> sleuth_messages::LoopState {
    let request_id = uuid::Uuid::now_v7();
    let request = AskRequest { request_id: Some(request_id), ..AskRequest::new(question) };
    let reply = node.ask(request, None).await.unwrap();
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    std::sync::Arc::unwrap_or_clone(node.ctx.store.load(request_id).await.unwrap().unwrap().0)
}

async fn node_with(dir: &std::path::Path, docs: Vec<Document>) -> Node {
    let mut config = Config { data_dir: Some(dir.to_path_buf()), ..Config::default() };
    config.retrieval.demo_corpus = false;
    config.embedder.kind = EmbedderKind::None;
    let node = Node::embedded(config).await.unwrap();
    ingest::ingest(&node.retriever.clone().unwrap(), docs, false).await.unwrap();
    node
}

fn steps(state: &sleuth_messages::LoopState) -> Vec<String> {
    state.turns.iter().flat_map(|t| &t.step.actions).map(|a| a.describe()).collect()
}

#[tokio::test]
async fn a_three_document_chain_is_followed_hop_by_hop_from_the_named_document() {
    let dir = tempfile::tempdir().unwrap();
    let mut docs = vec![
        doc(
            "ballet",
            "Aschenbrödel",
            "Aschenbrödel is a ballet in three acts with music by Johann Strauss II, left unfinished at his death.",
        ),
        doc(
            "strauss",
            "Johann Strauss II",
            "Johann Strauss II was a composer of light music, known as the Waltz King. He was a citizen of Austria all his life.",
        ),
        doc(
            "austria",
            "Austria",
            "Austria is a landlocked country in Central Europe. It joined the European Union in 1995.",
        ),
    ];
    for i in 0..10 {
        docs.push(doc(
            &format!("country-{i}"),
            &format!("Country {i}"),
            &format!("Country {i} joined the European Union in 20{i:02}. Its citizens elect a composer laureate."),
        ));
    }
    let node = node_with(dir.path(), docs).await;
    let question = "When did the country where the composer of Aschenbrödel was a citizen join the European Union?";
    let state = ask(&node, question).await;
    let fetched: Vec<String> = state
        .turns
        .iter()
        .flat_map(|t| &t.step.actions)
        .filter_map(|a| match a {
            Action::QdrantSearch { search_intent } => search_intent.filters.get("doc_id").map(|v| v.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        fetched.len() >= 2
            && fetched.iter().any(|f| f.contains("strauss"))
            && fetched.iter().any(|f| f.contains("austria")),
        "two hops fetched by id, Strauss then Austria: {:#?}",
        steps(&state)
    );
    let top: Vec<&str> =
        sleuth_actors::machine::ranking::ranking(&state).into_iter().take(8).map(|c| c.hit.title.as_str()).collect();
    for gold in ["Aschenbrödel", "Johann Strauss II", "Austria"] {
        assert!(top.contains(&gold), "{gold} among the final eight: {top:?}");
    }
    node.shutdown().await;
}

#[tokio::test]
async fn on_a_corpus_of_documents_the_entity_lane_is_skipped_and_no_empty_lookup_is_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let docs = vec![
        doc(
            "roddy",
            "Roddy Maude-Roxby",
            "Roddy Maude-Roxby is an English actor. He played the character of Edgar in the film The Aristocats.",
        ),
        doc("aristocats", "The Aristocats", "The Aristocats is a 1970 animated film by Walt Disney Productions."),
        doc("tom", "Tom Rowe", "Tom Rowe was an American screenwriter who wrote the story of The Aristocats."),
    ];
    let node = node_with(dir.path(), docs).await;
    // "character" names one of the demo graph's entity types; this corpus has no entity of any type.
    let state = ask(&node, "In what film did Roddy Maude-Roxby play a character written by Tom Rowe?").await;
    let lookups = steps(&state);
    assert!(
        lookups.iter().all(|l| !l.starts_with("qdrant_search character") && !l.starts_with("qdrant_search anime")),
        "no entity-collection lookup on a corpus without entities: {lookups:?}"
    );
    let titles: Vec<&str> = state.cards.iter().map(|c| c.hit.title.as_str()).collect();
    assert!(titles.contains(&"Roddy Maude-Roxby") && titles.contains(&"The Aristocats"), "{titles:?}");
    node.shutdown().await;
}

#[tokio::test]
async fn the_fast_route_abstains_when_the_evidence_never_mentions_what_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let docs = vec![
        doc("one-piece", "One Piece", "One Piece is a manga series. Its name is commonly stylized in capital letters."),
        doc("paris", "Paris", "Paris is a city on the Seine with many museums."),
    ];
    let node = node_with(dir.path(), docs).await;
    let state = ask(&node, "What is the capital of France?").await;
    assert_eq!(state.analysis.route, sleuth_messages::Route::Fast, "{:?}", state.analysis.complexity);
    let Some(Outcome::Answer(answer)) = &state.outcome else { panic!("no answer: {:?}", state.outcome) };
    assert!(answer.citations.is_empty() && answer.warnings.iter().any(|w| w == "NO_EVIDENCE"), "{answer:?}");
    assert!(answer.answer.contains("France"), "the answer says what the evidence never mentions: {}", answer.answer);

    let state = ask(&node, "What is One Piece?").await;
    let Some(Outcome::Answer(answer)) = &state.outcome else { panic!("no answer: {:?}", state.outcome) };
    assert!(!answer.citations.is_empty(), "an answerable question is still answered: {answer:?}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_graph_of_its_own_types_answers_entity_questions_about_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config { data_dir: Some(dir.path().to_path_buf()), ..Config::default() };
    config.retrieval.demo_corpus = false;
    config.embedder.kind = EmbedderKind::None;
    config.graph.relations = vec!["born_in".into(), "worked_with".into(), "mentions".into()];
    let entities = dir.path().join("entities.jsonl");
    let edges = dir.path().join("edges.jsonl");
    std::fs::write(
        &entities,
        [
            r#"{"id":"ada","type":"person","name":"Ada Lovelace","aliases":["Ada"]}"#,
            r#"{"id":"babbage","type":"person","name":"Charles Babbage"}"#,
            r#"{"id":"london","type":"city","name":"London"}"#,
            r#"{"id":"teignmouth","type":"city","name":"Teignmouth"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    std::fs::write(
        &edges,
        [
            r#"{"src":"ada","dst":"london","relation":"born_in"}"#,
            r#"{"src":"babbage","dst":"london","relation":"born_in"}"#,
            r#"{"src":"ada","dst":"babbage","relation":"worked_with"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    {
        // Loaded the way `sleuth ingest graph` loads it, before the node starts.
        let retriever = Retriever::open(&config).await.unwrap();
        let store = match &retriever.graph {
            Some(graph) => graph.clone(),
            None => graph::open(&config).await.unwrap(),
        };
        ingest::graph::ingest(store.as_ref(), Some(&retriever), &entities, &edges, &config.graph, false).await.unwrap();
    }
    let node = Node::embedded(config).await.unwrap();
    let types = node.ctx.entity_types.get().to_string();
    assert_eq!(types, "[city, person]", "the types come from the graph that was ingested");

    let state = ask(&node, "Which city was Ada Lovelace born in?").await;
    let lookups = steps(&state);
    assert_eq!(lookups[0], "qdrant_search person \"Ada Lovelace\"", "not a city, so a person: {lookups:?}");
    assert!(lookups.iter().any(|l| l.starts_with("pg_graph Neighbors")), "{lookups:?}");
    let Some(Outcome::Answer(answer)) = &state.outcome else { panic!("no answer: {:?}", state.outcome) };
    assert!(answer.answer.contains("London"), "{}", answer.answer);
    assert!(!answer.answer.contains("Teignmouth"), "{}", answer.answer);

    // The demo's types mean nothing here: "anime" is an ordinary word.
    let state = ask(&node, "Which anime is Ada Lovelace in?").await;
    assert!(steps(&state).iter().all(|l| !l.starts_with("pg_graph")), "{:?}", steps(&state));
    node.shutdown().await;
}
