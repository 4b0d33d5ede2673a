//! Keeping a request's state bounded (seed 002 §9): a hit's text is stored once, in its card, and when the cards'
//! text outgrows its budget the cards far down the ranking become handles.
//!
//! A state is written to the KV bucket at every step, and a bucket value must fit in one NATS message (1 MiB by
//! default). Without compaction a deep loop (turns × parallel actions × hits per search) could outgrow that and
//! end in an error instead of an answer.

use sleuth_messages::{ActionOutcome, ActionResult, LoopState};

use super::ranking;
use crate::text;

/// Card text kept before compaction starts, in bytes: seed 002 §9.1's 50K tokens at about 4 bytes a token.
pub const CARD_TEXT_BUDGET: usize = 200_000;

/// Cards at the head of the ranking are never compacted: four answer windows, so what the answer quotes, and what
/// a later turn could lift into the window, stays whole.
pub const KEPT_WHOLE: usize = 4 * ranking::ANSWER_WINDOW;

/// What a handle keeps of its passage: its first sentence, at most this many characters.
const HANDLE_CHARS: usize = 240;

/// A turn's outcomes once their hits are cards: each hit keeps its id, title, score and metadata (what the
/// ranking, the resolver and the chain walk read), and its text lives only in the card of the same id.
pub fn outcomes_to_handles(outcomes: &mut [ActionOutcome]) {
    for outcome in outcomes {
        let hits = match &mut outcome.result {
            ActionResult::Retrieval(retrieval) => &mut retrieval.raw_data,
            ActionResult::Graph(graph) => &mut graph.evidence,
            ActionResult::Failed(_) => continue,
        };
        for hit in hits {
            hit.text = String::new();
        }
    }
}

/// Compacts the cards when their text is over [`CARD_TEXT_BUDGET`]: from the bottom of the ranking up, and never
/// within its first [`KEPT_WHOLE`], a card keeps only its first sentence and is marked `compacted`.
pub fn compact_cards(state: &mut LoopState) {
    let mut total: usize = state.cards.iter().map(|c| c.hit.text.len()).sum();
    if total <= CARD_TEXT_BUDGET {
        return;
    }
    let bottom_up: Vec<u32> = ranking::ranking(state).iter().skip(KEPT_WHOLE).rev().map(|c| c.n).collect();
    for n in bottom_up {
        if total <= CARD_TEXT_BUDGET {
            break;
        }
        let Some(card) = state.cards.iter_mut().find(|c| c.n == n && !c.compacted) else { continue };
        let handle = opening(&card.hit.text);
        total -= card.hit.text.len() - handle.len();
        card.hit.text = handle;
        card.compacted = true;
    }
}

/// A passage's first sentence, cut at a character boundary to at most [`HANDLE_CHARS`]: a prefix of the text,
/// so whatever quotes it still quotes the passage.
fn opening(text: &str) -> String {
    let first = text::sentences(text).first().copied().unwrap_or(text);
    first.chars().take(HANDLE_CHARS).collect::<String>().trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Action, Hit, JsonMap, NextStep, Phase, RetrievalResult, SearchIntent};

    use super::*;
    use crate::{fixtures, machine::apply_outcome};

    fn hit(turn: u32, i: usize) -> Hit {
        Hit {
            id: format!("t{turn}-h{i}"),
            doc_id: format!("t{turn}-d{i}"),
            title: format!("Doc {turn}.{i}"),
            text: format!("Opening sentence of {turn}.{i}. {}", "filler words ".repeat(400)),
            score: 1.0 / (i + 1) as f32,
            metadata: JsonMap::new(),
        }
    }

    /// A loop of `turns` turns, each one search returning `per_turn` fresh 5 KB passages.
    fn deep_loop(turns: u32, per_turn: usize) -> LoopState {
        let mut state = fixtures::state_for("What connects the documents?");
        state.turns.clear();
        for turn in 1..=turns {
            state.turn = turn;
            state.turns.push(sleuth_messages::TurnRecord {
                turn,
                step: NextStep {
                    rationale: "search".into(),
                    actions: vec![Action::QdrantSearch { search_intent: SearchIntent::documents("q", "q") }],
                },
                outcomes: Vec::new(),
                report: None,
            });
            state.phase = Phase::Acting { pending: vec![0] };
            let result = ActionResult::Retrieval(RetrievalResult {
                summary: String::new(),
                raw_data: (0..per_turn).map(|i| hit(turn, i)).collect(),
                count: per_turn as u32,
                from_cache: false,
                degraded: Vec::new(),
            });
            state = apply_outcome(&state, 0, result, 1).unwrap();
        }
        state
    }

    #[test]
    fn a_deep_loop_stays_under_its_budget_and_keeps_the_ranking_head_whole() {
        // 12 turns × 20 passages × 5 KB: 1.2 MB of text, more than one NATS message holds.
        let state = deep_loop(12, 20);
        assert_eq!(state.cards.len(), 240);
        let text: usize = state.cards.iter().map(|c| c.hit.text.len()).sum();
        assert!(text <= CARD_TEXT_BUDGET, "{text} bytes of card text");
        let encoded = sleuth_messages::codec::encode(&state, sleuth_messages::Encoding::MsgPack).unwrap();
        assert!(encoded.len() < 400_000, "the state encodes to {} bytes", encoded.len());

        for card in ranking::ranking(&state).iter().take(KEPT_WHOLE) {
            assert!(!card.compacted && card.hit.text.len() > 5000, "card {} of the head was compacted", card.n);
        }
        let handles: Vec<_> = state.cards.iter().filter(|c| c.compacted).collect();
        assert!(!handles.is_empty());
        for card in handles {
            assert!(card.hit.text.starts_with("Opening sentence of"), "{}", card.hit.text);
            assert!(card.hit.text.len() <= HANDLE_CHARS);
        }
        // Every outcome's hits are handles of their cards: the text is stored once.
        for outcome in state.turns.iter().flat_map(|t| &t.outcomes) {
            let ActionResult::Retrieval(r) = &outcome.result else { unreachable!() };
            assert!(r.raw_data.iter().all(|h| h.text.is_empty() && state.cards.iter().any(|c| c.hit.id == h.id)));
        }
    }

    #[test]
    fn a_loop_under_its_budget_is_not_compacted() {
        let state = deep_loop(3, 8);
        assert!(state.cards.iter().all(|c| !c.compacted && c.hit.text.len() > 5000));
    }
}
