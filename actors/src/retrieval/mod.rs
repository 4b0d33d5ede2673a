//! [`Retriever`]: hybrid retrieval as the retrieve stage, ingestion and `sleuth eval` use it. It embeds the
//! question (dense lane, when an embedder is available) and weighs its terms (BM25 lane), runs one fused
//! [`SearchPlan`] on the configured backend, and reranks the candidates.

pub mod bm25;
pub mod cache;
pub mod entities;
pub mod rerank;

use std::sync::Arc;

use anyhow::Context;
use sleuth_messages::{Backend, Degradation, Hit, JsonMap};

use crate::{
    config::{Config, IndexBackend, RerankKind, RetrievalConfig},
    embed::{self, Embedder},
    graph::{self, GraphStore},
    guard::{self, Guard},
    index::{
        Candidate, Chunk, EdgeIndex, FilterSchema, Lane, PayloadFilter, Point, SearchPlan, ServerIndex, VectorIndex,
    },
};
use bm25::Bm25;
use rerank::{FeatureReranker, KeepFused, Reranker};

/// What a search found, and the backend it had to do without, if any.
#[derive(Debug, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub degraded: Option<Degradation>,
}

pub struct Retriever {
    pub index: Arc<dyn VectorIndex>,
    /// The entity collection ([`entities`]): names and aliases of the graph's entities, for entity resolution.
    pub entities: Arc<dyn VectorIndex>,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub settings: RetrievalConfig,
    /// Where ingestion records documents and their mention links; `None` when `graph.link_mentions` is off.
    pub graph: Option<Arc<dyn GraphStore>>,
    /// Shortest name that counts as a mention.
    pub min_mention_chars: usize,
    bm25: Bm25,
    reranker: Arc<dyn Reranker>,
    schema: FilterSchema,
    entity_schema: FilterSchema,
}

impl Retriever {
    /// Opens the configured embedder and index backend. It loads nothing: the bundled demo data is
    /// [`bootstrap`](crate::bootstrap)'s.
    pub async fn open(config: &Config) -> anyhow::Result<Retriever> {
        let embedder = embed::open(config).await?;
        let settings = config.retrieval.clone();
        let schema = FilterSchema::new(&settings.filter_fields);
        // Without an embedder the indexes hold BM25 vectors alone.
        let dim = embedder.as_ref().map(|e| e.dim());
        let entity_schema = entities::schema();
        // One guard for both collections: they live on the same server.
        let guard = Arc::new(Guard::new(Backend::Index, &config.backends));
        let index =
            open_index(config, "documents", &settings.collection, dim, schema.indexed_paths(), guard.clone()).await?;
        let entity_index =
            open_index(config, "entities", &settings.entity_collection, dim, entity_schema.indexed_paths(), guard)
                .await?;
        let reranker: Arc<dyn Reranker> = match settings.rerank {
            RerankKind::None => Arc::new(KeepFused),
            RerankKind::Features => Arc::new(FeatureReranker { weights: settings.rerank_weights }),
        };
        let graph = if config.graph.link_mentions { Some(graph::open(config).await?) } else { None };
        let retriever = Retriever {
            index,
            entities: entity_index,
            embedder,
            settings,
            graph,
            min_mention_chars: config.graph.min_mention_chars,
            bm25: Bm25::english()?,
            reranker,
            schema,
            entity_schema,
        };
        Ok(retriever)
    }

    /// The id stored with every chunk: the embedder's, or empty for BM25 only.
    pub fn embedder_id(&self) -> String {
        self.embedder.as_ref().map(|e| e.id().to_string()).unwrap_or_default()
    }

    /// One line saying how this retriever searches.
    pub fn describe(&self) -> String {
        let lanes = match &self.embedder {
            Some(e) => format!("dense ({}) + BM25, RRF k={}", e.id(), self.settings.rrf_k),
            None => "BM25 only (no embedding model)".to_string(),
        };
        format!("{lanes}, rerank={}, backend={:?}", self.reranker.name(), self.settings.backend).to_lowercase()
    }

    /// Parses an intent's filters against the schema.
    pub fn parse_filter(&self, filters: &JsonMap) -> Result<PayloadFilter, String> {
        self.schema.parse(filters)
    }

    /// The plan for `query` under `filter`; `limit` is how many candidates come back before reranking. When the
    /// embedding endpoint is unavailable the plan is BM25 only, and says so.
    pub async fn plan(
        &self,
        query: &str,
        filter: &PayloadFilter,
        limit: usize,
    ) -> anyhow::Result<(SearchPlan, Option<Degradation>)> {
        let mut lanes = Vec::new();
        let mut degraded = None;
        if let Some(e) = &self.embedder {
            match e.embed(&[query.to_string()]).await {
                Ok(v) => lanes.push(Lane::Dense(v.into_iter().next().context("no query vector")?)),
                Err(err) => match guard::unavailable(&err) {
                    Some(down) => {
                        tracing::warn!(reason = %down.reason, "embeddings unavailable: searching with BM25 only");
                        degraded = Some(down.degradation());
                    }
                    None => return Err(err.context("cannot embed the query")),
                },
            }
        }
        let sparse = self.bm25.query(query);
        if !sparse.is_empty() {
            lanes.push(Lane::Sparse(sparse));
        }
        Ok((self.plan_of(lanes, filter, limit), degraded))
    }

