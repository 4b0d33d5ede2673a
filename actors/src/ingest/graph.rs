//! `sleuth ingest graph ENTITIES.jsonl EDGES.jsonl`: reads typed entities and edges, checks every line (known
//! entity type, allowlisted relation, no dangling edge) before anything is written, then writes all of it in one
//! transaction. Ids may be UUIDs or any stable string key (hashed to a UUID), so hand-written files stay readable.
//! An entity line may name its `owner` tenant and reader `groups` (`crate::access`), as may the command line for
//! every entity of the file; an entity without an owner is shared with every tenant.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use sleuth_messages::{EntityType, JsonMap};
use uuid::Uuid;

use crate::{
    access::Ownership,
    config::GraphConfig,
    graph::{Edge, Entity, GraphStore, GraphWrite},
    retrieval::Retriever,
};

const KEY_NAMESPACE: Uuid = Uuid::from_u128(0x5e0d_7a11_9c1b_4d6e_8f00_d0c5_0000_0002);

/// The UUID an entity key names: itself when it is a UUID, else a hash of it.
pub fn entity_id(key: &str) -> Uuid {
    Uuid::parse_str(key.trim()).unwrap_or_else(|_| Uuid::new_v5(&KEY_NAMESPACE, key.trim().as_bytes()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityLine {
    id: String,
    #[serde(alias = "entity_type")]
    r#type: String,
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    popularity: f64,
    #[serde(default)]
    attributes: JsonMap,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeLine {
    src: String,
    dst: String,
    relation: String,
    #[serde(default)]
    attributes: JsonMap,
    #[serde(default = "one")]
    weight: f64,
}

fn one() -> f64 {
    1.0
}

/// Totals of one graph ingestion.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GraphSummary {
    pub entities: usize,
    pub unchanged: usize,
    pub edges: usize,
    /// Entities whose names were (re-)indexed in the entity collection.
    pub indexed: usize,
}

impl std::fmt::Display for GraphSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} entities ({} unchanged), {} edges; {} names indexed",
            self.entities, self.unchanged, self.edges, self.indexed
        )
    }
}

/// What two checked files hold. `unresolved` are edge endpoints not defined in the entities file, with the line
/// that names them: they must already be in the graph.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub entities: Vec<Entity>,
    pub edges: Vec<Edge>,
    pub unresolved: Vec<(Uuid, String)>,
}

/// Parses and checks both files; errors name the file and line. Nothing is written. Every entity gets `owned`'s
/// owner and groups besides its own line's (the two may not name different owners).
pub fn parse(
    entities_source: &str,
    entities_text: &str,
    edges_source: &str,
    edges_text: &str,
    (relations, types): (&[String], &[String]),
    owned: &Ownership,
) -> anyhow::Result<Parsed> {
    let mut entities = Vec::new();
    let mut keys: HashMap<Uuid, String> = HashMap::new();
    for (i, line) in entities_text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{entities_source}:{}", i + 1);
        let e: EntityLine = serde_json::from_str(line).with_context(|| format!("{at}: not a valid entity"))?;
        let entity_type = EntityType::parse(&e.r#type).with_context(|| {
            format!(
                "{at}: entity type {:?} is not a lowercase identifier ([a-z][a-z0-9_]*, at most 32 bytes)",
                e.r#type
            )
        })?;
        if !types.is_empty() && !entity_type.is_document() && !types.iter().any(|t| t == entity_type.as_str()) {
            bail!("{at}: entity type {:?} is not in graph.entity_types ({})", e.r#type, types.join(", "));
        }
        if e.name.trim().is_empty() {
            bail!("{at}: entity {:?} has an empty name", e.id);
        }
        if !e.popularity.is_finite() {
            bail!("{at}: popularity must be a finite number");
        }
        let readers = Ownership::new(e.owner.as_deref(), &e.groups)
            .and_then(|own| own.merge(owned))
            .map_err(|why| anyhow::anyhow!("{at}: {why}"))?
            .readers();
        let id = entity_id(&e.id);
        if let Some(previous) = keys.insert(id, at.clone()) {
            bail!("{at}: entity {:?} is already defined at {previous}", e.id);
        }
        entities.push(Entity {
            id,
            entity_type: entity_type.as_str().into(),
            name: e.name.trim().into(),
            aliases: e.aliases,
            popularity: e.popularity,
            attributes: e.attributes,
            readers,
        });
    }
    let mut edges = Vec::new();
    let mut unresolved = Vec::new();
    for (i, line) in edges_text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{edges_source}:{}", i + 1);
        let e: EdgeLine = serde_json::from_str(line).with_context(|| format!("{at}: not a valid edge"))?;
        if !relations.contains(&e.relation) {
            bail!("{at}: relation {:?} is not in graph.relations ({})", e.relation, relations.join(", "));
        }
        if !e.weight.is_finite() {
            bail!("{at}: weight must be a finite number");
        }
        let (src, dst) = (entity_id(&e.src), entity_id(&e.dst));
        for (end, key) in [(src, &e.src), (dst, &e.dst)] {
            if !keys.contains_key(&end) {
                unresolved.push((end, format!("{at}: edge endpoint {key:?}")));
            }
        }
        edges.push(Edge { src, dst, relation: e.relation, attributes: e.attributes, weight: e.weight });
    }
    Ok(Parsed { entities, edges, unresolved })
}

