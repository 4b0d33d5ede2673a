//! [`EdgeIndex`]: the embedded backend, Qdrant's engine in-process (qdrant-edge 0.7) with a named dense vector
//! (when there is an embedder) and a BM25 sparse vector per chunk, fused with RRF at query time.

use std::{path::Path, sync::Arc};

use anyhow::Context;
use async_trait::async_trait;
use qdrant_edge::{
    Condition as EdgeCondition, CountRequest, CreateIndex, Distance, EdgeConfig, EdgeOptimizersConfig, EdgeShard,
    EdgeSparseVectorParams, EdgeVectorParams, FieldCondition, FieldIndexOperations, Filter, Fusion, IsEmptyCondition,
    Match, Modifier, NamedQuery, PayloadFieldSchema, PayloadSchemaType, PointId, PointInsertOperations,
    PointOperations, PointStruct, PointStructPersisted, Prefetch, QueryEnum, QueryRequest, Range, ScoringQuery,
    ScrollRequest, UpdateOperation, Vector, VectorInternal, VectorStructInternal, Vectors, WithPayloadInterface,
    WithVector, external::ordered_float::OrderedFloat,
};
use sleuth_messages::Hit;
use tokio::sync::Mutex;

use super::{
    Condition, DENSE, FieldType, Lane, PayloadFilter, SPARSE, SearchPlan, VectorIndex,
    points::{
        Candidate, DocState, Point, doc_ids_of, doc_state_from_payload, document_order, hit_from_payload, point_uuid,
    },
};

pub struct EdgeIndex {
    /// Taken only by `Drop`.
    shard: Option<Arc<EdgeShard>>,
    /// qdrant-edge's `flush` panics if an update runs at the same time, so writes and flushes take turns. It holds
    /// the points written since the segments were last optimized.
    writes: Mutex<usize>,
    /// How many written points trigger the optimizers ([`OPTIMIZE_EVERY`]).
    optimize_every: usize,
}

/// Points written before the shard's optimizers run. Every point goes into the shard's appendable segment, whose
/// sparse posting lists are kept sorted by shifting and re-weighting on every insert, so writing grows quadratically
/// with the segment (a 1M-passage ingestion spent 95% of its time in `PostingList::upsert`); optimizing moves the
/// points into indexed segments and leaves the appendable one small. Corpora below this size are never optimized.
const OPTIMIZE_EVERY: usize = 20_000;
/// The segment size (KB of vectors) past which an optimization indexes a segment; qdrant-edge's default (10 MB) lets
/// the appendable segment hold about 100k BM25-only points before it is moved out.
const INDEX_SEGMENTS_OVER_KB: usize = 1_000;
/// Segments the merge optimizer keeps: more than qdrant-edge's default for 2 cores, so that each optimization
/// merges a small new segment, not the whole index again; a search visits each.
const SEGMENTS: usize = 8;

fn point_id(chunk_id: &str) -> PointId {
    PointId::Uuid(point_uuid(chunk_id))
}

fn key(path: &str) -> anyhow::Result<qdrant_edge::JsonPath> {
    path.try_into().map_err(|_| anyhow::anyhow!("invalid payload path '{path}'"))
}

/// The qdrant-edge form of a [`PayloadFilter`].
pub fn to_edge_filter(filter: &PayloadFilter) -> anyhow::Result<Option<Filter>> {
    if filter.is_empty() {
        return Ok(None);
    }
    let mut conditions = Vec::new();
    for (path, condition) in &filter.must {
        let k = key(path)?;
        let field = match condition {
            Condition::Keyword(values) => FieldCondition::new_match(k, Match::from(values.clone())),
            Condition::Integer(values) => FieldCondition::new_match(k, Match::from(values.clone())),
            Condition::Bool(b) => FieldCondition::new_match(k, Match::from(*b)),
            Condition::Range { gt, gte, lt, lte } => FieldCondition::new_range(
                k,
                Range {
                    gt: gt.map(OrderedFloat),
                    gte: gte.map(OrderedFloat),
                    lt: lt.map(OrderedFloat),
                    lte: lte.map(OrderedFloat),
                },
            ),
            Condition::Readable(keys) => {
                let mut should = vec![EdgeCondition::IsEmpty(IsEmptyCondition::from(k.clone()))];
                if !keys.is_empty() {
                    should.push(EdgeCondition::Field(FieldCondition::new_match(k, Match::from(keys.clone()))));
                }
                conditions.push(EdgeCondition::Filter(Filter { should: Some(should), ..Default::default() }));
                continue;
            }
        };
        conditions.push(EdgeCondition::Field(field));
    }
    Ok(Some(Filter { must: Some(conditions), ..Default::default() }))
}

