//! [`NatsBus`]: the bus over NATS JetStream. Work is in the loop bucket `sleuth_loops` beside the state it
//! commits (`store/nats_loops.rs`), with one durable pull consumer per stage (shared by its replicas); deadline
//! timers go to the WorkQueue stream `SLEUTH_WORK`, events to the limits stream `SLEUTH_EVENTS`, replies to the
//! requester's core NATS inbox, and a dead letter's copy to `SLEUTH_DEAD` (`dead_stream.rs`). Streams and
//! consumers are created idempotently at start-up.

use std::{sync::Arc, time::Duration};

use async_nats::{
    HeaderMap,
    jetstream::{
        self,
        consumer::{AckPolicy, DeliverPolicy, pull},
        message::PublishMessage as Publish,
        stream,
    },
};
use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use sleuth_messages::{
    AskReply, Encoding, Envelope, Event, LoopState, Principal, ReplyTo, Stage, WorkItem, WorkMessage, codec,
    encode_work, subjects::Subjects,
};
use tokio::sync::{Mutex, mpsc};
use uuid::Uuid;

use super::{
    Backlog, Bus, BusError, Cancel, DeadLetter, DeadlineQueue, WorkQueue,
    dead_stream::DeadStream,
    nats_deliveries::{NatsDeadlines, NatsQueue, PULL_EXPIRES},
};
use crate::{
    config::Config,
    machine,
    nats_client::explain,
    store::{StateStore, nats_loops, nats_loops::LoopStream},
    telemetry::TraceHeaders,
};

pub struct NatsBus {
    client: async_nats::Client,
    js: jetstream::Context,
    subjects: Subjects,
    /// The deadline timers.
    work: stream::Stream,
    /// The loop bucket's stream, where the stages' work is.
    loops: stream::Stream,
    events: stream::Stream,
    dead: DeadStream,
    config: Arc<Config>,
    /// Work messages that could not be decoded; surfaced through `dead_letters`.
    poison_tx: mpsc::UnboundedSender<DeadLetter>,
    poison_rx: std::sync::Mutex<Option<mpsc::UnboundedReceiver<DeadLetter>>>,
}

/// How long [`NatsBus::start`] waits for a cluster that cannot place a stream yet.
const PLACEMENT_PATIENCE: Duration = Duration::from_secs(30);

/// Whether a stream or bucket could not be created only because the cluster is not ready to place it: JetStream's
/// "no suitable peers for placement" (10005) or "JetStream system temporarily unavailable" (10008), or a creation
/// request that timed out (a meta leader just elected, or busy with a node's catch-up, answers after the client's
/// request timeout). The creations report their errors as text (every kind of creation has its own error type), so
/// the codes are read from it, as async-nats writes them ("error code 10005"). A timeout after the server refused
/// this user a subject ([`explain`] names it) is no wait: the request will never be answered.
///
/// Trying again is safe: each creation is get-or-create, so one whose request timed out after the server made the
/// stream finds it the next time.
fn placing(why: &str) -> bool {
    let refused_code = [jetstream::ErrorCode::CLUSTER_NO_PEERS, jetstream::ErrorCode::CLUSTER_NOT_AVAILABLE]
        .iter()
        .any(|code| why.contains(&format!("error code {}", code.0)));
    refused_code || (why.contains("timed out") && !why.contains("the server refused"))
}

