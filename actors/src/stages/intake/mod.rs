//! Intake: normalise the question, extract literals and candidate entities, score its complexity and route it,
//! then create the request's loop state (seed 001 §1, seed 003 §3).

use regex::Regex;
use sleuth_messages::{
    AskRequest, ComplexityScore, ErrorKind, ErrorResponse, QueryAnalysis, QueryType, ReplyTo, Route, SCHEMA_VERSION,
};
use std::sync::LazyLock;
use uuid::Uuid;

use crate::{
    machine::{self, NewRequest},
    runtime::{publish_all, NodeContext},
    store::StoreError,
    telemetry, text,
};

static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""([^"]{1,200})"|“([^”]{1,200})”|`([^`]{1,200})`"#).expect("static regex"));

/// Complexity keywords (seed 001 §1), a first multilingual set; the full router arrives with the intake issue.
const COMPLEXITY_KEYWORDS: &[&str] = &[
    "why", "how", "compare", "comparison", "difference", "differences", "versus", "vs", "advantages",
    "disadvantages", "analyse", "analyze", "evaluate", "explain", "steps", "process", "summarize", "overview",
    "relationship", "related", "pourquoi", "comparer", "compare", "avantages", "inconvenients", "processus",
    "étapes", "résumer", "warum", "vergleichen", "por qué", "comparar", "ventajas", "proceso",
];

/// Relation nouns that make a question multi-hop: "X's mother", "the director of X".
pub const RELATION_NOUNS: &[&str] = &[
    "mother", "father", "parent", "son", "daughter", "wife", "husband", "spouse", "brother", "sister", "child",
    "director", "composer", "author", "creator", "founder", "producer", "performer", "writer", "grandfather",
    "grandmother", "uncle", "aunt", "successor", "predecessor", "studio", "captain", "mentor",
];

/// True for a relation noun, singular or plural ("director", "directors").
pub fn is_relation_noun(word: &str) -> bool {
    RELATION_NOUNS.contains(&word) || word.strip_suffix('s').is_some_and(|w| RELATION_NOUNS.contains(&w))
}

/// Validates a request and returns its normalised query.
pub fn validate(request: &AskRequest, max_bytes: usize) -> Result<String, ErrorResponse> {
    if let Some(v) = request.schema_version
        && v != SCHEMA_VERSION
    {
        return Err(ErrorResponse::new(ErrorKind::UnsupportedVersion, format!("unsupported schema version {v}")));
    }
    if request.query.len() > max_bytes {
        return Err(ErrorResponse::new(
            ErrorKind::InvalidInput,
            format!("query is {} bytes, the limit is {max_bytes}", request.query.len()),
        ));
    }
    let normalized = normalize(&request.query);
    if normalized.is_empty() {
        return Err(ErrorResponse::new(ErrorKind::InvalidInput, "query is empty"));
    }
    Ok(normalized)
}

/// Collapses white space and removes control characters.
pub fn normalize(query: &str) -> String {
    query
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn classify(normalized: &str, entities: usize) -> (QueryType, f32) {
    let lower = normalized.to_lowercase();
    let words = text::tokens(&lower);
    let has = |w: &str| words.iter().any(|t| t == w);
    if has("compare") || has("versus") || has("vs") || lower.contains("difference between") || has("comparer")
        || (entities >= 2 && (has("both") || has("older") || has("younger") || has("first") || has("earlier") || has("later")))
    {
        (QueryType::Comparative, 0.8)
    } else if lower.contains("related") || lower.contains("relationship") || lower.contains("connected") {
        (QueryType::Relational, 0.8)
    } else if has("why") || has("explain") || has("analyse") || has("analyze") || has("pourquoi") {
        (QueryType::Analytical, 0.7)
    } else if lower.starts_with("how to") || lower.starts_with("how do") || has("steps") {
        (QueryType::Procedural, 0.7)
    } else if has("overview") || has("summarize") || lower.starts_with("tell me about") {
        (QueryType::Exploratory, 0.7)
    } else if words.first().is_some_and(|w| ["who", "what", "when", "where", "which", "is", "did", "does", "how"].contains(&w.as_str())) {
        (QueryType::Factual, 0.75)
    } else {
        (QueryType::Unknown, 0.4)
    }
}

/// Seed 001's complexity formula and routing thresholds (0.35 / 0.55).
fn complexity(query_type: QueryType, confidence: f32, entities: usize, subquestions: usize, keywords: usize) -> (ComplexityScore, Route) {
    let qt = match query_type {
        QueryType::Factual | QueryType::Procedural => 0.0,
        QueryType::Relational | QueryType::Exploratory | QueryType::Unknown => 0.5,
        QueryType::Analytical | QueryType::Comparative => 1.0,
    };
    let entity_count = (entities as f32 / 4.0).min(1.0);
    let subquestion_count = ((subquestions.max(1) - 1) as f32 / 3.0).min(1.0);
    let keyword_matches = (keywords as f32 / 4.0).min(1.0);
    let low_confidence = ((0.7 - confidence) / 0.5).clamp(0.0, 1.0);
    let score = 0.25 * qt + 0.20 * entity_count + 0.20 * subquestion_count + 0.20 * keyword_matches + 0.15 * low_confidence;
    let route = if score < 0.35 {
        Route::Fast
    } else if score < 0.55 {
        Route::Enhanced
    } else {
        Route::Agent
    };
    let reason = format!("{query_type:?} with {entities} entities and {keywords} complexity keywords scores {score:.3}");
    (ComplexityScore { score, query_type: qt, entity_count, subquestion_count, keyword_matches, low_confidence, reason }, route)
}

/// Understands the question deterministically: literals, candidate entities, type, complexity and route.
pub fn analyze(normalized: &str) -> QueryAnalysis {
    let literal_terms: Vec<String> = QUOTED
        .captures_iter(normalized)
        .filter_map(|c| c.iter().skip(1).flatten().next().map(|m| m.as_str().trim().to_string()))
        .filter(|t| !t.is_empty())
        .collect();
    let mut entities = text::name_spans(normalized);
    for literal in &literal_terms {
        entities.retain(|e| !literal.contains(e.as_str()));
    }
    let keywords = text::content_words(normalized);
    let (query_type, confidence) = classify(normalized, entities.len());
    let lower = normalized.to_lowercase();
    let keyword_hits = COMPLEXITY_KEYWORDS.iter().filter(|k| text::mentions(&lower, k)).count();
    let subquestions = vec![normalized.to_string()];
    let (mut complexity, mut route) = complexity(query_type, confidence, entities.len(), subquestions.len(), keyword_hits);
    // "Where was the director of film X born?" needs X, then the document X names as its director: at least
    // the standard route's turns (search, expand X's links, fetch the bridge), whatever the score says.
    if route == Route::Fast && keywords.iter().any(|k| is_relation_noun(k)) {
        route = Route::Enhanced;
        complexity.reason = format!("{}; asks for a relation of a named entity: multi-hop, at least enhanced", complexity.reason);
    }
    // "Which anime is Luffy in?" resolves Luffy, traverses the graph, then fetches what it reached: three steps.
    if route == Route::Fast && !entities.is_empty() && keywords.iter().any(|k| super::resolve::type_word(k).is_some()) {
        route = Route::Enhanced;
        complexity.reason = format!("{}; asks for a type of entity related to a named one: at least enhanced", complexity.reason);
    }
    QueryAnalysis {
        normalized: normalized.to_string(),
        rewritten: normalized.trim_end_matches(['?', '.', '!']).to_string(),
        query_type,
        confidence,
        entities,
        literal_terms,
        keywords,
        subquestions,
        complexity,
        route,
    }
}

/// Accepts a question: validates it, creates its loop state and publishes the first work. Returns its id.
pub async fn submit(
    ctx: &NodeContext,
    request: AskRequest,
    reply: Option<ReplyTo>,
    traceparent: Option<String>,
) -> Result<Uuid, ErrorResponse> {
    let normalized = validate(&request, ctx.config.loop_.max_query_bytes)?;
    let analysis = analyze(&normalized);
    let request_id = request.request_id.unwrap_or_else(Uuid::now_v7);
    let now_ms = telemetry::now_ms();
    let timeout = request.timeout_ms.unwrap_or(ctx.config.loop_.timeout_ms).clamp(1, ctx.config.loop_.max_timeout_ms);
    let caps = machine::caps_for(&ctx.config.loop_, analysis.route, request.max_turns);
    let state = machine::new_state(NewRequest {
        request_id,
        request,
        analysis,
        caps,
        now_ms,
        deadline_ms: now_ms + timeout,
        reply,
        traceparent: Some(traceparent.unwrap_or_else(telemetry::new_traceparent)),
    });
    match ctx.store.create(&state).await {
        Ok(_) => {}
        Err(StoreError::AlreadyExists) => {
            // A client re-sent the same request id: the request is already under way, publish what it needs.
            let existing = ctx.store.load(request_id).await.ok().flatten();
            if let Some((existing, _)) = existing {
                publish_all(ctx, &existing).await.map_err(|e| {
                    ErrorResponse::new(ErrorKind::Unavailable, format!("cannot publish work: {e}")).for_request(request_id)
                })?;
            }
            return Ok(request_id);
        }
        Err(e) => {
            return Err(ErrorResponse::new(ErrorKind::Unavailable, format!("cannot store loop state: {e}")).for_request(request_id));
        }
    }
    tracing::info!(request_id = %request_id, route = ?state.analysis.route, max_turns = state.caps.max_turns, "request accepted");
    publish_all(ctx, &state).await.map_err(|e| {
        ErrorResponse::new(ErrorKind::Unavailable, format!("cannot publish work: {e}")).for_request(request_id)
    })?;
    Ok(request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_extracts_entities_literals_and_type() {
        let cases: &[(&str, &[&str], &[&str], QueryType)] = &[
            ("Which anime is Luffy in?", &["Luffy"], &[], QueryType::Factual),
            ("How is Luffy related to Nami?", &["Luffy", "Nami"], &[], QueryType::Relational),
            ("Compare Naruto and Bleach", &["Naruto", "Bleach"], &[], QueryType::Comparative),
            (r#"Where does "Gum-Gum Pistol" appear?"#, &[], &["Gum-Gum Pistol"], QueryType::Factual),
            ("Why did Ace leave the crew?", &["Ace"], &[], QueryType::Analytical),
        ];
        for (query, entities, literals, query_type) in cases {
            let a = analyze(&normalize(query));
            assert_eq!(a.entities, entities.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{query}");
            assert_eq!(a.literal_terms, literals.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{query}");
            assert_eq!(a.query_type, *query_type, "{query}");
        }
    }

    #[test]
    fn seed_001_worked_example_routes_to_the_agent() {
        // 0.25*1.0 + 0.20*0.5 + 0.20*0.67 + 0.20*1.0 + 0.15*0.0 = 0.684 with 3 sub-questions (seed 001).
        let (score, route) = complexity(QueryType::Comparative, 0.7, 2, 3, 4);
        assert!((score.score - 0.684).abs() < 0.001, "{}", score.score);
        assert_eq!(route, Route::Agent);
    }

    #[test]
    fn empty_and_oversized_queries_are_invalid_input() {
        let err = validate(&AskRequest::new("  \n\t "), 100).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        let err = validate(&AskRequest::new("x".repeat(101)), 100).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
    }

    #[test]
    fn normalize_collapses_space_and_control_characters() {
        assert_eq!(normalize("  Who\u{0} is\n\n Luffy? "), "Who is Luffy?");
    }
}
