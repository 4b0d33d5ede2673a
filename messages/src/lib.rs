//! sleuth's wire protocol: every type that crosses the bus or the state store, their codec and subject names.
//!
//! This is the only crate that derives `Serialize`/`Deserialize` for the bus. Payloads are MessagePack
//! with named fields (see [`codec`]); a payload whose first byte is `{` is JSON, and replies go out in
//! the encoding of the request. Field additions are backwards compatible because every optional field
//! has a serde default; anything else needs a new [`SCHEMA_VERSION`] and updated golden tests.

pub mod analysis;
pub mod codec;
pub mod conversation;
pub mod degraded;
pub mod envelope;
pub mod error;
pub mod event;
mod finite;
#[doc(hidden)]
pub mod fuzzing;
pub mod intent;
pub mod lookup;
pub mod loop_state;
pub mod plan;
pub mod principal;
pub mod quota;
pub mod report;
pub mod response;
pub mod result;
pub mod step;
pub mod subjects;
pub mod work;

pub use analysis::{
    AskRequest, ComplexityScore, MAX_HISTORY_TURN_BYTES, MAX_HISTORY_TURNS, PriorTurn, QueryAnalysis, QueryRewrite,
    QueryType, RetrieverWeights, Route, TurnRole,
};
pub use codec::{CodecError, Encoding, MAX_PAYLOAD_BYTES};
pub use conversation::{Conversation, ConversationTurn};
pub use degraded::{Backend, Degradation};
pub use envelope::{Envelope, SCHEMA_VERSION, Stage, WorkItem};
pub use error::{ErrorKind, ErrorResponse};
pub use event::{Event, EventBody, EventKind};
pub use intent::{EntityRef, EntityType, GraphIntent, GraphLimits, GraphQueryType, SearchIntent};
pub use lookup::{EntitiesReply, EntityRecord, HydrateRequest, MAX_HYDRATE_IDS, MAX_SEARCH_CHARS, SearchRequest};
pub use loop_state::{
    ActionOutcome, ActionResult, AskReply, Caps, Card, Counters, LlmSpend, LoopState, Outcome, Phase, ReplyTo,
    TurnBrief, TurnRecord,
};
pub use plan::PlannerState;
pub use principal::{Principal, REQUEST_INFO_HEADER};
pub use quota::{RateBucket, TenantUsage, UnderWay};
pub use report::{CheckOutcome, SufficiencyReport};
pub use response::{AgentResponse, AnswerKind, Citation, ShortAnswer, TerminationReason};
pub use result::{CacheStats, DATABASE_STATS_ID, GraphPath, GraphResult, Hit, RetrievalResult};
pub use step::{Action, ActionKind, ClarifyingQuestion, MAX_PARALLEL_ACTIONS, NextStep};
pub use work::{MAX_CARRIED_STATE_BYTES, Snapshot, WorkMessage, encode_commit, encode_work};

/// Free-form structured data (filters, evidence, metadata); a `BTreeMap` so encodings are deterministic.
pub type JsonMap = std::collections::BTreeMap<String, serde_json::Value>;
