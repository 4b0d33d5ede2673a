//! [`Conversations`]: the recent turns of each `conversation_id`, in a [`Bucket`] whose TTL forgets idle
//! conversations. Intake reads the last turn to resolve a follow-up and appends the new one with
//! compare-and-swap, so replicas taking turns of the same conversation do not lose each other's writes.

use std::sync::Arc;

use bytes::Bytes;
use sleuth_messages::{Conversation, ConversationTurn, Encoding, codec};

use super::{StoreError, bucket::Bucket};

pub struct Conversations {
    bucket: Arc<dyn Bucket>,
    /// Turns kept per conversation; older ones are dropped.
    max_turns: usize,
}

/// Attempts at appending a turn before giving up on a conversation many replicas write at once.
const CAS_ATTEMPTS: usize = 5;

impl Conversations {
    pub fn new(bucket: Arc<dyn Bucket>, max_turns: usize) -> Conversations {
        Conversations { bucket, max_turns: max_turns.max(1) }
    }

    async fn load(&self, id: &str) -> Result<Option<(Conversation, u64)>, StoreError> {
        match self.bucket.get(id).await? {
            Some((bytes, rev)) => codec::decode::<Conversation>(&bytes)
                .map(|(c, _)| Some((c, rev)))
                .map_err(|e| StoreError::Corrupt(e.to_string())),
            None => Ok(None),
        }
    }

    /// The conversation's most recent turn, if it has one (and has not expired).
    pub async fn last_turn(&self, id: &str) -> Result<Option<ConversationTurn>, StoreError> {
        Ok(self.load(id).await?.and_then(|(c, _)| c.last().cloned()))
    }

    /// Appends `turn`, unless a turn of the same request is already there (a re-sent request).
    pub async fn record(&self, id: &str, turn: ConversationTurn) -> Result<(), StoreError> {
        for _ in 0..CAS_ATTEMPTS {
            let (mut conversation, revision) = match self.load(id).await? {
                Some((c, rev)) => (c, Some(rev)),
                None => (Conversation::default(), None),
            };
            if conversation.turns.iter().any(|t| t.request_id == turn.request_id) {
                return Ok(());
            }
            conversation.turns.push(turn.clone());
            let excess = conversation.turns.len().saturating_sub(self.max_turns);
            conversation.turns.drain(..excess);
            let bytes =
                codec::encode(&conversation, Encoding::MsgPack).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            match self.bucket.put(id, Bytes::from(bytes), revision).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict)
    }
}
