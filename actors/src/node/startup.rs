//! Opening a backend at start-up: a Qdrant or Postgres that is not reachable yet is retried with backoff while
//! `/readyz` says what the process waits for, instead of exiting into a silent crash loop.

use std::{future::Future, time::Duration};

use crate::telemetry::http::Health;

const FIRST_WAIT: Duration = Duration::from_secs(1);
const LONGEST_WAIT: Duration = Duration::from_secs(30);

/// Runs `open` until it succeeds or fails for a reason waiting cannot fix (a bad URL, an old server, a file
/// another process owns), which is returned at once.
pub async fn open_with_retries<T, F, Fut>(health: &Health, what: &str, mut open: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let mut wait = FIRST_WAIT;
    let mut attempt = 1u32;
    loop {
        match open().await {
            Ok(value) => return Ok(value),
            Err(e) if unreachable(&e) => {
                let why = format!("{what} is unreachable (attempt {attempt}, next in {} s): {e:#}", wait.as_secs());
                tracing::warn!(backend = what, attempt, retry_in_s = wait.as_secs(), error = %format!("{e:#}"), "cannot open a backend yet; retrying");
                health.set_waiting(why);
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(LONGEST_WAIT);
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// True when the error is about reaching a server: connection refused or reset, a timeout, DNS.
fn unreachable(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        if let Some(sqlx) = cause.downcast_ref::<sqlx::Error>() {
            return matches!(sqlx, sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Tls(_));
        }
        let text = cause.to_string().to_lowercase();
        ["connection refused", "timed out", "cannot reach", "dns error", "transport error", "unavailable"]
            .iter()
            .any(|needle| text.contains(needle))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    };

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_backend_is_retried_and_readyz_says_why() {
        let health = Health::default();
        let tries = Arc::new(AtomicU32::new(0));
        let counter = tries.clone();
        let opened = open_with_retries(&health, "postgres", || {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 3 {
                    Err(anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)))
                } else {
                    Ok(n)
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(opened, 3);
        assert!(health.readiness().unwrap_err().contains("postgres is unreachable (attempt 3"));
    }

    #[tokio::test]
    async fn a_permanent_failure_is_returned_at_once() {
        let health = Health::default();
        let result: anyhow::Result<()> =
            open_with_retries(&health, "qdrant", || async { anyhow::bail!("needs Qdrant 1.16 or newer") }).await;
        assert!(result.unwrap_err().to_string().contains("1.16"));
    }
}
