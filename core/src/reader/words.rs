//! Comparing words, titles and names the way the reader does: one stem or verb base for both forms of a word,
//! a title without its qualifier, a card by its title.

use sleuth_messages::Card;

use crate::text;

/// True when a sentence word matches a question word: the same stem or verb base ("became" and "become"), or one
/// a prefix of the other.
pub fn same_word(word: &str, cue: &str) -> bool {
    if word == cue || text::stem(word) == text::stem(cue) || text::verb_base(word) == text::verb_base(cue) {
        return true;
    }
    let (short, long) = if word.len() < cue.len() { (word, cue) } else { (cue, word) };
    short.len() >= 3 && long.starts_with(short) && long.len() - short.len() <= 3
}

/// The card whose title is `name`, if the window has one; a title's qualifier does not count ("David Bradley
/// (director)" is the card named "David Bradley").
pub fn card_named<'a>(window: &[&'a Card], name: &str) -> Option<&'a Card> {
    let name = fold(name);
    window.iter().copied().find(|c| fold(&c.hit.title) == name || fold(subject(&c.hit.title)) == name)
}

/// A title without its trailing qualifier: "David Bradley (director)" → "David Bradley".
pub fn subject(title: &str) -> &str {
    match title.trim_end().strip_suffix(')').and_then(|t| t.rfind(" (").map(|i| &title[..i])) {
        Some(bare) if !bare.trim().is_empty() => bare.trim(),
        _ => title.trim(),
    }
}

/// Lowercase words only, for comparing answers and titles.
pub fn fold(s: &str) -> String {
    text::tokens(s).join(" ")
}
