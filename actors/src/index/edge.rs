//! [`EdgeIndex`]: the embedded backend, Qdrant's engine in-process (qdrant-edge 0.7) with a BM25 sparse vector.

use std::{path::Path, sync::Arc};

use anyhow::Context;
use async_trait::async_trait;
use qdrant_edge::{
    bm25_embed::{EdgeBm25, EdgeBm25Config},
    external::serde_json::{json, Value},
    Condition, CountRequest, CreateIndex, EdgeConfig, EdgeShard, EdgeSparseVectorParams, FieldCondition,
    FieldIndexOperations, Filter, Match, Modifier, NamedQuery, PayloadFieldSchema, PayloadSchemaType, PointId,
    PointInsertOperations, PointOperations, PointStruct, PointStructPersisted, QueryEnum, QueryRequest,
    ScoringQuery, ScrollRequest, UpdateOperation, VectorInternal, Vectors, WithPayloadInterface, WithVector,
};
use sleuth_messages::{Hit, JsonMap};
use tokio::sync::Mutex;
use uuid::Uuid;

use super::{Chunk, HitFilter, Upserted, VectorIndex};

const SPARSE: &str = "bm25";

/// Namespace for chunk point ids (UUIDv5 of `<doc_id>#<index>`).
const POINT_NAMESPACE: Uuid = Uuid::from_u128(0x5e1e_7f00_0000_4000_8000_0000_0000_0001);

pub struct EdgeIndex {
    shard: Arc<EdgeShard>,
    bm25: Arc<EdgeBm25>,
    /// qdrant-edge's `flush` panics if an update runs at the same time, so writes and flushes take turns.
    writes: Mutex<()>,
}

fn point_id(chunk_id: &str) -> PointId {
    PointId::Uuid(Uuid::new_v5(&POINT_NAMESPACE, chunk_id.as_bytes()))
}

fn doc_filter(doc_ids: &[String]) -> Filter {
    let key = "doc_id".try_into().expect("static payload key");
    Filter::new_must(Condition::Field(FieldCondition::new_match(key, Match::from(doc_ids.to_vec()))))
}

fn hit_from_payload(payload: Option<qdrant_edge::Payload>, score: f32) -> Option<Hit> {
    let map = payload?.0;
    let get = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_string);
    let metadata: JsonMap = map
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Some(Hit { id: get("chunk_id")?, doc_id: get("doc_id")?, title: get("title")?, text: get("text")?, score, metadata })
}

impl EdgeIndex {
    /// Opens the index at `dir`, creating it (and its payload index) when it does not exist yet.
    pub fn open(dir: &Path) -> anyhow::Result<EdgeIndex> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create index directory {}", dir.display()))?;
        let config = EdgeConfig::builder()
            .sparse_vector(SPARSE, EdgeSparseVectorParams::builder().modifier(Modifier::Idf).build())
            .build();
        let fresh = !dir.join("wal").exists();
        let shard = EdgeShard::load(dir, Some(config)).map_err(|e| {
            anyhow::anyhow!("cannot open the index at {} (is another sleuth process using it?): {e}", dir.display())
        })?;
        if fresh {
            shard
                .update(UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(CreateIndex {
                    field_name: "doc_id".try_into().expect("static payload key"),
                    field_schema: Some(PayloadFieldSchema::FieldType(PayloadSchemaType::Keyword)),
                })))
                .map_err(|e| anyhow::anyhow!("cannot create the doc_id payload index: {e}"))?;
        }
        let bm25 = EdgeBm25::new(EdgeBm25Config { language: Some("english".into()), ..Default::default() })
            .map_err(|e| anyhow::anyhow!("cannot build the bm25 model: {e}"))?;
        Ok(EdgeIndex { shard: Arc::new(shard), bm25: Arc::new(bm25), writes: Mutex::new(()) })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&EdgeShard, &EdgeBm25) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let (shard, bm25) = (self.shard.clone(), self.bm25.clone());
        tokio::task::spawn_blocking(move || f(&shard, &bm25)).await.context("index task failed")?
    }

    fn stored_hash(shard: &EdgeShard, chunk_id: &str) -> anyhow::Result<Option<(String, u64)>> {
        let records = shard
            .retrieve(&[point_id(chunk_id)], Some(WithPayloadInterface::Bool(true)), Some(WithVector::Bool(false)))
            .map_err(|e| anyhow::anyhow!("retrieve failed: {e}"))?;
        Ok(records.into_iter().next().and_then(|r| {
            let p = r.payload?.0;
            Some((p.get("doc_hash")?.as_str()?.to_string(), p.get("of")?.as_u64()?))
        }))
    }
}

