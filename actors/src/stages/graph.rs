//! Graph: executes a `pg_graph` action with the bounded primitives (`graph/primitives.rs`). The intent is
//! validated against the relation allowlist, its caps are clamped to the server's, and its entity references
//! are bound as parameters; an invalid intent becomes a failed action, no match is an empty result.

use std::{collections::HashMap, sync::Arc, time::Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use sleuth_messages::{
    Action, ActionResult, EntityRef, EntityType, ErrorKind, ErrorResponse, GraphIntent, GraphPath, GraphQueryType,
    GraphResult, JsonMap, LoopState, Stage, WorkItem,
};
use uuid::Uuid;

use super::StageLogic;
use crate::{
    access::Access,
    config::GraphConfig,
    graph::{
        Direction, Entity, GraphError, GraphStore, entity_ref, node_of,
        primitives::{self, Bounds, Path, Reached, Traversal},
    },
    guard, machine,
};

pub struct GraphStage {
    pub store: Arc<dyn GraphStore>,
    pub config: GraphConfig,
    /// `tenants.groups`: with the request's owner, what its traversals may read.
    pub groups: std::collections::BTreeMap<String, Vec<String>>,
}

#[async_trait]
impl StageLogic for GraphStage {
    fn stage(&self) -> Stage {
        Stage::Graph
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        let slot = item.envelope.step;
        let Some(Action::PgGraph { graph_intent }) = machine::current_action(state, slot) else {
            anyhow::bail!("slot {slot} of turn {} is not a pg_graph", state.turn);
        };
        let started = Instant::now();
        let access = Access::of(state.owner.as_ref(), &self.groups);
        let result = match execute(self.store.as_ref(), &self.config, graph_intent, &access).await {
            Ok(result) => ActionResult::Graph(result),
            Err(Failure::Invalid(message)) => {
                ActionResult::Failed(ErrorResponse::new(ErrorKind::InvalidInput, message))
            }
            Err(Failure::Graph(GraphError::Timeout(after))) => ActionResult::Failed(ErrorResponse::new(
                ErrorKind::Timeout,
                format!("graph query timed out after {after:?}"),
            )),
            // The database is down (retries spent or circuit open): recorded, and the planner moves to documents.
            Err(Failure::Graph(GraphError::Backend(err))) => match guard::unavailable(&err) {
                Some(down) => ActionResult::Failed(ErrorResponse::new(ErrorKind::Unavailable, down.to_string())),
                None => return Err(err),
            },
        };
        tracing::info!(request_id = %state.request_id, turn = state.turn, slot, results = result.hit_count(), "graph traversed");
        Ok(machine::apply_outcome(state, slot, result, started.elapsed().as_millis() as u64)?)
    }
}

pub enum Failure {
    /// The intent itself is wrong: recorded as a failed action.
    Invalid(String),
    Graph(GraphError),
}

impl From<GraphError> for Failure {
    fn from(err: GraphError) -> Self {
        Failure::Graph(err)
    }
}

/// A validated intent: resolved node ids, the traversal, and caps clamped to the server's.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub start: Uuid,
    pub end: Option<Uuid>,
    pub traversal: Traversal,
    pub bounds: Bounds,
}

