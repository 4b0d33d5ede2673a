//! What a committed state calls for, sent: the next stage's work, the events, the deadline timer and the reply,
//! under the publishing hop's trace context; and what follows once a request's end is committed.

use sleuth_messages::{LoopState, Stage, WorkItem};

use super::NodeContext;
use crate::{
    bus::BusError,
    machine::{self, Outbound},
    telemetry::{TraceHeaders, context},
};

/// Publishes everything the state calls for that `by` may send ([`machine::next_messages`]; `None` for an ending
/// from outside the loop), but `carried`: the work item the commit itself was (over NATS). `revision` is the store
/// revision `state` was committed at, when the caller just committed it: other work then carries the state
/// (over NATS), and its stage starts without reading the store. Every message carries the trace
/// context of the current span, the hop that published it, so the next hop's span is that hop's child; when
/// spans are not exported, `inherited` (the context this hop started from) passes through unchanged. The reply
/// to the requester's inbox is only sent when `replies` is set (by whoever committed the end, or its
/// redelivery): unlike work and events, a core NATS reply is not de-duplicated.
///
/// The publishes are sent in order and their acknowledgements awaited together, so a hop that publishes work
/// and two events waits for one round trip, not three. It returns once every one is acknowledged (the caller
/// acks its delivery only then), and fails if any failed: a redelivery publishes them again, de-duplicated.
pub async fn publish_all(
    ctx: &NodeContext,
    state: &LoopState,
    revision: Option<u64>,
    by: Option<Stage>,
    inherited: &TraceHeaders,
    replies: bool,
    carried: Option<&WorkItem>,
) -> Result<(), BusError> {
    let committed = revision.map(|revision| (state, revision));
    let trace = context::of_span(&tracing::Span::current(), inherited);
    let trace = &trace;
    let publishes = machine::next_messages(state, by).into_iter().map(|out| async move {
        match out {
            Outbound::Work(item) if Some(&item) == carried => Ok(()),
            Outbound::Work(item) => ctx.bus.publish_work(&item, committed, trace).await,
            Outbound::Event(event) => ctx.bus.publish_event(&event, state.owner.as_ref(), trace).await,
            Outbound::Deadline(envelope) => ctx.bus.publish_deadline(&envelope, trace).await,
            Outbound::Reply(to, reply) if replies => {
                // A lost reply is not fatal: the final event holds the same answer.
                if let Err(e) = ctx.bus.reply(&to, &reply, trace).await {
                    tracing::warn!(request_id = %state.request_id, error = %e, "cannot send reply");
                }
                Ok(())
            }
            Outbound::Reply(..) => Ok(()),
        }
    });
    futures::future::try_join_all(publishes).await.map(drop)
}

/// What happens once a request's end is committed, exactly once, by the process that committed it.
pub fn on_finished(state: &LoopState) {
    crate::telemetry::metrics::request_finished(state);
    crate::telemetry::record_root(state);
}
