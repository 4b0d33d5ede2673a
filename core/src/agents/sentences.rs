//! How well a sentence of the evidence answers the question, for the extractive answer `synthesizer.rs` quotes:
//! the question's words it uses (a negated form counting for the word), the entities it names, whether its card
//! (or the section it is in) is about one of them, and whether it names a thing by the noun phrase a "which"
//! question asks for. Code, headings and a window's cut-off first sentence never answer.

use sleuth_messages::{AnswerKind, Card};

use super::abbreviations;
use crate::{reader, text};

/// What a sentence is scored against: the question's keyword stems, its entities and the code identifiers it
/// names ([`identifiers`]), and the noun phrase a "which" question asks for ([`asked_kind`]).
#[derive(Default)]
pub(super) struct Asks<'q> {
    pub(super) stems: Vec<&'q str>,
    pub(super) entities: Vec<String>,
    pub(super) kind: Vec<String>,
    pub(super) words: Vec<String>,
    /// What a "how many" question counts ("type families"), else empty.
    pub(super) counted: Vec<String>,
    /// The abbreviation a "what does X stand for" question asks to expand, else `None`.
    pub(super) abbreviation: Option<String>,
}

/// What a "how many" question counts: its asked noun phrase ("How many type families …" gives type, families).
pub(super) fn counted(question: &str, asked: &reader::asked::Asked) -> Vec<String> {
    let how_many = question.trim_start().to_lowercase().starts_with("how many ");
    match how_many && asked.kind == AnswerKind::Number {
        true => asked.heads.clone(),
        false => Vec::new(),
    }
}

/// Numbers written as words, as documentation spells small counts.
const NUMBER_WORDS: &[&str] =
    &["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

/// Whether the sentence counts what a "how many" question counts: a number, in digits or a word, right before the
/// counted noun phrase's first word ("three type families", "4 bytes").
pub(super) fn counts(sentence: &str, counted: &[String]) -> bool {
    let Some(first) = counted.first() else { return false };
    let tokens = text::tokens(sentence);
    tokens.windows(2).any(|pair| {
        let number = pair[0].chars().all(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&pair[0].as_str());
        number && text::stem(&pair[1]) == text::stem(first)
    })
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
    // Comparatives and superlatives compare things of the kind without naming one: "a newer minimum version".
    "newer",
    "newest",
    "older",
    "oldest",
    "later",
    "latest",
    "earlier",
    "earliest",
    "higher",
    "highest",
    "lower",
    "lowest",
    "greater",
    "larger",
    "largest",
    "smaller",
    "smallest",
    "bigger",
    "faster",
    "fastest",
    "slower",
    "longer",
    "shorter",
    "fewer",
    "current",
    "recent",
];

/// Whether the sentence names a thing by the asked noun phrase ([`asked_kind`]): "the RUST_BACKTRACE environment
/// variable", "the ? operator", "the move keyword", a term right after a determiner and before the phrase's head
/// noun, which is neither a word of the question nor an ordinary adjective, or right after the noun and "called"
/// or "named" ("a method called new"), or a code identifier whose name ends in the kind ([`typed_identifier`]:
/// `HandleErrorLayer` for "which layer"). Such a sentence says which one it is.
pub(super) fn names_a_term_of_kind(sentence: &str, kind: &[String], question: &[String]) -> bool {
    let Some(head) = kind.last() else { return false };
    let words: Vec<&str> = sentence
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '"' | '“' | '”' | '`' | '.')))
        .collect();
    if words.iter().any(|w| typed_identifier(w, kind, question)) {
        return true;
    }
    if CODE_KINDS.contains(&head.as_str()) && sentence.split_whitespace().any(|w| names_code(w, question)) {
        return true;
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    lower.iter().enumerate().any(|(i, w)| {
        if text::stem(w) != text::stem(head) {
            return false;
        }
        // "a static constructor method called new": the term follows, after "called" or "named".
        if let (Some(verb), Some(term)) = (lower.get(i + 1), lower.get(i + 2))
            && ["called", "named"].contains(&verb.as_str())
            && !term.is_empty()
            && !text::is_stopword(term)
            && !question.contains(term)
        {
            return true;
        }
        // "The default type is f64": the kind's noun phrase after "the" (its other words and ordinary adjectives
        // between), then "is" and the term.
        if let (Some(verb), Some(term)) = (lower.get(i + 1), words.get(i + 2))
            && ["is", "are"].contains(&verb.as_str())
        {
            let mut at = i;
            while at > 0 && (ORDINARY.contains(&lower[at - 1].as_str()) || kind.contains(&lower[at - 1])) {
                at -= 1;
            }
            if at > 0 && lower[at - 1] == "the" && is_term(term, question) {
                return true;
            }
        }
        // Back over the phrase's other words ("environment" before "variable") to the term before them.
        let mut at = i;
        while at > 0 && kind[..kind.len() - 1].iter().any(|k| text::stem(k) == text::stem(&lower[at - 1])) {
            at -= 1;
        }
        let (Some(term), Some(det)) = (at.checked_sub(1), at.checked_sub(2)) else { return false };
        ["the", "a", "an"].contains(&lower[det].as_str()) && is_term(words[term], question)
    })
}

