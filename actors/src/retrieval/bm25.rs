//! [`Bm25`]: the sparse lane's term weights, computed client-side with qdrant-edge's BM25 model for both backends,
//! so a Qdrant server and the embedded engine index and query the same terms. IDF is applied by the engine.
//! Identifiers (`max_body_size`, `--log-level`, `MaxRetries`, `Cargo.lock`) are matched whole as well as in parts
//! ([`identifier_terms`]), the same way on both sides.

use std::sync::LazyLock;

use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use regex::Regex;

use crate::index::SparseVector;

pub struct Bm25(EdgeBm25);

impl Bm25 {
    pub fn english() -> anyhow::Result<Bm25> {
        EdgeBm25::new(EdgeBm25Config { language: Some("english".into()), ..Default::default() })
            .map(Bm25)
            .map_err(|e| anyhow::anyhow!("cannot build the BM25 model: {e}"))
    }

    pub fn query(&self, text: &str) -> SparseVector {
        let v = self.0.embed_query(&with_identifiers(text));
        SparseVector { indices: v.indices, values: v.values }
    }

    pub fn document(&self, text: &str) -> SparseVector {
        let v = self.0.embed_document(&with_identifiers(text));
        SparseVector { indices: v.indices, values: v.values }
    }
}

/// A word joined by `_`, `-`, `.` or `::`, or written in camel case, with at least one letter.
static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9]+(?:(?:[_.\-]|::)+[A-Za-z0-9]+)+|[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*").expect("static regex")
});
static CAMEL_PART: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Z]+(?:[a-z0-9]+)?|[a-z0-9]+").expect("static regex"));

/// The extra terms an identifier is indexed and searched under: its letters and digits run together (one term,
/// so the whole identifier matches whole) and, for camel case, its parts (which the tokenizer would not split).
/// Separated identifiers are already split into their parts by the tokenizer.
pub fn identifier_terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    for m in IDENTIFIER.find_iter(text) {
        let id = m.as_str();
        if !id.chars().any(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        terms.push(id.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_lowercase());
        if id.chars().any(|c| c.is_ascii_uppercase()) {
            for part in id.split(|c: char| !c.is_ascii_alphanumeric()) {
                let parts: Vec<&str> = CAMEL_PART.find_iter(part).map(|p| p.as_str()).collect();
                if parts.len() > 1 {
                    terms.extend(parts.iter().map(|p| p.to_lowercase()));
                }
            }
        }
    }
    terms
}

fn with_identifiers(text: &str) -> String {
    let terms = identifier_terms(text);
    if terms.is_empty() { text.to_string() } else { format!("{text} {}", terms.join(" ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_terms_whole_and_in_parts() {
        assert_eq!(identifier_terms("set max_body_size"), ["maxbodysize"]);
        assert_eq!(identifier_terms("pass --test-threads=1"), ["testthreads"]);
        assert_eq!(identifier_terms("MaxRetries is 3"), ["maxretries", "max", "retries"]);
        assert_eq!(identifier_terms("Cargo.lock and std::io::Result"), ["cargolock", "stdioresult"]);
        assert!(identifier_terms("In 1990-1995 the 3.5 inch disk.").is_empty(), "numbers are not identifiers");
        assert!(identifier_terms("plain words only").is_empty());
    }

    #[test]
    fn a_query_finds_an_identifier_whole_and_by_its_parts() {
        let bm25 = Bm25::english().unwrap();
        let doc = bm25.document("The MaxRetries option, default 3.");
        for query in ["MaxRetries", "max retries"] {
            let q = bm25.query(query);
            let shared = q.indices.iter().filter(|i| doc.indices.contains(i)).count();
            assert!(shared >= 1, "{query}: {:?} against {:?}", q.indices, doc.indices);
        }
    }
}
