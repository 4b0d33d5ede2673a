//! Crash safety: SIGKILL the planner process in the middle of a request; a restarted planner picks the
//! redelivered message up and the request still gets exactly one answer.

use std::time::Duration;

use sleuth_actors::client;
use sleuth_messages::{AskRequest, EventKind, Outcome, Phase};
use sleuth_tests::{events_of, nats::nats_server, process::*, stored_state, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planner_killed_mid_request_still_gives_exactly_one_answer() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::seeded(&nats.url, &unique("crash"), dir.path());
    // A short AckWait so the killed planner's message comes back quickly.
    deployment.env.push(("SLEUTH__NATS__ACK_WAIT_MS".into(), "1500".into()));
    let config = deployment.config();
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &[]);
    // This planner takes 30 s per message, sending in-progress acks meanwhile: it will be killed holding one.
    let slow_planner = ServeProcess::start(&deployment, "planner", &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "30000")]);

    let request = AskRequest { request_id: Some(uuid::Uuid::now_v7()), ..AskRequest::new("Which anime is Luffy in?") };
    let request_id = request.request_id.unwrap();
    let url = nats.url.clone();
    let subjects = config.subjects();
    let asked =
        tokio::spawn(async move { client::ask_remote(&url, &subjects, request, Duration::from_secs(60), None).await });

    // Wait until the request is accepted and the planner holds its message (still Planning after a while).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(state) = stored_state(&config, request_id).await {
            assert_eq!(state.phase, Phase::Planning);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "request was never accepted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let state = stored_state(&config, request_id).await.unwrap();
    assert_eq!(state.phase, Phase::Planning, "in-progress acks kept the message with the slow planner");

    slow_planner.kill();
    let _planner = ServeProcess::start(&deployment, "planner", &[]);

    let reply = asked.await.unwrap().expect("the request is answered after the crash");
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{:?}", reply.outcome);
    let state = stored_state(&config, request_id).await.unwrap();
    assert_eq!(state.phase, Phase::Done);
    assert_eq!(state.turns.len(), reply.turns.len());
    let events = events_of(&config, request_id, Duration::from_secs(1)).await;
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Final).count(), 1, "exactly one answer");
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Planned && e.turn == 1).count(), 1, "turn 1 planned once");
}
