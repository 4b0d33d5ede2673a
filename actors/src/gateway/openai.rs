//! The OpenAI-compatible endpoints: `POST /v1/chat/completions` (plain and `stream: true`) and `GET /v1/models`.
//! The last user message is the question and the earlier ones the conversation; the answer keeps its `[n]`
//! markers and a `citations` list (id, title, text, url) comes with it; `usage` is the LLM tokens the loop spent.

use std::{convert::Infallible, sync::Arc};

use axum::{
    Json,
    extract::{State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
};
use futures::{Stream, StreamExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sleuth_messages::{
    AskReply, AskRequest, LoopState, MAX_HISTORY_TURN_BYTES, MAX_HISTORY_TURNS, Outcome, PriorTurn, TurnRole,
};

use super::{
    App,
    cite::{Cited, cited},
    error::ApiError,
    run::Run,
};

/// A chat completion request. Fields of the OpenAI API that do not apply to a retrieval loop (`temperature`,
/// `n`, `tools`, …) are accepted and ignored, as OpenAI-compatible servers do.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
}

/// A message's content: a string, or parts of which the text ones count.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Part {
    #[serde(default)]
    pub text: Option<String>,
}

impl Content {
    fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n"),
        }
    }
}

/// An error in the shape OpenAI clients read (`error.message`), with the protocol's kind as its `type`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenAiError {
    pub error: OpenAiErrorBody,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenAiErrorBody {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: sleuth_messages::ErrorKind,
    /// The HTTP status.
    pub code: u16,
    pub retryable: bool,
}

fn openai_error(error: ApiError) -> Response {
    let body = OpenAiErrorBody {
        message: error.body.message,
        kind: error.body.kind,
        code: error.status.as_u16(),
        retryable: error.body.retryable,
    };
    (error.status, Json(OpenAiError { error: body })).into_response()
}

/// A chat completion (`object: chat.completion`), with the answer's `citations` and sleuth's own details.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChatCompletion {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<Choice>,
    pub usage: Usage,
    pub citations: Vec<Cited>,
    pub sleuth: SleuthDetails,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Choice {
    pub index: u32,
    pub message: AssistantMessage,
    pub finish_reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AssistantMessage {
    pub role: String,
    pub content: String,
}

/// The LLM tokens the loop spent, as OpenAI's `usage`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
}

/// The request behind a completion: its id (for `GET /v1/requests/{id}`), route and time in the loop.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SleuthDetails {
    pub request_id: uuid::Uuid,
    pub route: Option<sleuth_messages::Route>,
    pub elapsed_ms: u64,
}

/// `GET /v1/models`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelList {
    pub object: String,
    pub data: Vec<Model>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Model {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub owned_by: String,
}

/// The question (the last user message) and the conversation it continues: every user and assistant message
/// before it is the request's history (the most recent [`MAX_HISTORY_TURNS`], each cut to
/// [`MAX_HISTORY_TURN_BYTES`]), so a follow-up is resolved against what the client shows, whether or not sleuth
/// saw those turns. System and tool messages are not the conversation. The conversation id is derived from the
/// first user message, so every turn of one chat lands in the same sleuth conversation.
fn to_request(chat: &ChatRequest) -> Result<AskRequest, ApiError> {
    let turns: Vec<PriorTurn> = chat
        .messages
        .iter()
        .filter_map(|m| {
            let role = match m.role.as_str() {
                "user" => TurnRole::User,
                "assistant" => TurnRole::Assistant,
                _ => return None,
            };
            let content = m.content.as_ref().map(Content::text)?;
            Some(PriorTurn { role, content })
        })
        .collect();
    let Some(last) = turns.iter().rposition(|t| t.role == TurnRole::User) else {
        let message = "messages: no user message to answer";
        return Err(ApiError::new(StatusCode::BAD_REQUEST, sleuth_messages::ErrorKind::InvalidInput, message));
    };
    let mut request = AskRequest::new(turns[last].content.clone());
    let first = turns.iter().find(|t| t.role == TurnRole::User).map_or("", |t| t.content.as_str());
    request.conversation_id = Some(format!("chat-{}", &hex::encode(Sha256::digest(first.as_bytes()))[..32]));
    request.history = turns[last.saturating_sub(MAX_HISTORY_TURNS)..last].iter().map(cut).collect();
    Ok(request)
}

/// A turn no longer than a history's turn may be, cut at a character boundary.
fn cut(turn: &PriorTurn) -> PriorTurn {
    let mut end = turn.content.len().min(MAX_HISTORY_TURN_BYTES);
    while !turn.content.is_char_boundary(end) {
        end -= 1;
    }
    PriorTurn { role: turn.role, content: turn.content[..end].to_string() }
}

/// `POST /v1/chat/completions`.
pub async fn chat(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<ChatRequest>, JsonRejection>,
) -> Response {
    match chat_inner(app, headers, body).await {
        Ok(response) => response,
        Err(error) => openai_error(error),
    }
}

