//! The graph's model: an entity (a document is one too, its node named by its id), a typed edge, the way edges are
//! followed, and the protocol's reference to a node.

use serde::{Deserialize, Serialize};
use sleuth_messages::{EntityRef, EntityType, JsonMap};
use uuid::Uuid;

/// Namespace of the UUIDs given to documents, so a document's graph node is a function of its id.
const DOCUMENT_NAMESPACE: Uuid = Uuid::from_u128(0x5e0d_7a11_9c1b_4d6e_8f00_d0c5_0000_0001);

/// The node id an entity reference names: documents by their id, other entities by their UUID.
pub fn node_of(entity: &EntityRef) -> Result<Uuid, String> {
    if entity.entity_type.is_document() {
        return Ok(document_node(&entity.id));
    }
    Uuid::parse_str(entity.id.trim()).map_err(|_| {
        format!(
            "{} id {:?} is not a UUID; resolve the entity with a qdrant_search first",
            entity.entity_type, entity.id
        )
    })
}

/// The protocol's reference to a stored entity: documents by their `doc_id`.
pub fn entity_ref(entity: &Entity) -> Option<EntityRef> {
    let entity_type = EntityType::parse(&entity.entity_type)?;
    let id = if entity_type.is_document() { entity.doc_id()?.to_string() } else { entity.id.to_string() };
    Some(EntityRef { entity_type, id })
}

/// The graph node of document `doc_id`.
pub fn document_node(doc_id: &str) -> Uuid {
    Uuid::new_v5(&DOCUMENT_NAMESPACE, doc_id.as_bytes())
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    pub id: Uuid,
    pub entity_type: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub popularity: f64,
    #[serde(default)]
    pub attributes: JsonMap,
    /// Who may read it (`access::Ownership::readers`); empty: shared with everyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

impl Entity {
    /// The node of a document: its title is its name, its id is kept in `attributes.doc_id`, its readers are the
    /// document's.
    pub fn document(doc_id: &str, title: &str, readers: Vec<String>) -> Entity {
        let mut attributes = JsonMap::new();
        attributes.insert("doc_id".into(), doc_id.into());
        Entity {
            id: document_node(doc_id),
            entity_type: EntityType::DOCUMENT.as_str().into(),
            name: title.into(),
            aliases: Vec::new(),
            popularity: 0.0,
            attributes,
            readers,
        }
    }

    /// What identifies the row's content, for idempotent ingestion.
    pub fn content_hash(&self) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(serde_json::to_vec(self).unwrap_or_default()))
    }

    /// The `doc_id` of a document node.
    pub fn doc_id(&self) -> Option<&str> {
        self.attributes.get("doc_id").and_then(|v| v.as_str())
    }
}

/// One directed, typed edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub src: Uuid,
    pub dst: Uuid,
    pub relation: String,
    #[serde(default)]
    pub attributes: JsonMap,
    #[serde(default = "Edge::default_weight")]
    pub weight: f64,
}

impl Edge {
    fn default_weight() -> f64 {
        1.0
    }
}

/// Which way edges are followed from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Out,
    In,
    #[default]
    Both,
}

impl Direction {
    pub fn reversed(self) -> Direction {
        match self {
            Direction::Out => Direction::In,
            Direction::In => Direction::Out,
            Direction::Both => Direction::Both,
        }
    }
    pub fn follows_out(self) -> bool {
        self != Direction::In
    }
    pub fn follows_in(self) -> bool {
        self != Direction::Out
    }
}
