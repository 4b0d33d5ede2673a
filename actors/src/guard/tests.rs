//! The guard's retries, its breaker and `Retry-After`, on calls that fail on purpose.

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use super::*;

fn config() -> BackendsConfig {
    BackendsConfig {
        retries: 2,
        backoff_base_ms: 1,
        backoff_max_ms: 5,
        breaker_failures: 3,
        breaker_cooldown_ms: 50,
        attempt_timeout_ms: 1_000,
    }
}

#[test]
fn backoff_doubles_with_jitter_and_stays_under_the_cap() {
    for attempt in 0..6 {
        let d = backoff(attempt, 100, 2_000).as_millis() as u64;
        let floor = (100u64 << attempt).min(2_000);
        assert!(d >= floor && d <= (2 * floor).min(2_000), "attempt {attempt}: {d} ms");
    }
    assert_eq!(backoff(3, 0, 10).as_millis(), 0);
}

#[tokio::test]
async fn a_passing_failure_is_retried_away() {
    let guard = Guard::new(Backend::Graph, &config());
    let calls = AtomicU32::new(0);
    let out = guard
        .call(|| async {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 { anyhow::bail!("connection reset") } else { Ok(7) }
        })
        .await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(!guard.is_open());
}

#[tokio::test]
async fn a_dead_backend_opens_the_circuit_within_one_call_and_later_calls_fail_at_once() {
    let guard = Guard::new(Backend::Index, &config());
    let calls = Arc::new(AtomicU32::new(0));
    let attempt = || {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(anyhow::anyhow!("connection refused"))
        }
    };
    let first = guard.call(attempt).await.unwrap_err();
    assert_eq!(first.backend, Backend::Index);
    assert!(first.reason.contains("connection refused") && first.reason.contains("after 3 attempts"), "{first}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(guard.is_open());
    let second = guard.call(attempt).await.unwrap_err();
    assert!(second.reason.contains("circuit open") && second.reason.contains("connection refused"), "{second}");
    assert_eq!(calls.load(Ordering::SeqCst), 3, "an open circuit makes no call");
    assert_eq!(second.degradation().fallback, Backend::Index.fallback());
    // After the cooldown one probe goes through; a good one closes the circuit.
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(guard.call(|| async { Ok(1) }).await.unwrap(), 1);
    assert!(!guard.is_open());
}

#[tokio::test]
async fn retry_after_replaces_the_backoff_within_the_cap() {
    let config = BackendsConfig { backoff_max_ms: 200, ..config() };
    let guard = Guard::new(Backend::Embeddings, &config);
    let calls = AtomicU32::new(0);
    let started = std::time::Instant::now();
    let out = guard
        .call(|| async {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                // What RetryAfterService notes from a 429 with `Retry-After: 0.15`.
                retry_after::note(Duration::from_millis(150));
                anyhow::bail!("HTTP 429")
            }
            Ok(())
        })
        .await;
    assert!(out.is_ok());
    assert!(started.elapsed() >= Duration::from_millis(150), "waited {:?}", started.elapsed());
}

#[tokio::test]
async fn an_exhausted_attempt_is_not_retried_and_opens_the_circuit() {
    let guard = Guard::new(Backend::Graph, &config());
    let calls = AtomicU32::new(0);
    let out = guard
        .call(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(anyhow::Error::new(Exhausted(anyhow::anyhow!("pool timed out"))))
        })
        .await;
    assert!(out.unwrap_err().reason.contains("pool timed out"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(guard.is_open());
}
