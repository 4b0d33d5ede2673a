//! How the sentence an extractive answer leads with is quoted so that it reads on its own: with the sentence a
//! pronoun in it points back to, the command or sentence a closing colon announces, and the next sentence where
//! that one goes on to answer; code that lost its fence is cut, and a window's cut-off first words are marked.

use sleuth_messages::Card;

use super::sentences::{Asks, cut_off, looks_like_code, names_a_term_of_kind, quotable, sentence_score, uses};
use crate::text;

/// The leading sentence as a reader needs it. Code that lost its fence after a colon is cut ("… with the
/// format_args!() macro usage: # use …"). A sentence that opens with a pronoun points back to the sentence before
/// it in its card ("This enables extracting the client's remote address."), which is quoted first; a window's
/// cut-off first sentence is marked as the fragment it is ("… generic code, you can test …"). A sentence that
/// ends with a colon is completed by what follows it: "To run Clippy's lints, enter the following:" and the first
/// line of the command block after it ("cargo clippy", without the fence or the shell prompt), or the next sentence.
/// A next sentence that goes on to answer is quoted after it ([`continues`]).
pub(super) fn completed(card: &Card, sentence: &str, asks: &Asks<'_>) -> String {
    let sentences = text::sentences(&card.hit.text);
    let at = sentences.iter().position(|s| s.trim() == sentence.trim());
    let mut sentence = sentence.trim();
    let mut code_cut = false;
    if let Some(colon) = sentence.find(": ")
        && looks_like_code(&sentence[colon + 2..])
    {
        sentence = &sentence[..=colon];
        code_cut = true;
    }
    let before = at.and_then(|i| antecedent(card, &sentences, i));
    let next = at.and_then(|i| sentences.get(i + 1)).map(|s| s.trim());
    let follows = match next {
        _ if code_cut || !sentence.ends_with(':') => None,
        Some(block) if block.starts_with("```") => block
            .lines()
            .skip(1)
            .map(|line| line.trim().trim_start_matches("$ ").trim())
            .find(|line| !line.is_empty() && !line.starts_with("```"))
            .map(str::to_string),
        Some(next) if !next.is_empty() => Some(next.to_string()),
        _ => None,
    };
    let follows =
        follows.or_else(|| next.filter(|next| !code_cut && continues(card, sentence, next, asks)).map(str::to_string));
    let fragment = at.is_some_and(|i| cut_off(card, i, sentence)).then(|| "…".to_string());
    [fragment, before.map(str::to_string), Some(sentence.to_string()), follows]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sentence as a window of its document holds it whole, where the edge of `card`'s window cut it: windows of
/// one document overlap, so a first or last sentence cut mid-way ("Then replace the following functions:
/// (Configuration is bincode::config::") is often whole in the next window of the answer's (" … (Configuration is
/// bincode::config::legacy() by default)"), which is then the card quoted.
pub(super) fn whole<'c>(window: &[&'c Card], card: &'c Card, sentence: &'c str) -> (&'c Card, &'c str) {
    let trimmed = sentence.trim();
    let sentences = text::sentences(&card.hit.text);
    let at_edge = |s: Option<&&str>| s.is_some_and(|s| s.trim() == trimmed);
    if trimmed.is_empty() || !(at_edge(sentences.first()) || at_edge(sentences.last())) {
        return (card, sentence);
    }
    let holds = |s: &str| {
        let s = s.trim();
        s.len() > trimmed.len() && (s.starts_with(trimmed) || s.ends_with(trimmed))
    };
    window
        .iter()
        .filter(|c| c.hit.doc_id == card.hit.doc_id && c.hit.id != card.hit.id)
        .find_map(|c| text::sentences(&c.hit.text).into_iter().find(|s| holds(s)).map(|s| (*c, s)))
        .unwrap_or((card, sentence))
}

/// Whether a sentence stands on the one before it: its subject is a pronoun that stands for something that
/// sentence named (its first word, or the first after a short opening phrase: "For example, this is the ordering
/// used by …", "However, it …"), it opens with a word that contrasts it with that sentence or draws from it
/// ("However, when AVX is available, …", "Therefore …"), or it offers something in place of what was said before
/// ("Use Extension instead for such data.": "instead" without "of", "such" before a noun, not "such as", "such
/// that" or "such … as").
fn points_back(sentence: &str) -> bool {
    const POINTERS: &[&str] = &["this", "that", "these", "those", "it", "they", "such"];
    const CONNECTIVES: &[&str] =
        &["however", "therefore", "thus", "hence", "otherwise", "consequently", "nevertheless", "nonetheless"];
    let words: Vec<String> = sentence.split_whitespace().map(|w| w.to_lowercase()).collect();
    let bare = |at: usize| words.get(at).map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric()));
    let pointer = |at: usize| bare(at).is_some_and(|w| POINTERS.contains(&w));
    let subject =
        pointer(0) || words.iter().take(3).position(|w| w.ends_with(',')).is_some_and(|comma| pointer(comma + 1));
    let connected = bare(0).is_some_and(|w| CONNECTIVES.contains(&w));
    let replaces = (0..words.len()).any(|at| match bare(at) {
        Some("instead") => bare(at + 1) != Some("of") || words[at].len() > "instead".len(),
        // "such data", not "such as", "such that" or "such classic films as".
        Some("such") => {
            let examples = (at + 1..at + 6).any(|next| bare(next) == Some("as")) || bare(at + 1) == Some("that");
            at > 0 && !words[at].ends_with(',') && bare(at + 1).is_some() && !examples
        }
        _ => false,
    });
    subject || connected || replaces
}

