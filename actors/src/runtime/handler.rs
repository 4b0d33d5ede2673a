//! The delivery handler: the one place that implements the delivery rule (at-least-once delivery,
//! exactly-once effect: ARCHITECTURE.md, Delivery) for every stage.
//!
//! 1. take the state and its revision from the message (what its publisher committed; over NATS), else load them;
//!    if the work is already applied, skip to 4;
//! 2. do the work (with in-progress acks while it runs, dropped if the request is cancelled);
//! 3. compare-and-swap the new state, reloading and re-checking on conflict (a carried state that is no longer
//!    current is such a conflict); where the store holds work too (NATS), the swap is the first work message the
//!    new state calls for, so the next stage has its work when the swap is done;
//! 4. publish what else the committed state calls for (de-duplicated by message id);
//! 5. ack.
//!
//! Each delivery is one span (`plan`, `retrieve`, `graph`, `grade`, `synthesize`), a child of the span that
//! published the work, so a request is one trace however many processes it crosses.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use sleuth_messages::{ErrorKind, ErrorResponse, LoopState, Phase, Stage, WorkItem};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field::Empty};

use uuid::Uuid;

use super::{
    Counter, NodeContext, finish, kv,
    patience::{PATIENCE_MS, patiently},
    publish::{on_finished, publish_all},
};
use crate::{
    bus::{BusError, Delivery},
    machine,
    stages::StageLogic,
    store::StoreError,
    telemetry::{self, Scope, context, metrics, scope},
};

/// What happened to one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// The stage's work was committed.
    Applied,
    /// The effect was already recorded: only re-published and acked.
    Duplicate,
    /// The request's state is gone (expired or never existed).
    Orphan,
    /// The work failed on its last delivery and the request was ended with an error.
    DeadLettered,
}

impl Handled {
    fn counter(self) -> Counter {
        match self {
            Handled::Applied => Counter::Applied,
            Handled::Duplicate => Counter::Duplicates,
            Handled::Orphan => Counter::Orphans,
            Handled::DeadLettered => Counter::DeadLetters,
        }
    }
}