/// Whether a word where a noun phrase puts its name ("the RUST_BACKTRACE variable", "the type is f64") names a
/// thing: not a possessive ("the variable's type" names an owner), a stop word, an ordinary adjective or a word of
/// the question, and written as code, capitalised, or not shaped like an adjective.
fn is_term(raw: &str, question: &[String]) -> bool {
    let term = raw.to_lowercase();
    let coded = raw.chars().any(|c| !c.is_alphabetic());
    let capital = raw.chars().next().is_some_and(char::is_uppercase);
    let adjective =
        ["ing", "ed", "al", "ous", "ive", "ic", "able", "ible", "ful", "less"].iter().any(|end| term.ends_with(end));
    let possessive = term.ends_with("'s") || term.ends_with("’s");
    !possessive
        && !term.is_empty()
        && !text::is_stopword(&term)
        && !ORDINARY.contains(&term.as_str())
        && !question.contains(&term)
        && (coded || capital || !adjective)
}

/// Kinds of thing that code names: "which method", "which attribute", "which feature" is answered by a sentence
/// that writes one as code (`split_off_left`, `#[unwrap(ref)]`, `write!`, `Configuration::with_limit`).
const CODE_KINDS: &[&str] = &[
    "method",
    "function",
    "macro",
    "attribute",
    "trait",
    "struct",
    "enum",
    "field",
    "option",
    "flag",
    "feature",
    "variable",
    "module",
    "parameter",
    "argument",
    "setting",
    "constant",
];

/// Whether a word of a sentence is written as code the question does not name: a path (`a::b`), an attribute
/// (`#[…]`), a long flag (`--name`), a snake_case or camelCase identifier, a call (`name()`) or a macro (`name!`).
fn names_code(raw: &str, question: &[String]) -> bool {
    let word = raw.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '"' | '“' | '”' | '`' | '.' | '\'' | '’'));
    let ident = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_');
    let macro_name = word.strip_suffix('!').is_some_and(|w| ident(w) && w.chars().all(|c| !c.is_uppercase()));
    let call = word.strip_suffix("()").is_some_and(ident);
    let snake = word.split('_').filter(|p| !p.is_empty()).count() >= 2 && ident(word.trim_matches('_'));
    let camel = ident(word) && word.chars().skip(1).any(char::is_uppercase) && word.chars().any(char::is_lowercase);
    let coded = word.contains("::") || word.starts_with("#[") || word.starts_with("--") && word.len() > 3;
    let parts = text::tokens(word);
    let named = !parts.is_empty() && parts.iter().all(|p| question.contains(p));
    (coded || snake || camel || call || macro_name) && !named
}

/// Nouns that say what sort of thing is asked without naming the sort: in "which error type", "error" is the kind.
const GENERIC_HEADS: &[&str] = &["type", "kind", "sort", "name"];

