//! Candidate answers in a sentence: dates (with a value that orders them), numbers with their unit, and names
//! (capitalised runs, with a trailing ", Region" kept for places), each with where it sits among the words.

use std::sync::LazyLock;

use regex::Regex;

use crate::text;

pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:(\d{1,2})\s+)?(January|February|March|April|May|June|July|August|September|October|November|December",
        r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?",
        r"(?:\s+(\d{1,2}))?,?\s+(\d{3,4})\b|\b(\d{1,2})(?:st|nd|rd|th)?\s+century\b|\b(\d{4})s?\b"
    ))
    .expect("static regex")
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s+(million|billion|thousand|hundred|percent|%|(?-i:[a-z]+)))?",
    )
    .expect("static regex")
});

/// A date's value, comparable: year, month, day (0 when not given).
pub type DateValue = (i32, u32, u32);

/// One candidate answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub text: String,
    /// Byte offset in the sentence, for distances.
    pub at: usize,
    pub shape: Shape,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Date(DateValue),
    Number(f64),
    Name,
}

/// The dates a text gives, in order.
pub fn dates(sentence: &str) -> Vec<Span> {
    DATE.captures_iter(sentence)
        .filter_map(|c| {
            let whole = c.get(0)?;
            let value = if let Some(year) = c.get(4) {
                // A shortened month is the one it begins: "Dec." is December.
                let named = c[2].to_lowercase();
                let month = MONTHS.iter().position(|m| m.starts_with(named.as_str())).map_or(0, |i| i as u32 + 1);
                let day = c.get(1).or(c.get(3)).and_then(|d| d.as_str().parse().ok()).unwrap_or(0);
                (year.as_str().parse().ok()?, month, day)
            } else if let Some(century) = c.get(5) {
                (century.as_str().parse::<i32>().ok()? * 100 - 100, 0, 0)
            } else {
                let year: i32 = c.get(6)?.as_str().parse().ok()?;
                if !(500..=2100).contains(&year) {
                    return None;
                }
                (year, 0, 0)
            };
            Some(Span { text: whole.as_str().trim().to_string(), at: whole.start(), shape: Shape::Date(value) })
        })
        .collect()
}

/// The numbers a text gives that are not part of a date, with a unit word when one follows.
pub fn numbers(sentence: &str) -> Vec<Span> {
    let taken: Vec<(usize, usize)> = DATE.find_iter(sentence).map(|m| (m.start(), m.end())).collect();
    NUMBER
        .captures_iter(sentence)
        .filter_map(|c| {
            let whole = c.get(0)?;
            if taken.iter().any(|(s, e)| whole.start() < *e && *s < whole.end()) {
                return None;
            }
            // An ordinal ("ranked 35th") places a thing in an order; it does not count or measure anything.
            let digits = c.get(1)?;
            if sentence[digits.end()..].starts_with(|c: char| c.is_alphabetic()) {
                return None;
            }
            let value: f64 = c[1].replace(',', "").parse().ok()?;
            let unit = c.get(2).map(|u| u.as_str()).filter(|u| !text::is_stopword(&u.to_lowercase()));
            let text = match unit {
                Some(u) => format!("{} {u}", &c[1]),
                None => c[1].to_string(),
            };
            Some(Span { text, at: whole.start(), shape: Shape::Number(value) })
        })
        .collect()
}

/// Names in a sentence with their positions. A name followed by ", Name" at the end of a clause is also offered
/// with it ("Montreal, Quebec").
pub fn names(sentence: &str) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut from = 0;
    let found = text::name_spans(sentence);
    for name in &found {
        let Some(pos) = sentence[from..].find(name.as_str()).map(|p| p + from).or_else(|| sentence.find(name.as_str()))
        else {
            continue;
        };
        from = pos + name.len();
        let clean = name.trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”'));
        if !clean.is_empty() {
            // Where the name starts once its quotes are trimmed, so `at..at + text.len()` is the name itself.
            let at = pos + name.find(clean).unwrap_or(0);
            out.push(Span { text: clean.to_string(), at, shape: Shape::Name });
        }
    }
    let mut joined = Vec::new();
    for pair in out.windows(2) {
        // A name found again earlier in the sentence (its later occurrence was consumed) is not a pair.
        let (Some(between), Some(after)) = (
            sentence.get(pair[0].at + pair[0].text.len()..pair[1].at),
            sentence.get(pair[1].at + pair[1].text.len()..),
        ) else {
            continue;
        };
        let ends = after.trim_start().chars().next().is_none_or(|c| matches!(c, ',' | '.' | ';' | ')' | '('));
        if between.trim() == "," && ends && !pair[1].text.contains(' ') {
            joined.push(Span {
                text: format!("{}, {}", pair[0].text, pair[1].text),
                at: pair[0].at,
                shape: Shape::Name,
            });
        }
    }
    out.extend(joined);
    out
}

