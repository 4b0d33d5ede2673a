//! Family links: the words a card uses for a kinship seen from its other end ("son of X" names X as a parent), and
//! the sex a card's pronouns give its subject, so that "X's mother" is read neither as his father nor as his wife.
//! English vocabulary only, no data set's phrasings.

use sleuth_messages::Card;

use crate::text;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sex {
    Female,
    Male,
}

/// The kinship nouns a question may use for a link, the sex each names (if any), and the words a card about the
/// other end of the link uses for it.
const KIN: &[(&str, Option<Sex>, &[&str])] = &[
    ("mother", Some(Sex::Female), &["son", "daughter", "child", "children"]),
    ("father", Some(Sex::Male), &["son", "daughter", "child", "children"]),
    ("parent", None, &["son", "daughter", "child", "children"]),
    ("son", Some(Sex::Male), &["father", "mother", "parent", "children"]),
    ("daughter", Some(Sex::Female), &["father", "mother", "parent", "children"]),
    ("child", None, &["father", "mother", "parent", "children"]),
    ("wife", Some(Sex::Female), &["married", "husband", "spouse", "consort"]),
    ("husband", Some(Sex::Male), &["married", "wife", "spouse", "consort"]),
    ("spouse", None, &["married", "wife", "husband", "consort"]),
    ("brother", Some(Sex::Male), &["brother", "sister", "sibling"]),
    ("sister", Some(Sex::Female), &["brother", "sister", "sibling"]),
];

fn kin(cue: &str) -> Option<&'static (&'static str, Option<Sex>, &'static [&'static str])> {
    let cue = cue.to_lowercase();
    let singular = cue.strip_suffix("ren").or_else(|| cue.strip_suffix('s')).unwrap_or(&cue);
    KIN.iter().find(|(noun, _, _)| *noun == cue || *noun == singular)
}

/// Relatives English names in one word beyond parents, children, spouses and siblings.
const FAR_RELATIVES: &[&str] = &[
    "uncle",
    "aunt",
    "nephew",
    "niece",
    "cousin",
    "grandfather",
    "grandmother",
    "grandparent",
    "grandson",
    "granddaughter",
    "grandchild",
    "stepfather",
    "stepmother",
    "stepson",
    "stepdaughter",
];

/// Whether a word names a relative.
pub fn is_relative(word: &str) -> bool {
    is_near_relative(word)
        || FAR_RELATIVES.contains(&word.strip_suffix('s').unwrap_or(word))
        || FAR_RELATIVES.contains(&word)
}

/// Whether a word names a parent, a child, a spouse or a sibling: a relative a card names directly.
pub fn is_near_relative(word: &str) -> bool {
    kin(word).is_some()
}

/// An in-law ("mother-in-law") is a relative through a spouse: neither the kinship its first word names nor
/// said by the same words.
fn in_law(cues: &[String]) -> bool {
    cues.iter().any(|c| c == "law")
}

/// The words that say a kinship cue from the other end and are not cues already: "son", "daughter", "child" for
/// "mother". They name the relative only when they come before the name ("the son of X"): after it they describe
/// the relative's own parents ("X, daughter of Boso").
pub fn other_end(cues: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if in_law(cues) {
        return out;
    }
    for word in cues.iter().filter_map(|c| kin(c)).flat_map(|k| k.2.iter()) {
        if !cues.iter().chain(&out).any(|c| c == word) {
            out.push((*word).to_string());
        }
    }
    out
}

/// The words that, just before a name, say it is a spouse ("He was married to Teutberga"): read against a link to a
/// parent or a child. Only the marriage itself: "the son of Karl and his wife Emma" names the mother by "wife".
pub fn against(cues: &[String]) -> Vec<String> {
    const BLOOD: &[&str] = &["mother", "father", "parent", "son", "daughter", "child"];
    const SPOUSE: &[&str] = &["wife", "husband", "spouse"];
    let nouns: Vec<&str> = cues.iter().filter_map(|c| kin(c)).map(|k| k.0).collect();
    let blood = nouns.iter().any(|n| BLOOD.contains(n)) && !nouns.iter().any(|n| SPOUSE.contains(n));
    if blood && !in_law(cues) { ["married", "marriage"].map(String::from).to_vec() } else { Vec::new() }
}

/// The sex the link asks for: that of the one gendered kinship noun among `cues`, when there is exactly one.
pub fn asked_sex(cues: &[String]) -> Option<Sex> {
    if in_law(cues) {
        return None;
    }
    let sexes: Vec<Sex> = cues.iter().filter_map(|c| kin(c)).filter_map(|k| k.1).collect();
    match sexes.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The sex a card's pronouns give its subject, when they clearly give one (at least twice as many of one kind).
pub fn sex_of(card: &Card) -> Option<Sex> {
    let (mut female, mut male) = (0usize, 0usize);
    for word in text::tokens(&card.hit.text) {
        match word.as_str() {
            "she" | "her" | "hers" | "herself" => female += 1,
            "he" | "his" | "him" | "himself" => male += 1,
            _ => {}
        }
    }
    if female > 0 && female >= 2 * male {
        Some(Sex::Female)
    } else if male > 0 && male >= 2 * female {
        Some(Sex::Male)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn a_parent_is_named_by_the_child_and_a_card_by_its_pronouns() {
        let cues = other_end(&["mother".to_string()]);
        assert!(cues.contains(&"son".to_string()) && cues.contains(&"daughter".to_string()), "{cues:?}");
        assert!(!other_end(&["brother".to_string()]).contains(&"brother".to_string()), "already a cue");
        assert_eq!(against(&["mother".to_string()]), ["married", "marriage"]);
        assert!(against(&["wife".to_string()]).is_empty(), "a wife is the one married");
        assert_eq!(asked_sex(&["mothers".to_string()]), Some(Sex::Female));
        assert_eq!(asked_sex(&["father".to_string(), "wife".to_string()]), None, "two links: which one is last?");
        let in_law: Vec<String> = ["mother", "in", "law"].iter().map(|w| w.to_string()).collect();
        assert_eq!((asked_sex(&in_law), other_end(&in_law)), (None, Vec::new()), "a mother-in-law is no mother");
        let queen = fixtures::card(1, 1, "e", "Emma", "Emma was a queen. She married Karl; her son was Otto.");
        let king = fixtures::card(2, 1, "k", "Karl", "Karl was a king. He ruled for ten years and his son was Otto.");
        assert_eq!((sex_of(&queen), sex_of(&king)), (Some(Sex::Female), Some(Sex::Male)));
        assert_eq!(sex_of(&fixtures::card(3, 1, "t", "Tours", "Tours is a city.")), None);
    }
}
