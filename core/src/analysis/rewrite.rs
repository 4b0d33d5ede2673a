//! The deterministic query rewriter (seed 001 §1): follow-ups resolved against the conversation's previous turn
//! ("and his mother?" after "When did Lothair II die?" becomes "When did Lothair II's mother die?"), the answer
//! to a clarifying question merged into the question it clarifies, and complex questions decomposed.

use sleuth_messages::{ConversationTurn, QueryType};

use crate::text;

/// Personal pronouns that stand for the previous turn's entity, and possessives that become "X's".
const PRONOUNS: &[&str] = &["he", "she", "him", "it", "they", "them"];
const POSSESSIVES: &[&str] = &["his", "her", "its", "their"];
/// The pronouns that stand for a person, and those that stand for a thing: when the previous turn's answer is
/// known, a person's pronoun may stand for the person it named, a thing's for the thing.
const PERSONAL: &[&str] = &["he", "she", "him", "his", "her"];
const IMPERSONAL: &[&str] = &["it", "its"];
/// Verbs after "who" that ask who someone is ("Who was Lothair II?"): a pronoun after it stands for that name,
/// not for the answer.
const COPULAS: &[&str] = &["is", "was", "are", "were", "'s"];
/// Openers of an elliptical follow-up: "and Nami?", "what about his mother?", "et Zoro ?", "und Zoro?".
const ELLIPSIS: &[&str] = &["and", "what about", "how about", "et", "et pour", "y", "und", "und was ist mit", "e"];
/// Words that make a sentence a full question on its own.
const QUESTION_WORDS: &[&str] = &[
    "who", "whom", "whose", "what", "when", "where", "which", "why", "how", "is", "are", "was", "were", "did", "does",
    "do", "qui", "quand", "où", "quel", "quelle", "pourquoi", "comment", "quién", "cuándo", "dónde", "cuál", "wer",
    "wann", "wo", "welche", "warum", "wie",
];
/// Clause separators after which a new question may start: "… and when was it released?".
const CONJUNCTIONS: &[&str] = &["and", "et", "y", "und"];
/// Most sub-questions a question is decomposed into.
pub const MAX_SUBQUESTIONS: usize = 4;

/// The question after resolution against `previous`, and a note per change (`his → Lothair II's`).
pub fn resolve(question: &str, previous: Option<&ConversationTurn>) -> (String, Vec<String>) {
    let Some(previous) = previous else { return (question.to_string(), Vec::new()) };
    if !previous.clarifying_questions.is_empty() {
        return clarified(question, previous);
    }
    let frame = previous.rewritten.trim_end_matches(['?', '.', '!']);
    let answered = Answered::of(previous);
    let Some(entity) = previous.entities.first().or(answered.person.as_ref()).or(answered.thing.as_ref()) else {
        return (question.to_string(), Vec::new());
    };
    // The entity as the previous question wrote it ("Monkey D. Luffy" for the span "Monkey D Luffy").
    let span = find_name(frame, entity);
    let referent = span.map_or(entity.as_str(), |(start, end)| &frame[start..end]);
    let referents = Referents {
        person: answered.person.as_deref().unwrap_or(referent),
        thing: answered.thing.as_deref().unwrap_or(referent),
        other: referent,
    };
    // A question that names its own entities keeps its pronouns: they refer to those.
    let (substituted, mut notes) = if text::name_spans(question).is_empty() {
        substitute(question, &referents)
    } else {
        (question.to_string(), Vec::new())
    };
    let body = strip_ellipsis(&substituted);
    let Some(body) = body.filter(|b| !starts_with_question_word(b)) else { return (substituted, notes) };
    // An elliptical follow-up borrows the previous question's frame: its entity is replaced by the fragment.
    let fragment = body.trim_end_matches(['?', '.', '!', ' ']).trim();
    let rewritten = match span {
        Some((start, end)) => format!("{}{}{}?", &frame[..start], fragment, &frame[end..]),
        None => format!("{frame} {fragment}?"),
    };
    notes.push(format!("follow-up → {rewritten}"));
    (rewritten, notes)
}

