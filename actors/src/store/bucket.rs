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

/// Opens a KV bucket, creating it with the client library's KV API if it does not exist yet; `ttl` of zero keeps
/// entries for ever. A process whose user may not create buckets (a stage under its own NATS user) only opens it.
pub async fn open_kv(
    js: &jetstream::Context,
    bucket: &str,
    ttl: Duration,
    replicas: usize,
    description: &str,
) -> Result<kv::Store, StoreError> {
    let missing = match js.get_key_value(bucket).await {
        Ok(store) => return Ok(store),
        Err(e) => e,
    };
    let created = js
        .create_key_value(kv::Config {
            bucket: bucket.to_string(),
            description: description.to_string(),
            history: 1,
            max_age: ttl,
            storage: stream::StorageType::File,
            num_replicas: replicas.max(1),
            ..Default::default()
        })
        .await;
    match created {
        Ok(store) => Ok(store),
        // Another process may have created it meanwhile.
        Err(e) => js.get_key_value(bucket).await.map_err(|_| {
            unavailable(crate::nats_client::explain(format!(
                "cannot open kv bucket {bucket} ({missing}) nor create it: {e}"
            )))
        }),
    }
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
                _ if super::nats_loops::lost_in_flight(&e) => StoreError::Conflict,
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
