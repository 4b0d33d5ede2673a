//! [`MemoryDeadlines`]: the embedded mode's deadline timers. One heap ordered by due time, one notification
//! for whoever waits on it: a timer costs an insertion, not a task sleeping until the deadline.

use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use sleuth_messages::Envelope;
use tokio::{sync::Notify, time::Instant};

use super::{BusError, DeadlineDelivery, DeadlineQueue};
use crate::telemetry::TraceHeaders;

struct Timer {
    due: Instant,
    /// Insertion order, so timers due at the same instant come out first in, first out.
    seq: u64,
    envelope: Envelope,
    trace: TraceHeaders,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

#[derive(Default)]
struct Inner {
    heap: Mutex<(BinaryHeap<Reverse<Timer>>, u64)>,
    changed: Notify,
}

impl Inner {
    fn push(&self, envelope: Envelope, trace: TraceHeaders, delay: Duration) {
        let mut guard = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        let (heap, seq) = &mut *guard;
        *seq += 1;
        heap.push(Reverse(Timer { due: Instant::now() + delay, seq: *seq, envelope, trace }));
        drop(guard);
        self.changed.notify_one();
    }

    /// The earliest timer if it is due, else when it will be (`None`: no timer at all).
    fn pop_due(&self) -> Result<Timer, Option<Instant>> {
        let mut guard = self.heap.lock().unwrap_or_else(|e| e.into_inner());
        let (heap, _) = &mut *guard;
        match heap.peek() {
            Some(Reverse(t)) if t.due <= Instant::now() => Ok(heap.pop().expect("peeked").0),
            Some(Reverse(t)) => Err(Some(t.due)),
            None => Err(None),
        }
    }
}

#[derive(Default)]
pub struct MemoryDeadlines {
    inner: Arc<Inner>,
}

impl MemoryDeadlines {
    /// Delivers the timer after `delay`.
    pub fn push(&self, envelope: Envelope, trace: TraceHeaders, delay: Duration) {
        self.inner.push(envelope, trace, delay);
    }
}

#[async_trait]
impl DeadlineQueue for MemoryDeadlines {
    async fn next(&self) -> Result<Option<Box<dyn DeadlineDelivery>>, BusError> {
        loop {
            // Registered before looking, so a timer pushed in between still wakes this wait.
            let changed = self.inner.changed.notified();
            match self.inner.pop_due() {
                Ok(timer) => {
                    let delivery =
                        MemoryTimer { timer: Some((timer.envelope, timer.trace)), queue: self.inner.clone() };
                    return Ok(Some(Box::new(delivery)));
                }
                Err(Some(due)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(due) => {}
                        _ = changed => {}
                    }
                }
                Err(None) => changed.await,
            }
        }
    }
}

struct MemoryTimer {
    /// `None` once acked or naked.
    timer: Option<(Envelope, TraceHeaders)>,
    queue: Arc<Inner>,
}

impl Drop for MemoryTimer {
    fn drop(&mut self) {
        // Dropped unanswered (the watchdog failed): deliver it again.
        if let Some((envelope, trace)) = self.timer.take() {
            self.queue.push(envelope, trace, Duration::ZERO);
        }
    }
}

#[async_trait]
impl DeadlineDelivery for MemoryTimer {
    fn envelope(&self) -> &Envelope {
        &self.timer.as_ref().expect("timer used after ack").0
    }

    fn trace(&self) -> &TraceHeaders {
        &self.timer.as_ref().expect("timer used after ack").1
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        Ok(())
    }

    async fn ack(mut self: Box<Self>) -> Result<(), BusError> {
        self.timer = None;
        Ok(())
    }

    async fn nak(mut self: Box<Self>, delay: Duration) -> Result<(), BusError> {
        if let Some((envelope, trace)) = self.timer.take() {
            self.queue.push(envelope, trace, delay);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(n: u128) -> Envelope {
        Envelope {
            schema_version: 1,
            request_id: uuid::Uuid::from_u128(n),
            turn: 0,
            step: 0,
            deadline_ms: 0,
            attempt: 0,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn timers_come_out_when_due_in_due_order() {
        let queue = MemoryDeadlines::default();
        queue.push(envelope(2), TraceHeaders::default(), Duration::from_secs(20));
        queue.push(envelope(1), TraceHeaders::default(), Duration::from_secs(10));
        let first = queue.next().await.unwrap().unwrap();
        assert_eq!(first.envelope().request_id, uuid::Uuid::from_u128(1));
        // Handed back for later: it comes out after the other one.
        first.nak(Duration::from_secs(30)).await.unwrap();
        let second = queue.next().await.unwrap().unwrap();
        assert_eq!(second.envelope().request_id, uuid::Uuid::from_u128(2));
        second.ack().await.unwrap();
        let again = queue.next().await.unwrap().unwrap();
        assert_eq!(again.envelope().request_id, uuid::Uuid::from_u128(1));
        drop(again);
        let redelivered = tokio::time::timeout(Duration::from_secs(1), queue.next()).await;
        assert!(redelivered.is_ok(), "a timer dropped unanswered is delivered again");
    }
}
