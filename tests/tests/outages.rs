//! A backend that goes down under a running deployment: every stage in its own `sleuth serve` process over
//! NATS, the graph on a PostgreSQL server of the test's own. The database is crashed (`pg_ctl stop -m
//! immediate`) between two questions: the second is answered from the documents, within its deadline, and says
//! the graph was unavailable. Started again, the database serves the third once its circuit lets a probe
//! through. Needs nats-server and PostgreSQL's `initdb`/`pg_ctl` (`.ci/run` has both).

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
