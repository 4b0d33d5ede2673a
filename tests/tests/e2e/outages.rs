//! A backend that goes down under a running deployment: every stage in its own `sleuth serve` process over
//! NATS, the graph on a PostgreSQL server of the test's own. The database is crashed (`pg_ctl stop -m
//! immediate`) between two questions: the second is answered from the documents, within its deadline, and says
//! the graph was unavailable. Started again, the database serves the third once its circuit lets a probe
//! through. Needs nats-server and PostgreSQL's `initdb`/`pg_ctl` (`.ci/run` has both), or a Docker engine. The
//! same for the index: a Qdrant server of the test's own, SIGKILLed and started again; it needs a `qdrant` binary
//! or a Docker engine, so it is ignored unless asked for (`.ci/run` runs it when either is there).

use std::time::{Duration, Instant};

use sleuth_actors::client;
use sleuth_messages::{Action, ActionResult, AgentResponse, AskReply, Backend, ErrorKind, LoopState, Outcome};
use sleuth_tests::{nats::nats_server, own_postgres::OwnPostgres, process::*, unique};

async fn ask(deployment: &Deployment, question: &str) -> (AgentResponse, LoopState, AskReply) {
    let (reply, state) = ask_with_state(deployment, question).await;
    match &reply.outcome {
        Outcome::Answer(answer) => (answer.clone(), state, reply),
        Outcome::Error(e) => panic!("{question}: expected an answer, degraded or not, got {e}"),
    }
}

