//! The NATS configs as they ship, started unchanged: `deploy/nats/compose.conf` (what `docker compose up` runs)
//! here, `deploy/nats/nats.conf` under every test of `deploy.rs` and `tenants.rs` (`nats::with_accounts`). Only the
//! store directory and the ports are the test's own, as flags. A config whose accounts ask for more JetStream store
//! than its server has, which nats-server takes without complaint at `-t` and then runs without JetStream, fails
//! here with the server's own words.

use std::time::Duration;

use sleuth_messages::{LoopState, Phase, codec, subjects::Subjects};
use sleuth_tests::{nats, process::*};

const QUESTION: &str = "Which anime is Luffy in?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_config_as_shipped_runs_jetstream_and_answers_through_every_stage_user() {
    let server = nats::shipped("compose.conf");
    let dir = tempfile::tempdir().unwrap();
    // accounts.conf names the default subjects (`sleuth.v1`, no suffix).
    let mut deployment = Deployment::seeded(&server.url, "compose", dir.path());
    deployment.prefix = "sleuth.v1".into();
    deployment.suffix = String::new();

    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &nats::url_as(&server, "admin"))]);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    assert!(String::from_utf8_lossy(&setup.stdout).contains("sleuth_loops"), "the loop bucket is set up");
    let _stages: Vec<ServeProcess> = ["retrieve", "graph", "synthesizer", "grader", "planner", "intake"]
        .iter()
        .map(|stage| ServeProcess::start(&deployment, stage, &[("SLEUTH__NATS__URL", &nats::url_as(&server, stage))]))
        .collect();

    // compose.conf lets a connection without credentials in as `client` (no_auth_user), as `nats req` from the
    // host does.
    let ask = run_cli(&deployment, &["ask", QUESTION], &[]);
    let stdout = String::from_utf8_lossy(&ask.stdout);
    assert!(ask.status.success(), "ask as client: {stdout}\n{}", String::from_utf8_lossy(&ask.stderr));
    assert!(stdout.contains("One Piece") && stdout.contains("Citations:"), "{stdout}");
    let id = printed_request_id(&stdout).expect("ask prints its request id");

    // The finished request's state, as an operator reads it: `sleuth state <id>`, and a KV get of `<id>.state`.
    let state = run_cli(&deployment, &["state", &id.to_string()], &[]);
    let json = String::from_utf8_lossy(&state.stdout);
    assert!(state.status.success(), "sleuth state: {json}\n{}", String::from_utf8_lossy(&state.stderr));
    let json: serde_json::Value = serde_json::from_str(&json).expect("sleuth state prints JSON");
    assert_eq!(json["state"]["request_id"], id.to_string(), "{json}");
    assert!(json["revision"].as_u64().is_some_and(|r| r > 0), "{json}");
    let client = async_nats::connect(&server.url).await.expect("connect as client");
    let kv = async_nats::jetstream::new(client).get_key_value("sleuth_loops").await.expect("kv bucket sleuth_loops");
    let entry = tokio::time::timeout(Duration::from_secs(5), kv.entry(Subjects::state_key(id)))
        .await
        .expect("a kv get within 5 s")
        .expect("kv get")
        .expect("the request's final state under <id>.state");
    let (stored, _) = codec::decode::<LoopState>(&entry.value).expect("a LoopState");
    assert_eq!((stored.request_id, stored.phase), (id, Phase::Done));

    server.assert_no_violations_but(&["$SRV.PING"]);
}
