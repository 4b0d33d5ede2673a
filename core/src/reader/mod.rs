//! The deterministic reader: the short answer to a question, read from the cited evidence. It asks what the
//! question wants ([`asked`]), gathers the spans of that shape from the evidence's sentences ([`spans`]) and scores
//! them (`extract.rs`), or decides a comparison or a yes/no question from the compared values (`compare.rs`, in the
//! order its comparative wants: `order.rs`).
//! `candidates.rs` is the entry point. Nothing here knows a data set: no relation phrasings, no per-corpus
//! switches.

pub mod asked;
mod candidates;
mod chain;
mod compare;
mod confidence;
mod descriptions;
mod extract;
mod fit;
mod kin;
mod lifespan;
mod order;
mod relatives;
pub mod spans;
mod walk;
mod words;

use sleuth_messages::{AnswerKind, Card};

pub use self::{
    candidates::{candidates, read},
    chain::{Bridge, Chain, depths},
    confidence::{Judged, judge, source_sentence},
    walk::Walk,
    words::{card_named, fold, same_word, subject},
};

/// The short answer and the cards that support it (at least one).
#[derive(Debug, Clone)]
pub struct Reading<'a> {
    pub text: String,
    pub kind: AnswerKind,
    pub cards: Vec<&'a Card>,
    /// How strongly the evidence points at it, on the reader's own scale (see `confidence.rs`); a comparison's
    /// pick is 1 and the option it did not pick 0.
    pub score: f32,
}

#[cfg(test)]
mod tests;
