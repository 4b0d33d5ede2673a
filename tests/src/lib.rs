//! Test-support harness: real services and real `sleuth` processes for the end-to-end tests.
//!
//! Each service comes from, in order: the URL in its variable (`SLEUTH_TEST_NATS_URL`,
//! `SLEUTH_TEST_DATABASE_URL`, `SLEUTH_TEST_QDRANT_URL`); a server the harness starts from a binary on PATH (or,
//! for PostgreSQL, the local server on 127.0.0.1:5432); a container of the official image when a Docker engine
//! answers (`docker.rs`; `SLEUTH_TEST_DOCKER=1` makes it the only way). A missing service fails the test with a
//! message naming what to install; it never passes silently.

pub mod cluster;
pub mod docker;
pub mod gateway;
pub mod llm;
pub mod nats;
pub mod otlp;
pub mod own_postgres;
pub mod own_qdrant;
pub mod postgres;
pub mod process;
pub mod seeded;

/// A port nothing listens on right now, for a server the test starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free port")
}

/// True when an executable named `program` is in a directory of PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// A unique, subject-safe name for one test's prefix, suffix and directories.
pub fn unique(name: &str) -> String {
    format!("{name}_{}", uuid::Uuid::new_v4().simple().to_string().get(..8).unwrap_or("x"))
}

use std::{collections::HashMap, sync::Arc, time::Duration};

use futures::StreamExt;
use sleuth_actors::{
    bus::{Bus, nats::NatsBus},
    config::Config,
    store::{StateStore, nats_loops::LoopStream},
};
use sleuth_messages::{Event, EventKind, LoopState, codec};

/// What a final answer says (its text and the documents it cites), for comparing two answers to one question.
pub fn gist(reply: &sleuth_messages::AskReply) -> String {
    match &reply.outcome {
        sleuth_messages::Outcome::Answer(answer) => {
            let cited: Vec<String> = answer.citations.iter().map(|c| format!("{}:{}", c.n, c.doc_id)).collect();
            format!("answer: {} | {}", answer.answer, cited.join(" "))
        }
        other => format!("{other:?}"),
    }
}

/// Every event of a request, collected until none arrives for `settle`.
pub async fn events_of(config: &Config, request_id: uuid::Uuid, settle: Duration) -> Vec<Event> {
    let url = config.nats.url.clone().expect("nats url");
    let client = sleuth_actors::nats_client::connect(&url, "sleuth test").await.expect("connect");
    let bus = NatsBus::start(client, Arc::new(config.clone())).await.expect("bus");
    let mut stream = bus.events(request_id).await.expect("events");
    let mut events = Vec::new();
    while let Ok(Some(event)) = tokio::time::timeout(settle, stream.next()).await {
        events.push(event);
    }
    events
}

/// A request's loop state as stored in the deployment's loop bucket.
pub async fn stored_state(config: &Config, request_id: uuid::Uuid) -> Option<LoopState> {
    let url = config.nats.url.clone().expect("nats url");
    let client = sleuth_actors::nats_client::connect(&url, "sleuth test").await.expect("connect");
    let store = LoopStream::new(&client, config).expect("the loop bucket");
    store.load(request_id).await.expect("load").map(|(s, _)| std::sync::Arc::unwrap_or_clone(s))
}

/// Every `final` event the deployment's events stream holds, counted per request: more than one for a request
/// means a final event was stored twice. Reads up to the stream's last sequence at the call, so a consumer that
/// stalls or errs while a cluster node comes back (an ordered consumer recreates itself) cuts nothing short; fails
/// the test if that sequence is not read within 60 s.
pub async fn final_events(config: &Config) -> HashMap<uuid::Uuid, usize> {
    let url = config.nats.url.clone().unwrap();
    let client = sleuth_actors::nats_client::connect(&url, "sleuth test").await.unwrap();
    let js = async_nats::jetstream::new(client);
    let subjects = config.subjects();
    let mut stream = js.get_stream(subjects.events_stream()).await.expect("the events stream");
    let state = stream.info().await.expect("the events stream's state").state.clone();
    let mut finals = HashMap::new();
    if state.messages == 0 {
        return finals;
    }
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
            filter_subject: subjects.events_all(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let message = match tokio::time::timeout_at(deadline, messages.next()).await {
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(e))) => {
                eprintln!("events reader: {e} (the ordered consumer recreates itself)");
                continue;
            }
            Ok(None) => panic!("the events stream's messages ended before sequence {}", state.last_sequence),
            Err(_) => panic!("the events stream was not read up to sequence {} within 60 s", state.last_sequence),
        };
        if let Ok((event, _)) = codec::decode::<Event>(&message.payload)
            && event.kind == EventKind::Final
        {
            *finals.entry(event.request_id).or_insert(0) += 1;
        }
        if message.info().is_ok_and(|i| i.stream_sequence >= state.last_sequence) {
            return finals;
        }
    }
}

/// [`final_events`], read again until each of `requests` has one or `within` has passed. A request's reply and its
/// final event are sent together, so a client may hold the answer before the event is stored: while a cluster
/// elects the events stream's new leader, the event's publish waits (and is retried by a redelivery).
pub async fn final_events_of(config: &Config, requests: &[uuid::Uuid], within: Duration) -> HashMap<uuid::Uuid, usize> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let finals = final_events(config).await;
        if requests.iter().all(|id| finals.contains_key(id)) || tokio::time::Instant::now() >= deadline {
            return finals;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
