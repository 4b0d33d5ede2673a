//! Traces and metrics across processes: one question asked through every stage in its own `sleuth serve`
//! process is one OpenTelemetry trace at an OTLP/gRPC collector (the protocol Jaeger's port 4317 speaks), and
//! each process's `/metrics` moves by what it did.

use std::{collections::BTreeSet, time::Duration};

use sleuth_tests::{
    nats::nats_server,
    otlp::{Collector, ReceivedSpan},
    process::*,
    unique,
};

const QUESTION: &str = "Which anime is Luffy in?";

/// Every `sleuth` process of the test exports to the collector, in small fast batches.
fn exporting(deployment: &mut Deployment, collector: &Collector) {
    deployment.env.push(("OTEL_EXPORTER_OTLP_ENDPOINT".into(), collector.endpoint.clone()));
    deployment.env.push(("OTEL_EXPORTER_OTLP_PROTOCOL".into(), "grpc".into()));
    deployment.env.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()));
}

const STAGE_SPANS: [&str; 5] = ["plan", "retrieve", "graph", "grade", "synthesize"];

/// True once every span's parent has arrived too: processes export in batches, so the last hop's spans can
/// reach the collector before an earlier hop's.
fn no_parent_missing(spans: &[ReceivedSpan]) -> bool {
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    spans.iter().all(|s| s.parent_span_id.is_empty() || ids.contains(s.parent_span_id.as_str()))
}

