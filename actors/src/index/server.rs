//! [`ServerIndex`]: the production backend, a Qdrant server over gRPC (qdrant-client). It creates its collection
//! (a named dense vector when there is an embedder, a BM25 sparse vector with IDF) and payload indexes at
//! start-up, and runs the same [`SearchPlan`] as the embedded backend: [`to_grpc_query`] is the translation,
//! tested without a server.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use qdrant_client::{
    Payload, Qdrant,
    qdrant::{
        Condition as GrpcCondition, CountPointsBuilder, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder,
        DeletePointsBuilder, DenseVector, Distance, FieldType as GrpcFieldType, Filter, GetPointsBuilder, Modifier,
        NamedVectors, PointStruct, PrefetchQueryBuilder, Query, QueryPoints, QueryPointsBuilder, Range, RrfBuilder,
        ScrollPointsBuilder, SparseVectorParamsBuilder, SparseVectorsConfigBuilder, UpsertPointsBuilder, Vector,
        VectorInput, VectorParamsBuilder, VectorsConfigBuilder, VectorsSelector, vector_output, vectors_config,
    },
};
use sleuth_messages::Hit;

use super::{
    Condition, DENSE, FieldType, Lane, PayloadFilter, SPARSE, SearchPlan, VectorIndex,
    points::{
        Candidate, DocState, Point, doc_ids_of, doc_state_from_payload, document_order, hit_from_payload, point_uuid,
    },
};

pub struct ServerIndex {
    client: Qdrant,
    collection: String,
}

/// The gRPC form of a [`PayloadFilter`].
pub fn to_grpc_filter(filter: &PayloadFilter) -> Option<Filter> {
    if filter.is_empty() {
        return None;
    }
    let conditions = filter.must.iter().map(|(path, condition)| match condition {
        Condition::Keyword(values) => GrpcCondition::matches(path.clone(), values.clone()),
        Condition::Integer(values) => GrpcCondition::matches(path.clone(), values.clone()),
        Condition::Bool(b) => GrpcCondition::matches(path.clone(), *b),
        Condition::Range { gt, gte, lt, lte } => {
            GrpcCondition::range(path.clone(), Range { gt: *gt, gte: *gte, lt: *lt, lte: *lte })
        }
        Condition::Readable(keys) => {
            let mut should = vec![GrpcCondition::is_empty(path.clone())];
            if !keys.is_empty() {
                should.push(GrpcCondition::matches(path.clone(), keys.clone()));
            }
            Filter::should(should).into()
        }
    });
    Some(Filter::must(conditions))
}

fn vector_input(lane: &Lane) -> VectorInput {
    match lane {
        Lane::Dense(v) => VectorInput::new_dense(v.clone()),
        Lane::Sparse(s) => VectorInput::new_sparse(s.indices.clone(), s.values.clone()),
    }
}

/// The gRPC form of a [`SearchPlan`] against `collection`.
pub fn to_grpc_query(plan: &SearchPlan, collection: &str) -> anyhow::Result<QueryPoints> {
    let filter = to_grpc_filter(&plan.filter);
    let mut builder = QueryPointsBuilder::new(collection).limit(plan.limit as u64).with_payload(true);
    if plan.with_dense {
        builder = builder.with_vectors(VectorsSelector { names: vec![DENSE.to_string()] });
    }
    if let Some(f) = &filter {
        builder = builder.filter(f.clone());
    }
    if plan.fused() {
        for lane in &plan.lanes {
            let mut prefetch = PrefetchQueryBuilder::default()
                .query(Query::new_nearest(vector_input(lane)))
                .using(lane.vector_name())
                .limit(plan.prefetch_limit as u64);
            if let Some(f) = &filter {
                prefetch = prefetch.filter(f.clone());
            }
            if let Some(t) = plan.threshold_for(lane) {
                prefetch = prefetch.score_threshold(t);
            }
            builder = builder.add_prefetch(prefetch);
        }
        builder = builder.query(Query::new_rrf(RrfBuilder::with_k(plan.rrf_k)));
    } else {
        let lane = plan.lanes.first().context("a search plan needs at least one lane")?;
        builder = builder.query(Query::new_nearest(vector_input(lane))).using(lane.vector_name());
        if let Some(t) = plan.threshold_for(lane) {
            builder = builder.score_threshold(t);
        }
    }
    Ok(builder.build())
}

