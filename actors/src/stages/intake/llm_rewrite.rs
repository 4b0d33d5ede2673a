//! The LLM rewriter: with an LLM configured, a conversation's follow-up is rewritten by the model into a
//! self-contained question (seed 001's query rewriter), held to the `query_rewrite` schema. When the model is
//! unavailable or keeps answering out of schema, the deterministic [`rewrite`](super::rewrite) decides.

use std::time::Duration;

use sleuth_messages::{ConversationTurn, QueryRewrite};

use crate::llm::{Agent, ChatMessage, LlmAgent, Usage, prompts, structured};

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
    let messages = vec![ChatMessage::system(prompts::REWRITE), ChatMessage::user(context)];
    let fits = |r: &QueryRewrite| {
        if r.rewritten.len() > max_bytes { Err(format!("rewritten must be at most {max_bytes} bytes")) } else { Ok(()) }
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
