//! Hostile input for the codec: malformed, oversized, of another version, out of a float's range, of an unknown
//! variant, or with fields a newer writer added.

use super::{
    tests::{hit, request_id, work_item},
    *,
};
use crate::{analysis::AskRequest, envelope::WorkItem, report::SufficiencyReport, result::Hit};

#[test]
fn malformed_payloads_are_typed_errors() {
    for bytes in [&b"{not json"[..], &b"\xc1\xc1\xc1"[..], &b""[..], &b"{\"query\": 5}"[..], &b"\x93\x01\x02"[..]] {
        let err = decode::<AskRequest>(bytes).unwrap_err();
        let response: ErrorResponse = err.into();
        assert_eq!(response.kind, ErrorKind::Malformed, "{bytes:?}");
        assert!(!response.retryable);
    }
}

#[test]
fn oversized_payload_is_refused_before_parsing() {
    let bytes = vec![b'{'; MAX_PAYLOAD_BYTES + 1];
    let response: ErrorResponse = decode::<AskRequest>(&bytes).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::TooLarge);
}

#[test]
fn unknown_schema_version_is_reported_as_such() {
    let response: ErrorResponse = decode::<AskRequest>(br#"{"query":"x","schema_version":99}"#).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::UnsupportedVersion);

    let mut item = work_item();
    item.envelope.schema_version = 7;
    let bytes = encode(&item, Encoding::MsgPack).unwrap();
    let response: ErrorResponse = decode::<WorkItem>(&bytes).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::UnsupportedVersion);
}

/// The version is read before what follows it: a work message of another version whose loop state this version
/// cannot read is a version problem (the probe stops at the envelope instead of walking the state), and one of
/// this version with a broken state is malformed.
#[test]
fn a_version_is_found_before_a_state_that_cannot_be_read() {
    let with_broken_state = |version: u16| {
        let mut item = work_item();
        item.envelope.schema_version = version;
        let mut bytes = encode(&item, Encoding::MsgPack).unwrap();
        // A third field, "snapshot", whose value opens a map and ends there.
        bytes[0] = 0x83;
        bytes.extend_from_slice(b"\xa8snapshot\x81");
        bytes
    };
    let response: ErrorResponse = decode::<crate::work::WorkMessage>(&with_broken_state(7)).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::UnsupportedVersion);
    let response: ErrorResponse =
        decode::<crate::work::WorkMessage>(&with_broken_state(SCHEMA_VERSION)).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::Malformed);
}

/// serde matches MessagePack maps keyed by field index, and structs sent as arrays, by position; the version
/// check must find the version there too (fuzzing found `{5: 5, 0: "…"}` decoding as an `AskRequest` of version 5).
#[test]
fn a_version_given_by_field_index_or_position_is_checked() {
    let by_index = b"\x82\x05\x05\x00\xa1q";
    let response: ErrorResponse = decode::<AskRequest>(by_index).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::UnsupportedVersion);

    let mut ask = AskRequest::new("q");
    ask.request_id = Some(request_id());
    ask.conversation_id = Some("c".into());
    ask.max_turns = Some(1);
    ask.timeout_ms = Some(1);
    ask.schema_version = Some(6);
    let as_array = rmp_serde::to_vec(&ask).unwrap();
    let response: ErrorResponse = decode::<AskRequest>(&as_array).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::UnsupportedVersion);

    let mut item = work_item();
    item.envelope.schema_version = 7;
    let as_array = rmp_serde::to_vec(&item).unwrap();
    let response: ErrorResponse = decode::<WorkItem>(&as_array).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::UnsupportedVersion);

    // The current version, by position, still decodes; so does a type with no version (the entity-type list).
    ask.schema_version = Some(SCHEMA_VERSION);
    assert_eq!(decode::<AskRequest>(&rmp_serde::to_vec(&ask).unwrap()).unwrap().0, ask);
    let types = encode(&vec!["anime".to_owned()], Encoding::MsgPack).unwrap();
    assert_eq!(decode::<Vec<String>>(&types).unwrap().0, ["anime"]);
}

/// JSON has no infinity: `1e39` in an `f32` field would decode as infinity and encode back as `null`, which no
/// reader accepts (found by fuzzing). Non-finite numbers are malformed in either encoding.
#[test]
fn numbers_past_a_float_s_range_are_malformed() {
    let json = br#"{"id":"a","doc_id":"a","title":"t","text":"x","score":1e39}"#;
    let response: ErrorResponse = decode::<Hit>(json).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::Malformed);
    assert!(response.message.contains("not a finite number"), "{}", response.message);
    let mut nan = hit("d1");
    nan.score = f32::NAN;
    let bytes = encode(&nan, Encoding::MsgPack).unwrap();
    assert_eq!(ErrorResponse::from(decode::<Hit>(&bytes).unwrap_err()).kind, ErrorKind::Malformed);
    let json = br#"{"sufficient":true,"confidence":3.4e38,"rationale":"r"}"#;
    assert!(decode::<SufficiencyReport>(json).is_ok(), "the largest f32 values still decode");
}

#[test]
fn unknown_enum_value_is_malformed_not_a_panic() {
    let json = br#"{"envelope":{"schema_version":1,"request_id":"01890a5d-ac96-774b-bcce-b302099a8057","turn":1,"step":0,"deadline_ms":1,"attempt":1},"stage":"teleporter"}"#;
    let response: ErrorResponse = decode::<WorkItem>(json).unwrap_err().into();
    assert_eq!(response.kind, ErrorKind::Malformed);
}

#[test]
fn unknown_fields_are_ignored_so_old_readers_survive_additions() {
    let (req, _) = decode::<AskRequest>(br#"{"query":"x","future_field":[1,2,3]}"#).unwrap();
    assert_eq!(req.query, "x");
}