/// The bundled demo graph (anime, manga and their characters), written for this project.
pub const DEMO_ENTITIES: &str = include_str!("../../data/demo_graph/entities.jsonl");
pub const DEMO_EDGES: &str = include_str!("../../data/demo_graph/edges.jsonl");

/// The demo graph's entities, parsed.
pub fn demo_entities() -> anyhow::Result<Vec<Entity>> {
    Ok(parse("demo entities", DEMO_ENTITIES, "demo edges", "", (&[], &[]), &Ownership::shared())?.entities)
}

/// Loads the bundled demo graph into `store` and the entity collection of `retriever`.
pub async fn ingest_demo(
    store: &dyn GraphStore,
    retriever: &Retriever,
    relations: &[String],
) -> anyhow::Result<GraphSummary> {
    let sources = Sources { entities: ("demo entities", DEMO_ENTITIES), edges: ("demo edges", DEMO_EDGES) };
    ingest_text(store, Some(retriever), sources, (relations, &[]), &Ownership::shared(), false).await
}

/// Ingests both files into `store`, then indexes the entities' names in `retriever`'s entity collection: the
/// graph is written all or nothing, and both steps skip what is unchanged. Entities are shared unless their lines
/// name an owner.
pub async fn ingest(
    store: &dyn GraphStore,
    retriever: Option<&Retriever>,
    entities_path: &std::path::Path,
    edges_path: &std::path::Path,
    config: &GraphConfig,
    progress: bool,
) -> anyhow::Result<GraphSummary> {
    let paths = (entities_path, edges_path);
    ingest_owned(store, retriever, paths, config, &Ownership::shared(), progress).await
}

/// [`ingest`], every entity owned by `owned`'s tenant and readable by its groups (`--tenant`, `--groups`).
pub async fn ingest_owned(
    store: &dyn GraphStore,
    retriever: Option<&Retriever>,
    (entities_path, edges_path): (&std::path::Path, &std::path::Path),
    config: &GraphConfig,
    owned: &Ownership,
    progress: bool,
) -> anyhow::Result<GraphSummary> {
    let read = |p: &std::path::Path| std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()));
    let (entities_name, edges_name) = (entities_path.display().to_string(), edges_path.display().to_string());
    let (entities_text, edges_text) = (read(entities_path)?, read(edges_path)?);
    let sources = Sources { entities: (&entities_name, &entities_text), edges: (&edges_name, &edges_text) };
    ingest_text(store, retriever, sources, (&config.relations, &config.entity_types), owned, progress).await
}

/// Two JSONL texts and the names their errors cite.
pub struct Sources<'a> {
    pub entities: (&'a str, &'a str),
    pub edges: (&'a str, &'a str),
}