/// Handles one delivery end to end. Errors mean the delivery was handed back for redelivery.
pub async fn process(
    ctx: &NodeContext,
    logic: &dyn StageLogic,
    mut delivery: Box<dyn Delivery>,
) -> anyhow::Result<Handled> {
    let item = delivery.item().clone();
    let stage = logic.stage();
    let id = item.envelope.request_id;
    let attempt = delivery.attempt();
    // A redelivery's carried state is likely stale (its first delivery may have committed), and working from it
    // would repeat the work (an LLM call, say) only to conflict: it reads the store instead.
    let snapshot = delivery.take_snapshot();
    // The revision the work was committed at: the request's state is at least there, whoever reads it.
    let floor = snapshot.as_ref().map_or(0, |s| s.revision);
    let snapshot = snapshot.filter(|_| attempt == 1).map(|s| (s.state, s.revision));
    let span = tracing::info_span!(
        "stage",
        otel.name = span_name(stage),
        otel.kind = "consumer",
        sleuth.request_id = %id,
        sleuth.turn = item.envelope.turn,
        sleuth.stage = stage.as_str(),
        sleuth.step = item.envelope.step,
        sleuth.attempt = attempt,
        sleuth.outcome = Empty,
        messaging.system = ctx.messaging_system(),
        messaging.operation.type = "process",
        messaging.operation.name = "process",
        messaging.destination.name = %ctx.subjects.loop_commit(stage, id),
        messaging.consumer.group.name = %ctx.subjects.consumer(stage),
        messaging.message.id = %item.msg_id(),
    );
    context::set_parent(&span, delivery.trace());
    if attempt > 1 {
        ctx.stats.incr(stage, Counter::Redeliveries);
    }
    let _in_flight = metrics::InFlight::start(stage);
    let cancellation = ctx.cancels.register(id);
    let scope = Scope { request_id: id, turn: item.envelope.turn, stage: stage.as_str() };
    let started = Instant::now();
    // The hop's futures are boxed where they are made: each is kilobytes (the loop state lives in them across
    // awaits), and unboxed they made the worker's future about 20 KB, copied four times per hop as the actor
    // runtime moved it (two thirds of the embedded hop's instructions were `memcpy`; bench/HISTORY.md, "fourth
    // measurement").
    let work = Box::pin(run(ctx, logic, &*delivery, snapshot, floor, cancellation.token()));
    let result = scope::within(scope, work.instrument(span.clone())).await;
    drop(cancellation);
    let outcome = match result {
        Ok((handled, state, revision, carried)) => {
            // A delivery whose work was already applied re-publishes only what its own commit led to, and each
            // sends only the work its stage may send (`machine::may_send`).
            let state = state.filter(|s| handled == Handled::Applied || machine::published_by(s, &item));
            if let Some(state) = &state {
                // Only the delivery that ended the request replies, or a redelivery of the synthesizer's work
                // (its first delivery may have died between the commit and the reply).
                let ended_here = handled == Handled::Applied && state.phase == Phase::Done;
                let mut replies = ended_here || (stage == Stage::Synthesizer && attempt > 1);
                // A request's end is stored: its final event must follow, or the request has an answer on record
                // nowhere but in the requester's inbox. While a cluster elects the events stream's leader the
                // publish is retried (the reply only once: a core NATS reply is not de-duplicated), rather than
                // spending the delivery's attempts, after which nothing would publish it again.
                let done = state.phase == Phase::Done;
                let publish = patiently(
                    id,
                    state.deadline_ms,
                    "publish the request's end",
                    |_| done,
                    || {
                        let reply_now = std::mem::take(&mut replies);
                        publish_all(ctx, state, revision, Some(stage), delivery.trace(), reply_now, carried.as_ref())
                    },
                );
                let publish = Box::pin(publish);
                scope::within(scope, publish.instrument(span.clone())).await.context("cannot publish next messages")?;
                if ended_here {
                    on_finished(state);
                }
            }
            delivery.ack().await.context("cannot ack")?;
            ctx.stats.incr(stage, handled.counter());
            span.in_scope(|| tracing::debug!(?handled, elapsed_ms = started.elapsed().as_millis() as u64, "handled"));
            Ok(handled)
        }
        Err(err) if attempt >= ctx.bus.max_deliver() => {
            ctx.stats.incr(stage, Counter::Failures);
            telemetry::record_error(&span, &format!("{err:#}"));
            span.in_scope(|| tracing::error!(error = format!("{err:#}"), "last delivery failed, ending the request"));
            let error = ErrorResponse::new(ErrorKind::DeadLetter, format!("{stage} failed {attempt} times: {err:#}"));
            Box::pin(finish::end_with_error(ctx, id, error)).instrument(span.clone()).await?;
            delivery.ack().await.context("cannot ack")?;
            ctx.stats.incr(stage, Counter::DeadLetters);
            Ok(Handled::DeadLettered)
        }
        Err(err) => {
            ctx.stats.incr(stage, Counter::Failures);
            telemetry::record_error(&span, &format!("{err:#}"));
            span.in_scope(|| tracing::warn!(error = format!("{err:#}"), "stage failed, will retry"));
            let backoff = Duration::from_millis(200u64.saturating_mul(1 << attempt.min(6)));
            delivery.nak(backoff).await.context("cannot nak")?;
            Err(err)
        }
    };
    let label = match &outcome {
        Ok(Handled::Applied) => "applied",
        Ok(Handled::Duplicate) => "duplicate",
        Ok(Handled::Orphan) => "orphan",
        Ok(Handled::DeadLettered) => "dead_letter",
        Err(_) => "failed",
    };
    span.record("sleuth.outcome", label);
    metrics::stage_handled(stage, label, started.elapsed().as_secs_f64());
    outcome
}

/// Compare-and-swap conflicts one delivery retries before it hands the work back.
const MAX_CONFLICTS: u32 = 16;

/// The work's outcome, the state it leaves (to publish from), the revision that state was committed at, when
/// known, and the work item its commit carried (already published).
type Ran = (Handled, Option<Arc<LoopState>>, Option<u64>, Option<WorkItem>);

