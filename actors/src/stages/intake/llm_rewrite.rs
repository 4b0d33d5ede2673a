//! The LLM rewriter: with an LLM configured, a conversation's follow-up is rewritten by the model into a
//! self-contained question (seed 001's query rewriter), held to the `query_rewrite` schema. When the model is
//! unavailable, keeps answering out of schema, or names something the conversation never mentioned, the
//! deterministic [`rewrite`](super::rewrite) decides.

use std::time::Duration;

use sleuth_messages::{ConversationTurn, QueryRewrite};

use crate::{
    llm::{Agent, ChatMessage, LlmAgent, Usage, prompts, structured},
    text,
};

/// The rewrite and what it cost, or why not (with what the failed attempts cost) when the deterministic
/// rewriter should decide.
pub async fn rewrite(
    llm: &LlmAgent,
    question: &str,
    previous: &ConversationTurn,
    max_bytes: usize,
    timeout: Duration,
) -> (Result<QueryRewrite, String>, Usage) {
    let mut context = format!(
        "<previous_turn>\nquestion: {}\nunderstood as: {}\nabout: {}\n",
        previous.query,
        previous.rewritten,
        previous.entities.join(", ")
    );
    for q in &previous.clarifying_questions {
        context.push_str(&format!("asked the user back: {}\n", q.question));
    }
    context.push_str(&format!("</previous_turn>\n<new_message>\n{question}\n</new_message>"));
    let messages = vec![ChatMessage::system(prompts::REWRITE), ChatMessage::user(context.clone())];
    let fits = |r: &QueryRewrite| {
        if r.rewritten.len() > max_bytes {
            return Err(format!("rewritten must be at most {max_bytes} bytes"));
        }
        grounded(r, &context)
    };
    let ask = structured::ask::<QueryRewrite>(&llm.client, Agent::Planner, messages, llm.max_repairs, &fits);
    match tokio::time::timeout(timeout, ask).await {
        Ok(out) => match out.result {
            Ok(rewrite) => (Ok(rewrite), out.usage),
            Err(e) => {
                tracing::warn!(error = %e, "LLM rewriter gave no usable rewrite: deterministic rewriter");
                (Err(e.to_string()), out.usage)
            }
        },
        Err(_) => {
            tracing::warn!("LLM rewriter timed out: deterministic rewriter");
            (Err(format!("the rewriter gave no answer within {} ms", timeout.as_millis())), Usage::default())
        }
    }
}

/// A rewrite only restates the conversation: every name it writes (each word of a capitalised span, say
/// "Luffy the Bull") must occur in the new message or the previous turn. A model that resolves "the creator of
/// One Piece" from its own memory, or invents a name, is sent back; the retrieval then searches for what the
/// user asked, not for what the model guessed.
fn grounded(rewrite: &QueryRewrite, conversation: &str) -> Result<(), String> {
    for question in std::iter::once(&rewrite.rewritten).chain(&rewrite.subquestions) {
        let opening = question.split_whitespace().next().unwrap_or("");
        for span in text::name_spans(question) {
            // A lone capitalised word that opens the question ("List", "Name") is grammar, not a name.
            if !span.contains(' ') && opening.trim_matches(|c: char| !c.is_alphanumeric()) == span {
                continue;
            }
            let unknown = span
                .split_whitespace()
                .filter(|w| w.chars().any(char::is_alphabetic) && !text::is_stopword(&w.to_lowercase()))
                .find(|w| !text::mentions(conversation, w.trim_end_matches('.')));
            if let Some(word) = unknown {
                return Err(format!(
                    "{span:?} is not in the conversation ({word:?} is not in the new message or the previous \
                     turn): restate the question with its own words and the previous turn's names only"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(rewritten: &str, subquestions: &[&str]) -> QueryRewrite {
        QueryRewrite { rewritten: rewritten.into(), subquestions: subquestions.iter().map(|s| s.to_string()).collect() }
    }

    const CONVERSATION: &str = "<previous_turn>\nquestion: Which anime is Luffy in?\nunderstood as: Which anime is \
        Luffy in?\nabout: Monkey D. Luffy, One Piece\n</previous_turn>\n<new_message>\nWhere was the creator of One \
        Piece born?\n</new_message>";

    #[test]
    fn a_rewrite_that_keeps_the_conversation_s_names_is_grounded() {
        assert_eq!(grounded(&rewrite("Where was the creator of One Piece born?", &[]), CONVERSATION), Ok(()));
        assert_eq!(grounded(&rewrite("Which anime is Monkey D. Luffy in?", &[]), CONVERSATION), Ok(()));
        assert_eq!(grounded(&rewrite("List the anime Luffy is in", &[]), CONVERSATION), Ok(()));
    }

    #[test]
    fn a_name_the_conversation_never_mentioned_is_sent_back() {
        // What SmolLM2-135M wrote for this conversation against the real server.
        let invented = grounded(&rewrite("Where was Luffy the Bull born?", &[]), CONVERSATION).unwrap_err();
        assert!(invented.contains("Bull"), "{invented}");
        // An answer from the model's memory is not a rewrite either, in a sub-question as well.
        assert!(grounded(&rewrite("Where was Eiichiro Oda born?", &[]), CONVERSATION).is_err());
        let sub = rewrite("Where was the creator of One Piece born?", &["Who is Eiichiro Oda?"]);
        assert!(grounded(&sub, CONVERSATION).is_err());
    }
}