/// The sentence a pointing sentence (`sentences[index]`) stands on: the one before it in its card, where that one
/// can be quoted with it (prose that neither opens a listing with a colon nor is a window's cut-off first words).
fn antecedent<'c>(card: &Card, sentences: &[&'c str], index: usize) -> Option<&'c str> {
    let before = index.checked_sub(1)?;
    let (sentence, previous) = (sentences.get(index)?.trim(), sentences[before].trim());
    let stands = quotable(previous) && !previous.ends_with(':') && !cut_off(card, before, previous);
    (points_back(sentence) && stands).then_some(previous)
}

/// Whether `next`, the sentence after `sentence` in `card`, goes on to answer what `sentence` began: it speaks of a
/// question word that `sentence` does not, and either points back to it or answers well enough to be quoted on its
/// own, scoring at least half of what `sentence` scores, as every quoted sentence does ("Raw identifiers are the
/// syntax that lets you use keywords … You use a raw identifier by prefixing a keyword with r#." for "which
/// prefix"); or it points back to it and names a thing of the asked kind ("Bincode 1 had the Options trait. This
/// has been replaced with the Configuration struct.").
fn continues(card: &Card, sentence: &str, next: &str, asks: &Asks<'_>) -> bool {
    let (said, next_tokens) = (text::tokens(sentence), text::tokens(next));
    let adds = asks.stems.iter().any(|stem| uses(&next_tokens, stem) && !uses(&said, stem));
    let pointing = points_back(next);
    let answers = || sentence_score(next, card, asks) >= 0.5 * sentence_score(sentence, card, asks);
    quotable(next)
        && (adds && (pointing || answers()) || pointing && names_a_term_of_kind(next, &asks.kind, &asks.words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn a_sentence_that_ends_with_a_colon_is_completed_by_what_follows() {
        let mut c = fixtures::card(1, 1, "d1", "t", "");
        c.hit.text =
            "Clippy is a linter. To run it, enter the following:\n\n```\n$ cargo clippy\n```\n\nIt prints warnings."
                .into();
        assert_eq!(
            completed(&c, "To run it, enter the following:", &Asks::default()),
            "To run it, enter the following: cargo clippy"
        );
        c.hit.text = "The options are these: Some and None. Both are variants.".into();
        assert_eq!(completed(&c, "Clippy is a linter.", &Asks::default()), "Clippy is a linter.");
    }

    #[test]
    fn a_sentence_a_window_cut_is_quoted_from_the_window_that_holds_it_whole() {
        let cut = fixtures::card(
            1,
            1,
            "guide",
            "Guide",
            "Configuration is mandatory. Then replace: (the default is config::",
        );
        let mut next =
            fixtures::card(2, 1, "guide", "Guide", "is mandatory. Then replace: (the default is config::legacy()).");
        next.hit.id = "guide#1".into();
        let other = fixtures::card(3, 1, "spec", "Spec", "Then replace: (the default is config::standard()).");
        let window = [&cut, &other, &next];
        let (card, sentence) = whole(&window, &cut, "Then replace: (the default is config::");
        assert_eq!((card.n, sentence), (2, "Then replace: (the default is config::legacy())."));
        // A sentence inside its window, or one no other window of its document holds, stays as it is.
        assert_eq!(whole(&window, &cut, "Configuration is mandatory.").1, "Configuration is mandatory.");
        assert_eq!(whole(&window, &other, "Then replace: (the default is config::standard()).").0.n, 3);
    }

    #[test]
    fn a_sentence_that_opens_with_a_pronoun_is_read_after_the_one_it_points_back_to() {
        let mut c = fixtures::card(1, 1, "d1", "t", "");
        c.hit.id = "d1#0".into();
        c.hit.text =
            "Use ConnectInfo to get the peer's address. This enables extracting the client's remote address.".into();
        let lead = completed(&c, "This enables extracting the client's remote address.", &Asks::default());
        assert_eq!(
            lead,
            "Use ConnectInfo to get the peer's address. This enables extracting the client's remote address."
        );
        // Nothing stands before a card's first sentence; a heading or code before it is not what it points to.
        assert_eq!(
            completed(&c, "Use ConnectInfo to get the peer's address.", &Asks::default()),
            "Use ConnectInfo to get the peer's address."
        );
        c.hit.text = "Remote addresses\n\nThis enables extracting the client's remote address.".into();
        assert_eq!(
            completed(&c, "This enables extracting the client's remote address.", &Asks::default()),
            "This enables extracting the client's remote address."
        );
        // A window cut mid-sentence does not lend its fragment.
        c.hit.id = "d1#3".into();
        c.hit.text = "address of the peer. This enables extracting the client's remote address.".into();
        assert_eq!(
            completed(&c, "This enables extracting the client's remote address.", &Asks::default()),
            "This enables extracting the client's remote address."
        );
        assert_eq!(completed(&c, "address of the peer.", &Asks::default()), "… address of the peer.");
        // After a short opening phrase.
        c.hit.id = "d1#0".into();
        c.hit.text = "This ordering is named Msb0. For example, this is the ordering used by TCP.".into();
        assert_eq!(
            completed(&c, "For example, this is the ordering used by TCP.", &Asks::default()),
            "This ordering is named Msb0. For example, this is the ordering used by TCP."
        );
        assert!(!points_back("For example, the ordering used by TCP is Msb0."));
        assert!(points_back("This, and only this, argument combination is unsafe."));
        assert!(!points_back("When a request arrives at the router, it is matched."), "a clause, not a phrase");
        assert!(points_back("Use Extension instead for such data."));
        assert!(points_back("Use a Mutex instead."));
        assert!(!points_back("Use a Mutex instead of a RefCell."), "it names what it replaces");
        assert!(!points_back("Use a type such as u8 or a type such that it is Copy."));
        assert!(!points_back("He directed such classic Kannada comedy films as Gauri Ganesha."));
    }

    #[test]
    fn code_that_lost_its_fence_after_a_colon_is_cut_from_the_lead() {
        let mut c = fixtures::card(1, 1, "d1", "t", "");
        c.hit.text =
            "It may be suppressed with the format_args!() macro usage: # use derive_more::Display; struct A;".into();
        let sentence = text::sentences(&c.hit.text)[0];
        assert_eq!(
            completed(&c, sentence, &Asks::default()),
            "It may be suppressed with the format_args!() macro usage:"
        );
        // A table row read as prose keeps its cells.
        c.hit.text = "Spare parts\n\nPart: Fresnel lens; Supplier: Kestrel Optics".into();
        assert_eq!(
            completed(&c, "Part: Fresnel lens; Supplier: Kestrel Optics", &Asks::default()),
            "Part: Fresnel lens; Supplier: Kestrel Optics"
        );
    }

    #[test]
    fn a_next_sentence_that_answers_what_the_lead_leaves_out_is_quoted_after_it() {
        let words = ["prefix", "lets", "use", "keyword", "identifier"];
        let asks = Asks { stems: words.iter().map(|w| text::stem(w)).collect(), ..Default::default() };
        let lead = "Raw identifiers are the syntax that lets you use keywords where they would not be allowed.";
        let c = fixtures::card(
            1,
            1,
            "d1",
            "t",
            &format!("{lead} You use a raw identifier by prefixing a keyword with r#."),
        );
        assert_eq!(
            completed(&c, lead, &asks),
            format!("{lead} You use a raw identifier by prefixing a keyword with r#.")
        );
        // A next sentence that adds the question's word but answers far less well is not quoted with it.
        let c = fixtures::card(1, 1, "d1", "t", &format!("{lead} Prefixes are rare."));
        assert_eq!(completed(&c, lead, &asks), lead);
        // Nor one that adds none of the question's words.
        let c = fixtures::card(1, 1, "d1", "t", &format!("{lead} You use a raw identifier in a macro."));
        assert_eq!(completed(&c, lead, &asks), lead);
    }

    #[test]
    fn a_sentence_that_opens_by_contrasting_or_concluding_stands_on_the_one_before() {
        assert!(points_back("However, when AVX is available, the number of buckets is 16."));
        assert!(points_back("Therefore the alphabet can be shrunk to 53 elements."));
        assert!(!points_back("Thusly the alphabet can be shrunk."), "a connective is a whole word");
        assert!(!points_back("The alphabet can however be shrunk."), "only where the sentence opens");
        let lead = "However, when AVX is available, the number of buckets is 16.";
        let c = fixtures::card(1, 1, "d1", "t", &format!("Teddy uses 8 buckets. {lead}"));
        assert_eq!(completed(&c, lead, &Asks::default()), format!("Teddy uses 8 buckets. {lead}"));
    }
}