/// Whether `word` is a CamelCase identifier the question does not name, whose last part is the asked kind: Rust's
/// types are named for what they are (`HandleErrorLayer` is a layer, `TryUnwrapError` an error, `IntoIter` no
/// iterator's name), in a link to its documentation or not (`[HandleErrorLayer]`). The kind is the phrase's head
/// noun, or the noun before a generic head ("what error type").
fn typed_identifier(word: &str, kind: &[String], question: &[String]) -> bool {
    let name = word.split(['<', '(', ':', '&', '[', ']']).find(|p| !p.is_empty()).unwrap_or("");
    let parts: Vec<usize> = name.char_indices().filter(|(_, c)| c.is_uppercase()).map(|(i, _)| i).collect();
    let camel = name.chars().all(char::is_alphanumeric) && parts.first() == Some(&0) && parts.len() >= 2;
    if !camel || question.contains(&name.to_lowercase()) {
        return false;
    }
    let last = name[parts[parts.len() - 1]..].to_lowercase();
    let asked = match kind {
        [.., noun, head] if GENERIC_HEADS.contains(&head.as_str()) => noun,
        [.., head] => head,
        [] => return false,
    };
    last.len() >= 3 && text::stem(&last) == text::stem(asked)
}

/// The code identifiers a question names that capitalised-name spans miss: `is_foo`, `Router::layer` and its
/// type, `BitSlice` in mid-sentence, and the names inside an attribute or a call (`#[derive(Constructor)]` names
/// `Constructor`). A lowercase word without an underscore is an ordinary word, even inside code (`derive`).
pub(super) fn identifiers(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut keep = |word: &str| {
        if word.chars().count() >= 3 && !out.iter().any(|o| o == word) {
            out.push(word.to_string());
        }
    };
    for raw in question.split_whitespace() {
        let token = raw.trim_matches(|c: char| matches!(c, '?' | '.' | ',' | ';' | ':' | '"' | '\'' | '`' | '“' | '”'));
        let coded = token.contains(['(', '[', '#', '<', '{']) || token.contains("::");
        let parts = token.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|p| !p.is_empty());
        for part in parts {
            let inner_capital = part.chars().skip(1).any(char::is_uppercase) && part.chars().any(char::is_lowercase);
            let snake = part.contains('_') && part.chars().any(char::is_alphabetic);
            let capital = part.chars().next().is_some_and(char::is_uppercase);
            if snake || inner_capital || (coded && capital) {
                keep(part);
            }
        }
        if token.contains("::") && !token.contains(['(', '[', '<']) {
            keep(token);
        }
    }
    out
}

/// Whether a sentence is code that lost its fence (a window of a long code block cut at ingestion): it opens like
/// a declaration or an attribute, or two words and a fifth of all carry code's punctuation. A semicolon alone is
/// prose's too (a table row read as "Part: Fresnel lens; Supplier: Kestrel Optics").
pub(super) fn looks_like_code(sentence: &str) -> bool {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let Some(first) = words.first() else { return false };
    let opens = ["let", "use", "fn", "impl", "pub", "struct", "enum", "mod", "#", "#[", "}", "};", ");", "//", "$"];
    // A keyword with its generics or visibility written on ("impl<S> FromRequest<S> for …", "pub(crate) fn …").
    let keyword = first.split(['<', '(']).next().unwrap_or(first);
    if opens.contains(&keyword) || first.starts_with("#[") || first.starts_with("::") || first.ends_with("!(") {
        return true;
    }
    const MARKS: &[&str] = &["::", "{", "}", ");", "=>", "->", "//", "!(", "()", "|", "==", "&mut", "^^"];
    let coded = words.iter().filter(|w| **w == "=" || MARKS.iter().any(|m| w.contains(m))).count();
    // Prose that names code inline (".with_varint_encoding() has been renamed to .with_variable_int_encoding().")
    // is still mostly plain words, and has no statement's marks.
    let statement =
        words.iter().any(|w| *w == "=" || ["{", "}", ";", "=>", "//", "==", "#["].iter().any(|m| w.contains(m)));
    let plain = words
        .iter()
        .filter(|w| {
            let w = w.trim_end_matches([',', '.', ';', ':']);
            w.len() >= 2 && w.chars().all(|c| c.is_ascii_lowercase())
        })
        .count();
    words.len() >= 4 && coded >= 2 && coded * 5 >= words.len() && (statement || plain * 2 < words.len())
}

