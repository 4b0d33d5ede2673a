//! Controlling a request over NATS: cancellation (`sleuth.v1.cancel.<id>`, and Ctrl-C in `sleuth ask`), the
//! deadline watchdog when a stage has no live process, admission (`overloaded` when a request could not start
//! before its deadline), and following a request with `sleuth watch` and `sleuth ask --watch`.

use std::time::{Duration, Instant};

use futures::StreamExt;
use sleuth_actors::client;
use sleuth_messages::{AskReply, AskRequest, ErrorKind, EventKind, Outcome, Phase, Stage, TerminationReason};
use sleuth_tests::{events_of, nats::nats_server, process::*, stored_state, unique};

const QUESTION: &str = "Which anime is Luffy in?";

fn reason(reply: &AskReply) -> TerminationReason {
    match &reply.outcome {
        Outcome::Answer(a) => a.termination_reason,
        Outcome::Error(e) => panic!("expected an answer, got {e}"),
    }
}

/// Waits until the request's state exists and is in `phase`.
async fn wait_for_phase(config: &sleuth_actors::config::Config, id: uuid::Uuid, phase: Phase) {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if stored_state(config, id).await.is_some_and(|s| s.phase == phase) {
            return;
        }
        assert!(Instant::now() < until, "request {id} never reached {phase:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn status(nats_url: &str, deployment: &Deployment, stage: Stage) -> serde_json::Value {
    let client = async_nats::connect(nats_url).await.unwrap();
    let reply = client.request(deployment.config().subjects().status(stage), "".into()).await.expect("status");
    serde_json::from_slice(&reply.payload).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_mid_loop_ends_the_request_within_one_hop_and_nothing_more_is_published() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("cancel"), dir.path());
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &[]);
    // The planner sits on its work for 20 s: the cancel must drop it, not wait for it.
    let _planner = ServeProcess::start(&deployment, "planner", &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "20000")]);
    let config = deployment.config();
    let subjects = config.subjects();
    let client = async_nats::connect(&nats.url).await.unwrap();

    let id = uuid::Uuid::now_v7();
    let mut work = client.subscribe(format!("{}.work.*.{id}", subjects.prefix)).await.unwrap();
    let asked = {
        let (url, subjects) = (nats.url.clone(), subjects.clone());
        let request = AskRequest { request_id: Some(id), ..AskRequest::new(QUESTION) };
        tokio::spawn(async move { client::ask_remote(&url, &subjects, request, Duration::from_secs(60), None).await })
    };
    wait_for_phase(&config, id, Phase::Planning).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let sent = Instant::now();
    client.publish(subjects.cancel(id), "".into()).await.unwrap();
    client.flush().await.unwrap();
    let reply = asked.await.unwrap().expect("a final reply");
    let took = sent.elapsed();
    assert_eq!(reason(&reply), TerminationReason::Cancelled);
    assert!(took < Duration::from_secs(2), "cancelled in {took:?}");

    // Work published before the cancel (the planner's turn 1 and the deadline timer) was already seen; after the
    // final reply, nothing more appears for this request.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(200), work.next()).await {}
    let late = tokio::time::timeout(Duration::from_secs(2), work.next()).await;
    assert!(late.is_err(), "a work message after the cancel: {:?}", late.ok().flatten().map(|m| m.subject));

    let state = stored_state(&config, id).await.unwrap();
    assert_eq!(state.phase, Phase::Done);
    assert!(state.turns.is_empty(), "the planner's turn was dropped, not recorded");
    let events = events_of(&config, id, Duration::from_millis(500)).await;
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Final).count(), 1, "exactly one final event");
    let planner = status(&nats.url, &deployment, Stage::Planner).await;
    assert_eq!(planner["counters"]["cancelled"], 1, "the planner dropped its in-flight work: {planner}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_finished_or_unknown_request_does_nothing() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("late_cancel"), dir.path());
    let _all = ServeProcess::start(&deployment, "all", &[]);
    let config = deployment.config();
    let reply =
        client::ask_remote(&nats.url, &config.subjects(), AskRequest::new(QUESTION), Duration::from_secs(30), None)
            .await
            .expect("answer");
    let id = reply.request_id.unwrap();
    let before = stored_state(&config, id).await.unwrap();

    let client = async_nats::connect(&nats.url).await.unwrap();
    client.publish(config.subjects().cancel(id), "".into()).await.unwrap();
    client.publish(config.subjects().cancel(uuid::Uuid::now_v7()), "".into()).await.unwrap();
    client.flush().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;

    assert_eq!(stored_state(&config, id).await.unwrap(), before, "the finished request is untouched");
    let events = events_of(&config, id, Duration::from_millis(500)).await;
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Final).count(), 1);
    assert_eq!(reason(&reply), TerminationReason::Sufficient);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_reply_comes_on_time_with_every_planner_dead() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("watchdog"), dir.path());
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &[]);
    let planner = ServeProcess::start(&deployment, "planner", &[]);
    planner.kill();
    let config = deployment.config();

    let timeout_ms = 2_000;
    let request = AskRequest { timeout_ms: Some(timeout_ms), ..AskRequest::new(QUESTION) };
    let sent = Instant::now();
    let reply = client::ask_remote(&nats.url, &config.subjects(), request, Duration::from_secs(30), None)
        .await
        .expect("the watchdog answers");
    let took = sent.elapsed();
    assert_eq!(reason(&reply), TerminationReason::Deadline);
    assert!(took <= Duration::from_millis(timeout_ms + 1_000), "the deadline reply took {took:?}");
    let id = reply.request_id.unwrap();
    let events = events_of(&config, id, Duration::from_millis(500)).await;
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Final).count(), 1, "one reply however many watchdogs");
    let state = stored_state(&config, id).await.unwrap();
    assert_eq!((state.phase, state.stop_reason), (Phase::Done, Some(TerminationReason::Deadline)));
    assert!(state.turns.is_empty(), "no planner ever ran");
}

