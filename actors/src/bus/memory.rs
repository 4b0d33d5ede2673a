//! [`MemoryBus`]: the in-process bus of the embedded mode. Channels per stage, de-duplication by message id,
//! redelivery of dropped deliveries and dead letters after `max_deliver`, like JetStream.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{
        Arc, Mutex as StdMutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use futures::{StreamExt, stream::BoxStream};
use sleuth_messages::{AskReply, Envelope, Event, LoopState, Principal, ReplyTo, Stage, WorkItem};
use tokio::sync::{broadcast, mpsc};
use uuid::Uuid;

use super::{
    Backlog, Bus, BusError, Cancel, DeadLetter, DeadlineQueue, Delivery, WorkQueue,
    memory_events::{Follow, MemoryEvents},
    memory_timers::MemoryDeadlines,
};
use crate::telemetry::TraceHeaders;

/// How many message ids the de-duplication window remembers.
const DEDUP_WINDOW: usize = 100_000;

#[derive(Debug, Clone)]
struct Queued {
    item: WorkItem,
    trace: TraceHeaders,
    attempt: u32,
}

/// A stage's channel. What it sends is counted, and so is what its queue delivers: the difference is the backlog.
#[derive(Clone)]
struct Sender {
    tx: async_channel::Sender<Queued>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    delivered: AtomicU64,
}

impl Sender {
    fn send(&self, queued: Queued) -> Result<(), BusError> {
        // Counted first, so a concurrent delivery never makes `delivered` overtake `sent`.
        self.counts.sent.fetch_add(1, Ordering::Relaxed);
        self.tx.try_send(queued).map_err(|_| {
            self.counts.sent.fetch_sub(1, Ordering::Relaxed);
            BusError::Unavailable("memory bus closed".into())
        })
    }
}
pub struct MemoryBus {
    queues: StdMutex<HashMap<Stage, (Sender, Arc<MemoryQueue>)>>,
    seen: StdMutex<(HashSet<String>, VecDeque<String>)>,
    events: MemoryEvents,
    dead_tx: mpsc::UnboundedSender<DeadLetter>,
    dead_rx: StdMutex<Option<mpsc::UnboundedReceiver<DeadLetter>>>,
    deadlines: Arc<MemoryDeadlines>,
    cancels: broadcast::Sender<Uuid>,
    max_deliver: u32,
}

impl MemoryBus {
    pub fn new(max_deliver: u32) -> Arc<MemoryBus> {
        let (dead_tx, dead_rx) = mpsc::unbounded_channel();
        Arc::new(MemoryBus {
            deadlines: Arc::new(MemoryDeadlines::default()),
            cancels: broadcast::channel(1024).0,
            queues: StdMutex::new(HashMap::new()),
            seen: StdMutex::new((HashSet::new(), VecDeque::new())),
            events: MemoryEvents::default(),
            dead_tx,
            dead_rx: StdMutex::new(Some(dead_rx)),
            max_deliver: max_deliver.max(1),
        })
    }

    fn queue(&self, stage: Stage) -> (Sender, Arc<MemoryQueue>) {
        let mut queues = self.queues.lock().expect("queue map poisoned");
        queues
            .entry(stage)
            .or_insert_with(|| {
                let (tx, rx) = async_channel::unbounded();
                let tx = Sender { tx, counts: Arc::default() };
                let queue = Arc::new(MemoryQueue {
                    rx,
                    tx: tx.clone(),
                    dead_tx: self.dead_tx.clone(),
                    max_deliver: self.max_deliver,
                });
                (tx, queue)
            })
            .clone()
    }

    /// True the first time an id is seen within the window.
    fn first_sighting(&self, id: String) -> bool {
        let mut guard = self.seen.lock().expect("dedup set poisoned");
        let (set, order) = &mut *guard;
        if !set.insert(id.clone()) {
            return false;
        }
        order.push_back(id);
        if order.len() > DEDUP_WINDOW
            && let Some(old) = order.pop_front()
        {
            set.remove(&old);
        }
        true
    }

    /// Delivers `item` even if its id was seen before: what a JetStream redelivery or a re-sent message looks like.
    pub fn inject(&self, item: WorkItem) {
        let (tx, _) = self.queue(item.stage);
        let _ = tx.send(Queued { item, trace: TraceHeaders::default(), attempt: 1 });
    }
}

#[async_trait]
impl Bus for MemoryBus {
    async fn publish_work(
        &self,
        item: &WorkItem,
        // The in-process store hands out its copy as cheaply as a message could carry one.
        _committed: Option<(&LoopState, u64)>,
        trace: &TraceHeaders,
    ) -> Result<(), BusError> {
        if self.first_sighting(item.msg_id()) {
            let (tx, _) = self.queue(item.stage);
            tx.send(Queued { item: item.clone(), trace: trace.clone(), attempt: 1 })?;
        }
        Ok(())
    }

    async fn publish_event(
        &self,
        event: &Event,
        _owner: Option<&Principal>,
        _trace: &TraceHeaders,
    ) -> Result<(), BusError> {
        if self.first_sighting(event.msg_id()) {
            self.events.publish(event);
        }
        Ok(())
    }

    async fn reply(&self, _to: &ReplyTo, _reply: &AskReply, _trace: &TraceHeaders) -> Result<(), BusError> {
        // In-process requesters follow the events stream; there is no inbox to answer.
        Ok(())
    }

