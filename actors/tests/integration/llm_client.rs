//! The LLM client and structured replies against a scripted OpenAI-compatible server on loopback: repairs of
//! malformed and schema-breaking replies, retries on 429 and timeouts, the circuit breaker, the fallback
//! provider, and the structured-output modes with `auto`'s probe.

use crate::common;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use common::{Reply, Script, content, serve};
use serde_json::{Value, json};
use sleuth_actors::{
    config::{LlmConfig, StructuredOutput},
    llm::{Agent, ChatMessage, LlmClient, LlmError, structured},
};
use sleuth_messages::{ActionKind, NextStep};

fn config(base_url: &str) -> LlmConfig {
    LlmConfig {
        base_url: Some(base_url.to_string()),
        model: "scripted-model".into(),
        api_key_env: "SLEUTH_TEST_NO_SUCH_KEY".into(),
        backoff_base_ms: 10,
        backoff_max_ms: 50,
        timeout_ms: 2_000,
        ..LlmConfig::default()
    }
}

async fn client_for(replies: &[Reply], tweak: impl FnOnce(&mut LlmConfig)) -> (LlmClient, Script) {
    let script = Script::new(replies);
    let mut config = config(&serve(script.clone()).await);
    tweak(&mut config);
    (LlmClient::from_config(&config).unwrap().expect("a base_url gives a client"), script)
}

fn question() -> Vec<ChatMessage> {
    vec![ChatMessage::system("You plan retrieval steps."), ChatMessage::user("Which anime is Luffy in?")]
}

const SEARCH: &str = r#"{"rationale": "find Luffy", "actions": [{"action": "qdrant_search", "search_intent": {"rationale": "resolve the name", "entity_type": "character", "query": "Luffy"}}]}"#;
const THREE_ACTIONS: &str =
    r#"{"rationale": "all at once", "actions": [{"action": "final"}, {"action": "final"}, {"action": "final"}]}"#;
const NO_INTENT: &str = r#"{"rationale": "search", "actions": [{"action": "qdrant_search"}]}"#;

async fn ask(client: &LlmClient, max_repairs: u32) -> structured::Structured<NextStep> {
    structured::ask::<NextStep>(client, Agent::Planner, question(), max_repairs, &|_| Ok(())).await
}

#[tokio::test]
async fn malformed_json_a_missing_intent_and_an_inconsistent_step_are_each_repaired() {
    let (client, script) = client_for(
        &[content("{\"rationale\": \"oops"), content(NO_INTENT), content(THREE_ACTIONS), content(SEARCH)],
        |_| {},
    )
    .await;
    let out = ask(&client, 3).await;
    let step = out.result.expect("repaired");
    assert_eq!(step.actions[0].kind(), ActionKind::QdrantSearch);
    assert_eq!(out.repairs.len(), 3, "{:?}", out.repairs);
    assert!(out.repairs[0].contains("not valid JSON"), "{:?}", out.repairs);
    assert!(out.repairs[1].contains("search_intent"), "{:?}", out.repairs);
    assert!(out.repairs[2].contains("at most 2"), "{:?}", out.repairs);
    assert_eq!((out.usage.calls, out.usage.input_tokens, out.usage.output_tokens), (4, 400, 80));

    // Each retry carries the rejected reply and a correction naming the problem.
    let last = script.requests().pop().unwrap();
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2 + 2 * 3);
    assert_eq!(messages[messages.len() - 2]["role"], "assistant");
    let correction = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(correction.contains("at most 2") && correction.contains("only one JSON object"), "{correction}");
}

