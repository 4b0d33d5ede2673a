//! Running sleuth as a cluster runs it: every stage under its own NATS user from `deploy/nats/accounts.conf`
//! (least privilege), and a scale-in that SIGTERMs a replica under load without losing or repeating a request.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use futures::StreamExt;
use sleuth_actors::client;
use sleuth_messages::{AskRequest, Event, EventKind, Outcome, codec};
use sleuth_tests::{nats, process::*, unique};

const QUESTION: &str = "Which anime is Luffy in?";

/// A deployment on the default subjects (`sleuth.v1`, no suffix), which are the ones accounts.conf names.
fn default_subjects(server: &nats::NatsServer, dir: &std::path::Path) -> Deployment {
    let mut deployment = Deployment::seeded(&server.url, "accounts", dir);
    deployment.prefix = "sleuth.v1".into();
    deployment.suffix = String::new();
    deployment
}

/// The server errors a connection as `user` receives, for asserting on permission violations.
async fn connect_as(
    server: &nats::NatsServer,
    user: &str,
) -> (async_nats::Client, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let client = async_nats::ConnectOptions::with_user_and_password(user.into(), nats::password(user))
        .event_callback(move |event| {
            let tx = tx.clone();
            async move {
                if let async_nats::Event::ServerError(e) = event {
                    let _ = tx.send(e.to_string());
                }
            }
        })
        .connect(server.url.as_str())
        .await
        .unwrap_or_else(|e| panic!("cannot connect as {user}: {e}"));
    (client, rx)
}

async fn refusal(errors: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(5), errors.recv())
        .await
        .expect("the server reported no permission violation within 5 s")
        .expect("error channel")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_runs_as_its_own_nats_user_and_the_question_is_answered() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let deployment = default_subjects(&server, dir.path());

    // A stage user may not create streams: before `sleuth setup` a stage fails at start-up and says why.
    let admin_url = nats::url_as(&server, "admin");
    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &admin_url)]);
    let stdout = String::from_utf8_lossy(&setup.stdout);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    assert!(stdout.contains("SLEUTH_WORK") && stdout.contains("sleuth_planner"), "{stdout}");

    let stages = ["retrieve", "graph", "synthesizer", "grader", "planner", "intake"];
    let _processes: Vec<ServeProcess> = stages
        .iter()
        .map(|stage| {
            let url = nats::url_as(&server, stage);
            ServeProcess::start(&deployment, stage, &[("SLEUTH__NATS__URL", &url)])
        })
        .collect();

    let ask = run_cli(&deployment, &["ask", QUESTION], &[("SLEUTH__NATS__URL", &nats::url_as(&server, "client"))]);
    let stdout = String::from_utf8_lossy(&ask.stdout);
    assert!(ask.status.success(), "ask as client: {stdout}\n{}", String::from_utf8_lossy(&ask.stderr));
    assert!(stdout.contains("One Piece") && stdout.contains("Citations:"), "{stdout}");
    // The intake and planner users learnt the graph's entity types from the graph and retrieve users'
    // announcement (a KV watch each may make), so the question took the entity lane.
    assert!(stdout.contains("pg_graph Neighbors"), "the entity lane was not taken: {stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_user_may_not_touch_another_stages_work_or_keys() {
    let server = nats::with_accounts();
    let (planner, mut errors) = connect_as(&server, "planner").await;

    planner.publish("sleuth.v1.work.grader.some-request", "forged".into()).await.unwrap();
    planner.flush().await.unwrap();
    let refused = refusal(&mut errors).await;
    assert!(
        refused.to_lowercase().contains("permissions violation") && refused.contains("sleuth.v1.work.grader"),
        "{refused}"
    );

    // Conversations belong to intake: the planner may not write one.
    planner.publish("$KV.sleuth_conversations.some-chat", "forged".into()).await.unwrap();
    planner.flush().await.unwrap();
    let refused = refusal(&mut errors).await;
    assert!(refused.contains("$KV.sleuth_conversations"), "{refused}");

    // Nor may a client answer in a stage's place.
    let (client, mut errors) = connect_as(&server, "client").await;
    client.publish("sleuth.v1.work.synthesizer.some-request", "forged".into()).await.unwrap();
    client.flush().await.unwrap();
    assert!(refusal(&mut errors).await.contains("sleuth.v1.work.synthesizer"));

    // A permitted subject raises nothing.
    planner.publish("sleuth.v1.work.retrieve.some-request", "x".into()).await.unwrap();
    planner.flush().await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(500), errors.recv()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_under_the_wrong_user_fails_at_start_up_and_names_the_subject() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let deployment = default_subjects(&server, dir.path());
    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &nats::url_as(&server, "admin"))]);
    assert!(setup.status.success(), "{}", String::from_utf8_lossy(&setup.stderr));

    // The grader stage as the planner user: its consumer is not the planner's to read.
    let started = Instant::now();
    let out = run_cli(
        &deployment,
        &["serve", "--stages", "grader"],
        &[("SLEUTH__NATS__URL", &nats::url_as(&server, "planner")), ("SLEUTH__TELEMETRY__HTTP_ADDR", "127.0.0.1:0")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve must fail: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "it fails at start-up, not after a long hang");
    assert!(stderr.contains("sleuth_grader") && stderr.contains("permission"), "{stderr}");
}

