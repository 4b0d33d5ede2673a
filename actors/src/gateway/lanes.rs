//! The fast lanes and ingestion over HTTP: `POST /v1/search` (typeahead), `POST /v1/hydrate` (entities by id),
//! `POST /v1/documents` and `DELETE /v1/documents/{id}` (the index). None of them enters the loop. The lanes answer
//! with what the caller may read; a tenant may add, replace and delete its own documents, and the shared ones only
//! when it is one of `gateway.ingest_tenants`.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sleuth_messages::{EntitiesReply, ErrorKind, HydrateRequest, Principal, SearchRequest};

use super::{App, error::ApiError};
use crate::access::owner_of;

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
    let by = app.caller(&headers)?;
    let Json(request) = body.map_err(ApiError::body)?;
    lane_reply(app.engine.search_entities(request, by.as_ref()).await?)
}

/// `POST /v1/hydrate`: entities by id; unknown ids are left out.
pub async fn hydrate(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<HydrateRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let by = app.caller(&headers)?;
    let Json(request) = body.map_err(ApiError::body)?;
    lane_reply(app.engine.hydrate(request, by.as_ref()).await?)
}

/// The body of `POST /v1/documents`: documents as `sleuth ingest docs` reads them from JSONL (`id`, `text`, and
/// optionally `title`, `metadata`, `owner` and `groups`).
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
    /// The tenant that owns the document; a tenant's key may only name its own tenant. Unset: shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Reader groups (`tenants.groups`) that may read it too; needs an owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
}

/// What an ingestion did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Ingested {
    pub documents: usize,
    /// The summary `sleuth ingest` prints: new, replaced and unchanged documents, chunks written.
    pub summary: String,
}

/// Whether `by` may write or delete a document owned by `owner` (`None`: shared). The deployment's own caller may
/// change anything; a tenant its own documents, and the shared ones when it is one of `gateway.ingest_tenants`.
fn may_change(app: &App, by: Option<&Principal>, id: &str, owner: Option<&str>) -> Result<(), ApiError> {
    let Some(by) = by else { return Ok(()) };
    let refused = |why: String| Err(ApiError::new(StatusCode::FORBIDDEN, ErrorKind::InvalidInput, why));
    match owner {
        Some(owner) if owner.eq_ignore_ascii_case(&by.tenant) => Ok(()),
        Some(_) => refused(format!("document {id:?}: tenant {} may change only its own documents", by.tenant)),
        None if app.engine.config().gateway.ingest_tenants.contains(&by.tenant) => Ok(()),
        None => refused(format!(
            "document {id:?}: tenant {} may not change the shared documents (gateway.ingest_tenants); \
             give it an owner of its own (\"owner\": \"{}\")",
            by.tenant, by.tenant
        )),
    }
}

/// Checks that `by` may change the document `id` as it is stored now (if it is), and would own what it writes.
async fn may_replace(app: &App, by: Option<&Principal>, id: &str, writes: Option<&str>) -> Result<(), ApiError> {
    may_change(app, by, id, writes)?;
    if let Some(stored) = app.engine.stored_readers(id).await? {
        may_change(app, by, id, owner_of(&stored))?;
    }
    Ok(())
}

/// `POST /v1/documents`: adds or replaces documents (by id) in the index.
pub async fn add_documents(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<DocumentsBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let by = app.caller(&headers)?;
    let Json(body) = body.map_err(ApiError::body)?;
    if body.documents.is_empty() {
        return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorKind::InvalidInput, "documents: empty"));
    }
    // The same rules as `sleuth ingest docs` on a JSONL file.
    let lines: Vec<String> = body.documents.iter().filter_map(|d| serde_json::to_string(d).ok()).collect();
    let docs = crate::ingest::parse_jsonl("documents", &lines.join("\n"))
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorKind::InvalidInput, format!("{e:#}")))?;
    for doc in &docs {
        may_replace(&app, by.as_ref(), &doc.id, doc.ownership.tenant.as_deref()).await?;
    }
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
    let by = app.caller(&headers)?;
    match app.engine.stored_readers(&id).await? {
        Some(stored) => may_change(&app, by.as_ref(), &id, owner_of(&stored))?,
        // Nothing to delete; a tenant that may not change shared documents is told so first, as before.
        None => may_change(&app, by.as_ref(), &id, None)?,
    }
    let existed = app.engine.delete_documents(std::slice::from_ref(&id)).await?;
    if existed == 0 {
        let message = format!("no document {id:?}");
        return Err(ApiError::new(StatusCode::NOT_FOUND, ErrorKind::InvalidInput, message));
    }
    Ok(Json(Deleted { id, deleted: true }).into_response())
}
