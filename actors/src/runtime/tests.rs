//! Runtime tests on the in-process bus: supervision restarts a panicking worker and the message it held is
//! redelivered, a duplicate delivery is acked without being re-applied, and exhausted retries end the request.

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use async_trait::async_trait;
use futures::StreamExt;
use ractor::Actor;
use sleuth_messages::{AskRequest, EventBody, LoopState, Outcome, Stage, WorkItem};

use super::{
    Counter, NodeContext, intake,
    supervisor::{NodeSupervisor, Pool, StageArgs},
    worker::WorkerArgs,
};
use crate::{
    bus::{Bus, memory::MemoryBus},
    config::Config,
    ingest,
    retrieval::Retriever,
    stages::{StageLogic, grader::Grader, planner::Planner, retrieve::Retrieve, synthesizer::Synthesizer},
    store::{StateStore, memory::MemoryStore},
};

/// Wraps a stage: panics on its first `panics` calls, then fails on the next `errors` calls, then delegates.
struct Faulty {
    inner: Arc<dyn StageLogic>,
    panics: u32,
    errors: u32,
    calls: AtomicU32,
}

#[async_trait]
impl StageLogic for Faulty {
    fn stage(&self) -> Stage {
        self.inner.stage()
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if call < self.panics {
            panic!("injected panic in {}", self.stage());
        }
        if call < self.panics + self.errors {
            anyhow::bail!("injected failure in {}", self.stage());
        }
        self.inner.apply(state, item).await
    }
}

struct Harness {
    ctx: Arc<NodeContext>,
    bus: Arc<MemoryBus>,
    _dir: tempfile::TempDir,
}

async fn harness(grader: Arc<dyn StageLogic>, max_deliver: i64) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config { data_dir: Some(dir.path().to_path_buf()), ..Config::default() };
    config.retrieval.demo_corpus = false;
    // The runtime's behaviour does not depend on the dense lane: BM25 only keeps these tests model-free.
    config.embedder.kind = crate::config::EmbedderKind::None;
    let retriever = Arc::new(Retriever::open(&config).await.unwrap());
    let docs = ingest::parse_jsonl("fixture", concat!(
        r#"{"id":"luffy","title":"Monkey D. Luffy","text":"Monkey D. Luffy is the captain of the Straw Hat Pirates in One Piece."}"#, "\n",
        r#"{"id":"nami","title":"Nami","text":"Nami is the navigator of the crew captained by Luffy."}"#, "\n",
    ))
    .unwrap();
    ingest::ingest(&retriever, docs, false).await.unwrap();
    config.nats.max_deliver = max_deliver;
    config.stages.workers = 1;
    // Every request passes the grader, whose faults these tests inject: the fast route would skip it.
    config.intake.force_route = Some(sleuth_messages::Route::Enhanced);
    let bus = MemoryBus::new(max_deliver as u32);
    let ctx = Arc::new(NodeContext::in_memory(
        Arc::new(config),
        bus.clone() as Arc<dyn Bus>,
        Arc::new(MemoryStore::default()) as Arc<dyn StateStore>,
    ));
    let logics: Vec<Arc<dyn StageLogic>> = vec![
        Arc::new(Synthesizer::default()),
        grader,
        Arc::new(Retrieve::new(retriever, 4, None, ctx.generation.clone())),
        Arc::new(Planner::default()),
    ];
    let mut args = Vec::new();
    for logic in logics {
        let queue = ctx.bus.work_queue(logic.stage()).await.unwrap();
        args.push(StageArgs { pool: Pool::Work(WorkerArgs { ctx: ctx.clone(), logic, queue }), workers: 1 });
    }
    Actor::spawn(None, NodeSupervisor, args).await.unwrap();
    let letters = ctx.bus.dead_letters(&Stage::ALL).await.unwrap();
    tokio::spawn(super::dead_letters::watch(ctx.clone(), letters));
    Harness { ctx, bus, _dir: dir }
}