fn nearest(lane: &Lane) -> ScoringQuery {
    let query = match lane {
        Lane::Dense(v) => VectorInternal::Dense(v.clone()),
        Lane::Sparse(s) => Vector::new_sparse(s.indices.clone(), s.values.clone())
            .map(|v| v.0)
            .unwrap_or_else(|_| VectorInternal::Dense(Vec::new())),
    };
    ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery { query, using: Some(lane.vector_name().to_string()) }))
}

/// The qdrant-edge form of a [`SearchPlan`].
pub fn to_edge_request(plan: &SearchPlan) -> anyhow::Result<QueryRequest> {
    let filter = to_edge_filter(&plan.filter)?;
    let with_vector =
        if plan.with_dense { WithVector::Selector(vec![DENSE.to_string()]) } else { WithVector::Bool(false) };
    let (prefetches, query, score_threshold) = if plan.fused() {
        let prefetches = plan
            .lanes
            .iter()
            .map(|lane| Prefetch {
                prefetches: Vec::new(),
                query: Some(nearest(lane)),
                limit: plan.prefetch_limit,
                params: None,
                filter: filter.clone(),
                score_threshold: plan.threshold_for(lane).map(OrderedFloat),
            })
            .collect();
        (prefetches, ScoringQuery::Fusion(Fusion::Rrf { k: plan.rrf_k as usize, weights: None }), None)
    } else {
        let lane = plan.lanes.first().context("a search plan needs at least one lane")?;
        (Vec::new(), nearest(lane), plan.threshold_for(lane))
    };
    Ok(QueryRequest {
        prefetches,
        query: Some(query),
        filter,
        score_threshold: score_threshold.map(OrderedFloat),
        limit: plan.limit,
        offset: 0,
        params: None,
        with_vector,
        with_payload: WithPayloadInterface::Bool(true),
    })
}

fn dense_of(vector: Option<VectorStructInternal>) -> Option<Vec<f32>> {
    match vector? {
        VectorStructInternal::Named(mut named) => match named.remove(DENSE)? {
            VectorInternal::Dense(v) => Some(v),
            _ => None,
        },
        VectorStructInternal::Single(v) => Some(v),
        _ => None,
    }
}

fn schema_type(ty: FieldType) -> PayloadSchemaType {
    match ty {
        FieldType::Keyword => PayloadSchemaType::Keyword,
        FieldType::Integer => PayloadSchemaType::Integer,
        FieldType::Float => PayloadSchemaType::Float,
        FieldType::Bool => PayloadSchemaType::Bool,
    }
}