#[tokio::test]
async fn a_reply_still_invalid_after_every_repair_is_a_typed_error() {
    let (client, script) = client_for(&[content("no json here")], |_| {}).await;
    let out = ask(&client, 2).await;
    assert!(matches!(out.result, Err(LlmError::Invalid { attempts: 3, .. })), "{:?}", out.result);
    assert_eq!(script.requests().len(), 3);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_with_backoff() {
    let rate_limited =
        r#"{"error": {"message": "slow down", "type": "rate_limit_exceeded", "param": null, "code": null}}"#;
    let (client, script) =
        client_for(&[Reply::Status(429, rate_limited), Reply::Status(503, "overloaded"), content(SEARCH)], |_| {})
            .await;
    let out = ask(&client, 0).await;
    assert!(out.result.is_ok(), "{:?}", out.result);
    assert_eq!(script.requests().len(), 3, "two retries, then the answer");
    assert_eq!(out.usage.calls, 1, "only the completion is billed");
}

#[tokio::test]
async fn a_slow_reply_times_out_and_the_retry_answers() {
    let (client, script) = client_for(&[Reply::Slow(3_000, SEARCH), content(SEARCH)], |c| c.timeout_ms = 300).await;
    let started = std::time::Instant::now();
    let out = ask(&client, 0).await;
    assert!(out.result.is_ok(), "{:?}", out.result);
    assert_eq!(script.requests().len(), 2);
    assert!(started.elapsed() < Duration::from_millis(2_500), "the slow call was abandoned, not awaited");
}

#[tokio::test]
async fn a_refused_request_is_not_retried() {
    let bad = r#"{"error": {"message": "response_format json_schema is not supported", "type": "invalid_request_error", "param": null, "code": null}}"#;
    let (client, script) = client_for(&[Reply::Status(400, bad)], |_| {}).await;
    let out = ask(&client, 2).await;
    assert!(matches!(&out.result, Err(LlmError::Rejected(m)) if m.contains("json_schema")), "{:?}", out.result);
    assert_eq!(script.requests().len(), 1);
}

#[tokio::test]
async fn repeated_failures_open_the_circuit_and_later_calls_do_not_reach_the_server() {
    let (client, script) = client_for(&[Reply::Status(500, "boom")], |c| c.max_retries = 0).await;
    for _ in 0..3 {
        assert!(matches!(ask(&client, 0).await.result, Err(LlmError::Unavailable(_))));
    }
    assert!(client.degraded());
    assert!(matches!(ask(&client, 0).await.result, Err(LlmError::CircuitOpen)));
    assert_eq!(script.requests().len(), 3, "the open circuit kept the fourth call home");
}

#[tokio::test]
async fn the_fallback_provider_answers_when_the_primary_is_down() {
    let fallback = Script::new(&[content(SEARCH)]);
    let fallback_url = serve(fallback.clone()).await;
    let (client, primary) = client_for(&[Reply::Status(503, "down")], |c| {
        c.max_retries = 1;
        c.fallback.base_url = Some(fallback_url);
        c.fallback.model = Some("backup-model".into());
    })
    .await;
    let out = ask(&client, 0).await;
    assert!(out.result.is_ok(), "{:?}", out.result);
    assert_eq!(primary.requests().len(), 2);
    assert_eq!(fallback.requests()[0]["model"], "backup-model");
    assert!(!client.degraded());
}

#[tokio::test]
async fn the_schema_goes_out_as_json_schema_or_alongside_json_object() {
    let (client, script) = client_for(&[content(SEARCH)], |_| {}).await;
    ask(&client, 0).await.result.unwrap();
    let format = &script.requests()[0]["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "next_step");
    assert!(format["json_schema"]["schema"]["properties"]["actions"].is_object(), "{format}");

    let (client, script) = client_for(&[content(SEARCH)], |c| c.structured_output = StructuredOutput::JsonObject).await;
    ask(&client, 0).await.result.unwrap();
    let request = &script.requests()[0];
    assert_eq!(request["response_format"]["type"], "json_object");
    assert!(request["response_format"]["schema"]["properties"]["rationale"].is_object());
    assert_eq!((request["model"].as_str(), request["stream"].as_bool()), (Some("scripted-model"), Some(false)));
}

/// A server like llama-cpp-python's: `json_schema` refused with `status` (that server says 500, with a validation
/// error), `json_object` followed; every request kept.
async fn json_object_only_server(seen: Arc<Mutex<Vec<Value>>>, status: u16) -> String {
    common::serve_fn(move |body: Value| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(body.clone());
            if body["response_format"]["type"] == "json_schema" {
                let error = r#"{"error": {"message": "1 validation error: Input should be 'text' or 'json_object'", "type": "internal_server_error", "param": null, "code": null}}"#;
                return (status, error.to_string());
            }
            let probe = body["response_format"]["schema"]["required"][0] == "ok";
            (200, common::completion(if probe { r#"{"ok": true}"# } else { SEARCH }))
        }
    })
    .await
}

#[tokio::test]
async fn auto_probes_an_endpoint_once_and_keeps_the_mode_it_follows() {
    for status in [500, 400] {
        auto_probes_once(status).await;
    }
}

async fn auto_probes_once(status: u16) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = json_object_only_server(seen.clone(), status).await;
    let client = LlmClient::from_config(&config(&url)).unwrap().unwrap();
    for _ in 0..3 {
        let out = ask(&client, 0).await;
        assert!(out.result.is_ok(), "{:?}", out.result);
        assert_eq!(out.usage.calls, 1, "the probe is not billed to the ask");
    }
    let seen = seen.lock().unwrap();
    let formats: Vec<String> = seen
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["response_format"]["type"].as_str().unwrap_or("-"),
                r["messages"].as_array().unwrap().len()
            )
        })
        .collect();
    // Probed once (json_schema refused, json_object followed), then three asks in json_object.
    assert_eq!(formats, ["json_schema 2", "json_object 2", "json_object 2", "json_object 2", "json_object 2"]);
    assert_eq!(seen[1]["max_tokens"], 32, "the probe is small");
    assert!(seen[4]["response_format"]["schema"]["properties"]["actions"].is_object());
    assert_eq!(client.structured_output(), Some(StructuredOutput::JsonObject), "after a {status}");
}

