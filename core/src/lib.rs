//! sleuth-core: what sleuth decides, as plain functions of the protocol's types, with no I/O and no clock. The
//! loop's state machine (`machine`), intake's analysis of a question (`analysis`), the deterministic planner,
//! grader and synthesizer with what they share (`agents`), the reader that gives a reply its short answer
//! (`reader`), and the text utilities they stand on (`text`, `entities`, `entity_types`). sleuth-actors runs them:
//! its stages wrap these agents, read the clock and call the backends and the LLM.
//!
//! It depends on sleuth-messages and small pure crates only, so `cargo test -p sleuth-core` builds and runs in
//! seconds, without the async runtime, the NATS and database clients or the embedding model.

pub mod agents;
pub mod analysis;
pub mod entities;
pub mod entity_types;
pub mod fixtures;
pub mod machine;
pub mod reader;
pub mod text;