/// Work items waiting for a planner, from the planner consumer's info.
async fn planner_backlog(nats_url: &str, deployment: &Deployment) -> u64 {
    let js = async_nats::jetstream::new(async_nats::connect(nats_url).await.unwrap());
    let subjects = deployment.config().subjects();
    let stream = js.get_stream(subjects.loops_stream()).await.unwrap();
    stream.consumer_info(subjects.consumer(Stage::Planner)).await.unwrap().num_pending
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_planner_taking_work_a_new_request_is_refused_at_once_as_overloaded() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("overload"), dir.path());
    let _intake = ServeProcess::start(&deployment, "intake", &[("SLEUTH__INTAKE__ADMISSION_MIN_BACKLOG", "5")]);
    // The planner creates its consumer, then dies: what intake accepts from now on waits in its queue.
    let planner = ServeProcess::start(&deployment, "planner", &[]);
    planner.kill();
    let subjects = deployment.config().subjects();
    let ask = |timeout_ms: u64| {
        let (url, subjects) = (nats.url.clone(), subjects.clone());
        let request = AskRequest { timeout_ms: Some(timeout_ms), ..AskRequest::new(QUESTION) };
        tokio::spawn(async move { client::ask_remote(&url, &subjects, request, Duration::from_secs(120), None).await })
    };
    // Six requests are admitted: the queue is short at first, and how fast it drains is not known yet.
    let waiting: Vec<_> = (0..6).map(|_| ask(90_000)).collect();
    let until = Instant::now() + Duration::from_secs(20);
    while planner_backlog(&nats.url, &deployment).await < 6 {
        assert!(Instant::now() < until, "the six requests never reached the planner's queue");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Long enough for intake to see that nothing is taken from the queue.
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    let sent = Instant::now();
    let reply = ask(30_000).await.unwrap().expect("intake answers");
    let took = sent.elapsed();
    let Outcome::Error(error) = &reply.outcome else { panic!("expected overloaded, got {:?}", reply.outcome) };
    assert_eq!(error.kind, ErrorKind::Overloaded, "{error}");
    assert!(error.retryable, "overloaded is worth retrying: {error}");
    assert!(error.message.contains("no planner has taken work"), "{error}");
    println!("refused as overloaded in {took:?}: {}", error.message);

    // Planners come back: the queue drains, what waited is answered, and new requests are admitted again.
    let _rest = ServeProcess::start(&deployment, "planner,retrieve,graph,grader,synthesizer", &[]);
    for request in waiting {
        let reply = request.await.unwrap().expect("a waiting request is answered");
        assert!(matches!(reply.outcome, Outcome::Answer(_)), "{:?}", reply.outcome);
    }
    // Intake reads the backlog again once its last reading is older than SAMPLE_EVERY.
    tokio::time::sleep(sleuth_actors::tenancy::admission::SAMPLE_EVERY * 2).await;
    let reply = ask(30_000).await.unwrap().expect("intake answers");
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "admitted again: {:?}", reply.outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_watch_and_watch_show_every_event_over_nats() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("watch"), dir.path());
    let _all = ServeProcess::start(&deployment, "all", &[]);

    let out = run_cli(&deployment, &["ask", "--watch", QUESTION], &[]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in ["· accepted", "planned", "retrieved", "graded: sufficient=true", "· final", "· plan"] {
        assert!(stderr.contains(line), "--watch printed no {line:?}:\n{stderr}");
    }
    let id = printed_request_id(&stdout).expect("request id").to_string();

    // Later, from another process: the whole history, up to the final event.
    let out = run_cli(&deployment, &["watch", &id], &[]);
    let watched = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{watched}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = watched.lines().collect();
    assert!(lines.first().is_some_and(|l| l.starts_with("· accepted")), "{watched}");
    // The final event shows the short answer the reply leads with.
    assert!(lines.last().is_some_and(|l| l.starts_with("· final") && l.contains("One Piece")), "{watched}");
    assert_eq!(lines.iter().filter(|l| l.contains("planned")).count(), 3, "three turns: {watched}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_sleuth_ask_cancels_the_request() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("ctrlc"), dir.path());
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &[]);
    let _planner = ServeProcess::start(&deployment, "planner", &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "20000")]);
    let config = deployment.config();
    let client = async_nats::connect(&nats.url).await.unwrap();
    let mut accepted = client.subscribe(format!("{}.events.*", config.subjects().prefix)).await.unwrap();

    let child = spawn_cli(&deployment, &["ask", QUESTION], &[]);
    let first = tokio::time::timeout(Duration::from_secs(20), accepted.next()).await.expect("the question arrives");
    let id: uuid::Uuid = first.unwrap().subject.rsplit('.').next().unwrap().parse().unwrap();
    wait_for_phase(&config, id, Phase::Planning).await;
    let _ = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stderr.contains(&format!("cancelling request {id}")), "{stderr}");
    assert!(stdout.contains("stopped: cancelled"), "{stdout}\n{stderr}");
    assert_eq!(stored_state(&config, id).await.unwrap().phase, Phase::Done);
}
