//! [`Bucket`]: a small keyed store with revisions for compare-and-swap and an optional TTL. The conversation
//! store and the index generation counter live in one each: a JetStream KV bucket in a cluster
//! ([`KvBucket`]), a map in the embedded mode ([`MemoryBucket`]).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use async_nats::jetstream::{self, kv, stream};
use async_trait::async_trait;
use bytes::Bytes;

use super::StoreError;

#[async_trait]
pub trait Bucket: Send + Sync + 'static {
    /// The value and its revision, or `None` if the key is unknown or expired.
    async fn get(&self, key: &str) -> Result<Option<(Bytes, u64)>, StoreError>;
    /// Writes `value` if the key's revision is still `revision` (`None`: the key must not exist yet).
    /// Returns the new revision, or `Conflict`.
    async fn put(&self, key: &str, value: Bytes, revision: Option<u64>) -> Result<u64, StoreError>;
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

pub struct KvBucket {
    kv: kv::Store,
}

impl KvBucket {
    pub async fn open(
        js: &jetstream::Context,
        bucket: &str,
        ttl: Duration,
        replicas: usize,
        description: &str,
    ) -> Result<KvBucket, StoreError> {
        Ok(KvBucket { kv: open_kv(js, bucket, ttl, replicas, description).await? })
    }

    /// The underlying store, for what [`Bucket`] does not offer (watching a key).
    pub fn kv(&self) -> &kv::Store {
        &self.kv
    }
}

/// Opens a KV bucket, creating it if needed; `ttl` of zero keeps entries for ever. The backing stream is created
/// directly because async-nats' `create_key_value` first reads account info in a shape nats-server 2.9 does not
/// send.
pub async fn open_kv(
    js: &jetstream::Context,
    bucket: &str,
    ttl: Duration,
    replicas: usize,
    description: &str,
) -> Result<kv::Store, StoreError> {
    js.get_or_create_stream(stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_age: ttl,
        allow_rollup: true,
        deny_delete: true,
        deny_purge: false,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        num_replicas: replicas.max(1),
        storage: stream::StorageType::File,
        description: Some(description.to_string()),
        ..Default::default()
    })
    .await
    .map_err(|e| unavailable(crate::nats_client::explain(format!("cannot create kv bucket {bucket}: {e}"))))?;
    js.get_key_value(bucket)
        .await
        .map_err(|e| unavailable(crate::nats_client::explain(format!("cannot open kv bucket {bucket}: {e}"))))
}

#[async_trait]
impl Bucket for KvBucket {
    async fn get(&self, key: &str) -> Result<Option<(Bytes, u64)>, StoreError> {
        let entry = self.kv.entry(key).await.map_err(unavailable)?;
        Ok(entry.filter(|e| e.operation == kv::Operation::Put).map(|e| (e.value, e.revision)))
    }

    async fn put(&self, key: &str, value: Bytes, revision: Option<u64>) -> Result<u64, StoreError> {
        match revision {
            None => self.kv.create(key, value).await.map_err(|e| match e.kind() {
                kv::CreateErrorKind::AlreadyExists => StoreError::Conflict,
                _ => unavailable(e),
            }),
            Some(revision) => self.kv.update(key, value, revision).await.map_err(|e| match e.kind() {
                kv::UpdateErrorKind::WrongLastRevision => StoreError::Conflict,
                _ => unavailable(e),
            }),
        }
    }
}

/// Entries expire `ttl` after their last write (never when `ttl` is `None`), like a KV bucket's `max_age`.
pub struct MemoryBucket {
    ttl: Option<Duration>,
    entries: Mutex<HashMap<String, (Bytes, u64, Instant)>>,
}

impl MemoryBucket {
    pub fn new(ttl: Option<Duration>) -> MemoryBucket {
        MemoryBucket { ttl, entries: Mutex::new(HashMap::new()) }
    }

    fn live(&self, written: Instant) -> bool {
        self.ttl.is_none_or(|ttl| written.elapsed() < ttl)
    }
}

#[async_trait]
impl Bucket for MemoryBucket {
    async fn get(&self, key: &str) -> Result<Option<(Bytes, u64)>, StoreError> {
        let entries = self.entries.lock().expect("bucket poisoned");
        Ok(entries.get(key).filter(|(_, _, at)| self.live(*at)).map(|(v, rev, _)| (v.clone(), *rev)))
    }

    async fn put(&self, key: &str, value: Bytes, revision: Option<u64>) -> Result<u64, StoreError> {
        let mut entries = self.entries.lock().expect("bucket poisoned");
        let current = entries.get(key).map(|(_, rev, at)| (*rev, self.live(*at)));
        let next = match (current, revision) {
            // An expired key counts as absent, but its revisions keep counting, as in a KV stream.
            (None, None) => 1,
            (Some((rev, false)), None) => rev + 1,
            (Some((rev, true)), Some(expected)) if rev == expected => rev + 1,
            _ => return Err(StoreError::Conflict),
        };
        entries.insert(key.to_string(), (value, next, Instant::now()));
        Ok(next)
    }
}
