//! A relative that a card's text names, for a chain's last link when the evidence has no card of that person: "He
//! was the son of Odo III, Duke of Burgundy and Alice de Vergy" names the father first and the mother second, as
//! English biographies do; "He married Bhanumathi Ramakrishna" names a spouse. English only, no data set's
//! phrasings.

use std::sync::LazyLock;

use regex::Regex;

use super::kin::{self, Sex};
use crate::text;

/// "son of", "daughter of", "child of": what follows names the parents, the father first.
static CHILD_OF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:son|daughter|child)\s+of\s+").expect("static regex"));
/// "his parents were": what follows names both, the father first.
static PARENTS_ARE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:his|her|their)\s+parents\s+(?:were|are)\s+").expect("static regex"));
/// "his father was", "her mother,": what follows names that parent.
static PARENT_IS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:his|her)\s+(father|mother)(?:\s+was|\s+is|,)?\s+").expect("static regex"));
/// "married", "married to", "his wife", "the wife of": what follows names a spouse.
static SPOUSE_IS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:married(?:\s+to)?|(?:his|her)\s+(?:wife|husband|spouse),?|(?:wife|husband|widow|widower)\s+of)\s+",
    )
    .expect("static regex")
});

/// Lower-case words that may stand between "married" and the name it leads to ("married the actress Jane Doe").
const LEAD_IN: usize = 3;

/// Whether `word` may be part of a name: capitalised, a regnal number or an ordinal ("2nd"), or a connector.
fn name_word(word: &str) -> bool {
    let bare = word.trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '.'));
    // "al-Malik", "ibn-Said": a lower-case particle joined to a capitalised name.
    let joined = bare.split_once('-').is_some_and(|(_, name)| name.starts_with(char::is_uppercase));
    bare.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        || text::NAME_CONNECTORS.contains(&bare)
        || joined
}

/// Whether `word` opens a name: capitalised and not a month or a sentence's capitalised function word.
fn opens_name(word: &str) -> bool {
    let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
    bare.chars().next().is_some_and(char::is_uppercase)
        && !super::spans::MONTHS.contains(&bare.to_lowercase().as_str())
        && !text::is_stopword(&bare.to_lowercase())
}

/// The clause that follows a kinship phrase: up to a parenthesis, a semicolon, a quote or a dash, or a full stop
/// that a function word follows ("Artatama I. He was"; the sentence splitter keeps "I." as an initial).
fn clause(rest: &str) -> &str {
    let mut end = rest.find([';', '(', ')', '"', '“', '–', '—', ':']).unwrap_or(rest.len());
    let stop = rest.match_indices(". ").map(|(i, _)| i).find(|i| {
        let next = rest[i + 2..].split_whitespace().next().unwrap_or("");
        text::is_stopword(&next.to_lowercase())
    });
    if let Some(stop) = stop {
        end = end.min(stop);
    }
    rest[..end].trim_end_matches(['.', ' '])
}

/// Further comma parts that are a title of the name before them ("Odo III, Duke of Burgundy"; "Sir Edward Buxton,
/// 2nd Baronet"): parts whose words all may be a name's, at most two.
fn with_titles(name: &str, parts: &[&str]) -> String {
    let mut out = name.to_string();
    for part in parts.iter().take(2) {
        let words: Vec<&str> = part.split_whitespace().collect();
        // "Prince of Waldeck and Pyrmont": "and" between two capitalised words of a title.
        let joins = |i: usize| {
            words[i] == "and" && i > 0 && words.get(i + 1).is_some_and(|w| w.starts_with(char::is_uppercase))
        };
        let title = (0..words.len()).all(|i| name_word(words[i]) || joins(i));
        if words.is_empty() || !title || words[0].starts_with(char::is_lowercase) {
            break;
        }
        out = format!("{out}, {}", words.join(" "));
    }
    out
}

