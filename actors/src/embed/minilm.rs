//! [`MiniLm`]: sentence-transformers/all-MiniLM-L6-v2 on candle (CPU), with mean pooling over the attention mask
//! and L2 normalisation, exactly as the sentence-transformers pipeline does.

use std::{path::Path, sync::Arc};

use anyhow::Context;
use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::Embedder;

/// sentence-transformers truncates this model's input here (`sentence_bert_config.json`).
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass.
const BATCH: usize = 16;

pub struct MiniLm {
    model: Arc<BertModel>,
    tokenizer: Arc<Tokenizer>,
    dim: usize,
}

impl MiniLm {
    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir`.
    pub fn load(dir: &Path) -> anyhow::Result<MiniLm> {
        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .with_context(|| format!("cannot read {}", dir.join("config.json").display()))?;
        let config: BertConfig = serde_json::from_str(&config_text).context("config.json is not a BERT config")?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow::anyhow!("cannot load {}: {e}", dir.join("tokenizer.json").display()))?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| anyhow::anyhow!("tokenizer truncation: {e}"))?;
        tokenizer.with_padding(Some(PaddingParams { strategy: PaddingStrategy::BatchLongest, ..Default::default() }));
        let weights = dir.join("model.safetensors");
        // SAFETY: the file is only read, and `pull` verified its checksum; nothing else maps it mutably.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &Device::Cpu) }
            .with_context(|| format!("cannot map {}", weights.display()))?;
        let model = BertModel::load(vb, &config).context("cannot build the BERT model from model.safetensors")?;
        Ok(MiniLm { model: Arc::new(model), tokenizer: Arc::new(tokenizer), dim: config.hidden_size })
    }

    fn embed_batch(model: &BertModel, tokenizer: &Tokenizer, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let encodings = tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| anyhow::anyhow!("tokenize: {e}"))?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> candle_core::Result<Tensor> {
            let rows: Vec<Tensor> =
                encodings.iter().map(|e| Tensor::new(f(e), &Device::Cpu)).collect::<candle_core::Result<_>>()?;
            Tensor::stack(&rows, 0)
        };
        let ids = rows(&|e| e.get_ids())?;
        let types = rows(&|e| e.get_type_ids())?;
        let mask = rows(&|e| e.get_attention_mask())?;
        let hidden = model.forward(&ids, &types, Some(&mask))?;
        // Mean pooling over real tokens, then L2 normalisation.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}

#[async_trait]
impl Embedder for MiniLm {
    fn id(&self) -> &str {
        "all-MiniLM-L6-v2"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn tokenizer(&self) -> Option<Arc<Tokenizer>> {
        Some(self.tokenizer.clone())
    }

    async fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        // Batches of similar length, so little compute goes to padding; results go back in input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH) {
            let (model, tokenizer) = (self.model.clone(), self.tokenizer.clone());
            let batch_texts: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
            let vectors = tokio::task::spawn_blocking(move || Self::embed_batch(&model, &tokenizer, &batch_texts))
                .await
                .context("embedding task failed")??;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