    /// A plan over `lanes` with the configured fusion settings; hits carry their dense vectors when a dense
    /// lane is searched (the reranker uses them).
    fn plan_of(&self, lanes: Vec<Lane>, filter: &PayloadFilter, limit: usize) -> SearchPlan {
        let with_dense = lanes.iter().any(|l| matches!(l, Lane::Dense(_)));
        SearchPlan {
            lanes,
            filter: filter.clone(),
            prefetch_limit: self.settings.prefetch_limit,
            rrf_k: self.settings.rrf_k,
            limit,
            dense_threshold: self.settings.dense_threshold,
            with_dense,
        }
    }

    /// The best `limit` chunks for `query`: fused hybrid candidates, reranked.
    pub async fn search(&self, query: &str, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        Ok(self.search_found(query, filter, limit).await?.hits)
    }

    /// [`Retriever::search`], saying when it had to search without the embeddings.
    pub async fn search_found(&self, query: &str, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Found> {
        self.search_in(self.index.as_ref(), query, filter, limit).await
    }

    /// [`Retriever::search_found`] on another collection of the same embedder (the entity collection).
    async fn search_in(
        &self,
        index: &dyn VectorIndex,
        query: &str,
        filter: &PayloadFilter,
        limit: usize,
    ) -> anyhow::Result<Found> {
        let (plan, degraded) = self.plan(query, filter, self.settings.prefetch_limit.max(limit)).await?;
        let question_dense = plan.lanes.iter().find_map(|l| match l {
            Lane::Dense(v) => Some(v.clone()),
            Lane::Sparse(_) => None,
        });
        let candidates = in_score_order(index.search(&plan).await?);
        let ranked = self.reranker.rerank(query, question_dense.as_deref(), candidates).await?;
        Ok(Found { hits: ranked.into_iter().take(limit).map(|c| c.hit).collect(), degraded })
    }

    /// Literal-constraint search (seed 003): BM25 only (no dense lane, so nothing paraphrased), over the query
    /// and its literals, with the chunks that contain every literal verbatim ranked first.
    pub async fn search_exact(
        &self,
        query: &str,
        literals: &[String],
        filter: &PayloadFilter,
        limit: usize,
    ) -> anyhow::Result<Vec<Hit>> {
        let text = format!("{query} {}", literals.join(" "));
        let sparse = self.bm25.query(&text);
        if sparse.is_empty() {
            return Ok(Vec::new());
        }
        let plan = self.plan_of(vec![Lane::Sparse(sparse)], filter, self.settings.prefetch_limit.max(limit));
        let mut hits: Vec<Hit> = in_score_order(self.index.search(&plan).await?).into_iter().map(|c| c.hit).collect();
        let exact = |h: &Hit| literals.iter().all(|l| h.text.contains(l.as_str()) || h.title.contains(l.as_str()));
        // Stable: BM25 order within each group.
        hits.sort_by_key(|h| !exact(h));
        hits.truncate(limit);
        Ok(hits)
    }

    /// Chunks matching a filter, in document order (an ID lookup when the filter names documents).
    pub async fn fetch(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        self.index.fetch(filter, limit).await
    }

    /// Computes both vectors of each chunk; dense ones in embedder batches.
    pub async fn points(&self, chunks: Vec<Chunk>) -> anyhow::Result<Vec<Point>> {
        let texts: Vec<String> = chunks.iter().map(Chunk::embedding_text).collect();
        let dense: Vec<Option<Vec<f32>>> = match &self.embedder {
            Some(e) if !texts.is_empty() => {
                e.embed(&texts).await.context("cannot embed chunks")?.into_iter().map(Some).collect()
            }
            _ => vec![None; texts.len()],
        };
        let embedder = self.embedder_id();
        Ok(chunks
            .into_iter()
            .zip(texts)
            .zip(dense)
            .map(|((chunk, text), dense)| Point {
                sparse: self.bm25.document(&text),
                chunk,
                dense,
                embedder: embedder.clone(),
            })
            .collect())
    }
}

/// Opens one collection on the configured backend: `<data_dir>/index/<dir>` in-process, else `collection` on the server.
async fn open_index(
    config: &Config,
    dir: &str,
    collection: &str,
    dim: Option<usize>,
    indexed: Vec<(String, crate::index::FieldType)>,
    guard: Arc<Guard>,
) -> anyhow::Result<Arc<dyn VectorIndex>> {
    let settings = &config.retrieval;
    let inner: Arc<dyn VectorIndex> = match settings.backend {
        IndexBackend::Edge => {
            let dir = config.data_dir().join("index").join(dir);
            Arc::new(tokio::task::spawn_blocking(move || EdgeIndex::open(&dir, dim, &indexed)).await??)
        }
        IndexBackend::Qdrant => {
            let url = settings.qdrant_url.clone().context("retrieval.qdrant_url is not set")?;
            let key = std::env::var(&settings.qdrant_api_key_env).ok();
            let server: Arc<dyn VectorIndex> =
                Arc::new(ServerIndex::connect(&url, key, collection, dim, &indexed).await?);
            Arc::new(crate::index::guarded::Guarded { inner: server, guard })
        }
    };
    let in_process = settings.backend == IndexBackend::Edge;
    Ok(Arc::new(crate::index::traced::Traced { inner, collection: collection.to_string(), in_process }))
}

/// Candidates best first, ties broken by id. The engine's order among equal scores varies from run to run on
/// the same index, and a tie at the top decides which entity a name resolves to: without this, the same question
/// could get two different answers.
fn in_score_order(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score).then_with(|| a.hit.id.cmp(&b.hit.id)));
    candidates
}