/// The name that ends a phrase ("the producer Yash Johar", "Argentine pioneer film director Leopoldo Torres Ríos"),
/// with a title after a comma; `None` when the phrase does not end in a name or names a relative of someone else
/// ("the grandson of …").
fn name_ending(phrase: &str) -> Option<String> {
    let mut parts = phrase.split(", ").map(str::trim);
    let head = parts.next()?;
    let words: Vec<&str> = head.split_whitespace().collect();
    let lowered: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    if lowered.iter().any(|w| kin::is_relative(w) && !matches!(w.as_str(), "wife" | "husband" | "consort")) {
        return None;
    }
    let mut start = words.len();
    while start > 0 && name_word(words[start - 1]) {
        start -= 1;
    }
    while start < words.len() && !opens_name(words[start]) {
        start += 1;
    }
    if start == words.len() {
        return None;
    }
    let rest: Vec<&str> = parts.collect();
    Some(with_titles(&words[start..].join(" "), &rest))
}

/// The name that opens a phrase after at most [`LEAD_IN`] lower-case words ("Bhanumathi Ramakrishna, a film
/// artist"; "the actress Jane Doe"), with a title after a comma.
fn name_opening(phrase: &str) -> Option<String> {
    let mut parts = phrase.split(", ").map(str::trim);
    let head = parts.next()?;
    let words: Vec<&str> = head.split_whitespace().collect();
    let start = words.iter().position(|w| opens_name(w))?;
    if start > LEAD_IN || words[..start].iter().any(|w| kin::is_relative(&w.to_lowercase())) {
        return None;
    }
    let end = words[start..].iter().position(|w| !name_word(w)).map_or(words.len(), |n| start + n);
    let name = words[start..end].join(" ");
    // A name that runs to the end of its part may carry a title after the comma.
    let rest: Vec<&str> = if end == words.len() { parts.collect() } else { Vec::new() };
    Some(with_titles(&name, &rest))
}

/// Whether a sentence speaks of the card's subject: it opens with a pronoun, or names the subject before `at`.
fn about(sentence: &str, at: usize, subject: &str) -> bool {
    let first = text::tokens(sentence).into_iter().next().unwrap_or_default();
    let named = text::content_words(subject);
    matches!(first.as_str(), "he" | "she" | "his" | "her")
        || text::tokens(&sentence[..at]).iter().any(|w| named.contains(w))
}

/// Titles and nouns that give the sex of the person they name: "Queen Sālote", "actress Jayachitra".
const FEMALE: &[&str] = &[
    "queen",
    "princess",
    "lady",
    "duchess",
    "countess",
    "empress",
    "archduchess",
    "baroness",
    "infanta",
    "madame",
    "mrs",
    "actress",
    "dame",
    "marchioness",
    "viscountess",
    "abbess",
    "sister",
];
const MALE: &[&str] = &[
    "king", "prince", "duke", "count", "emperor", "archduke", "baron", "sir", "lord", "infante", "mr", "earl",
    "marquess", "viscount", "caliph", "sultan", "pharaoh", "tsar", "shah",
];

/// The sex the words of a name or the words just before it give ("Queen Sālote Tupou III", "Lord of Dampierre").
fn titled_sex(words: &str) -> Option<Sex> {
    let words = text::tokens(words);
    let female = words.iter().any(|w| FEMALE.contains(&w.as_str()));
    let male = words.iter().any(|w| MALE.contains(&w.as_str()));
    match (female, male) {
        (true, false) => Some(Sex::Female),
        (false, true) => Some(Sex::Male),
        _ => None,
    }
}

