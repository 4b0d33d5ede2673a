//! The final ranking of a request's evidence: what the first turn found (the single pass) fused by reciprocal
//! rank with what the later turns found, so the loop adds evidence without discarding the single pass's.

use sleuth_messages::{ActionResult, Card, LoopState};

/// Cards an answer may quote: the head of the final ranking (fast-graphrag's benchmark judges 8 passages).
pub const ANSWER_WINDOW: usize = 8;

/// RRF's k (Cormack et al. 2009). Two lists of equal weight: the ranking interleaves them, and a card both
/// found rises above either list's next card.
const RRF_K: f64 = 60.0;

/// Card numbers in the order one turn's outcomes ranked them: each action's hits in its own order, the slots
/// interleaved rank by rank, so parallel searches ("the first entity", "the second") share the head.
fn turn_list(state: &LoopState, turn: usize) -> Vec<u32> {
    let Some(record) = state.turns.get(turn) else { return Vec::new() };
    let lists: Vec<Vec<u32>> = record
        .outcomes
        .iter()
        .map(|o| {
            let hits = match &o.result {
                ActionResult::Retrieval(r) => r.raw_data.as_slice(),
                ActionResult::Graph(g) => g.evidence.as_slice(),
                ActionResult::Failed(_) => &[],
            };
            hits.iter().filter_map(|h| state.cards.iter().find(|c| c.hit.id == h.id).map(|c| c.n)).collect()
        })
        .collect();
    let depth = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out: Vec<u32> = Vec::new();
    for rank in 0..depth {
        for list in &lists {
            if let Some(n) = list.get(rank)
                && !out.contains(n)
            {
                out.push(*n);
            }
        }
    }
    out
}

/// Every card, best first: the first turn's list and the later turns' findings (in the order the loop reached
/// them) fused with RRF; cards neither list ranks (a cached replay, a card from a failed turn's record) follow by
/// score. With no later turn the ranking is the first turn's own, so a loop never ranks worse than one pass.
pub fn ranking(state: &LoopState) -> Vec<&Card> {
    let first = turn_list(state, 0);
    let mut later: Vec<u32> = Vec::new();
    for turn in 1..state.turns.len() {
        for n in turn_list(state, turn) {
            if !later.contains(&n) {
                later.push(n);
            }
        }
    }
    let rrf = |list: &[u32], n: u32| list.iter().position(|x| *x == n).map_or(0.0, |r| 1.0 / (RRF_K + 1.0 + r as f64));
    let mut cards: Vec<(f64, usize, &Card)> = state
        .cards
        .iter()
        .map(|c| {
            let first_rank = first.iter().position(|x| *x == c.n).unwrap_or(usize::MAX);
            (rrf(&first, c.n) + rrf(&later, c.n), first_rank, c)
        })
        .collect();
    // Ties (the same rank in each list) go to the single pass's card, then to the higher search score.
    cards.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(y.2.hit.score.total_cmp(&x.2.hit.score)));
    cards.into_iter().map(|(_, _, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Action, ActionOutcome, NextStep, RetrievalResult, SearchIntent, TurnRecord};

    use super::*;
    use crate::fixtures;

    fn turn(n: u32, lists: &[&[&str]]) -> TurnRecord {
        TurnRecord {
            turn: n,
            step: NextStep {
                rationale: "test".into(),
                actions: lists
                    .iter()
                    .map(|_| Action::QdrantSearch { search_intent: SearchIntent::documents("t", "q") })
                    .collect(),
            },
            outcomes: lists
                .iter()
                .enumerate()
                .map(|(slot, ids)| ActionOutcome {
                    slot: slot as u32,
                    result: ActionResult::Retrieval(RetrievalResult {
                        summary: String::new(),
                        raw_data: ids.iter().map(|i| fixtures::card(0, n, i, i, i).hit).collect(),
                        count: ids.len() as u32,
                        from_cache: false,
                        degraded: Vec::new(),
                    }),
                    new_cards: 0,
                    elapsed_ms: 0,
                })
                .collect(),
            report: None,
        }
    }

    fn state(turns: Vec<TurnRecord>) -> LoopState {
        let mut state = fixtures::state_for("Where was the composer of Aschenbrödel born?");
        for t in &turns {
            for o in &t.outcomes {
                let ActionResult::Retrieval(r) = &o.result else { continue };
                for h in &r.raw_data {
                    if !state.cards.iter().any(|c| c.hit.id == h.id) {
                        let n = state.cards.len() as u32 + 1;
                        state.cards.push(Card::new(n, t.turn, h.clone()));
                    }
                }
            }
        }
        state.turns = turns;
        state
    }

    fn titles(state: &LoopState) -> Vec<&str> {
        ranking(state).iter().map(|c| c.hit.title.as_str()).collect()
    }

    #[test]
    fn one_turn_keeps_its_own_order_and_later_findings_are_interleaved_with_it() {
        let one = state(vec![turn(1, &[&["a", "b", "c", "d"]])]);
        assert_eq!(titles(&one), ["a", "b", "c", "d"]);

        let chain = state(vec![turn(1, &[&["a", "b", "c", "d"]]), turn(2, &[&["x", "b"]]), turn(3, &[&["y"]])]);
        // b is in both lists and rises to the top; x and y interleave with what one pass found.
        assert_eq!(titles(&chain), ["b", "a", "x", "c", "y", "d"]);
    }

    #[test]
    fn parallel_searches_share_the_head_of_their_turn() {
        let both = state(vec![turn(1, &[&["a1", "a2", "a3"], &["b1", "b2"]])]);
        assert_eq!(titles(&both), ["a1", "b1", "a2", "b2", "a3"]);
    }
}
