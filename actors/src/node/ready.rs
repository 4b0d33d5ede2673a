//! Ready means ready: a distributed process says it serves (`/readyz`, its `serving` log line, the `nats micro`
//! ping) only once the server has answered from the loop bucket and holds a pull request from each work
//! queue the process consumes. Intake's `ask` endpoint and the micro services are registered after this check
//! (`node/mod.rs`), so a question never reaches a process that cannot take its first step at once.

use std::{future::Future, sync::OnceLock, time::Duration};

use sleuth_messages::Stage;

use crate::runtime::NodeContext;
use crate::{store::StoreError, telemetry::http::Health};

/// How often a condition is checked again.
const POLL: Duration = Duration::from_millis(20);
/// How long a condition may be unmet before the process logs what it waits for.
const QUIET: Duration = Duration::from_secs(5);

/// Waits until the process can take its first step: the loop bucket answers a read (a direct get right
/// after a server restart, or a stream's creation, answers "no responders" for a moment), and the server holds a
/// pull request from the workers of every stage in `consuming`. While it waits, `/readyz` says for what.
pub async fn confirm(ctx: &NodeContext, consuming: &[Stage], health: &Health) -> anyhow::Result<()> {
    until(health, "the loop bucket to answer a read", || async {
        match ctx.store.load(uuid::Uuid::nil()).await {
            Ok(_) => Ok(None),
            Err(StoreError::Unavailable(e)) => Ok(Some(e)),
            Err(e) => Err(anyhow::anyhow!("the loop bucket is unreadable: {e}")),
        }
    })
    .await?;
    for &stage in consuming {
        // Workers busy with a backlog hold no pull request between fetches; the queue's delivered count moving
        // shows the stage is consumed just as well.
        let first_delivered = OnceLock::new();
        let what = format!("the server to hold a pull request from the {stage} workers");
        until(health, &what, || async {
            Ok(match ctx.bus.backlog(stage).await {
                Ok(backlog) if backlog.pulls > 0 => None,
                Ok(backlog) if *first_delivered.get_or_init(|| backlog.delivered) < backlog.delivered => None,
                Ok(_) => Some("none yet".to_string()),
                Err(e) => Some(e.to_string()),
            })
        })
        .await?;
    }
    Ok(())
}

/// Runs `check` until it reports nothing missing (`Ok(None)`) or fails for good (`Err`). `Ok(Some(why))` is
/// "not yet", shown on `/readyz` and, after [`QUIET`], logged.
async fn until<F, Fut>(health: &Health, what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<String>>>,
{
    let started = tokio::time::Instant::now();
    let mut logged = started;
    while let Some(why) = check().await? {
        health.set_waiting(format!("waiting for {what}: {why}"));
        if logged.elapsed() >= QUIET {
            let waited_s = started.elapsed().as_secs();
            tracing::warn!(waited_s, reason = %why, "still waiting for {what} before serving");
            logged = tokio::time::Instant::now();
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}
