//! What a hit says of the entity it is about, and how a name is written in prose: the pieces of the entity
//! collection's and the mention linker's conventions that the deterministic agents read.

use serde_json::Value;
use sleuth_messages::{EntityType, Hit};

/// The names a hit of the entity collection answers to: its title and aliases.
pub fn names_of(hit: &Hit) -> Vec<String> {
    let mut names = vec![hit.title.clone()];
    if let Some(aliases) = hit.metadata.get("aliases").and_then(Value::as_array) {
        names.extend(aliases.iter().filter_map(Value::as_str).map(str::to_string));
    }
    names
}

/// The entity type a hit is about: `metadata.entity_type`, or a document.
pub fn type_of(hit: &Hit) -> EntityType {
    hit.metadata.get("entity_type").and_then(Value::as_str).and_then(EntityType::parse).unwrap_or(EntityType::DOCUMENT)
}

/// The strings a name is written as in prose: itself, and without a trailing disambiguation
/// ("Algiers (film)" → "Algiers") or a title after a comma ("Frederick I, Holy Roman Emperor" → "Frederick I").
pub fn surface_forms(name: &str) -> Vec<String> {
    let name = name.trim();
    let mut forms = vec![name.to_string()];
    if let Some(open) = name.rfind(" (")
        && name.ends_with(')')
    {
        forms.push(name[..open].trim().to_string());
    }
    let base = forms.last().cloned().unwrap_or_default();
    if let Some((head, _)) = base.split_once(", ")
        && head.split_whitespace().count() >= 2
    {
        forms.push(head.trim().to_string());
    }
    forms.dedup();
    forms
}
