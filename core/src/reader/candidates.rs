//! The reader's entry points: what it answers, and the other answers it weighed, for a question over a window of
//! cards. Comparisons and yes/no questions are decided from the compared values (`compare.rs`); every other kind is
//! read from the spans of the asked shape (`extract.rs`).

use sleuth_messages::{AnswerKind, Card};

use crate::text;

use super::{Reading, asked, chain::Chain, compare, extract::extract};

/// Reads the answer to `question` from `window` (the final ranking's head, best first), along `chain`. `None`
/// when no span of the asked shape is near anything the question says.
pub fn read<'a>(question: &str, window: &[&'a Card], chain: &Chain) -> Option<Reading<'a>> {
    candidates(question, window, chain, 1).into_iter().next()
}

/// The answers the evidence offers, best first, at most `k`, each with the cards that write it: [`read`]'s
/// answer, then the other spans of the asked shape it weighed; for a comparison both options, for yes/no both
/// words. An LLM reader chooses among them, so that what it answers is written in a card it cites.
pub fn candidates<'a>(question: &str, window: &[&'a Card], chain: &Chain, k: usize) -> Vec<Reading<'a>> {
    if window.is_empty() || k == 0 {
        return Vec::new();
    }
    let a = asked::asked(question);
    let mut found = match a.kind {
        AnswerKind::Choice => compare::options(&a, window),
        AnswerKind::YesNo => compare::yes_no(&a, window)
            .map(|r| {
                let other = if r.text == "yes" { "no" } else { "yes" };
                let flip = Reading { text: other.into(), kind: r.kind, cards: r.cards.clone(), score: 0.0 };
                vec![r, flip]
            })
            .unwrap_or_default(),
        _ => extract(&a, question, window, chain, k),
    };
    // No markup in an answer: a span with a tag or a link in it is the source, not the text, and is not offered.
    found.retain_mut(|r| text::plain_span(&r.text).map(|plain| r.text = plain).is_some());
    found.truncate(k);
    found
}