impl NatsBus {
    /// Creates (or finds) the loop bucket and the timer and events streams. Refuses a server older than the loop
    /// bucket needs. A cluster that cannot place a stream yet (a peer still joining, or one its meta leader briefly
    /// sees offline or answers late, as under load right after the servers start) is waited out for
    /// [`PLACEMENT_PATIENCE`]:
    /// `sleuth setup` run as a job beside a starting cluster then succeeds instead of failing.
    pub async fn start(client: async_nats::Client, config: Arc<Config>) -> Result<Arc<NatsBus>, BusError> {
        let deadline = tokio::time::Instant::now() + PLACEMENT_PATIENCE;
        loop {
            match NatsBus::open(client.clone(), config.clone()).await {
                Err(BusError::Unavailable(why)) if placing(&why) && tokio::time::Instant::now() < deadline => {
                    tracing::warn!(%why, "the cluster cannot place a stream yet; trying again");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                done => return done,
            }
        }
    }

    async fn open(client: async_nats::Client, config: Arc<Config>) -> Result<Arc<NatsBus>, BusError> {
        nats_loops::check_server(&client).map_err(BusError::Unavailable)?;
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
                max_age: config.loop_ttl(),
                num_replicas: config.nats.replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                BusError::unavailable(explain(format!("cannot create stream {}: {e}", subjects.work_stream())))
            })?;
        let loops = nats_loops::open_bucket(&js, &config).await.map_err(|e| BusError::unavailable(explain(e)))?;
        let events = js
            .get_or_create_stream(stream::Config {
                name: subjects.events_stream(),
                subjects: vec![subjects.events_all()],
                retention: stream::RetentionPolicy::Limits,
                storage: stream::StorageType::File,
                duplicate_window: dup.min(Duration::from_secs(config.nats.events_max_age_s)),
                max_age: Duration::from_secs(config.nats.events_max_age_s),
                num_replicas: config.nats.replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                BusError::unavailable(explain(format!("cannot create stream {}: {e}", subjects.events_stream())))
            })?;
        let dead = DeadStream::open(js.clone(), subjects.clone(), config.nats.replicas)
            .await
            .map_err(|e| BusError::unavailable(explain(e)))?;
        let (poison_tx, poison_rx) = mpsc::unbounded_channel();
        Ok(Arc::new(NatsBus {
            client,
            js,
            subjects,
            work,
            loops,
            events,
            dead,
            config,
            poison_tx,
            poison_rx: std::sync::Mutex::new(Some(poison_rx)),
        }))
    }

    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    /// Creates every stage's durable consumer and the watchdog's (the streams exist once [`NatsBus::start`]
    /// returned), without consuming anything: what `sleuth setup` does as the admin user, so that stage users
    /// need no right to create them.
    pub async fn provision_consumers(&self) -> Result<Vec<String>, BusError> {
        let mut names = Vec::new();
        for stage in [Stage::Planner, Stage::Retrieve, Stage::Graph, Stage::Grader, Stage::Synthesizer] {
            self.consumer(stage).await?;
            names.push(self.subjects.consumer(stage));
        }
        self.watchdog_consumer().await?;
        names.push(self.subjects.watchdog_consumer());
        Ok(names)
    }

    /// Publishes to a stream and waits for its ack. `ttl`: the message's own time to live (`Nats-TTL`).
    async fn publish(
        &self,
        subject: String,
        msg_id: String,
        payload: Vec<u8>,
        trace: &TraceHeaders,
        ttl: Option<Duration>,
    ) -> Result<(), BusError> {
        let mut headers = HeaderMap::new();
        trace.to_nats(&mut headers);
        if let Some(ttl) = ttl {
            headers.insert("Nats-TTL", ttl.as_secs().to_string().as_str());
        }
        // Headers first: `headers` replaces the whole map, `message_id` adds Nats-Msg-Id to it.
        let publish = Publish::build().headers(headers).payload(Bytes::from(payload)).message_id(msg_id);
        self.js
            .send_publish(subject, publish)
            .await
            .map_err(BusError::unavailable)?
            .await
            .map_err(BusError::unavailable)?;
        Ok(())
    }

    async fn watchdog_consumer(&self) -> Result<jetstream::consumer::PullConsumer, BusError> {
        let name = self.subjects.watchdog_consumer();
        self.work
            .get_or_create_consumer(
                &name,
                pull::Config {
                    durable_name: Some(name.clone()),
                    filter_subject: self.subjects.deadline_filter(),
                    ack_policy: AckPolicy::Explicit,
                    // The stages' short AckWait: a timer held by a watchdog that was killed comes back to another
                    // within seconds. A watchdog ending a request sends in-progress acks meanwhile.
                    ack_wait: self.config.ack_wait(),
                    // A timer is naked until its deadline: it may be delivered any number of times, and every
                    // request in flight holds one.
                    max_deliver: -1,
                    max_ack_pending: 1_000_000,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| BusError::unavailable(explain(format!("cannot create consumer {name}: {e}"))))
    }

    async fn consumer(&self, stage: Stage) -> Result<jetstream::consumer::PullConsumer, BusError> {
        let name = self.subjects.consumer(stage);
        self.loops
            .get_or_create_consumer(
                &name,
                pull::Config {
                    durable_name: Some(name.clone()),
                    // The work a commit carries and the work sent after one; the stream's other messages (states
                    // alone, other stages' work) stay where they are for whoever reads them.
                    filter_subjects: self.subjects.loop_filters(stage),
                    ack_policy: AckPolicy::Explicit,
                    ack_wait: self.config.ack_wait(),
                    backoff: self.config.redelivery_backoff(),
                    max_deliver: self.config.nats.max_deliver,
                    max_ack_pending: self.config.nats.max_ack_pending,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| BusError::unavailable(explain(format!("cannot create consumer {name}: {e}"))))
    }
}

/// `<prefix>.cancel.<request_id>` → the request id.
fn request_id_of(subject: &str) -> Option<Uuid> {
    subject.rsplit('.').next().and_then(|s| Uuid::parse_str(s).ok())
}

#[async_trait]
impl Bus for NatsBus {
    async fn publish_work(
        &self,
        item: &WorkItem,
        committed: Option<(&LoopState, u64)>,
        trace: &TraceHeaders,
    ) -> Result<(), BusError> {
        let payload = encode_work(item, committed).map_err(|e| BusError::Encode(e.to_string()))?;
        let subject = self.subjects.loop_work(item.stage, item.envelope.request_id, item.envelope.step);
        let ttl = nats_loops::work_ttl(item.envelope.deadline_ms, crate::telemetry::now_ms());
        self.publish(subject, item.msg_id(), payload, trace, Some(ttl)).await
    }

    async fn publish_event(
        &self,
        event: &Event,
        owner: Option<&Principal>,
        trace: &TraceHeaders,
    ) -> Result<(), BusError> {
        let payload = codec::encode(event, Encoding::MsgPack).map_err(|e| BusError::Encode(e.to_string()))?;
        // The tenant's copy first, on core NATS: its account has no JetStream, so it follows the live events (a
        // redelivery may send one again; clients show each event once). Sent before the stream's copy, whose ack
        // the hop waits for, so the copy is on its way when the hop acks its delivery.
        if let Some(subject) = owner.and_then(|p| self.subjects.tenant_events(&p.tenant, event.request_id)) {
            let mut headers = HeaderMap::new();
            trace.to_nats(&mut headers);
            let copy = Bytes::from(payload.clone());
            self.client.publish_with_headers(subject, headers, copy).await.map_err(BusError::unavailable)?;
        }
        self.publish(self.subjects.events(event.request_id), event.msg_id(), payload, trace, None).await
    }

    async fn flush(&self) -> Result<(), BusError> {
        self.client.flush().await.map_err(BusError::unavailable)
    }

    async fn reply(&self, to: &ReplyTo, reply: &AskReply, trace: &TraceHeaders) -> Result<(), BusError> {
        // Intake refuses such requests; a state written before that check (or by anyone else) gets no reply.
        if !crate::nats_client::is_inbox(&to.subject, &self.config.nats.inbox_prefixes) {
            tracing::warn!(subject = %to.subject, "reply not sent: its subject is not an inbox (nats.inbox_prefixes)");
            return Ok(());
        }
        let payload = codec::encode(reply, to.encoding).map_err(|e| BusError::Encode(e.to_string()))?;
        let mut headers = HeaderMap::new();
        trace.to_nats(&mut headers);
        self.client
            .publish_with_headers(to.subject.clone(), headers, Bytes::from(payload))
            .await
            .map_err(BusError::unavailable)?;
        self.client.flush().await.map_err(BusError::unavailable)
    }

    async fn work_queue(&self, stage: Stage) -> Result<Arc<dyn WorkQueue>, BusError> {
        let consumer = self.consumer(stage).await?;
        let batch = self.config.stages.workers.max(1);
        let messages = consumer
            .stream()
            .max_messages_per_batch(batch)
            .expires(PULL_EXPIRES)
            .messages()
            .await
            .map_err(|e| BusError::unavailable(format!("cannot consume {stage} work: {e}")))?;
        let (poison, dead, subjects) = (self.poison_tx.clone(), self.dead.clone(), self.subjects.clone());
        Ok(Arc::new(NatsQueue { messages: Mutex::new(messages), stage, poison, dead, subjects }))
    }

    async fn dead_letters(&self, stages: &[Stage]) -> Result<BoxStream<'static, DeadLetter>, BusError> {
        let mut streams: Vec<BoxStream<'static, DeadLetter>> = Vec::new();
        if let Some(rx) = self.poison_rx.lock().expect("poison receiver poisoned").take() {
            streams.push(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|d| (d, rx)) }).boxed());
        }
        for &stage in stages {
            let subject = format!(
                "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.{}",
                self.subjects.loops_stream(),
                self.subjects.consumer(stage)
            );
            let sub = self
                .client
                .queue_subscribe(subject, "sleuth-dead-letters".to_string())
                .await
                .map_err(BusError::unavailable)?;
            let states = Arc::new(LoopStream::of(&self.client, self.subjects.clone()).map_err(BusError::unavailable)?);
            let (loops, dead, subjects) = (self.loops.clone(), self.dead.clone(), self.subjects.clone());
            let letters = sub
                .filter_map(move |msg| {
                    let (loops, dead, subjects, states) =
                        (loops.clone(), dead.clone(), subjects.clone(), states.clone());
                    async move {
                        let advisory = Advisory { loops: &loops, states: &states, dead: &dead, subjects: &subjects };
                        advisory.dead_letter(stage, &msg.payload).await
                    }
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
            .map_err(BusError::unavailable)?;
        let messages = consumer.messages().await.map_err(BusError::unavailable)?;
        Ok(messages
            .filter_map(|m| async move {
                let m = m.ok()?;
                codec::decode::<Event>(&m.payload).ok().map(|(e, _)| e)
            })
            .boxed())
    }

    async fn publish_deadline(&self, envelope: &Envelope, trace: &TraceHeaders) -> Result<(), BusError> {
        let payload = codec::encode(envelope, Encoding::MsgPack).map_err(|e| BusError::Encode(e.to_string()))?;
        let id = envelope.request_id;
        self.publish(self.subjects.deadline(id), format!("{id}:deadline"), payload, trace, None).await
    }

    async fn deadlines(&self) -> Result<Arc<dyn DeadlineQueue>, BusError> {
        let consumer = self.watchdog_consumer().await?;
        let messages = consumer
            .stream()
            .max_messages_per_batch(16)
            .expires(PULL_EXPIRES)
            .messages()
            .await
            .map_err(|e| BusError::unavailable(format!("cannot consume deadline timers: {e}")))?;
        Ok(Arc::new(NatsDeadlines { messages: Mutex::new(messages) }))
    }

    async fn publish_cancel(&self, request_id: Uuid) -> Result<(), BusError> {
        self.client.publish(self.subjects.cancel(request_id), Bytes::new()).await.map_err(BusError::unavailable)?;
        self.client.flush().await.map_err(BusError::unavailable)
    }

    async fn cancels(&self) -> Result<BoxStream<'static, Cancel>, BusError> {
        let sub = self.client.subscribe(self.subjects.cancel_all()).await.map_err(BusError::unavailable)?;
        Ok(sub
            .filter_map(|msg| async move {
                let request_id = request_id_of(msg.subject.as_str())?;
                // A tenant's cancellation crossed a service import: the server says whose it is.
                match crate::nats_client::requester(msg.headers.as_ref()) {
                    Ok(by) => Some(Cancel { request_id, by }),
                    Err(why) => {
                        tracing::warn!(%request_id, why, "cancellation ignored: its requester is unknown");
                        None
                    }
                }
            })
            .boxed())
    }

    fn max_deliver(&self) -> u32 {
        self.config.nats.max_deliver.max(1) as u32
    }

    async fn backlog(&self, stage: Stage) -> Result<Backlog, BusError> {
        let name = self.subjects.consumer(stage);
        let info = self
            .loops
            .consumer_info(&name)
            .await
            .map_err(|e| BusError::unavailable(format!("consumer {name}: {e}")))?;
        Ok(Backlog {
            waiting: info.num_pending,
            delivered: info.delivered.consumer_sequence,
            pulls: info.num_waiting as u64,
        })
    }

    fn ack_wait(&self) -> Option<Duration> {
        Some(self.config.ack_wait())
    }
}

