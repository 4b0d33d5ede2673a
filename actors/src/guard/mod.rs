//! [`Guard`]: every call to a backend the loop can do without (the index, the embedding endpoint, the graph)
//! goes through one: bounded retries with jittered backoff, or the server's `Retry-After`, a time limit per
//! attempt, and a circuit [`Breaker`] that keeps calls out while the backend is down. What a guard gives up on
//! is [`Unavailable`], which the stages turn into a fallback and a [`Degradation`] instead of an error.

pub mod breaker;
pub mod retry_after;

use std::{future::Future, sync::Mutex, time::Duration};

use sleuth_messages::{Backend, Degradation};

pub use breaker::Breaker;

use crate::{config::BackendsConfig, telemetry::metrics};

/// A backend gave up: its retries are spent or its circuit is open.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} unavailable: {reason}", backend.as_str())]
pub struct Unavailable {
    pub backend: Backend,
    pub reason: String,
}

impl Unavailable {
    pub fn degradation(&self) -> Degradation {
        Degradation::new(self.backend, self.reason.clone())
    }
}

/// What an attempt returns when its client already waited out the backend (a connection pool that kept being
/// refused until its acquire timeout): not retried, and the circuit opens at once.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct Exhausted(pub anyhow::Error);

/// The [`Unavailable`] somewhere in `error`'s chain.
pub fn unavailable(error: &anyhow::Error) -> Option<&Unavailable> {
    error.chain().find_map(|cause| cause.downcast_ref::<Unavailable>())
}

pub struct Guard {
    backend: Backend,
    breaker: Breaker,
    retries: u32,
    backoff_base_ms: u64,
    backoff_max_ms: u64,
    attempt_timeout: Duration,
    last_error: Mutex<String>,
}

impl Guard {
    pub fn new(backend: Backend, config: &BackendsConfig) -> Guard {
        let failures = config.breaker_failures.max(1);
        Guard {
            backend,
            breaker: Breaker::new(failures, 1.0, failures, Duration::from_millis(config.breaker_cooldown_ms)),
            retries: config.retries,
            backoff_base_ms: config.backoff_base_ms,
            backoff_max_ms: config.backoff_max_ms,
            attempt_timeout: Duration::from_millis(config.attempt_timeout_ms.max(1)),
            last_error: Mutex::new(String::new()),
        }
    }

    /// True while the circuit keeps calls out.
    pub fn is_open(&self) -> bool {
        self.breaker.is_open()
    }

    /// Runs `attempt` until it succeeds, the retries are spent or the circuit opens. Every failed attempt counts
    /// towards the breaker, so a backend that is down opens it within one call and the next calls fail at once.
    pub async fn call<T, F, Fut>(&self, mut attempt: F) -> Result<T, Unavailable>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let backend = self.backend.as_str();
        let mut tried = 0u32;
        loop {
            if !self.breaker.allow() {
                let last = self.last_error.lock().unwrap_or_else(|e| e.into_inner()).clone();
                metrics::backend_unavailable(backend, "circuit_open");
                return Err(self.unavailable(format!("circuit open after repeated failures; last error: {last}")));
            }
            let (outcome, retry_after) =
                retry_after::scope(tokio::time::timeout(self.attempt_timeout, attempt())).await;
            let error = match outcome {
                Ok(Ok(value)) => {
                    self.breaker.record(true);
                    metrics::backend_breaker(backend, false);
                    return Ok(value);
                }
                Ok(Err(e)) if e.downcast_ref::<Exhausted>().is_some() => {
                    let error = format!("{e:#}");
                    self.breaker.trip();
                    metrics::backend_breaker(backend, true);
                    metrics::backend_unavailable(backend, "exhausted");
                    *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = error.clone();
                    return Err(self.unavailable(error));
                }
                Ok(Err(e)) => format!("{e:#}"),
                Err(_) => format!("no answer within {} ms", self.attempt_timeout.as_millis()),
            };
            self.breaker.record(false);
            metrics::backend_breaker(backend, self.breaker.is_open());
            *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = error.clone();
            if tried >= self.retries {
                metrics::backend_unavailable(backend, "retries_spent");
                return Err(self.unavailable(format!("{error} (after {} attempts)", tried + 1)));
            }
            let wait = retry_after
                .map(|d| d.min(Duration::from_millis(self.backoff_max_ms)))
                .unwrap_or_else(|| backoff(tried, self.backoff_base_ms, self.backoff_max_ms));
            tracing::warn!(backend, attempt = tried + 1, wait_ms = wait.as_millis() as u64, %error, "backend call failed; retrying");
            tokio::time::sleep(wait).await;
            tried += 1;
        }
    }

    fn unavailable(&self, reason: String) -> Unavailable {
        Unavailable { backend: self.backend, reason }
    }
}

/// `base * 2^attempt` plus up to as much again of jitter, capped at `max`.
pub fn backoff(attempt: u32, base_ms: u64, max_ms: u64) -> Duration {
    let exp = base_ms.saturating_mul(1u64 << attempt.min(20));
    let jitter = if exp == 0 { 0 } else { rand::random_range(0..=exp) };
    Duration::from_millis(exp.saturating_add(jitter).min(max_ms))
}

#[cfg(test)]
mod tests;
