//! Document ingestion: reads JSONL `{id,title,text,metadata}`, Markdown (as the text a person reads,
//! `markdown.rs`) and plain text, chunks by tokens with overlap (each chunk carries its document's title and
//! readers), embeds in batches, and upserts idempotently by content hash. A JSONL line may name its `owner` tenant and reader `groups` (`crate::access`); a document
//! without an owner is shared with every tenant.

pub mod chunk;
pub mod files;
pub mod formats;
pub mod graph;
pub mod links;
pub mod markdown;
mod pdf_outline;
pub mod target;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use sleuth_messages::JsonMap;
use uuid::Uuid;

use tokenizers::Tokenizer;

use crate::{access::Ownership, index::Chunk, retrieval::Retriever};

/// The bundled demo corpus, ingested on first use of an empty embedded index.
pub const DEMO_CORPUS: &str = include_str!("../../data/demo_corpus.jsonl");

const HASH_NAMESPACE: Uuid = Uuid::from_u128(0x5e1e_7f00_0000_4000_8000_0000_0000_0002);

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub id: String,
    pub title: String,
    pub text: String,
    pub metadata: JsonMap,
    /// Who may read it: its owner tenant and reader groups; shared by default.
    pub ownership: Ownership,
    /// The text by section and page, when the format has them (Markdown, HTML, Office documents, PDF): each chunk
    /// then names its section and page (`section` and `page` in its metadata), and citations show them. Empty: the
    /// text is one part.
    pub parts: Vec<Part>,
}

/// A part of a document's text: the paragraphs under one heading, or one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub section: Option<String>,
    /// 1-based, for paged formats.
    pub page: Option<u32>,
    pub text: String,
}

/// Gives every document the owner and groups the command line names (`--tenant`, `--groups`); a document whose
/// own line names another owner is refused, naming it.
pub fn owned_by(docs: &mut [Document], ownership: &Ownership) -> anyhow::Result<()> {
    for doc in docs {
        doc.ownership = std::mem::take(&mut doc.ownership)
            .merge(ownership)
            .map_err(|e| anyhow::anyhow!("document {:?}: {e}", doc.id))?;
    }
    Ok(())
}

/// Totals of one ingestion run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IngestSummary {
    pub documents: usize,
    pub inserted: usize,
    pub replaced: usize,
    pub unchanged: usize,
    pub chunks: usize,
    /// `mentions` edges recorded from these documents' texts.
    pub links: usize,
    pub elapsed: Duration,
}

impl IngestSummary {
    /// Chunks written per second.
    pub fn chunks_per_second(&self) -> f64 {
        self.chunks as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl std::fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} documents: {} new, {} replaced, {} unchanged ({} chunks written in {:.1} s, {:.0} chunks/s; {} mention links)",
            self.documents,
            self.inserted,
            self.replaced,
            self.unchanged,
            self.chunks,
            self.elapsed.as_secs_f64(),
            self.chunks_per_second(),
            self.links
        )
    }
}

/// A title as text: HTML entities decoded, as corpora exported from web pages write them ("Lilo &amp; Stitch",
/// "Eddie &quot;The Eagle&quot; Edwards"), so citations, names and answers read "Lilo & Stitch".
pub fn plain_title(raw: &str) -> String {
    html_escape::decode_html_entities(raw).into_owned()
}

/// Parses JSONL text; errors name the source and line.
pub fn parse_jsonl(source: &str, text: &str) -> anyhow::Result<Vec<Document>> {
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{source}:{}", i + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{}: not valid JSON", at()))?;
        let field = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let id = match value.get("id") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => bail!("{}: missing string field \"id\"", at()),
        };
        let text = field("text").with_context(|| format!("{}: missing string field \"text\"", at()))?;
        let title = field("title").map_or_else(|| id.clone(), |t| plain_title(&t));
        let metadata = match value.get("metadata") {
            None | Some(serde_json::Value::Null) => JsonMap::new(),
            Some(serde_json::Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(_) => bail!("{}: \"metadata\" must be an object", at()),
        };
        if id.trim().is_empty() {
            bail!("{}: \"id\" is empty", at());
        }
        let owner = match value.get("owner") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s.as_str()),
            Some(_) => bail!("{}: \"owner\" must be a tenant name", at()),
        };
        let groups: Vec<String> = match value.get("groups") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .with_context(|| format!("{}: \"groups\" must be an array of group names", at()))?,
            Some(_) => bail!("{}: \"groups\" must be an array of group names", at()),
        };
        let ownership = Ownership::new(owner, &groups).map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
        docs.push(Document { parts: Vec::new(), id, title, text, metadata, ownership });
    }
    Ok(docs)
}

