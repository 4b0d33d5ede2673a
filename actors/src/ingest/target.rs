//! What an ingestion writes to, opened from the configuration: the index and the graph the configuration names,
//! never the bundled demo data (an ingestion into an empty index must not load the demo corpus first).

use std::sync::Arc;

use crate::{
    config::Config,
    entity_types::EntityTypes,
    graph::{self, GraphStore, GraphWrite},
    retrieval::Retriever,
};

/// The retriever an ingestion writes through: the configured index, with the demo corpus left out.
pub async fn open(config: &Config) -> anyhow::Result<Retriever> {
    let mut config = config.clone();
    config.retrieval.demo_corpus = false;
    Retriever::open(&config).await
}

/// The graph an ingestion writes to: the retriever's own, or the configured one when it opened none.
pub async fn graph_store(config: &Config, retriever: &Retriever) -> anyhow::Result<Arc<dyn GraphStore>> {
    match &retriever.graph {
        Some(graph) => Ok(graph.clone()),
        None => Ok(graph::open(config).await?),
    }
}

/// Deletes documents from the index and their nodes (with their edges) from the graph. Returns how many of them
/// were in the index.
pub async fn delete(retriever: &Retriever, ids: &[String]) -> anyhow::Result<usize> {
    let existed = retriever.index.delete(ids).await?;
    retriever.index.flush().await?;
    if let Some(graph) = &retriever.graph {
        let nodes = ids.iter().map(|id| graph::document_node(id)).collect();
        graph.write(&GraphWrite { delete: nodes, ..Default::default() }).await?;
    }
    Ok(existed)
}

/// The entity types a graph holds now, for announcing them to the deployment's stages.
pub async fn entity_types(store: &dyn GraphStore) -> anyhow::Result<EntityTypes> {
    let stats = store.stats(&crate::access::Access::everything()).await?;
    Ok(EntityTypes::new(stats.entities_by_type.keys()))
}
