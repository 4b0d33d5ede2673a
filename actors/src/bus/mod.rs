//! The bus: how work, events and replies move between stages. [`Bus`] has two implementations, NATS JetStream
//! ([`nats::NatsBus`]) and in-process channels ([`memory::MemoryBus`]); the stage code cannot tell them apart.

pub mod dead_stream;
pub mod memory;
pub mod memory_events;
pub mod memory_timers;
pub mod nats;
mod nats_deliveries;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use futures::stream::BoxStream;
use sleuth_messages::{AskReply, Envelope, Event, LoopState, Principal, ReplyTo, Snapshot, Stage, WorkItem};
use uuid::Uuid;

use crate::telemetry::TraceHeaders;

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("bus unavailable: {0}")]
    Unavailable(String),
    #[error("cannot encode message: {0}")]
    Encode(String),
}

impl BusError {
    /// A broker's error, as [`BusError::Unavailable`] with its message.
    pub(crate) fn unavailable(e: impl std::fmt::Display) -> BusError {
        BusError::Unavailable(e.to_string())
    }
}

/// How much work waits for a stage, from the bus's own counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Messages no worker has taken yet.
    pub waiting: u64,
    /// Deliveries to the stage's workers so far (redeliveries included): its rate is how fast work is taken.
    pub delivered: u64,
    /// Pull requests the server holds for the stage's workers, of every process (always 0 in-process, where
    /// workers do not pull).
    pub pulls: u64,
}

/// A cancellation of a request, and who sent it: a tenant (whose own requests only it may cancel), or `None`
/// for the deployment's own account.
#[derive(Debug, Clone, PartialEq)]
pub struct Cancel {
    pub request_id: Uuid,
    pub by: Option<sleuth_messages::Principal>,
}

/// A work message that could not be processed `max_deliver` times, or could not be decoded at all.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    pub request_id: Uuid,
    pub stage: Stage,
    pub reason: String,
}

/// One delivered work message. Dropping it without `ack` makes the bus deliver it again (or dead-letter it
/// after `max_deliver` attempts): a panicking worker loses nothing.
#[async_trait]
pub trait Delivery: Send + Sync {
    fn item(&self) -> &WorkItem;
    /// 1 on first delivery.
    fn attempt(&self) -> u32;
    /// The trace context of the span that published this work: the parent of the span that handles it.
    fn trace(&self) -> &TraceHeaders;
    /// The loop state the message carried and the revision its publisher committed it at, once (see
    /// [`Bus::publish_work`]); the handler reads the store when there is none.
    fn take_snapshot(&mut self) -> Option<Snapshot> {
        None
    }
    /// Tells the bus the work is still going (resets AckWait).
    async fn in_progress(&self) -> Result<(), BusError>;
    async fn ack(self: Box<Self>) -> Result<(), BusError>;
    /// Asks for redelivery after `delay`.
    async fn nak(self: Box<Self>, delay: Duration) -> Result<(), BusError>;
}

/// The work of one stage, shared by all of that stage's workers in this process.
#[async_trait]
pub trait WorkQueue: Send + Sync {
    /// The next delivery; `None` when the bus is closed.
    async fn next(&self) -> Result<Option<Box<dyn Delivery>>, BusError>;
    /// Hands back what was fetched but not yet delivered, so another replica takes it now rather than after
    /// AckWait. Called when the process drains.
    async fn close(&self) {}
}

/// A request's deadline timer: delivered to one watchdog, naked until the deadline has passed, acked after.
#[async_trait]
pub trait DeadlineDelivery: Send + Sync {
    fn envelope(&self) -> &Envelope;
    fn trace(&self) -> &TraceHeaders;
    /// Tells the bus the watchdog is still acting on it (resets AckWait).
    async fn in_progress(&self) -> Result<(), BusError>;
    async fn ack(self: Box<Self>) -> Result<(), BusError>;
    /// Delivers it again after `delay`.
    async fn nak(self: Box<Self>, delay: Duration) -> Result<(), BusError>;
}

/// The deadline timers, shared by every watchdog of the deployment.
#[async_trait]
pub trait DeadlineQueue: Send + Sync {
    async fn next(&self) -> Result<Option<Box<dyn DeadlineDelivery>>, BusError>;
}

#[async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Publishes work, de-duplicated by [`WorkItem::msg_id`], with the trace context of its publishing span.
    /// `committed` is the state the work was derived from and the store revision that state was committed at,
    /// when the publisher knows it: a bus whose store is a network away (NATS) carries it in the message, so the
    /// stage that takes the work compare-and-swaps against it without reading the store first.
    async fn publish_work(
        &self,
        item: &WorkItem,
        committed: Option<(&LoopState, u64)>,
        trace: &TraceHeaders,
    ) -> Result<(), BusError>;
    /// Publishes an event, de-duplicated by [`Event::msg_id`]. Over NATS, the event of a tenant's request (`owner`)
    /// also goes to that tenant's own events subject ([`sleuth_messages::subjects::Subjects::tenant_events`]).
    async fn publish_event(
        &self,
        event: &Event,
        owner: Option<&Principal>,
        trace: &TraceHeaders,
    ) -> Result<(), BusError>;
    /// Sends the final answer to the requester's inbox, in the request's encoding.
    async fn reply(&self, to: &ReplyTo, reply: &AskReply, trace: &TraceHeaders) -> Result<(), BusError>;
    async fn work_queue(&self, stage: Stage) -> Result<Arc<dyn WorkQueue>, BusError>;
    /// Dead letters of the given stages. Each dead letter is delivered to one subscriber.
    async fn dead_letters(&self, stages: &[Stage]) -> Result<BoxStream<'static, DeadLetter>, BusError>;
    /// A request's events from the beginning, then live.
    async fn events(&self, request_id: Uuid) -> Result<BoxStream<'static, Event>, BusError>;
    /// A request's final event alone (its answer or error), for a requester that shows no progress. The in-process
    /// bus then wakes the requester once per request instead of at every hop.
    async fn final_event(&self, request_id: Uuid) -> Result<BoxStream<'static, Event>, BusError> {
        use futures::StreamExt;
        let events = self.events(request_id).await?;
        Ok(events.filter(|e| std::future::ready(e.kind == sleuth_messages::EventKind::Final)).boxed())
    }
    /// Arms a request's deadline timer (de-duplicated per request).
    async fn publish_deadline(&self, envelope: &Envelope, trace: &TraceHeaders) -> Result<(), BusError>;
    /// The deadline timers; every watchdog of the deployment shares them, each timer goes to one.
    async fn deadlines(&self) -> Result<Arc<dyn DeadlineQueue>, BusError>;
    /// Asks every process of the deployment to cancel a request.
    async fn publish_cancel(&self, request_id: Uuid) -> Result<(), BusError>;
    /// Every cancellation, in every process.
    async fn cancels(&self) -> Result<BoxStream<'static, Cancel>, BusError>;
    /// How much work waits for `stage` across the deployment.
    async fn backlog(&self, stage: Stage) -> Result<Backlog, BusError>;
    /// Deliveries after which a message is dead-lettered.
    fn max_deliver(&self) -> u32;
    /// How long a delivery may go without an ack or progress signal before it is redelivered; `None` when a
    /// delivery in hand is never taken back (the in-process bus hands one back only when it is dropped).
    fn ack_wait(&self) -> Option<Duration>;
    /// Sends what this process has buffered: acks go out without waiting for the server, so a process that
    /// stops flushes them first (one that dies without it has its deliveries redelivered, handled as duplicates).
    async fn flush(&self) -> Result<(), BusError> {
        Ok(())
    }
}
