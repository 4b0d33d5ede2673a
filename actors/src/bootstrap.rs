//! The bundled demo data: on the embedded backend, a node that serves retrieval loads the demo graph and the
//! demo corpus when the config allows it and they are missing or were embedded by another model. This is the
//! only place that loads them; [`Retriever::open`] opens the index and nothing more.

use anyhow::Context;

use crate::{
    config::{Config, IndexBackend},
    graph, ingest,
    retrieval::Retriever,
};

/// Opens the retriever and loads the demo data it should serve (see [`load_demo`]).
pub async fn open_retriever(config: &Config) -> anyhow::Result<Retriever> {
    let retriever = Retriever::open(config).await?;
    load_demo(config, &retriever).await?;
    Ok(retriever)
}

/// Loads the demo graph, then the demo corpus, into `retriever` when `retrieval.demo_corpus` is on, the index is
/// embedded, and they are missing or stale. The demo graph goes first, so the demo corpus is linked to its
/// entities' names.
pub async fn load_demo(config: &Config, retriever: &Retriever) -> anyhow::Result<()> {
    let demo = retriever.settings.demo_corpus && retriever.settings.backend == IndexBackend::Edge;
    let demo_graph = demo && config.graph.demo_graph && config.database.url.is_none() && graph_stale(retriever).await?;
    if demo_graph {
        let store = match &retriever.graph {
            Some(graph) => graph.clone(),
            None => graph::open(config).await?,
        };
        let summary = ingest::graph::ingest_demo(store.as_ref(), retriever, &config.graph.relations).await?;
        tracing::info!(%summary, "loaded the bundled demo graph");
    }
    if demo && (demo_graph || corpus_stale(retriever).await?) {
        let docs = ingest::parse_jsonl("demo corpus", ingest::DEMO_CORPUS)?;
        let summary = ingest::ingest(retriever, docs, false).await?;
        tracing::info!(%summary, "ingested the bundled demo corpus");
    }
    Ok(())
}

/// True when the entity collection is empty or was embedded by another model.
async fn graph_stale(retriever: &Retriever) -> anyhow::Result<bool> {
    let Some(first) = ingest::graph::demo_entities()?.into_iter().next() else { return Ok(false) };
    Ok(match retriever.entities.doc_state(&first.id.to_string()).await? {
        Some(state) => state.embedder != retriever.embedder_id(),
        None => retriever.entities.count(&Default::default()).await? == 0,
    })
}

/// True when the document index is empty or the demo corpus in it was embedded by another model.
async fn corpus_stale(retriever: &Retriever) -> anyhow::Result<bool> {
    if retriever.index.count(&Default::default()).await? == 0 {
        return Ok(true);
    }
    let first =
        ingest::parse_jsonl("demo corpus", ingest::DEMO_CORPUS)?.into_iter().next().context("empty demo corpus")?;
    Ok(match retriever.index.doc_state(&first.id).await? {
        Some(state) => state.embedder != retriever.embedder_id(),
        None => false,
    })
}
