//! A client's history as the conversation: the turns a chat client sends with each message, read into the
//! previous turn a follow-up is resolved against, whether or not sleuth saw them (`AskRequest::history`).

use sleuth_messages::{ConversationTurn, PriorTurn, TurnRole};
use uuid::Uuid;

use super::{analyze_in, normalize};
use crate::{entity_types::EntityTypes, text};

/// Most words of an assistant's lead line read as an answer that is itself a name.
const MAX_ANSWER_WORDS: usize = 8;

/// The last user turn of `history`, understood as intake would have understood it: each user message resolved
/// against the one before it, and the name each assistant message answered with (the first name its leading line
/// gives that its question did not). `None` when the history has no user message.
pub fn previous_turn(history: &[PriorTurn], types: &EntityTypes) -> Option<ConversationTurn> {
    let mut previous: Option<ConversationTurn> = None;
    for turn in history {
        match turn.role {
            TurnRole::User => {
                let query = normalize(&turn.content);
                if query.is_empty() {
                    continue;
                }
                let analysis = analyze_in(&query, previous.as_ref(), types);
                previous = Some(ConversationTurn {
                    request_id: Uuid::nil(),
                    query,
                    rewritten: analysis.rewritten,
                    entities: analysis.entities,
                    clarifying_questions: analysis.clarifying_questions,
                    at_ms: 0,
                    answer: None,
                });
            }
            TurnRole::Assistant => {
                if let Some(asked) = previous.as_mut() {
                    asked.answer = answered_name(&turn.content, &asked.rewritten);
                    // Whatever was asked back, the assistant has answered: the next message is a new question.
                    asked.clarifying_questions.clear();
                }
            }
        }
    }
    previous
}

/// The name an answer gives: its leading line when that line is a name ("One Piece [1]", "**Ridley Scott**"),
/// else the first name in it that the question did not name ("Ridley Scott directed Alien." → "Ridley Scott").
fn answered_name(answer: &str, question: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = lead_line(line);
    if line.is_empty() {
        return None;
    }
    let words = line.split_whitespace().count();
    let spans: Vec<String> = text::name_spans(&line).into_iter().filter(|s| s.chars().count() > 1).collect();
    if spans.len() == 1 && spans[0].split_whitespace().count() == words && words <= MAX_ANSWER_WORDS {
        return Some(line);
    }
    // A name of several words before a single word: "Japanese" in "Naruto is a Japanese manga series created by
    // Masashi Kishimoto" describes; "Masashi Kishimoto" answers.
    let new: Vec<String> = spans.into_iter().filter(|span| !text::mentions(question, span)).collect();
    new.iter().find(|span| span.contains(' ')).or(new.first()).cloned()
}

/// A line without its citation markers (`[1]`), emphasis and closing punctuation.
fn lead_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '[' {
            let marker: String = chars.clone().take_while(|d| *d != ']').collect();
            if !marker.is_empty() && marker.chars().all(|d| d.is_ascii_digit() || d == ',' || d == ' ') {
                chars.nth(marker.chars().count());
                continue;
            }
        }
        if !matches!(c, '*' | '_' | '`' | '#') {
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ").trim_end_matches(['.', '!', ':', ';', ',']).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::demo_types;

    #[test]
    fn the_last_user_turn_is_resolved_against_the_turns_before_it() {
        let history = [
            PriorTurn::user("Which anime is Luffy in?"),
            PriorTurn::assistant("One Piece [1]\n\nMonkey D. Luffy appears in One Piece. [1]"),
            PriorTurn::user("Who is his brother?"),
            PriorTurn::assistant("Portgas D. Ace [2]"),
        ];
        let previous = previous_turn(&history, &demo_types()).unwrap();
        assert_eq!(previous.rewritten, "Who is Luffy's brother");
        assert_eq!(previous.answer.as_deref(), Some("Portgas D. Ace"));
        let (resolved, _) = super::super::rewrite::resolve("Where was he born?", Some(&previous));
        assert_eq!(resolved, "Where was Portgas D. Ace born?", "the brother the question asked for");
    }

    #[test]
    fn an_answer_in_a_sentence_gives_the_name_its_question_did_not() {
        assert_eq!(
            answered_name("Ridley Scott directed Alien.", "Who directed Alien?").as_deref(),
            Some("Ridley Scott")
        );
        assert_eq!(answered_name("**One Piece** [1][2]", "Which anime is Luffy in?").as_deref(), Some("One Piece"));
        assert_eq!(answered_name("I could not find that.", "Who directed Alien?"), None);
        let sentence = "Naruto is a Japanese manga series created by Masashi Kishimoto. [1]";
        assert_eq!(answered_name(sentence, "Who created Naruto?").as_deref(), Some("Masashi Kishimoto"));
        assert_eq!(answered_name("", "q"), None);
    }

    #[test]
    fn a_history_without_a_user_message_is_no_conversation() {
        assert!(previous_turn(&[PriorTurn::assistant("Hello! Ask me anything.")], &demo_types()).is_none());
        assert!(previous_turn(&[], &demo_types()).is_none());
    }
}