async fn chat_inner(
    app: Arc<App>,
    headers: HeaderMap,
    body: Result<Json<ChatRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let by = app.caller(&headers)?;
    let Json(chat) = body.map_err(ApiError::body)?;
    let request = to_request(&chat)?;
    let model = chat.model.clone().unwrap_or_else(|| app.engine.config().gateway.model_name.clone());
    if chat.stream {
        let slot = app.stream_slot(by.as_ref())?;
        let run = Run::start(&app.engine, request, by, app.trace());
        let stream = chunks(app.clone(), run, model);
        // The slot is held until the stream is dropped.
        let stream = stream.map(move |item| {
            let _held = &slot;
            item
        });
        return Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response());
    }
    let mut run = Run::start(&app.engine, request, by, app.trace());
    let reply = run.reply().await?;
    if let Outcome::Error(e) = &reply.outcome {
        return Err(ApiError::from(e.clone()));
    }
    let state = app.engine.state(run.request_id).await.ok().flatten();
    let (content, citations) = answer_of(&reply, state.as_ref());
    Ok(Json(ChatCompletion {
        id: format!("chatcmpl-{}", run.request_id),
        object: "chat.completion".into(),
        created: now_s(),
        model,
        choices: vec![Choice {
            index: 0,
            message: AssistantMessage { role: "assistant".into(), content },
            finish_reason: "stop".into(),
        }],
        usage: usage(&reply),
        citations,
        sleuth: SleuthDetails { request_id: run.request_id, route: reply.route, elapsed_ms: reply.elapsed_ms },
    })
    .into_response())
}

/// The streamed completion: a first chunk with the role, then, when the loop ends, the answer and a last chunk
/// with `finish_reason`, `citations` and `usage`, then `[DONE]`. Dropping it before the end cancels the request.
fn chunks(app: Arc<App>, run: Run, model: String) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let id = format!("chatcmpl-{}", run.request_id);
    let chunk = move |delta: Value, finish: Option<&str>, extra: Value| {
        let mut body = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": now_s(),
            "model": model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        });
        if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
            body.extend(extra);
        }
        SseEvent::default().data(body.to_string())
    };
    let first = chunk(json!({ "role": "assistant", "content": "" }), None, json!({}));
    let rest = futures::stream::once(async move {
        let mut run = run;
        let reply = run.reply().await;
        let events: Vec<SseEvent> = match reply {
            Ok(reply) => match &reply.outcome {
                Outcome::Answer(_) => {
                    let state = app.engine.state(run.request_id).await.ok().flatten();
                    let (content, citations) = answer_of(&reply, state.as_ref());
                    vec![
                        chunk(json!({ "content": content }), None, json!({})),
                        chunk(json!({}), Some("stop"), json!({ "citations": citations, "usage": usage(&reply) })),
                    ]
                }
                Outcome::Error(e) => vec![SseEvent::default().data(error_chunk(e).to_string())],
            },
            Err(e) => vec![SseEvent::default().data(error_chunk(&e).to_string())],
        };
        futures::stream::iter(events.into_iter().chain([SseEvent::default().data("[DONE]")]).map(Ok))
    });
    futures::stream::once(async move { Ok(first) }).chain(rest.flatten())
}

fn error_chunk(e: &sleuth_messages::ErrorResponse) -> Value {
    json!({ "error": { "message": e.message, "type": e.kind, "retryable": e.retryable } })
}

/// The answer text (with its `[n]` markers) and its citations, each with the passage it cites.
fn answer_of(reply: &AskReply, state: Option<&LoopState>) -> (String, Vec<Cited>) {
    let Outcome::Answer(answer) = &reply.outcome else { return (String::new(), Vec::new()) };
    (answer.answer.clone(), cited(answer, state))
}

fn usage(reply: &AskReply) -> Usage {
    let (input, output) = reply.llm.as_ref().map_or((0, 0), |l| (l.input_tokens, l.output_tokens));
    Usage { prompt_tokens: input, completion_tokens: output, total_tokens: input + output }
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `GET /v1/models`: the one model, the loop.
pub async fn models(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(e) = app.caller(&headers) {
        return openai_error(e);
    }
    let name = app.engine.config().gateway.model_name.clone();
    let model = Model { id: name, object: "model".into(), created: 0, owned_by: "sleuth".into() };
    Json(ModelList { object: "list".into(), data: vec![model] }).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(messages: &[(&str, &str)]) -> ChatRequest {
        let messages = messages
            .iter()
            .map(|(role, text)| ChatMessage { role: role.to_string(), content: Some(Content::Text(text.to_string())) })
            .collect();
        ChatRequest { model: None, messages, stream: false }
    }

    #[test]
    fn the_messages_before_the_last_user_message_are_its_history() {
        let request = to_request(&chat(&[
            ("system", "You are helpful."),
            ("user", "Which anime is Luffy in?"),
            ("assistant", "One Piece [1]"),
            ("user", "When did it start?"),
        ]))
        .unwrap();
        assert_eq!(request.query, "When did it start?");
        assert_eq!(
            request.history,
            [PriorTurn::user("Which anime is Luffy in?"), PriorTurn::assistant("One Piece [1]")],
            "the system message is not the conversation"
        );
        let first = to_request(&chat(&[("user", "Which anime is Luffy in?")])).unwrap();
        assert!(first.history.is_empty());
        assert_eq!(first.conversation_id, request.conversation_id, "one chat, one conversation");
    }

    #[test]
    fn a_long_history_keeps_its_most_recent_turns_each_cut_to_the_limit() {
        let long = "é".repeat(MAX_HISTORY_TURN_BYTES);
        let mut messages = vec![("user", "q0")];
        for _ in 0..MAX_HISTORY_TURNS {
            messages.extend([("assistant", long.as_str()), ("user", "q")]);
        }
        let request = to_request(&chat(&messages)).unwrap();
        assert_eq!(request.history.len(), MAX_HISTORY_TURNS);
        assert!(request.history.iter().all(|t| t.content.len() <= MAX_HISTORY_TURN_BYTES));
        assert!(sleuth_core::analysis::validate(&request, 4096).is_ok());
        assert!(to_request(&chat(&[("assistant", "Hello")])).is_err(), "no user message");
    }
}
