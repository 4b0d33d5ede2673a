//! The citable statements a graph result carries (`GraphResult.evidence`): "Monkey D. Luffy appears in One
//! Piece" for each reached entity, the whole chain for each path. They become cards, so an answer can cite the
//! relation itself, not only the documents around it.

use std::collections::HashMap;

use serde_json::json;
use sleuth_messages::{EntityType, Hit, JsonMap};
use uuid::Uuid;

use super::{
    Entity, entity_ref,
    primitives::{Hop, Path, Reached},
};

/// Most statements one graph result contributes as cards.
pub const MAX_STATEMENTS: usize = 10;

/// How a relation reads in a sentence, from the edge's source to its destination.
pub fn relation_phrase(relation: &str) -> String {
    match relation {
        "appears_in" => "appears in".into(),
        "co_appears" => "appears alongside".into(),
        "prequel" => "is a prequel to".into(),
        "sequel" => "is a sequel to".into(),
        "spinoff" => "is a spin-off of".into(),
        "adapted_from" => "is adapted from".into(),
        "same_studio" => "was made by the same studio as".into(),
        "shared_staff" => "shares staff with".into(),
        "shares_franchise" => "shares a franchise with".into(),
        "mentions" => "mentions".into(),
        other => format!("is related ({}) to", other.replace('_', " ")),
    }
}

fn describe(entity: &Entity) -> String {
    match EntityType::parse(&entity.entity_type).filter(|t| !t.is_document()) {
        Some(t) => format!("{} ({t})", entity.name),
        None => entity.name.clone(),
    }
}

/// "Monkey D. Luffy (character) appears in One Piece (anime)." for one hop between `a` and `b` along the walk.
fn hop_sentence(a: &Entity, hop: &Hop, b: &Entity) -> String {
    let (src, dst) = if hop.forward { (a, b) } else { (b, a) };
    format!("{} {} {}.", describe(src), relation_phrase(&hop.relation), describe(dst))
}

fn is_document(entity: &Entity) -> bool {
    entity.entity_type == EntityType::DOCUMENT.as_str()
}

fn statement(id: String, about: &Entity, title: String, text: String, score: f32, extra: JsonMap) -> Option<Hit> {
    let reference = entity_ref(about)?;
    let mut metadata = JsonMap::new();
    metadata.insert("entity_type".into(), json!(reference.entity_type.as_str()));
    metadata.insert("source".into(), json!("graph"));
    metadata.extend(extra);
    Some(Hit { id, doc_id: reference.id, title, text, score, metadata })
}

/// One statement per reached entity (documents excepted), with the edge that first reached it.
pub fn reached_statements(reached: &[Reached], names: &HashMap<Uuid, Entity>) -> Vec<Hit> {
    reached
        .iter()
        .filter_map(|r| {
            let (from, hop) = r.via.as_ref()?;
            let (a, b) = (names.get(from)?, names.get(&r.node)?);
            if is_document(a) || is_document(b) {
                return None;
            }
            let (src, dst) = if hop.forward { (from, &r.node) } else { (&r.node, from) };
            let text = hop_sentence(a, hop, b);
            let extra =
                JsonMap::from([("relation".to_string(), json!(hop.relation)), ("depth".to_string(), json!(r.depth))]);
            statement(
                format!("graph:{src}:{}:{dst}", hop.relation),
                b,
                text.trim_end_matches('.').to_string(),
                text,
                r.weight as f32,
                extra,
            )
        })
        .take(MAX_STATEMENTS)
        .collect()
}

/// One statement per path: each hop as a sentence, about the path's last node.
pub fn path_statements(paths: &[Path], names: &HashMap<Uuid, Entity>) -> Vec<Hit> {
    paths
        .iter()
        .filter_map(|p| {
            let nodes: Vec<&Entity> = p.nodes.iter().map(|n| names.get(n)).collect::<Option<_>>()?;
            let (first, last) = (nodes.first()?, nodes.last()?);
            let text = p
                .hops
                .iter()
                .zip(nodes.windows(2))
                .map(|(hop, pair)| hop_sentence(pair[0], hop, pair[1]))
                .collect::<Vec<_>>()
                .join(" ");
            let key = p
                .nodes
                .iter()
                .map(Uuid::to_string)
                .chain(p.hops.iter().map(|h| h.relation.clone()))
                .collect::<Vec<_>>()
                .join(":");
            let id = format!("path:{}", Uuid::new_v5(&Uuid::NAMESPACE_OID, key.as_bytes()));
            let title = format!(
                "{} → {} ({} hop{})",
                first.name,
                last.name,
                p.hops.len(),
                if p.hops.len() == 1 { "" } else { "s" }
            );
            let extra = JsonMap::from([
                (
                    "path".to_string(),
                    json!(p.nodes.iter().filter_map(|n| names.get(n)).filter_map(entity_ref).collect::<Vec<_>>()),
                ),
                ("rels".to_string(), json!(p.hops.iter().map(|h| h.relation.clone()).collect::<Vec<_>>())),
            ]);
            statement(id, last, title, text, 1.0 / p.hops.len().max(1) as f32, extra)
        })
        .take(MAX_STATEMENTS)
        .collect()
}

/// The comparison's summary as one statement about both entities, keyed by the pair.
pub fn comparison_statement(a: &Entity, b: &Entity, summary: &str) -> Option<Hit> {
    let extra = JsonMap::from([("compared".to_string(), json!([entity_ref(a), entity_ref(b)]))]);
    statement(
        format!("compare:{}:{}", a.id, b.id),
        a,
        format!("{} vs {}", a.name, b.name),
        format!("{summary}."),
        1.0,
        extra,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(name: &str, t: &str) -> Entity {
        Entity {
            id: Uuid::new_v5(&Uuid::NAMESPACE_OID, name.as_bytes()),
            entity_type: t.into(),
            name: name.into(),
            aliases: vec![],
            popularity: 0.0,
            attributes: JsonMap::new(),
            readers: Vec::new(),
        }
    }

    #[test]
    fn a_path_reads_hop_by_hop_along_each_edge_direction() {
        let (luffy, op, nami) =
            (entity("Monkey D. Luffy", "character"), entity("One Piece", "anime"), entity("Nami", "character"));
        let names: HashMap<Uuid, Entity> = [&luffy, &op, &nami].into_iter().map(|e| (e.id, e.clone())).collect();
        let path = Path {
            nodes: vec![luffy.id, op.id, nami.id],
            hops: vec![
                Hop { relation: "appears_in".into(), forward: true },
                Hop { relation: "appears_in".into(), forward: false },
            ],
        };
        let hits = path_statements(&[path], &names);
        assert_eq!(
            hits[0].text,
            "Monkey D. Luffy (character) appears in One Piece (anime). Nami (character) appears in One Piece (anime)."
        );
        assert_eq!(hits[0].title, "Monkey D. Luffy → Nami (2 hops)");
        assert_eq!(hits[0].doc_id, nami.id.to_string());
        assert_eq!(hits[0].metadata["entity_type"], json!("character"));

        let reached = Reached {
            node: op.id,
            depth: 1,
            via: Some((luffy.id, Hop { relation: "appears_in".into(), forward: true })),
            weight: 1.0,
        };
        let hits = reached_statements(&[reached], &names);
        assert_eq!(hits[0].text, "Monkey D. Luffy (character) appears in One Piece (anime).");
        assert_eq!(hits[0].id, format!("graph:{}:appears_in:{}", luffy.id, op.id));
    }
}