/// Whether the sentence is where a window of a longer text begins, cut mid-sentence: the first of a card that is
/// not its document's first window (`doc#N`, N > 0), opening with a lowercase letter or with punctuation. Its words
/// still answer (the sentence's end is often the answer), but it is quoted as the fragment it is.
pub(super) fn cut_off(card: &Card, index: usize, sentence: &str) -> bool {
    let later_window = card.hit.id.rsplit_once('#').is_some_and(|(_, n)| n != "0");
    index == 0
        && later_window
        && sentence
            .chars()
            .next()
            .is_some_and(|c| c.is_lowercase() || matches!(c, ')' | ']' | '}' | ',' | ';' | ':' | '.' | '>' | '|'))
}

/// Each sentence of a card with its score; on equal scores the earlier sentence wins (lead sentences tend to
/// define their subject).
pub(super) fn scored_sentences<'c>(card: &'c Card, asks: &Asks<'_>) -> Vec<(f32, &'c str)> {
    text::sentences(&card.hit.text)
        .into_iter()
        .enumerate()
        .map(|(i, s)| (sentence_score(s, card, asks) - 0.01 * i as f32, s))
        .collect()
}

/// The section a document's card is in, as ingestion recorded it ("Building for Release / Cargo as Convention").
pub(super) fn section(card: &Card) -> Option<&str> {
    card.hit.metadata.get("section").and_then(|s| s.as_str())
}

/// Whether a sentence can be quoted as an answer: a code block (fenced at ingestion, `ingest/markdown.rs`) or code
/// that lost its fence illustrates, and a heading names a topic; neither says the answer.
pub(super) fn quotable(sentence: &str) -> bool {
    !sentence.starts_with("```") && !is_heading(sentence, &text::tokens(sentence)) && !looks_like_code(sentence)
}

/// How well a sentence answers: question words it contains, entities it names, and a bonus when its card (by its
/// title or section) is about one of the question's entities, and when it names a thing by the noun phrase a
/// "which" question asks for. Code is never the answering sentence.
pub(super) fn sentence_score(sentence: &str, card: &Card, asks: &Asks<'_>) -> f32 {
    let (stems, entities) = (&asks.stems, &asks.entities);
    if !quotable(sentence) {
        return 0.0;
    }
    let tokens = text::tokens(sentence);
    let matched = stems.iter().filter(|s| uses(&tokens, s)).count() as f32;
    let named = entities.iter().filter(|e| text::mentions(sentence, e)).count() as f32;
    let (title, section) = (&card.hit.title, section(card).unwrap_or(""));
    let about =
        entities.iter().any(|e| text::mentions(title, e) || text::mentions(e, title) || text::mentions(section, e));
    if matched + named == 0.0 {
        return 0.0;
    }
    let names_kind = names_a_term_of_kind(sentence, &asks.kind, &asks.words) || counts(sentence, &asks.counted);
    // A sentence that spells out the asked abbreviation answers it, whatever else it shares with the question.
    let spells = asks.abbreviation.as_deref().is_some_and(|a| abbreviations::expands(sentence, a));
    matched
        + named
        + if about { 1.5 } else { 0.0 }
        + if names_kind { 2.0 } else { 0.0 }
        + if spells { 4.0 } else { 0.0 }
}

/// Words that deny what follows them (a contraction's "n't" is read as "not").
const NEGATIONS: &[&str] = &["not", "never", "no", "cannot", "neither", "nor"];

/// A text's tokens with each "n't" read as "not": "isn't" gives is, not.
fn uncontracted(text: &str) -> Vec<String> {
    text::tokens(&text.replace("n't", " not").replace("n’t", " not"))
}

/// Whether a yes/no question's answering sentence says no: it denies one of the question's own words ("… the
/// fallback is not called" for "is the fallback called?", a negation at most two words before it), the question
/// denies nothing itself, and the sentence speaks of most of what the question asks (at least half its keyword
/// stems), so that the denial is of the asked predicate, not of something beside it. Only a denial is read so:
/// a sentence that affirms the question's words may still speak of another case.
pub(super) fn denies(sentence: &str, question: &str, asks: &Asks<'_>) -> bool {
    let negation = |t: &String| NEGATIONS.contains(&t.as_str());
    if uncontracted(question).iter().any(negation) || asks.stems.is_empty() {
        return false;
    }
    let tokens = uncontracted(sentence);
    let asked = |t: &String| asks.stems.iter().any(|s| text::stem(t) == *s);
    let matched = asks.stems.iter().filter(|s| tokens.iter().any(|t| text::stem(t) == **s)).count();
    let denied = tokens.iter().enumerate().any(|(i, t)| {
        negation(t) && tokens[i + 1..].iter().take(3).any(|next| asked(next) && !text::is_stopword(next))
    });
    denied && matched * 2 >= asks.stems.len()
}

