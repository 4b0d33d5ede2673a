//! What the fuzz target `inputs` in `fuzz/` drives, and what CI replays its corpus through: the parsers of text
//! that comes from outside (JSONL and Markdown documents, their chunking, entity and edge files, search and
//! graph filters) and intake's pattern matching of questions. Each must return, never panic, on any text.

use std::collections::BTreeMap;

use sleuth_messages::{EntityRef, EntityType, GraphIntent, GraphLimits, GraphQueryType, JsonMap};

use crate::{
    config::GraphConfig,
    entity_types::EntityTypes,
    index::{FieldType, FilterSchema},
    ingest::{self, graph},
    stages::{self, intake},
};

pub fn inputs(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(docs) = ingest::parse_jsonl("fuzz", text) {
        for doc in &docs {
            let _ = ingest::chunk(doc, None, 20, 5);
        }
    }
    let doc = ingest::parse_markdown("fuzz.md", "fuzz", text.to_string());
    let _ = ingest::chunk(&doc, None, 20, 5);
    let config = GraphConfig::default();
    let _ = graph::parse("entities", text, "edges", text, (&config.relations, &[]), &Default::default());
    if let Ok(filters) = serde_json::from_str::<JsonMap>(text) {
        let fields =
            BTreeMap::from([("year".to_string(), FieldType::Integer), ("lang".to_string(), FieldType::Keyword)]);
        let _ = FilterSchema::new(&fields).parse(&filters);
        let intent = GraphIntent {
            rationale: String::new(),
            query_type: GraphQueryType::Neighbors,
            start: EntityRef { entity_type: EntityType::DOCUMENT, id: "fuzz".into() },
            end: None,
            max_hops: 2,
            edge_types: Vec::new(),
            filters,
            limits: GraphLimits::default(),
        };
        let _ = stages::graph::check(&config, &intent, &crate::access::Access::shared());
    }
    let types = EntityTypes::new(["anime", "character"]);
    let question = intake::normalize(text);
    let _ = intake::analyze(&question, &types);
}
