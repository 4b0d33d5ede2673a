//! Intake's I/O: accepting a question means validating it, analysing it (`stages/intake/`, with the LLM rewriter
//! for a follow-up when one is configured), creating its loop state, recording the conversation turn and
//! publishing the first work.

use std::sync::Arc;

use sleuth_messages::{
    AskRequest, ConversationTurn, ErrorKind, ErrorResponse, LoopState, Principal, ReplyTo, Route, Stage, WorkItem,
};
use tracing::Instrument;
use uuid::Uuid;

use super::{NodeContext, patience::patiently, publish::publish_all};
use crate::{
    machine::{self, NewRequest},
    stages::intake::{analyze_in, history, llm_rewrite, normalize, understand, validate},
    store::{Committed, StoreError},
    telemetry::{self, Scope, TraceHeaders, context, scope},
};

/// Publishes what a request's state calls for, but `carried` (the work its creation carries, over NATS); for an
/// existing request the bus de-duplicates what was already sent. `revision`: what the state was committed at, when
/// known (work then carries the state). Only a request still waiting for its first plan
/// is intake's to publish: later phases were published by the stages that reached them.
async fn publish_state(
    ctx: &NodeContext,
    state: &sleuth_messages::LoopState,
    revision: Option<u64>,
    trace: &TraceHeaders,
    carried: Option<&WorkItem>,
) -> Result<(), ErrorResponse> {
    if !(state.phase == sleuth_messages::Phase::Planning && state.turn == 1) {
        return Ok(());
    }
    // The state is stored: giving up now would strand it. A bus that is briefly away (a NATS server restarting)
    // is waited for; the messages carry ids, so a publish that did go through before its ack was lost is not
    // doubled.
    let published = patiently(
        state.request_id,
        state.deadline_ms,
        "publish the first work",
        |_| true,
        || publish_all(ctx, state, revision, Some(Stage::Intake), trace, false, carried),
    );
    published.await.map_err(|e| {
        ErrorResponse::new(ErrorKind::Unavailable, format!("cannot publish work: {e}")).for_request(state.request_id)
    })
}

/// Stores a new request's state, with the planner's first work in the same write where the store carries work.
/// `AlreadyExists` when the request id is taken.
async fn create(ctx: &NodeContext, state: &Arc<LoopState>, trace: &TraceHeaders) -> Result<Committed, StoreError> {
    match machine::first_work(state, Some(Stage::Intake)).filter(|_| ctx.store.carries_work()) {
        Some(work) => {
            let trace = context::of_span(&tracing::Span::current(), trace);
            ctx.store.commit_with_work(state, None, &work, &trace).await
        }
        None => Ok(Committed { revision: ctx.store.create(state).await?, carried: false }),
    }
}

/// A request id that is already under way: its owner re-sent it, and what it needs is published again. Anyone
/// else (another tenant) is refused, and the request is left alone.
async fn resent(
    ctx: &NodeContext,
    existing: &LoopState,
    revision: u64,
    by: Option<&Principal>,
    trace: &TraceHeaders,
) -> Result<(), ErrorResponse> {
    if !Principal::may_act_on(by, existing.owner.as_ref()) {
        tracing::warn!(request_id = %existing.request_id, by = ?by, "refused a request id that belongs to another tenant");
        return Err(ErrorResponse::new(ErrorKind::InvalidInput, "request_id is already taken: choose a new one"));
    }
    publish_state(ctx, existing, Some(revision), trace, None).await
}

/// The key of a conversation in the conversations bucket: its id for the deployment's own account, and
/// `<tenant>/<id>` for a tenant's ('/' is in no conversation id), so two tenants' equal ids never meet.
pub fn conversation_key(by: Option<&Principal>, id: &str) -> String {
    match by {
        None => id.to_string(),
        Some(p) => format!("{}/{id}", p.tenant),
    }
}