fn graph_failures(state: &LoopState) -> Vec<String> {
    let turns = state.turns.iter();
    turns
        .flat_map(|t| t.step.actions.iter().zip(&t.outcomes))
        .filter_map(|(action, outcome)| match (action, &outcome.result) {
            (Action::PgGraph { .. }, ActionResult::Failed(e)) if e.kind == ErrorKind::Unavailable => {
                Some(e.message.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_postgres_leaves_document_search_and_the_answer_says_so() {
    let mut pg = OwnPostgres::start();
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::seeded(&nats.url, &unique("outage"), dir.path());
    deployment.env.push(("SLEUTH__DATABASE__URL".into(), pg.url.clone()));
    deployment.env.push(("SLEUTH__BACKENDS__BREAKER_COOLDOWN_MS".into(), "1000".into()));
    let entities = demo_graph_file("entities.jsonl").display().to_string();
    let edges = demo_graph_file("edges.jsonl").display().to_string();
    let out = run_cli(&deployment, &["ingest", "graph", &entities, &edges], &[]);
    assert!(out.status.success(), "ingest graph failed: {}", String::from_utf8_lossy(&out.stderr));
    let _processes = start_all_separately(&deployment);
    let question = "Which anime is Luffy in?";

    let (answer, state, _) = ask(&deployment, question).await;
    assert!(answer.degraded.is_empty(), "the database is up: {:?}", answer.degraded);
    assert!(graph_failures(&state).is_empty());
    assert!(answer.answer.contains("One Piece"), "{}", answer.answer);

    pg.stop(true);
    let started = Instant::now();
    let (answer, state, reply) = ask(&deployment, question).await;
    let elapsed = started.elapsed();
    let failed = graph_failures(&state);
    assert!(!failed.is_empty(), "a traversal was tried and failed: {:?}", state.turns);
    let d = answer.degraded.iter().find(|d| d.backend == Backend::Graph).expect("the graph is named as degraded");
    assert_eq!(d.fallback, "document search");
    assert!(
        answer.answer.contains("One Piece") && !answer.citations.is_empty(),
        "from the documents: {}",
        answer.answer
    );
    assert!(client::render(&reply).contains("Degraded: graph unavailable ("), "{}", client::render(&reply));
    let deadline = Duration::from_millis(deployment.config().loop_.timeout_ms);
    assert!(elapsed < deadline, "took {elapsed:?}, past the {deadline:?} deadline");
    eprintln!("with the database down: answered in {elapsed:?}; {d}");
    // While the circuit is open, the next request does not wait on the database at all.
    let started = Instant::now();
    let (answer, _, _) = ask(&deployment, "Which anime is Zoro in?").await;
    eprintln!("with the circuit open: answered in {:?}; degraded: {:?}", started.elapsed(), answer.degraded);

    pg.start_again();
    // The circuit keeps calls out for its cooldown (1 s here), then a probe finds the database back.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (answer, _, _) = ask(&deployment, "How is Luffy related to Nami?").await;
    assert!(answer.degraded.is_empty(), "the database is back: {:?}", answer.degraded);
    assert!(answer.evidence.contains_key("paths"), "the graph answered: {:?}", answer.evidence);
}

/// Every failed search of a request that the index guard gave up on.
fn index_failures(state: &LoopState) -> usize {
    let outcomes = state.turns.iter().flat_map(|t| &t.outcomes);
    outcomes.filter(|o| matches!(&o.result, ActionResult::Failed(e) if e.kind == ErrorKind::Unavailable)).count()
}

/// The same deployment with its documents and entities on a Qdrant server of the test's own, SIGKILLed between
/// two questions: the URL every retrieve process points at goes dead. The second question is answered from the
/// graph (SQLite, unaffected) within its deadline, and names the index as degraded; while the circuit is open
/// the next one does not wait on the dead server; started again on the same storage, Qdrant answers the fourth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a qdrant binary (SLEUTH_TEST_QDRANT_BIN or PATH) or a Docker engine; pass --ignored"]
async fn a_killed_qdrant_server_gives_a_degraded_answer_and_serves_again_once_back() {
    let mut qdrant = sleuth_tests::own_qdrant::OwnQdrant::start();
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let name = unique("qdrant_outage");
    let mut deployment = Deployment::seeded(&nats.url, &name, dir.path());
    for (key, value) in [
        ("SLEUTH__RETRIEVAL__BACKEND", "qdrant".to_string()),
        ("SLEUTH__RETRIEVAL__QDRANT_URL", qdrant.url.clone()),
        ("SLEUTH__RETRIEVAL__COLLECTION", format!("{name}_documents")),
        ("SLEUTH__RETRIEVAL__ENTITY_COLLECTION", format!("{name}_entities")),
        ("SLEUTH__BACKENDS__BREAKER_COOLDOWN_MS", "1000".to_string()),
    ] {
        deployment.env.push((key.into(), value));
    }
    let entities = demo_graph_file("entities.jsonl").display().to_string();
    let edges = demo_graph_file("edges.jsonl").display().to_string();
    let corpus = demo_graph_file("../demo_corpus.jsonl").display().to_string();
    for args in [&["ingest", "graph", &entities, &edges][..], &["ingest", "docs", &corpus]] {
        let out = run_cli(&deployment, args, &[]);
        assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _processes = start_all_separately(&deployment);
    let question = "Which anime is Luffy in?";

    let (answer, state, _) = ask(&deployment, question).await;
    assert!(answer.degraded.is_empty(), "Qdrant is up: {:?}", answer.degraded);
    assert_eq!(index_failures(&state), 0);
    assert!(answer.answer.contains("One Piece") && !answer.citations.is_empty(), "{}", answer.answer);

    qdrant.kill();
    let started = Instant::now();
    let (answer, state, reply) = ask(&deployment, question).await;
    let elapsed = started.elapsed();
    assert!(index_failures(&state) > 0, "a search was tried and failed: {:?}", state.turns);
    let d = answer.degraded.iter().find(|d| d.backend == Backend::Index).expect("the index is named as degraded");
    let rendered = client::render(&reply);
    assert!(rendered.contains("Degraded: index unavailable ("), "{rendered}");
    // The graph is in its own database: its lane still finds Luffy's anime, and the answer cites what it found.
    assert!(answer.answer.contains("One Piece") && !answer.citations.is_empty(), "from the graph: {}", answer.answer);
    assert!(
        answer.citations.iter().all(|c| state.cards.iter().any(|card| card.hit.id == c.hit_id)),
        "every citation is a retrieved card: {:?}",
        answer.citations
    );
    let deadline = Duration::from_millis(deployment.config().loop_.timeout_ms);
    assert!(elapsed < deadline, "took {elapsed:?}, past the {deadline:?} deadline");
    eprintln!("with Qdrant dead: answered in {elapsed:?}; {d}; answer: {}", answer.answer);
    let started = Instant::now();
    let (answer, _, _) = ask(&deployment, "Which anime is Zoro in?").await;
    eprintln!("with the circuit open: answered in {:?}; degraded: {:?}", started.elapsed(), answer.degraded);

    let restarted = Instant::now();
    qdrant.start_again();
    eprintln!("Qdrant ready again on the same storage in {:?}", restarted.elapsed());
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (answer, state, _) = ask(&deployment, question).await;
    assert!(answer.degraded.is_empty(), "Qdrant is back: {:?}\n{}", answer.degraded, qdrant.log());
    assert_eq!(index_failures(&state), 0);
    assert!(answer.answer.contains("One Piece") && !answer.citations.is_empty(), "{}", answer.answer);
}
