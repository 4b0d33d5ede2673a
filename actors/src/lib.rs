//! sleuth-actors: the stages of sleuth's agentic retrieval loop as supervised actors, the bus and state-store
//! adapters they run on (NATS JetStream + KV, or in-process), the backends, and the `sleuth` command line.
//!
//! Start at [`node::Node`] for how a process is wired, [`runtime::handler`] for how one message is handled,
//! and [`machine`] for the loop's state machine.

pub mod access;
pub mod bench;
pub mod bootstrap;
pub mod bus;
pub mod cli;
pub mod client;
pub mod config;
pub mod embed;
pub mod entity_types;
pub mod eval;
#[cfg(test)]
pub mod fixtures;
#[doc(hidden)]
pub mod fuzzing;
pub mod gateway;
pub mod graph;
pub mod guard;
pub mod index;
pub mod ingest;
pub mod llm;
pub mod machine;
pub mod nats_client;
pub mod node;
pub mod reader;
pub mod retrieval;
pub mod runtime;
pub mod secrets;
pub mod stages;
pub mod store;
pub mod telemetry;
pub mod text;
