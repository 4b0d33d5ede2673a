//! [`LoopStream`]: loop state in the JetStream KV bucket `sleuth_loops`, where it travels with the work. A
//! request's keys are `<request_id>.*` (subjects `$KV.sleuth_loops.<request_id>.*`); the last message on them is
//! its state, and its stream sequence the state's revision. Every write there expects that revision on those
//! subjects (`Nats-Expected-Last-Subject-Sequence`, with `Nats-Expected-Last-Subject-Sequence-Subject` naming the
//! wildcard: nats-server 2.11 or newer), so each write is a compare-and-swap; and the write that commits a hop's
//! state is the hop's next work message (key `<request_id>.<stage>`), so a hop is one round trip (ARCHITECTURE.md,
//! Delivery). Being a KV bucket, it is what an operator expects: `nats kv ls sleuth_loops`, `nats kv get
//! sleuth_loops <id>.state`, `nats kv watch sleuth_loops '<id>.>'` (values are MessagePack: `sleuth state <id>`
//! prints one as JSON).
//!
//! A request keeps one message per key, and only its last one is its state. Every message of a request that is not
//! finished carries a time to live (`Nats-TTL`) of its deadline plus [`WORK_TTL_MARGIN`], and the final state
//! none, so once a request ended and its deadline is long past, its final state alone is kept, for
//! `nats.loop_ttl_s` (the bucket's max age). All of an unfinished request's messages expire together, so an older
//! one never outlives a newer one and becomes the state again.

use std::{sync::Arc, time::Duration};

use async_nats::{
    HeaderMap, StatusCode,
    jetstream::{self, context::PublishErrorKind, kv, message::PublishMessage as Publish, stream},
};
use async_trait::async_trait;
use bytes::Bytes;
use sleuth_messages::{
    Encoding, LoopState, Phase, WorkItem, WorkMessage, codec, encode_commit,
    subjects::{LoopKind, Subjects},
};
use uuid::Uuid;

use super::{Committed, StateStore, StoreError};
use crate::{config::Config, telemetry::TraceHeaders};

/// The oldest nats-server that checks an expected last sequence over a wildcard subject. An older one ignores the
/// header it does not know and checks the literal subject alone, which would let two writers both commit: sleuth
/// refuses to start on it.
pub const MIN_SERVER: (u64, u64) = (2, 11);

/// How long an unfinished request's messages outlive its deadline: far longer than any watchdog takes to end it
/// (its timer comes back to another watchdog within `nats.ack_wait_ms` when one dies), so a request under way
/// never loses its state, and after it the work is gone.
pub const WORK_TTL_MARGIN: Duration = Duration::from_secs(600);

/// The time to live of a message of an unfinished request whose deadline is `deadline_ms`, in whole seconds (as
/// `Nats-TTL` counts them, at least one).
pub fn work_ttl(deadline_ms: u64, now_ms: u64) -> Duration {
    let ttl = Duration::from_millis(deadline_ms.saturating_sub(now_ms)) + WORK_TTL_MARGIN;
    Duration::from_secs(ttl.as_secs_f64().ceil().max(1.0) as u64)
}

