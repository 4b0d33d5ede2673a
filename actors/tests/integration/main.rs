//! sleuth-actors' integration tests as one binary: each file is a module (issue 35 item 6: a binary per file
//! linked the whole crate and re-optimised its generics once per file). Run one file's tests with
//! `cargo test --release -p sleuth-actors --test integration -- MODULE::`.

mod common;

mod access;
mod cli;
mod fuzz_corpus;
mod graph_bridge;
mod intake;
mod layers;
mod llm_agents;
mod llm_client;
mod openai_embedder;
mod outages;
mod prompt_injection;
mod real_llm;
mod retrieval;
mod seed_traces;
