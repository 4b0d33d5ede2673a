//! Intake's analysis is sleuth-core's (`sleuth_core::analysis`), re-exported here beside the LLM rewriter, which
//! needs the model. Accepting a request (storing its state, publishing its first work) is I/O and lives in
//! `runtime/intake.rs`.

pub mod llm_rewrite;

pub use sleuth_core::analysis::*;
