//! The entity types a deployment's graph holds: those declared in `graph.entity_types` and those found in the
//! graph that was ingested. Intake, the planner, the grader and the synthesizer read a question's words against
//! them ("Which city …", "the manga Berserk"); no stage names a type of its own.

use std::sync::{Arc, RwLock};

use sleuth_messages::EntityType;

/// A set of entity types, documents excluded, in name order. Empty when the graph holds only documents: then no
/// question is an entity question, and the entity lane is skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntityTypes(Vec<EntityType>);

impl EntityTypes {
    /// The types named in `names` that are valid type names; `document` and duplicates are dropped.
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> EntityTypes {
        let mut types: Vec<EntityType> =
            names.into_iter().filter_map(|n| EntityType::parse(n.as_ref())).filter(|t| !t.is_document()).collect();
        types.sort();
        types.dedup();
        EntityTypes(types)
    }

    /// These types and `other`'s.
    pub fn union(&self, other: &EntityTypes) -> EntityTypes {
        EntityTypes::new(self.0.iter().chain(&other.0).map(EntityType::as_str))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &EntityType> {
        self.0.iter()
    }

    pub fn contains(&self, t: &EntityType) -> bool {
        self.0.contains(t)
    }

    /// The type a word of a question names, singular or plural, any case: "Cities" is `city` when the graph has
    /// cities.
    pub fn word(&self, word: &str) -> Option<EntityType> {
        let word = word.to_lowercase();
        let ies = word.strip_suffix("ies").map(|stem| format!("{stem}y"));
        let forms = [Some(word.as_str()), ies.as_deref(), word.strip_suffix("es"), word.strip_suffix('s')];
        forms.into_iter().flatten().find_map(|w| self.0.iter().find(|t| t.as_str() == w)).cloned()
    }
}

impl std::fmt::Display for EntityTypes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(EntityType::as_str).collect();
        write!(f, "[{}]", names.join(", "))
    }
}

/// The types a process knows, shared by its stages. It only grows: a process that does not open the graph
/// learns the types the deployment's graph processes announce (`store::graph_types`), even after it started.
#[derive(Debug, Clone, Default)]
pub struct KnownTypes(Arc<RwLock<Arc<EntityTypes>>>);

impl KnownTypes {
    pub fn new(types: EntityTypes) -> KnownTypes {
        KnownTypes(Arc::new(RwLock::new(Arc::new(types))))
    }

    /// The types known now.
    pub fn get(&self) -> Arc<EntityTypes> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds `types` to those known; `true` when that taught this process a new type.
    pub fn add(&self, types: &EntityTypes) -> bool {
        let mut known = self.0.write().unwrap_or_else(|e| e.into_inner());
        let union = known.union(types);
        let grew = union != **known;
        if grew {
            *known = Arc::new(union);
        }
        grew
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_names_a_type_in_the_singular_or_the_plural() {
        let types = EntityTypes::new(["city", "anime", "manga", "document", "person", "Bad Type", "city"]);
        assert_eq!(types.iter().map(EntityType::as_str).collect::<Vec<_>>(), ["anime", "city", "manga", "person"]);
        let named = |w: &str| types.word(w).map(|t| t.as_str().to_string());
        assert_eq!(named("Cities").as_deref(), Some("city"));
        assert_eq!(named("mangas").as_deref(), Some("manga"));
        assert_eq!(named("anime").as_deref(), Some("anime"));
        assert_eq!(named("persons").as_deref(), Some("person"));
        assert_eq!(named("series"), None);
        assert_eq!(named("documents"), None);
        assert!(EntityTypes::default().word("city").is_none());
    }
}
