//! [`OpenAiEmbedder`]: the `/embeddings` endpoint of any OpenAI-compatible server (OpenAI, vLLM, llama.cpp,
//! Ollama) through async-openai, in batches.

use async_openai::{
    Client,
    config::OpenAIConfig,
    types::embeddings::{CreateEmbeddingRequest, EmbeddingInput},
};
use async_trait::async_trait;

use sleuth_messages::Backend;

use super::Embedder;
use crate::{
    config::{BackendsConfig, EmbedderConfig},
    guard::{Guard, retry_after::RetryAfterService},
};

pub struct OpenAiEmbedder {
    client: Client<OpenAIConfig>,
    /// Retries, `Retry-After` and the circuit breaker: what it gives up on is `Unavailable`, and a search
    /// falls back to BM25.
    guard: Guard,
    model: String,
    id: String,
    dim: usize,
    batch: usize,
}

impl OpenAiEmbedder {
    pub fn new(config: &EmbedderConfig, backends: &BackendsConfig) -> anyhow::Result<OpenAiEmbedder> {
        let base = config.base_url.as_deref().filter(|u| !u.trim().is_empty()).ok_or_else(|| {
            anyhow::anyhow!("embedder.kind = \"openai\" needs embedder.base_url (e.g. http://localhost:8000/v1)")
        })?;
        anyhow::ensure!(
            config.dim > 0,
            "embedder.dim must be set to the model's vector length for embedder.kind = \"openai\""
        );
        let key = std::env::var(&config.api_key_env).unwrap_or_default();
        // No retries here: the retriever's guard retries, honouring the `Retry-After` this service notes.
        let http = reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(5)).build()?;
        let client = Client::with_config(OpenAIConfig::new().with_api_base(base).with_api_key(key))
            .with_http_client(http.clone())
            .with_http_service(RetryAfterService::new(http));
        Ok(OpenAiEmbedder {
            client,
            guard: Guard::new(Backend::Embeddings, backends),
            model: config.model.clone(),
            id: format!("openai:{}", config.model),
            dim: config.dim,
            batch: config.batch.max(1),
        })
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    async fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch) {
            let request = CreateEmbeddingRequest {
                model: self.model.clone(),
                input: EmbeddingInput::StringArray(batch.to_vec()),
                ..Default::default()
            };
            let mut response = self
                .guard
                .call(|| async {
                    self.client
                        .embeddings()
                        .create(request.clone())
                        .await
                        .map_err(|e| anyhow::anyhow!("embeddings request failed: {e}"))
                })
                .await?;
            anyhow::ensure!(
                response.data.len() == batch.len(),
                "the server returned {} embeddings for {} texts",
                response.data.len(),
                batch.len()
            );
            response.data.sort_by_key(|e| e.index);
            for e in response.data {
                anyhow::ensure!(
                    e.embedding.len() == self.dim,
                    "the server returned a {}-dimensional vector, embedder.dim is {}",
                    e.embedding.len(),
                    self.dim
                );
                let norm = e.embedding.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                out.push(e.embedding.into_iter().map(|x| x / norm).collect());
            }
        }
        Ok(out)
    }
}
