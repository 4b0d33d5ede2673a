//! The deadline watchdog. Intake arms one timer per request (a message on `sleuth.v1.work.watchdog.<id>`, shared
//! by every process's watchdog through one durable consumer). A watchdog that receives it early hands it back
//! until the deadline plus `loop.deadline_grace_ms`; after that, if the request is still running (its stage is
//! down, or too slow), the watchdog ends it with the reason `deadline` and the answer from what was gathered.
//! Any number of watchdogs may run: compare-and-swap lets one end the request, and only that one replies.

use std::{sync::Arc, time::Duration};

use sleuth_messages::{Phase, Stage, TerminationReason};

use super::{Counter, NodeContext, finish};
use crate::{
    bus::{DeadlineDelivery, DeadlineQueue},
    machine,
    store::StoreError,
    telemetry,
};

/// What to do with a timer now: wait this much longer, or act.
pub fn due_in(deadline_ms: u64, grace_ms: u64, now_ms: u64) -> Option<Duration> {
    let due = deadline_ms.saturating_add(grace_ms);
    (now_ms < due).then(|| Duration::from_millis(due - now_ms))
}

/// Runs until the bus closes. Spawn it once per process.
pub async fn run(ctx: Arc<NodeContext>, timers: Arc<dyn DeadlineQueue>) -> anyhow::Result<()> {
    loop {
        match timers.next().await {
            Ok(Some(timer)) => {
                if let Err(e) = handle(&ctx, timer).await {
                    tracing::warn!(error = format!("{e:#}"), "deadline watchdog failed on a timer, it will come back");
                }
            }
            Ok(None) => return Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot take deadline timers, retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn handle(ctx: &NodeContext, timer: Box<dyn DeadlineDelivery>) -> anyhow::Result<()> {
    let envelope = timer.envelope().clone();
    if let Some(wait) = due_in(envelope.deadline_ms, ctx.config.loop_.deadline_grace_ms, telemetry::now_ms()) {
        timer.nak(wait).await?;
        return Ok(());
    }
    let id = envelope.request_id;
    let waiting_on = match ctx.store.load(id).await {
        Ok(Some((state, _))) if state.phase != Phase::Done => {
            Some(machine::waiting_on(&state).unwrap_or(Stage::Intake))
        }
        Ok(Some(_)) => None,
        Ok(None) => None,
        Err(StoreError::Corrupt(e)) => {
            // No process can load this request again, so no one can end it: handing the timer back would only
            // bring it here every second until the state expires.
            tracing::error!(request_id = %id, error = %e, "the request's state cannot be read: its deadline timer is dropped");
            timer.ack().await?;
            return Ok(());
        }
        Err(e) => {
            // Not acked: the timer comes back after a pause, and the state store may be back too.
            timer.nak(Duration::from_secs(1)).await?;
            return Err(e.into());
        }
    };
    let Some(stage) = waiting_on else {
        // Done, or expired: nothing to watch any more.
        timer.ack().await?;
        return Ok(());
    };
    let trace = timer.trace().clone();
    let end = finish::end_now(ctx, id, TerminationReason::Deadline, "watchdog", Some(&trace));
    match super::handler::with_progress(|| timer.in_progress(), ctx.bus.ack_wait(), end).await {
        Ok(true) => {
            ctx.stats.incr(stage, Counter::WatchdogAnswers);
            tracing::warn!(request_id = %id, waiting_on = %stage, "deadline passed with no answer: the watchdog answered");
            timer.ack().await?;
            Ok(())
        }
        Ok(false) => {
            timer.ack().await?;
            Ok(())
        }
        Err(e) => {
            timer.nak(Duration::from_secs(1)).await?;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_waits_for_the_deadline_plus_grace() {
        assert_eq!(due_in(1_000, 300, 500), Some(Duration::from_millis(800)));
        assert_eq!(due_in(1_000, 300, 1_299), Some(Duration::from_millis(1)));
        assert_eq!(due_in(1_000, 300, 1_300), None);
        assert_eq!(due_in(u64::MAX, 300, 5), Some(Duration::from_millis(u64::MAX - 5)));
    }
}
