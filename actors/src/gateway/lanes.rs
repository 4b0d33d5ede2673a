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
/// optionally `title`, `metadata`, `owner` and `groups`), and files as it reads them from disk (PDF, HTML, Office
/// documents, Markdown, text), base64-encoded.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentsBody {
    #[serde(default)]
    pub documents: Vec<DocumentBody>,
    #[serde(default)]
    pub files: Vec<FileBody>,
}

/// A file to ingest: its name (whose extension says its format) and its bytes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileBody {
    /// The file's name, e.g. `report.pdf`: its extension says how it is read, and it is the document's id unless
    /// `id` is given.
    pub name: String,
    /// The file's bytes, base64-encoded (standard alphabet, padded).
    pub content_base64: String,
    #[serde(default)]
    pub id: Option<String>,
    /// The tenant that owns the document; a tenant's key may only name its own tenant. Unset: shared.
    #[serde(default)]
    pub owner: Option<String>,
    /// Reader groups (`tenants.groups`) that may read it too; needs an owner.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// A file that was not ingested, and why.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkippedFile {
    pub name: String,
    pub reason: String,
}

impl FileBody {
    /// The file's documents, read as `sleuth ingest docs` reads the file.
    pub(super) fn read(&self) -> anyhow::Result<Vec<crate::ingest::Document>> {
        use base64::Engine;
        let name = std::path::Path::new(&self.name);
        if name.file_name().is_none_or(|n| n != name.as_os_str()) {
            anyhow::bail!("a file name, not a path");
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.content_base64.as_bytes())
            .map_err(|e| anyhow::anyhow!("content_base64 is not base64: {e}"))?;
        let mut docs = crate::ingest::formats::read(name, bytes)?;
        let ownership =
            crate::access::Ownership::new(self.owner.as_deref(), &self.groups).map_err(|e| anyhow::anyhow!("{e}"))?;
        crate::ingest::owned_by(&mut docs, &ownership)?;
        if let (Some(id), [doc]) = (&self.id, docs.as_mut_slice()) {
            doc.id = id.clone();
        }
        Ok(docs)
    }
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
    /// Files that could not be read (damaged, encrypted, without text, of an unknown type), each with why; the
    /// rest were ingested.
    pub skipped: Vec<SkippedFile>,
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
pub(super) async fn may_replace(
    app: &App,
    by: Option<&Principal>,
    id: &str,
    writes: Option<&str>,
) -> Result<(), ApiError> {
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
    let invalid = |message: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorKind::InvalidInput, message);
    if body.documents.is_empty() && body.files.is_empty() {
        return Err(invalid("documents and files: both empty".into()));
    }
    // The same rules as `sleuth ingest docs` on a JSONL file.
    let lines: Vec<String> = body.documents.iter().filter_map(|d| serde_json::to_string(d).ok()).collect();
    let mut docs = crate::ingest::parse_jsonl("documents", &lines.join("\n")).map_err(|e| invalid(format!("{e:#}")))?;
    // And on files: one that cannot be read is skipped, saying why.
    let mut skipped = Vec::new();
    for file in &body.files {
        match file.read() {
            Ok(read) => docs.extend(read),
            Err(e) => skipped.push(SkippedFile { name: file.name.clone(), reason: format!("{e:#}") }),
        }
    }
    if docs.is_empty() {
        let why: Vec<String> = skipped.iter().map(|s| format!("{}: {}", s.name, s.reason)).collect();
        return Err(invalid(format!("no document could be read: {}", why.join("; "))));
    }
    for doc in &docs {
        may_replace(&app, by.as_ref(), &doc.id, doc.ownership.tenant.as_deref()).await?;
    }
    let documents = docs.len();
    let summary = app.engine.ingest(docs).await?;
    Ok((StatusCode::CREATED, Json(Ingested { documents, summary, skipped })).into_response())
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