impl EdgeIndex {
    /// Opens the index at `dir`, creating it when it does not exist yet, and makes sure every path in `indexed`
    /// has a payload index. `dim` is the embedder's vector length; an index created without an embedder (`None`)
    /// has sparse (BM25) vectors alone: a dense vector configured for points that never carry one still costs
    /// every point its full length on disk and in memory (1.6 GB of zeros at 1M passages). An index with dense
    /// vectors opens without an embedder too, and is searched by BM25.
    pub fn open(dir: &Path, dim: Option<usize>, indexed: &[(String, FieldType)]) -> anyhow::Result<EdgeIndex> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create index directory {}", dir.display()))?;
        // An existing index keeps the vectors it was created with (qdrant-edge refuses segments that do not match
        // the config it is given); a new one gets them from `dim`.
        let config = EdgeConfig::load(dir).is_none().then(|| {
            let sparse = EdgeSparseVectorParams::builder().modifier(Modifier::Idf).build();
            match dim {
                Some(dim) => EdgeConfig::builder()
                    .vector(DENSE, EdgeVectorParams::builder(dim, Distance::Cosine).build())
                    .sparse_vector(SPARSE, sparse)
                    .build(),
                None => EdgeConfig::builder().sparse_vector(SPARSE, sparse).build(),
            }
        });
        let shard = EdgeShard::load(dir, config).map_err(|e| {
            let text = e.to_string();
            if text.contains("WouldBlock") || text.contains("lock") {
                anyhow::anyhow!(
                    "cannot open the embedded index at {}: another sleuth process owns it. The embedded index has \
                     one owner per data directory; to run several retrieve replicas, give them a Qdrant server \
                     (retrieval.backend = \"qdrant\", retrieval.qdrant_url) ({text})",
                    dir.display()
                )
            } else {
                anyhow::anyhow!("cannot open the index at {}: {text}", dir.display())
            }
        })?;
        let stored = shard.config().vectors.get(DENSE).map(|v| v.size);
        if let Some(dim) = dim
            && stored != Some(dim)
        {
            let had = stored.map_or("no dense vector".to_string(), |d| format!("{d}-dimensional dense vectors"));
            anyhow::bail!(
                "the index at {} was built with {had}, but the embedder makes {dim}-dimensional ones; remove that directory and ingest again",
                dir.display()
            );
        }
        let optimizers = EdgeOptimizersConfig {
            indexing_threshold: Some(INDEX_SEGMENTS_OVER_KB),
            default_segment_number: Some(SEGMENTS),
            ..shard.config().optimizers.clone()
        };
        shard.set_optimizers_config(optimizers).map_err(|e| anyhow::anyhow!("cannot configure the index: {e}"))?;
        let existing = shard.info().payload_schema;
        for (path, ty) in indexed {
            if existing.keys().any(|k| k.to_string() == *path) {
                continue;
            }
            shard
                .update(UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(CreateIndex {
                    field_name: key(path)?,
                    field_schema: Some(PayloadFieldSchema::FieldType(schema_type(*ty))),
                })))
                .map_err(|e| anyhow::anyhow!("cannot create the payload index on {path}: {e}"))?;
        }
        Ok(EdgeIndex { shard: Some(Arc::new(shard)), writes: Mutex::new(0), optimize_every: OPTIMIZE_EVERY })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&EdgeShard) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let shard = self.shard.clone().context("index is closed")?;
        tokio::task::spawn_blocking(move || f(&shard)).await.context("index task failed")?
    }

    fn doc_state_sync(shard: &EdgeShard, doc_id: &str) -> anyhow::Result<Option<DocState>> {
        let records = shard
            .retrieve(
                &[point_id(&format!("{doc_id}#0"))],
                Some(WithPayloadInterface::Bool(true)),
                Some(WithVector::Bool(false)),
            )
            .map_err(|e| anyhow::anyhow!("retrieve failed: {e}"))?;
        Ok(records.into_iter().next().and_then(|r| doc_state_from_payload(&r.payload?.0)))
    }

    fn delete_docs_sync(shard: &EdgeShard, doc_ids: &[String]) -> anyhow::Result<()> {
        let filter = to_edge_filter(&PayloadFilter::doc_ids(doc_ids.to_vec()))?.expect("non-empty filter");
        shard
            .update(UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(filter)))
            .map_err(|e| anyhow::anyhow!("delete failed: {e}"))
    }
}

#[async_trait]
impl VectorIndex for EdgeIndex {
    async fn search(&self, plan: &SearchPlan) -> anyhow::Result<Vec<Candidate>> {
        if plan.lanes.is_empty() {
            return Ok(Vec::new());
        }
        let request = to_edge_request(plan)?;
        self.blocking(move |shard| {
            let points = shard.query(request).map_err(|e| anyhow::anyhow!("query failed: {e}"))?;
            Ok(points
                .into_iter()
                .filter_map(|p| {
                    let hit = hit_from_payload(&p.payload?.0, p.score)?;
                    Some(Candidate { hit, dense: dense_of(p.vector) })
                })
                .collect())
        })
        .await
    }

