//! Chained questions, found by their shape rather than by a list of relation words: "the country where the
//! composer of Aschenbrödel was a citizen", "Lothair II's mother", "the city where Harris W. Fawell was born",
//! "the Green performer". Each link is a description of an entity the corpus must resolve before the next link
//! can be searched for.

/// Words that open a clause describing the noun before them: "the city *where* …", "the woman *who* …".
const RELATIVES: &[&str] = &["where", "who", "whom", "whose", "which", "that", "when"];

/// Determiners that open a description: "*the* director of …", "*both* directors of …".
const DETERMINERS: &[&str] = &["the", "a", "an", "both", "his", "her", "its", "their"];

/// Words that follow a name in a reduced relative clause: "the country Signmark *is* from".
const CLAUSE_VERBS: &[&str] = &["is", "was", "are", "were", "did", "does", "do", "has", "had", "have"];

/// Copulas of a question whose answer is the description itself: "What *is* the capital of France?".
const COPULAS: &[&str] = &["is", "was", "are", "were"];

struct Word {
    lower: String,
    capitalised: bool,
    possessive: bool,
    ends_clause: bool,
}

fn words(question: &str) -> Vec<Word> {
    question
        .split_whitespace()
        .enumerate()
        .map(|(i, raw)| {
            let trimmed = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
            let possessive = trimmed.ends_with("'s") || trimmed.ends_with("’s");
            let bare = trimmed.trim_end_matches("'s").trim_end_matches("’s").trim_matches(['\'', '’']);
            Word {
                lower: bare.to_lowercase(),
                capitalised: i > 0 && bare.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit()),
                possessive,
                ends_clause: raw.ends_with([',', '?', '!', ';', ':', '.']),
            }
        })
        .collect()
}

fn is_noun_like(w: &Word) -> bool {
    !w.capitalised
        && !crate::text::is_stopword(&w.lower)
        && w.lower.chars().all(|c| c.is_alphanumeric() || c == '-')
        && w.lower.starts_with(char::is_alphanumeric)
}

/// A past participle after a noun: "the film *directed* by", "the director *born* later".
fn is_participle(w: &Word) -> bool {
    w.lower.len() > 4 && w.lower.ends_with("ed") || w.lower == "born"
}

/// How many descriptions the question chains before it reaches what it asks: 0 for a question about what it
/// names ("Who is Nami?", "What is the capital of France?"), 1 for "Where was the director of film X born?", 2
/// for "the country where the composer of X was a citizen".
pub fn links(question: &str) -> usize {
    let w = words(question);
    let mut links: usize = 0;
    let mut i = 0;
    while i < w.len() {
        // A name in the possessive followed by a noun: "Lothair II's mother"; a noun's relative: "the film whose
        // director".
        let possessive = w[i].possessive && w[i].capitalised || w[i].lower == "whose" && i > 0;
        if possessive && w.get(i + 1).is_some_and(is_noun_like) {
            links += 1;
            i += 1;
            continue;
        }
        // A capitalised "The" mid-question opens a title ("film The Private Life of Cinema"), not a description.
        if !DETERMINERS.contains(&w[i].lower.as_str()) || w[i].capitalised {
            i += 1;
            continue;
        }
        // The description's head: one to three plain nouns ("the city", "the record label") or a name followed by
        // a plain noun ("the Green performer").
        let mut j = i + 1;
        while j < w.len() && w[j].capitalised && !w[j].ends_clause {
            j += 1;
        }
        let named_head = j > i + 1;
        let nouns_from = j;
        let participle = |k: usize| k > nouns_from && is_participle(&w[k]);
        while j < w.len() && j < nouns_from + 3 && is_noun_like(&w[j]) && !participle(j) && !w[j - 1].ends_clause {
            j += 1;
        }
        if j == nouns_from {
            i += 1;
            continue;
        }
        let next = w.get(j).filter(|_| !w[j - 1].ends_clause);
        let described = named_head
            || next.is_some_and(|n| {
                n.lower == "of"
                    || RELATIVES.contains(&n.lower.as_str())
                    // A reduced relative clause: "the country Signmark is from", not the apposition "the film Kiss".
                    || n.capitalised && {
                        let mut k = j;
                        while k < w.len() && w[k].capitalised && !w[k].ends_clause {
                            k += 1;
                        }
                        w.get(k).is_some_and(|v| CLAUSE_VERBS.contains(&v.lower.as_str()) || v.lower.ends_with("ed"))
                            && !w[k - 1].ends_clause
                    }
                    // A participle: "the film directed by X", "the director born later".
                    || is_participle(n)
            });
        if described {
            links += 1;
        }
        i = j.max(i + 1);
    }
    // "What is the capital of France?": the first description is the answer, not a link. Unless it names a
    // relative through another ("Who is the paternal grandfather of X?" is X's father's father; "the mother-in-law
    // of X" a spouse's mother), as "Who is X's mother-in-law?" does.
    let copular = w.len() > 2
        && ["what", "who", "which"].contains(&w[0].lower.as_str())
        && COPULAS.contains(&w[1].lower.as_str())
        && DETERMINERS.contains(&w[2].lower.as_str())
        && !w.get(3..6).is_some_and(|head| head.iter().any(through_another));
    if copular { links.saturating_sub(1) } else { links }
}

/// A relative reached through another: a grandparent or a grandchild, or an in-law.
fn through_another(w: &Word) -> bool {
    const GRAND: &[&str] = &["father", "mother", "parent", "son", "daughter", "child"];
    w.lower.ends_with("-in-law") || w.lower.strip_prefix("grand").is_some_and(|r| GRAND.contains(&r))
}

#[cfg(test)]
mod tests {
    use super::links;

    #[test]
    fn chains_are_counted_by_their_shape() {
        let cases: &[(&str, usize)] = &[
            ("Who is Nami?", 0),
            ("Which anime is Luffy in?", 0),
            ("How is Luffy related to Nami?", 0),
            ("What is the capital of France?", 0),
            ("Which film came out first, 3 Dots or Dying God?", 0),
            ("Were Scott Derrickson and Ed Wood of the same nationality?", 0),
            ("When did Lothair II's mother die?", 1),
            ("Where was the director of film The Private Life Of Cinema born?", 1),
            ("In what county is the city where Harris W. Fawell was born?", 1),
            ("What currency predated the Euro in the country Signmark is from?", 1),
            ("Who is the spouse of the Green performer?", 1),
            (
                "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?",
                1,
            ),
            ("When was the band formed that performed the song Mr. Brightside?", 1),
            ("What is the country where the composer of Aschenbrödel was a citizen?", 1),
            ("When did the country where the composer of Aschenbrödel was a citizen join the EU?", 2),
            ("Which film whose director is younger, Dangerously They Live or Salad By The Roots?", 1),
            ("Which film has the director born later, Christ Walking On The Water or 45 Fathers?", 1),
            ("Who is Mugain's mother-in-law?", 1),
            ("Who is the mother-in-law of Louise Of Mecklenburg-Güstrow?", 1),
            ("Who is the paternal grandfather of Engelbert Iii Of The Mark?", 1),
            ("Who is the father of Engelbert Iii Of The Mark?", 0),
            (
                "Do both directors of films Wrong Turn 5: Bloodlines and Dark River (2017 Film) have the same nationality?",
                1,
            ),
        ];
        for (question, expected) in cases {
            assert_eq!(links(question), *expected, "{question}");
        }
    }
}