/// The words just before a byte offset, lowercased, nearest last.
pub fn words_before(sentence: &str, at: usize, n: usize) -> Vec<String> {
    let before = text::tokens(&sentence[..at.min(sentence.len())]);
    before[before.len().saturating_sub(n)..].to_vec()
}

/// The phrase after the first of `cues` in a sentence: up to the clause's end, at most `max` words, without a
/// leading preposition ("died of tuberculosis in 1923" → "tuberculosis").
pub fn phrase_after(sentence: &str, cues: &[String], max: usize) -> Option<(String, usize)> {
    let mut offset = 0;
    let words: Vec<(usize, &str)> = sentence
        .split_inclusive(char::is_whitespace)
        .map(|w| {
            let at = offset;
            offset += w.len();
            (at, w.trim())
        })
        .collect();
    let cue_at = words.iter().position(|(_, w)| {
        let t = text::tokens(w);
        t.first().is_some_and(|t| cues.iter().any(|c| super::words::same_word(t, c)))
    })?;
    if words[cue_at].1.ends_with([',', '.', ';', ':']) {
        return None;
    }
    let mut out: Vec<&str> = Vec::new();
    let start = words.get(cue_at + 1)?.0;
    for (_, w) in &words[cue_at + 1..] {
        let lower = w.to_lowercase();
        let bare = lower.trim_matches(|c: char| !c.is_alphanumeric());
        if out.is_empty()
            && ["of", "from", "by", "to", "in", "as", "due", "because", "the", "a", "an", "was", "is", "after"]
                .contains(&bare)
        {
            continue;
        }
        if !out.is_empty()
            && ["in", "at", "on", "and", "which", "who", "while", "after", "when", "during"].contains(&bare)
        {
            break;
        }
        let end = w.ends_with([',', '.', ';', ':', ')']);
        out.push(w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '(' | ')' | '"')));
        if end || out.len() >= max {
            break;
        }
    }
    (!out.is_empty()).then(|| (out.join(" "), start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_found_with_values_that_order_them() {
        let found = dates("He was born on 5 May 1950 and died on June 3, 1980; the film came out in 1999.");
        let values: Vec<Shape> = found.iter().map(|s| s.shape).collect();
        assert_eq!(values, [Shape::Date((1950, 5, 5)), Shape::Date((1980, 6, 3)), Shape::Date((1999, 0, 0))]);
        assert_eq!(found[0].text, "5 May 1950");
        assert!(dates("Room 12 holds 40000 people").is_empty());
        let short = dates("On Dec. 10, 1817, the territory became a state; Marching 1990 is a year only.");
        assert_eq!(short[0].text, "Dec. 10, 1817");
        assert_eq!(short[0].shape, Shape::Date((1817, 12, 10)));
        assert_eq!(short[1].shape, Shape::Date((1990, 0, 0)));
    }

    #[test]
    fn numbers_skip_dates_and_keep_their_unit() {
        let found: Vec<String> =
            numbers("In 2011 the town had 6,960 people and 6.8 inches of snow.").into_iter().map(|s| s.text).collect();
        assert_eq!(found, ["6,960 people", "6.8 inches"]);
        let named: Vec<String> = numbers("It has 5 Greeley schools.").into_iter().map(|s| s.text).collect();
        assert_eq!(named, ["5"], "a name after a number is not its unit");
        let ranked: Vec<String> =
            numbers("Population Ranked 35th Total 2,913,123").into_iter().map(|s| s.text).collect();
        assert_eq!(ranked, ["2,913,123"], "an ordinal is not a count");
    }

    #[test]
    fn a_place_keeps_its_region() {
        let found: Vec<String> =
            names("Jean Dupont was born in Montreal, Quebec, and died in Paris.").into_iter().map(|s| s.text).collect();
        assert!(found.contains(&"Montreal, Quebec".to_string()), "{found:?}");
        assert!(found.contains(&"Jean Dupont".to_string()));
    }

    #[test]
    fn the_phrase_after_a_cue_stops_at_the_clause() {
        let got = phrase_after("She died of tuberculosis in 1923, aged 34.", &["die".to_string()], 5).map(|p| p.0);
        assert_eq!(got.as_deref(), Some("tuberculosis"));
    }
}
