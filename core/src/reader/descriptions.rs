//! The descriptions a question's chain goes through: "the director of film X", "X's mother", "the city where X
//! died". Each is given by the words that say how it links to the next thing.

use crate::text;

/// English auxiliary verbs: they open yes/no questions and are skipped when reading a clause's own verb.
pub(super) const AUXILIARIES: &[&str] =
    &["is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can", "could", "will", "would", "should"];

/// Words that open a relative clause after a noun: "the city *where* X died", "the company *that* made X".
const CLAUSE_OPENERS: &[&str] = &["where", "that", "which", "who", "whom"];

/// Prepositions that may stand before "which" or "whom": "the city *in which* X was born".
const CLAUSE_PREPOSITIONS: &[&str] = &["in", "at", "on", "from", "for", "by", "with", "to", "of"];

/// A word without punctuation around it or a possessive after it: "father's" is "father".
fn bare(w: &str) -> String {
    let w = w.trim_matches(|c: char| !c.is_alphanumeric());
    w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")).unwrap_or(w).to_lowercase()
}

fn is_name_word(raw: &str, name_words: &[String]) -> bool {
    name_words.contains(&bare(raw)) || raw.chars().next().is_some_and(char::is_uppercase)
}

/// The index just past the opener of a relative clause that starts at `at`, if one does: "where", "that", or a
/// preposition with "which"/"whom".
fn clause_start(raw: &[&str], at: usize) -> Option<usize> {
    let first = bare(raw.get(at)?);
    if CLAUSE_OPENERS.contains(&first.as_str()) {
        return Some(at + 1);
    }
    let second = bare(raw.get(at + 1)?);
    (CLAUSE_PREPOSITIONS.contains(&first.as_str()) && ["which", "whom"].contains(&second.as_str())).then_some(at + 2)
}

/// Whether the question word is still to come: "a series that originally broadcast on what station?" asks for the
/// clause's own relation, so the clause is the final hop, not a link on the way.
fn asks_within(rest: &[&str]) -> bool {
    rest.iter().any(|w| ["what", "which", "when", "where", "who", "whom", "whose", "how"].contains(&bare(w).as_str()))
}

/// The verb of a relative clause from `from`: its first word that is neither a name's, an auxiliary nor a
/// function word ("where Ada Lee was born" gives "born").
fn clause_verb(raw: &[&str], from: usize, name_words: &[String]) -> Option<String> {
    raw[from..].iter().take(8).find_map(|w| {
        let word = bare(w);
        // An adverb ("originally") stands before the verb.
        let skip = word.is_empty()
            || text::is_stopword(&word)
            || word.ends_with("ly")
            || AUXILIARIES.contains(&word.as_str())
            || is_name_word(w, name_words);
        (!skip).then_some(word)
    })
}

/// The describing nouns of a question, in order: a content word followed by "of", the word after a possessive,
/// each with the words after it that are neither function words nor part of a name; and for a noun followed by a
/// relative clause, the clause's verb ("the city where X died" gives `["died"]`).
pub(super) fn chain_descriptions(q: &str, name_words: &[String]) -> Vec<Vec<String>> {
    let raw: Vec<&str> = q.split_whitespace().collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (i, w) in raw.iter().enumerate() {
        let word = bare(w);
        let content = !word.is_empty() && !text::is_stopword(&word) && !name_words.contains(&word);
        // The asked noun ("what body of water") is what the answer is, not a description the chain goes through.
        let asked = i > 0 && ["what", "which"].contains(&bare(raw[i - 1]).as_str());
        if !content || asked {
            continue;
        }
        let possessed = i > 0 && (raw[i - 1].ends_with("'s") || raw[i - 1].ends_with("’s"));
        let described = raw.get(i + 1).is_some_and(|n| bare(n) == "of");
        if described || possessed {
            let mut link = vec![word];
            for next in &raw[i + 1..] {
                let n = bare(next);
                if n.is_empty() || text::is_stopword(&n) {
                    continue;
                }
                if is_name_word(next, name_words) || !described || link.len() >= 3 {
                    break;
                }
                link.push(n);
            }
            out.push(link);
        } else if !w.ends_with([',', ';', ':'])
            && !is_name_word(w, name_words)
            && let Some(from) = clause_start(&raw, i + 1)
            && !asks_within(&raw[from..])
            && let Some(verb) = clause_verb(&raw, from, name_words)
        {
            // The noun stays a final cue: it names the bridge, which the final hop's sentence is about
            // ("Kassel is a city …" for "the city where …").
            out.push(vec![verb]);
        }
    }
    out
}
