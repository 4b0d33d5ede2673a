//! The fast lanes and ingestion over HTTP: `POST /v1/search` (typeahead), `POST /v1/hydrate` (entities by id),
//! `POST /v1/documents` and `DELETE /v1/documents/{id}` (the index). None of them enters the loop.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sleuth_messages::{EntitiesReply, ErrorKind, HydrateRequest, SearchRequest};

use super::{App, error::ApiError};

/// A lane's reply, or its error with the error's status.
fn lane_reply(reply: EntitiesReply) -> Result<Response, ApiError> {
    match reply.error {
        Some(error) => Err(ApiError::from(error)),
        None => Ok(Json(reply).into_response()),
    }
}

/// `POST /v1/search`: entities whose name or alias starts with `text`, most popular first.
pub async fn search(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<SearchRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    app.caller(&headers)?;
    let Json(request) = body.map_err(ApiError::body)?;
    lane_reply(app.engine.search_entities(request).await?)
}

/// `POST /v1/hydrate`: entities by id; unknown ids are left out.
pub async fn hydrate(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<HydrateRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    app.caller(&headers)?;
    let Json(request) = body.map_err(ApiError::body)?;
    lane_reply(app.engine.hydrate(request).await?)
}

/// The body of `POST /v1/documents`: documents as `sleuth ingest docs` reads them from JSONL (`id`, `text`, and
/// optionally `title` and `metadata`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentsBody {
    pub documents: Vec<DocumentBody>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentBody {
    pub id: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What an ingestion did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Ingested {
    pub documents: usize,
    /// The summary `sleuth ingest` prints: new, replaced and unchanged documents, chunks written.
    pub summary: String,
}

/// Whether the caller may change the shared index: the deployment's own caller, or a tenant of
/// `gateway.ingest_tenants`.
fn may_ingest(app: &App, headers: &HeaderMap) -> Result<(), ApiError> {
    match app.caller(headers)? {
        None => Ok(()),
        Some(by) if app.engine.config().gateway.ingest_tenants.contains(&by.tenant) => Ok(()),
        Some(by) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorKind::InvalidInput,
            format!("tenant {} may not change the shared documents (gateway.ingest_tenants)", by.tenant),
        )),
    }
}

/// `POST /v1/documents`: adds or replaces documents (by id) in the index.
pub async fn add_documents(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<DocumentsBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    may_ingest(&app, &headers)?;
    let Json(body) = body.map_err(ApiError::body)?;
    if body.documents.is_empty() {
        return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorKind::InvalidInput, "documents: empty"));
    }
    // The same rules as `sleuth ingest docs` on a JSONL file.
    let lines: Vec<String> = body.documents.iter().filter_map(|d| serde_json::to_string(d).ok()).collect();
    let docs = crate::ingest::parse_jsonl("documents", &lines.join("\n"))
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorKind::InvalidInput, format!("{e:#}")))?;
    let documents = docs.len();
    let summary = app.engine.ingest(docs).await?;
    Ok((StatusCode::CREATED, Json(Ingested { documents, summary })).into_response())
}

/// The body of `DELETE /v1/documents/{id}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    pub id: String,
    pub deleted: bool,
}

/// `DELETE /v1/documents/{id}`: removes a document and its chunks (404 when there was none).
pub async fn delete_document(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    may_ingest(&app, &headers)?;
    let existed = app.engine.delete_documents(std::slice::from_ref(&id)).await?;
    if existed == 0 {
        let message = format!("no document {id:?}");
        return Err(ApiError::new(StatusCode::NOT_FOUND, ErrorKind::InvalidInput, message));
    }
    Ok(Json(Deleted { id, deleted: true }).into_response())
}
