//! The MCP server (the official Rust SDK, `rmcp`): Streamable HTTP at `/mcp` and stdio (`sleuth mcp`). Tools
//! `search` and `fetch` in the shape ChatGPT connectors expect, and `ask`, the whole loop with verified citations.

use std::sync::Arc;

use rmcp::{
    Json, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{Implementation, ServerCapabilities, ServerConfig},
    schemars::JsonSchema,
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use serde::{Deserialize, Serialize};
use sleuth_messages::{AskRequest, JsonMap, Outcome, Principal};

use crate::telemetry::TraceHeaders;

use super::{
    App,
    cite::{Cited, cited, url_of},
    lanes::{FileBody, may_replace},
    run::Run,
};

/// Who called, put in the request's extensions by the gateway's key check (absent over stdio).
#[derive(Clone, Debug)]
pub struct Caller(pub Option<Principal>);

#[derive(Clone)]
pub struct SleuthMcp {
    app: Arc<App>,
    tool_router: ToolRouter<SleuthMcp>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchArgs {
    /// What to look for: a question, a name or keywords.
    pub query: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FetchArgs {
    /// The `id` of a search result.
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AskArgs {
    /// The question, in plain language; multi-hop questions are fine.
    pub question: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AddDocumentArgs {
    /// The file's name, e.g. `report.pdf`: its extension says how it is read (.pdf, .html, .docx, .xlsx, .pptx,
    /// .md, .txt, …), and it is the document's id unless `id` is given.
    pub name: String,
    /// The file's bytes, base64-encoded.
    pub content_base64: String,
    /// The document's id, to replace an earlier version of it.
    #[serde(default)]
    pub id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Added {
    /// The ids of the documents written (a JSONL file holds several).
    pub ids: Vec<String>,
    /// New, replaced and unchanged documents, and the chunks written.
    pub summary: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchResult {
    pub id: String,
    pub title: String,
    pub text: String,
    pub url: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Document {
    pub id: String,
    pub title: String,
    pub text: String,
    pub url: Option<String>,
    pub metadata: JsonMap,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Answer {
    /// The answer itself (an entity, a date, a number, yes or no), when the loop found one.
    pub short_answer: Option<String>,
    /// The whole reply, with `[n]` markers naming its citations.
    pub answer: String,
    /// The passages the answer cites, in the order of their `[n]` markers.
    pub citations: Vec<Citation>,
    /// Why the loop stopped (`sufficient`, `deadline`, `not_found`, …).
    pub termination_reason: String,
    pub request_id: String,
}

/// A passage an answer cites.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Citation {
    /// Its `[n]` marker in the answer.
    pub n: u32,
    /// The document's id, for `fetch`.
    pub id: String,
    pub title: String,
    /// The passage that supports the answer.
    pub text: String,
    pub url: Option<String>,
    /// The section of the document the passage is in, when it has them.
    pub section: Option<String>,
    /// The page the passage starts on, for paged documents (PDF).
    pub page: Option<u32>,
}

impl From<Cited> for Citation {
    fn from(c: Cited) -> Citation {
        Citation { n: c.n, id: c.id, title: c.title, text: c.text, url: c.url, section: c.section, page: c.page }
    }
}

fn caller(parts: Option<&axum::http::request::Parts>) -> Option<Principal> {
    parts.and_then(|p| p.extensions.get::<Caller>()).and_then(|c| c.0.clone())
}

#[tool_router(router = tool_router)]
impl SleuthMcp {
    pub fn new(app: Arc<App>) -> SleuthMcp {
        SleuthMcp { app, tool_router: Self::tool_router() }
    }

    #[tool(
        name = "search",
        description = "Search the document corpus: returns the passages that best match a query (id, title, text, \
                       url), best first. Use it to find sources; use `fetch` with a result's id to read the whole \
                       document, and `ask` instead when you want an answer to a question rather than a list of \
                       passages."
    )]
    pub async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<SearchResults>, String> {
        let by = caller(context.extensions.get::<axum::http::request::Parts>());
        let hits = self.app.engine.search(&args.query, 10, by.as_ref()).await.map_err(|e| e.message)?;
        let results = hits
            .into_iter()
            .map(|h| SearchResult { url: url_of(&h.metadata), id: h.doc_id, title: h.title, text: h.text })
            .collect();
        Ok(Json(SearchResults { results }))
    }

    #[tool(
        name = "fetch",
        description = "Read one whole document by the id a `search` result or an `ask` citation gave: its title, full \
                       text, url and metadata."
    )]
    pub async fn fetch(
        &self,
        Parameters(args): Parameters<FetchArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Document>, String> {
        let by = caller(context.extensions.get::<axum::http::request::Parts>());
        let chunks = self.app.engine.document(&args.id, by.as_ref()).await.map_err(|e| e.message)?;
        let Some(first) = chunks.first() else { return Err(format!("no document with id {:?}", args.id)) };
        let text = chunks.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join("\n");
        let (title, metadata) = (first.title.clone(), first.metadata.clone());
        Ok(Json(Document { id: args.id, title, text, url: url_of(&metadata), metadata }))
    }

    #[tool(
        name = "ask",
        description = "Answer a question from the corpus and its entity graph: sleuth plans, retrieves, checks that \
                       the evidence is sufficient (following multi-hop chains), and answers with citations it has \
                       verified. Returns the short answer, the cited reply, and each cited passage. Takes from \
                       milliseconds to tens of seconds; prefer it to `search` when you want the answer itself."
    )]
    pub async fn ask(
        &self,
        Parameters(args): Parameters<AskArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Answer>, String> {
        let by = caller(context.extensions.get::<axum::http::request::Parts>());
        // A client's trace context in the request's `_meta` (MCP 2026-07-28) parents the request's trace; else the
        // HTTP request's own.
        let meta = &context.meta;
        let given = TraceHeaders::given(meta.get_traceparent(), meta.get_tracestate(), meta.get_baggage());
        let trace = if given.is_empty() { self.app.trace() } else { given };
        let mut run = Run::start(&self.app.engine, AskRequest::new(args.question), by, trace);
        let reply = run.reply().await.map_err(|e| e.message)?;
        let answer = match &reply.outcome {
            Outcome::Answer(answer) => answer,
            Outcome::Error(e) => return Err(e.message.clone()),
        };
        let state = self.app.engine.state(run.request_id).await.ok().flatten();
        let citations = cited(answer, state.as_ref()).into_iter().map(Citation::from).collect();
        Ok(Json(Answer {
            short_answer: answer.short_answer.as_ref().map(|s| s.text.clone()),
            answer: answer.answer.clone(),
            citations,
            termination_reason: answer.termination_reason.as_str().to_string(),
            request_id: run.request_id.to_string(),
        }))
    }

    #[tool(
        name = "add_document",
        description = "Add a file to the corpus, or replace the document of the same id: a PDF, web page (.html), \
                       Word, Excel or PowerPoint file, Markdown or text, base64-encoded. It is read as `sleuth \
                       ingest docs` reads it (sections and pages kept for citations) and can be searched and asked \
                       about at once. A caller with a tenant's key owns what it adds."
    )]
    pub async fn add_document(
        &self,
        Parameters(args): Parameters<AddDocumentArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Added>, String> {
        let by = caller(context.extensions.get::<axum::http::request::Parts>());
        let file = FileBody {
            name: args.name,
            content_base64: args.content_base64,
            id: args.id,
            owner: by.as_ref().map(|p| p.tenant.clone()),
            groups: Vec::new(),
        };
        let docs = file.read().map_err(|e| format!("{}: {e:#}", file.name))?;
        for doc in &docs {
            may_replace(&self.app, by.as_ref(), &doc.id, doc.ownership.tenant.as_deref())
                .await
                .map_err(|e| e.body.message)?;
        }
        let ids = docs.iter().map(|d| d.id.clone()).collect();
        let summary = self.app.engine.ingest(docs).await.map_err(|e| e.message)?;
        Ok(Json(Added { ids, summary }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SleuthMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("sleuth", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "sleuth answers questions over a document corpus with verified citations. Use `ask` for an answer, \
             `search` to list matching passages, and `fetch` to read a document by id."
                .into(),
        );
        info
    }
}