/// Every final event on the events stream, by request id.
async fn finals(url: &str, stream: &str) -> HashMap<uuid::Uuid, usize> {
    let js = async_nats::jetstream::new(async_nats::connect(url).await.unwrap());
    let consumer = js
        .get_stream(stream)
        .await
        .expect("events stream")
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig::default())
        .await
        .expect("ordered consumer");
    let mut messages = consumer.messages().await.expect("messages");
    let mut finals = HashMap::new();
    while let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_secs(2), messages.next()).await {
        let (event, _) = codec::decode::<Event>(&message.payload).expect("event");
        if event.kind == EventKind::Final {
            *finals.entry(event.request_id).or_insert(0) += 1;
        }
    }
    finals
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_in_a_planner_under_load_loses_and_repeats_nothing() {
    const REQUESTS: usize = 200;
    let server = nats::nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&server.url, &unique("scalein"), dir.path());
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &[]);
    // Each planner holds its work a while, so the one that is stopped has work in hand.
    let slow = [("SLEUTH__DEBUG__STAGE_DELAY_MS", "20")];
    let _staying = ServeProcess::start(&deployment, "planner", &slow);
    let leaving = ServeProcess::start(&deployment, "planner", &slow);
    let config = deployment.config();
    let subjects = config.subjects();

    let asks: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let (url, subjects) = (server.url.clone(), subjects.clone());
            let request = AskRequest::new(if i % 2 == 0 { QUESTION } else { "Who wrote One Piece?" });
            tokio::spawn(
                async move { client::ask_remote(&url, &subjects, request, Duration::from_secs(120), None).await },
            )
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let grace = Duration::from_millis(config.stages.shutdown_grace_ms) + Duration::from_secs(5);
    let status = leaving.terminate(grace).expect("the planner exits within its grace period after SIGTERM");
    assert!(status.success(), "SIGTERM ends the planner with exit 0, got {status}");

    let mut ids = Vec::new();
    for ask in asks {
        let reply = ask.await.unwrap().expect("every request is answered");
        assert!(matches!(reply.outcome, Outcome::Answer(_)), "{:?}", reply.outcome);
        ids.push(reply.request_id.expect("request id"));
    }
    let finals = finals(&server.url, &subjects.events_stream()).await;
    for id in &ids {
        assert_eq!(finals.get(id), Some(&1), "request {id}: exactly one final reply");
    }
    assert_eq!(ids.len(), REQUESTS);
}

/// Starts one process serving `stage` on a fresh deployment, then a second on the same data directory, which must
/// fail at start-up, at once, with a message containing every one of `why`.
fn a_second_owner_is_refused(stage: &str, why: &[&str]) {
    let server = nats::nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&server.url, &unique("owner"), dir.path());
    let _owner = ServeProcess::start(&deployment, stage, &[]);

    let started = Instant::now();
    let out = run_cli(&deployment, &["serve", "--stages", stage], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second {stage} process on the same files must not start: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "it fails at once instead of hanging");
    assert!(why.iter().all(|w| stderr.contains(w)), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_retrieve_process_on_one_embedded_index_fails_at_start_up_and_says_why() {
    a_second_owner_is_refused("retrieve", &["another sleuth process owns it", "retrieval.backend"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_graph_process_on_one_sqlite_file_fails_at_start_up_and_says_why() {
    a_second_owner_is_refused("graph", &["another sleuth process serves it", "database.url"]);
}
