//! End to end over NATS: every stage in its own `sleuth serve` process against a real nats-server.

use std::time::Duration;

use sleuth_actors::{client, node::Node};
use sleuth_messages::{
    AskReply, AskRequest, Encoding, Envelope, EventKind, Outcome, Phase, SCHEMA_VERSION, Stage, WorkItem, codec,
};
use sleuth_tests::{events_of, nats::nats_server, process::*, stored_state, unique};

const QUESTION: &str = "Which anime is Luffy in?";

fn answer(reply: &AskReply) -> (String, Vec<String>) {
    match &reply.outcome {
        Outcome::Answer(a) => (a.answer.clone(), a.citations.iter().map(|c| c.doc_id.clone()).collect()),
        Outcome::Error(e) => panic!("expected an answer, got {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_in_its_own_process_answers_like_embedded() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let name = unique("e2e");
    let deployment = Deployment::seeded(&nats.url, &name, &dir.path().join("cluster"));
    let _processes = start_all_separately(&deployment);
    let config = deployment.config();

    let first = AskRequest { conversation_id: Some("e2e-chat".into()), ..AskRequest::new(QUESTION) };
    let remote = client::ask_remote(&nats.url, &config.subjects(), first, Duration::from_secs(30), None)
        .await
        .expect("answer over nats");

    // The follow-up is resolved by the intake process from the conversation in the sleuth_conversations bucket.
    let follow_up = AskRequest { conversation_id: Some("e2e-chat".into()), ..AskRequest::new("And Ichigo?") };
    let second = client::ask_remote(&nats.url, &config.subjects(), follow_up, Duration::from_secs(30), None)
        .await
        .expect("follow-up over nats");
    let (text, _) = answer(&second);
    assert!(text.contains("Bleach") && !text.contains("One Piece"), "{text}");
    let resolved = stored_state(&config, second.request_id.expect("request id")).await.expect("state in kv");
    assert_eq!(resolved.analysis.rewritten, "Which anime is Ichigo in");

    let embedded_config = sleuth_actors::config::Config {
        data_dir: Some(dir.path().join("embedded")),
        ..sleuth_actors::config::Config::default()
    };
    sleuth_tests::seeded::seed_data_dir(&dir.path().join("embedded"));
    let node = Node::embedded(embedded_config).await.expect("embedded node");
    let local = node.ask(AskRequest::new(QUESTION), None).await.expect("embedded answer");
    node.shutdown().await;

    assert_eq!(answer(&remote), answer(&local), "the same question gives the same answer both ways");
    let (text, cited) = answer(&remote);
    assert!(!cited.is_empty() && text.contains("One Piece"), "{text} {cited:?}");
    assert!(text.contains("[1]") || text.contains("[2]"), "{text}");

    // The KV bucket holds the request's state with every turn recorded.
    let request_id = remote.request_id.expect("request id");
    let state = stored_state(&config, request_id).await.expect("state in kv");
    assert_eq!(state.phase, Phase::Done);
    assert_eq!(state.turns.len(), remote.turns.len());
    assert!(state.turns.iter().all(|t| t.report.is_some() || t.step.is_terminal()));

    // Exactly one final event.
    let events = events_of(&config, request_id, Duration::from_millis(500)).await;
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Final).count(), 1);
    assert_eq!(events.first().map(|e| e.kind), Some(EventKind::Accepted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_request_gets_a_json_reply_and_bad_input_a_typed_error() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("json"), dir.path());
    let _all = ServeProcess::start(&deployment, "all", &[]);
    let subjects = deployment.config().subjects();
    let client = async_nats::connect(&nats.url).await.unwrap();

    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        client.request(subjects.ask(), format!(r#"{{"query":"{QUESTION}"}}"#).into()),
    )
    .await
    .expect("reply in time")
    .expect("reply");
    assert_eq!(reply.payload.first(), Some(&b'{'), "a JSON request is answered in JSON");
    let (parsed, encoding) = codec::decode::<AskReply>(&reply.payload).unwrap();
    assert_eq!(encoding, Encoding::Json);
    answer(&parsed);

    for (payload, kind) in [
        (&br#"{"query": "   "}"#[..], "invalid_input"),
        (&br#"{"query": 42}"#[..], "malformed"),
        (&br#"{"query": "x", "schema_version": 9}"#[..], "unsupported_version"),
    ] {
        let reply = client.request(subjects.ask(), payload.to_vec().into()).await.expect("error reply");
        let json: serde_json::Value = serde_json::from_slice(&reply.payload).expect("json error");
        assert_eq!(json["outcome"]["error"]["type"], kind, "{json}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_work_message_has_exactly_one_effect() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("dup"), dir.path());
    let _all = ServeProcess::start(&deployment, "all", &[]);
    let config = deployment.config();
    let reply =
        client::ask_remote(&nats.url, &config.subjects(), AskRequest::new(QUESTION), Duration::from_secs(30), None)
            .await
            .unwrap();
    let request_id = reply.request_id.unwrap();
    let before = stored_state(&config, request_id).await.unwrap();

    // Re-deliver turn 1's planner and grader work with fresh message ids, so JetStream's de-duplication
    // cannot help: only the stages' own idempotence stands between these and a second effect.
    let js = async_nats::jetstream::new(async_nats::connect(&nats.url).await.unwrap());
    for (stage, n) in [(Stage::Planner, "a"), (Stage::Grader, "b")] {
        let item = WorkItem {
            envelope: Envelope {
                schema_version: SCHEMA_VERSION,
                request_id,
                turn: 1,
                step: 0,
                deadline_ms: before.deadline_ms,
                attempt: 0,
            },
            stage,
        };
        let publish = async_nats::jetstream::message::PublishMessage::build()
            .payload(codec::encode(&item, Encoding::MsgPack).unwrap().into())
            .message_id(format!("{}:replay:{n}", item.msg_id()));
        js.send_publish(config.subjects().loop_work(stage, request_id, 0), publish).await.unwrap().await.unwrap();
    }

    let events = events_of(&config, request_id, Duration::from_secs(2)).await;
    let after = stored_state(&config, request_id).await.unwrap();
    assert_eq!(after.turns, before.turns, "no turn was re-applied");
    assert_eq!(after.outcome, before.outcome, "the answer is unchanged");
    assert_eq!(after.counters.duplicates_skipped, 2, "both duplicates were seen and skipped");
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Final).count(), 1, "still exactly one final event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_a_cluster_with_no_stages_fails_with_a_hint() {
    let nats = nats_server();
    let subjects = sleuth_messages::subjects::Subjects::new("sleuthtest.nobody", "_nobody");
    let err = client::ask_remote(&nats.url, &subjects, AskRequest::new(QUESTION), Duration::from_secs(30), None)
        .await
        .expect_err("no intake is listening");
    assert!(err.to_string().contains("sleuth serve"), "{err}");
}

/// `nats.url` takes a cluster's seed list, comma-separated, as every NATS client does. The first server listed is
/// down: `sleuth serve` and `sleuth ask` connect to the one that answers, and the question is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comma_separated_server_list_is_a_cluster_s_seed_list() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let list = format!("nats://127.0.0.1:{}, {}", sleuth_tests::free_port(), nats.url);
    let deployment = Deployment::seeded(&list, &unique("seeds"), dir.path());
    let process = ServeProcess::start(&deployment, "all", &[]);
    let out = run_cli(&deployment, &["ask", QUESTION], &[]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "sleuth ask over {list}: {stderr}\n{}", process.last_lines());
    assert!(stdout.contains("One Piece"), "{stdout}");
    let remote = client::ask_remote(
        &list,
        &deployment.config().subjects(),
        AskRequest::new(QUESTION),
        Duration::from_secs(30),
        None,
    )
    .await
    .expect("the client library takes the list too");
    assert!(answer(&remote).0.contains("One Piece"));
}
