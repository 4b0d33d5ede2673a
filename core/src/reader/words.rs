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
/// Of a document's windows, its opening is the card: it says what the thing is and when ("Ryan Tubridy (born 28
/// May 1973) is …"), where a later window speaks of later events ("… returned to RTÉ 2fm in 2010").
pub fn card_named<'a>(window: &[&'a Card], name: &str) -> Option<&'a Card> {
    let name = fold(name);
    let named = |c: &&Card| fold(&c.hit.title) == name || fold(subject(&c.hit.title)) == name;
    let first = window.iter().copied().find(named)?;
    window.iter().copied().filter(|c| c.hit.doc_id == first.hit.doc_id && named(c)).min_by_key(|c| window_of(c))
}

/// Which window of its document a card is (`doc#N`), 0 for a document read whole.
fn window_of(card: &Card) -> usize {
    card.hit.id.rsplit_once('#').and_then(|(_, n)| n.parse().ok()).unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn card(n: u32, id: &str, title: &str) -> Card {
        let hit = sleuth_messages::Hit {
            id: id.into(),
            doc_id: id.split('#').next().unwrap_or(id).into(),
            title: title.into(),
            text: String::new(),
            score: 1.0,
            metadata: sleuth_messages::JsonMap::new(),
        };
        Card::new(n, n, hit)
    }

    #[test]
    fn a_document_s_card_is_its_opening_window() {
        let later = card(1, "tubridy#1", "Ryan Tubridy");
        let other = card(2, "tubridy-show#0", "Ryan Tubridy");
        let opening = card(3, "tubridy#0", "Ryan Tubridy");
        let window = [&later, &other, &opening];
        assert_eq!(card_named(&window, "Ryan Tubridy").map(|c| c.n), Some(3));
        assert_eq!(card_named(&window[1..2], "ryan tubridy").map(|c| c.n), Some(2), "another document, by rank");
        assert!(card_named(&window, "Gerry Ryan").is_none());
    }
}
