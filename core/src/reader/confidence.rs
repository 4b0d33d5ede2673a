//! Whether the reader's best reading is sure enough to lead a reply as its short answer. A wrong short answer is
//! worse than none: a reading that is not given leaves the reply to lead with the sentence it was read from, which
//! names the asked relation and often its true value even when the span chosen from it is wrong. The bar is
//! calibrated on the 2Wiki dev set's even half and checked on the odd half and the other dev sets (BENCHMARKS.md,
//! "Answers").

use sleuth_messages::{AnswerKind, Card};

use super::{
    Chain, Reading, asked, candidates,
    walk::{self, Walk},
};
use crate::text;

/// The reader's best reading, how far it leads the next one, and whether it is sure enough to be given.
#[derive(Debug, Clone)]
pub struct Judged<'a> {
    pub reading: Reading<'a>,
    /// Its score less the runner-up's (its whole score when nothing else was read).
    pub margin: f32,
    pub given: bool,
    /// The question's chain walked on the evidence, for a span of a typed kind.
    pub walk: Option<Walk<'a>>,
}

/// Reads `question` from `window` along `chain` and judges the best reading. A span is given when the walk along
/// the chain shows it; the walk's reading then replaces the one read from the whole window, or stands alone when
/// the whole window offered none (the end's life parenthesis names no cue of the question: "(c. 850 – 890)").
pub fn judge<'a>(question: &str, window: &[&'a Card], chain: &Chain) -> Option<Judged<'a>> {
    let mut found = candidates(question, window, chain, 2).into_iter();
    let best = found.next();
    let margin = best.as_ref().map_or(0.0, |r| r.score - found.next().map_or(0.0, |r| r.score));
    let walk = walk::walk(&asked::asked(question), question, window, chain);
    if let Some(w) = &walk
        && w.shows()
        && let Some((end, _)) = &w.end
        && let Some(plain) = text::plain_span(&end.text)
    {
        let reading = Reading { text: plain, ..end.clone() };
        return Some(Judged { reading, margin, given: true, walk });
    }
    let reading = best?;
    let given = confident(&reading);
    Some(Judged { reading, margin, given, walk })
}

/// A choice between the options a question names, or yes or no, is decided from the compared values; a span is
/// picked from the evidence's sentences. On the 2Wiki dev set (451 questions, loop) the first were right 0.89
/// (choice) and 0.77 (yes/no) of the time; spans 0.25 (date 0.50, place 0.27, person 0.15), and no bar on their
/// score or on their lead over the runner-up (`margin`, kept for the evidence) made them right more than half the
/// time on more than 2% of the questions. So a span read from the whole window is not given; one the walk shows is.
fn confident(reading: &Reading<'_>) -> bool {
    // A choice is decided when [`compare`] picked it (score 1); an option offered only as a candidate (score 0,
    // nothing compared) is a guess.
    match reading.kind {
        AnswerKind::Choice => reading.score > 0.0,
        AnswerKind::YesNo => true,
        _ => false,
    }
}

/// The sentence of its first card a reading was read from: where the evidence says it.
pub fn source_sentence<'a>(reading: &Reading<'a>) -> Option<(&'a Card, &'a str)> {
    let card = *reading.cards.first()?;
    text::sentences(&card.hit.text).into_iter().find(|s| text::mentions(s, &reading.text)).map(|s| (card, s))
}