/// A Markdown file as one document, rendered as a person reads it ([`markdown::render`]): its first level-one
/// heading is the title, else its first heading, else the file's stem; its sections are its parts.
pub fn parse_markdown(id: &str, stem: &str, text: String) -> Document {
    let rendered = markdown::render(&text);
    let title = rendered.title.unwrap_or_else(|| stem.to_string());
    let parts = rendered.sections.into_iter().map(|s| Part { section: s.heading, page: None, text: s.text }).collect();
    Document {
        id: id.to_string(),
        title,
        text: rendered.text,
        metadata: JsonMap::new(),
        ownership: Ownership::shared(),
        parts,
    }
}

/// Splits a document into token windows (see [`chunk::windows`]); every chunk carries the title, and the sections
/// and page it is in. A paged document's window never spans two pages, so a citation names the right one; a
/// document of sections is cut as one text (sections are often shorter than a window, and a window of a whole
/// section and its neighbours retrieves better: the Rust book's first line went 0.633 → 0.467 with one window per
/// section), each window naming the sections it spans ("Install / Configure").
pub fn chunk(doc: &Document, tokenizer: Option<&Tokenizer>, max_tokens: usize, overlap: usize) -> Vec<Chunk> {
    let pieces = if doc.parts.iter().any(|p| p.page.is_some()) {
        packed(&doc.parts, tokenizer, max_tokens, overlap)
    } else {
        let windows = chunk::windows(&doc.text, tokenizer, max_tokens, overlap);
        sectioned(&doc.text, &doc.parts, windows)
    };
    let readers = doc.ownership.readers();
    let mut hash_input = format!(
        "{max_tokens}/{overlap}\n{}\n{}\n{}",
        doc.title,
        doc.text,
        serde_json::to_string(&doc.metadata).unwrap_or_default()
    );
    // Only when owned, so a shared document ingested before owners existed is still unchanged.
    if !readers.is_empty() {
        hash_input.push_str(&format!("\nreaders {readers:?}"));
    }
    // Only with parts, so a document without them hashes as before; one whose parts change is written again.
    for part in &doc.parts {
        hash_input.push_str(&format!("\npart {:?} {:?} {}", part.section, part.page, part.text.len()));
    }
    let doc_hash = Uuid::new_v5(&HASH_NAMESPACE, hash_input.as_bytes()).to_string();
    let of = pieces.len() as u32;
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, (section, page, text))| {
            let mut metadata = doc.metadata.clone();
            if let Some(section) = section {
                metadata.insert("section".into(), section.into());
            }
            if let Some(page) = page {
                metadata.insert("page".into(), page.into());
            }
            Chunk {
                doc_id: doc.id.clone(),
                index: i as u32,
                of,
                title: doc.title.clone(),
                text,
                doc_hash: doc_hash.clone(),
                metadata,
                readers: readers.clone(),
            }
        })
        .collect()
}

/// The windows of `text`, each with the headings of the sections it overlaps, joined with " / " (`None` before
/// the first heading). `parts` are `text`'s sections in order, joined by blank lines.
fn sectioned(text: &str, parts: &[Part], windows: Vec<String>) -> Vec<Piece> {
    let mut ranges = Vec::with_capacity(parts.len());
    let mut at = 0;
    for part in parts {
        let start = text[at..].find(part.text.as_str()).map_or(at, |i| at + i);
        ranges.push((start, start + part.text.len(), part.section.as_deref()));
        at = start + part.text.len();
    }
    let mut cursor = 0;
    windows
        .into_iter()
        .map(|window| {
            let start = text[cursor..].find(window.as_str()).map_or(cursor, |i| cursor + i);
            let end = start + window.len();
            cursor = start;
            let mut names: Vec<&str> = Vec::new();
            for &(from, to, section) in &ranges {
                if let Some(name) = section.filter(|_| from < end && start < to)
                    && !names.contains(&name)
                {
                    names.push(name);
                }
            }
            let section = (!names.is_empty()).then(|| names.join(" / "));
            (section, None, window)
        })
        .collect()
}

