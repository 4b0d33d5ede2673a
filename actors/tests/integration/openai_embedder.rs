//! The OpenAI-compatible embedder against a minimal HTTP server on loopback that answers `/embeddings` the way
//! OpenAI, vLLM and llama.cpp do: batching, reordering by `index`, normalisation and a wrong dimension.

use crate::common;

use std::sync::{Arc, Mutex};

use sleuth_actors::{
    config::{BackendsConfig, EmbedderConfig, EmbedderKind},
    embed::{Embedder, OpenAiEmbedder},
};

/// Serves `/embeddings`: each input's vector is `[len(input), dim-1 zeros…]`, returned in reverse order.
async fn server(dim: usize, requests: Arc<Mutex<Vec<serde_json::Value>>>) -> String {
    common::serve_fn(move |body| {
        let requests = requests.clone();
        async move {
            let inputs: Vec<String> = body["input"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
            requests.lock().unwrap().push(body);
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .rev()
                .map(|(i, t)| {
                    let mut v = vec![0.0f32; dim];
                    v[0] = t.len() as f32;
                    serde_json::json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            (200, serde_json::json!({"object": "list", "model": "m", "data": data, "usage": {"prompt_tokens": 1, "total_tokens": 1}}).to_string())
        }
    })
    .await
}

fn config(base_url: String, dim: usize) -> EmbedderConfig {
    EmbedderConfig {
        kind: EmbedderKind::Openai,
        base_url: Some(base_url),
        model: "m".into(),
        dim,
        batch: 2,
        ..Default::default()
    }
}

#[tokio::test]
async fn batches_reorders_and_normalises() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let url = server(4, requests.clone()).await;
    let e = OpenAiEmbedder::new(&config(url, 4), &BackendsConfig::default()).unwrap();
    let texts: Vec<String> = ["a", "bb", "ccc"].map(String::from).to_vec();
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v.len(), 3);
    for row in &v {
        assert_eq!(row, &vec![1.0, 0.0, 0.0, 0.0], "normalised, and in input order despite the reversed reply");
    }
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 2, "batch = 2 makes two requests for three texts");
    assert_eq!(requests[0]["model"], "m");
    assert_eq!(e.id(), "openai:m");
}

#[tokio::test]
async fn a_wrong_dimension_or_a_missing_url_is_a_clear_error() {
    let url = server(3, Arc::new(Mutex::new(Vec::new()))).await;
    let e = OpenAiEmbedder::new(&config(url, 4), &BackendsConfig::default()).unwrap();
    let err = e.embed(&["x".to_string()]).await.unwrap_err().to_string();
    assert!(err.contains("3-dimensional") && err.contains("embedder.dim is 4"), "{err}");
    let err = OpenAiEmbedder::new(
        &EmbedderConfig { kind: EmbedderKind::Openai, ..Default::default() },
        &BackendsConfig::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("embedder.base_url"), "{err}");
}