/// Whether a sentence's tokens use the question word stemmed `stem`, or its negation ([`negated`]).
pub(super) fn uses(tokens: &[String], stem: &str) -> bool {
    tokens.iter().any(|t| text::stem(t) == stem || negated(t, stem))
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
        let q = "What is the minimum supported rustc version for the crate?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(!names("However, crate 1.y may require a newer minimum version of Rust."), "a comparative");
        let q = "What type do integer literals default to?";
        assert!(!names_a_term_of_kind("Tell Rust the variable’s type.", &kind(q), &words(q)));
        let q = "What is the default floating-point type in Rust?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("The default type is f64 because on modern CPUs it is as fast as f32."));
        assert!(!names("Rust has four primary scalar types: integers, floating-point numbers and characters."));
        assert!(!names("A type is important."), "no definite noun phrase, and no term");
        assert!(!names("The type is the same."), "an ordinary adjective");
    }

    #[test]
    fn a_sentence_that_denies_the_asked_predicate_answers_no() {
        fn asks(words: &[String]) -> Asks<'_> {
            Asks { stems: words.iter().map(|w| text::stem(w)).collect(), ..Default::default() }
        }
        let denies = |sentence: &str, q: &str| denies(sentence, q, &asks(&text::content_words(q)));
        let q = "If a request matches a route but its handler returns 404, is the fallback called?";
        assert!(denies("If a handler is matched by a request but returns 404 the fallback is not called.", q));
        assert!(!denies("If a handler returns 404 the fallback is called.", q), "it affirms");
        assert!(!denies("The fallback is not a handler.", q), "too little of the question");
        let q = "Can DDL statements be used in prepared statements?";
        assert!(denies("DDL statements cannot generally be used in prepared statements.", q));
        assert!(denies("DDL statements can't be prepared statements.", q));
        assert!(!denies("BitSlice<T, O> is used in prepared DDL statements.", q), "a type parameter T");
        let q = "Is the fallback not called?";
        assert!(!denies("The fallback is not called.", q), "the question itself denies");
    }

    #[test]
    fn an_identifier_named_for_the_asked_kind_is_one() {
        let kind = |q: &str| asked_kind(&reader::asked::asked(q));
        let words = |q: &str| reader::asked::asked(q).words;
        let q = "Which layer handles errors from fallible middleware?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("axum provides HandleErrorLayer to turn such errors into responses."));
        assert!(names("That is done with [HandleErrorLayer]:"), "a link to its documentation names it too");
        assert!(!names("Errors from middleware must be handled with Router::layer."), "not a layer's name");
        let q = "What error type does try_unwrap_foo return?";
        assert_eq!(kind(q), ["error", "type"]);
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("It returns Result<T, TryUnwrapError<Self>> when the variant differs."));
        assert!(!names("It returns a String describing the variant."));
        let q = "Which layer wraps a HandleErrorLayer?";
        assert!(!names_a_term_of_kind("A HandleErrorLayer is a layer.", &kind(q), &words(q)), "named by the question");
    }

    #[test]
    fn a_which_method_question_is_answered_by_a_sentence_that_writes_one_as_code() {
        let kind = |q: &str| asked_kind(&reader::asked::asked(q));
        let words = |q: &str| reader::asked::asked(q).words;
        let q = "Which method does the UnindexedConsumer trait use for splitting?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("Unindexed consumers split with split_off_left instead."));
        assert!(names("It calls Configuration::with_limit to bound the input."));
        assert!(names("The format is passed to write! as its arguments."));
        assert!(!names("The UnindexedConsumer trait is used for splitting."), "named by the question");
        assert!(!names("This method splits the work in two."), "no code");
        let q = "Which attribute makes Unwrap generate methods that return references?";
        let names = |sentence: &str| names_a_term_of_kind(sentence, &kind(q), &words(q));
        assert!(names("Put the #[unwrap(ref)] attribute on the enum."));
        let q = "Which keyword brings paths into scope?";
        assert!(
            !names_a_term_of_kind("Use max_size to bring it in.", &kind(q), &words(q)),
            "a keyword is no code kind"
        );
    }

    #[test]
    fn a_question_s_code_identifiers_are_what_it_names() {
        assert_eq!(identifiers("What method does #[derive(Constructor)] generate?"), ["Constructor"]);
        assert_eq!(identifiers("What does try_unwrap_foo return?"), ["try_unwrap_foo"]);
        assert_eq!(identifiers("In what order do repeated Router::layer calls run?"), ["Router", "Router::layer"]);
        assert_eq!(identifiers("Which trait does a BitSlice need?"), ["BitSlice"]);
        assert!(identifiers("Where was the director of film La Strada born?").is_empty());
    }

    #[test]
    fn code_that_lost_its_fence_is_told_from_prose() {
        assert!(looks_like_code("let app = Router::new() .route(\"/\", get(handler)); // the handler runs"));
        assert!(looks_like_code("# use derive_more::Display;"));
        // A window that begins inside a code block loses its fence: the keyword still says code.
        assert!(looks_like_code(
            "impl<S> FromRequest<S> for ValidatedBody where Bytes: FromRequest<S>, S: Send + Sync"
        ));
        assert!(looks_like_code("pub(crate) fn parse(input: &str) -> Result<Config, Error>"));
        assert!(looks_like_code(
            "assert_eq!( Maybe::<()>::Nothing.try_unwrap_just().map_err(|err| err.input), Err(x));"
        ));
        assert!(!looks_like_code(
            "When calling .load::<i16>() on a 12-bit slice, the load will sign-extend it to i16."
        ));
        assert!(!looks_like_code("Fresnel lens; Supplier: Kestrel Optics"));
        assert!(!looks_like_code(".with_varint_encoding() has been renamed to .with_variable_int_encoding()."));
        assert!(looks_like_code("for x in v.iter() { println!(\"{}\", x); }"));
        assert!(looks_like_code("_more::Display; #[display(\"{_0:^o}\")] // `^` is centering, but has no effect"));
        assert!(!looks_like_code("Specifying concrete types is also supported via #[as_mut(<types>)] attribute."));
    }

    #[test]
    fn a_window_s_first_sentence_is_cut_off_when_it_opens_in_lowercase() {
        let hit = sleuth_messages::Hit {
            id: "d#2".into(),
            doc_id: "d".into(),
            title: "What #[derive(Unwrap)] generates".into(),
            text:
                "unwrap(ref)] attribute on that variant, then unwrap_foo_ref is generated. You can use #[unwrap(ref)]."
                    .into(),
            score: 1.0,
            metadata: sleuth_messages::JsonMap::new(),
        };
        let mut card = Card::new(1, 1, hit);
        let sentences = text::sentences(&card.hit.text);
        assert!(cut_off(&card, 0, sentences[0]));
        assert!(!cut_off(&card, 1, sentences[1]));
        card.hit.id = "d#0".into();
        assert!(!cut_off(&card, 0, sentences[0]), "a document's first window begins where its text does");
    }

    #[test]
    fn a_how_many_question_is_answered_by_a_count_of_what_it_counts() {
        let q = "How many type families from the standard library is the BitStore trait implemented on?";
        let counted = counted(q, &reader::asked::asked(q));
        assert_eq!(counted.first().map(String::as_str), Some("type"));
        assert!(counts("It is implemented on three type families available from the standard libraries:", &counted));
        assert!(!counts("The bitarr! macro can accept any number of bits in 33 .. 64.", &counted));
        let q = "What method does #[derive(Constructor)] generate?";
        let (kind, words) = (asked_kind(&reader::asked::asked(q)), reader::asked::asked(q).words);
        assert!(names_a_term_of_kind(
            "A common pattern is to create a static constructor method called new.",
            &kind,
            &words
        ));
    }

    #[test]
    fn a_negated_word_answers_for_the_word_it_negates() {
        assert!(negated("immutable", text::stem("mutable")));
        assert!(negated("non-blocking", text::stem("blocking")));
        assert!(!negated("mutable", text::stem("mutable")));
        assert!(!negated("inform", text::stem("form")));
    }
}
