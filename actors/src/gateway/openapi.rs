//! `GET /openapi.json`: the gateway's OpenAPI 3.0 document. Every schema in it is derived (schemars) from the type
//! the handler reads or writes, the protocol's own for `AskRequest`'s fields, `AskReply`, `Event` and
//! `ErrorResponse`, so the document cannot drift from the code.

use schemars::r#gen::SchemaSettings;
use serde_json::{Value, json};
use sleuth_messages::{AskReply, EntitiesReply, ErrorResponse, Event, HydrateRequest, SearchRequest};

use super::{
    ask::{AskBody, Cancelled, RequestStatus},
    lanes::{Deleted, DocumentsBody, Ingested},
    openai::{ChatCompletion, ChatRequest, ModelList, OpenAiError},
};

/// The document; `keys` says whether requests need an API key.
pub fn document(keys: bool) -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut schema = |f: fn(&mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema| {
        serde_json::to_value(f(&mut generator)).unwrap_or(Value::Null)
    };
    let ask_body = schema(|g| g.subschema_for::<AskBody>());
    let ask_reply = schema(|g| g.subschema_for::<AskReply>());
    let event = schema(|g| g.subschema_for::<Event>());
    let error = schema(|g| g.subschema_for::<ErrorResponse>());
    let status = schema(|g| g.subschema_for::<RequestStatus>());
    let cancelled = schema(|g| g.subschema_for::<Cancelled>());
    let chat_request = schema(|g| g.subschema_for::<ChatRequest>());
    let chat = schema(|g| g.subschema_for::<ChatCompletion>());
    let models = schema(|g| g.subschema_for::<ModelList>());
    let openai_error = schema(|g| g.subschema_for::<OpenAiError>());
    let search = schema(|g| g.subschema_for::<SearchRequest>());
    let hydrate = schema(|g| g.subschema_for::<HydrateRequest>());
    let entities = schema(|g| g.subschema_for::<EntitiesReply>());
    let documents = schema(|g| g.subschema_for::<DocumentsBody>());
    let ingested = schema(|g| g.subschema_for::<Ingested>());
    let deleted = schema(|g| g.subschema_for::<Deleted>());
    let definitions = serde_json::to_value(generator.take_definitions()).unwrap_or_default();
    let errors = |schema: &Value| {
        json!({
            "4XX": { "description": "Refused: malformed or invalid input (the message names the field), no accepted \
                                     API key, no such request, too large, or too many open streams",
                     "content": { "application/json": { "schema": schema } } },
            "5XX": { "description": "The loop could not answer: unavailable or out of time",
                     "content": { "application/json": { "schema": schema } } },
        })
    };
    let with_errors = |mut ok: Value, schema: &Value| {
        if let (Value::Object(ok), Value::Object(errors)) = (&mut ok, errors(schema)) {
            ok.extend(errors);
        }
        ok
    };
    let id =
        json!([{ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "format": "uuid" } }]);
    let mut document = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "sleuth gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Ask sleuth over HTTP: the loop's reply as JSON or its events as SSE, a request's status \
                            and cancellation, the typeahead and hydrate lanes, ingestion, and an OpenAI-compatible \
                            chat endpoint with citations.",
        },
        "paths": {
            "/v1/ask": { "post": {
                "operationId": "ask",
                "summary": "Ask a question; with Accept: text/event-stream, stream the loop's events",
                "requestBody": { "required": true, "content": { "application/json": { "schema": ask_body } } },
                "responses": with_errors(json!({ "200": {
                    "description": "The reply, short answer first; or the events (`event:` the kind, `data:` an \
                                    Event as JSON, `final` last, `error` if the request could not run)",
                    "content": {
                        "application/json": { "schema": ask_reply },
                        "text/event-stream": { "schema": { "type": "string" }, "x-sleuth-event": event },
                    },
                }}), &error),
            }},
            "/v1/requests/{id}": {
                "parameters": id,
                "get": {
                    "operationId": "status",
                    "summary": "A request's phase, turns, outcome and citations with their passages",
                    "responses": with_errors(json!({ "200": {
                        "description": "The request's status",
                        "content": { "application/json": { "schema": status } },
                    }}), &error),
                },
                "delete": {
                    "operationId": "cancel",
                    "summary": "Cancel a request that has not ended (409 once it has)",
                    "responses": with_errors(json!({ "202": {
                        "description": "The cancellation was sent; the request ends with `cancelled`",
                        "content": { "application/json": { "schema": cancelled } },
                    }}), &error),
                },
            },
            "/v1/search": { "post": {
                "operationId": "search",
                "summary": "Typeahead: entities whose name or alias starts with the text, most popular first",
                "requestBody": { "required": true, "content": { "application/json": { "schema": search } } },
                "responses": with_errors(json!({ "200": {
                    "description": "The entities found",
                    "content": { "application/json": { "schema": entities } },
                }}), &error),
            }},
            "/v1/hydrate": { "post": {
                "operationId": "hydrate",
                "summary": "Entities by id; unknown ids are left out",
                "requestBody": { "required": true, "content": { "application/json": { "schema": hydrate } } },
                "responses": with_errors(json!({ "200": {
                    "description": "The entities found",
                    "content": { "application/json": { "schema": entities } },
                }}), &error),
            }},
            "/v1/documents": { "post": {
                "operationId": "add_documents",
                "summary": "Add or replace documents (by id) in the index",
                "requestBody": { "required": true, "content": { "application/json": { "schema": documents } } },
                "responses": with_errors(json!({ "201": {
                    "description": "Ingested",
                    "content": { "application/json": { "schema": ingested } },
                }}), &error),
            }},
            "/v1/documents/{id}": {
                "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } }],
                "delete": {
                    "operationId": "delete_document",
                    "summary": "Remove a document and its chunks",
                    "responses": with_errors(json!({ "200": {
                        "description": "Deleted",
                        "content": { "application/json": { "schema": deleted } },
                    }}), &error),
                },
            },
            "/v1/chat/completions": { "post": {
                "operationId": "chat_completions",
                "summary": "OpenAI-compatible chat completion: the last user message is the question",
                "requestBody": { "required": true, "content": { "application/json": { "schema": chat_request } } },
                "responses": with_errors(json!({ "200": {
                    "description": "The completion with `citations`; with `stream: true`, chunks as SSE ending \
                                    with `[DONE]`",
                    "content": {
                        "application/json": { "schema": chat },
                        "text/event-stream": { "schema": { "type": "string" } },
                    },
                }}), &openai_error),
            }},
            "/v1/models": { "get": {
                "operationId": "models",
                "summary": "The one model: the loop",
                "responses": with_errors(json!({ "200": {
                    "description": "The model list",
                    "content": { "application/json": { "schema": models } },
                }}), &openai_error),
            }},
        },
        "components": { "schemas": definitions },
    });
    if keys {
        document["components"]["securitySchemes"] = json!({ "apiKey": { "type": "http", "scheme": "bearer" } });
        document["security"] = json!([{ "apiKey": [] }]);
    }
    document
}
