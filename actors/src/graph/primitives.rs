//! The bounded graph primitives of seed 000 §3.2 (`neighbors`, `k_hop`, `path`, `compare`), built hop by hop on
//! [`GraphStore::expand`]: one batched query per hop, capped fan-out per node, and early termination. `path`
//! expands from both ends, the smaller frontier first, and stops at the first hop where they meet, so a hub
//! costs one capped query instead of a recursive CTE that cannot stop early.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::json;
use sleuth_messages::JsonMap;
use uuid::Uuid;

use super::{Adjacent, Direction, Entity, Expand, GraphError, GraphStore};
use crate::access::Access;

/// The limits one primitive runs under, already clamped to the server's hard caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_hops: u32,
    pub max_fanout_per_hop: u32,
    pub max_results: u32,
}

impl From<&crate::config::GraphConfig> for Bounds {
    /// The configured hard caps.
    fn from(g: &crate::config::GraphConfig) -> Bounds {
        Bounds { max_hops: g.max_hops, max_fanout_per_hop: g.max_fanout_per_hop, max_results: g.max_results }
    }
}

/// Most nodes one side of a traversal may hold; past it, expansion stops (a hub-dense graph stays bounded).
pub const MAX_VISITED: usize = 20_000;

/// Which edges a traversal follows, and for whom: it only steps on nodes `readable` may read.
#[derive(Debug, Clone, PartialEq)]
pub struct Traversal {
    pub relations: Vec<String>,
    pub direction: Direction,
    pub node_types: Vec<String>,
    pub readable: Access,
}

impl Traversal {
    fn step(&self, fanout: u32) -> Expand {
        Expand {
            relations: self.relations.clone(),
            direction: self.direction,
            node_types: self.node_types.clone(),
            fanout,
            readable: self.readable.clone(),
        }
    }
}

/// One traversed edge, as seen from the node it was reached from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hop {
    pub relation: String,
    /// `true` when the stored edge points along the walk.
    pub forward: bool,
}

/// A chain of nodes and the hops between them (`hops.len() == nodes.len() - 1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Path {
    pub nodes: Vec<Uuid>,
    pub hops: Vec<Hop>,
}

/// A node reached by a traversal, with its distance and how it was first reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    pub node: Uuid,
    pub depth: u32,
    pub via: Option<(Uuid, Hop)>,
    pub weight: f64,
}

/// The one-hop neighbourhood of `start`, at most `max_results` of it, best weighted first.
pub async fn neighbors(
    store: &dyn GraphStore,
    start: Uuid,
    traversal: &Traversal,
    bounds: Bounds,
) -> Result<Vec<Reached>, GraphError> {
    let adjacent = store.expand(&[start], &traversal.step(bounds.max_results)).await?;
    let mut seen = BTreeSet::new();
    Ok(adjacent
        .into_iter()
        .filter(|a| a.neighbor != start && seen.insert(a.neighbor))
        .take(bounds.max_results as usize)
        .map(|a| reached(&a, 1))
        .collect())
}

fn reached(a: &Adjacent, depth: u32) -> Reached {
    Reached {
        node: a.neighbor,
        depth,
        via: Some((a.node, Hop { relation: a.relation.clone(), forward: a.outgoing })),
        weight: a.weight,
    }
}

/// Breadth-first expansion from `start` up to `max_hops`, `max_fanout_per_hop` neighbours per node per hop,
/// stopping once `max_results` nodes are reached.
pub async fn k_hop(
    store: &dyn GraphStore,
    start: Uuid,
    traversal: &Traversal,
    bounds: Bounds,
) -> Result<Vec<Reached>, GraphError> {
    let step = traversal.step(bounds.max_fanout_per_hop);
    let mut visited: BTreeSet<Uuid> = BTreeSet::from([start]);
    let mut out: Vec<Reached> = Vec::new();
    let mut frontier = vec![start];
    for depth in 1..=bounds.max_hops {
        if frontier.is_empty() || out.len() >= bounds.max_results as usize {
            break;
        }
        let mut next = Vec::new();
        for a in store.expand(&frontier, &step).await? {
            if out.len() >= bounds.max_results as usize || visited.len() >= MAX_VISITED {
                break;
            }
            if visited.insert(a.neighbor) {
                next.push(a.neighbor);
                out.push(reached(&a, depth));
            }
        }
        next.sort();
        frontier = next;
    }
    Ok(out)
}