fn grpc_field_type(ty: FieldType) -> GrpcFieldType {
    match ty {
        FieldType::Keyword => GrpcFieldType::Keyword,
        FieldType::Integer => GrpcFieldType::Integer,
        FieldType::Float => GrpcFieldType::Float,
        FieldType::Bool => GrpcFieldType::Bool,
    }
}

fn json_map(
    payload: std::collections::HashMap<String, qdrant_client::qdrant::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    Payload::from(payload).into()
}

/// The oldest Qdrant server sleuth works with: hybrid search sends a Reciprocal Rank Fusion with its own `k`
/// (`retrieval.rrf_k`), which older servers reject ("Query variant is missing").
pub const MIN_QDRANT: (u64, u64) = (1, 16);

/// `Ok` when a server of `version` (e.g. "1.16.3") answers sleuth's queries.
fn check_version(version: &str) -> anyhow::Result<()> {
    let mut parts = version.trim_start_matches('v').split('.').map(|p| p.parse::<u64>().ok());
    let (major, minor) = (parts.next().flatten(), parts.next().flatten());
    match (major, minor) {
        (Some(major), Some(minor)) if (major, minor) >= MIN_QDRANT => Ok(()),
        (Some(_), Some(_)) => anyhow::bail!(
            "is version {version}; sleuth needs Qdrant {}.{} or newer (its hybrid search uses RRF with a k \
             parameter, which older servers reject)",
            MIN_QDRANT.0,
            MIN_QDRANT.1
        ),
        _ => anyhow::bail!("reports the unreadable version {version:?}"),
    }
}

impl ServerIndex {
    /// Connects to `url` (gRPC, e.g. `http://localhost:6334`) and makes sure the collection and its payload
    /// indexes exist. `dim` is the embedder's vector length; without an embedder (`None`) the collection has
    /// sparse (BM25) vectors alone, so no point carries an empty dense one.
    pub async fn connect(
        url: &str,
        api_key: Option<String>,
        collection: &str,
        dim: Option<usize>,
        indexed: &[(String, FieldType)],
    ) -> anyhow::Result<ServerIndex> {
        // qdrant-client's own check only prints a warning to stdout on every start; sleuth checks the one thing
        // it needs instead (below).
        let mut builder = Qdrant::from_url(url)
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(5))
            .skip_compatibility_check();
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            builder = builder.api_key(key);
        }
        let client = builder.build().with_context(|| format!("invalid Qdrant URL {url}"))?;
        let version = client
            .health_check()
            .await
            .with_context(|| format!("cannot reach Qdrant at {url} (is it running? the gRPC port is usually 6334)"))?
            .version;
        check_version(&version).with_context(|| format!("the Qdrant server at {url}"))?;
        let exists = client
            .collection_exists(collection)
            .await
            .with_context(|| format!("cannot reach Qdrant at {url} (is it running? the gRPC port is usually 6334)"))?;
        // Whether this process made the collection: one it did not make (it existed, or another replica won the
        // race to create it) may have been made for another embedder.
        let mut made = false;
        if !exists {
            let mut sparse = SparseVectorsConfigBuilder::default();
            sparse.add_named_vector_params(SPARSE, SparseVectorParamsBuilder::default().modifier(Modifier::Idf));
            let mut create = CreateCollectionBuilder::new(collection).sparse_vectors_config(sparse);
            if let Some(dim) = dim {
                let mut vectors = VectorsConfigBuilder::default();
                vectors.add_named_vector_params(DENSE, VectorParamsBuilder::new(dim as u64, Distance::Cosine));
                create = create.vectors_config(vectors);
            }
            match client.create_collection(create).await {
                Ok(_) => made = true,
                // Replicas starting together race to create it: one wins, and the others find it made.
                Err(e) if !client.collection_exists(collection).await.unwrap_or(false) => {
                    return Err(anyhow::Error::new(e).context(format!("cannot create collection {collection}")));
                }
                Err(_) => {}
            }
        }
        if let Some(dim) = dim
            && !made
        {
            // The same check as the embedded index's: an embedder whose vectors the collection cannot hold.
            let info = client
                .collection_info(collection)
                .await
                .with_context(|| format!("cannot read the configuration of collection {collection}"))?;
            let stored = info
                .result
                .and_then(|c| c.config)
                .and_then(|c| c.params)
                .and_then(|p| p.vectors_config)
                .and_then(|v| v.config)
                .and_then(|c| match c {
                    vectors_config::Config::ParamsMap(map) => map.map.get(DENSE).map(|p| p.size as usize),
                    vectors_config::Config::Params(_) => None,
                });
            if stored != Some(dim) {
                let had = stored.map_or("no dense vector".to_string(), |d| format!("{d}-dimensional dense vectors"));
                anyhow::bail!(
                    "collection {collection} on {url} was created with {had}, but the embedder makes \
                     {dim}-dimensional ones; delete the collection (or name another one) and ingest again"
                );
            }
        }
        for (path, ty) in indexed {
            client
                .create_field_index(
                    CreateFieldIndexCollectionBuilder::new(collection, path, grpc_field_type(*ty)).wait(true),
                )
                .await
                .with_context(|| format!("cannot create the payload index on {path}"))?;
        }
        Ok(ServerIndex { client, collection: collection.to_string() })
    }

    async fn delete_docs(&self, doc_ids: &[String]) -> anyhow::Result<()> {
        let filter = to_grpc_filter(&PayloadFilter::doc_ids(doc_ids.to_vec())).expect("non-empty filter");
        self.client.delete_points(DeletePointsBuilder::new(&self.collection).points(filter).wait(true)).await?;
        Ok(())
    }
}