/// Accepts a question: validates it, creates its loop state and publishes the first work. Returns its id.
///
/// `by` is who asks, as the NATS server vouched for it (`None`: the deployment's own account): the request
/// belongs to it, and its conversation ids are its own.
///
/// `trace` is the context the request arrived with (a client's `sleuth.ask` span, or any upstream service's):
/// the `intake` span joins it. A request that arrived without one gets a root made up here, which the process
/// that ends the request records.
pub async fn submit(
    ctx: &NodeContext,
    request: AskRequest,
    reply: Option<ReplyTo>,
    trace: &TraceHeaders,
    by: Option<Principal>,
) -> Result<Uuid, ErrorResponse> {
    let normalized = validate(&request, ctx.config.loop_.max_query_bytes)?;
    let request_id = request.request_id.unwrap_or_else(Uuid::now_v7);
    let records_root_span = trace.is_empty();
    let root = if records_root_span { telemetry::new_root() } else { trace.clone() };
    let span = tracing::info_span!(
        "stage",
        otel.name = "intake",
        otel.kind = "server",
        sleuth.request_id = %request_id,
        sleuth.turn = 0,
        sleuth.stage = "intake",
        sleuth.route = tracing::field::Empty,
        messaging.system = ctx.messaging_system(),
        messaging.operation.type = "process",
        messaging.destination.name = %ctx.subjects.ask(),
    );
    context::set_parent(&span, &root);
    let scope = Scope { request_id, turn: 0, stage: "intake" };
    let accepted = accept(ctx, request, normalized, request_id, (reply, by), root, records_root_span);
    let accepted = scope::within(scope, accepted.instrument(span.clone())).await;
    if let Err(e) = &accepted {
        telemetry::record_error(&span, &e.message);
    }
    accepted
}