/// The relative `link` ("father", "mother", "wife", "husband", "spouse") that `text`, a card about `subject`,
/// names, from the first sentence about the subject that names one: a parent from "son of A and B" (A the father,
/// B the mother, as English biographies write them, unless a title or `sex_of` says otherwise; one name alone is
/// taken for a father only) or "his mother was B"; a spouse from "married C" or "his wife C". `sex_of` gives the
/// sex of a named person where the evidence shows it. The name is returned as the text writes it.
pub fn named(link: &str, subject: &str, text: &str, sex_of: impl Fn(&str) -> Option<Sex>) -> Option<String> {
    let link = link.to_lowercase();
    let asked = match link.as_str() {
        "father" | "husband" => Some(Sex::Male),
        "mother" | "wife" => Some(Sex::Female),
        "spouse" => None,
        _ => return None,
    };
    let parent = matches!(link.as_str(), "father" | "mother");
    let sex = |name: &str| titled_sex(name).or_else(|| sex_of(name));
    for sentence in text::sentences(text) {
        let found = if parent {
            parent_in(sentence, asked?, subject, &sex)
        } else {
            SPOUSE_IS
                .find_iter(sentence)
                .filter(|m| about(sentence, m.start(), subject))
                .find_map(|m| name_opening(clause(&sentence[m.end()..])))
                .filter(|n| asked.is_none() || sex(n).is_none_or(|s| Some(s) == asked))
        };
        if let Some(name) = found.filter(|n| text::mentions(text, n) && !text::same_name(n, subject)) {
            return Some(name);
        }
    }
    None
}

/// Whether a kinship phrase at `at` describes someone other than `subject` named just before it ("Laurette,
/// daughter of Baldwin"), not the sentence's subject ("Lugaid Íardonn, son of Énna Derg, was").
fn appositive(sentence: &str, at: usize, subject: &str) -> bool {
    let before = sentence[..at].trim_end().trim_end_matches(',');
    let last = before.rsplit(char::is_whitespace).next().unwrap_or("");
    let of_subject = text::tokens(last).iter().all(|w| text::tokens(subject).contains(w));
    before.len() < sentence[..at].trim_end().len()
        && last.starts_with(char::is_uppercase)
        && !last.ends_with(')')
        && !of_subject
}

/// Where the "and" between two parents stands: the first one that is not part of a title the subject's own name
/// holds ("the son of Karl August, Prince of Waldeck and Pyrmont and Christiane" of "George I, Prince of Waldeck
/// and Pyrmont": a family shares its title).
fn between_parents(parents: &str, subject: &str) -> Option<usize> {
    let titled = |at: usize| {
        let before = parents[..at].rsplit(char::is_whitespace).next().unwrap_or("");
        let after = parents[at + " and ".len()..].split(char::is_whitespace).next().unwrap_or("");
        !before.is_empty() && !after.is_empty() && subject.contains(&format!("{before} and {after}"))
    };
    parents.match_indices(" and ").map(|(at, _)| at).find(|at| !titled(*at))
}

