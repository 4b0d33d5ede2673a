//! Intake: resolve the question against its conversation, extract literals and candidate entities, classify
//! it, score its complexity and route it, then create the request's loop state (seed 001 §1, seed 003 §3).
//! Everything here is deterministic, so a routing decision can be replayed and explained from its
//! `ComplexityScore`.

pub mod chain;
mod classify;
mod complexity;
mod literals;
mod llm_rewrite;
mod rewrite;

use sleuth_messages::{
    AskRequest, ClarifyingQuestion, ConversationTurn, ErrorKind, ErrorResponse, QueryAnalysis, QueryType, ReplyTo,
    Route, SCHEMA_VERSION, conversation::valid_conversation_id,
};
use tracing::Instrument;
use uuid::Uuid;

use crate::{
    entity_types::EntityTypes,
    machine::{self, NewRequest},
    runtime::{NodeContext, publish_all},
    store::StoreError,
    telemetry::{self, Scope, TraceHeaders, context, scope},
    text,
};

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
fn understand(
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
    }
}

/// Publishes what a request's state calls for; for an existing request the bus de-duplicates what was already sent.
/// Only a request still waiting for its first plan is intake's to publish: later phases were published by the
/// stages that reached them.
async fn publish_state(
    ctx: &NodeContext,
    state: &sleuth_messages::LoopState,
    trace: &TraceHeaders,
) -> Result<(), ErrorResponse> {
    if !(state.phase == sleuth_messages::Phase::Planning && state.turn == 1) {
        return Ok(());
    }
    // The state is stored: giving up now would strand it. A bus that is briefly away (a NATS server restarting)
    // is waited for, with backoff, for a bounded time within the request's deadline; the messages carry ids, so
    // a publish that did go through before its ack was lost is not doubled.
    let give_up_ms = telemetry::now_ms().saturating_add(PUBLISH_PATIENCE_MS).min(state.deadline_ms);
    let mut attempt = 0;
    loop {
        match publish_all(ctx, state, trace, false).await {
            Ok(()) => return Ok(()),
            Err(e) if telemetry::now_ms() >= give_up_ms => {
                return Err(ErrorResponse::new(ErrorKind::Unavailable, format!("cannot publish work: {e}"))
                    .for_request(state.request_id));
            }
            Err(e) => {
                let wait = crate::guard::backoff(attempt, 100, 2_000);
                tracing::warn!(request_id = %state.request_id, attempt, error = %e, wait_ms = wait.as_millis() as u64, "cannot publish the first work yet; retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        }
    }
}

/// How long intake keeps trying to publish a new request's first work before it answers with an error.
const PUBLISH_PATIENCE_MS: u64 = 15_000;

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

/// Accepts a question: validates it, creates its loop state and publishes the first work. Returns its id.
///
/// `trace` is the context the request arrived with (a client's `sleuth.ask` span, or any upstream service's):
/// the `intake` span joins it. A request that arrived without one gets a root made up here, which the process
/// that ends the request records.
pub async fn submit(
    ctx: &NodeContext,
    request: AskRequest,
    reply: Option<ReplyTo>,
    trace: &TraceHeaders,
) -> Result<Uuid, ErrorResponse> {
    let normalized = validate(&request, ctx.config.loop_.max_query_bytes)?;
    let request_id = request.request_id.unwrap_or_else(Uuid::now_v7);
    let records_root_span = trace.is_empty();
    let root = if records_root_span { telemetry::new_root() } else { trace.clone() };
    let span = tracing::info_span!(
        "stage",
        otel.name = "intake",
        otel.kind = "server",
        sleuth.request_id = %request_id,
        sleuth.turn = 0,
        sleuth.stage = "intake",
        sleuth.route = tracing::field::Empty,
        messaging.system = ctx.messaging_system(),
        messaging.operation.type = "process",
        messaging.destination.name = %ctx.subjects.ask(),
    );
    context::set_parent(&span, &root);
    let scope = Scope { request_id, turn: 0, stage: "intake" };
    let accepted = accept(ctx, request, normalized, request_id, reply, root, records_root_span);
    let accepted = scope::within(scope, accepted.instrument(span.clone())).await;
    if let Err(e) = &accepted {
        telemetry::record_error(&span, &e.message);
    }
    accepted
}

async fn accept(
    ctx: &NodeContext,
    request: AskRequest,
    normalized: String,
    request_id: Uuid,
    reply: Option<ReplyTo>,
    root: TraceHeaders,
    records_root_span: bool,
) -> Result<Uuid, ErrorResponse> {
    if request.request_id.is_some()
        && let Ok(Some((existing, _))) = ctx.store.load(request_id).await
    {
        // A re-sent request: it is under way (or done) already. Publishing again is idempotent; analysing it
        // again would resolve a follow-up against itself and spend the rewriter's tokens twice.
        return publish_state(ctx, &existing, &root).await.map(|_| request_id);
    }
    let timeout = request.timeout_ms.unwrap_or(ctx.config.loop_.timeout_ms).clamp(1, ctx.config.loop_.max_timeout_ms);
    ctx.admission.admit(&*ctx.bus, std::time::Duration::from_millis(timeout)).await?;
    // The request's time starts now: what the rewriter takes comes out of its deadline.
    let now_ms = telemetry::now_ms();
    let conversation = request.conversation_id.clone();
    let previous = match &conversation {
        Some(id) => ctx.conversations.last_turn(id).await.unwrap_or_else(|e| {
            // Without the conversation the question is still answerable, only not as a follow-up.
            tracing::warn!(conversation_id = %id, error = %e, "cannot read the conversation: answering without it");
            None
        }),
        None => None,
    };
    let types = &*ctx.entity_types.get();
    let (mut analysis, usage, rewriter_failed) = match (&previous, &ctx.rewriter) {
        // With an LLM, a follow-up is rewritten by the model; the deterministic rewriter is its fallback.
        (Some(prev), Some(llm)) => {
            // At most a quarter of the request's time, so a slow model leaves the loop the rest.
            let timeout = std::time::Duration::from_millis(ctx.config.llm.timeout_ms.min(timeout / 4).max(1));
            let max_bytes = ctx.config.loop_.max_query_bytes;
            match llm_rewrite::rewrite(llm, &normalized, prev, max_bytes, timeout).await {
                (Ok(r), usage) => {
                    let question = normalize(&r.rewritten);
                    let resolved = vec![format!("llm → {question}")];
                    let answers = !prev.clarifying_questions.is_empty();
                    let parts = (!r.subquestions.is_empty()).then_some(r.subquestions);
                    (understand(&normalized, &question, resolved, (answers, parts), types), usage, None)
                }
                (Err(why), usage) => (analyze_in(&normalized, Some(prev), types), usage, Some(why)),
            }
        }
        _ => (analyze_in(&normalized, previous.as_ref(), types), Default::default(), None),
    };
    if let Some(route) = ctx.config.intake.force_route
        && !matches!(analysis.route, Route::Clarify)
        && !analysis.meta_question
        && route != analysis.route
    {
        analysis.complexity.overrides.push(format!("forced_{route:?}").to_lowercase());
        analysis.route = route;
    }
    let caps = machine::caps_for(&ctx.config.loop_, analysis.route, request.max_turns);
    let mut state = machine::new_state(NewRequest {
        request_id,
        request,
        analysis,
        caps,
        now_ms,
        deadline_ms: now_ms + timeout,
        reply,
        trace: root.clone(),
        records_root_span,
    });
    // What the rewriter cost counts against the request's budget like any agent's call.
    usage.charge_to(&mut state.counters);
    if let Some(why) = rewriter_failed {
        state.counters.llm_fallbacks = 1;
        state.degraded.push(sleuth_messages::Degradation::new(sleuth_messages::Backend::Llm, why));
    }
    match ctx.store.create(&state).await {
        Ok(_) => {}
        Err(StoreError::AlreadyExists) => {
            // A client re-sent the same request id: the request is already under way, publish what it needs.
            if let Some((existing, _)) = ctx.store.load(request_id).await.ok().flatten() {
                publish_state(ctx, &existing, &root).await?;
            }
            return Ok(request_id);
        }
        Err(e) => {
            return Err(ErrorResponse::new(ErrorKind::Unavailable, format!("cannot store loop state: {e}"))
                .for_request(request_id));
        }
    }
    tracing::info!(
        request_id = %request_id,
        route = ?state.analysis.route,
        score = state.analysis.complexity.score,
        max_turns = state.caps.max_turns,
        "request accepted"
    );
    if let Some(id) = &conversation {
        let a = &state.analysis;
        let turn = ConversationTurn {
            request_id,
            query: normalized.clone(),
            rewritten: a.rewritten.clone(),
            entities: a.entities.clone(),
            clarifying_questions: a.clarifying_questions.clone(),
            at_ms: now_ms,
        };
        if let Err(e) = ctx.conversations.record(id, turn).await {
            tracing::warn!(conversation_id = %id, error = %e, "cannot record the conversation turn");
        }
    }
    tracing::Span::current().record("sleuth.route", format!("{:?}", state.analysis.route).to_lowercase());
    telemetry::metrics::request_started(&format!("{:?}", state.analysis.route).to_lowercase());
    publish_state(ctx, &state, &root).await?;
    Ok(request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Analyses `normalized` with the demo graph's entity types.
    fn analyze(normalized: &str) -> QueryAnalysis {
        super::analyze(normalized, &crate::stages::fixtures::demo_types())
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
        };
        let a = analyze_in("and his mother?", Some(&previous), &crate::stages::fixtures::demo_types());
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
        let a = analyze_in("Nami", Some(&asked), &crate::stages::fixtures::demo_types());
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
    fn normalize_collapses_space_and_control_characters() {
        assert_eq!(normalize("  Who\u{0} is\n\n Luffy? "), "Who is Luffy?");
    }
}
