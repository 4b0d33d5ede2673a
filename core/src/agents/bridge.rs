//! Multi-hop bridging for the deterministic agents: which entities, named in the retrieved cards, does the
//! question need next? "When did Lothair II's mother die?" retrieves Lothair II, whose card says "son of …
//! Ermengarde of Tours"; Ermengarde of Tours is the bridge to follow.

use sleuth_messages::{
    Action, ActionResult, EntityRef, EntityType, GraphIntent, GraphLimits, GraphQueryType, JsonMap, LoopState,
    SearchIntent, TurnRecord,
};

use crate::analysis::chain;
use crate::text;

/// True when the question asks about something it describes rather than names ("Lothair II's mother", "the
/// city where X was born"): the described entity is a bridge the loop must find first.
pub fn needs_bridge(state: &LoopState) -> bool {
    chain_links(state) > 0
}

/// How many bridges the question chains before its answer: what intake read (see [`chain::links`]), or, in a state
/// written before intake recorded it, the same read of the rewritten question.
pub fn chain_links(state: &LoopState) -> usize {
    state.analysis.chain_links.map_or_else(|| chain::links(&state.analysis.rewritten), |links| links as usize)
}

/// The related entities named in one anchor card: a card about one of the question's entities.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeGroup {
    pub anchor: String,
    pub names: Vec<String>,
}

/// Stems that mark a sentence as relevant: the question's own words that are not part of a name it uses
/// ("directed by X" answers "the director of"; no list of relation words is consulted).
fn relation_stems(state: &LoopState) -> Vec<String> {
    let a = &state.analysis;
    let mut stems: Vec<String> = a
        .keywords
        .iter()
        .filter(|k| !a.entities.iter().any(|e| text::mentions(e, k)))
        .map(|k| text::stem(k).to_string())
        .collect();
    stems.sort();
    stems.dedup();
    stems
}

