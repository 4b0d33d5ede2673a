//! sleuth's end-to-end tests as one binary: each file is a module (issue 35 item 6: a binary per file linked
//! the whole workspace and re-optimised its generics once per file). Run one file's tests with
//! `cargo test --release -p sleuth-tests --test e2e -- MODULE::`.

mod chaos;
mod cluster;
mod control;
mod crash;
mod deploy;
mod distributed;
mod documents;
mod gateway;
mod gateway_clients;
mod graph;
mod injection_sql;
mod loop_bucket;
mod nats_restart;
mod outages;
mod qdrant_server;
mod readiness;
mod scale_out;
mod seed_traces;
mod shipped;
mod supervision;
mod telemetry;
mod tenants;
