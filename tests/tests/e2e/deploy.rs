//! Running sleuth as a cluster runs it: every stage under its own NATS user from `deploy/nats/accounts.conf`
//! (least privilege), and a scale-in that SIGTERMs a replica under load without losing or repeating a request.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use futures::StreamExt;
use sleuth_actors::client;
use sleuth_messages::{AskRequest, Event, EventKind, Outcome, Stage, codec, subjects::Subjects};
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

/// Demo questions whose turns run two actions at once: an entity question resolves the name while it searches the
/// documents, a comparison looks up both sides, and a question naming two entities resolves both.
const PARALLEL: [&str; 3] =
    [QUESTION, "Which was created first, Naruto or Bleach?", "Which studio adapted both Naruto and Bleach into anime?"];

/// The deliveries that arrived more than once, over every stage of one process (`sleuth_redeliveries_total`).
async fn redeliveries(process: &ServeProcess) -> f64 {
    let (status, body) = process.get("/metrics").await;
    assert_eq!(status, 200, "{body}");
    body.lines()
        .filter(|line| line.starts_with("sleuth_redeliveries_total"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Waits up to 30 s for a process's `/readyz` to answer 200 (its NATS connection is back).
async fn ready_again(process: &ServeProcess) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = process.get("/readyz").await;
        if status == 200 {
            return;
        }
        assert!(Instant::now() < until, "{} not ready 30 s after the NATS restart: {body}", process.stages);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A client chooses its request's reply subject, and the stage that answers publishes there under its own user.
/// An ask or a status request whose reply subject is another request's loop state is dropped, that state is left
/// as it was, and `nats micro` discovery (answered by every stage) is not the client's to send.
async fn a_reply_subject_may_not_aim_a_stage_at_another_request(server: &nats::NatsServer, subjects: &Subjects) {
    let victim = client::ask_remote(
        &nats::url_as(server, "client"),
        subjects,
        AskRequest::new(QUESTION),
        Duration::from_secs(60),
        None,
    )
    .await
    .expect("the victim's question is answered")
    .request_id
    .expect("request id");
    let admin = connect_as(server, "admin").await.0;
    // The victim's revision: the sequence of the last message on its loop subjects.
    let revision = || async {
        let get = format!("$JS.API.DIRECT.GET.{}", subjects.loops_stream());
        let body = serde_json::json!({ "last_by_subj": subjects.loop_of(victim) }).to_string();
        let state = admin.request(get, body.into()).await.expect("the victim's state");
        let sequence = state.headers.as_ref().and_then(|h| h.get("Nats-Sequence")).expect("a stored state");
        sequence.as_str().parse::<u64>().expect("a sequence")
    };
    let before = revision().await;

    let (client, mut errors) = connect_as(server, "client").await;
    let target = subjects.loop_state(victim);
    let attack = codec::encode(&AskRequest::new("Who created Naruto?"), sleuth_messages::Encoding::MsgPack).unwrap();
    client.publish_with_reply(subjects.ask(), target.clone(), attack.into()).await.unwrap();
    client
        .publish_with_reply(subjects.status(sleuth_messages::Stage::Planner), target.clone(), "".into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    // The ask would have been answered within a second; give it three.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(revision().await, before, "a stage wrote to another request's state because a client asked it to");

    client.publish_with_reply("$SRV.PING", target, "".into()).await.unwrap();
    client.flush().await.unwrap();
    assert!(refusal(&mut errors).await.contains("$SRV.PING"), "a client may not send nats micro discovery");
    assert_eq!(revision().await, before);
}

/// Asks every [`PARALLEL`] question as the client user; each must be answered. Returns how many turns ran two
/// actions or more.
async fn ask_parallel(client_url: &str, subjects: &Subjects, label: &str) -> usize {
    let mut parallel_turns = 0;
    for question in PARALLEL {
        let request = AskRequest::new(question);
        let reply = client::ask_remote(client_url, subjects, request, Duration::from_secs(60), None)
            .await
            .unwrap_or_else(|e| panic!("{label}: {question}: {e:#}"));
        assert!(matches!(reply.outcome, Outcome::Answer(_)), "{label}: {question}: {:?}", reply.outcome);
        parallel_turns += reply.turns.iter().filter(|t| t.actions.len() >= 2).count();
    }
    parallel_turns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_runs_as_its_own_nats_user_and_the_question_is_answered() {
    let mut server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let deployment = default_subjects(&server, dir.path());

    // A stage user may not create streams: before `sleuth setup` a stage fails at start-up and says why.
    let admin_url = nats::url_as(&server, "admin");
    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &admin_url)]);
    let stdout = String::from_utf8_lossy(&setup.stdout);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    assert!(stdout.contains("SLEUTH_WORK") && stdout.contains("sleuth_planner"), "{stdout}");

    let stages = ["retrieve", "graph", "synthesizer", "grader", "planner", "intake"];
    let processes: Vec<ServeProcess> = stages
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

    // Turns with two actions: the planner sends both, and the executor that records its slot first sends no
    // sibling work (which its user may not send). Nothing waits for a redelivery, nothing is refused.
    let (client_url, subjects) = (nats::url_as(&server, "client"), deployment.config().subjects());
    assert!(
        ask_parallel(&client_url, &subjects, "first").await >= 2,
        "the questions no longer run two actions in a turn: the test tests nothing"
    );
    for process in &processes {
        assert_eq!(
            redeliveries(process).await,
            0.0,
            "{} waited for a redelivery:\n{}",
            process.stages,
            process.last_lines()
        );
    }
    a_reply_subject_may_not_aim_a_stage_at_another_request(&server, &subjects).await;
    server.assert_no_violations_but(&["$SRV.PING"]);

    // After a NATS restart the stages reconnect, and their KV watches of the entity types, which missed the
    // server's heartbeats, replace their consumers: deleting the old one is allowed too.
    server.stop(true);
    server.start_again();
    for process in &processes {
        ready_again(process).await;
    }
    ask_parallel(&client_url, &subjects, "after a NATS restart").await;
    // A watch notices the missed heartbeats within a few seconds; give every watcher time to replace its consumer.
    tokio::time::sleep(Duration::from_secs(12)).await;
    ask_parallel(&client_url, &subjects, "after the watches were replaced").await;
    server.assert_no_violations_but(&["$SRV.PING"]);
}

/// A work message no stage can read is a dead letter: the stage that meets it keeps a copy in `SLEUTH_DEAD`,
/// under its own NATS user, before it terminates it, so nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_is_kept_in_the_dead_letter_stream() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let deployment = default_subjects(&server, dir.path());
    let admin_url = nats::url_as(&server, "admin");
    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &admin_url)]);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    assert!(String::from_utf8_lossy(&setup.stdout).contains("SLEUTH_DEAD"));
    let _planner =
        ServeProcess::start(&deployment, "planner", &[("SLEUTH__NATS__URL", &nats::url_as(&server, "planner"))]);

    let subjects = deployment.config().subjects();
    let id = uuid::Uuid::now_v7();
    let work = subjects.loop_work(sleuth_messages::Stage::Planner, id, 0);
    let admin = sleuth_actors::nats_client::connect(&admin_url, "deploy test").await.unwrap();
    let js = async_nats::jetstream::new(admin);
    js.publish(work.clone(), "not a work item".into()).await.unwrap().await.unwrap();

    let dead = js.get_stream(subjects.dead_stream()).await.unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let kept = loop {
        if let Ok(message) =
            dead.get_last_raw_message_by_subject(&subjects.dead(sleuth_messages::Stage::Planner, id)).await
        {
            break message;
        }
        assert!(Instant::now() < until, "no copy of the dead letter in SLEUTH_DEAD after 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(&kept.payload[..], b"not a work item");
    let header = |name: &str| kept.headers.get(name).map(|v| v.as_str().to_string()).unwrap_or_default();
    assert_eq!(header("Sleuth-Dead-Subject"), work);
    assert!(header("Sleuth-Dead-Reason").contains("undecodable"), "{}", header("Sleuth-Dead-Reason"));
    server.assert_no_violations_but(&[]);
}

/// `url`'s user, with one delivery per work message and a 1 s ack wait, and `extra`.
fn with<'a>(url: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env =
        vec![("SLEUTH__NATS__URL", url), ("SLEUTH__NATS__MAX_DELIVER", "1"), ("SLEUTH__NATS__ACK_WAIT_MS", "1000")];
    env.extend_from_slice(extra);
    env
}

