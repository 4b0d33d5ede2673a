//! Token-aware chunking: windows of at most `max_tokens` tokens of the embedding model's tokenizer, overlapping by
//! `overlap` tokens, cut at word boundaries. Without a model tokenizer, words and punctuation marks count as tokens.

use std::sync::LazyLock;

use regex::Regex;
use tokenizers::Tokenizer;

/// A token's byte range in the text and the word it belongs to.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    word: u32,
}

static WORDS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\w+|[^\w\s]").expect("static regex"));

/// A tokenizer prepared for counting: no truncation, no padding.
pub fn counting(tokenizer: &Tokenizer) -> Option<Tokenizer> {
    let mut tok = tokenizer.clone();
    tok.with_truncation(None).ok()?;
    tok.with_padding(None);
    Some(tok)
}

fn spans(text: &str, tokenizer: Option<&Tokenizer>) -> Vec<Span> {
    if let Some(tok) = tokenizer
        && let Ok(enc) = tok.encode(text, false)
    {
        let words = enc.get_word_ids();
        return enc
            .get_offsets()
            .iter()
            .zip(words)
            .enumerate()
            .map(|(i, (&(start, end), w))| Span { start, end, word: w.unwrap_or(i as u32) })
            .collect();
    }
    WORDS.find_iter(text).enumerate().map(|(i, m)| Span { start: m.start(), end: m.end(), word: i as u32 }).collect()
}

/// How many tokens `text` is (model tokens with a tokenizer, else words and punctuation marks).
pub fn count(text: &str, tokenizer: Option<&Tokenizer>) -> usize {
    spans(text, tokenizer).len()
}

/// Moves `i` back to the first token of its word, but not to or before `floor`.
fn word_start(spans: &[Span], mut i: usize, floor: usize) -> usize {
    while i > floor + 1 && i < spans.len() && spans[i].word == spans[i - 1].word {
        i -= 1;
    }
    i
}

/// Splits `text` into overlapping windows; a short text is one window. `tokenizer` should come from [`counting`].
pub fn windows(text: &str, tokenizer: Option<&Tokenizer>, max_tokens: usize, overlap: usize) -> Vec<String> {
    let spans = spans(text, tokenizer);
    if spans.len() <= max_tokens {
        return vec![text.trim().to_string()];
    }
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let end =
            if start + max_tokens >= spans.len() { spans.len() } else { word_start(&spans, start + max_tokens, start) };
        out.push(text[spans[start].start..spans[end - 1].end].to_string());
        if end >= spans.len() {
            break;
        }
        let next = word_start(&spans, end.saturating_sub(overlap).max(start + 1), start);
        start = if next > start { next } else { end };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_overlap_and_cover_the_text() {
        let text = (0..50).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        let w = windows(&text, None, 20, 5);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("w0 ") && w[0].ends_with(" w19"));
        assert!(w[1].starts_with("w15 "), "{}", w[1]);
        assert!(w[2].ends_with("w49"));
    }

    #[test]
    fn short_texts_are_one_window() {
        assert_eq!(windows("  just this. ", None, 20, 5), vec!["just this."]);
    }

    #[test]
    fn punctuation_counts_as_tokens() {
        let text = "a, b, c, d, e, f";
        assert_eq!(windows(text, None, 6, 2).len(), 3);
    }
}
