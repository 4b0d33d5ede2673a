//! The deterministic answer to an entity question (seed 000 §9): the chain of relations the graph found, each
//! statement cited by its card, then what the reached and resolved entities are. The structured chain goes in
//! `evidence.paths`; `source_entities` are every node it went through, `result_entities` what was asked for.

use serde_json::{Value, json};
use sleuth_messages::{Action, ActionResult, Card, EntityRef, GraphQueryType, LoopState};

use super::resolve::{entity_question, resolved};
use crate::{entities, entity_types::EntityTypes, text};

/// Statements of reached entities an answer quotes.
const MAX_RELATIONS: usize = 5;

/// One sentence of the answer, cited by its card when it has one.
pub struct Sentence<'a> {
    pub card: Option<&'a Card>,
    pub text: String,
}

pub struct EntityAnswer<'a> {
    pub sentences: Vec<Sentence<'a>>,
    pub paths: Vec<Value>,
    pub source_entities: Vec<EntityRef>,
    pub result_entities: Vec<EntityRef>,
}

fn push_unique(refs: &mut Vec<EntityRef>, r: EntityRef) {
    if !refs.contains(&r) {
        refs.push(r);
    }
}

fn entity_of(card: &Card) -> EntityRef {
    EntityRef { entity_type: entities::type_of(&card.hit), id: card.hit.doc_id.clone() }
}

/// The card of the entity collection about `entity`, if one was retrieved.
fn entity_card<'a>(state: &'a LoopState, entity: &EntityRef) -> Option<&'a Card> {
    state.cards.iter().find(|c| {
        c.hit.doc_id == entity.id
            && !c.hit.metadata.contains_key("source")
            && entities::type_of(&c.hit) == entity.entity_type
    })
}

fn first_sentence(card: &Card) -> String {
    text::sentences(&card.hit.text).first().map_or_else(|| card.hit.text.clone(), |s| s.trim().to_string())
}

/// The answer, or `None` when the question is not an entity question or none of its names was resolved.
pub fn entity_answer<'a>(state: &'a LoopState, types: &EntityTypes) -> Option<EntityAnswer<'a>> {
    let question = entity_question(state, types)?;
    let resolved = resolved(state, &question);
    if resolved.is_empty() {
        return None;
    }
    let mut answer = EntityAnswer {
        sentences: Vec::new(),
        paths: Vec::new(),
        source_entities: resolved.clone(),
        result_entities: Vec::new(),
    };
    let from_graph = |c: &&Card| c.hit.metadata.get("source").and_then(Value::as_str) == Some("graph");

    // The chains between the resolved entities, or the fact that there is none within the cap.
    for card in state.cards.iter().filter(from_graph).filter(|c| c.hit.metadata.contains_key("path")) {
        let nodes: Vec<EntityRef> = serde_json::from_value(card.hit.metadata["path"].clone()).unwrap_or_default();
        for node in &nodes {
            push_unique(&mut answer.source_entities, node.clone());
        }
        answer.paths.push(
            json!({"nodes": nodes, "rels": card.hit.metadata.get("rels"), "text": card.hit.text, "card": card.n}),
        );
        answer.sentences.push(Sentence { card: Some(card), text: card.hit.text.clone() });
    }
    for turn in &state.turns {
        for outcome in &turn.outcomes {
            let (Some(Action::PgGraph { graph_intent }), ActionResult::Graph(result)) =
                (turn.step.actions.get(outcome.slot as usize), &outcome.result)
            else {
                continue;
            };
            if graph_intent.query_type == GraphQueryType::Path && result.paths.is_empty() {
                answer.sentences.push(Sentence {
                    card: None,
                    text: format!(
                        "The graph has no chain of at most {} relations between them.",
                        graph_intent.max_hops
                    ),
                });
            }
        }
    }
    if !answer.paths.is_empty() || question.wanted.is_none() {
        answer.result_entities = resolved.clone();
    }

    // What the resolved entities are related to, of the asked type when there is one.
    let relations: Vec<&Card> = state
        .cards
        .iter()
        .filter(from_graph)
        .filter(|c| c.hit.metadata.contains_key("relation"))
        .filter(|c| question.wanted.as_ref().is_none_or(|t| entities::type_of(&c.hit) == *t))
        .take(MAX_RELATIONS)
        .collect();
    for card in &relations {
        answer.sentences.push(Sentence { card: Some(card), text: card.hit.text.clone() });
        push_unique(&mut answer.source_entities, entity_of(card));
        if question.wanted.is_some() {
            push_unique(&mut answer.result_entities, entity_of(card));
        }
    }

    // Then what the answer's entities are: the reached ones first, then the resolved ones.
    let described: Vec<EntityRef> = answer.result_entities.iter().chain(&resolved).cloned().collect();
    let mut quoted: Vec<u32> = Vec::new();
    for entity in described.iter().filter(|e| !e.entity_type.is_document()) {
        if let Some(card) = entity_card(state, entity)
            && !quoted.contains(&card.n)
            && quoted.len() < 3
        {
            quoted.push(card.n);
            answer.sentences.push(Sentence { card: Some(card), text: first_sentence(card) });
        }
    }
    if answer.result_entities.is_empty() {
        answer.result_entities = resolved;
    }
    Some(answer)
}
