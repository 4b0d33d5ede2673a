//! The entity collection: every graph entity's name, aliases and description as one point, searched with the
//! same hybrid plan as documents, so a planner can resolve "Luffy" to the UUID of Monkey D. Luffy (seed 000 §8)
//! before it asks the graph anything. Points are keyed by the entity's UUID and skipped when unchanged.

use std::collections::BTreeMap;

use anyhow::Context;
use serde_json::{Value, json};
use sleuth_messages::{EntityType, Hit, JsonMap};

use super::{Found, Retriever};
use crate::{
    graph::Entity,
    index::{Chunk, FieldType, FilterSchema, PayloadFilter},
};

/// Longest entity text that is embedded and shown as a card.
const MAX_TEXT_CHARS: usize = 1_200;

/// The filterable fields of the entity collection: `id`/`doc_id` (the UUID), `title` (the name), `entity_type`.
pub fn schema() -> FilterSchema {
    FilterSchema::new(&BTreeMap::from([("entity_type".to_string(), FieldType::Keyword)]))
}

/// What a card about an entity says: its description, then its other names.
pub fn entity_text(entity: &Entity) -> String {
    let mut text = match entity.attributes.get("description").and_then(Value::as_str).map(str::trim) {
        Some(d) if !d.is_empty() => d.to_string(),
        _ => format!("{} is {} {}.", entity.name, article(&entity.entity_type), entity.entity_type),
    };
    if !entity.aliases.is_empty() {
        text.push_str(&format!(" Also known as {}.", entity.aliases.join(", ")));
    }
    if text.len() > MAX_TEXT_CHARS {
        let cut = (0..=MAX_TEXT_CHARS).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        text.truncate(cut);
    }
    text
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

/// The point of one entity: one chunk whose document id is the entity's UUID.
fn chunk_of(entity: &Entity) -> Chunk {
    let mut metadata = JsonMap::new();
    metadata.insert("entity_type".into(), json!(entity.entity_type));
    metadata.insert("popularity".into(), json!(entity.popularity));
    if !entity.aliases.is_empty() {
        metadata.insert("aliases".into(), json!(entity.aliases));
    }
    Chunk {
        doc_id: entity.id.to_string(),
        index: 0,
        of: 1,
        title: entity.name.clone(),
        text: entity_text(entity),
        doc_hash: entity.content_hash(),
        metadata,
        readers: entity.readers.clone(),
    }
}

pub use sleuth_core::entities::{names_of, type_of};

impl Retriever {
    /// Indexes the entities that are new or changed (by content hash and embedder); documents are skipped, they
    /// have their own collection. Returns how many points were written.
    pub async fn index_entities(&self, entities: &[Entity]) -> anyhow::Result<usize> {
        let embedder = self.embedder_id();
        let mut chunks = Vec::new();
        for entity in entities.iter().filter(|e| e.entity_type != EntityType::DOCUMENT.as_str()) {
            let chunk = chunk_of(entity);
            let state = self.entities.doc_state(&chunk.doc_id).await.context("cannot read the entity collection")?;
            if state.is_some_and(|s| s.doc_hash == chunk.doc_hash && s.embedder == embedder) {
                continue;
            }
            chunks.push(chunk);
        }
        let written = chunks.len();
        for batch in chunks.chunks(256) {
            let points = self.points(batch.to_vec()).await?;
            self.entities.replace(points).await.context("cannot write to the entity collection")?;
        }
        self.entities.flush().await?;
        Ok(written)
    }

    /// Parses an entity search's filters; `entity_type` restricts it to that type unless the filters say otherwise.
    pub fn parse_entity_filter(&self, entity_type: &EntityType, filters: &JsonMap) -> Result<PayloadFilter, String> {
        let mut filters = filters.clone();
        filters.entry("entity_type".to_string()).or_insert_with(|| json!(entity_type.as_str()));
        self.entity_schema.parse(&filters)
    }

    /// The best `limit` entities for `query`, hybrid and reranked like documents.
    pub async fn search_entities(&self, query: &str, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Found> {
        self.search_in(self.entities.as_ref(), query, filter, limit).await
    }

    /// Entities matching a filter (an ID lookup when it names UUIDs).
    pub async fn fetch_entities(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        self.entities.fetch(filter, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entity_card_says_what_it_is_and_its_other_names() {
        let mut luffy = Entity {
            id: uuid::Uuid::nil(),
            entity_type: "character".into(),
            name: "Monkey D. Luffy".into(),
            aliases: vec!["Luffy".into(), "Straw Hat Luffy".into()],
            popularity: 99.0,
            attributes: JsonMap::new(),
            readers: Vec::new(),
        };
        assert_eq!(entity_text(&luffy), "Monkey D. Luffy is a character. Also known as Luffy, Straw Hat Luffy.");
        luffy.attributes.insert("description".into(), json!("The captain of the Straw Hat Pirates."));
        let chunk = chunk_of(&luffy);
        assert!(chunk.text.starts_with("The captain"), "{}", chunk.text);
        assert_eq!(chunk.doc_id, luffy.id.to_string());
        assert_eq!(chunk.metadata["entity_type"], json!("character"));
    }
}
