//! An embedding endpoint that goes away while the embedded node runs: the OpenAI-compatible server on loopback
//! is killed between two questions, and the second is answered from BM25 alone, saying so. And a throttled
//! endpoint's `Retry-After` is waited for. (The graph database's outage, a real PostgreSQL stopped under a running
//! deployment, is `tests/tests/e2e/outages.rs`; the LLM's is in `llm_agents.rs`.)

use crate::common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use common::{Server, serve_with_headers};
use sleuth_actors::{
    config::{BackendsConfig, Config, EmbedderConfig, EmbedderKind},
    embed::{Embedder, OpenAiEmbedder},
    node::Node,
};
use sleuth_messages::{ActionResult, AskRequest, Backend, Outcome};

const DIM: usize = 64;

/// A bag-of-words embedding: every word counted in one of [`DIM`] buckets by a stable hash. Crude, but it
/// gives the dense lane something to agree with BM25 about.
fn embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIM];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let h = word.to_lowercase().bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
        v[h as usize % DIM] += 1.0;
    }
    v
}

/// Serves `/embeddings`; answers the first `throttled` requests with a 429 and `retry-after-ms: 300`.
async fn embedding_server(calls: Arc<AtomicU32>, throttled: u32) -> Server {
    serve_with_headers(move |body| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            if n < throttled {
                let error = r#"{"error": {"message": "slow down", "type": "rate_limit"}}"#.to_string();
                return (429, vec![("retry-after-ms", "300".to_string())], error);
            }
            let data: Vec<serde_json::Value> = body["input"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": embedding(t.as_str().unwrap())}))
                .collect();
            let reply = serde_json::json!({"object": "list", "model": "hash", "data": data, "usage": {"prompt_tokens": 1, "total_tokens": 1}});
            (200, Vec::new(), reply.to_string())
        }
    })
    .await
}

fn embedder_config(url: &str) -> EmbedderConfig {
    EmbedderConfig {
        kind: EmbedderKind::Openai,
        base_url: Some(url.to_string()),
        model: "hash".into(),
        dim: DIM,
        api_key_env: "SLEUTH_TEST_NO_SUCH_KEY".into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_that_go_down_leave_bm25_and_the_answer_says_so() {
    let calls = Arc::new(AtomicU32::new(0));
    let server = embedding_server(calls.clone(), 0).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config { data_dir: Some(dir.path().to_path_buf()), ..Config::default() };
    config.embedder = embedder_config(&server.url);
    config.backends.backoff_base_ms = 5;
    config.backends.backoff_max_ms = 20;
    // The demo graph and corpus are embedded through the server at start-up, as a user's would be.
    let node = Node::embedded(config).await.expect("embedded node");
    let before = node.ask(AskRequest::new("Which anime is Luffy in?"), None).await.expect("a reply");
    let Outcome::Answer(before) = before.outcome else { panic!("{:?}", before.outcome) };
    assert!(before.degraded.is_empty(), "the endpoint was up: {:?}", before.degraded);
    assert!(calls.load(Ordering::SeqCst) > 0);

    server.kill();
    // Another question: the embedding cache must not answer for the dead endpoint.
    let started = Instant::now();
    let reply = node.ask(AskRequest::new("Who created the manga Bleach?"), None).await.expect("a reply");
    let elapsed = started.elapsed();
    let request_id = reply.request_id.expect("request id");
    let (state, _) = node.ctx.store.load(request_id).await.unwrap().expect("stored state");
    node.shutdown().await;
    let shown = sleuth_actors::client::render(&reply);
    let Outcome::Answer(answer) = reply.outcome else { panic!("a degraded answer, not {:?}", reply.outcome) };
    assert!(answer.answer.contains("Tite Kubo"), "BM25 alone still finds it: {}", answer.answer);
    assert!(!answer.citations.is_empty());
    let d = answer.degraded.iter().find(|d| d.backend == Backend::Embeddings).expect("embeddings named as degraded");
    assert_eq!(d.fallback, "BM25 only");
    assert!(shown.contains("Degraded: embeddings unavailable ("), "{shown}");
    // Each search says it ran without the dense lane.
    let searches: Vec<_> = state
        .turns
        .iter()
        .flat_map(|t| &t.outcomes)
        .filter_map(|o| match &o.result {
            ActionResult::Retrieval(r) => Some(r),
            _ => None,
        })
        .collect();
    assert!(searches.iter().any(|r| !r.degraded.is_empty()), "{searches:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[tokio::test]
async fn a_throttled_endpoint_is_waited_for_as_its_retry_after_says() {
    let calls = Arc::new(AtomicU32::new(0));
    let server = embedding_server(calls.clone(), 1).await;
    let backends = BackendsConfig { backoff_base_ms: 1, backoff_max_ms: 2_000, ..BackendsConfig::default() };
    let embedder = OpenAiEmbedder::new(&embedder_config(&server.url), &backends).unwrap();
    let started = Instant::now();
    let vectors = embedder.embed(&["straw hat".to_string()]).await.expect("the retry succeeds");
    assert_eq!(vectors.len(), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one 429, one retry");
    assert!(started.elapsed() >= Duration::from_millis(300), "waited {:?}, not the 300 ms asked", started.elapsed());
}
