//! [`DeadStream`]: the limits stream `SLEUTH_DEAD`, where a work message that failed for good (too many
//! deliveries, or undecodable) is copied, so an operator can read it with `nats stream view SLEUTH_DEAD` (and send
//! it again as work after a commit, `<prefix>.loop.<id>.<stage>.<slot>`: never on a subject that would become its
//! request's state).

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use sleuth_messages::{Stage, subjects::Subjects};
use uuid::Uuid;

/// How long a dead letter is kept.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The header that names the work subject a dead letter came from.
pub const SUBJECT_HEADER: &str = "Sleuth-Dead-Subject";
/// The header that says why it died.
pub const REASON_HEADER: &str = "Sleuth-Dead-Reason";

#[derive(Clone)]
pub struct DeadStream {
    js: jetstream::Context,
    subjects: Subjects,
}

impl DeadStream {
    /// Creates (or finds) the stream.
    pub async fn open(js: jetstream::Context, subjects: Subjects, replicas: usize) -> Result<DeadStream, String> {
        js.get_or_create_stream(stream::Config {
            name: subjects.dead_stream(),
            subjects: vec![subjects.dead_all()],
            retention: stream::RetentionPolicy::Limits,
            storage: stream::StorageType::File,
            max_age: MAX_AGE,
            num_replicas: replicas,
            ..Default::default()
        })
        .await
        .map_err(|e| format!("cannot create stream {}: {e}", subjects.dead_stream()))?;
        Ok(DeadStream { js, subjects })
    }

    /// Stores a copy of the dead work message (`subject`, `payload`) of `stage`, and waits for the server to
    /// confirm it. False, and logged, if it could not: the caller then leaves the message where it is.
    pub async fn keep(&self, stage: Stage, request_id: Uuid, subject: &str, payload: Bytes, reason: &str) -> bool {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(SUBJECT_HEADER, subject);
        headers.insert(REASON_HEADER, reason);
        let to = self.subjects.dead(stage, request_id);
        let stored = match self.js.publish_with_headers(to.clone(), headers, payload).await {
            Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = &stored {
            tracing::error!(%request_id, %stage, subject, to, error = %e, "cannot keep the dead letter: left in the work stream");
        }
        stored.is_ok()
    }
}
