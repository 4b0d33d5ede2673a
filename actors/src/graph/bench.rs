//! `sleuth bench-graph`: generates a power-law graph (preferential attachment, so a few hubs hold many edges),
//! loads it into the configured graph store, and reports p50/p99 latency of `path` (max_hops 4), `neighbors`
//! and the search lane over random starts, pairs and prefixes.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng, rngs::StdRng};
use uuid::Uuid;

use super::{
    Direction, Edge, Entity, GraphStore, GraphWrite,
    primitives::{self, Bounds, Traversal},
};

/// Edges each new node attaches with (Barabási–Albert m).
const ATTACH: usize = 5;

const SYLLABLES: [&str; 16] =
    ["ka", "ri", "to", "mi", "su", "ne", "ho", "ra", "lu", "fi", "za", "mo", "shi", "an", "el", "or"];

fn bench_node(i: usize) -> Uuid {
    Uuid::from_u128(0xbe9c_0000_0000_0000_0000_0000_0000_0000 + i as u128)
}

/// A generated graph of `edges` edges: node `i` attaches to `ATTACH` earlier nodes picked in proportion to
/// their degree. Deterministic for a seed.
pub fn power_law(edges: usize, seed: u64) -> (Vec<Entity>, Vec<Edge>) {
    let nodes = edges / ATTACH + ATTACH + 1;
    let mut rng = StdRng::seed_from_u64(seed);
    // Every edge endpoint, once per edge: sampling from it is sampling by degree.
    let mut ends: Vec<usize> = (0..=ATTACH).collect();
    let mut out = Vec::with_capacity(edges);
    for i in (ATTACH + 1)..nodes {
        let mut picked: Vec<usize> = Vec::with_capacity(ATTACH);
        while picked.len() < ATTACH {
            let target = ends[rng.random_range(0..ends.len())];
            if !picked.contains(&target) {
                picked.push(target);
            }
        }
        for target in picked {
            if out.len() == edges {
                break;
            }
            out.push(Edge {
                src: bench_node(i),
                dst: bench_node(target),
                relation: "co_appears".into(),
                attributes: Default::default(),
                weight: 1.0,
            });
            ends.push(i);
            ends.push(target);
        }
    }
    let mut degree = vec![0u32; nodes];
    for e in &out {
        degree[(e.src.as_u128() - bench_node(0).as_u128()) as usize] += 1;
        degree[(e.dst.as_u128() - bench_node(0).as_u128()) as usize] += 1;
    }
    let entities = (0..nodes)
        .map(|i| {
            let name: String =
                (0..3).map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())]).collect::<String>() + &format!(" {i}");
            Entity {
                id: bench_node(i),
                entity_type: "character".into(),
                name,
                aliases: vec![],
                popularity: degree[i] as f64,
                attributes: Default::default(),
                readers: Vec::new(),
            }
        })
        .collect();
    (entities, out)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn line(name: &str, mut samples: Vec<Duration>, found: usize) -> String {
    samples.sort();
    format!(
        "{name:<10} n={:<5} p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms  non-empty {found}",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    )
}

/// Loads the graph (unless `load` is false: it is already there) and runs `queries` of each kind.
pub async fn run(
    store: &dyn GraphStore,
    edges: usize,
    queries: usize,
    load: bool,
    bounds: Bounds,
) -> anyhow::Result<String> {
    let (entities, edge_list) = power_law(edges, 7);
    let nodes = entities.len();
    let mut report = format!(
        "graph: {} nodes, {} edges (preferential attachment, m={ATTACH}), backend {}\n",
        nodes,
        edge_list.len(),
        store.backend()
    );
    if load {
        let started = Instant::now();
        for chunk in entities.chunks(50_000) {
            store.write(&GraphWrite { entities: chunk.to_vec(), ..Default::default() }).await?;
        }
        for chunk in edge_list.chunks(100_000) {
            store.write(&GraphWrite { edges: chunk.to_vec(), ..Default::default() }).await?;
        }
        report.push_str(&format!("load: {:.1} s\n", started.elapsed().as_secs_f64()));
    }
    let max_degree = entities.iter().map(|e| e.popularity as u64).max().unwrap_or(0);
    report.push_str(&format!("largest hub: {max_degree} edges\n"));
    let traversal = Traversal {
        relations: vec!["co_appears".into()],
        direction: Direction::Both,
        node_types: vec![],
        readable: crate::access::Access::shared(),
    };
    let mut rng = StdRng::seed_from_u64(11);
    let (mut path_t, mut path_found) = (Vec::new(), 0);
    let (mut hood_t, mut hood_found) = (Vec::new(), 0);
    let (mut search_t, mut search_found) = (Vec::new(), 0);
    for _ in 0..queries {
        let (a, b) = (bench_node(rng.random_range(0..nodes)), bench_node(rng.random_range(0..nodes)));
        let started = Instant::now();
        let paths = primitives::path(store, a, b, &traversal, Bounds { max_hops: 4, ..bounds }).await?;
        path_t.push(started.elapsed());
        path_found += usize::from(!paths.is_empty());

        let started = Instant::now();
        let around = primitives::neighbors(store, a, &traversal, bounds).await?;
        hood_t.push(started.elapsed());
        hood_found += usize::from(!around.is_empty());

        let prefix: String = (0..2).map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())]).collect();
        let started = Instant::now();
        let hits = store.search(&prefix, None, 10, &crate::access::Access::shared()).await?;
        search_t.push(started.elapsed());
        search_found += usize::from(!hits.is_empty());
    }
    report.push_str(&line("path", path_t, path_found));
    report.push('\n');
    report.push_str(&line("neighbors", hood_t, hood_found));
    report.push('\n');
    report.push_str(&line("search", search_t, search_found));
    report.push('\n');
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_graph_has_the_asked_edges_and_hubs() {
        let (entities, edges) = power_law(5_000, 1);
        assert_eq!(edges.len(), 5_000);
        let max = entities.iter().map(|e| e.popularity).fold(0.0, f64::max);
        let mean = 2.0 * edges.len() as f64 / entities.len() as f64;
        assert!(max > 8.0 * mean, "preferential attachment makes hubs: max degree {max}, mean {mean}");
    }
}
