//! How well a sentence of the evidence answers the question, for the extractive answer `synthesizer.rs` quotes:
//! the question's words it uses (a negated form counting for the word), the entities it names, whether its card
//! is about one of them, and whether it names a thing by the noun phrase a "which" question asks for.

use sleuth_messages::{AnswerKind, Card};

use crate::{reader, text};

/// What a sentence is scored against: the question's keyword stems and entities, and the noun phrase a "which"
/// question asks for ([`asked_kind`]).
pub(super) struct Asks<'q> {
    pub(super) stems: Vec<&'q str>,
    pub(super) entities: &'q [String],
    pub(super) kind: Vec<String>,
    pub(super) words: Vec<String>,
}

/// The noun phrase of a "which"/"what" question, up to its head noun: "Which environment variable makes …" gives
/// environment and variable. The first word after the noun that ends in "s" is taken for the verb ("makes") and
/// ends the phrase; a phrase that is cut too short only loses [`names_a_term_of_kind`]'s bonus.
pub(super) fn asked_kind(asked: &reader::asked::Asked) -> Vec<String> {
    if asked.noun.is_none() || matches!(asked.kind, AnswerKind::Choice | AnswerKind::YesNo) {
        return Vec::new();
    }
    let end = asked
        .heads
        .iter()
        .skip(1)
        .position(|w| w.ends_with('s') && !w.ends_with("ss"))
        .map_or(asked.heads.len(), |i| i + 1);
    asked.heads[..end].to_vec()
}

/// Adjectives that stand between a determiner and a noun without naming anything: "the same flag", "the first
/// command".
#[rustfmt::skip]
const ORDINARY: &[&str] = &[
    "same",
    "other",
    "new",
    "old",
    "first",
    "second",
    "third",
    "last",
    "next",
    "previous",
    "only",
    "default",
    "main",
    "standard",
    "whole",
    "entire",
    "specific",
    "particular",
    "given",
    "single",
    "such",
    "above",
    "below",
    "correct",
    "right",
    "wrong",
    "different",
    "similar",
    "own",
    "various",
    "several",
    "many",
    "few",
    "more",
    "most",
    "each",
    "every",
    "any",
    "some",
    "this",
    "that",
    "these",
    "those",
    "simple",
    "appropriate",
    "relevant",
    "full",
    "short",
    "long",
    "big",
    "small",
    "good",
    "best",
    "better",
    "final",
    "common",
    "custom",
    "extra",
    "actual",
    "real",
];

/// Whether the sentence names a thing by the asked noun phrase ([`asked_kind`]): "the RUST_BACKTRACE environment
/// variable", "the ? operator", "the move keyword", a term right after a determiner and before the phrase's head
/// noun, which is neither a word of the question nor an ordinary adjective. Such a sentence says which one it is.
fn names_a_term_of_kind(sentence: &str, kind: &[String], question: &[String]) -> bool {
    let Some(head) = kind.last() else { return false };
    let words: Vec<&str> = sentence
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '"' | '“' | '”' | '`' | '.')))
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    lower.iter().enumerate().any(|(i, w)| {
        if text::stem(w) != text::stem(head) {
            return false;
        }
        // Back over the phrase's other words ("environment" before "variable") to the term before them.
        let mut at = i;
        while at > 0 && kind[..kind.len() - 1].iter().any(|k| text::stem(k) == text::stem(&lower[at - 1])) {
            at -= 1;
        }
        let (Some(term), Some(det)) = (at.checked_sub(1), at.checked_sub(2)) else { return false };
        let (raw, term) = (words[term], &lower[term]);
        let coded = raw.chars().any(|c| !c.is_alphabetic());
        let capital = raw.chars().next().is_some_and(char::is_uppercase);
        let adjective = ["ing", "ed", "al", "ous", "ive", "ic", "able", "ible", "ful", "less"]
            .iter()
            .any(|end| term.ends_with(end));
        // A possessive ("the variable's type") names an owner, not a thing of the kind.
        let possessive = term.ends_with("'s") || term.ends_with("’s");
        ["the", "a", "an"].contains(&lower[det].as_str())
            && !possessive
            && !term.is_empty()
            && !text::is_stopword(term)
            && !ORDINARY.contains(&term.as_str())
            && !question.contains(term)
            && (coded || capital || !adjective)
    })
}