/// What the previous turn's answer may stand for in a follow-up: the person a who-question asked for ("Who
/// directed Alien?" "Ridley Scott"), or the thing a which- or what-question asked for ("Which anime is Luffy in?"
/// "One Piece"). "Who was Lothair II?" asks who a named person is: its pronouns stay his.
#[derive(Debug, Default)]
struct Answered {
    person: Option<String>,
    thing: Option<String>,
}

impl Answered {
    fn of(previous: &ConversationTurn) -> Answered {
        let Some(answer) = previous.answer.as_deref().map(str::trim).filter(|a| !a.is_empty()) else {
            return Answered::default();
        };
        let words: Vec<&str> = previous.rewritten.split_whitespace().collect();
        let word = |i: usize| words.get(i).map(|w| w.to_lowercase()).unwrap_or_default();
        let answer = Some(answer.to_string());
        match word(0).as_str() {
            "who" | "whom" if !(COPULAS.contains(&word(1).as_str()) && is_a_name(&words[2.min(words.len())..])) => {
                Answered { person: answer, thing: None }
            }
            "which" | "what" => Answered { person: None, thing: answer },
            _ => Answered::default(),
        }
    }
}

/// Whether `words` are one name and nothing else ("Lothair II?", not "Luffy's brother?").
fn is_a_name(words: &[&str]) -> bool {
    let spans = text::name_spans(&words.join(" "));
    spans.len() == 1 && spans[0].split_whitespace().count() == words.len()
}

/// What each kind of pronoun stands for.
struct Referents<'a> {
    person: &'a str,
    thing: &'a str,
    /// "they", "them", "their", and every pronoun when the answer is not known.
    other: &'a str,
}

impl Referents<'_> {
    fn all(referent: &str) -> Referents<'_> {
        Referents { person: referent, thing: referent, other: referent }
    }

    fn of(&self, pronoun: &str) -> &str {
        if PERSONAL.contains(&pronoun) {
            self.person
        } else if IMPERSONAL.contains(&pronoun) {
            self.thing
        } else {
            self.other
        }
    }
}

/// Where `name` occurs in `text`, whole words, each word optionally followed by a period ("Monkey D Luffy" finds
/// "Monkey D. Luffy").
fn find_name(text: &str, name: &str) -> Option<(usize, usize)> {
    let words: Vec<String> = name.split_whitespace().map(|w| regex::escape(w.trim_end_matches('.'))).collect();
    if words.is_empty() {
        return None;
    }
    let re = regex::Regex::new(&format!(r"\b{}\b", words.join(r"\.?\s+"))).ok()?;
    re.find(text).map(|m| (m.start(), m.end()))
}

/// The user answered a clarifying question: the answer fills the pronouns of the question it clarifies, or is
/// appended to it.
fn clarified(answer: &str, previous: &ConversationTurn) -> (String, Vec<String>) {
    let answer = answer.trim_end_matches(['?', '.', '!', ' ']).trim();
    let (substituted, _) = substitute(&previous.query, &Referents::all(answer));
    let merged = if substituted != previous.query {
        substituted
    } else {
        format!("{} {answer}", previous.query.trim_end_matches(['?', '.', '!']))
    };
    (merged.clone(), vec![format!("clarified → {merged}")])
}

/// Replaces English pronouns with what they stand for (possessives with `referent's`).
fn substitute(question: &str, referents: &Referents<'_>) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for word in question.split(' ') {
        let core = word.trim_matches(|c: char| !c.is_alphanumeric());
        let lower = core.to_lowercase();
        let referent = referents.of(&lower);
        let replacement = if POSSESSIVES.contains(&lower.as_str()) {
            Some(format!("{referent}'s"))
        } else if PRONOUNS.contains(&lower.as_str()) {
            Some(referent.to_string())
        } else {
            None
        };
        match replacement {
            Some(r) if !core.is_empty() => {
                notes.push(format!("{core} → {r}"));
                out.push(word.replacen(core, &r, 1));
            }
            _ => out.push(word.to_string()),
        }
    }
    (out.join(" "), notes)
}

