//! The loop bucket against a real nats-server: a request's last message is its state, every write to it is a
//! compare-and-swap on that message's sequence, the commit of a hop is its next stage's work, and the bucket is a
//! JetStream KV bucket an operator reads with KV tools (`nats kv get sleuth_loops <id>.state`, `ls`, `watch`).

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use sleuth_actors::{
    bus::{Bus, nats::NatsBus},
    config::Config,
    entity_types::EntityTypes,
    machine,
    stages::intake,
    store::{StateStore, StoreError, nats_loops::LoopStream},
    telemetry::TraceHeaders,
};
use sleuth_messages::{AskRequest, ErrorKind, ErrorResponse, LoopState, Phase, Stage, codec, subjects::Subjects};
use sleuth_tests::{nats::nats_server, unique};

const QUESTION: &str = "Which anime is Luffy in?";

fn config_for(url: &str) -> Config {
    let mut config = Config::default();
    let name = unique("loops");
    config.nats.url = Some(url.to_string());
    config.nats.prefix = format!("sleuthtest.{name}");
    config.nats.suffix = format!("_{name}");
    config
}

/// A new request's state, due in a minute.
fn new_state() -> LoopState {
    let analysis = intake::analyze(QUESTION, &EntityTypes::new(["anime", "character"]));
    let now = sleuth_actors::telemetry::now_ms();
    machine::new_state(machine::NewRequest {
        request_id: uuid::Uuid::now_v7(),
        request: AskRequest::new(QUESTION),
        caps: machine::caps_for(&Default::default(), analysis.route, None),
        analysis,
        now_ms: now,
        deadline_ms: now + 60_000,
        reply: None,
        trace: Default::default(),
        records_root_span: false,
    })
}

