//! The gateway's own API: `POST /v1/ask` (the reply as JSON, or the loop's events as SSE), and
//! `GET`/`DELETE /v1/requests/{id}` for a request's status and its cancellation.

use std::{convert::Infallible, sync::Arc};

use axum::{
    Json,
    extract::{
        Path, State,
        rejection::{JsonRejection, PathRejection},
    },
    http::{HeaderMap, StatusCode, header},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
};
use futures::Stream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sleuth_messages::{AskRequest, EventBody, Outcome, Phase, Principal, Route};

use super::{
    App,
    cite::cited,
    error::ApiError,
    run::{Run, StreamSlot},
};

/// The body of `POST /v1/ask`: the protocol's `AskRequest`, with unknown fields refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskBody {
    /// The question.
    pub query: String,
    /// A client-chosen id (UUIDv7 recommended); re-sending it does not start a second request.
    #[serde(default)]
    pub request_id: Option<uuid::Uuid>,
    /// Continue this conversation: a follow-up is resolved against its earlier turns.
    #[serde(default)]
    pub conversation_id: Option<String>,
    #[serde(default)]
    pub max_turns: Option<u32>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The conversation so far as the client keeps it, oldest first (`{"role": "user" | "assistant", "content":
    /// …}`): a follow-up is resolved against it, whether or not sleuth saw those turns.
    #[serde(default)]
    pub history: Vec<sleuth_messages::PriorTurn>,
}

impl From<AskBody> for AskRequest {
    fn from(body: AskBody) -> AskRequest {
        let mut request = AskRequest::new(body.query);
        request.request_id = body.request_id;
        request.conversation_id = body.conversation_id;
        request.max_turns = body.max_turns;
        request.timeout_ms = body.timeout_ms;
        request.history = body.history;
        request
    }
}

/// Whether the client asked for an event stream.
pub fn wants_stream(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/event-stream"))
}

/// `POST /v1/ask`.
pub async fn ask(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<AskBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let by = app.caller(&headers)?;
    let Json(body) = body.map_err(ApiError::body)?;
    let request = AskRequest::from(body);
    if wants_stream(&headers) {
        let slot = app.stream_slot(by.as_ref())?;
        let run = Run::start(&app.engine, request, by, app.trace());
        return Ok(Sse::new(events(run, slot)).keep_alive(KeepAlive::default()).into_response());
    }
    let mut run = Run::start(&app.engine, request, by, app.trace());
    let reply = run.reply().await?;
    match &reply.outcome {
        Outcome::Answer(_) => Ok(Json(reply).into_response()),
        Outcome::Error(e) => Err(ApiError::from(e.clone().for_request(run.request_id))),
    }
}

/// The run's events as SSE, `event:` its kind and `data:` the protocol's `Event` as JSON, ending with `final`
/// (or `error` when the request could not run). Dropping the stream before `final` cancels the request.
fn events(run: Run, slot: StreamSlot) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    futures::stream::unfold(Some((run, slot)), |state| async move {
        let (mut run, slot) = state?;
        match run.events.recv().await {
            Some(event) => {
                let last = matches!(event.body, EventBody::Final(_));
                if last {
                    run.finished();
                }
                let sse = SseEvent::default().event(event.kind.as_str()).id(event.msg_id());
                let sse = sse.json_data(&event).unwrap_or_else(|_| SseEvent::default().event("error"));
                Some((Ok(sse), (!last).then_some((run, slot))))
            }
            // The request ended without a final event (it could not start, or the engine failed).
            None => match run.reply().await {
                Err(error) => {
                    let sse = SseEvent::default().event("error").json_data(&error);
                    Some((Ok(sse.unwrap_or_else(|_| SseEvent::default().event("error"))), None))
                }
                Ok(reply) => {
                    let sse = SseEvent::default().event("final").json_data(&reply);
                    Some((Ok(sse.unwrap_or_else(|_| SseEvent::default().event("error"))), None))
                }
            },
        }
    })
}

