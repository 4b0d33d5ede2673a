//! [`Cited`]: an answer's citation with the passage it cites, as the gateway's clients get it (the chat
//! completion's `citations`, the MCP `ask` tool, a request's status, the page).

use schemars::JsonSchema;
use serde::Serialize;
use sleuth_messages::{AgentResponse, JsonMap, LoopState};

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Cited {
    /// The `[n]` marker in the answer.
    pub n: u32,
    /// The document's id (MCP `fetch` reads it whole).
    pub id: String,
    pub title: String,
    /// The passage that supports the answer (empty when the request's state has expired).
    pub text: String,
    pub url: Option<String>,
    /// The section of the document the passage is in, when it has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The page the passage starts on, for paged documents (PDF).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

/// The citations of `answer`, each with its card's passage from the request's `state`.
pub fn cited(answer: &AgentResponse, state: Option<&LoopState>) -> Vec<Cited> {
    answer
        .citations
        .iter()
        .map(|c| {
            let hit = state.and_then(|s| s.cards.iter().find(|card| card.n == c.card)).map(|card| &card.hit);
            Cited {
                n: c.n,
                id: c.doc_id.clone(),
                title: c.title.clone(),
                text: hit.map(|h| h.text.clone()).unwrap_or_default(),
                url: hit.and_then(|h| url_of(&h.metadata)),
                section: c.section.clone(),
                page: c.page,
            }
        })
        .collect()
}

/// A passage's `url` metadata, when it has one.
pub fn url_of(metadata: &JsonMap) -> Option<String> {
    metadata.get("url").and_then(|u| u.as_str()).map(str::to_string)
}
