//! How well a name fits the kind of answer asked: a place after "in", a person after "directed by", an
//! institution where someone works or studies, a people's adjective for a nationality; judged from the words
//! around the name and from its own card when the window has one.

use sleuth_messages::{AnswerKind, Card};

use super::{
    asked::{self, Asked},
    spans::{self, Span},
    words::{card_named, same_word},
};
use crate::text;

const PLACE_WORDS: &[&str] = &[
    "city",
    "town",
    "village",
    "country",
    "state",
    "county",
    "province",
    "region",
    "capital",
    "municipality",
    "district",
    "located",
    "river",
    "island",
    "commune",
    "borough",
    "suburb",
    "kingdom",
    "republic",
];
const PERSON_WORDS: &[&str] = &["born", "died", "he", "she", "his", "her", "actor", "actress", "singer", "writer"];

/// Last words that name an institution one works or studies at: "Yale College", "Abingdon School".
const INSTITUTION_HEADS: &[&str] = &[
    "university",
    "college",
    "school",
    "institute",
    "institution",
    "academy",
    "conservatory",
    "conservatoire",
    "seminary",
    "polytechnic",
    "hospital",
    "laboratory",
    "observatory",
    "museum",
    "gymnasium",
    "lyceum",
    "faculty",
    "company",
    "corporation",
    "studio",
    "studios",
    "library",
    "theatre",
    "theater",
];

/// Whether a name is an institution's: headed by an institution's noun ("Yale College", "University of
/// Oxford") or an acronym of three to six capitals ("UCLA", "VGIK").
fn is_institution(name: &str) -> bool {
    let words = text::tokens(name);
    let headed = |w: Option<&String>| w.is_some_and(|w| INSTITUTION_HEADS.contains(&w.as_str()));
    let acronym = (3..=6).contains(&name.len()) && name.chars().all(|c| c.is_ascii_uppercase());
    headed(words.last()) || headed(words.first()) || acronym
}

/// The place or institution a name of an office is held at: "President of Yale College" → "Yale College".
fn office_held_at(name: &str) -> Option<&str> {
    let (office, rest) = name.split_once(" of ")?;
    let office_shaped =
        !office.contains(' ') && rest.starts_with(char::is_uppercase) && asked::is_person_noun(&office.to_lowercase());
    office_shaped.then_some(rest)
}

/// An office held at a place or an institution names the place: "President of Yale College" is at "Yale
/// College", "Mayor of Lyon" in "Lyon".
pub(super) fn past_office(span: Span) -> Span {
    match office_held_at(&span.text) {
        Some(rest) => Span { at: span.at + span.text.len() - rest.len(), text: rest.to_string(), shape: span.shape },
        None => span,
    }
}

/// Titles written before a name that are not person nouns the question could ask by.
const TITLES: &[&str] =
    &["minister", "chancellor", "governor", "senator", "mayor", "general", "bishop", "archbishop", "pope"];

/// A person asked for is named without the title written before the name: "Prime Minister Tage Erlander" is "Tage
/// Erlander", "North Korean Supreme Leader Kim Jong-il" is "Kim Jong-il". Kept when fewer than two capitalised
/// words would remain ("King Albert").
pub(super) fn past_title(span: Span) -> Span {
    let mut words = Vec::new();
    let mut offset = 0;
    for word in span.text.split(' ') {
        words.push((offset, word));
        offset += word.len() + 1;
    }
    let is_title = |word: &str| {
        let lower = word.to_lowercase();
        word.starts_with(char::is_uppercase) && (TITLES.contains(&lower.as_str()) || asked::is_person_noun(&lower))
    };
    match words.iter().rposition(|(_, w)| is_title(w)) {
        Some(i) if words.len() - i > 2 && words[i + 1..].iter().all(|(_, w)| w.starts_with(char::is_uppercase)) => {
            let at = words[i + 1].0;
            Span { at: span.at + at, text: span.text[at..].to_string(), shape: span.shape }
        }
        _ => span,
    }
}