    async fn fetch(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let filter = to_edge_filter(filter)?;
        self.blocking(move |shard| {
            let (records, _) = shard
                .scroll(ScrollRequest { limit: Some(limit), filter, ..Default::default() })
                .map_err(|e| anyhow::anyhow!("scroll failed: {e}"))?;
            let mut hits: Vec<Hit> = records.into_iter().filter_map(|r| hit_from_payload(&r.payload?.0, 1.0)).collect();
            document_order(&mut hits);
            Ok(hits)
        })
        .await
    }

    async fn doc_state(&self, doc_id: &str) -> anyhow::Result<Option<DocState>> {
        let doc_id = doc_id.to_string();
        self.blocking(move |shard| Self::doc_state_sync(shard, &doc_id)).await
    }

    async fn replace(&self, points: Vec<Point>) -> anyhow::Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        let mut unoptimized = self.writes.lock().await;
        *unoptimized += points.len();
        let optimize = *unoptimized >= self.optimize_every;
        if optimize {
            *unoptimized = 0;
        }
        self.blocking(move |shard| {
            Self::delete_docs_sync(shard, &doc_ids_of(&points))?;
            let points: Vec<PointStructPersisted> = points
                .into_iter()
                .map(|p| {
                    let sparse = Vector::new_sparse(p.sparse.indices.clone(), p.sparse.values.clone())
                        .map_err(|e| anyhow::anyhow!("bad sparse vector: {e}"))?;
                    let mut named: Vec<(&str, Vector)> = vec![(SPARSE, sparse)];
                    if let Some(dense) = &p.dense {
                        named.push((DENSE, Vector::new_dense(dense.clone())));
                    }
                    Ok(PointStruct::new(point_id(&p.chunk.id()), Vectors::new_named(named), p.payload()).into())
                })
                .collect::<anyhow::Result<_>>()?;
            shard
                .update(UpdateOperation::PointOperation(PointOperations::UpsertPoints(
                    PointInsertOperations::PointsList(points),
                )))
                .map_err(|e| anyhow::anyhow!("upsert failed: {e}"))?;
            if optimize {
                let started = std::time::Instant::now();
                shard.optimize().map_err(|e| anyhow::anyhow!("optimizing the index failed: {e}"))?;
                tracing::info!(ms = started.elapsed().as_millis() as u64, "optimized the in-process index's segments");
            }
            Ok(())
        })
        .await
    }

    async fn delete(&self, doc_ids: &[String]) -> anyhow::Result<usize> {
        let doc_ids = doc_ids.to_vec();
        let _guard = self.writes.lock().await;
        self.blocking(move |shard| {
            let mut existed = 0;
            for id in &doc_ids {
                existed += usize::from(Self::doc_state_sync(shard, id)?.is_some());
            }
            if !doc_ids.is_empty() {
                Self::delete_docs_sync(shard, &doc_ids)?;
            }
            Ok(existed)
        })
        .await
    }

    async fn flush(&self) -> anyhow::Result<()> {
        let _guard = self.writes.lock().await;
        self.blocking(|shard| {
            shard.flush();
            Ok(())
        })
        .await
    }

    async fn count(&self, filter: &PayloadFilter) -> anyhow::Result<usize> {
        let filter = to_edge_filter(filter)?;
        self.blocking(move |shard| {
            shard.count(CountRequest { filter, exact: true }).map_err(|e| anyhow::anyhow!("count failed: {e}"))
        })
        .await
    }
}

