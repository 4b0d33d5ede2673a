//! What a stage's or the watchdog's pull consumer hands a worker over NATS: [`NatsQueue`] (a stage's work from
//! the loop bucket, with the state its commit carries) and [`NatsDeadlines`] (the deadline timers), their
//! deliveries, and the acks, naks and progress acks that answer them.

use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer::pull};
use async_trait::async_trait;
use futures::StreamExt;
use sleuth_messages::{
    Envelope, Snapshot, Stage, WorkItem, WorkMessage, codec,
    subjects::{LoopKind, Subjects},
};
use tokio::sync::{Mutex, mpsc};

use super::{BusError, DeadLetter, DeadlineDelivery, DeadlineQueue, Delivery, WorkQueue, dead_stream::DeadStream};
use crate::telemetry::TraceHeaders;

pub struct NatsQueue {
    pub(super) messages: Mutex<pull::Stream>,
    pub(super) stage: Stage,
    pub(super) poison: mpsc::UnboundedSender<DeadLetter>,
    pub(super) dead: DeadStream,
    pub(super) subjects: Subjects,
}

/// How long one pull request waits on the server. A server that is SIGKILLed forgets the pull requests it held
/// and tells no one: the client pulls again only when its request expires (async-nats' default: 30 s, which left
/// stages idle for that long after a restart). Short pulls cost one small request per consumer every few
/// seconds.
pub(super) const PULL_EXPIRES: Duration = Duration::from_secs(3);

#[async_trait]
impl WorkQueue for NatsQueue {
    async fn next(&self) -> Result<Option<Box<dyn Delivery>>, BusError> {
        loop {
            let next = self.messages.lock().await.next().await;
            let Some(message) = next else { return Ok(None) };
            let message = message.map_err(BusError::unavailable)?;
            let info = message.info().ok();
            let attempt = info.as_ref().map(|i| i.delivered.max(1) as u32).unwrap_or(1);
            let sequence = info.as_ref().map(|i| i.stream_sequence);
            let trace = TraceHeaders::from_nats(message.headers.as_ref());
            let kind = self.subjects.parse_loop(message.subject.as_str());
            // A snapshot that does not decode (a newer state layout) is no reason to refuse the work: the item
            // alone still says what to do, and the store has the state.
            let decoded = codec::decode::<WorkMessage>(&message.payload)
                .map(|(m, _)| m.into_parts())
                .or_else(|_| codec::decode::<WorkItem>(&message.payload).map(|(item, _)| (item, None)));
            match decoded {
                Ok((item, mut snapshot)) => {
                    // A commit's revision is its own place in the stream; work sent after one names the commit's.
                    match (kind.map(|k| k.kind), sequence) {
                        (Some(LoopKind::Commit(_)), Some(sequence)) => {
                            snapshot.iter_mut().for_each(|s| s.revision = sequence)
                        }
                        (Some(LoopKind::Work(..)), _) => {}
                        _ => snapshot = None,
                    }
                    let message = Some(message);
                    return Ok(Some(Box::new(NatsDelivery { message, item, snapshot, attempt, trace })));
                }
                Err(e) => {
                    tracing::error!(subject = %message.subject, error = %e, "undecodable work message, terminating it");
                    let reason = format!("undecodable work message: {e}");
                    let request_id = kind.map(|k| k.request_id);
                    let (subject, payload) = (message.subject.as_str(), message.payload.clone());
                    // Without a copy kept, it is left unacknowledged: redelivered, then dead-lettered by advisory.
                    if !self.dead.keep(self.stage, request_id.unwrap_or_default(), subject, payload, &reason).await {
                        continue;
                    }
                    if let Some(request_id) = request_id {
                        let _ = self.poison.send(DeadLetter { request_id, stage: self.stage, reason });
                    }
                    let _ = message.ack_with(AckKind::Term).await;
                }
            }
        }
    }

    async fn close(&self) {
        let mut messages = self.messages.lock().await;
        // What the last pull already fetched; a few milliseconds of silence means nothing more is on its way.
        // Handed back with a delay: a plain nak is redelivered at once to this very pull, which would hand it
        // back again until the message ran out of deliveries and was dead-lettered.
        while let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_millis(25), messages.next()).await {
            let _ = message.ack_with(AckKind::Nak(Some(HANDBACK_DELAY))).await;
        }
    }
}

