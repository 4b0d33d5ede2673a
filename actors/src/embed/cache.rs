//! [`CachedEmbedder`]: an LRU of vectors keyed by the SHA-256 of the text, in front of any embedder, so repeated
//! queries and re-sent chunks are embedded once.

use std::{
    num::NonZeroUsize,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use lru::LruCache;
use sha2::{Digest, Sha256};

use super::Embedder;

pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Mutex<LruCache<[u8; 32], Vec<f32>>>,
}

impl CachedEmbedder {
    pub fn new(inner: Arc<dyn Embedder>, entries: usize) -> CachedEmbedder {
        let cap = NonZeroUsize::new(entries.max(1)).expect("at least one entry");
        CachedEmbedder { inner, cache: Mutex::new(LruCache::new(cap)) }
    }

    fn key(text: &str) -> [u8; 32] {
        Sha256::digest(text.as_bytes()).into()
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn tokenizer(&self) -> Option<Arc<tokenizers::Tokenizer>> {
        self.inner.tokenizer()
    }

    async fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| Self::key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = {
            let mut cache = self.cache.lock().expect("embedding cache poisoned");
            keys.iter().map(|k| cache.get(k).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let batch: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
            let vectors = self.inner.embed(&batch).await?;
            anyhow::ensure!(
                vectors.len() == batch.len(),
                "embedder returned {} vectors for {} texts",
                vectors.len(),
                batch.len()
            );
            let mut cache = self.cache.lock().expect("embedding cache poisoned");
            for (&i, v) in missing.iter().zip(vectors) {
                cache.put(keys[i], v.clone());
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(|v| v.expect("every text embedded")).collect())
    }
}