async fn run(
    ctx: &NodeContext,
    logic: &dyn StageLogic,
    delivery: &dyn Delivery,
    mut carried: Option<(LoopState, u64)>,
    floor: u64,
    cancelled: &CancellationToken,
) -> anyhow::Result<Ran> {
    let item = delivery.item();
    let id = item.envelope.request_id;
    let stage = logic.stage();
    let mut conflicts = 0;
    if carried.is_some() {
        ctx.stats.incr(stage, Counter::StateCarried);
    }
    loop {
        // The carried state is used once: after a conflict the store has something newer.
        let from_message = carried.is_some();
        let loaded = match carried.take() {
            Some((state, revision)) => Some((Arc::new(state), revision)),
            None => current(delivery, ctx, id, floor).await?,
        };
        let Some((state, revision)) = loaded else {
            tracing::warn!("no loop state for this request, dropping the work");
            return Ok((Handled::Orphan, None, None, None));
        };
        let next = if let Some(next) = machine::apply_deadline(&state, telemetry::now_ms()) {
            tracing::info!("deadline passed, stopping retrieval");
            next
        } else if machine::expects(&state, item) {
            anyhow::ensure!(!cancelled.is_cancelled(), "the request was cancelled but has not ended yet");
            let work = with_progress(|| delivery.in_progress(), ctx.bus.ack_wait(), async {
                let delay = ctx.config.debug.stage_delay_ms;
                if delay > 0 {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                logic.apply(&state, item).await
            });
            tokio::select! {
                biased;
                _ = cancelled.cancelled() => {
                    // The cancellation was committed before this process was told: the reload sees the end.
                    ctx.stats.incr(stage, Counter::Cancelled);
                    tracing::info!("request cancelled, in-flight work dropped");
                    continue;
                }
                next = work => next?,
            }
        } else if from_message {
            // The work was derived from the carried state, so it is pending there: the state has moved on since,
            // and only the store says whether this work was applied meanwhile.
            continue;
        } else {
            let (state, revision) = note_duplicate(ctx, state, revision).await;
            return Ok((Handled::Duplicate, state, revision, None));
        };
        let next = Arc::new(next);
        // The first work the new state calls for goes with the commit where the store carries work (its trace
        // context is this hop's span, as for everything the hop publishes).
        let work = ctx.store.carries_work().then(|| machine::first_work(&next, Some(stage))).flatten();
        let trace = work.as_ref().map(|_| context::of_span(&tracing::Span::current(), delivery.trace()));
        let commit = || kv::commit(ctx, &next, revision, work.as_ref().zip(trace.as_ref()));
        match patient(delivery, ctx, id, "store the loop state", commit).await? {
            Some(committed) => {
                let carried = work.filter(|_| committed.carried);
                return Ok((Handled::Applied, Some(next), Some(committed.revision), carried));
            }
            None => {
                ctx.stats.incr(stage, Counter::CasConflicts);
                conflicts += 1;
                // A replicated bucket also refuses a swap while another write to the request is in flight (which
                // may yet fail), so a conflict does not prove a newer state: the reload may read `revision` again.
                // Past the first, conflicts wait a moment for that write to settle.
                if conflicts > 1 {
                    tokio::time::sleep(crate::guard::backoff(conflicts - 2, 5, 200)).await;
                }
                // Each conflict re-runs the work; a request that keeps changing under it (a writer gone wrong)
                // must not hold a worker forever: the delivery goes back with backoff, and counts to its dead letter.
                anyhow::ensure!(
                    conflicts < MAX_CONFLICTS,
                    "the request's state changed under this work {conflicts} times in a row"
                );
                tracing::debug!("revision conflict, reloading");
            }
        }
    }
}

/// The request's state at revision `floor` or later, for a delivery: the store is read until it says so, at most
/// for [`PATIENCE_MS`], while the delivery is kept (in-progress acks). On a cluster any replica of the loop bucket
/// may answer a read (JetStream's direct get), and one that is catching up (a restarted node) answers with an
/// older state, or with none: taken at its word, the work would be judged done already, or its request gone,
/// and dropped. A store that is briefly away is waited for the same way. After the patience, what the store
/// says is taken (an expired request is gone).
async fn current(
    delivery: &dyn Delivery,
    ctx: &NodeContext,
    request_id: Uuid,
    floor: u64,
) -> Result<Option<(Arc<LoopState>, u64)>, StoreError> {
    let give_up = Instant::now() + Duration::from_millis(PATIENCE_MS);
    let read = async {
        let mut attempt = 0;
        loop {
            let loaded = kv::load(ctx, request_id).await;
            let behind = match &loaded {
                Ok(found) => found.as_ref().map_or(0, |(_, revision)| *revision) < floor,
                Err(e) => matches!(e, StoreError::Unavailable(_)),
            };
            if !behind || Instant::now() >= give_up {
                return loaded;
            }
            let wait = crate::guard::backoff(attempt, 20, 1_000);
            match &loaded {
                Err(e) => tracing::warn!(%request_id, attempt, error = %e, "cannot load the loop state yet; retrying"),
                Ok(_) => {
                    tracing::debug!(%request_id, attempt, floor, "read a loop state behind this work's; reading again")
                }
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    };
    with_progress(|| delivery.in_progress(), ctx.bus.ack_wait(), read).await
}

/// Runs a store operation [`patiently`] while the delivery is kept (in-progress acks): a store that is briefly
/// away, as a NATS cluster electing a stream's leader is, is waited for without handing the delivery back, which
/// would spend one of the request's `nats.max_deliver` deliveries per failure and wait out a growing backoff.
/// A retried write that did land before its acknowledgement was lost is found by its compare-and-swap (a
/// conflict, then a reload), as any redelivery's is.
async fn patient<T, F: Future<Output = Result<T, StoreError>>>(
    delivery: &dyn Delivery,
    ctx: &NodeContext,
    request_id: Uuid,
    what: &str,
    op: impl FnMut() -> F,
) -> Result<T, StoreError> {
    let transient = |e: &StoreError| matches!(e, StoreError::Unavailable(_));
    let work = patiently(request_id, u64::MAX, what, transient, op);
    with_progress(|| delivery.in_progress(), ctx.bus.ack_wait(), work).await
}

/// Counts the duplicate in the state, so redeliveries are visible in the KV record. Retries on conflicts;
/// gives up quietly after a few, because the count is informational. Returns the state to publish from (`None`
/// when the request is gone) and the revision it was committed at, when this call committed it.
async fn note_duplicate(
    ctx: &NodeContext,
    mut state: Arc<LoopState>,
    mut revision: u64,
) -> (Option<Arc<LoopState>>, Option<u64>) {
    for _ in 0..5 {
        Arc::make_mut(&mut state).counters.duplicates_skipped += 1;
        match kv::compare_and_swap(ctx, &state, revision).await {
            Ok(Some(committed)) => return (Some(state), Some(committed)),
            _ => match kv::load(ctx, state.request_id).await {
                Ok(Some((fresh, rev))) => (state, revision) = (fresh, rev),
                Ok(None) => return (None, None),
                Err(_) => break,
            },
        }
    }
    (Some(state), None)
}

/// Runs `work` while telling the bus, every third of AckWait, that the delivery is still being worked on
/// (`in_progress` sends one progress ack). A bus without an AckWait needs none, and no timer is armed (arming one
/// per hop woke the runtime's parked thread to move its timer wheel's next deadline).
pub(super) async fn with_progress<T, P: Future<Output = Result<(), BusError>>>(
    in_progress: impl Fn() -> P,
    ack_wait: Option<Duration>,
    work: impl Future<Output = T>,
) -> T {
    let Some(ack_wait) = ack_wait else { return work.await };
    let period = (ack_wait / 3).max(Duration::from_millis(50));
    let ticker = async {
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            interval.tick().await;
            if let Err(e) = in_progress().await {
                tracing::warn!(error = %e, "cannot send in-progress ack");
            }
        }
    };
    tokio::select! {
        out = work => out,
        never = ticker => never,
    }
}

/// The stage names the span tree uses: `plan`, `retrieve`, `graph`, `grade`, `synthesize`.
pub fn span_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Intake => "intake",
        Stage::Planner => "plan",
        Stage::Retrieve => "retrieve",
        Stage::Graph => "graph",
        Stage::Grader => "grade",
        Stage::Synthesizer => "synthesize",
    }
}
