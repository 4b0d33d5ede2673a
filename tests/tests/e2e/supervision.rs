//! Request/reply endpoints (intake's `ask`, the graph's lanes) are answered by supervised actors, like the
//! stages' work queues: a responder that panics on a request is restarted and counted, and the endpoint goes on
//! answering.

use std::{sync::Arc, time::Duration};

use async_nats::service::{Request, ServiceExt};
use ractor::Actor;
use sleuth_actors::{
    bus::memory::MemoryBus,
    config::Config,
    runtime::{
        Counter, NodeContext,
        responder::ResponderArgs,
        supervisor::{Pool, StageArgs, StageSupervisor},
    },
    store::memory::MemoryStore,
};
use sleuth_messages::Stage;
use sleuth_tests::{nats::nats_server, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responder_that_panics_is_restarted_and_the_endpoint_keeps_answering() {
    let nats = nats_server();
    let client = sleuth_actors::nats_client::connect(&nats.url, "sleuth supervision test").await.unwrap();
    let service = client.service_builder().start("sleuth-supervision-test", "0.0.1").await.unwrap();
    let subject = format!("{}.echo", unique("supervision"));
    let endpoint = service.endpoint_builder().name("echo").add(subject.clone()).await.unwrap();
    let config = Arc::new(Config::default());
    let ctx = Arc::new(NodeContext::in_memory(config, MemoryBus::new(5), Arc::new(MemoryStore::default())));
    let echo = ResponderArgs::new(ctx.clone(), Stage::Intake, "echo", endpoint, |request: Request| async move {
        assert_ne!(request.message.payload.as_ref(), b"boom", "a request that crashes its responder");
        let body = request.message.payload.clone();
        request.respond(Ok(body)).await.expect("reply sent");
    });
    // One responder: after it panics, only its restarted successor can answer.
    let (_supervisor, _handle) =
        Actor::spawn(None, StageSupervisor, StageArgs { pool: Pool::Respond(echo), workers: 1 }).await.unwrap();

    let ask = |body: &'static str| {
        let (client, subject) = (client.clone(), subject.clone());
        async move { tokio::time::timeout(Duration::from_secs(2), client.request(subject, body.into())).await }
    };
    let hello = ask("hello").await.expect("answered in time").expect("answered");
    assert_eq!(hello.payload.as_ref(), b"hello");
    assert!(!matches!(ask("boom").await, Ok(Ok(_))), "the request that crashed its responder gets no answer");
    let again = ask("again").await.expect("the restarted responder answers in time").expect("answered");
    assert_eq!(again.payload.as_ref(), b"again");
    assert_eq!(ctx.stats.get(Stage::Intake, Counter::Restarts), 1, "the restart is counted");
}
