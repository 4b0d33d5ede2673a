//! The HTTP gateway's own behaviour, `sleuth serve --embedded` over the demo data: `POST /v1/ask` as JSON and as
//! SSE, status and cancel, bad input, API keys mapping to tenants that see only their own requests, a client that
//! goes away cancelling its request, the gateway stage on NATS, the fast lanes and ingestion, the trace, the stream
//! limit, idle connections closed, and the metrics. The real clients are in `gateway_clients.rs`.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use sleuth_tests::gateway::{Gateway, assert_cancelled, http, post, post_stream, send, short_answer, sse_events};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_answers_streams_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);

    // JSON: the protocol's reply, the short answer first.
    let (status, reply) = post(&gateway, "/v1/ask", None, r#"{"query":"Which anime is Luffy in?"}"#).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(short_answer(&reply), "One Piece", "{reply}");
    let id = reply["request_id"].as_str().expect("request id").to_string();

    // Status of a finished request; cancelling it is a conflict; an unknown id is 404.
    let (status, state) = send(&gateway, reqwest::Method::GET, &format!("/v1/requests/{id}"), None).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["outcome"]["answer"]["short_answer"]["text"], "One Piece", "{state}");
    let (status, _) = send(&gateway, reqwest::Method::DELETE, &format!("/v1/requests/{id}"), None).await;
    assert_eq!(status, 409);
    let unknown = uuid::Uuid::now_v7();
    let (status, body) = send(&gateway, reqwest::Method::GET, &format!("/v1/requests/{unknown}"), None).await;
    assert_eq!((status, body["type"].as_str()), (404, Some("invalid_input")), "{body}");

    // SSE: accepted first, final last, the stream ends by itself.
    let response = post_stream(&gateway, None, r#"{"query":"Which anime is Luffy in?"}"#).await;
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let events = sse_events(&response.text().await.expect("the stream ends"));
    let kinds: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"accepted"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"final"), "{kinds:?}");
    assert!(kinds.contains(&"planned") && kinds.contains(&"retrieved"), "{kinds:?}");
    let final_reply = &events.last().unwrap().1["body"]["final"];
    assert_eq!(short_answer(final_reply), "One Piece", "{final_reply}");

    // Bad input: 4xx with the protocol's error, naming the field; nothing answers 5xx.
    let cases = [
        ("{not json", 400, "malformed", ""),
        (r#"{"querry":"x"}"#, 422, "malformed", "querry"),
        (r#"{"query":"x","max_turns":"three"}"#, 422, "malformed", "max_turns"),
        (r#"{"query":"   "}"#, 422, "invalid_input", ""),
        ("[1,2]", 422, "malformed", ""),
    ];
    for (body, want_status, want_type, names) in cases {
        let (status, error) = post(&gateway, "/v1/ask", None, body).await;
        assert_eq!(status, want_status, "{body}: {error}");
        assert_eq!(error["type"], want_type, "{body}: {error}");
        assert!(error["message"].as_str().unwrap_or_default().contains(names), "{body}: {error}");
    }
    let huge = json!({ "query": "x".repeat(300 * 1024) }).to_string();
    let (status, error) = post(&gateway, "/v1/ask", None, &huge).await;
    assert_eq!((status, error["type"].as_str()), (413, Some("too_large")), "{error}");
    let (status, _) = post(&gateway, "/v1/chat/completions", None, r#"{"messages":[]}"#).await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_are_tenants_that_see_only_their_own_requests() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let digest = |k: &str| sleuth_actors::gateway::auth::digest_of(k);
    std::fs::write(&keys, format!("# tenants\n{} ALPHA\n{} BETA\n", digest("key-alpha"), digest("key-beta"))).unwrap();
    let data = dir.path().join("data");
    let gateway = Gateway::start(&data, &[("SLEUTH__GATEWAY__API_KEYS_FILE", keys.to_str().unwrap())]);
    let body = r#"{"query":"Which anime is Luffy in?"}"#;

    let (status, error) = post(&gateway, "/v1/ask", None, body).await;
    assert_eq!(status, 401, "{error}");
    let (status, _) = post(&gateway, "/v1/ask", Some("key-gamma"), body).await;
    assert_eq!(status, 401);
    let (status, _) = send(&gateway, reqwest::Method::GET, "/v1/models", None).await;
    assert_eq!(status, 401);

    let (status, reply) = post(&gateway, "/v1/ask", Some("key-alpha"), body).await;
    assert_eq!(status, 200, "{reply}");
    let id = reply["request_id"].as_str().unwrap().to_string();
    let path = format!("/v1/requests/{id}");
    let (status, _) = send(&gateway, reqwest::Method::GET, &path, Some("key-alpha")).await;
    assert_eq!(status, 200, "alpha reads its own request");
    let (status, body_of_beta) = send(&gateway, reqwest::Method::GET, &path, Some("key-beta")).await;
    assert_eq!(status, 404, "beta must not see alpha's request: {body_of_beta}");
    let (status, _) = send(&gateway, reqwest::Method::DELETE, &path, Some("key-beta")).await;
    assert_eq!(status, 404, "beta must not cancel alpha's request");

    // Beta re-sending alpha's request id is refused, and alpha's request is left as it was.
    let resend = json!({ "query": "Which anime is Luffy in?", "request_id": id }).to_string();
    let (status, refused) = post(&gateway, "/v1/ask", Some("key-beta"), &resend).await;
    assert_ne!(status, 200, "{refused}");
    let (_, state) = send(&gateway, reqwest::Method::GET, &path, Some("key-alpha")).await;
    assert_eq!(state["outcome"]["answer"]["short_answer"]["text"], "One Piece", "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_its_request() {
    let dir = tempfile::tempdir().unwrap();
    // Every stage waits 1.5 s, so the request is still running when the client leaves.
    let gateway = Gateway::start(dir.path(), &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "1500")]);
    let id = uuid::Uuid::now_v7();
    let body = json!({ "query": "Which anime is Luffy in?", "request_id": id, "timeout_ms": 60000 }).to_string();
    let response = post_stream(&gateway, None, &body).await;
    let mut stream = response.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("a first event");
    assert!(String::from_utf8_lossy(&first.expect("bytes").expect("bytes")).contains("accepted"));
    drop(stream);

    assert_cancelled(&gateway, id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_nats_the_gateway_stage_asks_the_cluster_as_the_keys_tenant() {
    use sleuth_tests::{
        nats,
        process::{Deployment, ServeProcess, run_cli},
    };
    // The deploy accounts: the stages as `sleuth`, the gateway as its own user `gateway`, `sleuth ask` as `client`.
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::seeded(&server.url, "gateway", dir.path());
    deployment.prefix = "sleuth.v1".into();
    deployment.suffix = String::new();
    let admin = nats::url_as(&server, "admin");
    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &admin)]);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    let keys = dir.path().join("keys");
    let digest = |k: &str| sleuth_actors::gateway::auth::digest_of(k);
    std::fs::write(&keys, format!("{} ALPHA\n{} BETA\n", digest("key-alpha"), digest("key-beta"))).unwrap();
    let addr = format!("127.0.0.1:{}", sleuth_tests::free_port());
    let stages = "intake,planner,retrieve,graph,grader,synthesizer";
    let _stages = ServeProcess::start(&deployment, stages, &[("SLEUTH__NATS__URL", &nats::url_as(&server, "sleuth"))]);
    let as_gateway = nats::url_as(&server, "gateway");
    let env = [
        ("SLEUTH__NATS__URL", as_gateway.as_str()),
        ("SLEUTH__GATEWAY__HTTP_ADDR", addr.as_str()),
        ("SLEUTH__GATEWAY__API_KEYS_FILE", keys.to_str().unwrap()),
    ];
    let _gateway = ServeProcess::start(&deployment, "gateway", &env);
    let gateway = Gateway::at(format!("http://{addr}"));

    let (status, reply) = post(&gateway, "/v1/ask", Some("key-alpha"), r#"{"query":"Which anime is Luffy in?"}"#).await;
    assert_eq!(status, 200, "{reply}");
    // The same answer as `sleuth ask` through the cluster.
    let as_client = nats::url_as(&server, "client");
    let cli =
        run_cli(&deployment, &["ask", "--json", "Which anime is Luffy in?"], &[("SLEUTH__NATS__URL", &as_client)]);
    let direct: Value = serde_json::from_slice(&cli.stdout).expect("sleuth ask --json");
    assert_eq!(short_answer(&reply), "One Piece", "{reply}");
    assert_eq!(short_answer(&reply), short_answer(&direct));

    // The loop state on NATS names the key's tenant as its owner; the other tenant does not see it.
    let id: uuid::Uuid = reply["request_id"].as_str().unwrap().parse().unwrap();
    let mut config = deployment.config();
    config.nats.url = Some(admin);
    let state = sleuth_tests::stored_state(&config, id).await.expect("the request's state");
    assert_eq!(state.owner, Some(sleuth_messages::Principal::tenant("ALPHA")));
    let path = format!("/v1/requests/{id}");
    let (status, body) = send(&gateway, reqwest::Method::GET, &path, Some("key-alpha")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = send(&gateway, reqwest::Method::GET, &path, Some("key-beta")).await;
    assert_eq!(status, 404);

    // The SSE stream through NATS ends with the final event too.
    let response = post_stream(&gateway, Some("key-beta"), r#"{"query":"Which anime is Luffy in?"}"#).await;
    let events = sse_events(&response.text().await.expect("the stream ends"));
    assert_eq!(events.last().map(|(e, _)| e.as_str()), Some("final"), "{events:?}");
    server.assert_no_violations_but(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fast_lanes_and_ingestion_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[]);

    let (status, found) = post(&gateway, "/v1/search", None, r#"{"text":"Luf","limit":5}"#).await;
    assert_eq!(status, 200, "{found}");
    let luffy = found["entities"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == "Monkey D. Luffy"))
        .unwrap_or_else(|| panic!("no Luffy in {found}"))
        .clone();
    let body = json!({ "ids": [luffy["entity"]] }).to_string();
    let (status, hydrated) = post(&gateway, "/v1/hydrate", None, &body).await;
    assert_eq!(status, 200, "{hydrated}");
    assert_eq!(hydrated["entities"][0]["name"], "Monkey D. Luffy", "{hydrated}");

    // A new document is searchable at once, and gone once deleted.
    let doc = json!({ "documents": [{
        "id": "zorblax-1",
        "title": "Zorblax",
        "text": "The zorblax is a luminous eight-legged creature that lives in the caves of Quenfir.",
    }]});
    let (status, ingested) = post(&gateway, "/v1/documents", None, &doc.to_string()).await;
    assert_eq!(status, 201, "{ingested}");
    assert_eq!(ingested["documents"], 1, "{ingested}");
    let (status, reply) = post(&gateway, "/v1/ask", None, r#"{"query":"Where does the zorblax live?"}"#).await;
    assert_eq!(status, 200, "{reply}");
    let cited: Vec<&str> = reply["outcome"]["answer"]["citations"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["doc_id"].as_str()).collect())
        .unwrap_or_default();
    assert!(cited.contains(&"zorblax-1"), "the new document is not cited: {reply}");
    let (status, _) = send(&gateway, reqwest::Method::DELETE, "/v1/documents/zorblax-1", None).await;
    assert_eq!(status, 200);
    let (status, _) = send(&gateway, reqwest::Method::DELETE, "/v1/documents/zorblax-1", None).await;
    assert_eq!(status, 404);
    let (status, error) = post(&gateway, "/v1/documents", None, r#"{"documents":[{"id":"x"}]}"#).await;
    assert_eq!(status, 422, "a document without text: {error}");

    // Files as a user has them: a web page is read without its chrome; a damaged PDF is skipped, saying why.
    use base64::Engine;
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let page = "<html><body><nav>Home | Pricing</nav><h1>Quenfir caves</h1>\
                <p>The caves of Quenfir are lit by the glow of the zorblax.</p><footer>Imprint</footer></body></html>";
    let body = json!({ "files": [
        { "name": "quenfir.html", "content_base64": encode(page.as_bytes()) },
        { "name": "broken.pdf", "content_base64": encode(b"%PDF-1.7 nothing more") },
    ]});
    let (status, ingested) = post(&gateway, "/v1/documents", None, &body.to_string()).await;
    assert_eq!(status, 201, "{ingested}");
    assert_eq!(ingested["documents"], 1, "{ingested}");
    assert_eq!(ingested["skipped"][0]["name"], "broken.pdf", "{ingested}");
    let (status, reply) = post(&gateway, "/v1/ask", None, r#"{"query":"What lights the caves of Quenfir?"}"#).await;
    assert_eq!(status, 200, "{reply}");
    assert!(reply.to_string().contains("quenfir.html"), "the page is not cited: {reply}");
    assert!(!reply["outcome"]["answer"]["answer"].to_string().contains("Pricing"), "{reply}");
    let bad = json!({ "files": [{ "name": "../etc/passwd.txt", "content_base64": encode(b"x") }] }).to_string();
    let (status, error) = post(&gateway, "/v1/documents", None, &bad).await;
    assert_eq!(status, 422, "a path, not a name: {error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_ingest_tenants_may_change_the_shared_documents() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let digest = |k: &str| sleuth_actors::gateway::auth::digest_of(k);
    std::fs::write(&keys, format!("{} ALPHA\n{} OPS\n", digest("key-alpha"), digest("key-ops"))).unwrap();
    let gateway = Gateway::start(
        &dir.path().join("data"),
        &[("SLEUTH__GATEWAY__API_KEYS_FILE", keys.to_str().unwrap()), ("SLEUTH__GATEWAY__INGEST_TENANTS", "[OPS]")],
    );
    let doc = r#"{"documents":[{"id":"ops-1","text":"Maintenance window on Sunday."}]}"#;
    let (status, error) = post(&gateway, "/v1/documents", Some("key-alpha"), doc).await;
    assert_eq!(status, 403, "{error}");
    let (status, _) = send(&gateway, reqwest::Method::DELETE, "/v1/documents/ops-1", Some("key-alpha")).await;
    assert_eq!(status, 403);
    let (status, ingested) = post(&gateway, "/v1/documents", Some("key-ops"), doc).await;
    assert_eq!(status, 201, "{ingested}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_own_documents_are_its_alone_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let digest = |k: &str| sleuth_actors::gateway::auth::digest_of(k);
    std::fs::write(&keys, format!("{} ALPHA\n{} BETA\n", digest("key-alpha"), digest("key-beta"))).unwrap();
    let gateway =
        Gateway::start(&dir.path().join("data"), &[("SLEUTH__GATEWAY__API_KEYS_FILE", keys.to_str().unwrap())]);
    let vault = |owner: &str| {
        json!({ "documents": [{ "id": "alpha-vault", "title": "Zephyr Vault", "owner": owner,
            "text": "The Zephyr Vault door code is 4471. The Zephyr Vault was built in 1902." }] })
        .to_string()
    };
    let (status, error) = post(&gateway, "/v1/documents", Some("key-beta"), &vault("ALPHA")).await;
    assert_eq!(status, 403, "BETA gave a document to ALPHA: {error}");
    let (status, ingested) = post(&gateway, "/v1/documents", Some("key-alpha"), &vault("ALPHA")).await;
    assert_eq!(status, 201, "a tenant adds its own document: {ingested}");
    let (status, error) = post(&gateway, "/v1/documents", Some("key-beta"), &vault("BETA")).await;
    assert_eq!(status, 403, "BETA replaced ALPHA's document: {error}");
    let (status, _) = send(&gateway, reqwest::Method::DELETE, "/v1/documents/alpha-vault", Some("key-beta")).await;
    assert_eq!(status, 403, "BETA deleted ALPHA's document");

    let question = r#"{"query":"What is the Zephyr Vault door code?"}"#;
    let (status, reply) = post(&gateway, "/v1/ask", Some("key-alpha"), question).await;
    assert_eq!(status, 200, "{reply}");
    assert!(reply.to_string().contains("4471"), "ALPHA reads its document: {reply}");
    let (status, reply) = post(&gateway, "/v1/ask", Some("key-beta"), question).await;
    assert_eq!(status, 200, "{reply}");
    assert!(!reply.to_string().contains("4471"), "BETA read ALPHA's document: {reply}");

    // The document's graph node: found and hydrated for ALPHA only.
    let names = |found: &Value| -> Vec<String> {
        found["entities"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str().map(String::from)).collect()
    };
    let (_, found) = post(&gateway, "/v1/search", Some("key-alpha"), r#"{"text":"zephyr"}"#).await;
    assert_eq!(names(&found), ["Zephyr Vault"], "{found}");
    let (status, found) = post(&gateway, "/v1/search", Some("key-beta"), r#"{"text":"zephyr"}"#).await;
    assert!(status == 200 && names(&found).is_empty(), "BETA found ALPHA's document: {found}");
    let ids = r#"{"ids":[{"entity_type":"document","id":"alpha-vault"}]}"#;
    let (_, hydrated) = post(&gateway, "/v1/hydrate", Some("key-beta"), ids).await;
    assert!(names(&hydrated).is_empty(), "BETA hydrated ALPHA's document: {hydrated}");
    let (_, hydrated) = post(&gateway, "/v1/hydrate", Some("key-alpha"), ids).await;
    assert_eq!(names(&hydrated), ["Zephyr Vault"], "{hydrated}");
    let (status, _) = send(&gateway, reqwest::Method::DELETE, "/v1/documents/alpha-vault", Some("key-alpha")).await;
    assert_eq!(status, 200, "a tenant deletes its own document");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_request_span_is_the_parent_of_the_requests_trace() {
    let collector = sleuth_tests::otlp::Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(
        dir.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let (status, reply) = post(&gateway, "/v1/ask", None, r#"{"query":"Which anime is Luffy in?"}"#).await;
    assert_eq!(status, 200, "{reply}");
    let id = reply["request_id"].as_str().unwrap().to_string();
    let spans = collector
        .trace_of(&id, Duration::from_secs(20), |spans| {
            spans.iter().any(|s| s.name == "POST /v1/ask") && spans.iter().any(|s| s.name == "sleuth.ask")
        })
        .await;
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let http = spans.iter().find(|s| s.name == "POST /v1/ask").unwrap_or_else(|| panic!("no HTTP span: {names:?}"));
    let ask = spans.iter().find(|s| s.name == "sleuth.ask").unwrap_or_else(|| panic!("no sleuth.ask: {names:?}"));
    assert!(http.parent_span_id.is_empty(), "the HTTP span is the root: {names:?}");
    assert_eq!(ask.parent_span_id, http.span_id, "sleuth.ask is the HTTP span's child: {names:?}");
    assert_eq!(http.attr("http.request.method"), Some("POST"));
    assert_eq!(http.attr("http.response.status_code"), Some("200"));
    assert!(names.contains(&"plan") || names.iter().any(|n| n.contains("plan")), "the stages are in it: {names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_over_its_stream_limit_is_told_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(
        dir.path(),
        &[("SLEUTH__GATEWAY__MAX_STREAMS_PER_PRINCIPAL", "1"), ("SLEUTH__DEBUG__STAGE_DELAY_MS", "1500")],
    );
    let body = json!({ "query": "Which anime is Luffy in?", "timeout_ms": 60000 }).to_string();
    let first = post_stream(&gateway, None, &body).await;
    assert_eq!(first.status().as_u16(), 200);
    let second = post_stream(&gateway, None, &body).await;
    assert_eq!(second.status().as_u16(), 429);
    assert!(second.headers().contains_key("retry-after"));
    let error: Value = serde_json::from_str(&second.text().await.unwrap()).unwrap();
    assert_eq!(error["type"], "overloaded", "{error}");
    // The slot comes back when the first stream ends.
    first.text().await.expect("the first stream ends");
    let third = post_stream(&gateway, None, &body).await;
    assert_eq!(third.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_no_complete_request_head_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[("SLEUTH__GATEWAY__IDLE_TIMEOUT_MS", "500")]);
    let addr = gateway.base.trim_start_matches("http://").to_string();

    // Closed by the server: the read ends (EOF or reset) rather than waiting on the test's own guard.
    async fn closed_by_server(stream: &mut tokio::net::TcpStream) -> bool {
        let mut buf = [0u8; 512];
        match tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) => closed_by_server_after_reply(stream).await,
            Err(_) => false,
        }
    }
    // hyper may answer a timed-out head with 408 before it closes.
    async fn closed_by_server_after_reply(stream: &mut tokio::net::TcpStream) -> bool {
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest)).await.is_ok()
    }

    // A connection that says nothing.
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(closed_by_server(&mut silent).await, "an idle connection was kept open");

    // A slowloris: the head arrives a few bytes at a time and never ends; more bytes do not buy more time.
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let trickle = async {
        for chunk in ["POST /v1/ask HTTP/1.1\r\n", "Host: x\r\n", "X-A: 1\r\n", "X-B: 2\r\n", "X-C: 3\r\n"]
            .iter()
            .cycle()
            .take(60)
        {
            if slow.write_all(chunk.as_bytes()).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    };
    let cut_off = trickle.await || closed_by_server(&mut slow).await;
    assert!(cut_off, "a head sent a few bytes at a time kept its connection for 6 s");

    // Requests that arrive whole are served as before.
    let (status, reply) = post(&gateway, "/v1/ask", None, r#"{"query":"Which anime is Luffy in?"}"#).await;
    assert_eq!(status, 200, "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_counts_its_requests_latency_and_open_streams_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(dir.path(), &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "1500")]);
    let metrics = || async {
        let url = format!("{}/metrics", gateway.telemetry);
        http().get(url).send().await.expect("/metrics answers").text().await.expect("a body")
    };
    let sample = |body: &str, name: &str| -> Option<f64> {
        body.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .reduce(f64::max)
    };
    let body = json!({ "query": "Which anime is Luffy in?", "timeout_ms": 60000 }).to_string();
    let open = post_stream(&gateway, None, &body).await;
    assert_eq!(open.status().as_u16(), 200);
    let during = metrics().await;
    assert_eq!(sample(&during, "sleuth_gateway_open_streams"), Some(1.0), "{during}");
    open.text().await.expect("the stream ends");

    let (status, _) = post(&gateway, "/v1/ask", None, r#"{"query":"Which anime is Luffy in?"}"#).await;
    assert_eq!(status, 200);
    let after = metrics().await;
    assert_eq!(sample(&after, "sleuth_gateway_open_streams"), Some(0.0), "{after}");
    let asked = after
        .lines()
        .find(|l| l.starts_with("sleuth_gateway_requests_total") && l.contains("/v1/ask") && l.contains("\"200\""));
    assert!(asked.is_some_and(|l| l.ends_with(" 2")), "two asks counted with path and status: {after}");
    assert!(
        after.lines().any(|l| l.starts_with("sleuth_gateway_request_seconds") && l.contains("/v1/ask")),
        "the latency histogram has the path: {after}"
    );
}

/// A gateway key is its tenant in the tenant's limits too (`tenants.overrides`): ALPHA, at its one request under
/// way, is refused at once with 429 and the retryable `limited` error, while BETA's key is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_whose_tenant_is_at_its_limit_gets_429_while_another_tenants_key_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let digest = |k: &str| sleuth_actors::gateway::auth::digest_of(k);
    std::fs::write(&keys, format!("{} ALPHA\n{} BETA\n", digest("key-alpha"), digest("key-beta"))).unwrap();
    let gateway = Gateway::start(
        &dir.path().join("data"),
        &[
            ("SLEUTH__GATEWAY__API_KEYS_FILE", keys.to_str().unwrap()),
            ("SLEUTH__TENANTS__OVERRIDES__ALPHA__MAX_UNDER_WAY", "1"),
            ("SLEUTH__DEBUG__STAGE_DELAY_MS", "1500"),
        ],
    );
    let body = json!({ "query": "Which anime is Luffy in?", "timeout_ms": 60000 }).to_string();
    let held = post_stream(&gateway, Some("key-alpha"), &body).await;
    assert_eq!(held.status().as_u16(), 200, "ALPHA's first request is admitted");
    let (status, error) = post(&gateway, "/v1/ask", Some("key-alpha"), &body).await;
    assert_eq!((status, error["type"].as_str()), (429, Some("limited")), "{error}");
    assert_eq!(error["retryable"], true, "{error}");
    let (status, reply) = post(&gateway, "/v1/ask", Some("key-beta"), &body).await;
    assert_eq!(status, 200, "BETA is not limited by ALPHA: {reply}");
    held.text().await.expect("ALPHA's first request ends");
}
