//! The `sleuth` binary as a user runs it: the README's first command on a fresh data directory, `--json`,
//! configuration errors, and idempotent ingestion.

use std::process::{Command, Output};

fn sleuth(data_dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sleuth"));
    cmd.args(args)
        .env("SLEUTH__DATA_DIR", data_dir)
        .env_remove("SLEUTH__NATS__URL")
        .env_remove("NATS_URL")
        .env_remove("SLEUTH_CONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("sleuth runs")
}

/// What a successful run printed. A failed run fails the test with its exit status and everything it printed
/// to stderr, so a failure says why instead of showing an empty stdout.
fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "sleuth failed ({}); its stdout:\n{}\nits stderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn ask_on_a_fresh_data_dir_prints_a_cited_answer() {
    let dir = tempfile::tempdir().unwrap();
    let out = sleuth(dir.path(), &["ask", "Which anime is Luffy in?"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.contains("Citations:") && text.contains("[1]") || text.contains("[2]"), "{text}");
    assert!(text.contains("One Piece"), "{text}");
    assert!(text.contains("stopped: sufficient"), "{text}");
}

/// Whatever `RUST_LOG` says (the image sets `info`), logs go to stderr: stdout holds the answer alone, first line
/// first, and `--json` stays one parseable document.
#[test]
fn ask_prints_the_answer_not_logs_whatever_rust_log_says() {
    let dir = tempfile::tempdir().unwrap();
    for level in ["info", "debug"] {
        let out = sleuth(dir.path(), &["ask", "Which anime is Luffy in?"], &[("RUST_LOG", level)]);
        let text = stdout(&out);
        assert!(text.starts_with("One Piece"), "RUST_LOG={level}: the answer is not first on stdout:\n{text}");
        assert!(!text.contains("\"level\"") && !text.contains(" INFO "), "RUST_LOG={level}: logs on stdout:\n{text}");
        assert!(!out.stderr.is_empty(), "RUST_LOG={level}: the logs went nowhere");
        let out = sleuth(dir.path(), &["ask", "--json", "Which anime is Luffy in?"], &[("RUST_LOG", level)]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("RUST_LOG={level}: stdout is not one JSON document ({e}):\n{}", stdout(&out)));
        assert!(json["outcome"]["answer"].is_object(), "{json}");
    }
}

#[test]
fn ask_json_prints_the_raw_response() {
    let dir = tempfile::tempdir().unwrap();
    let out = sleuth(dir.path(), &["ask", "--json", "How is Luffy related to Nami?"], &[]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json output");
    let citations = json["outcome"]["answer"]["citations"].as_array().expect("citations");
    assert!(!citations.is_empty());
    // The path between the two characters is the evidence (seed 000 §9).
    assert!(json["outcome"]["answer"]["evidence"]["paths"].as_array().is_some_and(|p| !p.is_empty()), "{json}");
    assert!(json["turns"].as_array().is_some_and(|t| !t.is_empty()));
}

#[test]
fn a_bad_configuration_value_is_reported_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = sleuth(dir.path(), &["ask", "x"], &[("SLEUTH__STAGES__WORKERS", "0")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("stages.workers"));
    let out = sleuth(dir.path(), &["ask", "x"], &[("SLEUTH__NATS__NOPE", "1")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn ingesting_the_same_documents_twice_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.jsonl");
    let write = |second: &str| {
        std::fs::write(
            &docs,
            format!("{{\"id\":\"a\",\"title\":\"Alpha\",\"text\":\"The alpha document.\"}}\n{{\"id\":\"b\",\"title\":\"Beta\",\"text\":\"{second}\"}}\n"),
        )
        .unwrap()
    };
    write("The beta document.");
    let data = dir.path().join("data");
    // Each run's stdout, checked with its stderr in the message.
    let run = |args: &[&str], expected: &str| {
        let out = sleuth(&data, args, &[]);
        let printed = stdout(&out);
        assert!(
            printed.contains(expected),
            "{args:?}: expected {expected:?} in\n{printed}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let docs = docs.to_str().unwrap();
    run(&["ingest", "docs", docs], "2 new, 0 replaced, 0 unchanged");
    run(&["ingest", "docs", docs], "0 new, 0 replaced, 2 unchanged");
    write("The beta document, revised.");
    run(&["ingest", "docs", docs], "0 new, 1 replaced, 1 unchanged");
    run(&["ingest", "delete", "b", "zzz"], "deleted 1 of 2 documents");
    run(&["ingest", "docs", docs], "1 new, 0 replaced, 1 unchanged");
    let bad = sleuth(&data, &["ingest", "docs", "/nonexistent/file.jsonl"], &[]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("does not exist"));
}

#[test]
fn the_null_backend_bench_runs_every_request_through_the_real_loop_and_checks_each_answer() {
    let dir = tempfile::tempdir().unwrap();
    let out = sleuth(
        dir.path(),
        &["bench", "--null-backends", "--turns", "4", "--requests", "20", "--concurrency", "4"],
        &[],
    );
    let (text, err) = (stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}\n{err}");
    // An answer other than "c1 c2 c3 c4" (four turns, one card each) would count as an error.
    assert!(text.contains("20 requests, concurrency 4 · 0 errors"), "{text}\n{err}");
    assert!(text.contains("4 turns per request") && text.contains("µs per turn"), "{text}");
    // The bench ran in a scratch directory: the user's data directory holds nothing of it (an index made without
    // an embedder would refuse the embedder afterwards), and the embedded default still answers from it.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the bench wrote into the data directory: {left:?}");
    let asked = stdout(&sleuth(dir.path(), &["ask", "Which anime is Luffy in?"], &[]));
    assert!(asked.contains("One Piece") && asked.contains("Citations:"), "{asked}");
}

/// `sleuth search --tenant` answers as that tenant would be answered: an entity ingested for ALPHA is found for
/// ALPHA only, never for the command line without a tenant or for BETA; a malformed tenant name is an error.
#[test]
fn search_as_a_tenant_finds_its_own_entities_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let entities = dir.path().join("entities.jsonl");
    let edges = dir.path().join("edges.jsonl");
    std::fs::write(
        &entities,
        "{\"id\":\"zorblax\",\"type\":\"character\",\"name\":\"Zorblax Quint\"}\n\
         {\"id\":\"mira\",\"type\":\"character\",\"name\":\"Mira Vance\"}\n",
    )
    .unwrap();
    std::fs::write(&edges, "{\"src\":\"zorblax\",\"dst\":\"mira\",\"relation\":\"co_appears\"}\n").unwrap();
    let paths = [entities.to_str().unwrap(), edges.to_str().unwrap()];
    stdout(&sleuth(&data, &["ingest", "graph", paths[0], paths[1], "--tenant", "alpha"], &[]));
    let search = |extra: &[&str]| stdout(&sleuth(&data, &[&["search", "Zorblax"], extra].concat(), &[]));
    assert!(search(&["--tenant", "ALPHA"]).contains("Zorblax Quint"), "the owner finds it (names ignore case)");
    for as_whom in [&[][..], &["--tenant", "beta"]] {
        let found = search(as_whom);
        assert!(found.contains("no entity matches") && !found.contains("Quint"), "{as_whom:?}: {found}");
    }
    let bad = sleuth(&data, &["search", "Zorblax", "--tenant", "no spaces"], &[]);
    assert!(!bad.status.success(), "a malformed tenant is refused");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("invalid --tenant"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
