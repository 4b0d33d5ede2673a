//! Literal constraints (seed 003): quoted strings, error names and codes, identifiers and stack-trace frames that
//! must be matched exactly. They become `must_preserve_terms`, force a BM25-only search with exact matches first,
//! and the grader checks that they really occur in the evidence.

use regex::Regex;
use std::sync::LazyLock;

/// Index of the commit-hash pattern in [`LITERALS`], whose matches must also be 7 to 40 characters long.
const HEX: usize = 6;

/// In order of precedence; a later match inside an earlier one is not repeated.
static LITERALS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // Quoted text: "…", “…”, `…`.
        r#""([^"]{1,200})"|“([^”]{1,200})”|`([^`]{1,200})`"#,
        // Stack frames: com.acme.Foo.bar(Foo.java:42), src/main.rs:10:5, parser.py:88.
        r"([\w$.]+\([\w.-]+:\d+\))",
        r"((?:[\w.-]+/)*[\w.-]+\.(?:rs|py|java|kt|js|ts|go|c|cc|cpp|h|rb|php|cs|swift):\d+(?::\d+)?)",
        // Error and exception names with their message up to the end of the clause: "TypeError: x is undefined".
        r"(\b[A-Z]\w*(?:Error|Exception|Panic)\b(?::[^;?!\n]{1,120})?)",
        // Error codes: ERR_CONNECTION_REFUSED, ENOENT, ORA-00942, E0308, HTTP 503.
        r"(\bERR_[A-Z0-9_]+\b|\bE[A-Z]{3,}\b|\b[A-Z]{2,5}-\d{3,6}\b|\bE\d{4}\b|\bHTTP \d{3}\b)",
        // Identifiers: UUIDs, commit hashes (7–40 hex with a digit and a letter), ticket keys like JIRA-123.
        r"(\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)",
        r"(\b(?:[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*)\b)",
        r"(\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b)",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("static regex"))
    .collect()
});

/// The literals of `question`, in order of appearance, without repeats.
pub fn literal_terms(question: &str) -> Vec<String> {
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    for (i, re) in LITERALS.iter().enumerate() {
        for caps in re.captures_iter(question) {
            let Some(m) = caps.iter().skip(1).flatten().next() else { continue };
            let term = m.as_str().trim().trim_end_matches(['.', ',']);
            if term.is_empty() || (i == HEX && !(7..=40).contains(&term.len())) {
                continue;
            }
            let (start, end) = (m.start(), m.start() + term.len());
            if found.iter().any(|(s, e, _)| start < *e && *s < end) {
                continue;
            }
            found.push((start, end, term.to_string()));
        }
    }
    found.sort_by_key(|(start, _, _)| *start);
    let mut terms: Vec<String> = Vec::new();
    for (_, _, term) in found {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_errors_ids_and_stack_frames_are_literals() {
        let cases: &[(&str, &[&str])] = &[
            (r#"Where does "Gum-Gum Pistol" appear?"#, &["Gum-Gum Pistol"]),
            ("Why does `cargo build` fail with E0308?", &["cargo build", "E0308"]),
            (
                "What causes TypeError: x is undefined in the dashboard?",
                &["TypeError: x is undefined in the dashboard"],
            ),
            (
                "Fix NullPointerException at com.acme.Foo.bar(Foo.java:42)",
                &["NullPointerException", "com.acme.Foo.bar(Foo.java:42)"],
            ),
            ("panic at src/main.rs:10:5 after upgrade", &["src/main.rs:10:5"]),
            (
                "connection fails with ECONNREFUSED and ERR_CONNECTION_REFUSED",
                &["ECONNREFUSED", "ERR_CONNECTION_REFUSED"],
            ),
            ("What changed in commit 3f2a9c1 for JIRA-4521?", &["3f2a9c1", "JIRA-4521"]),
            ("Status of request 0192f7a4-5b6c-7d8e-9f00-112233445566?", &["0192f7a4-5b6c-7d8e-9f00-112233445566"]),
            ("ORA-00942 table or view does not exist", &["ORA-00942"]),
            ("Who is Monkey D. Luffy?", &[]),
            ("Which film came out first, 3 Dots or Dying God?", &[]),
            ("When did Lothair II's mother die in 869?", &[]),
        ];
        for (q, want) in cases {
            assert_eq!(literal_terms(q), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{q}");
        }
    }
}