async fn accept(
    ctx: &NodeContext,
    request: AskRequest,
    normalized: String,
    request_id: Uuid,
    (reply, by): (Option<ReplyTo>, Option<Principal>),
    root: TraceHeaders,
    records_root_span: bool,
) -> Result<Uuid, ErrorResponse> {
    // A re-sent request is under way (or done) already: publishing again is idempotent, but analysing it again
    // would resolve a follow-up against itself and spend the rewriter's tokens twice, and a tenant's would take a
    // second rate token. Those are looked up first; any other is found when its state cannot be created, which
    // saves a round trip for every request that is not re-sent (`sleuth ask` names its request ids).
    let may_be_costly = by.is_some() || request.conversation_id.is_some();
    if request.request_id.is_some()
        && may_be_costly
        && let Ok(Some((existing, revision))) = ctx.store.load(request_id).await
    {
        return resent(ctx, &existing, revision, by.as_ref(), &root).await.map(|_| request_id);
    }
    let timeout = request.timeout_ms.unwrap_or(ctx.config.loop_.timeout_ms).clamp(1, ctx.config.loop_.max_timeout_ms);
    ctx.admission.admit(&*ctx.bus, std::time::Duration::from_millis(timeout)).await?;
    // The request's time starts now: what the rewriter takes comes out of its deadline.
    let now_ms = telemetry::now_ms();
    if let Some(p) = &by {
        let limits = ctx.config.tenants.limits_of(&p.tenant);
        ctx.quotas.admit(&*ctx.store, Some(p), limits, request_id, now_ms.saturating_add(timeout)).await?;
    }
    let conversation = request.conversation_id.as_deref().map(|id| conversation_key(by.as_ref(), id));
    let types = &*ctx.entity_types.get();
    let previous = match &conversation {
        // The client's history is the conversation: a chat client sends all of it with each message.
        _ if !request.history.is_empty() => history::previous_turn(&request.history, types),
        Some(id) => ctx.conversations.last_turn(id).await.unwrap_or_else(|e| {
            // Without the conversation the question is still answerable, only not as a follow-up.
            tracing::warn!(conversation_id = %id, error = %e, "cannot read the conversation: answering without it");
            None
        }),
        None => None,
    };
    let (mut analysis, usage, rewriter_failed) = match (&previous, &ctx.rewriter) {
        // With an LLM, a follow-up is rewritten by the model; the deterministic rewriter is its fallback.
        (Some(prev), Some(llm)) => {
            // At most a quarter of the request's time, so a slow model leaves the loop the rest.
            let timeout = std::time::Duration::from_millis(ctx.config.llm.timeout_ms.min(timeout / 4).max(1));
            let max_bytes = ctx.config.loop_.max_query_bytes;
            match llm_rewrite::rewrite(llm, &normalized, prev, max_bytes, timeout).await {
                (Ok(r), usage) => {
                    let question = normalize(&r.rewritten);
                    let resolved = vec![format!("llm → {question}")];
                    let answers = !prev.clarifying_questions.is_empty();
                    let parts = (!r.subquestions.is_empty()).then_some(r.subquestions);
                    (understand(&normalized, &question, resolved, (answers, parts), types), usage, None)
                }
                (Err(why), usage) => (analyze_in(&normalized, Some(prev), types), usage, Some(why)),
            }
        }
        _ => (analyze_in(&normalized, previous.as_ref(), types), Default::default(), None),
    };
    if let Some(route) = ctx.config.intake.force_route
        && !matches!(analysis.route, Route::Clarify)
        && !analysis.meta_question
        && route != analysis.route
    {
        analysis.complexity.overrides.push(format!("forced_{route:?}").to_lowercase());
        analysis.route = route;
    }
    let caps = machine::caps_for(&ctx.config.loop_.tiers(), analysis.route, request.max_turns);
    let mut state = machine::new_state(NewRequest {
        request_id,
        request,
        analysis,
        caps,
        now_ms,
        deadline_ms: now_ms + timeout,
        reply,
        trace: root.clone().into(),
        records_root_span,
    });
    state.owner = by;
    // What the rewriter cost counts against the request's budget like any agent's call.
    usage.charge_to(&mut state.counters);
    if let Some(why) = rewriter_failed {
        state.counters.llm_fallbacks = 1;
        state.degraded.push(sleuth_messages::Degradation::new(sleuth_messages::Backend::Llm, why));
    }
    // A create whose ack was lost is retried into `AlreadyExists`, which is handled as a re-sent request.
    let state = Arc::new(state);
    let created = patiently(
        request_id,
        state.deadline_ms,
        "store the loop state",
        |e| matches!(e, StoreError::Unavailable(_)),
        || create(ctx, &state, &root),
    );
    // Where the create carries the planner's work (over NATS), the planner may run the moment it is stored, so
    // the accepted event and the deadline timer are sent first, on the same connection, and the planner's own
    // events cannot overtake them. Sent before the state exists they are harmless: a re-sent request's are the
    // same messages (de-duplicated by id), and a timer whose request was never stored is dropped at its deadline.
    // Elsewhere the work goes out with them after the create.
    let first = machine::first_work(&state, Some(Stage::Intake)).filter(|_| ctx.store.carries_work());
    let (created, published) = match &first {
        Some(first) => {
            let early = publish_state(ctx, &state, None, &root, Some(first));
            let (published, created) = tokio::join!(early, created);
            (created, Some(published))
        }
        None => (created.await, None),
    };
    let revision = match created {
        Ok(committed) => committed.revision,
        Err(StoreError::AlreadyExists) => {
            // A client re-sent the same request id: the request is already under way, publish what it needs.
            if let Some((existing, revision)) = ctx.store.load(request_id).await.ok().flatten() {
                resent(ctx, &existing, revision, state.owner.as_ref(), &root).await?;
            }
            return Ok(request_id);
        }
        Err(e) => {
            // Never stored, so never under way: its tenant's slot is free again.
            if let Some(p) = &state.owner {
                ctx.quotas.release(p, request_id).await;
            }
            return Err(ErrorResponse::new(ErrorKind::Unavailable, format!("cannot store loop state: {e}"))
                .for_request(request_id));
        }
    };
    let published = match published {
        Some(published) => published,
        None => publish_state(ctx, &state, Some(revision), &root, None).await,
    };
    tracing::info!(
        request_id = %request_id,
        route = ?state.analysis.route,
        score = state.analysis.complexity.score,
        max_turns = state.caps.max_turns,
        "request accepted"
    );
    tracing::Span::current().record("sleuth.route", format!("{:?}", state.analysis.route).to_lowercase());
    telemetry::metrics::request_started(&format!("{:?}", state.analysis.route).to_lowercase());
    if let Some(id) = &conversation {
        let a = &state.analysis;
        let turn = ConversationTurn {
            request_id,
            query: normalized.clone(),
            rewritten: a.rewritten.clone(),
            entities: a.entities.clone(),
            clarifying_questions: a.clarifying_questions.clone(),
            at_ms: now_ms,
            answer: None,
        };
        if let Err(e) = ctx.conversations.record(id, turn).await {
            tracing::warn!(conversation_id = %id, error = %e, "cannot record the conversation turn");
        }
    }
    published?;
    Ok(request_id)
}