/// A work message out of deliveries (its planner died holding it, and one delivery is all it gets) is copied to
/// `SLEUTH_DEAD` by a live planner's dead-letter watcher, under the planner's own user, and its request ends
/// with a dead-letter error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_out_of_deliveries_is_moved_to_the_dead_letter_stream() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let deployment = default_subjects(&server, dir.path());
    let (admin_url, sleuth_url, planner_url) =
        (nats::url_as(&server, "admin"), nats::url_as(&server, "sleuth"), nats::url_as(&server, "planner"));
    let setup = run_cli(&deployment, &["setup"], &with(&admin_url, &[]));
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &with(&sleuth_url, &[]));
    let holder =
        ServeProcess::start(&deployment, "planner", &with(&planner_url, &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "20000")]));

    let subjects = deployment.config().subjects();
    let client = sleuth_actors::nats_client::connect(&nats::url_as(&server, "client"), "deploy test").await.unwrap();
    let id = uuid::Uuid::now_v7();
    let asked = {
        let subjects = subjects.clone();
        let request = AskRequest { request_id: Some(id), ..AskRequest::new(QUESTION) };
        let timeout = Duration::from_secs(60);
        tokio::spawn(
            async move { client::ask_with(&client, &subjects, request, timeout, None, &Default::default()).await },
        )
    };
    // The holder takes the planner's work and dies with it; a live planner watches for the dead letter.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    holder.kill();
    let _live = ServeProcess::start(&deployment, "planner", &with(&planner_url, &[]));

    let reply =
        tokio::time::timeout(Duration::from_secs(30), asked).await.expect("a reply within 30 s").unwrap().unwrap();
    match &reply.outcome {
        Outcome::Error(e) => assert_eq!(e.kind, sleuth_messages::ErrorKind::DeadLetter, "{e}"),
        Outcome::Answer(a) => panic!("expected a dead-letter error, got an answer: {}", a.answer),
    }
    let admin = sleuth_actors::nats_client::connect(&admin_url, "deploy test").await.unwrap();
    let dead = async_nats::jetstream::new(admin).get_stream(subjects.dead_stream()).await.unwrap();
    let kept = dead
        .get_last_raw_message_by_subject(&subjects.dead(sleuth_messages::Stage::Planner, id))
        .await
        .expect("a copy of the dead letter in SLEUTH_DEAD");
    let header = |name: &str| kept.headers.get(name).map(|v| v.as_str().to_string()).unwrap_or_default();
    assert_eq!(header("Sleuth-Dead-Subject"), subjects.loop_commit(sleuth_messages::Stage::Planner, id));
    assert!(header("Sleuth-Dead-Reason").contains("failed 1 deliveries"), "{}", header("Sleuth-Dead-Reason"));
    let (item, _) = codec::decode::<sleuth_messages::WorkItem>(&kept.payload).expect("the work item, intact");
    assert_eq!(item.envelope.request_id, id);
    server.assert_no_violations_but(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_user_may_not_touch_another_stages_work_or_keys() {
    let server = nats::with_accounts();
    let (planner, mut errors) = connect_as(&server, "planner").await;

    // Work for the grader is the executors' to send, with or without the state it commits.
    let id = uuid::Uuid::now_v7();
    let subjects = Subjects::default();
    for forged in [subjects.loop_commit(Stage::Grader, id), subjects.loop_work(Stage::Grader, id, 0)] {
        planner.publish(forged.clone(), "forged".into()).await.unwrap();
        planner.flush().await.unwrap();
        let refused = refusal(&mut errors).await;
        assert!(refused.to_lowercase().contains("permissions violation") && refused.contains(&forged), "{refused}");
    }

    // Conversations belong to intake: the planner may not write one.
    planner.publish("$KV.sleuth_conversations.some-chat", "forged".into()).await.unwrap();
    planner.flush().await.unwrap();
    let refused = refusal(&mut errors).await;
    assert!(refused.contains("$KV.sleuth_conversations"), "{refused}");

    // Nor may a client answer in a stage's place, or write a request's state.
    let (client, mut errors) = connect_as(&server, "client").await;
    for forged in [subjects.loop_commit(Stage::Synthesizer, id), subjects.loop_state(id)] {
        client.publish(forged.clone(), "forged".into()).await.unwrap();
        client.flush().await.unwrap();
        assert!(refusal(&mut errors).await.contains(&forged));
    }

    // A permitted subject raises nothing (no stream takes it: the stream names the default prefix, and this
    // server has no streams).
    planner.publish(subjects.loop_work(Stage::Retrieve, id, 1), "x".into()).await.unwrap();
    planner.flush().await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(500), errors.recv()).await.is_err());
    server.assert_no_violations_but(&[
        &subjects.loop_commit(Stage::Grader, id),
        &subjects.loop_work(Stage::Grader, id, 0),
        "$KV.sleuth_conversations.some-chat",
        &subjects.loop_commit(Stage::Synthesizer, id),
        &subjects.loop_state(id),
    ]);
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
    // nats-server 2.9 names the user as `User "planner"`, 2.11 and later as `"SLEUTH/user:planner"`.
    server.assert_no_violations_but(&["User \"planner\"", "/user:planner\""]);
}

