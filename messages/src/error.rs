//! [`ErrorResponse`]: the typed error every stage and endpoint answers with instead of panicking (seed 002 §5.4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Well-formed but semantically invalid input (empty query, bad filter).
    InvalidInput,
    /// Not decodable as MessagePack or JSON of the expected shape.
    Malformed,
    /// Larger than [`crate::MAX_PAYLOAD_BYTES`].
    TooLarge,
    /// A schema version this build does not speak.
    UnsupportedVersion,
    Timeout,
    Unavailable,
    /// The request could not start before its deadline: more work waits for the planners than they take in
    /// its time budget. Refused at once, so the client can retry later or elsewhere.
    Overloaded,
    /// The requester's tenant is at one of its limits (requests under way, requests a second, LLM tokens a day):
    /// refused at once and nothing started, so the same request may be sent again later.
    Limited,
    /// A work message failed `max_deliver` times; the request was ended.
    DeadLetter,
    Internal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorResponse {
    #[serde(rename = "type")]
    pub kind: ErrorKind,
    pub message: String,
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Uuid>,
}

impl ErrorResponse {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ErrorResponse {
        let retryable =
            matches!(kind, ErrorKind::Timeout | ErrorKind::Unavailable | ErrorKind::Overloaded | ErrorKind::Limited);
        ErrorResponse { kind, message: message.into(), retryable, request_id: None }
    }

    pub fn for_request(mut self, request_id: Uuid) -> ErrorResponse {
        self.request_id = Some(request_id);
        self
    }
}

impl std::fmt::Display for ErrorResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}