/// The walk back from `node` to the side's root, through first-discovery parents.
fn walk_back(node: Uuid, parents: &HashMap<Uuid, (Uuid, Hop)>) -> (Vec<Uuid>, Vec<Hop>) {
    let mut nodes = vec![node];
    let mut hops = Vec::new();
    let mut at = node;
    while let Some((parent, hop)) = parents.get(&at) {
        nodes.push(*parent);
        hops.push(hop.clone());
        at = *parent;
    }
    (nodes, hops)
}

/// Shortest explanation paths from `start` to `end` of at most `max_hops` edges: bidirectional breadth-first
/// search, at most `max_results` paths (one per meeting node), none when the two are not connected within reach.
pub async fn path(
    store: &dyn GraphStore,
    start: Uuid,
    end: Uuid,
    traversal: &Traversal,
    bounds: Bounds,
) -> Result<Vec<Path>, GraphError> {
    if start == end {
        // No step is taken, so the readers check that every expansion makes is made here: a path to itself
        // must not confirm an entity its requester may not read.
        let readable = !store.entities(&[start], &traversal.readable).await?.is_empty();
        return Ok(if readable { vec![Path { nodes: vec![start], hops: Vec::new() }] } else { Vec::new() });
    }
    let forward_step = traversal.step(bounds.max_fanout_per_hop);
    let backward_step = Expand { direction: traversal.direction.reversed(), ..forward_step.clone() };
    // Per side: parents of every visited node (the root has none) and the current frontier.
    let mut fwd: HashMap<Uuid, (Uuid, Hop)> = HashMap::new();
    let mut bwd: HashMap<Uuid, (Uuid, Hop)> = HashMap::new();
    let mut fwd_seen: BTreeSet<Uuid> = BTreeSet::from([start]);
    let mut bwd_seen: BTreeSet<Uuid> = BTreeSet::from([end]);
    let mut fwd_frontier = vec![start];
    let mut bwd_frontier = vec![end];
    let mut hops_used = 0;
    while hops_used < bounds.max_hops && !fwd_frontier.is_empty() && !bwd_frontier.is_empty() {
        hops_used += 1;
        let forward = fwd_frontier.len() <= bwd_frontier.len();
        let (frontier, step, parents, seen, other_seen) = if forward {
            (&mut fwd_frontier, &forward_step, &mut fwd, &mut fwd_seen, &bwd_seen)
        } else {
            (&mut bwd_frontier, &backward_step, &mut bwd, &mut bwd_seen, &fwd_seen)
        };
        let mut next = Vec::new();
        let mut meetings = Vec::new();
        for a in store.expand(frontier, step).await? {
            if seen.len() >= MAX_VISITED {
                break;
            }
            if seen.insert(a.neighbor) {
                // Seen from the end, an outgoing edge of `node` points against the walk from start to end.
                let hop = Hop { relation: a.relation.clone(), forward: a.outgoing == forward };
                parents.insert(a.neighbor, (a.node, hop));
                next.push(a.neighbor);
                if other_seen.contains(&a.neighbor) {
                    meetings.push(a.neighbor);
                }
            }
        }
        if !meetings.is_empty() {
            meetings.sort();
            let mut paths: Vec<Path> = Vec::new();
            for meeting in meetings {
                let (mut nodes, mut hops) = walk_back(meeting, &fwd);
                nodes.reverse();
                hops.reverse();
                let (tail, tail_hops) = walk_back(meeting, &bwd);
                nodes.extend(tail.into_iter().skip(1));
                hops.extend(tail_hops);
                let path = Path { nodes, hops };
                if !paths.contains(&path) {
                    paths.push(path);
                }
                if paths.len() >= bounds.max_results as usize {
                    break;
                }
            }
            return Ok(paths);
        }
        next.sort();
        *frontier = next;
    }
    Ok(Vec::new())
}