/// The question without its elliptical opener, when it has one.
fn strip_ellipsis(question: &str) -> Option<String> {
    let lower = question.to_lowercase();
    ELLIPSIS
        .iter()
        .filter(|opener| lower.starts_with(&format!("{opener} ")))
        .max_by_key(|opener| opener.len())
        .map(|opener| question[opener.len()..].trim().to_string())
}

fn starts_with_question_word(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("").trim_start_matches('¿').to_lowercase();
    QUESTION_WORDS.contains(&first.as_str())
}

/// Splits a question into the sub-questions retrieval must cover: several questions in one message, clauses
/// joined by "and" that each ask something, or one per compared entity plus the comparison itself.
pub fn decompose(question: &str, query_type: QueryType, entities: &[String]) -> Vec<String> {
    let sentences: Vec<String> = question
        .split_inclusive('?')
        .map(str::trim)
        .filter(|s| !text::content_words(s).is_empty())
        .map(str::to_string)
        .collect();
    let mut parts: Vec<String> = sentences.iter().flat_map(|s| split_clauses(s)).collect();
    if parts.len() <= 1 && query_type == QueryType::Comparative && entities.len() >= 2 {
        // "Which film came out first, A or B?" → what retrieval needs about A, about B, and the comparison.
        let aspect: Vec<String> = text::content_words(question)
            .into_iter()
            .filter(|w| !entities.iter().any(|e| text::mentions(e, w)))
            .collect();
        parts = entities.iter().map(|e| format!("{e} {}", aspect.join(" ")).trim().to_string()).collect();
        parts.push(question.to_string());
    }
    if parts.is_empty() {
        parts.push(question.to_string());
    }
    parts.truncate(MAX_SUBQUESTIONS);
    parts
}