#[tokio::test]
async fn tools_mode_forces_one_function_and_reads_its_arguments() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let url = common::serve_fn(move |body: Value| {
        log.lock().unwrap().push(body);
        async move {
            let reply = json!({
                "id": "c1", "object": "chat.completion", "created": 0, "model": "scripted-model",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "next_step", "arguments": SEARCH}}]}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
            });
            (200, reply.to_string())
        }
    })
    .await;
    let mut config = config(&url);
    config.structured_output = StructuredOutput::Tools;
    let client = LlmClient::from_config(&config).unwrap().unwrap();
    let step = ask(&client, 0).await.result.expect("the call's arguments are the reply");
    assert_eq!(step.actions[0].kind(), ActionKind::QdrantSearch);
    let request = seen.lock().unwrap()[0].clone();
    assert_eq!(request["tool_choice"]["function"]["name"], "next_step");
    assert!(request["tools"][0]["function"]["parameters"]["properties"]["actions"].is_object());
    assert!(request.get("response_format").is_none());
}

#[tokio::test]
async fn prompt_mode_puts_the_schema_in_the_system_message_only() {
    let (client, script) = client_for(&[content(&format!("Here you go:\n```json\n{SEARCH}\n```"))], |c| {
        c.structured_output = StructuredOutput::Prompt
    })
    .await;
    assert!(ask(&client, 0).await.result.is_ok(), "the JSON is found inside the prose");
    let request = &script.requests()[0];
    assert!(request.get("response_format").is_none() && request.get("tools").is_none());
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You plan retrieval steps.") && system.contains("\"qdrant_search\""), "{system}");
}

#[tokio::test]
async fn a_probe_the_server_could_not_answer_is_not_kept() {
    // The first two requests (the probe's first mode, then the ask itself in prompt mode) meet a 503.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let inner = json_object_only_server(seen.clone(), 500).await;
    let count = Arc::new(Mutex::new(0u32));
    let url = common::serve_fn(move |body: Value| {
        let (count, inner) = (count.clone(), inner.clone());
        async move {
            let n = {
                let mut c = count.lock().unwrap();
                *c += 1;
                *c
            };
            if n <= 2 {
                return (503, "overloaded".to_string());
            }
            let reply =
                reqwest::Client::new().post(format!("{inner}/chat/completions")).json(&body).send().await.unwrap();
            (reply.status().as_u16(), reply.text().await.unwrap())
        }
    })
    .await;
    let client = LlmClient::from_config(&LlmConfig { max_retries: 0, ..config(&url) }).unwrap().unwrap();
    assert!(matches!(ask(&client, 0).await.result, Err(LlmError::Unavailable(_))));
    assert!(ask(&client, 0).await.result.is_ok(), "the next call probes again and finds json_object");
    let types: Vec<String> =
        seen.lock().unwrap().iter().map(|r| r["response_format"]["type"].as_str().unwrap_or("-").to_string()).collect();
    assert_eq!(types, ["json_schema", "json_object", "json_object"]);
}

#[test]
fn no_base_url_means_no_client() {
    assert!(LlmClient::from_config(&LlmConfig::default()).unwrap().is_none());
}
