//! Answers scored the way SQuAD and HotpotQA score them: exact match and token F1 after normalisation.

/// SQuAD's answer normalisation: lower case, punctuation and the articles a, an and the removed, white space
/// collapsed.
pub fn normalize_answer(s: &str) -> String {
    let lower: String =
        s.to_lowercase().chars().filter(|c| !c.is_ascii_punctuation() && !matches!(c, '’' | '‘' | '“' | '”')).collect();
    lower.split_whitespace().filter(|w| !matches!(*w, "a" | "an" | "the")).collect::<Vec<_>>().join(" ")
}

/// Exact match and token F1 after [`normalize_answer`], as SQuAD and HotpotQA score them (a yes/no answer
/// against anything else scores 0).
pub fn answer_score(predicted: &str, gold: &str) -> (f64, f64) {
    let (p, g) = (normalize_answer(predicted), normalize_answer(gold));
    let em = if p == g { 1.0 } else { 0.0 };
    let special = |s: &str| matches!(s, "yes" | "no" | "noanswer");
    if (special(&p) || special(&g)) && p != g {
        return (em, 0.0);
    }
    let (pt, gt): (Vec<&str>, Vec<&str>) = (p.split_whitespace().collect(), g.split_whitespace().collect());
    let mut left = gt.clone();
    let mut common = 0usize;
    for t in &pt {
        if let Some(i) = left.iter().position(|x| x == t) {
            left.swap_remove(i);
            common += 1;
        }
    }
    if common == 0 {
        return (em, 0.0);
    }
    let precision = common as f64 / pt.len() as f64;
    let recall = common as f64 / gt.len() as f64;
    (em, 2.0 * precision * recall / (precision + recall))
}

/// Whether `text` says the gold answer: the gold answer's words, normalised as [`normalize_answer`] does, appear
/// in it whole and in order. An empty gold answer is never said.
pub fn says_answer(text: &str, gold: &str) -> bool {
    let gold = normalize_answer(gold);
    !gold.is_empty() && format!(" {} ", normalize_answer(text)).contains(&format!(" {gold} "))
}

/// The first line of a reply as a reader sees it: the answer's text before its first citation mark ("[1]").
pub fn first_line(answer: &str) -> &str {
    let mut from = 0;
    while let Some(open) = answer[from..].find('[').map(|i| from + i) {
        let digits = answer[open + 1..].chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && answer[open + 1 + digits..].starts_with(']') {
            return answer[..open].trim();
        }
        from = open + 1;
    }
    answer.trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_line_ends_at_its_first_citation() {
        assert_eq!(first_line("One Piece [15]. Luffy is its captain [2]."), "One Piece");
        assert_eq!(first_line("See [the book] and [x1] first [3] then"), "See [the book] and [x1] first");
        assert_eq!(first_line("No citation at all."), "No citation at all.");
        assert!(says_answer("Integer types default to `i32`.", "i32"));
        assert!(!says_answer("Mexico", "Mexico City"));
        assert!(!says_answer("anything", "the"));
    }

    #[test]
    fn answers_are_scored_as_squad_scores_them() {
        let cases: &[(&str, &str, f64, f64)] = &[
            ("The Finnish Markka", "Finnish markka", 1.0, 1.0),
            ("Montreal", "Montreal, Quebec", 0.0, 2.0 / 3.0),
            ("yes", "no", 0.0, 0.0),
            ("no", "no", 1.0, 1.0),
            ("6,960", "6960", 1.0, 1.0),
            ("Paris", "Vienna", 0.0, 0.0),
        ];
        for (predicted, gold, em, f1) in cases {
            let (e, f) = answer_score(predicted, gold);
            assert_eq!(e, *em, "{predicted} vs {gold}");
            assert!((f - f1).abs() < 1e-9, "{predicted} vs {gold}: {f}");
        }
    }
}
