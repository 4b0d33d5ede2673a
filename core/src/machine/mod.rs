//! The loop state machine: plain functions from a [`LoopState`] (plus a stage's result) to the next one. No I/O, no clock.
//!
//! Every stage follows the same rule (at-least-once delivery, exactly-once effect): load the state, check with [`expects`] that the
//! work still applies, compute the new state with one of the `apply_*` functions, commit it with
//! compare-and-swap, then publish [`next_messages`] of the committed state. Because what is published is a
//! function of the state alone, a redelivered or re-run message can only re-publish the same messages,
//! which the bus de-duplicates by id.

mod caps;
mod compact;
mod create;
mod outbound;
mod phase;
pub mod ranking;
mod transition;
pub use caps::{Tiers, budget_spent, cap_reached, caps_for};
pub use create::new_state;
pub use outbound::{Outbound, first_work, may_send, next_messages, reply_of, work_items};
pub use phase::{current_action, executor_of, expects, published_by, waiting_on};
pub use transition::{
    apply_deadline, apply_failure, apply_outcome, apply_plan, apply_report, apply_response, apply_stop, weights,
};

use sleuth_messages::{AskRequest, Caps, Phase, QueryAnalysis, ReplyTo};
use uuid::Uuid;

/// Why a transition was refused. These are programming or model errors, not transient ones.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TransitionError {
    #[error("invalid next step: {0}")]
    InvalidStep(String),
    #[error("state is in phase {phase:?}, cannot {wanted}")]
    WrongPhase { phase: Phase, wanted: &'static str },
}

/// The W3C trace context of a request's root span (`traceparent`, `tracestate`, `baggage`), which the state keeps
/// so that whatever acts on the request later joins its trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootTrace {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
}

/// Everything intake knows when it creates a request.
pub struct NewRequest {
    pub request_id: Uuid,
    pub request: AskRequest,
    pub analysis: QueryAnalysis,
    pub caps: Caps,
    pub now_ms: u64,
    pub deadline_ms: u64,
    pub reply: Option<ReplyTo>,
    /// The context of the request's root span `sleuth.ask`.
    pub trace: RootTrace,
    /// Intake made the root up: the process that ends the request records it.
    pub records_root_span: bool,
}

#[cfg(test)]
mod tests;
