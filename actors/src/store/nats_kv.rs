//! [`KvStore`]: loop state in the JetStream KV bucket `sleuth_loops`, updated with compare-and-swap on the
//! entry's revision.

use std::{sync::Arc, time::Duration};

use async_nats::jetstream::{self, kv};
use async_trait::async_trait;
use bytes::Bytes;
use sleuth_messages::{Encoding, LoopState, codec};
use uuid::Uuid;

use super::{StateStore, StoreError};

pub struct KvStore {
    kv: kv::Store,
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl KvStore {
    /// Opens the bucket, creating it if needed.
    pub async fn open(
        js: &jetstream::Context,
        bucket: &str,
        ttl: Duration,
        replicas: usize,
    ) -> Result<KvStore, StoreError> {
        let description = "sleuth loop state, one key per request";
        Ok(KvStore { kv: super::bucket::open_kv(js, bucket, ttl, replicas, description).await? })
    }

    pub fn inner(&self) -> &kv::Store {
        &self.kv
    }
}

fn encode(state: &LoopState) -> Result<Bytes, StoreError> {
    codec::encode(state, Encoding::MsgPack).map(Bytes::from).map_err(|e| StoreError::Corrupt(e.to_string()))
}

#[async_trait]
impl StateStore for KvStore {
    async fn create(&self, state: &LoopState) -> Result<u64, StoreError> {
        self.kv.create(state.request_id.to_string(), encode(state)?).await.map_err(|e| match e.kind() {
            kv::CreateErrorKind::AlreadyExists => StoreError::AlreadyExists,
            _ => unavailable(e),
        })
    }

    async fn load(&self, request_id: Uuid) -> Result<Option<(Arc<LoopState>, u64)>, StoreError> {
        let entry = self.kv.entry(request_id.to_string()).await.map_err(unavailable)?;
        match entry {
            Some(entry) if entry.operation == kv::Operation::Put => codec::decode::<LoopState>(&entry.value)
                .map(|(state, _)| Some((Arc::new(state), entry.revision)))
                .map_err(|e| StoreError::Corrupt(e.to_string())),
            _ => Ok(None),
        }
    }

    async fn compare_and_swap(&self, state: &Arc<LoopState>, revision: u64) -> Result<u64, StoreError> {
        self.kv.update(state.request_id.to_string(), encode(state)?, revision).await.map_err(|e| match e.kind() {
            kv::UpdateErrorKind::WrongLastRevision => StoreError::Conflict,
            _ => unavailable(e),
        })
    }
}