#[async_trait]
impl VectorIndex for ServerIndex {
    async fn search(&self, plan: &SearchPlan) -> anyhow::Result<Vec<Candidate>> {
        if plan.lanes.is_empty() {
            return Ok(Vec::new());
        }
        let response =
            self.client.query(to_grpc_query(plan, &self.collection)?).await.context("Qdrant query failed")?;
        Ok(response
            .result
            .into_iter()
            .filter_map(|p| {
                let dense = p.vectors.as_ref().and_then(|v| v.get_vector_by_name(DENSE)).and_then(|v| match v {
                    vector_output::Vector::Dense(DenseVector { data }) => Some(data),
                    _ => None,
                });
                let hit = hit_from_payload(&json_map(p.payload), p.score)?;
                Some(Candidate { hit, dense })
            })
            .collect())
    }

    async fn fetch(&self, filter: &PayloadFilter, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let mut scroll = ScrollPointsBuilder::new(&self.collection).limit(limit as u32).with_payload(true);
        if let Some(f) = to_grpc_filter(filter) {
            scroll = scroll.filter(f);
        }
        let response = self.client.scroll(scroll).await.context("Qdrant scroll failed")?;
        let mut hits: Vec<Hit> =
            response.result.into_iter().filter_map(|r| hit_from_payload(&json_map(r.payload), 1.0)).collect();
        document_order(&mut hits);
        Ok(hits)
    }

    async fn doc_state(&self, doc_id: &str) -> anyhow::Result<Option<DocState>> {
        let id = point_uuid(&format!("{doc_id}#0")).to_string();
        let response = self
            .client
            .get_points(GetPointsBuilder::new(&self.collection, vec![id.into()]).with_payload(true))
            .await
            .context("Qdrant get failed")?;
        Ok(response.result.into_iter().next().and_then(|r| doc_state_from_payload(&json_map(r.payload))))
    }