impl Drop for EdgeIndex {
    /// qdrant-edge flushes a shard when it is dropped and panics when that fails (its directory is gone, the disk
    /// is full). Two indexes failing while one panic unwinds would abort the process, so the panic stops here.
    fn drop(&mut self) {
        if let Some(shard) = self.shard.take()
            && std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(shard))).is_err()
        {
            tracing::error!("the in-process index could not be flushed when it was closed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Chunk, SparseVector};

    fn point(i: u32) -> Point {
        let chunk = Chunk {
            doc_id: format!("doc-{i}"),
            index: 0,
            of: 1,
            title: format!("Title {i}"),
            text: format!("passage {i}"),
            doc_hash: "h".into(),
            metadata: Default::default(),
            readers: Vec::new(),
        };
        // Term 0 in every point (a long posting list), term i + 1 in point i alone.
        let sparse = SparseVector { indices: vec![0, i + 1], values: vec![1.0, 2.0] };
        Point { chunk, dense: Some(vec![1.0, 0.0, 0.0, 0.0]), sparse, embedder: "test".into() }
    }

    #[tokio::test]
    async fn points_stay_searchable_across_the_optimizations_that_writing_triggers() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = EdgeIndex::open(dir.path(), Some(4), &[]).unwrap();
        index.optimize_every = 100;
        // Segments of more than 1 KB of vectors are worth indexing, so these few points are.
        let small = EdgeOptimizersConfig { indexing_threshold: Some(1), ..Default::default() };
        index.shard.as_ref().unwrap().set_optimizers_config(small).unwrap();
        for batch in 0..6u32 {
            index.replace((batch * 50..batch * 50 + 50).map(point).collect()).await.unwrap();
        }
        // Re-writing a document after its segment was optimized replaces it, not adds a second copy.
        index.replace(vec![point(7)]).await.unwrap();
        assert_eq!(index.count(&PayloadFilter::default()).await.unwrap(), 300);
        let segments = index.shard.as_ref().unwrap().info().segments_count;
        assert!(segments >= 2, "the optimizers ran: {segments} segments");
        for i in [3u32, 160, 299] {
            let hits = index.search(&sparse_plan(i + 1)).await.unwrap();
            assert_eq!(hits.first().map(|c| c.hit.doc_id.as_str()), Some(format!("doc-{i}").as_str()));
        }
    }

    fn sparse_plan(term: u32) -> SearchPlan {
        SearchPlan {
            lanes: vec![Lane::Sparse(SparseVector { indices: vec![term], values: vec![1.0] })],
            filter: PayloadFilter::default(),
            prefetch_limit: 10,
            rrf_k: 2,
            limit: 3,
            dense_threshold: None,
            with_dense: false,
        }
    }

    #[tokio::test]
    async fn an_index_without_an_embedder_holds_no_dense_vectors_and_says_so_to_one() {
        let dir = tempfile::tempdir().unwrap();
        let index = EdgeIndex::open(dir.path(), None, &[]).unwrap();
        assert!(index.shard.as_ref().unwrap().config().vectors.is_empty(), "no dense vector is configured");
        let bm25_only = |i| Point { dense: None, ..point(i) };
        index.replace((0..20).map(bm25_only).collect()).await.unwrap();
        let hits = index.search(&sparse_plan(6)).await.unwrap();
        assert_eq!(hits.first().map(|c| c.hit.doc_id.as_str()), Some("doc-5"));
        drop(index);
        // Its points have no dense vectors to search, so an embedder cannot start using it.
        let error = EdgeIndex::open(dir.path(), Some(4), &[]).err().expect("an embedder on a BM25-only index");
        assert!(error.to_string().contains("built with no dense vector"), "{error}");
        // Opened without an embedder again, it is as it was.
        let again = EdgeIndex::open(dir.path(), None, &[]).unwrap();
        assert_eq!(again.count(&PayloadFilter::default()).await.unwrap(), 20);
    }

    #[tokio::test]
    async fn an_index_with_dense_vectors_is_searched_by_bm25_without_an_embedder() {
        let dir = tempfile::tempdir().unwrap();
        let index = EdgeIndex::open(dir.path(), Some(4), &[]).unwrap();
        index.replace((0..20).map(point).collect()).await.unwrap();
        drop(index);
        let index = EdgeIndex::open(dir.path(), None, &[]).unwrap();
        let hits = index.search(&sparse_plan(8)).await.unwrap();
        assert_eq!(hits.first().map(|c| c.hit.doc_id.as_str()), Some("doc-7"));
    }
}