/// Checks that `spans` are one tree: one trace id, distinct span ids, one root named `sleuth.ask`, and every
/// other span's parent among them.
fn assert_one_tree(spans: &[ReceivedSpan]) -> &ReceivedSpan {
    let dump = || {
        spans
            .iter()
            .map(|s| format!("{} {} <- {} [{}]", s.name, s.span_id, s.parent_span_id, s.service))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let traces: BTreeSet<&str> = spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace id:\n{}", dump());
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    assert_eq!(ids.len(), spans.len(), "no two spans share an id:\n{}", dump());
    let roots: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "exactly one root:\n{}", dump());
    assert_eq!(roots[0].name, "sleuth.ask", "{}", dump());
    for span in spans.iter().filter(|s| !s.parent_span_id.is_empty()) {
        assert!(ids.contains(span.parent_span_id.as_str()), "orphan {} ({}):\n{}", span.name, span.service, dump());
    }
    roots[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_is_one_trace_across_every_stage_process() {
    let nats = nats_server();
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::seeded(&nats.url, &unique("trace"), dir.path());
    exporting(&mut deployment, &collector);
    let _processes = start_all_separately(&deployment);

    let out = run_cli(&deployment, &["ask", QUESTION], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "sleuth ask failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let request_id = printed_request_id(&stdout).expect("request id in the output").to_string();

    let services = [
        "sleuth",
        "sleuth-intake",
        "sleuth-planner",
        "sleuth-retrieve",
        "sleuth-graph",
        "sleuth-grader",
        "sleuth-synthesizer",
    ];
    let spans = collector
        .trace_of(&request_id, Duration::from_secs(20), |spans| {
            let seen: BTreeSet<&str> = spans.iter().map(|s| s.service.as_str()).collect();
            services.iter().all(|s| seen.contains(s))
                && spans.iter().any(|s| s.name == "synthesize")
                && spans.iter().any(|s| s.name == "sleuth.ask")
                && no_parent_missing(spans)
        })
        .await;
    let root = assert_one_tree(&spans);
    let seen: BTreeSet<&str> = spans.iter().map(|s| s.service.as_str()).collect();
    for service in services {
        assert!(seen.contains(service), "{service} sent no span; seen {seen:?}");
    }
    assert_eq!(root.service, "sleuth", "sleuth ask started the root");
    assert_eq!(root.attr("sleuth.route"), Some("enhanced"));
    assert_eq!(root.attr("sleuth.termination_reason"), Some("sufficient"));

    for span in &spans {
        assert_eq!(span.attr("sleuth.request_id"), Some(request_id.as_str()), "{} lacks the request id", span.name);
        assert!(
            span.attr("sleuth.turn").is_some() && span.attr("sleuth.stage").is_some(),
            "{} lacks turn or stage",
            span.name
        );
    }
    // The hops, in the order they ran: intake, then per turn plan, retrieve/graph, grade, then synthesize.
    let mut hops: Vec<&ReceivedSpan> =
        spans.iter().filter(|s| s.name == "intake" || STAGE_SPANS.contains(&s.name.as_str())).collect();
    hops.sort_by_key(|s| s.start_ns);
    assert_eq!(hops.first().map(|s| s.name.as_str()), Some("intake"));
    assert_eq!(hops.last().map(|s| s.name.as_str()), Some("synthesize"));
    let turns: Vec<u32> = hops.iter().map(|s| s.attr("sleuth.turn").unwrap().parse().unwrap()).collect();
    assert!(turns.windows(2).all(|w| w[0] <= w[1]), "turns in order: {turns:?}");
    assert!(hops.iter().any(|s| s.name == "graph") && turns.iter().max() >= Some(&2), "{turns:?}");
    for hop in hops.iter().filter(|s| s.name != "intake") {
        assert_eq!(hop.attr("messaging.system"), Some("nats"));
        assert_eq!(hop.attr("messaging.operation.type"), Some("process"));
        assert!(hop.attr("messaging.message.id").is_some_and(|id| id.starts_with(&request_id)), "{hop:?}");
        // Each hop's parent is the hop that published its work.
        let parent = spans.iter().find(|s| s.span_id == hop.parent_span_id).expect("parent");
        let published_by = match hop.name.as_str() {
            "plan" => &["intake", "grade"][..],
            "retrieve" | "graph" => &["plan"][..],
            "grade" => &["retrieve", "graph"][..],
            _ => &["grade", "retrieve", "graph", "plan"][..],
        };
        assert!(published_by.contains(&parent.name.as_str()), "{} is a child of {}", hop.name, parent.name);
    }
    let cas: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "kv.cas").collect();
    assert!(
        !cas.is_empty()
            && cas.iter().all(|s| s.attr("sleuth.kv.conflict").is_some() && s.attr("sleuth.kv.revision").is_some())
    );
    let searches: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.attr("db.system.name") == Some("qdrant")).collect();
    assert!(!searches.is_empty(), "searches carry db.system.name = qdrant");
    let graph: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.attr("db.system.name") == Some("sqlite")).collect();
    assert!(graph.iter().any(|s| s.attr("db.operation.name") == Some("expand")), "graph queries carry their name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_hop_stays_in_the_trace() {
    let nats = nats_server();
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::seeded(&nats.url, &unique("retrace"), dir.path());
    exporting(&mut deployment, &collector);
    deployment.env.push(("SLEUTH__NATS__ACK_WAIT_MS".into(), "1500".into()));
    let _rest = ServeProcess::start(&deployment, "intake,retrieve,graph,grader,synthesizer", &[]);
    let slow = ServeProcess::start(&deployment, "planner", &[("SLEUTH__DEBUG__STAGE_DELAY_MS", "30000")]);

    let request_id = uuid::Uuid::now_v7();
    let config = deployment.config();
    let ask = {
        let (url, subjects) = (nats.url.clone(), config.subjects());
        let request =
            sleuth_messages::AskRequest { request_id: Some(request_id), ..sleuth_messages::AskRequest::new(QUESTION) };
        tokio::spawn(async move {
            sleuth_actors::client::ask_remote(&url, &subjects, request, Duration::from_secs(60), None).await
        })
    };
    // The slow planner holds turn 1's work; kill it there, then start a planner that answers.
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while sleuth_tests::stored_state(&config, request_id).await.is_none() {
        assert!(std::time::Instant::now() < until, "the request was never accepted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    slow.kill();
    let _planner = ServeProcess::start(&deployment, "planner", &[]);
    ask.await.unwrap().expect("answered after the crash");

    let id = request_id.to_string();
    let spans = collector
        .trace_of(&id, Duration::from_secs(20), |spans| {
            spans.iter().any(|s| s.name == "synthesize") && spans.iter().any(|s| s.name == "sleuth.ask")
        })
        .await;
    // No client started this request's trace: intake made the root up, and the process that ended it sent it.
    // (The killed planner's unfinished span never left its process, so what it had finished hangs from it.)
    let traces: BTreeSet<&str> = spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace");
    let root = spans.iter().find(|s| s.name == "sleuth.ask").expect("root span");
    assert!(root.parent_span_id.is_empty());
    // The synthesizer ended it, in the process that serves every stage but the planner.
    assert_eq!(root.service, "sleuth", "the process that ended the request recorded the root");
    assert_eq!(root.attr("sleuth.termination_reason"), Some("sufficient"));
    let redelivered: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name == "plan" && s.attr("sleuth.turn") == Some("1") && s.attr("sleuth.attempt") != Some("1"))
        .collect();
    assert_eq!(redelivered.len(), 1, "the redelivered turn-1 plan is in the trace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gen_ai_spans_carry_the_token_counts_the_server_returned() {
    let nats = nats_server();
    let collector = Collector::start().await;
    let llm = sleuth_tests::llm::ScriptedLlm::start(
        r#"{"answer": "Monkey D. Luffy appears in One Piece [1].", "confidence": 0.8}"#,
        321,
        54,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut deployment = Deployment::seeded(&nats.url, &unique("genai"), dir.path());
    exporting(&mut deployment, &collector);
    deployment.env.push(("SLEUTH__LLM__BASE_URL".into(), llm.base_url.clone()));
    deployment.env.push(("SLEUTH__LLM__MODEL".into(), "scripted-model".into()));
    let _all = ServeProcess::start(&deployment, "all", &[]);

    let out = run_cli(&deployment, &["ask", QUESTION], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("One Piece [1]"), "the synthesizer's LLM wrote the answer: {stdout}");
    let request_id = printed_request_id(&stdout).expect("request id").to_string();
    let spans = collector
        .trace_of(&request_id, Duration::from_secs(20), |spans| {
            spans.iter().any(|s| s.name.starts_with("chat ")) && spans.iter().any(|s| s.name == "sleuth.ask")
        })
        .await;
    let chats: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some("chat")).collect();
    assert!(!chats.is_empty() && llm.calls() >= chats.len(), "{} calls, {} spans", llm.calls(), chats.len());
    for chat in chats {
        assert_eq!(chat.attr("gen_ai.usage.input_tokens"), Some("321"));
        assert_eq!(chat.attr("gen_ai.usage.output_tokens"), Some("54"));
        assert_eq!(chat.attr("gen_ai.provider.name"), Some("openai"));
        assert_eq!(chat.attr("gen_ai.request.model"), Some("scripted-model"));
        assert_eq!(chat.attr("gen_ai.response.finish_reasons"), Some(r#"["stop"]"#));
        assert_eq!(chat.attr("sleuth.stage"), Some("synthesizer"));
        assert!(chat.attr("gen_ai.input.messages").is_none(), "prompts are not recorded unless capture_content is on");
    }
}

/// One scrape of a process's `/metrics`, parsed as Prometheus text.
async fn scrape(process: &ServeProcess) -> prometheus_parse::Scrape {
    let (status, body) = process.get("/metrics").await;
    assert_eq!(status, 200, "{body}");
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("prometheus text format")
}

/// The sum of the samples of `metric` whose labels include `labels`.
fn value(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(buckets) => buckets.iter().map(|b| b.count).fold(0.0, f64::max),
            prometheus_parse::Value::Summary(_) => 0.0,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_by_what_the_process_did() {
    let nats = nats_server();
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::seeded(&nats.url, &unique("metrics"), dir.path());
    let all = ServeProcess::start(&deployment, "all", &[]);
    assert_eq!(all.get("/healthz").await, (200, "ok\n".to_string()));
    assert_eq!(all.get("/readyz").await.0, 200);

    let before = scrape(&all).await;
    let config = deployment.config();
    const N: usize = 3;
    let mut turns = 0;
    for _ in 0..N {
        let request = sleuth_messages::AskRequest::new(QUESTION);
        let reply =
            sleuth_actors::client::ask_remote(&nats.url, &config.subjects(), request, Duration::from_secs(30), None)
                .await
                .expect("answer");
        turns += reply.turns.len();
    }
    // The final messages of the last request are published a moment after its reply.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = scrape(&all).await;
    let moved = |metric: &str, labels: &[(&str, &str)]| value(&after, metric, labels) - value(&before, metric, labels);
    let n = N as f64;
    assert_eq!(moved("sleuth_requests_started_total", &[("route", "enhanced")]), n);
    assert_eq!(moved("sleuth_requests_finished_total", &[("route", "enhanced"), ("reason", "sufficient")]), n);
    assert_eq!(moved("sleuth_request_duration_seconds_count", &[("route", "enhanced"), ("reason", "sufficient")]), n);
    assert_eq!(moved("sleuth_request_turns_count", &[("route", "enhanced")]), n);
    assert_eq!(moved("sleuth_request_turns_sum", &[("route", "enhanced")]), turns as f64);
    assert_eq!(moved("sleuth_work_applied_total", &[("stage", "planner")]), turns as f64, "one plan per turn");
    assert_eq!(moved("sleuth_work_applied_total", &[("stage", "synthesizer")]), n);
    // Every plan and every synthesis started from the state its work message carried: no store read first.
    assert_eq!(moved("sleuth_state_carried_total", &[("stage", "planner")]), turns as f64);
    assert_eq!(moved("sleuth_state_carried_total", &[("stage", "synthesizer")]), n);
    assert_eq!(moved("sleuth_stage_handle_seconds_count", &[("stage", "synthesizer"), ("outcome", "applied")]), n);
    assert_eq!(moved("sleuth_dead_letters_total", &[]), 0.0);
    assert_eq!(value(&after, "sleuth_work_in_flight", &[]), 0.0, "nothing in flight once every reply is in");
    // The same question three times: the retrieval cache served the second and third.
    assert!(moved("sleuth_retrieval_cache_hits_total", &[]) >= 2.0);
    assert!(value(&after, "sleuth_retrieval_cache_misses_total", &[]) >= 1.0);

    // The same counters back `nats micro stats` and the stage's status endpoint.
    let client = async_nats::connect(&nats.url).await.unwrap();
    let applied = value(&after, "sleuth_work_applied_total", &[("stage", "planner")]);
    let stats = client.request("$SRV.STATS.sleuth-planner", "".into()).await.expect("micro stats");
    let stats: serde_json::Value = serde_json::from_slice(&stats.payload).unwrap();
    let data = stats["endpoints"].as_array().and_then(|e| e.first()).map(|e| e["data"].clone()).unwrap_or_default();
    assert_eq!(data["counters"]["applied"].as_f64(), Some(applied), "{stats}");
    let status = client.request(config.subjects().status(sleuth_messages::Stage::Planner), "".into()).await.unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.payload).unwrap();
    assert_eq!(status["counters"]["applied"].as_f64(), Some(applied), "{status}");
}
