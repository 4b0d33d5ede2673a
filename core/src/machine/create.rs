//! A new request's first state: turn 1, waiting for the planner.

use sleuth_messages::{LoopState, Phase, SCHEMA_VERSION};

use super::NewRequest;

/// The first state of a request: turn 1, waiting for the planner.
pub fn new_state(new: NewRequest) -> LoopState {
    LoopState {
        schema_version: SCHEMA_VERSION,
        request_id: new.request_id,
        request: new.request,
        analysis: new.analysis,
        plan: None,
        reply: new.reply,
        owner: None,
        traceparent: new.trace.traceparent,
        tracestate: new.trace.tracestate,
        baggage: new.trace.baggage,
        records_root_span: new.records_root_span,
        created_ms: new.now_ms,
        deadline_ms: new.deadline_ms,
        caps: new.caps,
        turn: 1,
        phase: Phase::Planning,
        stop_reason: None,
        turns: Vec::new(),
        cards: Vec::new(),
        counters: Default::default(),
        degraded: Vec::new(),
        outcome: None,
        finished_ms: None,
    }
}
