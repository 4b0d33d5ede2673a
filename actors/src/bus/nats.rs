//! [`NatsBus`]: the bus over NATS JetStream. Work goes to the WorkQueue stream `SLEUTH_WORK` with one durable
//! pull consumer per stage (shared by its replicas), events to the limits stream `SLEUTH_EVENTS`, and replies to
//! the requester's core NATS inbox. Streams and consumers are created idempotently at start-up.

use std::{sync::Arc, time::Duration};

use async_nats::{
    HeaderMap,
    jetstream::{
        self, AckKind,
        consumer::{AckPolicy, DeliverPolicy, pull},
        message::PublishMessage as Publish,
        stream,
    },
};
use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use sleuth_messages::{AskReply, Encoding, Event, ReplyTo, Stage, WorkItem, codec, subjects::Subjects};
use tokio::sync::{Mutex, mpsc};
use uuid::Uuid;

use super::{Bus, BusError, DeadLetter, Delivery, WorkQueue};
use crate::config::Config;

pub const TRACEPARENT: &str = "traceparent";

fn unavailable(e: impl std::fmt::Display) -> BusError {
    BusError::Unavailable(e.to_string())
}

/// Connects to NATS with the process name visible in `nats server report connections`.
pub async fn connect(url: &str, name: &str) -> Result<async_nats::Client, BusError> {
    async_nats::ConnectOptions::new()
        .name(name)
        .connect(url)
        .await
        .map_err(|e| BusError::Unavailable(format!("cannot connect to nats at {url}: {e}")))
}

pub struct NatsBus {
    client: async_nats::Client,
    js: jetstream::Context,
    subjects: Subjects,
    work: stream::Stream,
    events: stream::Stream,
    config: Arc<Config>,
    /// Work messages that could not be decoded; surfaced through `dead_letters`.
    poison_tx: mpsc::UnboundedSender<DeadLetter>,
    poison_rx: std::sync::Mutex<Option<mpsc::UnboundedReceiver<DeadLetter>>>,
}

impl NatsBus {
    /// Creates (or finds) the work and events streams.
    pub async fn start(client: async_nats::Client, config: Arc<Config>) -> Result<Arc<NatsBus>, BusError> {
        let js = jetstream::new(client.clone());
        let subjects = config.subjects();
        let dup = Duration::from_secs(config.nats.duplicate_window_s);
        let work = js
            .get_or_create_stream(stream::Config {
                name: subjects.work_stream(),
                subjects: vec![subjects.work_all()],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                duplicate_window: dup,
                max_age: Duration::from_secs(config.nats.loop_ttl_s),
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(format!("cannot create stream {}: {e}", subjects.work_stream())))?;
        let events = js
            .get_or_create_stream(stream::Config {
                name: subjects.events_stream(),
                subjects: vec![subjects.events_all()],
                retention: stream::RetentionPolicy::Limits,
                storage: stream::StorageType::File,
                duplicate_window: dup.min(Duration::from_secs(config.nats.events_max_age_s)),
                max_age: Duration::from_secs(config.nats.events_max_age_s),
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(format!("cannot create stream {}: {e}", subjects.events_stream())))?;
        let (poison_tx, poison_rx) = mpsc::unbounded_channel();
        Ok(Arc::new(NatsBus {
            client,
            js,
            subjects,
            work,
            events,
            config,
            poison_tx,
            poison_rx: std::sync::Mutex::new(Some(poison_rx)),
        }))
    }

    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    async fn publish(
        &self,
        subject: String,
        msg_id: String,
        payload: Vec<u8>,
        traceparent: Option<&str>,
    ) -> Result<(), BusError> {
        let mut publish = Publish::build().payload(Bytes::from(payload)).message_id(msg_id);
        if let Some(tp) = traceparent {
            publish = publish.header(TRACEPARENT, tp);
        }
        self.js.send_publish(subject, publish).await.map_err(unavailable)?.await.map_err(unavailable)?;
        Ok(())
    }

    async fn consumer(&self, stage: Stage) -> Result<jetstream::consumer::PullConsumer, BusError> {
        let name = self.subjects.consumer(stage);
        self.work
            .get_or_create_consumer(
                &name,
                pull::Config {
                    durable_name: Some(name.clone()),
                    filter_subject: self.subjects.work_filter(stage),
                    ack_policy: AckPolicy::Explicit,
                    ack_wait: self.config.ack_wait(),
                    max_deliver: self.config.nats.max_deliver,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| unavailable(format!("cannot create consumer {name}: {e}")))
    }
}

/// `<prefix>.work.<stage>.<request_id>` → the request id.
fn request_id_of(subject: &str) -> Option<Uuid> {
    subject.rsplit('.').next().and_then(|s| Uuid::parse_str(s).ok())
}

#[async_trait]
impl Bus for NatsBus {
    async fn publish_work(&self, item: &WorkItem, traceparent: Option<&str>) -> Result<(), BusError> {
        let payload = codec::encode(item, Encoding::MsgPack).map_err(|e| BusError::Encode(e.to_string()))?;
        self.publish(self.subjects.work(item.stage, item.envelope.request_id), item.msg_id(), payload, traceparent)
            .await
    }

    async fn publish_event(&self, event: &Event, traceparent: Option<&str>) -> Result<(), BusError> {
        let payload = codec::encode(event, Encoding::MsgPack).map_err(|e| BusError::Encode(e.to_string()))?;
        self.publish(self.subjects.events(event.request_id), event.msg_id(), payload, traceparent).await
    }

    async fn reply(&self, to: &ReplyTo, reply: &AskReply) -> Result<(), BusError> {
        let payload = codec::encode(reply, to.encoding).map_err(|e| BusError::Encode(e.to_string()))?;
        self.client.publish(to.subject.clone(), Bytes::from(payload)).await.map_err(unavailable)?;
        self.client.flush().await.map_err(unavailable)
    }

    async fn work_queue(&self, stage: Stage) -> Result<Arc<dyn WorkQueue>, BusError> {
        let consumer = self.consumer(stage).await?;
        let batch = self.config.stages.workers.max(1);
        let messages = consumer
            .stream()
            .max_messages_per_batch(batch)
            .messages()
            .await
            .map_err(|e| unavailable(format!("cannot consume {stage} work: {e}")))?;
        Ok(Arc::new(NatsQueue { messages: Mutex::new(messages), stage, poison: self.poison_tx.clone() }))
    }

    async fn dead_letters(&self, stages: &[Stage]) -> Result<BoxStream<'static, DeadLetter>, BusError> {
        let mut streams: Vec<BoxStream<'static, DeadLetter>> = Vec::new();
        if let Some(rx) = self.poison_rx.lock().expect("poison receiver poisoned").take() {
            streams.push(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|d| (d, rx)) }).boxed());
        }
        for &stage in stages {
            let subject = format!(
                "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.{}",
                self.subjects.work_stream(),
                self.subjects.consumer(stage)
            );
            let sub =
                self.client.queue_subscribe(subject, "sleuth-dead-letters".to_string()).await.map_err(unavailable)?;
            let work = self.work.clone();
            let letters = sub
                .filter_map(move |msg| {
                    let work = work.clone();
                    async move { dead_letter_from_advisory(&work, stage, &msg.payload).await }
                })
                .boxed();
            streams.push(letters);
        }
        Ok(futures::stream::select_all(streams).boxed())
    }

    async fn events(&self, request_id: Uuid) -> Result<BoxStream<'static, Event>, BusError> {
        let consumer = self
            .events
            .create_consumer(pull::OrderedConfig {
                filter_subject: self.subjects.events(request_id),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        let messages = consumer.messages().await.map_err(unavailable)?;
        Ok(messages
            .filter_map(|m| async move {
                let m = m.ok()?;
                codec::decode::<Event>(&m.payload).ok().map(|(e, _)| e)
            })
            .boxed())
    }

    fn max_deliver(&self) -> u32 {
        self.config.nats.max_deliver.max(1) as u32
    }

    fn ack_wait(&self) -> Duration {
        self.config.ack_wait()
    }
}

