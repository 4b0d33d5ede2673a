//! [`MemoryStore`]: the embedded mode's state store, a map with revisions. Values are stored encoded, exactly
//! as in the KV bucket, so the embedded mode exercises the same codec.

use std::{collections::HashMap, sync::Mutex};

use async_trait::async_trait;
use sleuth_messages::{Encoding, LoopState, codec};
use uuid::Uuid;

use super::{StateStore, StoreError};

#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<Uuid, (Vec<u8>, u64)>>,
}

fn encode(state: &LoopState) -> Result<Vec<u8>, StoreError> {
    codec::encode(state, Encoding::MsgPack).map_err(|e| StoreError::Corrupt(e.to_string()))
}

#[async_trait]
impl StateStore for MemoryStore {
    async fn create(&self, state: &LoopState) -> Result<u64, StoreError> {
        let bytes = encode(state)?;
        let mut entries = self.entries.lock().expect("store poisoned");
        if entries.contains_key(&state.request_id) {
            return Err(StoreError::AlreadyExists);
        }
        entries.insert(state.request_id, (bytes, 1));
        Ok(1)
    }

    async fn load(&self, request_id: Uuid) -> Result<Option<(LoopState, u64)>, StoreError> {
        let entry = self.entries.lock().expect("store poisoned").get(&request_id).cloned();
        entry
            .map(|(bytes, rev)| {
                codec::decode::<LoopState>(&bytes)
                    .map(|(s, _)| (s, rev))
                    .map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .transpose()
    }

    async fn compare_and_swap(&self, state: &LoopState, revision: u64) -> Result<u64, StoreError> {
        let bytes = encode(state)?;
        let mut entries = self.entries.lock().expect("store poisoned");
        match entries.get_mut(&state.request_id) {
            Some((stored, rev)) if *rev == revision => {
                *stored = bytes;
                *rev += 1;
                Ok(*rev)
            }
            _ => Err(StoreError::Conflict),
        }
    }
}