async fn ingest_text(
    store: &dyn GraphStore,
    retriever: Option<&Retriever>,
    sources: Sources<'_>,
    (relations, types): (&[String], &[String]),
    owned: &Ownership,
    progress: bool,
) -> anyhow::Result<GraphSummary> {
    let bar = if progress { ProgressBar::new_spinner() } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar.set_message("checking entities and edges");
    let Parsed { entities, edges, unresolved } =
        parse(sources.entities.0, sources.entities.1, sources.edges.0, sources.edges.1, (relations, types), owned)?;
    // Endpoints not defined in this file must already be in the graph.
    if !unresolved.is_empty() {
        let ids: Vec<Uuid> = unresolved.iter().map(|(id, _)| *id).collect::<HashSet<_>>().into_iter().collect();
        let known: HashSet<Uuid> = store.content_hashes(&ids).await?.into_iter().map(|(id, _)| id).collect();
        if let Some((_, at)) = unresolved.iter().find(|(id, _)| !known.contains(id)) {
            bail!("{at} names no entity in this file or in the graph (dangling edge)");
        }
    }
    let before: HashMap<Uuid, String> =
        store.content_hashes(&entities.iter().map(|e| e.id).collect::<Vec<_>>()).await?.into_iter().collect();
    let unchanged = entities.iter().filter(|e| before.get(&e.id) == Some(&e.content_hash())).count();
    let mut summary = GraphSummary { entities: entities.len(), unchanged, edges: edges.len(), indexed: 0 };
    bar.set_message(format!("writing {} entities and {} edges", entities.len(), edges.len()));
    let write = GraphWrite { entities, edges, ..Default::default() };
    store.write(&write).await.context("cannot write the graph")?;
    if let Some(retriever) = retriever {
        bar.set_message(format!("indexing the names of {} entities", write.entities.len()));
        summary.indexed =
            retriever.index_entities(&write.entities).await.context("cannot index the entities' names")?;
    }
    bar.finish_and_clear();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relations() -> Vec<String> {
        vec!["appears_in".into(), "co_appears".into()]
    }

    #[test]
    fn bad_lines_are_named() {
        let ents =
            "{\"id\":\"a\",\"type\":\"anime\",\"name\":\"A\"}\n{\"id\":\"b\",\"type\":\"Robot!\",\"name\":\"B\"}\n";
        let err =
            parse("e.jsonl", ents, "r.jsonl", "", (&relations(), &[]), &Ownership::shared()).unwrap_err().to_string();
        assert!(err.contains("e.jsonl:2") && err.contains("Robot!"), "{err}");
        // Any identifier is a type, unless graph.entity_types limits them.
        let ents =
            "{\"id\":\"a\",\"type\":\"city\",\"name\":\"A\"}\n{\"id\":\"b\",\"type\":\"robot\",\"name\":\"B\"}\n";
        assert_eq!(
            parse("e.jsonl", ents, "r.jsonl", "", (&relations(), &[]), &Ownership::shared()).unwrap().entities.len(),
            2
        );
        let err = parse("e.jsonl", ents, "r.jsonl", "", (&relations(), &["city".into()]), &Ownership::shared())
            .unwrap_err()
            .to_string();
        assert!(err.contains("e.jsonl:2") && err.contains("graph.entity_types (city)"), "{err}");

        let ents = "{\"id\":\"a\",\"type\":\"anime\",\"name\":\"A\"}\n";
        let edges = "{\"src\":\"a\",\"dst\":\"a\",\"relation\":\"appears_in\"}\n{\"src\":\"a\",\"dst\":\"a\",\"relation\":\"hates\"}\n";
        let err = parse("e.jsonl", ents, "r.jsonl", edges, (&relations(), &[]), &Ownership::shared())
            .unwrap_err()
            .to_string();
        assert!(err.contains("r.jsonl:2") && err.contains("hates"), "{err}");
    }

    #[test]
    fn an_entity_line_names_its_owner_and_the_command_line_gives_one_to_the_rest() {
        let ents = "{\"id\":\"a\",\"type\":\"city\",\"name\":\"A\",\"owner\":\"alpha\",\"groups\":[\"g\"]}\n\
                    {\"id\":\"b\",\"type\":\"city\",\"name\":\"B\"}\n";
        let rel = relations();
        let parsed = parse("e", ents, "r", "", (&rel, &[]), &Ownership::shared()).unwrap();
        assert_eq!(parsed.entities[0].readers, ["tenant:alpha", "group:g"]);
        assert!(parsed.entities[1].readers.is_empty());
        let alpha = Ownership::new(Some("ALPHA"), &[]).unwrap();
        let parsed = parse("e", ents, "r", "", (&rel, &[]), &alpha).unwrap();
        assert_eq!(parsed.entities[1].readers, ["tenant:alpha"]);
        let beta = Ownership::new(Some("beta"), &[]).unwrap();
        let err = parse("e", ents, "r", "", (&rel, &[]), &beta).unwrap_err().to_string();
        assert!(err.contains("e:1") && err.contains("alpha"), "{err}");
    }

    #[test]
    fn endpoints_outside_the_file_are_left_to_check_against_the_graph() {
        let ents = "{\"id\":\"a\",\"type\":\"anime\",\"name\":\"A\"}\n";
        let edges = "{\"src\":\"a\",\"dst\":\"zz\",\"relation\":\"appears_in\"}\n";
        let Parsed { edges, unresolved, .. } =
            parse("e", ents, "r", edges, (&relations(), &[]), &Ownership::shared()).unwrap();
        assert_eq!(edges.len(), 1);
        assert_eq!(unresolved.len(), 1);
        assert!(unresolved[0].1.contains("r:1"), "{unresolved:?}");
        assert_eq!(entity_id("zz"), unresolved[0].0);
    }
}