async fn ask(h: &Harness, query: &str) -> (uuid::Uuid, sleuth_messages::AskReply) {
    let request_id = uuid::Uuid::now_v7();
    let mut events = h.bus.events(request_id).await.unwrap();
    let request = AskRequest { request_id: Some(request_id), ..AskRequest::new(query) };
    intake::submit(&h.ctx, request, None, &Default::default(), None).await.unwrap();
    let reply = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while let Some(e) = events.next().await {
            if let EventBody::Final(reply) = e.body {
                return reply;
            }
        }
        panic!("events ended without a final event")
    })
    .await
    .expect("final event in time");
    (request_id, reply)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_worker_is_restarted_and_its_message_redelivered() {
    let grader =
        Arc::new(Faulty { inner: Arc::new(Grader::default()), panics: 2, errors: 0, calls: AtomicU32::new(0) });
    let h = harness(grader.clone(), 5).await;
    let (_, reply) = ask(&h, "Which anime is Luffy in?").await;
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{:?}", reply.outcome);
    assert_eq!(h.ctx.stats.get(Stage::Grader, Counter::Restarts), 2, "two panics, two restarts");
    assert_eq!(grader.calls.load(Ordering::SeqCst), 3, "the message came back after each panic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_delivery_is_acked_without_reapplying() {
    let h = harness(Arc::new(Grader::default()), 5).await;
    let (request_id, _) = ask(&h, "Which anime is Luffy in?").await;
    let (before, _) = h.ctx.store.load(request_id).await.unwrap().unwrap();
    let planner_work = WorkItem {
        envelope: sleuth_messages::Envelope {
            schema_version: sleuth_messages::SCHEMA_VERSION,
            request_id,
            turn: 1,
            step: 0,
            deadline_ms: before.deadline_ms,
            attempt: 0,
        },
        stage: Stage::Planner,
    };
    h.bus.inject(planner_work);
    for _ in 0..100 {
        if h.ctx.stats.get(Stage::Planner, Counter::Duplicates) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(h.ctx.stats.get(Stage::Planner, Counter::Duplicates), 1);
    let (after, _) = h.ctx.store.load(request_id).await.unwrap().unwrap();
    assert_eq!(after.turns, before.turns);
    assert_eq!(after.outcome, before.outcome);
    assert_eq!(after.counters.duplicates_skipped, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_failing_every_delivery_ends_the_request_with_an_error() {
    let grader = Arc::new(Faulty {
        inner: Arc::new(Grader::default()),
        panics: 0,
        errors: u32::MAX / 2,
        calls: AtomicU32::new(0),
    });
    let h = harness(grader.clone(), 3).await;
    let (_, reply) = ask(&h, "Which anime is Luffy in?").await;
    let Outcome::Error(error) = reply.outcome else { panic!("expected an error outcome") };
    assert_eq!(error.kind, sleuth_messages::ErrorKind::DeadLetter);
    assert_eq!(grader.calls.load(Ordering::SeqCst), 3, "tried max_deliver times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_panicking_on_every_delivery_is_dead_lettered() {
    let grader = Arc::new(Faulty {
        inner: Arc::new(Grader::default()),
        panics: u32::MAX / 2,
        errors: 0,
        calls: AtomicU32::new(0),
    });
    let h = harness(grader.clone(), 2).await;
    let (_, reply) = ask(&h, "Which anime is Luffy in?").await;
    assert!(
        matches!(reply.outcome, Outcome::Error(ref e) if e.kind == sleuth_messages::ErrorKind::DeadLetter),
        "{:?}",
        reply.outcome
    );
    assert_eq!(h.ctx.stats.get(Stage::Grader, Counter::DeadLetters), 1);
}

/// `/healthz`'s hung-worker check: a delivery in hand past `stages.hung_after_ms` makes the process stuck, and
/// the check clears once that delivery is let go (a worker that finishes slow work is not hung).
#[tokio::test(start_paused = true)]
async fn a_delivery_held_past_hung_after_makes_the_process_stuck() {
    use std::time::Duration;
    let drain = super::Drain::default();
    let limit = Duration::from_secs(600);
    assert_eq!(drain.hung(limit), Ok(()), "nothing in hand");
    let first = drain.busy();
    tokio::time::advance(Duration::from_secs(300)).await;
    let second = drain.busy();
    assert_eq!(drain.hung(limit), Ok(()));
    tokio::time::advance(Duration::from_secs(301)).await;
    let why = drain.hung(limit).expect_err("the first delivery has been held 601 s");
    assert!(why.contains("601 s") && why.contains("stages.hung_after_ms"), "{why}");
    drop(first);
    assert_eq!(drain.hung(limit), Ok(()), "the second has been held 301 s");
    assert_eq!(drain.in_flight(), 1);
    drop(second);
    assert_eq!((drain.in_flight(), drain.longest_in_flight()), (0, None));
}
