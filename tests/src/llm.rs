//! A scripted OpenAI-compatible chat server for process-level tests: every `/v1/chat/completions` request gets a
//! fixed content (or, with [`ScriptedLlm::routed`], the content scripted for the schema it asks for) and the same
//! usage figures, after an optional latency, so a test can check exactly what the spans and counters say.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{Json, Router, extract::State, routing::post};
use serde_json::{Value, json};

#[derive(Clone)]
struct Script {
    /// Content by the schema name a request asks for (`response_format.json_schema.name`); `*` for any other.
    contents: Arc<HashMap<String, String>>,
    latency: Duration,
    prompt_tokens: u32,
    completion_tokens: u32,
    calls: Arc<AtomicUsize>,
}

async fn complete(State(script): State<Script>, Json(request): Json<Value>) -> Json<Value> {
    let schema = request["response_format"]["json_schema"]["name"].as_str().unwrap_or("");
    // `llm.structured_output = auto`'s probe, answered as a `json_schema` server does, and not counted.
    let probe = schema == sleuth_actors::llm::modes::PROBE_NAME;
    if !probe {
        script.calls.fetch_add(1, Ordering::SeqCst);
    }
    if !script.latency.is_zero() && !probe {
        tokio::time::sleep(script.latency).await;
    }
    let content = match probe {
        true => r#"{"ok": true}"#.to_string(),
        false => script.contents.get(schema).or_else(|| script.contents.get("*")).cloned().unwrap_or_default(),
    };
    Json(json!({
        "id": "scripted", "object": "chat.completion", "created": 0,
        "model": request["model"].as_str().unwrap_or("scripted-model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": script.prompt_tokens,
            "completion_tokens": script.completion_tokens,
            "total_tokens": script.prompt_tokens + script.completion_tokens
        }
    }))
}

/// A running scripted server. Dropping it leaves the task to end with the test's runtime.
pub struct ScriptedLlm {
    /// The base URL with `/v1`, for `SLEUTH__LLM__BASE_URL`.
    pub base_url: String,
    calls: Arc<AtomicUsize>,
}

impl ScriptedLlm {
    /// Answers every chat completion with `content`, reporting these token counts.
    pub async fn start(content: &str, prompt_tokens: u32, completion_tokens: u32) -> ScriptedLlm {
        ScriptedLlm::routed(&[("*", content)], Duration::ZERO, prompt_tokens, completion_tokens).await
    }

    /// Answers each completion with the content scripted for the schema it asks for (`*`: any other), after
    /// `latency`, reporting these token counts.
    pub async fn routed(
        contents: &[(&str, &str)],
        latency: Duration,
        prompt_tokens: u32,
        completion_tokens: u32,
    ) -> ScriptedLlm {
        let calls = Arc::new(AtomicUsize::new(0));
        let contents = contents.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let script =
            Script { contents: Arc::new(contents), latency, prompt_tokens, completion_tokens, calls: calls.clone() };
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(script);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("cannot bind the scripted LLM");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ScriptedLlm { base_url, calls }
    }

    /// Completions served so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}