/// How long work a draining process hands back waits before another replica may take it: longer than the
/// drain's 25 ms of silence, far shorter than the ack wait a dropped message would cost.
const HANDBACK_DELAY: Duration = Duration::from_millis(500);

struct NatsDelivery {
    /// `None` once acknowledged.
    message: Option<jetstream::Message>,
    item: WorkItem,
    snapshot: Option<Snapshot>,
    attempt: u32,
    trace: TraceHeaders,
}

impl Drop for NatsDelivery {
    fn drop(&mut self) {
        // Dropped without an answer (the worker panicked): ask for redelivery now instead of after AckWait.
        if let Some(message) = self.message.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                let _ = message.ack_with(AckKind::Nak(None)).await;
            });
        }
    }
}

#[async_trait]
impl Delivery for NatsDelivery {
    fn item(&self) -> &WorkItem {
        &self.item
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    fn trace(&self) -> &TraceHeaders {
        &self.trace
    }

    fn take_snapshot(&mut self) -> Option<Snapshot> {
        self.snapshot.take()
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        in_progress(self.message.as_ref()).await
    }

    async fn ack(mut self: Box<Self>) -> Result<(), BusError> {
        ack(self.message.take()).await
    }

    async fn nak(mut self: Box<Self>, delay: Duration) -> Result<(), BusError> {
        nak(self.message.take(), delay).await
    }
}

/// Extends the ack deadline of a message not yet answered.
async fn in_progress(message: Option<&jetstream::Message>) -> Result<(), BusError> {
    match message {
        Some(m) => m.ack_with(AckKind::Progress).await.map_err(BusError::unavailable),
        None => Ok(()),
    }
}

/// Acks a message not yet answered, without waiting for the server to confirm: everything the delivery led to
/// is already published and acknowledged, so a lost ack costs a redelivery, which the handler skips as a duplicate.
async fn ack(message: Option<jetstream::Message>) -> Result<(), BusError> {
    match message {
        Some(m) => m.ack().await.map_err(BusError::unavailable),
        None => Ok(()),
    }
}

/// Asks for redelivery of a message not yet answered after `delay`.
async fn nak(message: Option<jetstream::Message>, delay: Duration) -> Result<(), BusError> {
    match message {
        Some(m) => m.ack_with(AckKind::Nak(Some(delay))).await.map_err(BusError::unavailable),
        None => Ok(()),
    }
}

pub struct NatsDeadlines {
    pub(super) messages: Mutex<pull::Stream>,
}

#[async_trait]
impl DeadlineQueue for NatsDeadlines {
    async fn next(&self) -> Result<Option<Box<dyn DeadlineDelivery>>, BusError> {
        loop {
            let next = self.messages.lock().await.next().await;
            let Some(message) = next else { return Ok(None) };
            let message = message.map_err(BusError::unavailable)?;
            match codec::decode::<Envelope>(&message.payload) {
                Ok((envelope, _)) => {
                    let trace = TraceHeaders::from_nats(message.headers.as_ref());
                    return Ok(Some(Box::new(NatsTimer { message: Some(message), envelope, trace })));
                }
                Err(e) => {
                    tracing::error!(subject = %message.subject, error = %e, "undecodable deadline timer, terminating it");
                    let _ = message.ack_with(AckKind::Term).await;
                }
            }
        }
    }
}

struct NatsTimer {
    message: Option<jetstream::Message>,
    envelope: Envelope,
    trace: TraceHeaders,
}

#[async_trait]
impl DeadlineDelivery for NatsTimer {
    fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    fn trace(&self) -> &TraceHeaders {
        &self.trace
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        in_progress(self.message.as_ref()).await
    }

    async fn ack(mut self: Box<Self>) -> Result<(), BusError> {
        ack(self.message.take()).await
    }

    async fn nak(mut self: Box<Self>, delay: Duration) -> Result<(), BusError> {
        nak(self.message.take(), delay).await
    }
}