pub struct LoopStream {
    js: jetstream::Context,
    subjects: Subjects,
    /// `$JS.API.DIRECT.GET.<stream>`: a load is a direct get of the last message on the request's subjects, asked
    /// in the request's body because a wildcard cannot be part of the subject the get is sent to.
    direct_get: String,
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// Creates the loop bucket with the client library's KV API (history 1, `nats.loop_ttl_s` as its max age,
/// `nats.replicas`), or finds it, and returns its stream, which the stages' consumers read. What the KV API does not
/// set is set on the stream after: per-message TTLs (`allow_msg_ttl`, without the delete markers that
/// `limit_markers` would add to every stage's work subjects) and the duplicate window of a hop's `Nats-Msg-Id`.
/// A process whose user may not create or change streams (a stage under its own NATS user) only finds it.
pub async fn open_bucket(js: &jetstream::Context, config: &Config) -> Result<stream::Stream, String> {
    let subjects = config.subjects();
    let (bucket, name) = (subjects.loops_bucket(), subjects.loops_stream());
    let ttl = config.loop_ttl();
    let duplicate_window = Duration::from_secs(config.nats.duplicate_window_s).min(ttl);
    if let Err(missing) = js.get_key_value(&bucket).await {
        let created = js
            .create_key_value(kv::Config {
                bucket: bucket.clone(),
                description: "sleuth loop state and work, keys <request_id>.state|<stage>|<stage>.<slot>".to_string(),
                history: 1,
                max_age: ttl,
                storage: stream::StorageType::File,
                num_replicas: config.nats.replicas.max(1),
                ..Default::default()
            })
            .await;
        // Another process may have created it meanwhile: then it is found now.
        if let Err(e) = created
            && js.get_key_value(&bucket).await.is_err()
        {
            return Err(format!("cannot open kv bucket {bucket} ({missing}) nor create it: {e}"));
        }
    }
    let mut stream = js.get_stream(&name).await.map_err(|e| format!("cannot read stream {name}: {e}"))?;
    let current = stream.info().await.map_err(|e| format!("cannot read stream {name}: {e}"))?.config.clone();
    if !current.allow_message_ttl || current.duplicate_window != duplicate_window {
        let wanted = stream::Config { allow_message_ttl: true, duplicate_window, ..current };
        js.update_stream(wanted).await.map_err(|e| {
            format!(
                "kv bucket {bucket} needs per-message TTLs and a {}s duplicate window, and this user cannot set them \
                 ({e}): run `sleuth setup` as the admin user",
                duplicate_window.as_secs()
            )
        })?;
        stream = js.get_stream(&name).await.map_err(|e| format!("cannot read stream {name}: {e}"))?;
    }
    Ok(stream)
}

/// Refuses a server too old to check a swap over a request's subjects ([`MIN_SERVER`]), naming its version.
pub fn check_server(client: &async_nats::Client) -> Result<(), String> {
    let version = client.server_info().version;
    if !supported(&version) {
        return Err(format!(
            "nats-server {version} is too old: sleuth needs {}.{} or newer (it checks a state's revision over a \
             request's subjects with Nats-Expected-Last-Subject-Sequence-Subject); tested with 2.15.1",
            MIN_SERVER.0, MIN_SERVER.1
        ));
    }
    Ok(())
}

/// Whether nats-server `version` (`2.15.1`, `v2.12.0-RC.1`) is [`MIN_SERVER`] or newer.
fn supported(version: &str) -> bool {
    let mut parts = version.trim_start_matches('v').split(['.', '-']).map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= MIN_SERVER
}

impl LoopStream {
    /// The state store on the loop bucket, which the bus creates ([`crate::bus::nats::NatsBus::start`], or
    /// `sleuth setup`); reading and writing it needs no more than the stream's name, so a client that only reads
    /// states (the gateway, `sleuth ask --json`, `sleuth state`) needs no right to look the bucket up.
    pub fn new(client: &async_nats::Client, config: &Config) -> Result<LoopStream, StoreError> {
        LoopStream::of(client, config.subjects())
    }

    /// The loop bucket of the deployment that `subjects` names.
    pub fn of(client: &async_nats::Client, subjects: Subjects) -> Result<LoopStream, StoreError> {
        check_server(client).map_err(StoreError::Unavailable)?;
        let direct_get = format!("$JS.API.DIRECT.GET.{}", subjects.loops_stream());
        Ok(LoopStream { js: jetstream::new(client.clone()), subjects, direct_get })
    }

    /// Publishes `payload` on `subject` if the request's last message is still `revision` (0: it has none).
    /// Returns the new message's sequence. A message id makes a re-sent commit a duplicate, which is refused like
    /// a stale one: whoever sent it first committed, and the caller reloads to see what.
    async fn write(
        &self,
        state: &LoopState,
        subject: String,
        payload: Vec<u8>,
        revision: u64,
        msg_id: Option<String>,
        trace: Option<&TraceHeaders>,
    ) -> Result<u64, StoreError> {
        let mut headers = HeaderMap::new();
        if let Some(trace) = trace {
            trace.to_nats(&mut headers);
        }
        headers.insert("Nats-Expected-Last-Subject-Sequence", revision.to_string().as_str());
        headers.insert("Nats-Expected-Last-Subject-Sequence-Subject", self.subjects.loop_of(state.request_id).as_str());
        if state.phase != Phase::Done {
            let ttl = work_ttl(state.deadline_ms, crate::telemetry::now_ms());
            headers.insert("Nats-TTL", ttl.as_secs().to_string().as_str());
        }
        let mut publish = Publish::build().headers(headers).payload(Bytes::from(payload));
        if let Some(id) = msg_id {
            publish = publish.message_id(id);
        }
        let sent = self.js.send_publish(subject, publish).await.map_err(unavailable)?;
        match sent.await {
            Ok(ack) if ack.duplicate => Err(StoreError::Conflict),
            Ok(ack) => Ok(ack.sequence),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence || lost_in_flight(&e) => {
                Err(StoreError::Conflict)
            }
            Err(e) => Err(unavailable(e)),
        }
    }
}

/// A replicated stream (`nats.replicas` > 1) refuses a write whose expected revision a write still in flight on
/// the same subjects may change with error 10164 (`JSStreamWrongLastSequenceConstantErr`, "wrong last sequence"
/// without the number), where a single server says 10071; async-nats knows only the latter. Either is a lost
/// compare-and-swap: reload and try again. Looks through `e`'s sources (a KV update's error wraps the publish's).
pub(crate) fn lost_in_flight(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(error) = at {
        if error.downcast_ref::<jetstream::Error>().is_some_and(|e| e.error_code() == jetstream::ErrorCode(10164)) {
            return true;
        }
        at = error.source();
    }
    false
}

fn encode(state: &LoopState) -> Result<Vec<u8>, StoreError> {
    codec::encode(state, Encoding::MsgPack).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// A first write finding the request's subjects taken: the request exists.
fn created(result: Result<u64, StoreError>) -> Result<u64, StoreError> {
    result.map_err(|e| match e {
        StoreError::Conflict => StoreError::AlreadyExists,
        other => other,
    })
}

#[async_trait]
impl StateStore for LoopStream {
    async fn create(&self, state: &LoopState) -> Result<u64, StoreError> {
        let id = state.request_id;
        created(self.write(state, self.subjects.loop_state(id), encode(state)?, 0, None, None).await)
    }

    async fn load(&self, request_id: Uuid) -> Result<Option<(Arc<LoopState>, u64)>, StoreError> {
        let body = serde_json::json!({ "last_by_subj": self.subjects.loop_of(request_id) }).to_string();
        let message =
            self.js.client().request(self.direct_get.clone(), Bytes::from(body)).await.map_err(unavailable)?;
        match message.status {
            None | Some(StatusCode::OK) => {}
            Some(StatusCode::NOT_FOUND) => return Ok(None),
            Some(status) => {
                let why = message.description.as_deref().unwrap_or("no description");
                return Err(unavailable(format!("direct get of {request_id} answered {status}: {why}")));
            }
        }
        let header = |name: &str| message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str().to_string());
        let (Some(subject), Some(sequence)) = (header("Nats-Subject"), header("Nats-Sequence")) else {
            return Err(StoreError::Corrupt("a direct get answered without its subject and sequence".to_string()));
        };
        let revision = sequence.parse::<u64>().map_err(|e| StoreError::Corrupt(format!("sequence {sequence}: {e}")))?;
        let corrupt = |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("{subject}: {e}"));
        let state = match self.subjects.parse_loop(&subject).map(|l| l.kind) {
            Some(LoopKind::State) => codec::decode::<LoopState>(&message.payload).map_err(|e| corrupt(&e))?.0,
            Some(LoopKind::Commit(_)) => {
                let (work, _) = codec::decode::<WorkMessage>(&message.payload).map_err(|e| corrupt(&e))?;
                let (_, snapshot) = work.into_parts();
                snapshot.ok_or_else(|| corrupt(&"a commit without the state it commits"))?.state
            }
            _ => return Err(corrupt(&"not a state of the loop bucket")),
        };
        if state.request_id != request_id {
            return Err(corrupt(&format!("the state of request {}", state.request_id)));
        }
        Ok(Some((Arc::new(state), revision)))
    }