/// How well a sentence answers: question words it contains, entities it names, and a bonus when its card is
/// about one of the question's entities, and when it names a thing by the noun phrase a "which" question asks
/// for. Code is never the answering sentence.
pub(super) fn sentence_score(sentence: &str, card: &Card, asks: &Asks<'_>) -> f32 {
    let (stems, entities) = (&asks.stems, asks.entities);
    // A code block (fenced at ingestion, `ingest/markdown.rs`) illustrates and a heading names a topic; neither
    // says the answer.
    let tokens = text::tokens(sentence);
    if sentence.starts_with("```") || is_heading(sentence, &tokens) {
        return 0.0;
    }
    let matched = stems.iter().filter(|s| tokens.iter().any(|t| text::stem(t) == **s || negated(t, s))).count() as f32;
    let named = entities.iter().filter(|e| text::mentions(sentence, e)).count() as f32;
    let about = entities.iter().any(|e| text::mentions(&card.hit.title, e) || text::mentions(e, &card.hit.title));
    if matched + named == 0.0 {
        return 0.0;
    }
    let names_kind = names_a_term_of_kind(sentence, &asks.kind, &asks.words);
    matched + named + if about { 1.5 } else { 0.0 } + if names_kind { 2.0 } else { 0.0 }
}

/// Whether `word` is the negation of the word stemmed `stem`: "immutable" answers whether a thing is "mutable",
/// "unsafe" whether it is "safe".
fn negated(word: &str, stem: &str) -> bool {
    // "un" and "non" only negate; "in", "im", "dis" also begin words of their own ("inform"), so a longer rest.
    [("un", 4), ("non", 4), ("im", 5), ("in", 5), ("ir", 5), ("il", 5), ("dis", 5)].iter().any(|(prefix, least)| {
        word.strip_prefix(prefix)
            .map(|rest| rest.trim_start_matches('-'))
            .is_some_and(|rest| rest.len() >= *least && text::stem(rest) == stem)
    })
}

/// A short line with no full stop: a heading, a caption, a menu entry ("Integer Types", "Listing 7-11").
pub(super) fn is_heading(sentence: &str, tokens: &[String]) -> bool {
    tokens.len() <= 8 && !sentence.trim_end().ends_with(['.', '!', '?', ':', ';', ')', '"', '”'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_which_question_s_noun_phrase_finds_the_sentence_that_names_one() {
        let kind = |q: &str| asked_kind(&reader::asked::asked(q));
        assert_eq!(kind("Which environment variable makes a panic display a backtrace?"), ["environment", "variable"]);
        assert_eq!(kind("Which flag sets the number of threads?"), ["flag"]);
        assert!(kind("Are variables mutable by default?").is_empty());
        let words = |q: &str| reader::asked::asked(q).words;
        let q = "Which environment variable makes a panic display a backtrace?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("Let's get a backtrace by setting the RUST_BACKTRACE environment variable to any value."));
        assert!(!names("Via an environment variable, you can also have Rust display the call stack."));
        assert!(!names("Set the same environment variable again."));
        let q = "Which operator propagates errors to the calling code?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("The ? operator calls the from function."));
        assert!(!names("The following operator is used."));
        let q = "What type do integer literals default to?";
        assert!(!names_a_term_of_kind("Tell Rust the variable’s type.", &kind(q), &words(q)));
    }

    #[test]
    fn a_negated_word_answers_for_the_word_it_negates() {
        assert!(negated("immutable", text::stem("mutable")));
        assert!(negated("non-blocking", text::stem("blocking")));
        assert!(!negated("mutable", text::stem("mutable")));
        assert!(!negated("inform", text::stem("form")));
    }
}
