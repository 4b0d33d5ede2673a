//! Intake's analysis: resolve the question against its conversation, extract literals and candidate entities,
//! classify it, score its complexity and route it. Everything here is deterministic, so a routing decision can be
//! replayed and explained from its `ComplexityScore`; the LLM rewriter (sleuth-actors' `stages/intake/
//! llm_rewrite.rs`, used only when one is configured) falls back on it. Accepting a request (storing its state,
//! publishing its first work) is I/O and lives in sleuth-actors' `runtime/intake.rs`.

pub mod chain;
mod classify;
mod complexity;
pub mod history;
mod literals;
mod rewrite;

use sleuth_messages::{
    AskRequest, ClarifyingQuestion, ConversationTurn, ErrorKind, ErrorResponse, MAX_HISTORY_TURN_BYTES,
    MAX_HISTORY_TURNS, QueryAnalysis, QueryType, Route, SCHEMA_VERSION, conversation::valid_conversation_id,
};

use crate::{entity_types::EntityTypes, text};

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
    if let Some(id) = &request.conversation_id
        && !valid_conversation_id(id)
    {
        return Err(ErrorResponse::new(
            ErrorKind::InvalidInput,
            "conversation_id must be 1 to 128 characters of letters, digits, '_', '=', '.' and '-'",
        ));
    }
    if request.history.len() > MAX_HISTORY_TURNS {
        return Err(ErrorResponse::new(
            ErrorKind::InvalidInput,
            format!(
                "history has {} turns, the limit is {MAX_HISTORY_TURNS}: send the most recent ones",
                request.history.len()
            ),
        ));
    }
    if let Some((i, turn)) = request.history.iter().enumerate().find(|(_, t)| t.content.len() > MAX_HISTORY_TURN_BYTES)
    {
        return Err(ErrorResponse::new(
            ErrorKind::InvalidInput,
            format!("history[{i}] is {} bytes, the limit is {MAX_HISTORY_TURN_BYTES}", turn.content.len()),
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

/// Understands a question with no conversation behind it. See [`analyze_in`].
pub fn analyze(normalized: &str, types: &EntityTypes) -> QueryAnalysis {
    analyze_in(normalized, None, types)
}

/// Understands the question deterministically, after the conversation's `previous` turn: resolved follow-up,
/// literals, candidate entities, type, sub-questions, complexity, route and retriever weights. `types` are the
/// graph's entity types, which a question may ask for ("Which anime …").
pub fn analyze_in(normalized: &str, previous: Option<&ConversationTurn>, types: &EntityTypes) -> QueryAnalysis {
    let (question, resolved) = rewrite::resolve(normalized, previous);
    let answers_clarification = previous.is_some_and(|p| !p.clarifying_questions.is_empty());
    understand(normalized, &question, resolved, (answers_clarification, None), types)
}

/// Analyses `question`, the user's `normalized` message once resolved against the conversation. `subquestions`
/// are an LLM rewriter's decomposition, used instead of the deterministic one.
pub fn understand(
    normalized: &str,
    question: &str,
    resolved: Vec<String>,
    (answers_clarification, subquestions): (bool, Option<Vec<String>>),
    types: &EntityTypes,
) -> QueryAnalysis {
    let question = question.to_string();
    let literal_terms = literals::literal_terms(&question);
    let mut entities = text::name_spans(&question);
    for literal in &literal_terms {
        entities.retain(|e| !literal.contains(e.as_str()));
    }
    let keywords = text::content_words(&question);
    let asks_type_of_named = !entities.is_empty() && keywords.iter().any(|k| types.word(k).is_some());
    let (query_type, confidence) = classify::classify(&question, entities.len(), asks_type_of_named);
    let subquestions = subquestions.unwrap_or_else(|| rewrite::decompose(&question, query_type, &entities));
    let keyword_hits = complexity::keyword_matches(&question);
    let mut score = complexity::score(complexity::Factors {
        query_type,
        confidence,
        entities: entities.len(),
        subquestions: subquestions.len(),
        keywords: keyword_hits,
    });
    let mut route = complexity::route_for(score.score);
    let meta_question = complexity::is_meta_question(&question);
    let mut clarifying_questions = Vec::new();
    let names_something = !entities.is_empty() || !literal_terms.is_empty();
    let links = chain::links(&question);
    if meta_question {
        complexity::raise(&mut score, complexity::META_FLOOR, "database_meta", "a question about the database itself");
        route = Route::Agent;
    } else if let Some(why) = complexity::ambiguity(&question, names_something).filter(|_| !answers_clarification) {
        complexity::raise(&mut score, complexity::AMBIGUOUS_FLOOR, "ambiguous", why);
        route = Route::Clarify;
        clarifying_questions = clarify(&question, why);
    } else if route != Route::Agent && links > 0 {
        // "Where was the director of film X born?" needs X, then the document X names as its director: a
        // second pass at least (search, expand X's links, fetch the bridge). A chain of two links or more
        // needs more turns than the enhanced route's.
        score.overrides.push("multi_hop_relation".into());
        score.reason = format!("{}; chains {links} description(s) of named entities: multi-hop", score.reason);
        route = if links > 1 { Route::Agent } else { Route::Enhanced };
    } else if route == Route::Fast && !literal_terms.is_empty() {
        // Literals must be found verbatim, and only the grader checks that they were (seed 003).
        score.overrides.push("literal_constraints".into());
        score.reason =
            format!("{}; literal constraints must be verified in the evidence: at least enhanced", score.reason);
        route = Route::Enhanced;
    } else if route == Route::Fast
        && (asks_type_of_named || (query_type == QueryType::Relational && entities.len() >= 2))
    {
        // "Which anime is Luffy in?" resolves Luffy, traverses the graph, then fetches what it reached; "How is
        // Luffy related to Nami?" resolves both and asks for the path.
        score.overrides.push("entity_graph".into());
        score.reason = format!("{}; relates named entities through the graph: at least enhanced", score.reason);
        route = Route::Enhanced;
    }
    QueryAnalysis {
        normalized: normalized.to_string(),
        rewritten: question.trim_end_matches(['?', '.', '!']).to_string(),
        query_type,
        confidence,
        weights: classify::weights(query_type, confidence, entities.len()),
        entities,
        literal_terms,
        keywords,
        subquestions,
        complexity: score,
        route,
        meta_question,
        clarifying_questions,
        resolved,
        chain_links: Some(links as u32),
    }
}

/// The questions to ask back about an ambiguous question: one or two, each with its reason.
fn clarify(question: &str, why: &str) -> Vec<ClarifyingQuestion> {
    let ask =
        |q: &str, blocking: bool| ClarifyingQuestion { question: q.to_string(), reason: why.to_string(), blocking };
    match why {
        "several question marks" => vec![ask("Which single question should I answer first?", true)],
        "several alternatives" => {
            vec![ask("Which of the alternatives do you mean?", true), ask("Or should I compare all of them?", false)]
        }
        _ => vec![
            ask(
                &format!("\"{question}\" names nothing I can look up: which person, work or document is it about?"),
                true,
            ),
            ask("What would you like to know about it?", false),
        ],
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    /// Analyses `normalized` with the demo graph's entity types.
    fn analyze(normalized: &str) -> QueryAnalysis {
        super::analyze(normalized, &crate::fixtures::demo_types())
    }

    #[test]
    fn analysis_extracts_entities_literals_and_type() {
        let cases: &[(&str, &[&str], &[&str], QueryType)] = &[
            ("Which anime is Luffy in?", &["Luffy"], &[], QueryType::Relational),
            ("How is Luffy related to Nami?", &["Luffy", "Nami"], &[], QueryType::Relational),
            ("Compare Naruto and Bleach", &["Naruto", "Bleach"], &[], QueryType::Comparative),
            (r#"Where does "Gum-Gum Pistol" appear?"#, &[], &["Gum-Gum Pistol"], QueryType::Factual),
            ("Qui est Nami ?", &["Nami"], &[], QueryType::Factual),
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
    fn seed_001_worked_example_is_analysed_to_0_684_on_the_agent_path() {
        let a = analyze(&normalize("Compare les avantages et inconvenients du processus X par rapport a Y"));
        assert_eq!(a.query_type, QueryType::Comparative);
        assert_eq!(a.entities, vec!["X".to_string(), "Y".to_string()]);
        assert_eq!(a.subquestions.len(), 3, "{:?}", a.subquestions);
        assert_eq!(a.complexity.keyword_matches, 1.0);
        assert_eq!(a.complexity.low_confidence, 0.0);
        // Seed 001 rounds 2/3 to 0.67 and writes 0.684; exactly it is 0.6833.
        assert!((a.complexity.score - 0.684).abs() < 0.001, "{}", a.complexity.score);
        assert_eq!(a.route, Route::Agent);
    }

    #[test]
    fn routes_and_overrides() {
        // (question, route, override applied)
        let cases: &[(&str, Route, Option<&str>)] = &[
            ("Who is Nami?", Route::Fast, None),
            ("Where was the director of film The Straw Hat born?", Route::Enhanced, Some("multi_hop_relation")),
            ("Which anime is Luffy in?", Route::Enhanced, Some("entity_graph")),
            ("How is Luffy related to Nami?", Route::Enhanced, Some("entity_graph")),
            ("Which film came out first, 3 Dots or Dying God?", Route::Enhanced, None),
            (r#"Where does "Gum-Gum Pistol" appear?"#, Route::Enhanced, Some("literal_constraints")),
            (
                "Why and how did the Straw Hat Pirates, the Marines and the Revolutionary Army compare?",
                Route::Agent,
                None,
            ),
            ("How many documents are in the database?", Route::Agent, Some("database_meta")),
            ("Combien de documents ?", Route::Agent, Some("database_meta")),
            ("Wie viele Dokumente gibt es?", Route::Agent, Some("database_meta")),
            ("his age?", Route::Clarify, Some("ambiguous")),
            ("what about it??", Route::Clarify, Some("ambiguous")),
            ("Is it the red one or the blue one or the green one?", Route::Clarify, Some("ambiguous")),
        ];
        for (q, route, applied) in cases {
            let a = analyze(&normalize(q));
            assert_eq!(a.route, *route, "{q}: {}", a.complexity.reason);
            match applied {
                Some(name) => {
                    assert!(a.complexity.overrides.iter().any(|o| o == name), "{q}: {:?}", a.complexity.overrides)
                }
                None => assert!(a.complexity.overrides.is_empty(), "{q}: {:?}", a.complexity.overrides),
            }
        }
        let meta = analyze("How many documents are in the database?");
        assert!(meta.meta_question && meta.complexity.score >= 0.75);
        let ambiguous = analyze("his age?");
        assert!(ambiguous.complexity.score >= 0.65);
        assert!((1..=3).contains(&ambiguous.clarifying_questions.len()));
        assert!(ambiguous.clarifying_questions.iter().any(|q| q.blocking && !q.reason.is_empty()));
    }

    #[test]
    fn literals_become_constraints_and_are_not_entities() {
        let a = analyze(&normalize("Why does `cargo build` fail with TypeError: x is undefined?"));
        assert_eq!(a.literal_terms, vec!["cargo build".to_string(), "TypeError: x is undefined".to_string()]);
        assert!(a.entities.iter().all(|e| !e.contains("TypeError")), "{:?}", a.entities);
    }

    #[test]
    fn a_follow_up_is_resolved_and_an_answer_to_a_clarification_is_not_clarified_again() {
        let previous = ConversationTurn {
            request_id: Uuid::nil(),
            query: "When did Lothair II die?".into(),
            rewritten: "When did Lothair II die".into(),
            entities: vec!["Lothair II".into()],
            clarifying_questions: Vec::new(),
            at_ms: 0,
            answer: None,
        };
        let a = analyze_in("and his mother?", Some(&previous), &crate::fixtures::demo_types());
        assert_eq!(a.rewritten, "When did Lothair II's mother die");
        assert_eq!(a.entities, vec!["Lothair II".to_string()]);
        assert_eq!(a.route, Route::Enhanced, "a relation of a named entity");
        assert!(!a.resolved.is_empty());

        let asked = ConversationTurn {
            query: "his age?".into(),
            rewritten: "his age".into(),
            entities: Vec::new(),
            clarifying_questions: analyze("his age?").clarifying_questions,
            ..previous
        };
        let a = analyze_in("Nami", Some(&asked), &crate::fixtures::demo_types());
        assert_eq!(a.rewritten, "Nami's age");
        assert_ne!(a.route, Route::Clarify);
    }

    #[test]
    fn empty_and_oversized_queries_are_invalid_input() {
        let err = validate(&AskRequest::new("  \n\t "), 100).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        let err = validate(&AskRequest::new("x".repeat(101)), 100).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
    }

    #[test]
    fn a_history_too_long_or_with_a_turn_too_large_is_invalid_input() {
        use sleuth_messages::PriorTurn;
        let mut request = AskRequest::new("and his mother?");
        request.history = vec![PriorTurn::user("Who is Luffy?"); MAX_HISTORY_TURNS];
        assert!(validate(&request, 100).is_ok());
        request.history.push(PriorTurn::assistant("Luffy"));
        assert!(validate(&request, 100).unwrap_err().message.contains("history has 33 turns"));
        request.history = vec![PriorTurn::assistant("x".repeat(MAX_HISTORY_TURN_BYTES + 1))];
        assert!(validate(&request, 100).unwrap_err().message.contains("history[0]"));
    }

    #[test]
    fn normalize_collapses_space_and_control_characters() {
        assert_eq!(normalize("  Who\u{0} is\n\n Luffy? "), "Who is Luffy?");
    }
}
