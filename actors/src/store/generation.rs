//! [`IndexGeneration`]: a deployment-wide counter that ingestion increments. Every retrieval cache remembers the
//! generation its entries were computed under and drops them when it moves, so an ingestion anywhere
//! invalidates the caches of every replica.

use std::sync::Arc;

use bytes::Bytes;
use sleuth_messages::{Encoding, codec, subjects::Subjects};

use super::{
    StoreError,
    bucket::{Bucket, KvBucket},
};

const KEY: &str = "index_generation";
const CAS_ATTEMPTS: usize = 10;

pub struct IndexGeneration {
    bucket: Arc<dyn Bucket>,
}

impl IndexGeneration {
    pub fn new(bucket: Arc<dyn Bucket>) -> IndexGeneration {
        IndexGeneration { bucket }
    }

    /// The deployment's counter, in the `sleuth_meta` KV bucket (created if needed, entries kept for ever).
    pub async fn on_nats(
        js: &async_nats::jetstream::Context,
        subjects: &Subjects,
        replicas: usize,
    ) -> Result<IndexGeneration, StoreError> {
        let bucket =
            KvBucket::open(js, &subjects.meta_bucket(), std::time::Duration::ZERO, replicas, super::META_DESCRIPTION)
                .await?;
        Ok(IndexGeneration::new(Arc::new(bucket)))
    }

    async fn load(&self) -> Result<(u64, Option<u64>), StoreError> {
        match self.bucket.get(KEY).await? {
            Some((bytes, rev)) => {
                let (n, _) = codec::decode::<u64>(&bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                Ok((n, Some(rev)))
            }
            None => Ok((0, None)),
        }
    }

    /// The current generation; 0 before the first ingestion.
    pub async fn current(&self) -> Result<u64, StoreError> {
        Ok(self.load().await?.0)
    }

    /// Moves to the next generation and returns it.
    pub async fn bump(&self) -> Result<u64, StoreError> {
        for _ in 0..CAS_ATTEMPTS {
            let (n, revision) = self.load().await?;
            let bytes = codec::encode(&(n + 1), Encoding::MsgPack).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            match self.bucket.put(KEY, Bytes::from(bytes), revision).await {
                Ok(_) => return Ok(n + 1),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict)
    }
}