/// Reads a MAX_DELIVERIES advisory, fetches the dead message, keeps a copy in the dead-letter stream, and names
/// its request. The message itself stays in the loop bucket: the consumer is past it, and it may be the request's
/// state.
/// What a max-deliveries advisory is read against: the loop bucket's stream, where the message is; the request's
/// state, to see whether its work is still to do; the dead-letter stream, where a copy is kept.
struct Advisory<'a> {
    loops: &'a stream::Stream,
    states: &'a LoopStream,
    dead: &'a DeadStream,
    subjects: &'a Subjects,
}

impl Advisory<'_> {
    /// The dead letter a `MAX_DELIVERIES` advisory names, with its copy kept in `SLEUTH_DEAD`; `None` when the
    /// message is gone, or when its work was done: the request's state was written after the message and no
    /// longer waits for that work. A delivery whose work was applied can still run out of deliveries when its acks
    /// are lost (a cluster electing the consumer's leader redelivers it, and each duplicate's ack is lost again);
    /// ending its request then would turn an answer under way into an error. A state read from a replica behind
    /// the message is not taken as proof, and the letter stands.
    async fn dead_letter(&self, stage: Stage, payload: &[u8]) -> Option<DeadLetter> {
        let advisory: serde_json::Value = serde_json::from_slice(payload).ok()?;
        let seq = advisory.get("stream_seq")?.as_u64()?;
        let deliveries = advisory.get("deliveries").and_then(|d| d.as_u64()).unwrap_or(0);
        let raw = match self.loops.get_raw_message(seq).await {
            Ok(raw) => raw,
            Err(e) => {
                tracing::warn!(seq, error = %e, "dead letter already gone");
                return None;
            }
        };
        let item = codec::decode::<WorkMessage>(&raw.payload)
            .map(|(m, _)| m.into_parts().0)
            .or_else(|_| codec::decode::<WorkItem>(&raw.payload).map(|(item, _)| item))
            .ok();
        let request_id = item
            .as_ref()
            .map(|item| item.envelope.request_id)
            .or_else(|| self.subjects.parse_loop(raw.subject.as_str()).map(|l| l.request_id))?;
        if let Some(item) = &item
            && let Ok(Some((state, revision))) = self.states.load(request_id).await
            && revision > seq
            && !machine::expects(&state, item)
        {
            tracing::warn!(%request_id, %stage, seq, deliveries, revision, "a work message ran out of deliveries after its work was done (its acks were lost): its request goes on");
            return None;
        }
        let reason = format!("failed {deliveries} deliveries");
        self.dead.keep(stage, request_id, raw.subject.as_str(), raw.payload.clone(), &reason).await;
        Some(DeadLetter { request_id, stage, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::placing;

    #[test]
    fn a_cluster_that_cannot_place_a_stream_yet_is_waited_for_and_nothing_else_is() {
        assert!(placing(
            "cannot create stream SLEUTH_EVENTS: jetstream error: no suitable peers for placement, peer offline \
             (code 400, error code 10005)"
        ));
        assert!(placing("jetstream error: JetStream system temporarily unavailable (code 503, error code 10008)"));
        assert!(!placing("jetstream error: insufficient resources (code 400, error code 10023)"));
        assert!(placing("cannot create stream SLEUTH_WORK: jetstream request timed out"));
        assert!(placing("cannot open kv bucket sleuth_loops (not found) nor create it: timed out"));
        assert!(!placing(
            "cannot create stream SLEUTH_WORK: jetstream request timed out (the server refused: Permissions \
             Violation for Publish to \"$JS.API.STREAM.INFO.SLEUTH_WORK\"; check this user's permissions)"
        ));
        assert!(!placing("authorization violation"));
    }
}