    async fn replace(&self, points: Vec<Point>) -> anyhow::Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        self.delete_docs(&doc_ids_of(&points)).await?;
        let points: Vec<PointStruct> = points
            .into_iter()
            .map(|p| {
                let mut vectors = NamedVectors::default()
                    .add_vector(SPARSE, Vector::new_sparse(p.sparse.indices.clone(), p.sparse.values.clone()));
                if let Some(dense) = &p.dense {
                    vectors = vectors.add_vector(DENSE, Vector::new_dense(dense.clone()));
                }
                let payload = Payload::try_from(p.payload()).map_err(|e| anyhow::anyhow!("bad payload: {e}"))?;
                Ok(PointStruct::new(p.chunk.point_id().to_string(), vectors, payload))
            })
            .collect::<anyhow::Result<_>>()?;
        self.client
            .upsert_points(UpsertPointsBuilder::new(&self.collection, points).wait(true))
            .await
            .context("Qdrant upsert failed")?;
        Ok(())
    }

    async fn delete(&self, doc_ids: &[String]) -> anyhow::Result<usize> {
        let mut existed = 0;
        for id in doc_ids {
            existed += usize::from(self.doc_state(id).await?.is_some());
        }
        if !doc_ids.is_empty() {
            self.delete_docs(doc_ids).await?;
        }
        Ok(existed)
    }

    async fn flush(&self) -> anyhow::Result<()> {
        // Writes use `wait = true`: the server has applied them when the call returns.
        Ok(())
    }

    async fn count(&self, filter: &PayloadFilter) -> anyhow::Result<usize> {
        let mut request = CountPointsBuilder::new(&self.collection).exact(true);
        if let Some(filter) = to_grpc_filter(filter) {
            request = request.filter(filter);
        }
        let response = self.client.count(request).await.context("Qdrant count failed")?;
        Ok(response.result.map_or(0, |r| r.count as usize))
    }
}

#[cfg(test)]
mod tests {
    use qdrant_client::qdrant::{
        condition::ConditionOneOf, r#match::MatchValue, query::Variant, vector_input::Variant as Input,
    };

    use super::*;
    use crate::index::SparseVector;

    #[test]
    fn servers_older_than_the_parametrised_rrf_are_refused_by_name() {
        assert!(check_version("1.16.3").is_ok());
        assert!(check_version("2.0.0").is_ok());
        let refused = check_version("1.13.6").unwrap_err().to_string();
        assert!(refused.contains("1.13.6") && refused.contains("1.16 or newer"), "{refused}");
        assert!(check_version("dev").is_err());
    }

    fn plan(lanes: Vec<Lane>, filter: PayloadFilter) -> SearchPlan {
        SearchPlan {
            lanes,
            filter,
            prefetch_limit: 40,
            rrf_k: 61,
            limit: 8,
            dense_threshold: Some(0.2),
            with_dense: true,
        }
    }

    fn sparse() -> Lane {
        Lane::Sparse(SparseVector { indices: vec![3, 9], values: vec![1.0, 0.5] })
    }

    #[test]
    fn hybrid_plans_become_two_prefetches_fused_by_rrf_with_k() {
        let q = to_grpc_query(&plan(vec![Lane::Dense(vec![0.1, 0.2]), sparse()], PayloadFilter::default()), "docs")
            .unwrap();
        assert_eq!(q.collection_name, "docs");
        assert_eq!(q.limit, Some(8));
        assert_eq!(q.prefetch.len(), 2);
        assert_eq!(q.prefetch[0].using.as_deref(), Some(DENSE));
        assert_eq!(q.prefetch[0].limit, Some(40));
        assert_eq!(q.prefetch[0].score_threshold, Some(0.2), "the dense lane carries the threshold");
        assert_eq!(q.prefetch[1].using.as_deref(), Some(SPARSE));
        assert_eq!(q.prefetch[1].score_threshold, None, "BM25 is not thresholded");
        match q.prefetch[1].query.as_ref().and_then(|q| q.variant.clone()) {
            Some(Variant::Nearest(v)) => {
                assert!(matches!(v.variant, Some(Input::Sparse(s)) if s.indices == vec![3, 9]))
            }
            other => panic!("sparse prefetch is {other:?}"),
        }
        match q.query.and_then(|q| q.variant) {
            Some(Variant::Rrf(rrf)) => assert_eq!(rrf.k, Some(61)),
            other => panic!("top-level query is {other:?}"),
        }
        assert!(q.with_vectors.is_some());
    }