#[async_trait]
impl VectorIndex for EdgeIndex {
    async fn search(&self, query: &str, filter: &HitFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let query = query.to_string();
        let filter = (!filter.is_empty()).then(|| doc_filter(&filter.doc_ids));
        self.blocking(move |shard, bm25| {
            let vector = bm25.embed_query(&query);
            if vector.indices.is_empty() {
                return Ok(Vec::new());
            }
            let points = shard
                .query(QueryRequest {
                    prefetches: vec![],
                    query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
                        query: VectorInternal::from(vector),
                        using: Some(SPARSE.to_string()),
                    }))),
                    filter,
                    score_threshold: None,
                    limit,
                    offset: 0,
                    params: None,
                    with_vector: WithVector::Bool(false),
                    with_payload: WithPayloadInterface::Bool(true),
                })
                .map_err(|e| anyhow::anyhow!("query failed: {e}"))?;
            Ok(points.into_iter().filter_map(|p| hit_from_payload(p.payload, p.score)).collect())
        })
        .await
    }

    async fn fetch(&self, filter: &HitFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let filter = doc_filter(&filter.doc_ids);
        self.blocking(move |shard, _| {
            let (records, _) = shard
                .scroll(ScrollRequest { limit: Some(limit), filter: Some(filter), ..Default::default() })
                .map_err(|e| anyhow::anyhow!("scroll failed: {e}"))?;
            let mut hits: Vec<Hit> = records.into_iter().filter_map(|r| hit_from_payload(r.payload, 1.0)).collect();
            hits.sort_by(|a, b| (&a.doc_id, a.id.len(), &a.id).cmp(&(&b.doc_id, b.id.len(), &b.id)));
            Ok(hits)
        })
        .await
    }

    async fn upsert_document(&self, chunks: Vec<Chunk>) -> anyhow::Result<Upserted> {
        let Some(first) = chunks.first().cloned() else { return Ok(Upserted::Unchanged) };
        let _guard = self.writes.lock().await;
        self.blocking(move |shard, bm25| {
            let outcome = match Self::stored_hash(shard, &first.id())? {
                Some((hash, of)) if hash == first.doc_hash && of == u64::from(first.of) => return Ok(Upserted::Unchanged),
                Some(_) => Upserted::Replaced,
                None => Upserted::Inserted,
            };
            if outcome == Upserted::Replaced {
                shard
                    .update(UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(doc_filter(&[first.doc_id.clone()]))))
                    .map_err(|e| anyhow::anyhow!("delete of old chunks failed: {e}"))?;
            }
            let points: Vec<PointStructPersisted> = chunks
                .iter()
                .map(|c| {
                    let vector = bm25.embed_document(&format!("{}\n{}", c.title, c.text));
                    PointStruct::new(
                        point_id(&c.id()),
                        Vectors::new_named([(SPARSE, vector)]),
                        json!({
                            "chunk_id": c.id(), "doc_id": c.doc_id, "chunk": c.index, "of": c.of,
                            "title": c.title, "text": c.text, "doc_hash": c.doc_hash, "metadata": c.metadata,
                        }),
                    )
                    .into()
                })
                .collect();
            shard
                .update(UpdateOperation::PointOperation(PointOperations::UpsertPoints(PointInsertOperations::PointsList(points))))
                .map_err(|e| anyhow::anyhow!("upsert failed: {e}"))?;
            Ok(outcome)
        })
        .await
    }

    async fn flush(&self) -> anyhow::Result<()> {
        let _guard = self.writes.lock().await;
        self.blocking(|shard, _| {
            shard.flush();
            Ok(())
        })
        .await
    }

    async fn count(&self) -> anyhow::Result<usize> {
        self.blocking(|shard, _| {
            shard.count(CountRequest { filter: None, exact: true }).map_err(|e| anyhow::anyhow!("count failed: {e}"))
        })
        .await
    }
}
