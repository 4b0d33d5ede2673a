//! The delivery handler: the one place that implements DESIGN.md § Delivery for every stage.
//!
//! 1. load the state and its revision; if the work is already applied, skip to 4;
//! 2. do the work (with in-progress acks while it runs);
//! 3. compare-and-swap the new state, reloading and re-checking on conflict;
//! 4. publish what the committed state calls for (de-duplicated by message id);
//! 5. ack.

use std::time::{Duration, Instant};

use anyhow::Context;
use sleuth_messages::{ErrorKind, ErrorResponse, LoopState};
use tracing::Instrument;

use super::{NodeContext, publish_all};
use crate::{bus::Delivery, machine, stages::StageLogic, store::StoreError, telemetry};

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

/// Handles one delivery end to end. Errors mean the delivery was handed back for redelivery.
pub async fn process(
    ctx: &NodeContext,
    logic: &dyn StageLogic,
    delivery: Box<dyn Delivery>,
) -> anyhow::Result<Handled> {
    let item = delivery.item().clone();
    let span = tracing::info_span!(
        "stage",
        stage = %item.stage,
        request_id = %item.envelope.request_id,
        turn = item.envelope.turn,
        step = item.envelope.step,
        attempt = delivery.attempt(),
        traceparent = delivery.traceparent().unwrap_or(""),
    );
    let started = Instant::now();
    let result = run(ctx, logic, &*delivery).instrument(span.clone()).await;
    let stage = logic.stage();
    match result {
        Ok((handled, state)) => {
            if let Some(state) = state {
                publish_all(ctx, &state).await.context("cannot publish next messages")?;
            }
            delivery.ack().await.context("cannot ack")?;
            ctx.stats.incr(
                stage,
                match handled {
                    Handled::Applied => "applied",
                    Handled::Duplicate => "duplicates",
                    Handled::Orphan => "orphans",
                    Handled::DeadLettered => "dead_letters",
                },
            );
            span.in_scope(|| tracing::debug!(?handled, elapsed_ms = started.elapsed().as_millis() as u64, "handled"));
            Ok(handled)
        }
        Err(err) if delivery.attempt() >= ctx.bus.max_deliver() => {
            ctx.stats.incr(stage, "failures");
            span.in_scope(|| tracing::error!(error = format!("{err:#}"), "last delivery failed, ending the request"));
            let error = ErrorResponse::new(
                ErrorKind::DeadLetter,
                format!("{stage} failed {} times: {err:#}", delivery.attempt()),
            );
            end_with_error(ctx, item.envelope.request_id, error).await?;
            delivery.ack().await.context("cannot ack")?;
            Ok(Handled::DeadLettered)
        }
        Err(err) => {
            ctx.stats.incr(stage, "failures");
            span.in_scope(|| tracing::warn!(error = format!("{err:#}"), "stage failed, will retry"));
            let backoff = Duration::from_millis(200u64.saturating_mul(1 << delivery.attempt().min(6)));
            delivery.nak(backoff).await.context("cannot nak")?;
            Err(err)
        }
    }
}

async fn run(
    ctx: &NodeContext,
    logic: &dyn StageLogic,
    delivery: &dyn Delivery,
) -> anyhow::Result<(Handled, Option<LoopState>)> {
    let item = delivery.item();
    let id = item.envelope.request_id;
    loop {
        let Some((state, revision)) = ctx.store.load(id).await? else {
            tracing::warn!("no loop state for this request, dropping the work");
            return Ok((Handled::Orphan, None));
        };
        let next = if let Some(next) = machine::apply_deadline(&state, telemetry::now_ms()) {
            tracing::info!("deadline passed, stopping retrieval");
            next
        } else if machine::expects(&state, item) {
            with_progress(delivery, ctx.bus.ack_wait(), async {
                let delay = ctx.config.debug.stage_delay_ms;
                if delay > 0 {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                logic.apply(&state, item).await
            })
            .await?
        } else {
            return Ok((Handled::Duplicate, Some(note_duplicate(ctx, state, revision).await)));
        };
        match ctx.store.compare_and_swap(&next, revision).await {
            Ok(_) => return Ok((Handled::Applied, Some(next))),
            Err(StoreError::Conflict) => {
                tracing::debug!("revision conflict, reloading");
                continue;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Counts the duplicate in the state, so redeliveries are visible in the KV record. Retries on conflicts;
/// gives up quietly after a few, because the count is informational.
async fn note_duplicate(ctx: &NodeContext, mut state: LoopState, mut revision: u64) -> LoopState {
    for _ in 0..5 {
        state.counters.duplicates_skipped += 1;
        match ctx.store.compare_and_swap(&state, revision).await {
            Ok(_) => return state,
            Err(_) => match ctx.store.load(state.request_id).await {
                Ok(Some((fresh, rev))) => (state, revision) = (fresh, rev),
                _ => break,
            },
        }
    }
    state
}

/// Runs `work` while telling the bus, every third of AckWait, that the delivery is still being worked on.
async fn with_progress<T>(delivery: &dyn Delivery, ack_wait: Duration, work: impl Future<Output = T>) -> T {
    let period = (ack_wait / 3).max(Duration::from_millis(50));
    let ticker = async {
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            interval.tick().await;
            if let Err(e) = delivery.in_progress().await {
                tracing::warn!(error = %e, "cannot send in-progress ack");
            }
        }
    };
    tokio::select! {
        out = work => out,
        never = ticker => never,
    }
}

/// Ends a request with an error unless it already ended, then publishes its final messages.
pub async fn end_with_error(ctx: &NodeContext, request_id: uuid::Uuid, error: ErrorResponse) -> anyhow::Result<()> {
    loop {
        let Some((state, revision)) = ctx.store.load(request_id).await? else { return Ok(()) };
        let Some(next) = machine::apply_failure(&state, error.clone(), telemetry::now_ms()) else {
            publish_all(ctx, &state).await?;
            return Ok(());
        };
        match ctx.store.compare_and_swap(&next, revision).await {
            Ok(_) => {
                publish_all(ctx, &next).await?;
                return Ok(());
            }
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