/// Validates `intent` against the vocabulary and clamps its caps. Filters may hold `direction`
/// (`out`, `in`, `both`) and `entity_type` (a type or a list of them, for the nodes to keep).
pub fn check(config: &GraphConfig, intent: &GraphIntent, access: &Access) -> Result<Checked, String> {
    let relations = if intent.edge_types.is_empty() {
        config.relations.clone()
    } else {
        for r in &intent.edge_types {
            if !config.relations.contains(r) {
                return Err(format!("edge type {r:?} is not allowed; allowed: {}", config.relations.join(", ")));
            }
        }
        intent.edge_types.clone()
    };
    let mut direction = Direction::Both;
    let mut node_types = Vec::new();
    for (key, value) in &intent.filters {
        match key.as_str() {
            "direction" => {
                direction = serde_json::from_value(value.clone())
                    .map_err(|_| "filter direction must be \"out\", \"in\" or \"both\"".to_string())?
            }
            "entity_type" => {
                let list = match value {
                    Value::Array(items) => items.clone(),
                    single => vec![single.clone()],
                };
                for item in list {
                    let t = item
                        .as_str()
                        .and_then(EntityType::parse)
                        .ok_or_else(|| format!("filter entity_type: {item} is not an entity type name"))?;
                    node_types.push(t.as_str().to_string());
                }
            }
            other => return Err(format!("unknown graph filter {other:?}; allowed: direction, entity_type")),
        }
    }
    let start = node_of(&intent.start)?;
    let end = intent.end.as_ref().map(node_of).transpose()?;
    if matches!(intent.query_type, GraphQueryType::Path | GraphQueryType::Compare) && end.is_none() {
        return Err(format!("{:?} needs an end entity", intent.query_type).to_lowercase());
    }
    let bounds = Bounds {
        max_hops: intent.max_hops.clamp(1, config.max_hops),
        max_fanout_per_hop: intent.limits.max_fanout_per_hop.clamp(1, config.max_fanout_per_hop),
        max_results: intent.limits.max_results.clamp(1, config.max_results),
    };
    let traversal = Traversal { relations, direction, node_types, readable: access.clone() };
    Ok(Checked { start, end, traversal, bounds })
}

