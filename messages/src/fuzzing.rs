//! What the fuzz targets in `fuzz/` drive, and what CI replays their corpus through: every message type a
//! process decodes from outside (the bus, the KV store, a client, a model), from arbitrary bytes in MessagePack
//! or JSON. Decoding must return, never panic, and whatever decodes must encode and decode to the same bytes.

use serde::{Serialize, de::DeserializeOwned};

use crate::{
    AgentResponse, AskReply, AskRequest, Conversation, EntitiesReply, ErrorResponse, Event, GraphResult,
    HydrateRequest, LoopState, NextStep, PlannerState, QueryRewrite, RetrievalResult, SearchRequest, SufficiencyReport,
    WorkItem, WorkMessage,
    codec::{decode, encode},
};

/// Decodes `data` as every message type.
pub fn wire(data: &[u8]) {
    round_trip::<WorkItem>(data);
    round_trip::<WorkMessage>(data);
    round_trip::<AskRequest>(data);
    round_trip::<AskReply>(data);
    round_trip::<LoopState>(data);
    round_trip::<Event>(data);
    round_trip::<Conversation>(data);
    round_trip::<SearchRequest>(data);
    round_trip::<HydrateRequest>(data);
    round_trip::<EntitiesReply>(data);
    round_trip::<ErrorResponse>(data);
    round_trip::<RetrievalResult>(data);
    round_trip::<GraphResult>(data);
    round_trip::<AgentResponse>(data);
    round_trip::<PlannerState>(data);
    round_trip::<SufficiencyReport>(data);
    round_trip::<QueryRewrite>(data);
    if round_trip::<NextStep>(data) {
        // What the planner's output goes through before anything runs.
        if let Ok((step, _)) = decode::<NextStep>(data) {
            let _ = step.validate();
        }
    }
}

/// [`wire`] on JSON: `data` after a `{`, so the JSON decoder is the one exercised.
pub fn wire_json(data: &[u8]) {
    let mut json = Vec::with_capacity(data.len() + 1);
    json.push(b'{');
    json.extend_from_slice(data);
    wire(&json);
}

/// True when `data` decoded as `T`.
fn round_trip<T: Serialize + DeserializeOwned>(data: &[u8]) -> bool {
    let Ok((value, encoding)) = decode::<T>(data) else { return false };
    let bytes = encode(&value, encoding).expect("a decoded value encodes");
    let (again, _) = decode::<T>(&bytes).expect("an encoded value decodes");
    let bytes_again = encode(&again, encoding).expect("a decoded value encodes");
    assert_eq!(bytes, bytes_again, "{} does not survive a round trip", std::any::type_name::<T>());
    true
}
