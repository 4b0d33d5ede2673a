//! Waiting out a state store or bus that is briefly away: a NATS server restarting, or a cluster electing a new
//! leader for a stream whose leader died, answers nothing for seconds and then everything again.

use uuid::Uuid;

use crate::telemetry;

/// How long an operation on the store or the bus is retried before its error is reported: longer than a JetStream
/// cluster takes to elect a stream's leader (nats-server's raft election timeout is at most 9 s).
pub const PATIENCE_MS: u64 = 15_000;

/// Runs `op` until it succeeds, fails with an error `transient` does not accept, or [`PATIENCE_MS`] (at most
/// until `deadline_ms`) have passed, waiting with backoff in between, so a store or bus that is briefly away is
/// waited for rather than reported.
pub async fn patiently<T, E: std::fmt::Display, F: std::future::Future<Output = Result<T, E>>>(
    request_id: Uuid,
    deadline_ms: u64,
    what: &str,
    transient: impl Fn(&E) -> bool,
    mut op: impl FnMut() -> F,
) -> Result<T, E> {
    let give_up_ms = telemetry::now_ms().saturating_add(PATIENCE_MS).min(deadline_ms);
    let mut attempt = 0;
    loop {
        match op().await {
            Err(e) if transient(&e) && telemetry::now_ms() < give_up_ms => {
                let wait = crate::guard::backoff(attempt, 100, 2_000);
                let wait_ms = wait.as_millis() as u64;
                tracing::warn!(%request_id, attempt, error = %e, wait_ms, "cannot {what} yet; retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}
