//! [`WorkMessage`]: a work item as it travels over NATS, with the loop state its publisher committed, so the stage
//! that takes it need not read the state back before it works. A work message that is itself the commit of its
//! state ([`encode_commit`]) makes a hop one write.

use serde::{Deserialize, Serialize};

use crate::{
    Encoding,
    codec::{self, CodecError},
    envelope::{Envelope, Stage, WorkItem},
    loop_state::LoopState,
};

/// The largest encoded loop state a work message carries. A larger one (a deep loop's, before compaction) is
/// left in the store, where the stage reads it: the message stays far below NATS's 1 MiB.
pub const MAX_CARRIED_STATE_BYTES: usize = 256 * 1024;

/// A loop state and the store revision its publisher committed it at. The pair is only ever written as the
/// result of that commit, so a compare-and-swap against `revision` that succeeds proves the state is current.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub revision: u64,
    pub state: LoopState,
}

/// The fields of [`WorkItem`] and an optional [`Snapshot`]. Without one its bytes are a work item's, and a work
/// item's bytes decode as one without a snapshot, so either side may be older than the other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkMessage {
    pub envelope: Envelope,
    pub stage: Stage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Box<Snapshot>>,
}

/// [`WorkMessage`]'s layout over borrowed parts, so a hop encodes the state it committed without copying it.
#[derive(Serialize)]
struct Borrowed<'a> {
    envelope: &'a Envelope,
    stage: Stage,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<BorrowedSnapshot<'a>>,
}

#[derive(Serialize)]
struct BorrowedSnapshot<'a> {
    revision: u64,
    state: &'a LoopState,
}

/// Encodes `item` as a [`WorkMessage`] in MessagePack, carrying `state` committed at `revision` when there is one
/// and the message stays within [`MAX_CARRIED_STATE_BYTES`] (else without it).
pub fn encode_work(item: &WorkItem, snapshot: Option<(&LoopState, u64)>) -> Result<Vec<u8>, CodecError> {
    fn message<'a>(item: &'a WorkItem, snapshot: Option<(&'a LoopState, u64)>) -> Borrowed<'a> {
        Borrowed {
            envelope: &item.envelope,
            stage: item.stage,
            snapshot: snapshot.map(|(state, revision)| BorrowedSnapshot { revision, state }),
        }
    }
    let bytes = codec::encode(&message(item, snapshot), Encoding::MsgPack)?;
    if snapshot.is_some() && bytes.len() > MAX_CARRIED_STATE_BYTES {
        return codec::encode(&message(item, None), Encoding::MsgPack);
    }
    Ok(bytes)
}

/// Encodes `item` as a [`WorkMessage`] that always carries `state`: the message that commits the state (its stream
/// sequence is the state's revision, so the snapshot's own `revision` is 0 and never used). Fails only when the
/// state cannot be encoded; the bus refuses a message over its payload limit, as a store refuses such a value.
pub fn encode_commit(item: &WorkItem, state: &LoopState) -> Result<Vec<u8>, CodecError> {
    let message = Borrowed {
        envelope: &item.envelope,
        stage: item.stage,
        snapshot: Some(BorrowedSnapshot { revision: 0, state }),
    };
    codec::encode(&message, Encoding::MsgPack)
}

impl WorkMessage {
    pub fn new(item: &WorkItem, snapshot: Option<Snapshot>) -> WorkMessage {
        WorkMessage { envelope: item.envelope.clone(), stage: item.stage, snapshot: snapshot.map(Box::new) }
    }

    /// The work, and the snapshot when it belongs to the work's request and to this protocol version: anything
    /// else is dropped, and the stage reads the store as it would without one.
    pub fn into_parts(self) -> (WorkItem, Option<Snapshot>) {
        let item = WorkItem { envelope: self.envelope, stage: self.stage };
        let snapshot = self.snapshot.map(|s| *s).filter(|s| {
            s.state.request_id == item.envelope.request_id && s.state.schema_version == crate::SCHEMA_VERSION
        });
        (item, snapshot)
    }
}