/// A chunk's text with the section and page it is in.
type Piece = (Option<String>, Option<u32>, String);

/// Fewest tokens a part stands alone with; a shorter one is read with the part after it on its page.
const MIN_PART_TOKENS: usize = 16;

/// The parts as windows, each part its own, a part too short to stand alone joined to the next.
fn packed(parts: &[Part], tokenizer: Option<&Tokenizer>, max_tokens: usize, overlap: usize) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut carried = String::new();
    let parts: Vec<&Part> = parts.iter().filter(|p| !p.text.trim().is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        let text = if carried.is_empty() {
            part.text.trim().to_string()
        } else {
            format!("{}\n\n{}", std::mem::take(&mut carried), part.text.trim())
        };
        let next_on_page = parts.get(i + 1).is_some_and(|next| next.page == part.page);
        if next_on_page && chunk::count(&text, tokenizer) < MIN_PART_TOKENS {
            carried = text;
            continue;
        }
        let windows = chunk::windows(&text, tokenizer, max_tokens, overlap);
        pieces.extend(windows.into_iter().map(|w| (part.section.clone(), part.page, w)));
    }
    if pieces.is_empty() {
        pieces.push((None, None, String::new()));
    }
    pieces
}

/// Documents per write batch: their chunks are embedded together and upserted in one operation.
const BATCH_DOCS: usize = 256;

