//! The deterministic agents, as pure functions of the loop state: the planner (`planner.rs`), the grader (`grader.rs`)
//! and the synthesizer (`synthesizer.rs`, its sentences scored by `sentences.rs`, its leading sentence quoted so it
//! reads on its own by `lead.rs`, an abbreviation's spelling read by `abbreviations.rs`), and what they share: the
//! entity-question steps (`resolve.rs`, `entity_answer.rs`), the multi-hop walk over mention links (`bridge.rs`), the
//! hop taken by searching a rewritten question (`hop.rs`), and which of the question's names no card covers
//! (`coverage.rs`). sleuth-actors' stages run them on a delivery, and its LLM stages fall back on them.

mod abbreviations;
pub mod bridge;
pub mod coverage;
pub mod entity_answer;
pub mod grader;
pub mod hop;
mod lead;
pub mod planner;
pub mod resolve;
mod sentences;
pub mod synthesizer;
