//! Real clients against the HTTP gateway, `sleuth serve --embedded` over the demo data: the official `openai` and
//! `mcp` Python clients, the page in Chromium, schemathesis against the OpenAPI document, and curl -N.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use serde_json::{Value, json};
use sleuth_tests::{
    gateway::{Gateway, assert_cancelled, send, sse_events},
    process::sleuth_bin,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_client_works_unchanged_but_for_base_url() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let args =
        vec![gateway.url("/v1"), "unused-on-loopback".into(), "Which anime is Luffy in?".into(), "One Piece".into()];
    let seen = run_client("openai_chat.py", args, vec![]).await;
    assert_eq!(seen["models"], json!(["sleuth"]));
    assert!(seen["citations"].as_u64().unwrap() >= 1 && seen["stream_citations"].as_u64().unwrap() >= 1, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_python_client_speaks_each_revision_and_gets_structured_answers() {
    // 2026-07-28 found by discovery and adopted directly, 2025-11-25 by the handshake, 2025-06-18 by a raw
    // initialize; every tool with an output schema, `ask` with `structuredContent`, and no error on close.
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let args = vec![gateway.url("/mcp"), "Which anime is Luffy in?".into(), "One Piece".into()];
    let seen = run_client("mcp_revisions.py", args, vec![]).await;
    for mode in ["auto", "2026-07-28", "legacy"] {
        assert_eq!(seen[mode]["short_answer"], "One Piece", "{seen}");
        assert!(seen[mode]["ask_schema"].as_array().unwrap().contains(&json!("citations")), "{seen}");
    }
    assert_eq!(seen["raw"]["closed"], 204, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_client_s_history_is_the_conversation_and_a_follow_up_resolves_against_it() {
    // Three turns, each sending the whole history as chat clients do; then a history sleuth never saw.
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let seen = run_client("openai_chat_history.py", vec![gateway.url("/v1")], vec![]).await;
    assert_eq!(seen["chat"][2]["understood"], "Where was Masashi Kishimoto born", "{seen}");
    assert_eq!(seen["pasted"]["understood"], "Which city is Studio Ghibli based in", "{seen}");
}

/// The test's Python, which must have `module`; a clear failure otherwise.
fn python_with(module: &str) -> String {
    let python = std::env::var("SLEUTH_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let has = Command::new(&python).args(["-c", &format!("import {module}")]).status().is_ok_and(|s| s.success());
    assert!(
        has,
        "the `{module}` Python package is missing for {python}: `python3 -m venv V && V/bin/pip install openai mcp \
         schemathesis`, then set SLEUTH_TEST_PYTHON=V/bin/python (.ci/run does this)"
    );
    python
}

/// Runs `command` to its end off the test's runtime; fails with its output unless it succeeded. Its stdout.
async fn run_ok(mut command: Command, what: &'static str) -> String {
    let out = tokio::task::spawn_blocking(move || command.output()).await.unwrap();
    let out = out.unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

/// The JSON line a client printed last.
fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("the client's JSON line")
}

/// Runs a client script from `tests/clients` with `args` (and `env`); returns the JSON line it printed.
async fn run_client(script: &str, args: Vec<String>, env: Vec<(String, String)>) -> Value {
    let python = python_with(if script.starts_with("mcp") { "mcp" } else { "openai" });
    let mut command = Command::new(python);
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("clients").join(script)).args(&args).envs(env);
    last_json(&run_ok(command, "the client").await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_python_client_searches_fetches_and_asks_over_http_and_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&dir.path().join("http"), &[]);
    let question = "Which anime is Luffy in?".to_string();
    let args = vec!["http".into(), gateway.url("/mcp"), question.clone(), "One Piece".into()];
    let seen = run_client("mcp_session.py", args, vec![]).await;
    assert_eq!(seen["short_answer"], "One Piece", "{seen}");
    assert_eq!(seen["tools"], json!(["add_document", "ask", "fetch", "search"]), "{seen}");
    drop(gateway);

    // stdio: the client starts `sleuth mcp` itself, embedded on its own copy of the demo data.
    let data = dir.path().join("stdio");
    sleuth_tests::seeded::seed_data_dir(&data);
    let args = vec!["stdio".into(), sleuth_bin().display().to_string(), question, "One Piece".into()];
    let env = vec![
        ("SLEUTH__DATA_DIR".to_string(), data.display().to_string()),
        ("SLEUTH__NATS__URL".to_string(), String::new()),
        ("NATS_URL".to_string(), String::new()),
    ];
    let seen = run_client("mcp_session.py", args, env).await;
    assert_eq!(seen["short_answer"], "One Piece", "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_shows_the_steps_and_opens_a_cited_passage_in_chromium() {
    let chromium = std::env::var("SLEUTH_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let modules = std::env::var("SLEUTH_TEST_NODE_MODULES").unwrap_or_default();
    let usable = Path::new(&chromium).exists()
        && Command::new("node")
            .args(["-e", "require('playwright-core')"])
            .env("NODE_PATH", &modules)
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        usable,
        "the page test needs Chromium at {chromium} (`apt-get install chromium`, or SLEUTH_TEST_CHROMIUM) and node \
         with playwright-core (`npm install playwright-core` in a directory D, then \
         SLEUTH_TEST_NODE_MODULES=D/node_modules); .ci/run does both"
    );
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/page.cjs");
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gateway-page.png");
    let (url, shot) = (gateway.url("/"), screenshot.display().to_string());
    let mut node = Command::new("node");
    node.arg(script)
        .args([url.as_str(), "Which anime is Luffy in?", "One Piece", shot.as_str()])
        .env("NODE_PATH", modules)
        .env("CHROMIUM", chromium);
    let seen = last_json(&run_ok(node, "the page test").await);
    println!("page screenshot: {} ({seen})", screenshot.display());
    assert!(seen["short"].as_str().unwrap_or_default().contains("One Piece"), "{seen}");
    let steps: Vec<&str> = seen["steps"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(steps.first().is_some_and(|s| s.starts_with("accepted")), "{steps:?}");
    assert!(steps.last().is_some_and(|s| s.starts_with("final")), "{steps:?}");
    assert!(seen["passage"].as_str().unwrap_or_default().contains("Luffy"), "{seen}");
    assert!(seen["meta"].as_str().unwrap_or_default().contains("route"), "{seen}");
    assert_eq!(seen["errors"], json!([]), "the page threw: {seen}");
    assert!(screenshot.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_response_off_the_openapi_document() {
    let python = python_with("schemathesis");
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);
    let (status, document) = send(&gateway, reqwest::Method::GET, "/openapi.json", None).await;
    assert_eq!(status, 200);
    for path in ["/v1/ask", "/v1/requests/{id}", "/v1/chat/completions", "/v1/models"] {
        assert!(document["paths"][path].is_object(), "{path} is not in the document");
    }
    assert!(document["components"]["schemas"]["AskReply"].is_object(), "AskReply's schema is missing");
    let url = gateway.url("/openapi.json");
    let checks = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";
    let mut schemathesis = Command::new(python);
    // Its cache of examples goes in the test's directory, not the working tree.
    schemathesis.current_dir(dir.path());
    schemathesis.args(["-m", "schemathesis.cli", "run", &url, "--checks", checks, "-n", "25", "--seed", "7"]).args([
        "--request-timeout",
        "60",
        "--no-color",
    ]);
    let stdout = run_ok(schemathesis, "schemathesis").await;
    println!("{}", stdout.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_n_reads_the_stream_to_its_final_event_and_closing_it_cancels_the_request() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "300")]);
    let curl = |body: &str| {
        let mut cmd = Command::new("curl");
        cmd.args([
            "-sN",
            "--max-time",
            "60",
            "-H",
            "content-type: application/json",
            "-H",
            "accept: text/event-stream",
        ])
        .args(["-d", body, &gateway.url("/v1/ask")])
        .stdout(Stdio::piped());
        cmd
    };

    // The whole stream: accepted first, final last, and curl exits by itself when the stream ends.
    let output = curl(r#"{"query":"Which anime is Luffy in?"}"#).output().expect("curl is on PATH");
    assert!(output.status.success(), "curl failed: {output:?}");
    let events = sse_events(&String::from_utf8_lossy(&output.stdout));
    let kinds: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!((kinds.first(), kinds.last()), (Some(&"accepted"), Some(&"final")), "{kinds:?}");

    // A curl killed after the first event cancels its request.
    let id = uuid::Uuid::now_v7();
    let body = json!({ "query": "Which anime is Luffy in?", "request_id": id, "timeout_ms": 60000 }).to_string();
    let mut child = curl(&body).spawn().expect("curl is on PATH");
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = stdout.read(&mut first).expect("curl's output");
    assert!(String::from_utf8_lossy(&first[..n]).contains("accepted"), "{}", String::from_utf8_lossy(&first[..n]));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_cancelled(&gateway, id).await;
}
