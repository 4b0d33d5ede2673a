//! Seed 000's two traces over NATS with the graph on PostgreSQL: the demo graph is loaded with `sleuth ingest
//! graph` (graph into Postgres, names into the entity collection), every stage runs in its own `sleuth serve`
//! process, and both questions are answered through `sleuth.v1.ask`: entities resolved, the graph traversed,
//! the path cited as evidence. Needs nats-server and `SLEUTH_TEST_DATABASE_URL` (both set up by `.ci/run`).

use std::process::Command;

use sleuth_actors::ingest::graph::entity_id;
use sleuth_messages::{
    Action, AgentResponse, AskReply, EntityRef, EntityType, GraphQueryType, LoopState, Outcome, TerminationReason,
};
use sleuth_tests::{nats::nats_server, postgres::test_database, process::*, unique};

async fn ask(deployment: &Deployment, question: &str) -> (AgentResponse, LoopState) {
    match ask_with_state(deployment, question).await {
        (AskReply { outcome: Outcome::Answer(answer), .. }, state) => (answer, state),
        (reply, _) => panic!("{question}: expected an answer, got {:?}", reply.outcome),
    }
}

fn entity(entity_type: EntityType, key: &str) -> EntityRef {
    EntityRef { entity_type, id: entity_id(key).to_string() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_traces_over_nats_with_the_graph_on_postgres() {
    let db = test_database().await;
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::new(&nats.url, &unique("seed"), dir.path());
    deployment.env.push(("SLEUTH__DATABASE__URL".into(), db.url.clone()));

    // The demo graph, loaded the way a user loads theirs.
    let mut ingest = Command::new(sleuth_bin());
    ingest
        .args(["ingest", "graph"])
        .arg(demo_graph_file("entities.jsonl"))
        .arg(demo_graph_file("edges.jsonl"))
        .env_remove("SLEUTH_CONFIG");
    for (k, v) in deployment.vars() {
        ingest.env(k, v);
    }
    let out = ingest.output().expect("sleuth ingest graph runs");
    assert!(out.status.success(), "ingest graph failed: {}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("postgres"), "the graph went to Postgres: {printed}");

    let _processes = start_all_separately(&deployment);
    let luffy = entity(EntityType::parse("character").unwrap(), "character:monkey-d-luffy");
    let nami = entity(EntityType::parse("character").unwrap(), "character:nami");
    let one_piece = entity(EntityType::parse("anime").unwrap(), "anime:one-piece");

    let (answer, state) = ask(&deployment, "Which anime is Luffy in?").await;
    let graph_steps: Vec<_> = state
        .turns
        .iter()
        .flat_map(|t| &t.step.actions)
        .filter_map(|a| match a {
            Action::PgGraph { graph_intent } => Some(graph_intent),
            _ => None,
        })
        .collect();
    assert_eq!(
        graph_steps.first().map(|g| (&g.start, g.query_type)),
        Some((&luffy, GraphQueryType::Neighbors)),
        "{graph_steps:?}"
    );
    assert_eq!(answer.termination_reason, TerminationReason::Sufficient, "{answer:?}");
    assert!(answer.result_entities.contains(&one_piece), "{:?}", answer.result_entities);
    assert!(answer.answer.contains("appears in One Piece (anime)"), "{}", answer.answer);

    let (answer, state) = ask(&deployment, "How is Luffy related to Nami?").await;
    let path = state.turns.iter().flat_map(|t| &t.step.actions).find_map(|a| match a {
        Action::PgGraph { graph_intent } if graph_intent.query_type == GraphQueryType::Path => Some(graph_intent),
        _ => None,
    });
    assert_eq!(path.map(|g| (&g.start, g.end.as_ref())), Some((&luffy, Some(&nami))), "{:?}", state.turns);
    let paths = answer.evidence["paths"].as_array().expect("evidence.paths");
    let nodes: Vec<EntityRef> = serde_json::from_value(paths[0]["nodes"].clone()).unwrap();
    assert_eq!((nodes.first(), nodes.last()), (Some(&luffy), Some(&nami)), "{paths:?}");
    assert_eq!(answer.result_entities, vec![luffy, nami]);
    assert!(
        answer.citations.iter().any(|c| c.hit_id.starts_with("path:")),
        "the path is cited: {:?}",
        answer.citations
    );
    // The graph stage ran on Postgres.
    let backend = state.turns.iter().flat_map(|t| &t.outcomes).find_map(|o| match &o.result {
        sleuth_messages::ActionResult::Graph(g) => g.meta.get("backend").cloned(),
        _ => None,
    });
    assert_eq!(backend, Some(serde_json::json!("postgres")));
}
