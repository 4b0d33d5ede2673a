//! [`Conversation`]: the recent turns of one `conversation_id`, kept in the `sleuth_conversations` KV bucket
//! with a TTL, so a follow-up ("and his mother?") can be resolved against what came before (seed 001 §1).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::step::ClarifyingQuestion;

/// Longest accepted `conversation_id`, in bytes. It is a KV key, so it is also limited to `[A-Za-z0-9_=.-]`.
pub const MAX_CONVERSATION_ID_BYTES: usize = 128;

/// One question of a conversation as intake understood it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationTurn {
    pub request_id: Uuid,
    /// The question as the user wrote it.
    pub query: String,
    /// The question after follow-up resolution: what was searched.
    pub rewritten: String,
    /// The entities it was about, in order of appearance.
    #[serde(default)]
    pub entities: Vec<String>,
    /// Set when this turn asked the user back; the next turn is the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clarifying_questions: Vec<ClarifyingQuestion>,
    pub at_ms: u64,
    /// What was answered, when it is known (a client's history says it): a follow-up's pronoun may stand for it
    /// ("Who directed Alien?" "Ridley Scott." "Where was he born?").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Oldest first; intake keeps the most recent ones only.
    pub turns: Vec<ConversationTurn>,
}

impl Conversation {
    pub fn last(&self) -> Option<&ConversationTurn> {
        self.turns.last()
    }
}

/// True when `id` can be a conversation key: 1 to [`MAX_CONVERSATION_ID_BYTES`] of `[A-Za-z0-9_=.-]`.
pub fn valid_conversation_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CONVERSATION_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'=' | b'.' | b'-'))
        && !id.starts_with('.')
        && !id.ends_with('.')
}
