//! Scripted OpenAI-compatible servers on loopback for the tests: [`serve_fn`] answers any JSON request with a
//! handler, and [`serve`] answers `/chat/completions` from a script per response schema (`planner_state`,
//! `next_step`, ...), recording every request body. [`demo::node`] starts the embedded default on the demo data.
#![allow(dead_code)]

pub mod demo;

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

/// A valid `planner_state`: what a well-behaved model plans for the demo question.
pub const PLAN: &str = r#"{
  "goal": "name the anime Monkey D. Luffy appears in",
  "strategy": "retrieve_then_answer",
  "retrieval_rounds": [{"round_id": 1, "purpose": "recall", "query_variants": ["Monkey D. Luffy", "One Piece anime"],
    "retrieval_modes": [{"type": "bm25", "k": 5}], "use_hyde": false, "rrf": false,
    "rerank": {"enabled": false, "model": "cross_encoder", "rerank_top_k": 0}, "max_docs": 5}],
  "literal_constraints": {"must_preserve_terms": [], "must_match_exactly": false},
  "acceptance_criteria": {"min_independent_sources": 1, "require_authoritative_source": false, "must_cover_entities": ["Luffy"]},
  "stop_conditions": {"max_rounds": 99, "max_total_docs": 20, "no_new_information_rounds": 2},
  "answer_requirements": {"format": ["short"]},
  "budget": {"max_tokens": 999999},
  "safety": {"sensitivity": "public", "pii_allowed": false},
  "planner_meta": {"planner_version": "model", "rationale_tags": []}
}"#;

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with this message content.
    Content(String),
    /// This status and body.
    Status(u16, &'static str),
    /// Waits this long (ms), then answers with the content.
    Slow(u64, &'static str),
}

pub fn content(text: &str) -> Reply {
    Reply::Content(text.to_string())
}

/// The server's scripts, keyed by the schema a request asks for (`*` for any), each replaying its last reply
/// once the others are used up, and every request body received.
#[derive(Clone, Default)]
pub struct Script {
    routes: Arc<Mutex<HashMap<String, VecDeque<Reply>>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Script {
    /// One script for every request.
    pub fn new(replies: &[Reply]) -> Script {
        Script::routed(&[("*", replies)])
    }

    /// A script per schema name.
    pub fn routed(routes: &[(&str, &[Reply])]) -> Script {
        let routes = routes.iter().map(|(k, v)| (k.to_string(), v.iter().cloned().collect())).collect();
        Script { routes: Arc::new(Mutex::new(routes)), seen: Arc::default() }
    }

    fn next(&self, schema: &str) -> Reply {
        let mut routes = self.routes.lock().unwrap();
        let key = if routes.contains_key(schema) { schema.to_string() } else { "*".to_string() };
        let q = routes.get_mut(&key).unwrap_or_else(|| panic!("no script for schema {schema:?}"));
        if q.len() > 1 { q.pop_front().unwrap() } else { q.front().cloned().expect("an empty script") }
    }

    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests that asked for `schema`.
    pub fn requests_for(&self, schema: &str) -> Vec<Value> {
        self.requests().into_iter().filter(|r| schema_of(r) == schema).collect()
    }
}

/// The schema name a request asks for, or empty.
pub fn schema_of(request: &Value) -> String {
    request["response_format"]["json_schema"]["name"].as_str().unwrap_or("").to_string()
}

/// `llm.structured_output = auto`'s probe, which these servers answer as a `json_schema` server does, without
/// recording it or touching a script.
pub fn is_probe(request: &Value) -> bool {
    schema_of(request) == sleuth_actors::llm::modes::PROBE_NAME
}

pub fn completion(content: &str) -> String {
    json!({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "scripted-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
    .to_string()
}

/// Serves `script` and returns its base URL (with `/v1`).
pub async fn serve(script: Script) -> String {
    serve_killable(script).await.url
}

/// [`serve`], returning the [`Server`] so the test can kill it.
pub async fn serve_killable(script: Script) -> Server {
    serve_with_headers(move |body| {
        let script = script.clone();
        async move {
            if is_probe(&body) {
                return (200, Vec::new(), completion(r#"{"ok": true}"#));
            }
            let schema = schema_of(&body);
            script.seen.lock().unwrap().push(body);
            match script.next(&schema) {
                Reply::Content(c) => (200, Vec::new(), completion(&c)),
                Reply::Status(s, b) => (s, Vec::new(), b.to_string()),
                Reply::Slow(ms, c) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    (200, Vec::new(), completion(c))
                }
            }
        }
    })
    .await
}

/// A minimal HTTP/1.1 server on loopback: every request's JSON body goes to `handler`, whose status and body
/// are the reply. Returns the base URL (with `/v1`).
pub async fn serve_fn<F, Fut>(handler: F) -> String
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = (u16, String)> + Send + 'static,
{
    let handler = Arc::new(handler);
    serve_with_headers(move |body| {
        let handler = handler.clone();
        async move {
            let (status, reply) = handler(body).await;
            (status, Vec::new(), reply)
        }
    })
    .await
    .url
}

/// A server started by [`serve_with_headers`]. [`Server::kill`] closes its port: what a client sees of a killed
/// process (connection refused).
pub struct Server {
    pub url: String,
    accept: tokio::task::AbortHandle,
}

impl Server {
    pub fn kill(&self) {
        self.accept.abort();
    }
}

/// [`serve_fn`] whose handler also returns response headers (`Retry-After`), and that can be killed.
pub async fn serve_with_headers<F, Fut>(handler: F) -> Server
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = (u16, Vec<(&'static str, String)>, String)> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(handler);
    let accept = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let handler = handler.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16384];
                let body = loop {
                    let Ok(n) = sock.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(split) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                    let head = String::from_utf8_lossy(&buf[..split]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                        .unwrap_or(0);
                    if buf.len() >= split + 4 + len {
                        break serde_json::from_slice::<Value>(&buf[split + 4..split + 4 + len]).unwrap();
                    }
                };
                let (status, headers, reply) = handler(body).await;
                let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{reply}",
                    reply.len()
                );
                let _ = sock.write_all(response.as_bytes()).await;
            });
        }
    });
    Server { url: format!("http://{addr}/v1"), accept: accept.abort_handle() }
}