/// Ingests documents with a progress bar (hidden when `progress` is false), then flushes. Unchanged documents
/// (same content hash, chunking and embedder) are skipped; changed ones have all their chunks replaced.
pub async fn ingest(retriever: &Retriever, docs: Vec<Document>, progress: bool) -> anyhow::Result<IngestSummary> {
    let started = Instant::now();
    let bar = if progress { ProgressBar::new(docs.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} ingesting [{bar:40}] {pos}/{len} documents ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let embedder_id = retriever.embedder.as_ref().map(|e| e.id().to_string()).unwrap_or_default();
    let tokenizer = retriever.embedder.as_ref().and_then(|e| e.tokenizer()).and_then(|t| chunk::counting(&t));
    let (max_tokens, overlap) = (retriever.settings.chunk_tokens, retriever.settings.chunk_overlap_tokens);
    let mut summary = IngestSummary { documents: docs.len(), ..Default::default() };
    let mut seen = std::collections::HashSet::new();
    for batch in docs.chunks(BATCH_DOCS) {
        let mut chunks = Vec::new();
        for doc in batch {
            if !seen.insert(doc.id.as_str()) {
                bail!("document id {:?} appears twice in this ingestion", doc.id);
            }
            let doc_chunks = chunk(doc, tokenizer.as_ref(), max_tokens, overlap);
            let first = &doc_chunks[0];
            match retriever
                .index
                .doc_state(&doc.id)
                .await
                .with_context(|| format!("cannot read document {}", doc.id))?
            {
                Some(s) if s.doc_hash == first.doc_hash && s.of == first.of && s.embedder == embedder_id => {
                    summary.unchanged += 1;
                    continue;
                }
                Some(_) => summary.replaced += 1,
                None => summary.inserted += 1,
            }
            chunks.extend(doc_chunks);
        }
        summary.chunks += chunks.len();
        let points = retriever.points(chunks).await?;
        retriever.index.replace(points).await.context("cannot write to the index")?;
        bar.inc(batch.len() as u64);
    }
    retriever.index.flush().await?;
    if let Some(graph) = &retriever.graph {
        bar.set_message("linking mentions");
        let linked = links::link_documents(graph.as_ref(), &docs, retriever.min_mention_chars)
            .await
            .context("cannot record the documents' mention links in the graph")?;
        summary.links = linked.links;
    }
    bar.finish_and_clear();
    summary.elapsed = started.elapsed();
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
    fn a_title_s_html_entities_are_decoded() {
        let line = r#"{"id":"a","title":"Eddie &quot;The Eagle&quot; Edwards &amp; Co","text":"x"}"#;
        assert_eq!(parse_jsonl("d", line).unwrap()[0].title, "Eddie \"The Eagle\" Edwards & Co");
        assert_eq!(plain_title("AT&T"), "AT&T", "a bare ampersand is left alone");
    }

    #[test]
    fn a_line_names_its_owner_and_groups_and_the_command_line_cannot_give_it_another() {
        let text =
            "{\"id\":\"a\",\"text\":\"x\",\"owner\":\"ALPHA\",\"groups\":[\"finance\"]}\n{\"id\":\"b\",\"text\":\"y\"}";
        let mut docs = parse_jsonl("d", text).unwrap();
        assert_eq!(chunk(&docs[0], None, 20, 5)[0].readers, ["tenant:alpha", "group:finance"]);
        assert!(chunk(&docs[1], None, 20, 5)[0].readers.is_empty(), "no owner: shared");
        let shared_hash = chunk(&docs[1], None, 20, 5)[0].doc_hash.clone();
        owned_by(&mut docs[1..], &Ownership::new(Some("beta"), &[]).unwrap()).unwrap();
        assert_eq!(chunk(&docs[1], None, 20, 5)[0].readers, ["tenant:beta"]);
        assert_ne!(chunk(&docs[1], None, 20, 5)[0].doc_hash, shared_hash, "a new owner re-ingests the document");
        let err = owned_by(&mut docs, &Ownership::new(Some("beta"), &[]).unwrap()).unwrap_err().to_string();
        assert!(err.contains("\"a\"") && err.contains("alpha"), "{err}");
        let err = parse_jsonl("d", "{\"id\":\"a\",\"text\":\"x\",\"groups\":[\"g\"]}").unwrap_err().to_string();
        assert!(err.contains("d:1") && err.contains("owner"), "{err}");
    }

    #[test]
    fn demo_corpus_parses() {
        let docs = parse_jsonl("demo", DEMO_CORPUS).unwrap();
        assert!(docs.len() >= 24, "{}", docs.len());
    }

    #[test]
    fn a_chunk_is_in_one_section_and_page_and_names_them() {
        let doc = parse_markdown(
            "guide.md",
            "guide",
            "# Guide\n\n## Install\n\nRun the installer and follow every prompt until it says the install is done.\n\n\
             ## Configure\n\nThe retries option defaults to three attempts, each a second after the one before.\n"
                .into(),
        );
        let chunks = chunk(&doc, None, 30, 5);
        let placed: Vec<(Option<&str>, &str)> =
            chunks.iter().map(|c| (c.metadata.get("section").and_then(|v| v.as_str()), c.text.as_str())).collect();
        assert_eq!(placed.len(), 2, "{placed:?}");
        assert_eq!(placed[0].0, Some("Guide / Install / Configure"), "{placed:?}");
        assert_eq!(placed[1].0, Some("Configure"), "{placed:?}");
        assert_eq!(chunk(&doc, None, 200, 20)[0].metadata["section"], "Guide / Install / Configure");
        let paged = Document {
            parts: vec![
                Part { section: None, page: Some(1), text: "Short.".into() },
                Part { section: None, page: Some(2), text: "The door code is 4471.".into() },
            ],
            ..doc.clone()
        };
        let pages: Vec<Option<u64>> =
            chunk(&paged, None, 200, 20).iter().map(|c| c.metadata.get("page").and_then(|v| v.as_u64())).collect();
        assert_eq!(pages, [Some(1), Some(2)], "a page stands alone however short");
        assert_ne!(chunk(&paged, None, 200, 20)[0].doc_hash, chunks[0].doc_hash);
    }

    #[test]
    fn chunks_overlap_and_carry_the_title() {
        let doc = Document {
            parts: Vec::new(),
            id: "d".into(),
            title: "T".into(),
            text: (0..50).map(|i| i.to_string()).collect::<Vec<_>>().join(" "),
            metadata: JsonMap::new(),
            ownership: Ownership::shared(),
        };
        let chunks = chunk(&doc, None, 20, 5);
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| c.title == "T" && c.of == 3));
        assert!(chunks[1].text.starts_with("15 "));
        assert_eq!(chunks[0].doc_hash, chunks[2].doc_hash);
    }
}
