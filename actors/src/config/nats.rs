//! The `nats` section: the server, the names of what sleuth creates on it, and delivery limits.

use serde::{Deserialize, Serialize};

/// The NATS deployment the stages run on; without a URL, everything runs in one process.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NatsConfig {
    /// `None` selects the embedded mode.
    pub url: Option<String>,
    pub prefix: String,
    /// Appended to stream, consumer and bucket names so several deployments can share one server.
    pub suffix: String,
    /// How long a stage may hold a message without acking it (a live stage extends it with in-progress acks
    /// every third of it), so the message of a killed stage is redelivered after at most this.
    pub ack_wait_ms: u64,
    pub max_deliver: i64,
    /// Unacked messages a stage's consumer may have out at once, across its replicas: beyond it the stage
    /// receives nothing more until it acks, so an overloaded stage holds work back in the stream.
    pub max_ack_pending: i64,
    pub duplicate_window_s: u64,
    /// How long a request's loop state is kept.
    pub loop_ttl_s: u64,
    pub events_max_age_s: u64,
    /// Replicas of every stream and KV bucket sleuth creates: 1 on a single server, 3 on a 3-node cluster.
    pub replicas: usize,
    /// Where a request's answer may be sent: subject prefixes of the requesters' inboxes (the NATS client
    /// libraries' `_INBOX.`, and `_R_.`, the reply subject nats-server gives a tenant's request that crossed a
    /// service import; add a client's custom inbox prefix here). A request whose reply subject is anything
    /// else (a KV key, a work subject, a JetStream API call) is dropped unanswered, because the stage would
    /// publish its answer there under its own NATS user.
    pub inbox_prefixes: Vec<String>,
}

impl Default for NatsConfig {
    fn default() -> Self {
        NatsConfig {
            url: None,
            prefix: sleuth_messages::subjects::DEFAULT_PREFIX.to_string(),
            suffix: String::new(),
            ack_wait_ms: 4_000,
            max_deliver: 5,
            max_ack_pending: 1_000,
            duplicate_window_s: 120,
            loop_ttl_s: 3600,
            events_max_age_s: 3600,
            replicas: 1,
            inbox_prefixes: vec!["_INBOX.".to_string(), "_R_.".to_string()],
        }
    }
}