/// Reads a MAX_DELIVERIES advisory, fetches the dead message, removes it from the work queue, and names its request.
async fn dead_letter_from_advisory(work: &stream::Stream, stage: Stage, payload: &[u8]) -> Option<DeadLetter> {
    let advisory: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let seq = advisory.get("stream_seq")?.as_u64()?;
    let deliveries = advisory.get("deliveries").and_then(|d| d.as_u64()).unwrap_or(0);
    let raw = match work.get_raw_message(seq).await {
        Ok(raw) => raw,
        Err(e) => {
            tracing::warn!(seq, error = %e, "dead letter already gone");
            return None;
        }
    };
    let request_id = codec::decode::<WorkItem>(&raw.payload)
        .map(|(item, _)| item.envelope.request_id)
        .ok()
        .or_else(|| request_id_of(raw.subject.as_str()))?;
    if let Err(e) = work.delete_message(seq).await {
        tracing::warn!(seq, error = %e, "cannot delete dead letter");
    }
    Some(DeadLetter { request_id, stage, reason: format!("failed {deliveries} deliveries") })
}

pub struct NatsQueue {
    messages: Mutex<pull::Stream>,
    stage: Stage,
    poison: mpsc::UnboundedSender<DeadLetter>,
}

#[async_trait]
impl WorkQueue for NatsQueue {
    async fn next(&self) -> Result<Option<Box<dyn Delivery>>, BusError> {
        loop {
            let next = self.messages.lock().await.next().await;
            let Some(message) = next else { return Ok(None) };
            let message = message.map_err(unavailable)?;
            let attempt = message.info().map(|i| i.delivered.max(1) as u32).unwrap_or(1);
            let traceparent =
                message.headers.as_ref().and_then(|h: &HeaderMap| h.get(TRACEPARENT)).map(|v| v.as_str().to_string());
            match codec::decode::<WorkItem>(&message.payload) {
                Ok((item, _)) => {
                    return Ok(Some(Box::new(NatsDelivery { message: Some(message), item, attempt, traceparent })));
                }
                Err(e) => {
                    tracing::error!(subject = %message.subject, error = %e, "undecodable work message, terminating it");
                    if let Some(request_id) = request_id_of(message.subject.as_str()) {
                        let _ = self.poison.send(DeadLetter {
                            request_id,
                            stage: self.stage,
                            reason: format!("undecodable work message: {e}"),
                        });
                    }
                    let _ = message.ack_with(AckKind::Term).await;
                }
            }
        }
    }
}

struct NatsDelivery {
    /// `None` once acknowledged.
    message: Option<jetstream::Message>,
    item: WorkItem,
    attempt: u32,
    traceparent: Option<String>,
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

    fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    async fn in_progress(&self) -> Result<(), BusError> {
        match &self.message {
            Some(m) => m.ack_with(AckKind::Progress).await.map_err(unavailable),
            None => Ok(()),
        }
    }

    async fn ack(mut self: Box<Self>) -> Result<(), BusError> {
        match self.message.take() {
            Some(m) => m.double_ack().await.map_err(unavailable),
            None => Ok(()),
        }
    }

    async fn nak(mut self: Box<Self>, delay: Duration) -> Result<(), BusError> {
        match self.message.take() {
            Some(m) => m.ack_with(AckKind::Nak(Some(delay))).await.map_err(unavailable),
            None => Ok(()),
        }
    }
}
