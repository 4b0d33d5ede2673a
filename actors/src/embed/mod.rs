//! Text embeddings for the dense lane: the [`Embedder`] trait, the local all-MiniLM-L6-v2 model on candle, the
//! OpenAI-compatible `/embeddings` client, a content-hash cache in front of either, and `sleuth models pull`.

mod cache;
mod minilm;
mod openai;
pub mod pull;

use std::sync::Arc;

use async_trait::async_trait;

pub use cache::CachedEmbedder;
pub use minilm::MiniLm;
pub use openai::OpenAiEmbedder;

use crate::config::{Config, EmbedderKind};

#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// Names the model and its settings; stored with every chunk so a model change re-embeds on ingestion.
    fn id(&self) -> &str;
    /// Length of every vector this embedder returns.
    fn dim(&self) -> usize;
    /// One L2-normalised vector per text, in order.
    async fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>>;
    /// The model's own tokenizer, when it has one here; ingestion sizes chunks with it.
    fn tokenizer(&self) -> Option<Arc<tokenizers::Tokenizer>> {
        None
    }
}

/// Cosine similarity of two vectors (a dot product when both are normalised, as ours are).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}

/// The embedder the config asks for, behind a cache. `None` means BM25 only: either the config says so, or the
/// local model is missing and cannot be fetched, which is logged once.
pub async fn open(config: &Config) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    let e = &config.embedder;
    let inner: Arc<dyn Embedder> = match e.kind {
        EmbedderKind::None => return Ok(None),
        EmbedderKind::Openai => Arc::new(OpenAiEmbedder::new(e, &config.backends)?),
        EmbedderKind::Local => {
            let dir = config.model_dir();
            if !pull::is_complete(&dir) {
                if !e.auto_pull {
                    tracing::warn!(dir = %dir.display(), "no embedding model and embedder.auto_pull is off: searching with BM25 only (run `sleuth models pull`)");
                    return Ok(None);
                }
                if let Err(err) = pull::pull(&dir, true).await {
                    tracing::warn!(
                        error = format!("{err:#}"),
                        "cannot fetch the embedding model: searching with BM25 only (run `sleuth models pull` when online)"
                    );
                    return Ok(None);
                }
            }
            let model = tokio::task::spawn_blocking(move || MiniLm::load(&dir)).await??;
            Arc::new(model)
        }
    };
    Ok(Some(Arc::new(CachedEmbedder::new(inner, e.cache_entries))))
}
