//! Golden-bytes tests for [`WorkMessage`]: without a snapshot it is a work item's bytes, with one the snapshot
//! follows the item's fields, and what does not belong to the work is dropped.

use uuid::Uuid;

use super::{
    tests::{GOLDEN_WORK_ITEM, request_id, sample_state, work_item},
    *,
};
use crate::{
    envelope::WorkItem,
    work::{MAX_CARRIED_STATE_BYTES, Snapshot, WorkMessage, encode_commit, encode_work},
};

#[test]
fn a_work_message_without_a_snapshot_is_a_work_items_bytes() {
    // Old and new processes share one work stream: without a snapshot the bytes are a work item's, and a work
    // item decodes as a message without one.
    let bytes = encode(&WorkMessage::new(&work_item(), None), Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_WORK_ITEM);
    let old = encode(&work_item(), Encoding::MsgPack).unwrap();
    assert_eq!(decode::<WorkMessage>(&old).unwrap().0.into_parts(), (work_item(), None));
}

#[test]
fn a_work_message_carries_its_snapshot_after_the_work_items_fields() {
    let mut state = sample_state();
    state.request_id = request_id();
    let snapshot = Snapshot { revision: 7, state: state.clone() };
    let bytes = encode(&WorkMessage::new(&work_item(), Some(snapshot.clone())), Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let state_hex: String = encode(&state, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    // A map of three: the work item's two fields, then "snapshot": {"revision": 7, "state": <the state>}.
    let item_fields = GOLDEN_WORK_ITEM.strip_prefix("82").unwrap();
    assert_eq!(hex, format!("83{item_fields}a8736e617073686f7482a87265766973696f6e07a57374617465{state_hex}"));
    // What a hop writes, from borrowed parts, is the same bytes.
    assert_eq!(encode_work(&work_item(), Some((&state, 7))).unwrap(), bytes);
    assert_eq!(encode_work(&work_item(), None).unwrap(), encode(&work_item(), Encoding::MsgPack).unwrap());
    // An older consumer reads the work item and ignores the rest.
    assert_eq!(decode::<WorkItem>(&bytes).unwrap().0, work_item());
    assert_eq!(decode::<WorkMessage>(&bytes).unwrap().0.into_parts(), (work_item(), Some(snapshot)));
}

#[test]
fn a_state_too_large_to_carry_is_left_out() {
    let mut state = sample_state();
    state.request_id = request_id();
    state.request.query = "x".repeat(MAX_CARRIED_STATE_BYTES);
    let bytes = encode_work(&work_item(), Some((&state, 7))).unwrap();
    assert_eq!(bytes, encode(&work_item(), Encoding::MsgPack).unwrap());
}

#[test]
fn a_commit_carries_its_state_whatever_its_size_with_revision_zero() {
    // The commit is the state's only copy: it is never left out. Its revision is the message's stream sequence,
    // unknown when it is written, so the snapshot says 0 (a swap against 0 fails safely: it reloads).
    let mut state = sample_state();
    state.request_id = request_id();
    let bytes = encode_commit(&work_item(), &state).unwrap();
    assert_eq!(bytes, encode_work(&work_item(), Some((&state, 0))).unwrap());
    let state_hex: String = encode(&state, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let item_fields = GOLDEN_WORK_ITEM.strip_prefix("82").unwrap();
    assert_eq!(hex, format!("83{item_fields}a8736e617073686f7482a87265766973696f6e00a57374617465{state_hex}"));
    state.request.query = "x".repeat(MAX_CARRIED_STATE_BYTES);
    let big = encode_commit(&work_item(), &state).unwrap();
    let snapshot = decode::<WorkMessage>(&big).unwrap().0.into_parts().1.expect("carried");
    assert_eq!((snapshot.revision, snapshot.state), (0, state));
}

#[test]
fn a_snapshot_of_another_request_or_version_is_dropped() {
    let mut other = sample_state();
    other.request_id = Uuid::now_v7();
    let message = WorkMessage::new(&work_item(), Some(Snapshot { revision: 3, state: other }));
    assert_eq!(message.into_parts(), (work_item(), None));
    let mut old = sample_state();
    (old.request_id, old.schema_version) = (request_id(), SCHEMA_VERSION + 1);
    let message = WorkMessage::new(&work_item(), Some(Snapshot { revision: 3, state: old }));
    assert_eq!(message.into_parts(), (work_item(), None));
}
