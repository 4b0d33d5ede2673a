//! Abbreviations: the one a "what does X stand for" question asks to expand, and whether a sentence spells it out
//! ("the TOML (Tom's Obvious, Minimal Language) format"), for the sentence scorer (`sentences.rs`).

use crate::text;

/// The abbreviation a question asks to expand: "What does TOML stand for?", "What does the attribute cfg stand
/// for?", "What is NFA short for?" give TOML, cfg and NFA.
pub(super) fn asked(question: &str) -> Option<String> {
    let lower = question.to_lowercase();
    let end = ["stands for", "stand for", "short for", "an abbreviation of", "an abbreviation for"]
        .iter()
        .find_map(|phrase| lower.find(phrase))?;
    let word = question[..end].split_whitespace().last()?;
    let word = word.trim_matches(|c: char| !c.is_alphanumeric());
    (word.chars().count() >= 2 && !text::is_stopword(&word.to_lowercase())).then(|| word.to_string())
}

/// Words an expansion skips when it is spelt out: "Tom's Obvious, Minimal Language", "Basic Input/Output System".
const EXPANSION_CONNECTORS: &[&str] = &["of", "and", "the", "a", "an", "for", "to", "in", "on", "with"];

/// Whether `words` spell `abbreviation` by their initials, connectors aside: "nondeterministic finite automaton"
/// spells NFA.
fn spelt_by(words: &str, abbreviation: &str) -> bool {
    let initials: String = text::tokens(words)
        .iter()
        .filter(|w| !EXPANSION_CONNECTORS.contains(&w.as_str()))
        .filter_map(|w| w.chars().next())
        .collect();
    let letters: String = abbreviation.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase();
    letters.len() >= 2 && initials == letters
}

/// Whether the sentence spells out `abbreviation`: "X stands for …", "X (words that spell it)" or "words that
/// spell it (X)".
pub(super) fn expands(sentence: &str, abbreviation: &str) -> bool {
    let lower = sentence.to_lowercase();
    let abbr = abbreviation.to_lowercase();
    let said = ["stands for", "is short for", "an abbreviation of", "an abbreviation for"]
        .iter()
        .any(|phrase| lower.find(phrase).is_some_and(|at| text::tokens(&lower[..at]).contains(&abbr)));
    if said {
        return true;
    }
    // Each parenthesis: the words in it spell the abbreviation written before it, or the abbreviation in it is
    // spelt by as many words before it.
    sentence.match_indices('(').any(|(open, _)| {
        let Some(close) = sentence[open..].find(')').map(|i| open + i) else { return false };
        let inside = &sentence[open + 1..close];
        let before: Vec<&str> = sentence[..open].split_whitespace().collect();
        let written_before = before.last().is_some_and(|w| text::tokens(w).last() == Some(&abbr));
        if written_before && spelt_by(inside, abbreviation) {
            return true;
        }
        text::tokens(inside) == [abbr.clone()]
            && (1..=before.len().min(8)).any(|n| spelt_by(&before[before.len() - n..].join(" "), abbreviation))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abbreviation_is_answered_by_the_sentence_that_spells_it_out() {
        assert_eq!(asked("What does TOML stand for?").as_deref(), Some("TOML"));
        assert_eq!(asked("What does the attribute cfg stand for?").as_deref(), Some("cfg"));
        assert_eq!(asked("What is NFA short for?").as_deref(), Some("NFA"));
        assert_eq!(asked("What does the flag stand for?").as_deref(), Some("flag"));
        assert_eq!(asked("What does the river flow into?"), None);
        assert!(expands("This file is in the TOML (Tom’s Obvious, Minimal Language) format.", "TOML"));
        assert!(expands("Many advocate a purely NFA (nondeterministic finite automaton) based approach.", "NFA"));
        assert!(expands("It uses a nondeterministic finite automaton (NFA) instead.", "NFA"));
        assert!(expands("The attribute cfg stands for configuration.", "cfg"));
        assert!(!expands("The NFA (see below) is slower.", "NFA"));
        assert!(!expands("Write a Cargo.toml (the manifest) first.", "TOML"));
        assert!(!expands("A DFA (deterministic finite automaton) is faster.", "NFA"));
    }
}