/// "Who directed Alien and when was it released?" → two clauses, each starting with a question word.
fn split_clauses(sentence: &str) -> Vec<String> {
    let words: Vec<&str> = sentence.split(' ').collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..words.len().saturating_sub(1) {
        let joins = CONJUNCTIONS.contains(&words[i].to_lowercase().as_str());
        if joins && starts_with_question_word(words[i + 1]) && i > start + 1 {
            parts.push(words[start..i].join(" ").trim_end_matches(',').to_string());
            start = i + 1;
        }
    }
    parts.push(words[start..].join(" "));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn turn(query: &str, entities: &[&str]) -> ConversationTurn {
        ConversationTurn {
            request_id: Uuid::nil(),
            query: query.into(),
            rewritten: query.into(),
            entities: entities.iter().map(|e| e.to_string()).collect(),
            clarifying_questions: Vec::new(),
            at_ms: 0,
            answer: None,
        }
    }

    #[test]
    fn follow_ups_are_resolved_against_the_previous_turn() {
        let cases: &[(&str, &str, &[&str], &str)] = &[
            ("and his mother?", "When did Lothair II die?", &["Lothair II"], "When did Lothair II's mother die?"),
            ("And Nami?", "Which anime is Luffy in?", &["Luffy"], "Which anime is Nami in?"),
            ("When did he die?", "Who was Lothair II?", &["Lothair II"], "When did Lothair II die?"),
            ("Where was his mother born?", "Who is Luffy?", &["Luffy"], "Where was Luffy's mother born?"),
            ("and his crew?", "Who is Monkey D. Luffy?", &["Monkey D Luffy"], "Who is Monkey D. Luffy's crew?"),
            ("what about her brother?", "Where was Nami born?", &["Nami"], "Where was Nami's brother born?"),
            ("Who is Zoro?", "Who is Luffy?", &["Luffy"], "Who is Zoro?"),
            ("and his mother?", "Tell me a joke", &[], "and his mother?"),
        ];
        for (q, prev, entities, want) in cases {
            let (got, _) = resolve(q, Some(&turn(prev, entities)));
            assert_eq!(got, *want, "{q} after {prev}");
        }
        assert_eq!(resolve("and his mother?", None).0, "and his mother?");
    }

    #[test]
    fn a_pronoun_stands_for_the_answer_its_kind_asked_for() {
        let answered = |query: &str, entities: &[&str], answer: &str| ConversationTurn {
            answer: Some(answer.into()),
            ..turn(query, entities)
        };
        let cases: &[(&str, ConversationTurn, &str)] = &[
            (
                "Where was he born?",
                answered("Who directed Alien?", &["Alien"], "Ridley Scott"),
                "Where was Ridley Scott born?",
            ),
            (
                "When did it start?",
                answered("Which anime is Luffy in?", &["Luffy"], "One Piece"),
                "When did One Piece start?",
            ),
            (
                "Who is his brother?",
                answered("Which anime is Luffy in?", &["Luffy"], "One Piece"),
                "Who is Luffy's brother?",
            ),
            (
                "When did he die?",
                answered("Who was Lothair II?", &["Lothair II"], "a king"),
                "When did Lothair II die?",
            ),
            ("Where was he born?", answered("Who is Luffy's brother?", &["Luffy"], "Ace"), "Where was Ace born?"),
            ("Where is it?", answered("When did Lothair II die?", &["Lothair II"], "869"), "Where is Lothair II?"),
            ("Who wrote it?", answered("What is the longest anime?", &[], "Sazae-san"), "Who wrote Sazae-san?"),
        ];
        for (q, previous, want) in cases {
            assert_eq!(resolve(q, Some(previous)).0, *want, "{q} after {}", previous.query);
        }
    }

    #[test]
    fn an_answer_to_a_clarifying_question_completes_the_question() {
        let mut previous = turn("his age?", &[]);
        previous.clarifying_questions.push(sleuth_messages::ClarifyingQuestion {
            question: "Who do you mean?".into(),
            reason: "names nothing".into(),
            blocking: true,
        });
        assert_eq!(resolve("Luffy", Some(&previous)).0, "Luffy's age?");
        previous.query = "the film?".into();
        assert_eq!(resolve("Alien (1979)", Some(&previous)).0, "the film Alien (1979)");
    }

    #[test]
    fn complex_questions_are_decomposed() {
        let e = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let cases: &[(&str, QueryType, Vec<String>, usize)] = &[
            ("Who is Luffy?", QueryType::Factual, e(&["Luffy"]), 1),
            ("Who directed Alien and when was it released?", QueryType::Factual, e(&["Alien"]), 2),
            ("Who is Luffy? Where was Nami born?", QueryType::Factual, e(&["Luffy", "Nami"]), 2),
            (
                "Compare les avantages et inconvenients du processus X par rapport a Y",
                QueryType::Comparative,
                e(&["X", "Y"]),
                3,
            ),
            ("Which film came out first, 3 Dots or Dying God?", QueryType::Comparative, e(&["3 Dots", "Dying God"]), 3),
        ];
        for (q, t, entities, n) in cases {
            let parts = decompose(q, *t, entities);
            assert_eq!(parts.len(), *n, "{q}: {parts:?}");
        }
        let parts = decompose(
            "Which film came out first, 3 Dots or Dying God?",
            QueryType::Comparative,
            &e(&["3 Dots", "Dying God"]),
        );
        assert!(parts[0].starts_with("3 Dots ") && !parts[0].contains("Dying"), "{parts:?}");
        assert!(parts[1].starts_with("Dying God ") && !parts[1].contains("Dots"), "{parts:?}");
    }
}
