//! Comparing words, titles and names the way the reader does: one stem or verb base for both forms of a word,
//! a title without its qualifier, a card by its title (its document's opening window).

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
/// (director)" is the card named "David Bradley"). Of a document's windows, its opening is the card: it says what
/// the thing is and when ("Ryan Tubridy (born 28 May 1973) is …"), where a later window speaks of later events
/// ("… returned to RTÉ 2fm in 2010").
pub fn card_named<'a>(window: &[&'a Card], name: &str) -> Option<&'a Card> {
    let name = fold(name);
    let named = window.iter().copied().find(|c| fold(&c.hit.title) == name || fold(subject(&c.hit.title)) == name)?;
    Some(opening(window, named))
}

/// The window's card that opens `card`'s document (its first chunk, `doc#0`), where a document says what its
/// subject is; `card` itself when no earlier chunk of its document is in the window.
pub fn opening<'a>(window: &[&'a Card], card: &'a Card) -> &'a Card {
    let chunk = |c: &Card| c.hit.id.rsplit_once('#').and_then(|(_, k)| k.parse::<u32>().ok()).unwrap_or(u32::MAX);
    window.iter().copied().filter(|c| c.hit.doc_id == card.hit.doc_id).min_by_key(|c| chunk(c)).unwrap_or(card)
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