    async fn compare_and_swap(&self, state: &Arc<LoopState>, revision: u64) -> Result<u64, StoreError> {
        let id = state.request_id;
        self.write(state, self.subjects.loop_state(id), encode(state)?, revision, None, None).await
    }

    fn carries_work(&self) -> bool {
        true
    }

    async fn commit_with_work(
        &self,
        state: &Arc<LoopState>,
        revision: Option<u64>,
        work: &WorkItem,
        trace: &TraceHeaders,
    ) -> Result<Committed, StoreError> {
        let id = state.request_id;
        let payload = encode_commit(work, state).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let subject = self.subjects.loop_commit(work.stage, id);
        let written =
            self.write(state, subject, payload, revision.unwrap_or(0), Some(work.msg_id()), Some(trace)).await;
        let revision = if revision.is_none() { created(written)? } else { written? };
        Ok(Committed { revision, carried: true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unfinished_requests_messages_live_until_well_past_its_deadline() {
        let now = 1_000_000;
        assert_eq!(work_ttl(now + 30_000, now), Duration::from_secs(30) + WORK_TTL_MARGIN);
        assert_eq!(work_ttl(now + 1, now), Duration::from_secs(1) + WORK_TTL_MARGIN, "whole seconds, rounded up");
        assert_eq!(work_ttl(now - 5_000, now), WORK_TTL_MARGIN, "a passed deadline still leaves the margin");
    }

    #[test]
    fn a_replicated_streams_wrong_last_sequence_is_a_lost_swap() {
        let api = |code: u64| -> jetstream::Error {
            serde_json::from_value(
                serde_json::json!({"code": 400, "err_code": code, "description": "wrong last sequence"}),
            )
            .unwrap()
        };
        let publish = |code| jetstream::context::PublishError::with_source(PublishErrorKind::Other, api(code));
        assert!(lost_in_flight(&publish(10164)), "a replicated stream's refusal");
        let update = kv::UpdateError::with_source(kv::UpdateErrorKind::Other, publish(10164));
        assert!(lost_in_flight(&update), "found under a KV update's error");
        assert!(!lost_in_flight(&publish(10077)), "another refusal (a message too large) is not a lost swap");
    }

    #[test]
    fn a_server_older_than_2_11_is_refused() {
        for old in ["2.9.10", "2.10.29", "v2.10.0-RC.3", "", "garbage"] {
            assert!(!supported(old), "{old}");
        }
        for new in ["2.11.0", "2.15.1", "v2.12.0-RC.1", "3.0.0"] {
            assert!(supported(new), "{new}");
        }
    }
}