    #[test]
    fn single_lane_plans_query_the_lane_directly() {
        let q = to_grpc_query(&plan(vec![sparse()], PayloadFilter::default()), "docs").unwrap();
        assert!(q.prefetch.is_empty());
        assert_eq!(q.using.as_deref(), Some(SPARSE));
        assert_eq!(q.score_threshold, None);
        assert!(matches!(q.query.and_then(|q| q.variant), Some(Variant::Nearest(_))));
        let q = to_grpc_query(&plan(vec![Lane::Dense(vec![1.0])], PayloadFilter::default()), "docs").unwrap();
        assert_eq!((q.using.as_deref(), q.score_threshold), (Some(DENSE), Some(0.2)));
    }

    #[test]
    fn every_condition_becomes_a_grpc_condition_on_its_path() {
        let filter = PayloadFilter {
            must: vec![
                ("doc_id".into(), Condition::Keyword(vec!["a".into(), "b".into()])),
                ("metadata.year".into(), Condition::Integer(vec![2001])),
                ("metadata.draft".into(), Condition::Bool(false)),
                ("metadata.score".into(), Condition::Range { gt: None, gte: Some(0.5), lt: None, lte: None }),
            ],
        };
        let q = to_grpc_query(&plan(vec![Lane::Dense(vec![1.0]), sparse()], filter), "docs").unwrap();
        let f = q.filter.expect("top-level filter");
        assert_eq!(q.prefetch[0].filter.as_ref(), Some(&f), "prefetches are filtered too");
        let fields: Vec<_> = f
            .must
            .iter()
            .map(|c| match &c.condition_one_of {
                Some(ConditionOneOf::Field(field)) => {
                    (field.key.clone(), field.r#match.clone().and_then(|m| m.match_value), field.range)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(fields[0].0, "doc_id");
        assert!(matches!(&fields[0].1, Some(MatchValue::Keywords(k)) if k.strings == vec!["a", "b"]));
        assert!(matches!(&fields[1].1, Some(MatchValue::Integers(i)) if i.integers == vec![2001]));
        assert!(matches!(&fields[2].1, Some(MatchValue::Boolean(false))));
        assert_eq!(fields[3].0, "metadata.score");
        assert_eq!(fields[3].2.map(|r| r.gte), Some(Some(0.5)));
        assert!(to_grpc_filter(&PayloadFilter::default()).is_none());
    }

    #[test]
    fn what_a_tenant_may_read_is_a_nested_should_of_no_readers_or_one_of_its_keys() {
        let alpha = crate::access::Access::of(
            Some(&sleuth_messages::Principal::tenant("ALPHA")),
            &std::collections::BTreeMap::from([("g".to_string(), vec!["alpha".to_string()])]),
        );
        let f = to_grpc_filter(&PayloadFilter::default().readable_by(&alpha)).expect("a filter");
        let Some(ConditionOneOf::Filter(nested)) = &f.must[0].condition_one_of else { panic!("{f:?}") };
        assert!(matches!(&nested.should[0].condition_one_of, Some(ConditionOneOf::IsEmpty(e)) if e.key == "readers"));
        let Some(ConditionOneOf::Field(field)) = &nested.should[1].condition_one_of else { panic!("{nested:?}") };
        let keys = field.r#match.clone().and_then(|m| m.match_value);
        assert!(matches!(keys, Some(MatchValue::Keywords(k)) if k.strings == ["group:g", "tenant:alpha"]), "{field:?}");
        // No principal: shared documents only; an operator's count: no condition at all.
        let shared = to_grpc_filter(&PayloadFilter::default().readable_by(&crate::access::Access::shared())).unwrap();
        let Some(ConditionOneOf::Filter(nested)) = &shared.must[0].condition_one_of else { panic!("{shared:?}") };
        assert_eq!(nested.should.len(), 1);
        assert!(to_grpc_filter(&PayloadFilter::default().readable_by(&crate::access::Access::everything())).is_none());
    }
}
