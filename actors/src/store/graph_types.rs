//! The entity types of the deployment's graph, shared through the `sleuth_meta` KV bucket (key `entity_types`).
//! The processes that open the graph, and `sleuth ingest graph`, add the types they find; every other process
//! follows the key, so a planner, grader or synthesizer replica of its own knows the graph's types without
//! opening the graph.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures::StreamExt;
use sleuth_messages::{Encoding, EntityType, codec, subjects::Subjects};

use super::{
    StoreError,
    bucket::{Bucket, KvBucket},
};
use crate::entity_types::{EntityTypes, KnownTypes};

const KEY: &str = "entity_types";
const CAS_ATTEMPTS: usize = 10;

pub struct GraphTypes {
    bucket: KvBucket,
}

fn decode(bytes: &[u8]) -> Result<EntityTypes, StoreError> {
    let (names, _) = codec::decode::<Vec<String>>(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(EntityTypes::new(names))
}

impl GraphTypes {
    /// The deployment's shared types, in the `sleuth_meta` bucket (created if needed, kept for ever).
    pub async fn on_nats(
        js: &jetstream::Context,
        subjects: &Subjects,
        replicas: usize,
    ) -> Result<GraphTypes, StoreError> {
        let bucket =
            KvBucket::open(js, &subjects.meta_bucket(), Duration::ZERO, replicas, super::META_DESCRIPTION).await?;
        Ok(GraphTypes { bucket })
    }

    async fn load(&self) -> Result<(EntityTypes, Option<u64>), StoreError> {
        match self.bucket.get(KEY).await? {
            Some((bytes, revision)) => Ok((decode(&bytes)?, Some(revision))),
            None => Ok((EntityTypes::default(), None)),
        }
    }

    /// The types announced so far.
    pub async fn current(&self) -> Result<EntityTypes, StoreError> {
        Ok(self.load().await?.0)
    }

    /// Adds `types` to the shared ones (compare-and-swap, so concurrent announcers all count).
    pub async fn add(&self, types: &EntityTypes) -> Result<(), StoreError> {
        for _ in 0..CAS_ATTEMPTS {
            let (shared, revision) = self.load().await?;
            let union = shared.union(types);
            if revision.is_some() && union == shared {
                return Ok(());
            }
            let names: Vec<String> = union.iter().map(EntityType::to_string).collect();
            let bytes = codec::encode(&names, Encoding::MsgPack).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            match self.bucket.put(KEY, Bytes::from(bytes), revision).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict)
    }

    /// Teaches `known` every type announced, now and later, until the watch ends (the connection closes).
    pub async fn follow(self, known: KnownTypes) {
        let mut watch = match self.bucket.kv().watch_with_history(KEY).await {
            Ok(watch) => watch,
            Err(e) => {
                tracing::warn!(error = %e, "cannot follow the graph's entity types; only those known at start-up");
                return;
            }
        };
        while let Some(entry) = watch.next().await {
            let types = match entry {
                Ok(entry) if entry.operation == kv::Operation::Put => decode(&entry.value),
                Ok(_) => continue,
                Err(e) => Err(StoreError::Unavailable(e.to_string())),
            };
            match types {
                Ok(types) => {
                    if known.add(&types) {
                        tracing::info!(types = ?known.get(), "the graph's entity types changed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "unreadable entity types in the meta bucket"),
            }
        }
    }
}