/// `GET /v1/requests/{id}`: where a request is (phase, turn) and, once it ended, its outcome. Another tenant's
/// request is answered like one that does not exist.
pub async fn status(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    id: Result<Path<uuid::Uuid>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(request_id) = id.map_err(ApiError::path)?;
    let state = owned_state(&app, &headers, request_id).await?;
    let citations = match &state.outcome {
        Some(Outcome::Answer(answer)) => cited(answer, Some(&state)),
        _ => Vec::new(),
    };
    let turns = state
        .turns
        .iter()
        .map(|t| TurnStatus {
            turn: t.turn,
            actions: t.step.actions.iter().map(|a| a.describe()).collect(),
            sufficient: t.report.as_ref().map(|r| r.sufficient),
        })
        .collect();
    Ok(Json(RequestStatus {
        request_id: state.request_id,
        phase: state.phase,
        turn: state.turn,
        route: state.analysis.route,
        question: state.analysis.rewritten.clone(),
        created_ms: state.created_ms,
        deadline_ms: state.deadline_ms,
        finished_ms: state.finished_ms,
        trace_url: trace_url(app.engine.config(), state.traceparent.as_deref()),
        outcome: state.outcome,
        citations,
        turns,
    })
    .into_response())
}

/// The body of `GET /v1/requests/{id}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestStatus {
    pub request_id: uuid::Uuid,
    pub phase: Phase,
    /// The current turn (1-based).
    pub turn: u32,
    pub route: Route,
    /// The question as intake understood it: a follow-up resolved against its conversation ("Where was Masashi
    /// Kishimoto born?" for "Where was he born?").
    pub question: String,
    pub created_ms: u64,
    pub deadline_ms: u64,
    pub finished_ms: Option<u64>,
    /// The request's trace in the trace UI, when `gateway.trace_url` is set.
    pub trace_url: Option<String>,
    /// The reply, once the request ended.
    pub outcome: Option<Outcome>,
    /// The answer's citations with the passages they cite.
    pub citations: Vec<super::cite::Cited>,
    pub turns: Vec<TurnStatus>,
}

/// One turn of a request: what it did and whether the evidence was then sufficient.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TurnStatus {
    pub turn: u32,
    pub actions: Vec<String>,
    pub sufficient: Option<bool>,
}

/// The trace UI's page of the request's trace, when `gateway.trace_url` names one.
fn trace_url(config: &crate::config::Config, traceparent: Option<&str>) -> Option<String> {
    let template = config.gateway.trace_url.as_ref()?;
    let headers = crate::telemetry::TraceHeaders { traceparent: traceparent.map(str::to_string), ..Default::default() };
    Some(template.replace("{trace_id}", &headers.trace_id()?.to_string()))
}

/// `DELETE /v1/requests/{id}`: cancels an unfinished request (202); one that already ended is a 409.
pub async fn cancel(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    id: Result<Path<uuid::Uuid>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(request_id) = id.map_err(ApiError::path)?;
    let state = owned_state(&app, &headers, request_id).await?;
    if state.outcome.is_some() {
        let message = format!("request {request_id} has already ended");
        return Err(ApiError::new(StatusCode::CONFLICT, sleuth_messages::ErrorKind::InvalidInput, message));
    }
    app.engine.cancel(request_id).await?;
    Ok((StatusCode::ACCEPTED, Json(Cancelled { request_id, cancelled: true })).into_response())
}

/// The body of `DELETE /v1/requests/{id}`: the cancellation was sent.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cancelled {
    pub request_id: uuid::Uuid,
    pub cancelled: bool,
}

/// The loop state of a request, when the caller may see it.
async fn owned_state(
    app: &App,
    headers: &HeaderMap,
    request_id: uuid::Uuid,
) -> Result<sleuth_messages::LoopState, ApiError> {
    let by = app.caller(headers)?;
    match app.engine.state(request_id).await? {
        Some(state) if Principal::may_act_on(by.as_ref(), state.owner.as_ref()) => Ok(state),
        _ => Err(ApiError::not_found(request_id)),
    }
}
