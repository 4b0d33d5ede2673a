//! Whether the evidence speaks to the question at all: each entity the question names appears in the evidence,
//! and so do some of its other key terms. Every route checks this before answering, so a corpus that cannot
//! answer gets "nothing found" instead of the nearest sentence.

use sleuth_messages::{Card, LoopState};

use crate::text;

/// Share of a long entity's words one card must contain for the entity to count as covered: in "Edward Stanley,
/// 3rd Earl of Derby" a misspelt or abbreviated word is tolerated.
const ENTITY_WORDS: f32 = 0.66;

/// Entities of at most this many content words must be covered whole: two of "Natural Born Killers" are not
/// the film, and "The Private Life Of Cinema" is still covered by "The Private Life of Cinema (2011)".
const SHORT_ENTITY: usize = 3;

/// Share of the question's other key terms the evidence must contain when the question names no entity.
const KEY_TERMS: f32 = 0.5;

fn card_words(card: &Card) -> Vec<String> {
    text::tokens(&format!("{} {}", card.hit.title, card.hit.text)).iter().map(|t| text::stem(t).to_string()).collect()
}

/// What the question asks about that no card in `cards` mentions: its uncovered entities and quoted terms, or,
/// when it names none, its key terms if fewer than half of them appear. Empty when the evidence covers the question.
pub fn uncovered(state: &LoopState, cards: &[&Card]) -> Vec<String> {
    let a = &state.analysis;
    let words: Vec<Vec<String>> = cards.iter().map(|c| card_words(c)).collect();
    let covered_in = |card: &[String], terms: &[String]| {
        let found = terms.iter().filter(|t| card.contains(t)).count();
        let needed = if terms.len() <= SHORT_ENTITY { terms.len() as f32 } else { terms.len() as f32 * ENTITY_WORDS };
        found as f32 >= needed.ceil()
    };
    let mut missing: Vec<String> = Vec::new();
    // What the question names: its entities, and its quoted or literal terms ("Natural Born Killers").
    let literals =
        a.literal_terms.iter().filter(|l| !a.entities.iter().any(|e| text::mentions(e, l) || text::mentions(l, e)));
    let named: Vec<&String> = a.entities.iter().chain(literals).collect();
    for entity in named.iter().copied() {
        let terms: Vec<String> = text::content_words(entity).iter().map(|t| text::stem(t).to_string()).collect();
        if !terms.is_empty() && !words.iter().any(|card| covered_in(card, &terms)) {
            missing.push(entity.clone());
        }
    }
    // A question that names several things, the evidence mentioning all but single words of them, is about the
    // evidence: a manual need not use every word its reader does ("Which Cargo feature enables …", "a drop-in API
    // replacement"). A missing name of two words or more, or the only thing named, still is not covered.
    let single = |m: &String| text::content_words(m).len() == 1;
    if missing.len() < named.len() && missing.iter().all(single) {
        return Vec::new();
    }
    if !named.is_empty() || !missing.is_empty() {
        return missing;
    }
    let keys: Vec<String> = a.keywords.iter().map(|k| text::stem(k).to_string()).collect();
    let found = keys.iter().filter(|k| words.iter().any(|card| card.contains(k))).count();
    if (found as f32) < keys.len() as f32 * KEY_TERMS { a.keywords.clone() } else { Vec::new() }
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Hit, JsonMap};

    use super::*;
    use crate::fixtures;

    fn card(title: &str, text: &str) -> Card {
        let hit = Hit {
            id: title.into(),
            doc_id: title.into(),
            title: title.into(),
            text: text.into(),
            score: 1.0,
            metadata: JsonMap::new(),
        };
        Card::new(1, 1, hit)
    }

    #[test]
    fn evidence_that_never_names_the_asked_entity_does_not_cover_the_question() {
        let letters = card("One Piece", "Its name is commonly stylized in capital letters.");
        let france = card("Paris", "Paris is the capital of France.");
        let state = fixtures::state_for("What is the capital of France?");
        assert_eq!(uncovered(&state, &[&letters]), ["France"]);
        assert!(uncovered(&state, &[&letters, &france]).is_empty());

        let film = card("The Private Life of Cinema", "A 2011 documentary by Denys Desjardins.");
        let state = fixtures::state_for("Where was the director of film The Private Life Of Cinema born?");
        assert!(uncovered(&state, &[&film]).is_empty(), "{:?}", state.analysis.entities);

        // Two of a short name's three words are another thing.
        let other = card("Tenor", "He was born in 1965 and sang with a natural ease.");
        let state = fixtures::state_for("The soundtrack from the film \"Natural Born Killers\" was produced by whom?");
        assert_eq!(uncovered(&state, &[&other]), ["Natural Born Killers"], "{:?}", state.analysis.entities);
    }

    #[test]
    fn a_single_word_the_evidence_does_not_use_does_not_block_a_question_it_otherwise_covers() {
        let features =
            card("Features", "The leftmost_longest feature enables leftmost-longest semantics in RegexBuilder.");
        let state = fixtures::state_for("Which Cargo feature enables leftmost-longest semantics in the RegexBuilder?");
        assert!(uncovered(&state, &[&features]).is_empty(), "{:?}", state.analysis.entities);
        let state = fixtures::state_for("Which Cargo feature enables leftmost-longest semantics in Hyperscan Teddy?");
        assert_eq!(uncovered(&state, &[&features]), ["Cargo", "Hyperscan Teddy"], "two words missing");
        let state = fixtures::state_for("Which Cargo feature is the default?");
        assert_eq!(uncovered(&state, &[&features]), ["Cargo"], "the only name");
    }

    #[test]
    fn a_question_without_names_needs_half_its_key_terms() {
        let state = fixtures::state_for("how do pirates find buried treasure");
        let pirates = card("Pirates", "Pirates sailed the seas looking for treasure.");
        let cooking = card("Soup", "Soup is made by boiling water.");
        assert!(uncovered(&state, &[&pirates]).is_empty());
        assert!(!uncovered(&state, &[&cooking]).is_empty());
    }
}
