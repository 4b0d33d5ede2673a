//! sleuth-actors: the stages of sleuth's agentic retrieval loop as supervised actors, the bus and state-store
//! adapters they run on (NATS JetStream + KV, or in-process), the backends, and the `sleuth` command line.
//!
//! Start at [`node::Node`] for how a process is wired, [`runtime::handler`] for how one message is handled,
//! and sleuth-core's `machine` for the loop's state machine. What sleuth decides (the state machine, intake's
//! analysis, the deterministic agents, the reader, the text utilities) is sleuth-core's, re-exported here under the
//! same names so both crates read alike.

pub mod access;
pub mod bench;
pub mod bootstrap;
pub mod bus;
pub mod cli;
pub mod client;
pub mod config;
pub mod embed;
pub mod eval;
#[doc(hidden)]
pub mod fuzzing;
pub mod gateway;
pub mod graph;
pub mod guard;
pub mod index;
pub mod ingest;
pub mod llm;
pub mod nats_client;
pub mod node;
pub mod retrieval;
pub mod runtime;
pub mod secrets;
pub mod stages;
pub mod store;
pub mod telemetry;
pub mod tenancy;

#[cfg(test)]
pub use sleuth_core::fixtures;
pub use sleuth_core::{entity_types, machine, reader, text};