    async fn work_queue(&self, stage: Stage) -> Result<Arc<dyn WorkQueue>, BusError> {
        Ok(self.queue(stage).1)
    }

    async fn dead_letters(&self, _stages: &[Stage]) -> Result<BoxStream<'static, DeadLetter>, BusError> {
        let rx = self.dead_rx.lock().expect("dead letter receiver poisoned").take();
        let rx = rx.ok_or_else(|| BusError::Unavailable("dead letters already have a subscriber".into()))?;
        Ok(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|d| (d, rx)) }).boxed())
    }

    async fn events(&self, request_id: Uuid) -> Result<BoxStream<'static, Event>, BusError> {
        Ok(self.events.subscribe(request_id, Follow::Every))
    }

    async fn final_event(&self, request_id: Uuid) -> Result<BoxStream<'static, Event>, BusError> {
        Ok(self.events.subscribe(request_id, Follow::Final))
    }

    async fn publish_deadline(&self, envelope: &Envelope, trace: &TraceHeaders) -> Result<(), BusError> {
        if self.first_sighting(format!("{}:deadline", envelope.request_id)) {
            self.deadlines.push(envelope.clone(), trace.clone(), Duration::ZERO);
        }
        Ok(())
    }

    async fn deadlines(&self) -> Result<Arc<dyn DeadlineQueue>, BusError> {
        Ok(self.deadlines.clone())
    }

    async fn publish_cancel(&self, request_id: Uuid) -> Result<(), BusError> {
        let _ = self.cancels.send(request_id);
        Ok(())
    }

    async fn cancels(&self) -> Result<BoxStream<'static, Cancel>, BusError> {
        let rx = self.cancels.subscribe();
        Ok(futures::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(request_id) => return Some((Cancel { request_id, by: None }, rx)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
        .boxed())
    }

    async fn backlog(&self, stage: Stage) -> Result<Backlog, BusError> {
        let (tx, _) = self.queue(stage);
        let delivered = tx.counts.delivered.load(Ordering::Relaxed);
        let waiting = tx.counts.sent.load(Ordering::Relaxed).saturating_sub(delivered);
        Ok(Backlog { waiting, delivered, pulls: 0 })
    }

    fn max_deliver(&self) -> u32 {
        self.max_deliver
    }

    fn ack_wait(&self) -> Option<Duration> {
        None
    }
}

pub struct MemoryQueue {
    /// Shared by the stage's workers: a message wakes the one worker that takes it (behind a lock, each delivery
    /// also woke the next worker in line for the lock, a second wake per hop that sent the runtime's threads
    /// waking each other).
    rx: async_channel::Receiver<Queued>,
    tx: Sender,
    dead_tx: mpsc::UnboundedSender<DeadLetter>,
    max_deliver: u32,
}

#[async_trait]
impl WorkQueue for MemoryQueue {
    async fn next(&self) -> Result<Option<Box<dyn Delivery>>, BusError> {
        let queued = self.rx.recv().await.ok();
        if queued.is_some() {
            self.tx.counts.delivered.fetch_add(1, Ordering::Relaxed);
        }
        Ok(queued.map(|queued| {
            Box::new(MemoryDelivery {
                queued: Some(queued),
                tx: self.tx.clone(),
                dead_tx: self.dead_tx.clone(),
                max_deliver: self.max_deliver,
            }) as Box<dyn Delivery>
        }))
    }
}

struct MemoryDelivery {
    /// `None` once acked or handed back.
    queued: Option<Queued>,
    tx: Sender,
    dead_tx: mpsc::UnboundedSender<DeadLetter>,
    max_deliver: u32,
}

impl MemoryDelivery {
    fn queued(&self) -> &Queued {
        self.queued.as_ref().expect("delivery used after ack")
    }

    /// Redelivers, or dead-letters after `max_deliver` attempts.
    fn give_back(&mut self, delay: Duration) {
        let Some(mut queued) = self.queued.take() else { return };
        if queued.attempt >= self.max_deliver {
            let reason = format!("failed {} deliveries", queued.attempt);
            let _ = self.dead_tx.send(DeadLetter {
                request_id: queued.item.envelope.request_id,
                stage: queued.item.stage,
                reason,
            });
            return;
        }
        queued.attempt += 1;
        send_after(self.tx.clone(), queued, delay);
    }
}

impl Drop for MemoryDelivery {
    fn drop(&mut self) {
        self.give_back(Duration::ZERO);
    }
}

#[async_trait]
impl Delivery for MemoryDelivery {
    fn item(&self) -> &WorkItem {
        &self.queued().item
    }

    fn attempt(&self) -> u32 {
        self.queued().attempt
    }

    fn trace(&self) -> &TraceHeaders {
        &self.queued().trace
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        Ok(())
    }

    async fn ack(mut self: Box<Self>) -> Result<(), BusError> {
        self.queued = None;
        Ok(())
    }

    async fn nak(mut self: Box<Self>, delay: Duration) -> Result<(), BusError> {
        self.give_back(delay);
        Ok(())
    }
}

/// Sends `message` on `tx` after `delay` (at once when there is no runtime to wait in).
fn send_after(tx: Sender, message: Queued, delay: Duration) {
    if delay.is_zero() {
        let _ = tx.send(message);
    } else if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(message);
        });
    } else {
        let _ = tx.send(message);
    }
}