/// For each anchor card (best first), the names in its relevant sentences that the question does not name.
pub fn bridge_groups(state: &LoopState) -> Vec<BridgeGroup> {
    let a = &state.analysis;
    let stems = relation_stems(state);
    let about = |title: &str| a.entities.iter().any(|e| text::mentions(title, e) || text::mentions(e, title));
    let mut anchors: Vec<_> = state.cards.iter().filter(|c| a.entities.is_empty() || about(&c.hit.title)).collect();
    anchors.sort_by(|x, y| y.hit.score.total_cmp(&x.hit.score));
    anchors.truncate(if a.entities.is_empty() { 1 } else { 4 });
    let mut groups: Vec<BridgeGroup> = Vec::new();
    for card in anchors {
        // A document cut into chunks is one anchor: the names of all its retrieved chunks count.
        let group = match groups.iter().position(|g| g.anchor == card.hit.title) {
            Some(i) => i,
            None => {
                groups.push(BridgeGroup { anchor: card.hit.title.clone(), names: Vec::new() });
                groups.len() - 1
            }
        };
        let names = &mut groups[group].names;
        for sentence in text::sentences(&card.hit.text) {
            let words: Vec<&str> = sentence.split_whitespace().collect();
            let is_trigger = |w: &str| {
                text::tokens(w)
                    .iter()
                    .map(|t| text::stem(t))
                    .any(|t| stems.iter().any(|s| t == s || t.starts_with(s.as_str()) && s.len() >= 4))
            };
            let Some(trigger) = words.iter().position(|w| is_trigger(w)) else { continue };
            // The related entity usually follows the word that names the relation: "son of X", "directed by X".
            let after = words[trigger..].join(" ");
            let before = words[..trigger].join(" ");
            for name in text::name_spans(&after).into_iter().chain(text::name_spans(&before).into_iter().rev()) {
                let known = a.entities.iter().any(|e| text::mentions(e, &name) || text::mentions(&name, e))
                    || text::mentions(&card.hit.title, &name);
                if !known && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    groups
}

/// Neighbours one graph expansion may return per anchor.
const GRAPH_NEIGHBOURS: u32 = 50;

/// Bridge documents fetched per anchor in one search.
const BRIDGES_PER_ANCHOR: usize = 2;

/// A card to expand through the graph: a document the question names.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    pub doc_id: String,
    pub title: String,
}

/// The documents a search fetches by id (its `doc_id` filter), in the order it names them.
fn fetched_by_id(intent: &SearchIntent) -> Vec<String> {
    intent
        .filters
        .get("doc_id")
        .and_then(|v| v.as_array())
        .map(|ids| ids.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The documents `action` fetches by id: none unless it is a search restricted to `doc_id`s.
pub fn fetches(action: &Action) -> Vec<String> {
    match action {
        Action::QdrantSearch { search_intent } => fetched_by_id(search_intent),
        _ => Vec::new(),
    }
}

/// The documents fetched by id in `turns`.
fn fetched_in(turns: &[TurnRecord]) -> Vec<String> {
    turns.iter().flat_map(|t| &t.step.actions).flat_map(fetches).collect()
}

/// True once a fetch of bridge documents by id found one: the graph's mention links took a hop.
pub fn fetched_a_bridge(state: &LoopState) -> bool {
    state.turns.iter().any(|t| {
        t.outcomes.iter().any(|o| {
            o.result.hit_count() > 0 && t.step.actions.get(o.slot as usize).is_some_and(|a| !fetches(a).is_empty())
        })
    })
}

/// Documents whose mention links were already expanded, and documents already fetched by id.
fn explored(state: &LoopState) -> (Vec<String>, Vec<String>) {
    let (mut expanded, mut fetched) = (Vec::new(), Vec::new());
    for action in state.turns.iter().flat_map(|t| &t.step.actions) {
        match action {
            Action::PgGraph { graph_intent } => expanded.push(graph_intent.start.id.clone()),
            Action::QdrantSearch { search_intent } => fetched.extend(fetched_by_id(search_intent)),
            _ => {}
        }
    }
    (expanded, fetched)
}

/// The documents a multi-hop chain went through, in the order the loop reached them: each `pg_graph` start
/// document, then the documents fetched by id.
pub fn chain_documents(state: &LoopState) -> Vec<String> {
    let mut docs: Vec<String> = Vec::new();
    for action in state.turns.iter().flat_map(|t| &t.step.actions) {
        let ids = match action {
            Action::PgGraph { graph_intent } if graph_intent.start.entity_type == EntityType::DOCUMENT => {
                vec![graph_intent.start.id.clone()]
            }
            Action::QdrantSearch { search_intent } => fetched_by_id(search_intent),
            _ => Vec::new(),
        };
        for id in ids {
            if !docs.contains(&id) {
                docs.push(id);
            }
        }
    }
    docs
}

/// The anchors the chain expands next, at most two, none expanded before. Its first hop starts from the
/// documents the question names ([`named_anchors`]); each later hop, while the question chains more links than
/// the loop has followed, from the best document each fetch of the last hop returned.
pub fn graph_anchors(state: &LoopState) -> Vec<Anchor> {
    let (expanded, _) = explored(state);
    let hops = fetch_turns(state);
    let mut anchors = match hops.last() {
        None => named_anchors(state),
        Some(&last) if hops.len() < chain_links(state).min(MAX_HOPS) => best_fetched(state, last),
        Some(_) => Vec::new(),
    };
    anchors.retain(|x| !expanded.contains(&x.doc_id));
    anchors.truncate(sleuth_messages::MAX_PARALLEL_ACTIONS);
    anchors
}

/// Most bridges one chain follows (issue: chains of up to four hops).
const MAX_HOPS: usize = 3;

/// The indexes of the turns that fetched bridges by id, in order: one per hop followed.
fn fetch_turns(state: &LoopState) -> Vec<usize> {
    state
        .turns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.step.actions.iter().any(|a| !fetches(a).is_empty()))
        .map(|(i, _)| i)
        .collect()
}

/// The best document each fetch of turn `turn` returned: where the chain goes on from.
fn best_fetched(state: &LoopState, turn: usize) -> Vec<Anchor> {
    let record = &state.turns[turn];
    record
        .outcomes
        .iter()
        .filter(|o| record.step.actions.get(o.slot as usize).is_some_and(|a| !fetches(a).is_empty()))
        .filter_map(|o| match &o.result {
            ActionResult::Retrieval(r) => r.raw_data.first(),
            _ => None,
        })
        .map(|hit| Anchor { doc_id: hit.doc_id.clone(), title: hit.title.clone() })
        .collect()
}

/// The document the question names for each of its entities (the card whose title is the entity, else the
/// best card whose title contains it or is contained in it), at most two.
fn named_anchors(state: &LoopState) -> Vec<Anchor> {
    let a = &state.analysis;
    let mut cards: Vec<_> = state.cards.iter().collect();
    cards.sort_by(|x, y| y.hit.score.total_cmp(&x.hit.score));
    let mut anchors: Vec<Anchor> = Vec::new();
    for entity in &a.entities {
        let entity_words = words(entity);
        let exact = |title: &str| {
            let surface = crate::entities::surface_forms(title).pop().unwrap_or_default();
            words(title) == entity_words || words(&surface) == entity_words
        };
        // Else the card whose title shares the most words with the entity ("Blue Collar Worker and the
        // Hairdresser…" is "The Blue Collar Worker and the Hairdresser…", not "The Hairdresser").
        let overlap = |title: &str| {
            let t = words(title);
            let common = t.iter().filter(|w| entity_words.contains(w)).count();
            common as f32 / (t.len() + entity_words.len() - common).max(1) as f32
        };
        let best = cards.iter().find(|c| exact(&c.hit.title)).or_else(|| {
            cards
                .iter()
                .filter(|c| {
                    text::mentions(&c.hit.title, entity)
                        || text::mentions(entity, &c.hit.title)
                        || overlap(&c.hit.title) >= 0.5
                })
                .max_by(|x, y| overlap(&x.hit.title).total_cmp(&overlap(&y.hit.title)))
        });
        if let Some(card) = best
            && !anchors.iter().any(|x| x.doc_id == card.hit.doc_id)
        {
            anchors.push(Anchor { doc_id: card.hit.doc_id.clone(), title: card.hit.title.clone() });
        }
    }
    anchors.truncate(sleuth_messages::MAX_PARALLEL_ACTIONS);
    anchors
}

/// Lowercased alphanumeric words: "Inherent Vice (Film)" and "inherent vice film" are the same name.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether graph bridging still has work to do: an anchor to expand or bridges to fetch.
pub fn graph_pending(state: &LoopState) -> bool {
    !graph_anchors(state).is_empty() || !graph_bridges(state).is_empty()
}

/// The `pg_graph` action that lists the documents an anchor mentions.
pub fn expand_action(anchor: &Anchor) -> Action {
    let mut filters = JsonMap::new();
    filters.insert("direction".into(), "out".into());
    filters.insert("entity_type".into(), "document".into());
    Action::PgGraph {
        graph_intent: GraphIntent {
            rationale: format!("documents that {} mentions: the question needs one of them", anchor.title),
            query_type: GraphQueryType::Neighbors,
            start: EntityRef { entity_type: EntityType::DOCUMENT, id: anchor.doc_id.clone() },
            end: None,
            max_hops: 1,
            edge_types: vec!["mentions".into()],
            filters,
            limits: GraphLimits { max_results: GRAPH_NEIGHBOURS, max_fanout_per_hop: GRAPH_NEIGHBOURS },
        },
    }
}

/// For each expanded anchor whose links were not followed yet, the documents it links to that the chain has not
/// fetched and the question does not name. The fetch ranks them against the question: no list of relation words
/// decides which neighbour is the bridge, the retriever does.
pub fn graph_bridges(state: &LoopState) -> Vec<(Anchor, Vec<(String, String)>)> {
    let a = &state.analysis;
    let groups = bridge_groups(state);
    let (_, fetched) = explored(state);
    let mut out = Vec::new();
    for (turn_index, turn) in state.turns.iter().enumerate() {
        let before = fetched_in(&state.turns[..turn_index]);
        let after: Vec<&String> = fetched.iter().filter(|id| !before.contains(id)).collect();
        for outcome in &turn.outcomes {
            let (Some(Action::PgGraph { graph_intent }), ActionResult::Graph(result)) =
                (turn.step.actions.get(outcome.slot as usize), &outcome.result)
            else {
                continue;
            };
            let anchor_id = &graph_intent.start.id;
            let title = state
                .cards
                .iter()
                .find(|c| &c.hit.doc_id == anchor_id)
                .map_or_else(|| anchor_id.clone(), |c| c.hit.title.clone());
            let nodes = result.meta.get("nodes").and_then(|v| v.as_array()).cloned().unwrap_or_default();
            let mut bridges: Vec<(String, String)> = Vec::new();
            for node in &nodes {
                let (Some(id), Some(name)) = (node["id"].as_str(), node["name"].as_str()) else { continue };
                let named_by_question = a.entities.iter().any(|e| text::mentions(name, e) || text::mentions(e, name));
                // Bridges already among the cards are fetched again all the same: the fetch is what marks them as
                // the chain's next link for the grader and the synthesizer.
                if id == anchor_id || named_by_question || before.iter().any(|f| f == id) {
                    continue;
                }
                bridges.push((id.to_string(), name.to_string()));
            }
            if bridges.iter().any(|(id, _)| after.contains(&id)) {
                continue; // this anchor's links were already followed
            }
            // The documents named in the anchor's sentences that use the question's words ("directed by X" for
            // "the director of"), when there are any, else every linked document.
            let names: &[String] = groups.iter().find(|g| g.anchor == title).map_or(&[], |g| g.names.as_slice());
            let in_relation = |name: &str| {
                let surface = crate::entities::surface_forms(name).pop().unwrap_or_default();
                names.iter().any(|n| text::mentions(n, &surface) || text::mentions(&surface, n))
            };
            if bridges.iter().any(|(_, name)| in_relation(name)) {
                bridges.retain(|(_, name)| in_relation(name));
            }
            if !bridges.is_empty() {
                out.push((Anchor { doc_id: anchor_id.clone(), title }, bridges));
            }
        }
    }
    out
}

/// The search that fetches an anchor's bridge documents, ranked against the question.
pub fn fetch_action(state: &LoopState, anchor: &Anchor, bridges: &[(String, String)]) -> Action {
    let mut intent = SearchIntent::documents(
        format!("follow the best of the {} documents linked from {}", bridges.len(), anchor.title),
        state.analysis.rewritten.clone(),
    );
    intent
        .filters
        .insert("doc_id".into(), bridges.iter().map(|(id, _)| serde_json::Value::from(id.as_str())).collect());
    intent.limit = Some(BRIDGES_PER_ANCHOR as u32);
    Action::QdrantSearch { search_intent: intent }
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Card, Hit, JsonMap};

    use super::*;
    use crate::fixtures;

    fn state_with(question: &str, cards: &[(&str, &str)]) -> LoopState {
        let mut state = fixtures::state_for(question);
        state.cards = cards
            .iter()
            .enumerate()
            .map(|(i, (title, text))| {
                let hit = Hit {
                    id: title.to_string(),
                    doc_id: title.to_string(),
                    title: title.to_string(),
                    text: text.to_string(),
                    score: 10.0 - i as f32,
                    metadata: JsonMap::new(),
                };
                Card::new(i as u32 + 1, 1, hit)
            })
            .collect();
        state
    }

    #[test]
    fn bridges_are_named_in_the_sentences_that_use_the_question_words() {
        let cases: &[(&str, (&str, &str), &str)] = &[(
            "Where was the director of film The Private Life Of Cinema born?",
            (
                "The Private Life of Cinema",
                "The Private Life of Cinema is a 2011 documentary by Quebec film director and producer Denys Desjardins.",
            ),
            "Denys Desjardins",
        )];
        for (question, card, expected) in cases {
            let state = state_with(question, &[*card]);
            assert!(needs_bridge(&state), "{question}");
            let groups = bridge_groups(&state);
            let likeliest: Vec<&str> = groups[0].names.iter().take(2).map(String::as_str).collect();
            assert!(likeliest.contains(expected), "{question}: {groups:?}");
        }
    }

    #[test]
    fn every_retrieved_chunk_of_an_anchor_names_bridges() {
        // The better-scored chunk is not the one that names the composer.
        let state = state_with(
            "Where was the composer of film Billy Elliot born?",
            &[
                ("Billy Elliot", "The story of the film was adapted for the West End stage in 2005."),
                ("Billy Elliot", "It was written by Lee Hall, with music composed by Stephen Warbeck."),
            ],
        );
        let groups = bridge_groups(&state);
        assert_eq!(groups.len(), 1, "one anchor per document: {groups:?}");
        assert!(groups[0].names.iter().any(|n| n == "Stephen Warbeck"), "{groups:?}");
    }
}
