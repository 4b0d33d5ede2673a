//! [`MemoryStore`]: the embedded mode's state store, a map with revisions. It keeps the states themselves, not
//! their encoding: a read is the written state, shared and immutable, which is what decoding the KV bucket's bytes
//! gives (the codec's round trip is pinned by its golden tests and fuzzed), without paying for a decode or a copy
//! on every hop. States
//! expire like the bucket's: `ttl` after their last write, and a finished request's [`DONE_TTL`] after it
//! finished, so a long-running process holds only the requests of the last minute or so.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use async_trait::async_trait;
use sleuth_messages::{LoopState, Phase};
use uuid::Uuid;

use super::{StateStore, StoreError};

/// How long a finished request's state is kept: long enough for a late redelivery to find it done, and for the
/// caller that waited on it (`sleuth eval`) to read it.
pub const DONE_TTL: Duration = Duration::from_secs(60);

struct Entry {
    state: Arc<LoopState>,
    revision: u64,
    expires: Instant,
}

pub struct MemoryStore {
    ttl: Duration,
    entries: Mutex<Entries>,
}

struct Entries {
    map: HashMap<Uuid, Entry>,
    /// When expired entries were last removed; a sweep runs at most every [`SWEEP_EVERY`].
    swept: Instant,
}

const SWEEP_EVERY: Duration = Duration::from_secs(5);

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(Duration::from_secs(3600))
    }
}

impl MemoryStore {
    /// A store whose states expire `ttl` after their last write (a finished one sooner, see [`DONE_TTL`]).
    pub fn new(ttl: Duration) -> MemoryStore {
        MemoryStore { ttl, entries: Mutex::new(Entries { map: HashMap::new(), swept: Instant::now() }) }
    }

    fn expiry(&self, state: &LoopState) -> Instant {
        let ttl = if state.phase == Phase::Done { DONE_TTL.min(self.ttl) } else { self.ttl };
        Instant::now() + ttl
    }
}

impl Entries {
    fn sweep(&mut self, now: Instant) {
        if now.duration_since(self.swept) >= SWEEP_EVERY {
            self.map.retain(|_, e| e.expires > now);
            self.swept = now;
        }
    }

    fn live(&mut self, id: &Uuid) -> Option<&mut Entry> {
        self.map.get_mut(id).filter(|e| e.expires > Instant::now())
    }
}

#[async_trait]
impl StateStore for MemoryStore {
    async fn create(&self, state: &LoopState) -> Result<u64, StoreError> {
        let written = Arc::new(state.clone());
        let expires = self.expiry(state);
        let mut entries = self.entries.lock().expect("store poisoned");
        entries.sweep(Instant::now());
        if entries.live(&state.request_id).is_some() {
            return Err(StoreError::AlreadyExists);
        }
        entries.map.insert(state.request_id, Entry { state: written, revision: 1, expires });
        Ok(1)
    }

    async fn load(&self, request_id: Uuid) -> Result<Option<(Arc<LoopState>, u64)>, StoreError> {
        Ok(self.entries.lock().expect("store poisoned").live(&request_id).map(|e| (e.state.clone(), e.revision)))
    }

    async fn compare_and_swap(&self, state: &Arc<LoopState>, revision: u64) -> Result<u64, StoreError> {
        let written = state.clone();
        let expires = self.expiry(state);
        let mut entries = self.entries.lock().expect("store poisoned");
        match entries.live(&state.request_id) {
            Some(entry) if entry.revision == revision => {
                entry.state = written;
                entry.revision += 1;
                entry.expires = expires;
                Ok(entry.revision)
            }
            _ => Err(StoreError::Conflict),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(phase: Phase) -> LoopState {
        let mut state = crate::fixtures::state_for("Which anime is Luffy in?");
        state.phase = phase;
        state
    }

    #[tokio::test]
    async fn states_expire_after_their_ttl_and_finished_ones_sooner() {
        let store = MemoryStore::new(Duration::from_millis(200));
        let running = state(Phase::Planning);
        store.create(&running).await.unwrap();
        assert!(store.load(running.request_id).await.unwrap().is_some());
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(store.load(running.request_id).await.unwrap().is_none(), "expired after its ttl");
        assert!(
            matches!(store.compare_and_swap(&Arc::new(running), 1).await, Err(StoreError::Conflict)),
            "an expired state cannot be updated"
        );

        let store = MemoryStore::new(Duration::from_secs(3600));
        let mut done = state(Phase::Planning);
        store.create(&done).await.unwrap();
        done.phase = Phase::Done;
        store.compare_and_swap(&Arc::new(done.clone()), 1).await.unwrap();
        let expires = store.entries.lock().unwrap().map[&done.request_id].expires;
        assert!(expires <= Instant::now() + DONE_TTL, "a finished request is kept only {DONE_TTL:?}");
    }

    /// States held in memory, expired ones not yet swept included.
    fn held(store: &MemoryStore) -> usize {
        store.entries.lock().unwrap().map.len()
    }

    #[tokio::test]
    async fn expired_states_are_swept_out_of_memory() {
        let store = MemoryStore::new(Duration::from_millis(10));
        for _ in 0..100 {
            store.create(&state(Phase::Planning)).await.unwrap();
        }
        assert_eq!(held(&store), 100);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The next write after SWEEP_EVERY removes what expired.
        store.entries.lock().unwrap().swept = Instant::now() - SWEEP_EVERY;
        store.create(&state(Phase::Planning)).await.unwrap();
        assert_eq!(held(&store), 1);
    }
}
