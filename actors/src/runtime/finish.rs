//! Ending a request from outside its loop: cancellation and the deadline watchdog end it now with the best
//! answer from what it gathered (the deterministic synthesizer, which needs no backend); a dead letter ends it
//! with an error. Compare-and-swap makes the first ending win; only the process that commits it replies.

use sleuth_messages::{ErrorResponse, LoopState, TerminationReason};
use tracing::Instrument;
use uuid::Uuid;

use super::{
    NodeContext, kv,
    publish::{on_finished, publish_all},
};
use crate::{
    machine,
    stages::synthesizer,
    telemetry::{self, Scope, TraceHeaders, context, scope},
};

/// Ends the request now with `reason` and the extractive answer from its cards. `parent` is the trace context
/// of whatever asked (the deadline timer); without one the span joins the request's root. `Ok(false)` when
/// the request is unknown or already ended.
pub async fn end_now(
    ctx: &NodeContext,
    request_id: Uuid,
    reason: TerminationReason,
    by: &'static str,
    parent: Option<&TraceHeaders>,
) -> anyhow::Result<bool> {
    end(ctx, request_id, by, parent, |state| {
        let stopped = machine::apply_stop(state, reason)?;
        let response = synthesizer::synthesize(&stopped, &ctx.entity_types.get());
        machine::apply_response(&stopped, response, telemetry::now_ms()).ok()
    })
    .await
}

/// Ends a request with an error unless it already ended.
pub async fn end_with_error(ctx: &NodeContext, request_id: Uuid, error: ErrorResponse) -> anyhow::Result<bool> {
    end(ctx, request_id, "dead_letter", None, |state| machine::apply_failure(state, error.clone(), telemetry::now_ms()))
        .await
}

async fn end(
    ctx: &NodeContext,
    request_id: Uuid,
    by: &'static str,
    parent: Option<&TraceHeaders>,
    transition: impl Fn(&LoopState) -> Option<LoopState>,
) -> anyhow::Result<bool> {
    let root;
    let parent = match parent {
        Some(parent) => parent,
        None => {
            let Some((state, _)) = ctx.store.load(request_id).await? else { return Ok(false) };
            root = crate::telemetry::context::root_trace(&state);
            &root
        }
    };
    let span = tracing::info_span!(
        "end",
        otel.name = by,
        sleuth.request_id = %request_id,
        sleuth.turn = tracing::field::Empty,
        sleuth.stage = by,
        sleuth.ended = tracing::field::Empty,
    );
    context::set_parent(&span, parent);
    let work = async {
        loop {
            let Some((state, revision)) = kv::load(ctx, request_id).await? else { return Ok(false) };
            tracing::Span::current().record("sleuth.turn", state.turn);
            let Some(done) = transition(&state) else { return Ok(false) };
            let done = std::sync::Arc::new(done);
            let Some(committed) = kv::compare_and_swap(ctx, &done, revision).await? else { continue };
            publish_all(ctx, &done, Some(committed), None, parent, true, None).await?;
            on_finished(&done);
            return Ok(true);
        }
    };
    let scope = Scope { request_id, turn: 0, stage: by };
    let ended: anyhow::Result<bool> = scope::within(scope, work.instrument(span.clone())).await;
    match &ended {
        Ok(ended) => {
            span.record("sleuth.ended", ended);
        }
        Err(e) => telemetry::record_error(&span, e),
    }
    ended
}