/// How well a name fits the kind asked, from the words around it and from its own card when the window has one.
pub(super) fn fit(a: &Asked, span: &Span, sentence: &str, window: &[&Card]) -> f32 {
    let (kind, noun) = (a.kind, a.noun.as_deref());
    let before = spans::words_before(sentence, span.at, 2);
    let prev = before.last().map(String::as_str).unwrap_or("");
    // A span the card's title renamed ("the name the card opens with") is longer than what the sentence holds.
    let after = sentence.get(span.at + span.text.len()..).unwrap_or("").trim_start();
    let own = card_named(window, &span.text).map(|c| {
        let first = text::sentences(&c.hit.text).first().map(|s| s.to_lowercase()).unwrap_or_default();
        text::tokens(&first)
    });
    let own_has = |words: &[&str]| own.as_ref().is_some_and(|t| t.iter().any(|w| words.contains(&w.as_str())));
    let mut score = 0.0;
    // One capitalised word right before a common noun is an adjective ("an English composer"): a nationality,
    // not a place, a person or a thing.
    let before_noun = before_common_noun(span, sentence);
    let adjective = !span.text.contains(' ') && before_noun;
    if noun == Some("nationality") {
        // A nationality is an adjective of a people ("Chinese American actor", "Swedish"), not a church or a band.
        return match (before_noun, names_a_people(&span.text)) {
            (true, true) => 1.5,
            (false, true) => 0.5,
            (true, false) => 0.0,
            (false, false) => -1.0,
        };
    }
    if adjective {
        return -1.5;
    }
    if span.at == 0 && !span.text.contains(' ') {
        let lower = span.text.to_lowercase();
        if lower.ends_with("ed") || lower.ends_with("ing") || lower.ends_with("ly") {
            return -2.0;
        }
    }
    match kind {
        // Where someone works or studies is an institution, wherever it stands.
        AnswerKind::Place if a.institution && is_institution(&span.text) => {
            score += 1.5;
            if ["at", "of", "from"].contains(&prev) {
                score += 1.0;
            }
        }
        AnswerKind::Place => {
            if ["in", "at", "from", "near", "of"].contains(&prev) {
                score += 1.0;
            }
            if prev == "by" || after.starts_with("(born") || after.starts_with("( born") {
                score -= 1.0;
            }
            if own_has(PLACE_WORDS) {
                score += 1.0;
            }
            if own_has(&["born"]) {
                score -= 1.0;
            }
            if !["in", "at", "from", "near", "of"].contains(&prev) && !own_has(PLACE_WORDS) {
                score -= 0.5;
            }
            // A title before two names is a person ("Prime Minister Tage Erlander"), unless a place's noun ends
            // it ("Prince Edward Island").
            let last = text::tokens(&span.text).pop().unwrap_or_default();
            if past_title(span.clone()).text != span.text && !PLACE_WORDS.contains(&last.as_str()) {
                score -= 1.5;
            }
        }
        AnswerKind::Person => {
            // "directed by X", "married to X": the agent of a passive or the other side of a relation.
            if ["by", "to", "married", "with", "son", "daughter", "wife", "husband"].contains(&prev) {
                score += 1.0;
            }
            if after.starts_with('(') {
                score += 0.5;
            }
            if ["in", "at", "near"].contains(&prev) {
                score -= 1.0;
            }
            if own_has(PERSON_WORDS) {
                score += 0.5;
            }
            if own_has(PLACE_WORDS) && !own_has(&["born"]) {
                score -= 1.0;
            }
            if span.text.split_whitespace().count() >= 2 {
                score += 0.3;
            }
            // An office is not the person who holds it: "President of Somalia" answers no "who".
            if office_held_at(&span.text).is_some() {
                score -= 1.5;
            }
        }
        _ => {
            if let Some(noun) = noun
                && own.as_ref().is_some_and(|t| t.iter().any(|w| same_word(w, noun)))
            {
                score += 1.0;
            }
        }
    }
    score
}

/// Whether a common noun follows the name in its sentence: "Canadian" in "was a Canadian cyclist".
fn before_common_noun(span: &Span, sentence: &str) -> bool {
    let after = sentence.get(span.at + span.text.len()..).unwrap_or("").trim_start();
    let next = after.split_whitespace().next().unwrap_or("");
    next.chars().next().is_some_and(char::is_lowercase) && !text::is_stopword(&next.to_lowercase())
}

/// A people's adjective used as one ("a Canadian cyclist"): a nationality, which answers no "where" and no "who".
pub(super) fn is_peoples_adjective(span: &Span, sentence: &str) -> bool {
    !span.text.contains(' ') && names_a_people(&span.text) && before_common_noun(span, sentence)
}

/// Whether every word of a name has the shape of an English adjective of a people: "Chinese American",
/// "Swedish", "Icelandic", "Pakistani", "French".
pub(super) fn names_a_people(name: &str) -> bool {
    name.split_whitespace().all(|word| {
        let lower = word.to_lowercase();
        word.chars().next().is_some_and(char::is_uppercase)
            && lower.len() > 3
            && ["an", "ese", "ish", "ic", "i", "ch"].iter().any(|end| lower.ends_with(end))
    })
}