/// The father or mother a sentence about `subject` names.
fn parent_in(sentence: &str, asked: Sex, subject: &str, sex: &impl Fn(&str) -> Option<Sex>) -> Option<String> {
    let link = if asked == Sex::Male { "father" } else { "mother" };
    if let Some(c) =
        PARENT_IS.captures_iter(sentence).find(|c| about(sentence, c.get(0).map_or(0, |m| m.start()), subject))
        && c[1].eq_ignore_ascii_case(link)
    {
        let rest = &sentence[c.get(0)?.end()..];
        return name_opening(clause(rest));
    }
    let m = CHILD_OF
        .find_iter(sentence)
        .chain(PARENTS_ARE.find_iter(sentence))
        .filter(|m| about(sentence, m.start(), subject) && !appositive(sentence, m.start(), subject))
        .min_by_key(|m| m.start())?;
    let parents = clause(&sentence[m.end()..]);
    let (first, second) = match between_parents(parents, subject) {
        Some(at) => (parents[..at].trim_end_matches([',', ' ']), Some(&parents[at + " and ".len()..])),
        None => (parents, None),
    };
    let first = name_ending(first).or_else(|| name_opening(first));
    let second = second.and_then(name_ending);
    let of = |n: &Option<String>| n.as_deref().and_then(sex);
    // The one the evidence shows is of the asked sex; else the one in the asked place, unless shown otherwise.
    if of(&first) == Some(asked) {
        return first;
    }
    if of(&second) == Some(asked) {
        return second;
    }
    let (placed, other) = if asked == Sex::Male { (first, second) } else { (second, first) };
    match of(&placed) {
        None => placed,
        // Shown of the other sex: the other parent named, when nothing shows otherwise ("the son of Queen Sālote
        // and Viliami" names the father second).
        Some(_) => other.filter(|n| sex(n).is_none()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Sex, named};

    fn none(_: &str) -> Option<Sex> {
        None
    }

    #[test]
    fn parents_are_read_father_first_and_spouses_after_married() {
        let hugh = "Hugh IV of Burgundy (9 March 1213 – 1272) was Duke of Burgundy. Hugh was the son of Odo III, \
                    Duke of Burgundy and Alice de Vergy.";
        assert_eq!(named("father", "Hugh IV of Burgundy", hugh, none).as_deref(), Some("Odo III, Duke of Burgundy"));
        assert_eq!(named("mother", "Hugh IV of Burgundy", hugh, none).as_deref(), Some("Alice de Vergy"));
        let leo = "Leo was an Argentine film director. He was the son of Argentine pioneer film director Leopoldo \
                   Torres Ríos, with whom he collaborated.";
        assert_eq!(named("father", "Leo", leo, none).as_deref(), Some("Leopoldo Torres Ríos"));
        assert_eq!(named("mother", "Leo", leo, none), None, "one parent named: a father, never a mother");
        let rao = "P. S. Rao (1918 - 1986) was a film director. He married Bhanumathi Ramakrishna, a film artist, \
                   on 8 August 1943.";
        assert_eq!(named("wife", "P. S. Rao", rao, none).as_deref(), Some("Bhanumathi Ramakrishna"));
        let other = "Guy was a lord. William of Dampierre was the son of Guy I, Lord of Dampierre.";
        assert_eq!(named("father", "Anne of Kent", other, none), None, "a sentence about someone else");
        let grandson = "Buxton was the son of Sir Edward Buxton, 2nd Baronet, and the grandson of Sir Thomas Buxton.";
        assert_eq!(
            named("father", "Francis Buxton", grandson, none).as_deref(),
            Some("Sir Edward Buxton, 2nd Baronet")
        );
        assert_eq!(named("mother", "Francis Buxton", grandson, none), None, "a grandfather is no mother");
        assert_eq!(
            named("mother", "Ann", "Ann was born in 1900. Her mother was Mary Smith.", none).as_deref(),
            Some("Mary Smith")
        );
        let tupou = "He was the son of Queen Sālote Tupou III and Viliami Tungī Mailefihi.";
        assert_eq!(
            named("father", "Tupou IV", tupou, none).as_deref(),
            Some("Viliami Tungī Mailefihi"),
            "a queen is no father"
        );
        let pelosi = |n: &str| (n == "Nancy Pelosi").then_some(Sex::Female);
        let alexandra = "She is the daughter of Nancy Pelosi and Paul Pelosi.";
        assert_eq!(named("mother", "Alexandra Pelosi", alexandra, pelosi).as_deref(), Some("Nancy Pelosi"));
        let alix = "Her parents were Bouchard V de Montmorency and Laurette, daughter of Baldwin IV, Count of Hainaut.";
        assert_eq!(named("father", "Alix", alix, none).as_deref(), Some("Bouchard V de Montmorency"));
        assert_eq!(
            named("father", "Al-Walid", "He was the son of Caliph Abd al-Malik.", none).as_deref(),
            Some("Caliph Abd al-Malik")
        );
        let lugaid = "Lugaid Íardonn, son of Énna Derg, was a High King of Ireland.";
        assert_eq!(named("father", "Lugaid Íardonn", lugaid, none).as_deref(), Some("Énna Derg"));
        let shuttarna =
            "Shuttarna was a son of the great king Artatama I. He was an ally of Pharaoh Amenhotep III and Tiye.";
        assert_eq!(named("father", "Shuttarna II", shuttarna, none).as_deref(), Some("Artatama I"));
        assert_eq!(named("uncle", "Ann", "Ann was the daughter of Karl and Emma.", none), None);
        let waldeck =
            "He was the son of Karl August, Prince of Waldeck and Pyrmont and Countess Christiane of Zweibrücken.";
        assert_eq!(
            named("father", "George I, Prince of Waldeck and Pyrmont", waldeck, none).as_deref(),
            Some("Karl August, Prince of Waldeck and Pyrmont"),
            "the family's title is not cut at its 'and'"
        );
    }
}
