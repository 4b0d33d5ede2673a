//! What the deterministic agents share: the entity-question steps (`resolve.rs`), the multi-hop walk
//! (`bridge.rs`) and its next hop searched as a question of its own (`hop.rs`), the statements a graph result
//! carries (`graph_evidence.rs`), the answer to an entity question (`entity_answer.rs`) and whether the evidence
//! covers the question (`coverage.rs`). Pure functions of the loop state; the stages beside this folder call them.

pub mod bridge;
pub mod coverage;
pub mod entity_answer;
pub mod graph_evidence;
pub mod hop;
pub mod resolve;
