//! Document ingestion: reads JSONL `{id,title,text,metadata}`, Markdown and plain text, chunks by words with
//! overlap (each chunk carries its document's title), and upserts idempotently by content hash.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use sleuth_messages::JsonMap;
use uuid::Uuid;

use crate::index::{Chunk, Upserted, VectorIndex};

/// The bundled demo corpus, ingested on first use of an empty embedded index.
pub const DEMO_CORPUS: &str = include_str!("../data/demo_corpus.jsonl");

const HASH_NAMESPACE: Uuid = Uuid::from_u128(0x5e1e_7f00_0000_4000_8000_0000_0000_0002);

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub id: String,
    pub title: String,
    pub text: String,
    pub metadata: JsonMap,
}

/// Totals of one ingestion run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IngestSummary {
    pub documents: usize,
    pub inserted: usize,
    pub replaced: usize,
    pub unchanged: usize,
    pub chunks: usize,
}

impl std::fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} documents: {} new, {} replaced, {} unchanged ({} chunks written)",
            self.documents, self.inserted, self.replaced, self.unchanged, self.chunks
        )
    }
}

/// Parses JSONL text; errors name the source and line.
pub fn parse_jsonl(source: &str, text: &str) -> anyhow::Result<Vec<Document>> {
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{source}:{}", i + 1);
        let value: serde_json::Value = serde_json::from_str(line).with_context(|| format!("{}: not valid JSON", at()))?;
        let field = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let id = match value.get("id") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => bail!("{}: missing string field \"id\"", at()),
        };
        let text = field("text").with_context(|| format!("{}: missing string field \"text\"", at()))?;
        let title = field("title").unwrap_or_else(|| id.clone());
        let metadata = match value.get("metadata") {
            None | Some(serde_json::Value::Null) => JsonMap::new(),
            Some(serde_json::Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(_) => bail!("{}: \"metadata\" must be an object", at()),
        };
        if id.trim().is_empty() {
            bail!("{}: \"id\" is empty", at());
        }
        docs.push(Document { id, title, text, metadata });
    }
    Ok(docs)
}

fn read_file(path: &Path) -> anyhow::Result<Vec<Document>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "jsonl" | "ndjson" => parse_jsonl(&path.display().to_string(), &text),
        "md" | "markdown" => {
            let title = text
                .lines()
                .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_string()))
                .unwrap_or_else(|| stem.clone());
            Ok(vec![Document { id: path.display().to_string(), title, text, metadata: JsonMap::new() }])
        }
        "txt" | "text" => Ok(vec![Document { id: path.display().to_string(), title: stem, text, metadata: JsonMap::new() }]),
        other => bail!("{}: unsupported file type '{other}', expected .jsonl, .md or .txt", path.display()),
    }
}

/// Expands directories (recursively, supported extensions only) and reads every document.
pub fn read_paths(paths: &[PathBuf]) -> anyhow::Result<Vec<Document>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut stack = vec![path.clone()];
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
                    let p = entry?.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if matches!(p.extension().and_then(|e| e.to_str()), Some("jsonl" | "ndjson" | "md" | "markdown" | "txt")) {
                        files.push(p);
                    }
                }
            }
        } else if path.exists() {
            files.push(path.clone());
        } else {
            bail!("{} does not exist", path.display());
        }
    }
    files.sort();
    let mut docs = Vec::new();
    for file in files {
        docs.extend(read_file(&file)?);
    }
    Ok(docs)
}

/// Splits a document into overlapping word windows; short documents are one chunk.
pub fn chunk(doc: &Document, words_per_chunk: usize, overlap: usize) -> Vec<Chunk> {
    let words: Vec<&str> = doc.text.split_whitespace().collect();
    let stride = words_per_chunk.saturating_sub(overlap).max(1);
    let mut windows = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + words_per_chunk).min(words.len());
        windows.push(words[start..end].join(" "));
        if end >= words.len() {
            break;
        }
        start += stride;
    }
    let hash_input = format!("{}\n{}\n{}", doc.title, doc.text, serde_json::to_string(&doc.metadata).unwrap_or_default());
    let doc_hash = Uuid::new_v5(&HASH_NAMESPACE, hash_input.as_bytes()).to_string();
    let of = windows.len() as u32;
    windows
        .into_iter()
        .enumerate()
        .map(|(i, text)| Chunk {
            doc_id: doc.id.clone(),
            index: i as u32,
            of,
            title: doc.title.clone(),
            text,
            doc_hash: doc_hash.clone(),
            metadata: doc.metadata.clone(),
        })
        .collect()
}

/// Ingests documents into the index with a progress bar (hidden when `progress` is false), then flushes.
pub async fn ingest(
    index: &dyn VectorIndex,
    docs: Vec<Document>,
    words_per_chunk: usize,
    overlap: usize,
    progress: bool,
) -> anyhow::Result<IngestSummary> {
    let bar = if progress { ProgressBar::new(docs.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} ingesting [{bar:40}] {pos}/{len} documents ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut summary = IngestSummary { documents: docs.len(), ..Default::default() };
    for doc in &docs {
        let chunks = chunk(doc, words_per_chunk, overlap);
        let n = chunks.len();
        match index.upsert_document(chunks).await.with_context(|| format!("cannot ingest document {}", doc.id))? {
            Upserted::Unchanged => summary.unchanged += 1,
            Upserted::Inserted => {
                summary.inserted += 1;
                summary.chunks += n;
            }
            Upserted::Replaced => {
                summary.replaced += 1;
                summary.chunks += n;
            }
        }
        bar.inc(1);
    }
    index.flush().await?;
    bar.finish_and_clear();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_errors_name_the_line() {
        let err = parse_jsonl("docs.jsonl", "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\"}\n").unwrap_err();
        assert!(err.to_string().contains("docs.jsonl:2"), "{err}");
        assert!(parse_jsonl("d", "not json").unwrap_err().to_string().contains("d:1"));
    }

    #[test]
    fn demo_corpus_parses() {
        let docs = parse_jsonl("demo", DEMO_CORPUS).unwrap();
        assert!(docs.len() >= 24, "{}", docs.len());
    }

    #[test]
    fn chunks_overlap_and_carry_the_title() {
        let doc = Document { id: "d".into(), title: "T".into(), text: (0..50).map(|i| i.to_string()).collect::<Vec<_>>().join(" "), metadata: JsonMap::new() };
        let chunks = chunk(&doc, 20, 5);
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| c.title == "T" && c.of == 3));
        assert!(chunks[1].text.starts_with("15 "));
        assert_eq!(chunks[0].doc_hash, chunks[2].doc_hash);
    }
}