#[test]
fn setup_refuses_streams_whose_replicas_are_not_the_configured_ones() {
    let server = nats::nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::new(&server.url, &unique("replicas"), dir.path());
    let first = run_cli(&deployment, &["setup"], &[]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    // The streams exist with one replica; a deployment that now says three is told how to move them.
    let again = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__REPLICAS", "3")]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success(), "setup must refuse: {stderr}");
    assert!(stderr.contains("has 1 replica(s) but nats.replicas is 3") && stderr.contains("--replicas 3"), "{stderr}");
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

/// The subjects `user` may publish to in `deploy/nats/accounts.conf`.
fn publish_allowed(accounts: &str, user: &str) -> Vec<String> {
    let block = accounts
        .split("{ user: ")
        .find(|b| b.split(',').next() == Some(user))
        .unwrap_or_else(|| panic!("accounts.conf has no user {user}"));
    let list = block.split("publish: { allow: [").nth(1).and_then(|l| l.split(']').next()).unwrap_or_default();
    list.lines().map(str::trim).filter_map(|l| l.strip_prefix('"')?.strip_suffix('"')).map(str::to_string).collect()
}

/// NATS subject matching: `*` is one token, `>` the rest.
fn matches(pattern: &str, subject: &str) -> bool {
    let (mut p, mut s) = (pattern.split('.'), subject.split('.'));
    loop {
        match (p.next(), s.next()) {
            (Some(">"), Some(_)) => return true,
            (Some(a), Some(b)) if a == "*" || a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[test]
fn each_stage_user_may_send_work_exactly_where_its_stage_sends_it() {
    use sleuth_actors::machine::may_send;
    use sleuth_messages::Stage;
    let accounts = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/nats/accounts.conf"))
        .expect("read deploy/nats/accounts.conf");
    let stages = [Stage::Intake, Stage::Planner, Stage::Retrieve, Stage::Graph, Stage::Grader, Stage::Synthesizer];
    let targets = [Stage::Planner, Stage::Retrieve, Stage::Graph, Stage::Grader, Stage::Synthesizer];
    let (subjects, id) = (Subjects::default(), uuid::Uuid::nil());
    // Work to a stage either commits the state it carries or follows a commit: both or neither.
    let work = |to: Stage| [subjects.loop_commit(to, id), subjects.loop_work(to, id, 0), subjects.loop_work(to, id, 1)];
    let allowed = |user: &str, subject: &str| publish_allowed(&accounts, user).iter().any(|p| matches(p, subject));
    for by in stages {
        for to in targets {
            for subject in work(to) {
                assert_eq!(
                    allowed(by.as_str(), &subject),
                    may_send(Some(by), to),
                    "accounts.conf and machine::may_send disagree on whether {by} sends work to {to} ({subject})"
                );
            }
        }
        // Ending a request from outside the loop (cancel, watchdog, dead letter) happens in every process, and
        // commits the state alone; so does a join that waits for its sibling.
        for to in targets.into_iter().filter(|to| may_send(None, *to)) {
            assert!(work(to).iter().all(|w| allowed(by.as_str(), w)), "{by} ends requests, but may not send to {to}");
        }
        assert!(allowed(by.as_str(), &subjects.loop_state(id)), "{by} may not commit a state");
        // Only intake arms a request's deadline timer.
        assert_eq!(allowed(by.as_str(), "sleuth.v1.work.watchdog.x"), by == Stage::Intake, "{by}: deadline timers");
    }
    // The union user of a process that serves several stages may send everything any of them sends.
    for to in targets {
        assert!(work(to).iter().all(|w| allowed("sleuth", w)), "the sleuth user may not send work to {to}");
    }
    // The deployment's clients may read states, never write one.
    for user in ["client", "gateway"] {
        assert!(!allowed(user, &subjects.loop_state(id)), "{user} may write a state");
        assert!(targets.iter().all(|to| work(*to).iter().all(|w| !allowed(user, w))), "{user} may send work");
    }
    assert!(
        matches("sleuth.v1.work.>", "sleuth.v1.work.grader.x") && !matches("sleuth.v1.work.*", "sleuth.v1.work.a.b")
    );
}
