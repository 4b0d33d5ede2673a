//! The order a comparison wants, from its comparative: "first", "older" and "smaller" want the least, "later",
//! "younger" and "more" the most. Comparatives of time are decided by dates, those of age by birth dates; "more
//! diverse" or "taller" compare what no date gives.

/// Which end of a comparison wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The earliest date or the smallest value: "first", "older", "earlier".
    Least,
    /// The latest date or the largest value: "later", "younger", "most recent".
    Most,
}

/// Words that say a comparison wants the earliest or smallest.
const LEAST: &[&str] = &[
    "first", "earlier", "earliest", "older", "oldest", "before", "sooner", "smaller", "smallest", "fewer", "less",
    "least", "shorter", "shortest", "lower",
];
/// Words that say a comparison wants the latest or largest.
const MOST: &[&str] = &[
    "later", "last", "latest", "younger", "youngest", "recent", "recently", "after", "larger", "largest", "bigger",
    "biggest", "more", "most", "longer", "longest", "taller", "tallest", "higher", "highest", "newer", "newest",
];

/// Comparatives of time: dates decide them.
const TIMED: &[&str] = &[
    "first", "earlier", "earliest", "older", "oldest", "before", "sooner", "later", "last", "latest", "younger",
    "youngest", "recent", "recently", "after", "newer", "newest",
];

/// Whether a word is a comparative that sets an order.
pub fn is_comparative(word: &str) -> bool {
    LEAST.contains(&word) || MOST.contains(&word)
}

/// The order the comparative among `words` wants ([`order_word`]).
pub fn order_of(words: &[String]) -> Option<Order> {
    order_word(words).map(|w| if LEAST.contains(&w) { Order::Least } else { Order::Most })
}

/// The comparative that decides a comparison's order: the last one ("born first" vs "the first film … released
/// later").
pub fn order_word(words: &[String]) -> Option<&str> {
    words.iter().rev().map(String::as_str).find(|w| is_comparative(w))
}

/// Whether a comparative is of time, which dates decide.
pub fn timed(word: &str) -> bool {
    TIMED.contains(&word)
}

/// Whether a comparative is of age, which birth dates decide.
pub fn aged(word: &str) -> bool {
    matches!(word, "older" | "younger" | "oldest" | "youngest")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_comparative_sets_the_order_and_says_what_decides_it() {
        let words = |q: &str| crate::text::tokens(q);
        assert_eq!(order_of(&words("the first film released later")), Some(Order::Most));
        assert_eq!(order_word(&words("who was born first")), Some("first"));
        assert_eq!(order_of(&words("which is the capital")), None);
        assert!(timed("earlier") && !timed("taller") && !timed("more"));
        assert!(aged("younger") && !aged("later"));
    }
}
