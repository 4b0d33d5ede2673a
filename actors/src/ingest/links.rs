//! Linking ingested documents in the graph: each becomes a document node, and its `mentions` edges are replaced
//! with what its text names now (`graph::mentions` finds the names).

use serde_json::json;

use super::Document;
use crate::graph::{
    Edge, Entity, GraphError, GraphStore, GraphWrite, document_node,
    mentions::{MENTIONS, MentionLinker},
};

/// Documents per graph write.
const WRITE_BATCH: usize = 1_000;

/// Totals of one linking run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkSummary {
    pub documents: usize,
    pub links: usize,
}

/// Records `docs` as document nodes and replaces their outgoing `mentions` edges with what their texts name
/// now, matched against every name in the graph (these documents' titles included). The edge weight falls with
/// the order of first mention, so a capped expansion keeps the earliest-named first.
pub async fn link_documents(
    store: &dyn GraphStore,
    docs: &[Document],
    min_chars: usize,
) -> Result<LinkSummary, GraphError> {
    for batch in docs.chunks(WRITE_BATCH) {
        let entities: Vec<Entity> =
            batch.iter().map(|d| Entity::document(&d.id, &d.title, d.ownership.readers())).collect();
        store.write(&GraphWrite { entities, ..Default::default() }).await?;
    }
    let linker = MentionLinker::new(store.all_names().await?, min_chars)?;
    let mut summary = LinkSummary { documents: docs.len(), links: 0 };
    for batch in docs.chunks(WRITE_BATCH) {
        let mut write = GraphWrite::default();
        for doc in batch {
            let node = document_node(&doc.id);
            write.replace_edges_from.push((node, MENTIONS.to_string()));
            for (rank, mention) in linker.find(&doc.text, node).into_iter().enumerate() {
                write.edges.push(Edge {
                    src: node,
                    dst: mention.node,
                    relation: MENTIONS.to_string(),
                    attributes: [
                        ("surface".to_string(), json!(mention.surface)),
                        ("count".to_string(), json!(mention.count)),
                    ]
                    .into_iter()
                    .collect(),
                    weight: 1.0 / (1.0 + rank as f64),
                });
            }
        }
        summary.links += write.edges.len();
        store.write(&write).await?;
    }
    Ok(summary)
}