/// Structured differences between two entities: attributes that agree or differ, and their shared and
/// distinct one-hop neighbours (by relation). `None` when either entity does not exist.
pub async fn compare(
    store: &dyn GraphStore,
    start: Uuid,
    end: Uuid,
    traversal: &Traversal,
    bounds: Bounds,
) -> Result<Option<Comparison>, GraphError> {
    let entities = store.entities(&[start, end], &traversal.readable).await?;
    let (Some(a), Some(b)) = (entities.iter().find(|e| e.id == start), entities.iter().find(|e| e.id == end)) else {
        return Ok(None);
    };
    let step = traversal.step(bounds.max_results);
    let adjacent = store.expand(&[start, end], &step).await?;
    let around = |who: Uuid| -> BTreeMap<Uuid, BTreeSet<String>> {
        let mut map: BTreeMap<Uuid, BTreeSet<String>> = BTreeMap::new();
        for x in adjacent.iter().filter(|x| x.node == who && x.neighbor != start && x.neighbor != end) {
            map.entry(x.neighbor).or_default().insert(x.relation.clone());
        }
        map
    };
    let (of_a, of_b) = (around(start), around(end));
    let shared: Vec<Uuid> = of_a.keys().filter(|n| of_b.contains_key(n)).copied().collect();
    let only_a: Vec<Uuid> = of_a.keys().filter(|n| !of_b.contains_key(n)).copied().collect();
    let only_b: Vec<Uuid> = of_b.keys().filter(|n| !of_a.contains_key(n)).copied().collect();
    let directly: Vec<String> =
        adjacent.iter().filter(|x| x.node == start && x.neighbor == end).map(|x| x.relation.clone()).collect();
    Ok(Some(Comparison { a: a.clone(), b: b.clone(), shared, only_a, only_b, direct_relations: directly }))
}

/// What [`compare`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub a: Entity,
    pub b: Entity,
    pub shared: Vec<Uuid>,
    pub only_a: Vec<Uuid>,
    pub only_b: Vec<Uuid>,
    pub direct_relations: Vec<String>,
}

impl Comparison {
    /// The attribute diff, as `GraphResult.meta` carries it.
    pub fn attribute_diff(&self) -> JsonMap {
        let keys: BTreeSet<&String> = self.a.attributes.keys().chain(self.b.attributes.keys()).collect();
        let (mut same, mut different, mut only_a, mut only_b) =
            (JsonMap::new(), JsonMap::new(), JsonMap::new(), JsonMap::new());
        for key in keys {
            match (self.a.attributes.get(key), self.b.attributes.get(key)) {
                (Some(x), Some(y)) if x == y => {
                    same.insert(key.clone(), x.clone());
                }
                (Some(x), Some(y)) => {
                    different.insert(key.clone(), json!([x, y]));
                }
                (Some(x), None) => {
                    only_a.insert(key.clone(), x.clone());
                }
                (None, Some(y)) => {
                    only_b.insert(key.clone(), y.clone());
                }
                (None, None) => {}
            }
        }
        let mut diff = JsonMap::new();
        diff.insert("type".into(), json!([self.a.entity_type, self.b.entity_type]));
        diff.insert("same".into(), json!(same));
        diff.insert("different".into(), json!(different));
        diff.insert("only_start".into(), json!(only_a));
        diff.insert("only_end".into(), json!(only_b));
        diff
    }
}
