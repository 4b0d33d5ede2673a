//! NATS server restarts under load. With questions in flight, the server is stopped, first gracefully (SIGTERM)
//! and then with SIGKILL, and started again on the same port and file store, as a restarted pod on its volume.
//! Every stage process and the client reconnect on their own; every request completes with one answer, and no
//! final event is stored twice.

use std::{sync::Arc, time::Duration};

use sleuth_actors::{client, telemetry::TraceHeaders};
use sleuth_messages::{AskRequest, Outcome};
use sleuth_tests::{final_events_of, nats::own_nats_server, process::*, unique};

const REQUESTS: usize = 150;
const CONCURRENCY: usize = 16;
/// How long the server stays down.
const OUTAGE: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_complete_across_a_graceful_server_restart() {
    restarts_under_load(&[true]).await;
}

/// A SIGKILLed server forgets the stages' pull requests: they pull again when theirs expire (3 s), and a
/// question that finds no intake subscribed yet is sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_complete_across_a_killed_server_restart() {
    restarts_under_load(&[false]).await;
}

/// Stops the server once per entry of `kinds` (true: SIGTERM, false: SIGKILL) with questions in flight.
async fn restarts_under_load(kinds: &[bool]) {
    let mut nats = own_nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("restart"), dir.path());
    let _processes = start_all_separately(&deployment);
    let config = deployment.config();
    let client = sleuth_actors::nats_client::connect(&nats.url, "sleuth restart client").await.unwrap();
    let subjects = config.subjects();
    let mut asked = Vec::new();
    for &graceful in kinds {
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let askers: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                let (client, subjects, next) = (client.clone(), subjects.clone(), next.clone());
                tokio::spawn(async move {
                    let mut answered = Vec::new();
                    while next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < REQUESTS {
                        let request = AskRequest {
                            request_id: Some(uuid::Uuid::now_v7()),
                            ..AskRequest::new("Which anime is Luffy in?")
                        };
                        let id = request.request_id.unwrap();
                        let trace = TraceHeaders::default();
                        let reply =
                            client::ask_with(&client, &subjects, request, Duration::from_secs(60), None, &trace)
                                .await
                                .unwrap_or_else(|e| panic!("request {id} got no answer across the restart: {e:#}"));
                        answered.push((id, reply));
                    }
                    answered
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        nats.stop(graceful);
        tokio::time::sleep(OUTAGE).await;
        nats.start_again();
        let started = std::time::Instant::now();
        let mut replies = Vec::new();
        for asker in askers {
            replies.extend(asker.await.unwrap());
        }
        println!(
            "{} restart: {} requests answered, the last {:.1} s after the server came back",
            if graceful { "graceful" } else { "SIGKILL" },
            replies.len(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(replies.len(), REQUESTS, "every request is answered");
        for (id, reply) in &replies {
            assert!(matches!(reply.outcome, Outcome::Answer(_)), "request {id}: {:?}", reply.outcome);
        }
        asked.extend(replies.into_iter().map(|(id, _)| id));
    }
    let finals = final_events_of(&config, &asked, Duration::from_secs(30)).await;
    for id in &asked {
        assert_eq!(finals.get(id), Some(&1), "request {id} has exactly one stored final event");
    }
}