/// Runs one graph intent for `access` and describes the result with the nodes' names and types.
pub async fn execute(
    store: &dyn GraphStore,
    config: &GraphConfig,
    intent: &GraphIntent,
    access: &Access,
) -> Result<GraphResult, Failure> {
    let checked = check(config, intent, access).map_err(Failure::Invalid)?;
    let Checked { start, end, traversal, bounds } = &checked;
    let mut meta = JsonMap::new();
    meta.insert("caps".into(), json!({"max_hops": bounds.max_hops, "max_fanout_per_hop": bounds.max_fanout_per_hop, "max_results": bounds.max_results}));
    meta.insert("backend".into(), json!(store.backend()));
    let (reached, paths): (Vec<Reached>, Vec<Path>) = match intent.query_type {
        GraphQueryType::Neighbors => (primitives::neighbors(store, *start, traversal, *bounds).await?, Vec::new()),
        GraphQueryType::KHop => (primitives::k_hop(store, *start, traversal, *bounds).await?, Vec::new()),
        GraphQueryType::Path => {
            (Vec::new(), primitives::path(store, *start, end.unwrap_or(*start), traversal, *bounds).await?)
        }
        GraphQueryType::Compare => {
            let Some(cmp) = primitives::compare(store, *start, end.unwrap_or(*start), traversal, *bounds).await? else {
                return Ok(GraphResult {
                    summary: "no such entities to compare".into(),
                    paths: vec![],
                    node_ids: vec![],
                    count: 0,
                    meta,
                    evidence: vec![],
                });
            };
            let names =
                names_of(store, cmp.shared.iter().chain(&cmp.only_a).chain(&cmp.only_b).copied().collect(), access)
                    .await?;
            let list = |ids: &[Uuid]| {
                ids.iter()
                    .filter_map(|id| names.get(id))
                    .filter_map(|e| Some(node_json(e, &entity_ref(e)?)))
                    .collect::<Vec<_>>()
            };
            meta.insert("attributes".into(), json!(cmp.attribute_diff()));
            meta.insert("shared_neighbors".into(), json!(list(&cmp.shared)));
            meta.insert("only_start_neighbors".into(), json!(list(&cmp.only_a)));
            meta.insert("only_end_neighbors".into(), json!(list(&cmp.only_b)));
            meta.insert("direct_relations".into(), json!(cmp.direct_relations));
            let summary = format!(
                "{} vs {}: {} shared neighbours ({}), {} attributes differ{}",
                cmp.a.name,
                cmp.b.name,
                cmp.shared.len(),
                cmp.shared
                    .iter()
                    .filter_map(|id| names.get(id))
                    .map(|e| e.name.as_str())
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(", "),
                meta["attributes"]["different"].as_object().map_or(0, |m| m.len()),
                if cmp.direct_relations.is_empty() {
                    String::new()
                } else {
                    format!(", directly related by {}", cmp.direct_relations.join(", "))
                }
            );
            let node_ids = [&cmp.a, &cmp.b].into_iter().filter_map(entity_ref).collect();
            let evidence =
                crate::graph::statements::comparison_statement(&cmp.a, &cmp.b, &summary).into_iter().collect();
            return Ok(GraphResult { summary, paths: vec![], node_ids, count: 2, meta, evidence });
        }
    };
    let mut ids: Vec<Uuid> = vec![*start];
    ids.extend(reached.iter().map(|r| r.node));
    ids.extend(paths.iter().flat_map(|p| p.nodes.iter().copied()));
    let names = names_of(store, ids, access).await?;
    let start_name = names.get(start).map_or_else(|| intent.start.id.clone(), |e| e.name.clone());
    let mut nodes_meta = Vec::new();
    let mut node_ids = Vec::new();
    for r in &reached {
        let Some(entity) = names.get(&r.node) else { continue };
        let Some(reference) = entity_ref(entity) else { continue };
        let mut node = node_json(entity, &reference);
        node["depth"] = json!(r.depth);
        if let Some((from, hop)) = &r.via {
            node["via"] = json!({"from": names.get(from).map(|e| e.name.clone()), "relation": hop.relation, "forward": hop.forward});
        }
        node["weight"] = json!(r.weight);
        nodes_meta.push(node);
        node_ids.push(reference);
    }
    let graph_paths: Vec<GraphPath> = paths
        .iter()
        .map(|p| GraphPath {
            nodes: p.nodes.iter().filter_map(|n| names.get(n)).filter_map(entity_ref).collect(),
            rels: p.hops.iter().map(|h| h.relation.clone()).collect(),
        })
        .collect();
    let described: Vec<String> = paths.iter().map(|p| describe_path(p, &names)).collect();
    if !described.is_empty() {
        meta.insert("path_names".into(), json!(described));
    }
    meta.insert("nodes".into(), json!(nodes_meta));
    let summary = match intent.query_type {
        GraphQueryType::Path if paths.is_empty() => format!("no path within {} hops", bounds.max_hops),
        GraphQueryType::Path => described.join("; "),
        _ if node_ids.is_empty() => format!("{start_name}: no neighbours"),
        _ => format!(
            "{start_name}: {}",
            nodes_meta.iter().filter_map(|n| n["name"].as_str()).take(20).collect::<Vec<_>>().join(", ")
        ),
    };
    let count = if paths.is_empty() { node_ids.len() } else { graph_paths.len() } as u32;
    let mut evidence = crate::graph::statements::path_statements(&paths, &names);
    evidence.extend(crate::graph::statements::reached_statements(&reached, &names));
    Ok(GraphResult { summary, paths: graph_paths, node_ids, count, meta, evidence })
}

async fn names_of(
    store: &dyn GraphStore,
    mut ids: Vec<Uuid>,
    access: &Access,
) -> Result<HashMap<Uuid, Entity>, GraphError> {
    ids.sort();
    ids.dedup();
    Ok(store.entities(&ids, access).await?.into_iter().map(|e| (e.id, e)).collect())
}

fn node_json(entity: &Entity, reference: &EntityRef) -> Value {
    json!({"id": reference.id, "entity_type": entity.entity_type, "name": entity.name})
}

/// "Luffy -[appears_in]-> One Piece <-[appears_in]- Nami".
fn describe_path(path: &Path, names: &HashMap<Uuid, Entity>) -> String {
    let name = |id: &Uuid| names.get(id).map_or_else(|| id.to_string(), |e| e.name.clone());
    let mut out = path.nodes.first().map(name).unwrap_or_default();
    for (hop, node) in path.hops.iter().zip(path.nodes.iter().skip(1)) {
        if hop.forward {
            out.push_str(&format!(" -[{}]-> {}", hop.relation, name(node)));
        } else {
            out.push_str(&format!(" <-[{}]- {}", hop.relation, name(node)));
        }
    }
    out
}