/// The headers of the last message on a request's loop subjects.
async fn last_headers(client: &async_nats::Client, config: &Config, request_id: uuid::Uuid) -> async_nats::HeaderMap {
    let subjects = config.subjects();
    let get = format!("$JS.API.DIRECT.GET.{}", subjects.loops_stream());
    let body = serde_json::json!({ "last_by_subj": subjects.loop_of(request_id) }).to_string();
    let message = client.request(get, body.into()).await.expect("direct get");
    message.headers.expect("a stored message has headers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_is_the_next_stages_work_and_a_stale_write_is_refused() {
    let nats = nats_server();
    let config = config_for(&nats.url);
    let client = sleuth_actors::nats_client::connect(&nats.url, "loop bucket test").await.unwrap();
    let bus = NatsBus::start(client.clone(), Arc::new(config.clone())).await.expect("the streams");
    let store = LoopStream::new(&client, &config).expect("a current nats-server");
    let planner = bus.work_queue(Stage::Planner).await.expect("the planner's queue");

    // Intake's create is the planner's first work.
    let state = Arc::new(new_state());
    let id = state.request_id;
    let work = machine::first_work(&state, Some(Stage::Intake)).expect("the planner's work");
    let trace = TraceHeaders::default();
    let created = store.commit_with_work(&state, None, &work, &trace).await.expect("created");
    assert!(created.carried);
    let (loaded, revision) = store.load(id).await.unwrap().expect("stored");
    assert_eq!((&*loaded, revision), (&*state, created.revision));
    // The id is taken now, with or without work.
    assert!(matches!(store.create(&state).await, Err(StoreError::AlreadyExists)));
    assert!(matches!(store.commit_with_work(&state, None, &work, &trace).await, Err(StoreError::AlreadyExists)));

    // The planner gets the work with the state it commits, and that commit's revision to swap against.
    let mut delivery = tokio::time::timeout(Duration::from_secs(10), planner.next())
        .await
        .expect("the work within 10 s")
        .unwrap()
        .expect("a delivery");
    assert_eq!(delivery.item(), &work);
    let snapshot = delivery.take_snapshot().expect("the work carries the state");
    assert_eq!((snapshot.state, snapshot.revision), ((*state).clone(), created.revision));
    delivery.ack().await.unwrap();

    // A swap on the current revision wins once; the same revision again, or any other, is a conflict.
    let mut next = (*state).clone();
    next.counters.duplicates_skipped = 1;
    let next = Arc::new(next);
    let swapped = store.compare_and_swap(&next, created.revision).await.expect("the current revision");
    assert!(swapped > created.revision);
    assert!(matches!(store.compare_and_swap(&next, created.revision).await, Err(StoreError::Conflict)));
    assert!(matches!(store.compare_and_swap(&next, swapped + 7).await, Err(StoreError::Conflict)));
    // A commit sent again (its message id already stored) is a conflict too, whatever revision it names: the
    // first one decided.
    assert!(matches!(store.commit_with_work(&next, Some(swapped), &work, &trace).await, Err(StoreError::Conflict)));
    assert_eq!(store.load(id).await.unwrap().map(|(s, r)| ((*s).clone(), r)), Some(((*next).clone(), swapped)));

    // Work sent after a commit (a turn's second action) is not a state: the state and its revision stay.
    let mut second = work.clone();
    second.envelope.step = 1;
    bus.publish_work(&second, Some((&next, swapped)), &trace).await.expect("sent");
    let mut poke = tokio::time::timeout(Duration::from_secs(10), planner.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(poke.item(), &second);
    assert_eq!(poke.take_snapshot().map(|s| s.revision), Some(swapped), "it names the commit it follows");
    poke.ack().await.unwrap();
    assert_eq!(store.load(id).await.unwrap().map(|(_, r)| r), Some(swapped));

    // An unfinished request's messages expire with its deadline; its final state lives for nats.loop_ttl_s.
    let ttl = last_headers(&client, &config, id).await;
    let ttl: u64 = ttl.get("Nats-TTL").expect("a time to live").as_str().parse().unwrap();
    assert!((600..=660).contains(&ttl), "deadline in a minute plus the margin: {ttl} s");
    let error = ErrorResponse::new(ErrorKind::Internal, "ended by the test");
    let done = machine::apply_failure(&next, error, sleuth_actors::telemetry::now_ms()).expect("an ending");
    assert_eq!(done.phase, Phase::Done);
    let ended = store.compare_and_swap(&Arc::new(done), swapped).await.expect("ended");
    assert!(last_headers(&client, &config, id).await.get("Nats-TTL").is_none(), "the final state has none");
    assert_eq!(store.load(id).await.unwrap().map(|(s, r)| (s.phase.clone(), r)), Some((Phase::Done, ended)));

    // A request never stored is no state at all.
    assert!(store.load(uuid::Uuid::now_v7()).await.unwrap().is_none());

    // What an operator sees with KV tools: the bucket, the request's keys, and its final state under <id>.state.
    let subjects = config.subjects();
    let js = async_nats::jetstream::new(client.clone());
    let kv = js.get_key_value(subjects.loops_bucket()).await.expect("the loop bucket is a KV bucket");
    let status = kv.status().await.expect("bucket status");
    assert_eq!(status.history(), 1);
    assert!(status.info.config.allow_message_ttl, "per-key TTLs are on");
    let entry = kv.entry(Subjects::state_key(id)).await.expect("kv get").expect("the final state is a key");
    assert_eq!(entry.revision, ended);
    let (stored, _) = codec::decode::<LoopState>(&entry.value).expect("a LoopState in MessagePack");
    assert_eq!((stored.request_id, stored.phase), (id, Phase::Done));
    let keys: Vec<String> = kv.keys().await.expect("kv ls").filter_map(|k| async { k.ok() }).collect().await;
    for key in [format!("{id}.state"), format!("{id}.planner"), format!("{id}.planner.1")] {
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
    let mut watch = kv.watch_with_history(format!("{id}.>")).await.expect("kv watch");
    let seen = tokio::time::timeout(Duration::from_secs(5), watch.next()).await.expect("an entry").unwrap().unwrap();
    assert!(seen.key.starts_with(&id.to_string()), "{}", seen.key);
}
