//! Round-trip and golden-bytes tests for the codec (hostile input is in `hostile_tests.rs`, work messages in
//! `work_tests.rs`).

use uuid::Uuid;

use super::*;
use crate::{
    JsonMap,
    analysis::{AskRequest, ComplexityScore, PriorTurn, QueryAnalysis, QueryType, RetrieverWeights, Route},
    conversation::{Conversation, ConversationTurn, valid_conversation_id},
    degraded::{Backend, Degradation},
    envelope::{Envelope, Stage, WorkItem},
    intent::{EntityRef, EntityType, GraphIntent, GraphLimits, GraphQueryType, SearchIntent},
    loop_state::{ActionOutcome, ActionResult, Caps, Card, Counters, LlmSpend, LoopState, Outcome, Phase, TurnRecord},
    principal::Principal,
    quota::{RateBucket, TenantUsage, UnderWay, usage_key},
    report::SufficiencyReport,
    response::{AgentResponse, AnswerKind, Citation, ShortAnswer, TerminationReason},
    result::{GraphPath, GraphResult, Hit, RetrievalResult},
    step::{Action, NextStep},
};

pub(super) fn request_id() -> Uuid {
    Uuid::parse_str("01890a5d-ac96-774b-bcce-b302099a8057").unwrap()
}

pub(super) fn work_item() -> WorkItem {
    WorkItem {
        envelope: Envelope {
            schema_version: SCHEMA_VERSION,
            request_id: request_id(),
            turn: 2,
            step: 1,
            deadline_ms: 1_700_000_000_000,
            attempt: 1,
        },
        stage: Stage::Retrieve,
    }
}

pub(super) fn hit(id: &str) -> Hit {
    Hit {
        id: id.into(),
        doc_id: id.into(),
        title: format!("Title {id}"),
        text: "text".into(),
        score: 1.5,
        metadata: JsonMap::new(),
    }
}

pub(super) fn sample_state() -> LoopState {
    let search = SearchIntent {
        rationale: "find luffy".into(),
        entity_type: EntityType::parse("character").unwrap(),
        query: Some("Luffy".into()),
        image_query: None,
        filters: JsonMap::from([("year".to_string(), serde_json::json!(1999))]),
        limit: Some(8),
    };
    let graph = GraphIntent {
        rationale: "relate".into(),
        query_type: GraphQueryType::Path,
        start: EntityRef { entity_type: EntityType::parse("character").unwrap(), id: "a".into() },
        end: Some(EntityRef { entity_type: EntityType::parse("character").unwrap(), id: "b".into() }),
        max_hops: 3,
        edge_types: vec!["co_appears".into()],
        filters: JsonMap::new(),
        limits: GraphLimits::default(),
    };
    let step = NextStep {
        rationale: "two lookups".into(),
        actions: vec![Action::QdrantSearch { search_intent: search }, Action::PgGraph { graph_intent: graph }],
    };
    let retrieval = RetrievalResult {
        summary: "1 hit".into(),
        raw_data: vec![hit("d1")],
        count: 1,
        from_cache: true,
        degraded: vec![],
    };
    let graph_result = GraphResult {
        summary: "path".into(),
        paths: vec![GraphPath { nodes: vec![], rels: vec!["co_appears".into()] }],
        node_ids: vec![],
        count: 1,
        meta: JsonMap::new(),
        evidence: vec![],
    };
    LoopState {
        schema_version: SCHEMA_VERSION,
        request_id: request_id(),
        request: AskRequest::new("How is Luffy related to Nami?"),
        analysis: QueryAnalysis {
            normalized: "How is Luffy related to Nami?".into(),
            rewritten: "Luffy related Nami".into(),
            query_type: QueryType::Relational,
            confidence: 0.8,
            entities: vec!["Luffy".into(), "Nami".into()],
            literal_terms: vec![],
            keywords: vec!["luffy".into(), "related".into(), "nami".into()],
            subquestions: vec![],
            complexity: ComplexityScore {
                score: 0.225,
                query_type: 0.5,
                entity_count: 0.5,
                subquestion_count: 0.0,
                keyword_matches: 0.0,
                low_confidence: 0.0,
                reason: "relational".into(),
                overrides: vec!["entity_graph".into()],
            },
            route: Route::Enhanced,
            weights: RetrieverWeights { vector: 0.2, graph: 0.8 },
            meta_question: false,
            clarifying_questions: vec![],
            resolved: vec!["he → Luffy".into()],
            chain_links: None,
        },
        plan: None,
        reply: None,
        owner: None,
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
        tracestate: Some("vendor=x".into()),
        baggage: Some("tenant=acme".into()),
        records_root_span: true,
        created_ms: 1,
        deadline_ms: 2,
        caps: Caps {
            max_turns: 5,
            no_new_information_rounds: 2,
            max_zero_result_steps: 3,
            max_hits_per_search: 8,
            token_budget: 0,
        },
        turn: 1,
        phase: Phase::Acting { pending: vec![1] },
        stop_reason: None,
        turns: vec![TurnRecord {
            turn: 1,
            step,
            outcomes: vec![
                ActionOutcome { slot: 0, result: ActionResult::Retrieval(retrieval), new_cards: 1, elapsed_ms: 3 },
                ActionOutcome { slot: 1, result: ActionResult::Graph(graph_result), new_cards: 0, elapsed_ms: 1 },
            ],
            report: Some(SufficiencyReport {
                sufficient: false,
                confidence: 0.4,
                rationale: "missing Nami".into(),
                gaps: vec![],
                missing: vec!["Nami".into()],
                new_queries: vec!["Nami".into()],
                checks: vec![],
                no_new_information: false,
            }),
        }],
        cards: vec![Card::new(1, 1, hit("d1"))],
        counters: Counters::default(),
        degraded: vec![],
        outcome: Some(Outcome::Answer(AgentResponse {
            answer: "Luffy [1]".into(),
            short_answer: None,
            source_entities: vec![],
            result_entities: vec![],
            evidence: JsonMap::new(),
            citations: vec![Citation {
                n: 1,
                hit_id: "d1".into(),
                doc_id: "d1".into(),
                title: "Title d1".into(),
                card: 1,
                section: None,
                page: None,
            }],
            confidence: 0.9,
            termination_reason: TerminationReason::Sufficient,
            warnings: vec![],
            degraded: vec![],
        })),
        finished_ms: None,
    }
}

#[test]
fn loop_state_round_trips_in_both_encodings() {
    let state = sample_state();
    for encoding in [Encoding::MsgPack, Encoding::Json] {
        let bytes = encode(&state, encoding).unwrap();
        let (back, detected) = decode::<LoopState>(&bytes).unwrap();
        assert_eq!(detected, encoding);
        assert_eq!(back, state);
    }
}

#[test]
fn chain_links_are_additive_to_the_analysis() {
    // A state written before intake recorded the chain's links has no key for them and reads back as `None` (the
    // state above, whose golden bytes stay as they were); a recorded count travels by name in both encodings.
    let mut analysis = sample_state().analysis;
    let plain = encode(&analysis, Encoding::Json).unwrap();
    assert!(!String::from_utf8(plain).unwrap().contains("chain_links"));
    analysis.chain_links = Some(2);
    let json = String::from_utf8(encode(&analysis, Encoding::Json).unwrap()).unwrap();
    assert!(json.ends_with(r#","chain_links":2}"#), "{json}");
    let packed = encode(&analysis, Encoding::MsgPack).unwrap();
    let tail: String = packed[packed.len() - 13..].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(tail, "ab636861696e5f6c696e6b7302", "the key by name, then the count");
    for bytes in [json.into_bytes(), packed] {
        assert_eq!(decode::<QueryAnalysis>(&bytes).unwrap().0.chain_links, Some(2));
    }
}

#[test]
fn short_answer_golden_bytes_do_not_drift() {
    // Additive: an answer without a short answer writes no key for it (the state above decodes as before), and one
    // with it carries the answer, its kind and its citations by name, in both encodings.
    let short = ShortAnswer { text: "One Piece".into(), kind: AnswerKind::Entity, citations: vec![1] };
    let hex: String = encode(&short, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_SHORT_ANSWER);
    assert_eq!(
        String::from_utf8(encode(&short, Encoding::Json).unwrap()).unwrap(),
        r#"{"text":"One Piece","kind":"entity","citations":[1]}"#
    );
    let mut state = sample_state();
    let bytes = encode(&state, Encoding::MsgPack).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("short_answer"));
    if let Some(Outcome::Answer(a)) = &mut state.outcome {
        a.short_answer = Some(short);
    }
    for encoding in [Encoding::MsgPack, Encoding::Json] {
        let bytes = encode(&state, encoding).unwrap();
        assert_eq!(decode::<LoopState>(&bytes).unwrap().0, state);
    }
    let json = br#"{"text":"yes","kind":"yes_no","citations":[1,2]}"#;
    assert_eq!(decode::<ShortAnswer>(json).unwrap().0.kind, AnswerKind::YesNo);
}

#[test]
fn a_citation_s_section_and_page_are_additive() {
    // A citation without them writes no key for them (the state's golden bytes stay as they were); one with them
    // carries both by name.
    let mut citation = Citation {
        n: 1,
        hit_id: "r.pdf#2".into(),
        doc_id: "r.pdf".into(),
        title: "r".into(),
        card: 3,
        section: None,
        page: None,
    };
    let bare = String::from_utf8(encode(&citation, Encoding::Json).unwrap()).unwrap();
    assert!(!bare.contains("section") && !bare.contains("page"), "{bare}");
    assert_eq!(citation.place(), "r");
    (citation.section, citation.page) = (Some("Results".into()), Some(12));
    let hex: String = encode(&citation, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_CITATION_WITH_PLACE);
    assert_eq!(decode::<Citation>(&encode(&citation, Encoding::MsgPack).unwrap()).unwrap().0, citation);
    assert_eq!(citation.place(), "r › Results, p. 12");
}

// packb({"n": 1, "hit_id": "r.pdf#2", "doc_id": "r.pdf", "title": "r", "card": 3, "section": "Results", "page": 12}).
const GOLDEN_CITATION_WITH_PLACE: &str = "87a16e01a66869745f6964a7722e7064662332a6646f635f6964a5722e706466a57469746c65a172a46361726403a773656374696f6ea7526573756c7473a4706167650c";

// Cross-checked with Python's msgpack: packb({"text": "One Piece", "kind": "entity", "citations": [1]}).
const GOLDEN_SHORT_ANSWER: &str = "83a474657874a94f6e65205069656365a46b696e64a6656e74697479a96369746174696f6e739101";

#[test]
fn work_item_golden_bytes_do_not_drift() {
    // If this fails, the wire format changed: bump SCHEMA_VERSION or make the change additive, then update the bytes.
    let bytes = encode(&work_item(), Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_WORK_ITEM);
}

#[test]
fn ask_request_golden_bytes_do_not_drift() {
    let bytes = encode(&AskRequest::new("Who is Luffy?"), Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_ASK_REQUEST);
}

#[test]
fn ask_request_history_golden_bytes_do_not_drift() {
    // Additive: a request without history writes no key for it (the bytes above), and one with it carries each
    // turn's role and content by name; a request from before history existed decodes with none.
    let request = AskRequest {
        history: vec![PriorTurn::user("Who directed Alien?"), PriorTurn::assistant("Ridley Scott [1]")],
        ..AskRequest::new("Where was he born?")
    };
    let hex: String = encode(&request, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_ASK_REQUEST_WITH_HISTORY);
    let json = br#"{"query":"Where was he born?","history":[{"role":"user","content":"Who directed Alien?"},{"role":"assistant","content":"Ridley Scott [1]"}]}"#;
    assert_eq!(decode::<AskRequest>(json).unwrap().0, request);
    assert!(decode::<AskRequest>(br#"{"query":"q","history":[{"role":"system","content":"x"}]}"#).is_err());
    assert!(decode::<AskRequest>(br#"{"query":"q"}"#).unwrap().0.history.is_empty());
}

// Cross-checked with Python's msgpack: packb({"query": "Where was he born?", "history": [{"role": "user",
// "content": "Who directed Alien?"}, {"role": "assistant", "content": "Ridley Scott [1]"}]}).
const GOLDEN_ASK_REQUEST_WITH_HISTORY: &str = "82a57175657279b257686572652077617320686520626f726e3fa7686973746f72799282a4726f6c65a475736572a7636f6e74656e74b357686f20646972656374656420416c69656e3f82a4726f6c65a9617373697374616e74a7636f6e74656e74b05269646c65792053636f7474205b315d";

#[test]
fn deadline_timer_is_the_work_items_envelope() {
    // The watchdog's timer carries a bare `Envelope`: the same bytes as the envelope inside a work item.
    let bytes = encode(&work_item().envelope, Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let inner = GOLDEN_WORK_ITEM.strip_prefix("82a8656e76656c6f7065").unwrap();
    assert!(inner.starts_with(&hex), "{hex} is not the envelope inside {GOLDEN_WORK_ITEM}");
}

#[test]
fn trace_fields_are_optional_both_ways() {
    // A state written before tracestate, baggage and records_root_span existed decodes with them unset, and a
    // state without them writes none of their keys.
    let mut state = sample_state();
    (state.tracestate, state.baggage, state.records_root_span) = (None, None, false);
    let bytes = encode(&state, Encoding::MsgPack).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("tracestate") && !text.contains("baggage") && !text.contains("records_root_span"));
    assert_eq!(decode::<LoopState>(&bytes).unwrap().0, state);
    let json = serde_json::to_value(sample_state()).unwrap();
    assert_eq!(json["records_root_span"], true);
    assert_eq!(json["baggage"], "tenant=acme");
}

pub(super) const GOLDEN_WORK_ITEM: &str = "82a8656e76656c6f706586ae736368656d615f76657273696f6e01aa726571756573745f6964c41001890a5dac96774bbcceb302099a8057a47475726e02a47374657001ab646561646c696e655f6d73cf0000018bcfe56800a7617474656d707401a57374616765a87265747269657665";
const GOLDEN_ASK_REQUEST: &str = "81a57175657279ad57686f206973204c756666793f";

#[test]
fn lane_requests_golden_bytes_do_not_drift() {
    use crate::lookup::{HydrateRequest, SearchRequest};
    let search = SearchRequest {
        text: "luf".into(),
        entity_type: Some(EntityType::parse("character").unwrap()),
        limit: Some(5),
    };
    let hex: String = encode(&search, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_SEARCH_REQUEST);
    let hydrate = HydrateRequest { ids: vec![EntityRef { entity_type: EntityType::DOCUMENT, id: "d1".into() }] };
    let hex: String = encode(&hydrate, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_HYDRATE_REQUEST);
    // The nats CLI sends JSON; both lanes accept it.
    let (req, _) = decode::<SearchRequest>(br#"{"text":"luf"}"#).unwrap();
    assert_eq!((req.text.as_str(), req.entity_type, req.limit), ("luf", None, None));
}

#[test]
fn graph_result_golden_bytes_do_not_drift() {
    // Without evidence, a graph result encodes exactly as before the field existed.
    let mut result = GraphResult {
        summary: "p".into(),
        paths: vec![],
        node_ids: vec![],
        count: 1,
        meta: JsonMap::new(),
        evidence: vec![],
    };
    let hex: String = encode(&result, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_GRAPH_RESULT);
    result.evidence.push(Hit {
        id: "e".into(),
        doc_id: "n".into(),
        title: "t".into(),
        text: "x".into(),
        score: 1.0,
        metadata: JsonMap::new(),
    });
    let hex: String = encode(&result, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_GRAPH_RESULT_WITH_EVIDENCE);
    let (back, _): (GraphResult, _) = decode(&encode(&result, Encoding::MsgPack).unwrap()).unwrap();
    assert_eq!(back, result);
}

const GOLDEN_GRAPH_RESULT: &str = "84a773756d6d617279a170a5706174687390a86e6f64655f69647390a5636f756e7401";
// Cross-checked with Python's msgpack: packb({... "evidence": [{"id": "e", ...}]}, use_single_float=True).
const GOLDEN_GRAPH_RESULT_WITH_EVIDENCE: &str = "85a773756d6d617279a170a5706174687390a86e6f64655f69647390a5636f756e7401a865766964656e63659185a26964a165a6646f635f6964a16ea57469746c65a174a474657874a178a573636f7265ca3f800000";

#[test]
fn counters_golden_bytes_do_not_drift() {
    // Without LLM fallbacks, counters encode exactly as before the field existed.
    let mut counters = Counters { tokens_used: 120, ..Counters::default() };
    let hex: String = encode(&counters, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_COUNTERS);
    counters.llm_fallbacks = 2;
    let hex: String = encode(&counters, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_COUNTERS_WITH_FALLBACKS);
    let (back, _): (Counters, _) = decode(&encode(&counters, Encoding::MsgPack).unwrap()).unwrap();
    assert_eq!(back, counters);
}

#[test]
fn llm_spend_golden_bytes_do_not_drift() {
    // The LLM's calls, tokens and repairs are added fields, absent when zero (above); set, they encode by name.
    let counters = Counters {
        tokens_used: 120,
        llm_calls: 3,
        llm_input_tokens: 900,
        llm_output_tokens: 60,
        llm_repairs: 1,
        ..Counters::default()
    };
    let hex: String = encode(&counters, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_COUNTERS_WITH_LLM);
    let (back, _): (Counters, _) = decode(&encode(&counters, Encoding::MsgPack).unwrap()).unwrap();
    assert_eq!(back, counters);
    let spend = LlmSpend::of(&counters).expect("a request that asked the model has a spend");
    let hex: String = encode(&spend, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_LLM_SPEND);
    assert_eq!(LlmSpend::of(&Counters::default()), None, "no model asked, no spend in the reply");
}

// Cross-checked with Python's msgpack: packb({"zero_result_steps": 0, ..., "llm_calls": 3, "llm_input_tokens": 900,
// "llm_output_tokens": 60, "llm_repairs": 1}) and packb({"calls": 3, "input_tokens": 900, ..., "fallbacks": 0}).
const GOLDEN_COUNTERS_WITH_LLM: &str = "88b17a65726f5f726573756c745f737465707300b96e6f5f6e65775f696e666f726d6174696f6e5f726f756e647300ab746f6b656e735f7573656478b26475706c6963617465735f736b697070656400a96c6c6d5f63616c6c7303b06c6c6d5f696e7075745f746f6b656e73cd0384b16c6c6d5f6f75747075745f746f6b656e733cab6c6c6d5f7265706169727301";
const GOLDEN_LLM_SPEND: &str = "85a563616c6c7303ac696e7075745f746f6b656e73cd0384ad6f75747075745f746f6b656e733ca77265706169727301a966616c6c6261636b7300";

// Both cross-checked with Python's msgpack: packb({"zero_result_steps": 0, ..., "tokens_used": 120, ...}).
const GOLDEN_COUNTERS: &str = "84b17a65726f5f726573756c745f737465707300b96e6f5f6e65775f696e666f726d6174696f6e5f726f756e647300ab746f6b656e735f7573656478b26475706c6963617465735f736b697070656400";
const GOLDEN_COUNTERS_WITH_FALLBACKS: &str = "85b17a65726f5f726573756c745f737465707300b96e6f5f6e65775f696e666f726d6174696f6e5f726f756e647300ab746f6b656e735f7573656478b26475706c6963617465735f736b697070656400ad6c6c6d5f66616c6c6261636b7302";

#[test]
fn overloaded_and_compacted_golden_bytes_do_not_drift() {
    // An additive error kind, and a card flag that is absent unless set: a card encodes as before it existed.
    let error = ErrorResponse::new(ErrorKind::Overloaded, "m");
    assert!(error.retryable, "overloaded is worth retrying");
    let hex: String = encode(&error, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_OVERLOADED);
    let mut card = Card::new(1, 1, hit("d1"));
    let hex: String = encode(&card, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_CARD);
    card.compacted = true;
    let hex: String = encode(&card, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_CARD_COMPACTED);
    assert_eq!(decode::<Card>(&encode(&card, Encoding::MsgPack).unwrap()).unwrap().0, card);
}

// Cross-checked with Python's msgpack: packb({"type": "overloaded", "message": "m", "retryable": True}), and the
// card as packb({"n": 1, "turn": 1, "hit": {...}}, use_single_float=True), then with "compacted": True.
#[test]
fn limited_golden_bytes_do_not_drift() {
    // An additive error kind: a tenant at its limits may send the same request again.
    let error = ErrorResponse::new(ErrorKind::Limited, "m");
    assert!(error.retryable, "a limit passes");
    let bytes = encode(&error, Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_LIMITED);
    assert_eq!(decode::<ErrorResponse>(&bytes).unwrap().0, error);
}

// Cross-checked with Python's msgpack: packb({"type": "limited", "message": "m", "retryable": True}).
const GOLDEN_LIMITED: &str = "83a474797065a76c696d69746564a76d657373616765a16da9726574727961626c65c3";

const GOLDEN_OVERLOADED: &str = "83a474797065aa6f7665726c6f61646564a76d657373616765a16da9726574727961626c65c3";
const GOLDEN_CARD: &str = "83a16e01a47475726e01a368697485a26964a26431a6646f635f6964a26431a57469746c65a85469746c65206431a474657874a474657874a573636f7265ca3fc00000";
const GOLDEN_CARD_COMPACTED: &str = "84a16e01a47475726e01a368697485a26964a26431a6646f635f6964a26431a57469746c65a85469746c65206431a474657874a474657874a573636f7265ca3fc00000a9636f6d706163746564c3";

const GOLDEN_SEARCH_REQUEST: &str = "83a474657874a36c7566ab656e746974795f74797065a9636861726163746572a56c696d697405";
const GOLDEN_HYDRATE_REQUEST: &str = "81a36964739182ab656e746974795f74797065a8646f63756d656e74a26964a26431";

#[test]
fn retrieval_result_golden_bytes_do_not_drift() {
    // Not from the cache, a retrieval result encodes exactly as before `from_cache` existed.
    let mut result =
        RetrievalResult { summary: "s".into(), raw_data: vec![], count: 0, from_cache: false, degraded: vec![] };
    let hex: String = encode(&result, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_RETRIEVAL_RESULT);
    result.from_cache = true;
    let hex: String = encode(&result, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_RETRIEVAL_RESULT_FROM_CACHE);
    let (back, _): (RetrievalResult, _) = decode(&encode(&result, Encoding::MsgPack).unwrap()).unwrap();
    assert_eq!(back, result);
}

#[test]
fn a_degraded_search_golden_bytes_do_not_drift() {
    // Without degradations nothing changes (above); with one, the list is a named-field map per backend.
    let result = RetrievalResult {
        summary: "s".into(),
        raw_data: vec![],
        count: 0,
        from_cache: false,
        degraded: vec![Degradation::new(Backend::Embeddings, "connection refused")],
    };
    let hex: String = encode(&result, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_RETRIEVAL_RESULT_DEGRADED);
    let (back, _): (RetrievalResult, _) = decode(&encode(&result, Encoding::MsgPack).unwrap()).unwrap();
    assert_eq!(back, result);
    // The state and the answer carry the same list, and old readers ignore it.
    let mut state = sample_state();
    state.degraded = result.degraded.clone();
    let (back, _): (LoopState, _) = decode(&encode(&state, Encoding::MsgPack).unwrap()).unwrap();
    assert_eq!(back.degraded, state.degraded);
    let json = serde_json::to_value(&result.degraded[0]).unwrap();
    assert_eq!(json["backend"], "embeddings");
    assert_eq!(json["fallback"], "BM25 only");
}

// Cross-checked with Python's msgpack: packb({"summary": "s", "raw_data": [], "count": 0, "degraded":
// [{"backend": "embeddings", "reason": "connection refused", "fallback": "BM25 only"}]}).
const GOLDEN_RETRIEVAL_RESULT_DEGRADED: &str = "84a773756d6d617279a173a87261775f6461746190a5636f756e7400a864656772616465649183a76261636b656e64aa656d62656464696e6773a6726561736f6eb2636f6e6e656374696f6e2072656675736564a866616c6c6261636ba9424d3235206f6e6c79";

// Both cross-checked with Python's msgpack: packb({"summary": "s", "raw_data": [], "count": 0[, "from_cache": True]}).
const GOLDEN_RETRIEVAL_RESULT: &str = "83a773756d6d617279a173a87261775f6461746190a5636f756e7400";
const GOLDEN_RETRIEVAL_RESULT_FROM_CACHE: &str =
    "84a773756d6d617279a173a87261775f6461746190a5636f756e7400aa66726f6d5f6361636865c3";

#[test]
fn conversation_golden_bytes_do_not_drift() {
    let conversation = Conversation {
        turns: vec![ConversationTurn {
            request_id: Uuid::nil(),
            query: "q".into(),
            rewritten: "r".into(),
            entities: vec!["E".into()],
            clarifying_questions: vec![],
            at_ms: 1,
            answer: None,
        }],
    };
    let bytes = encode(&conversation, Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_CONVERSATION);
    let (back, _): (Conversation, _) = decode(&bytes).unwrap();
    assert_eq!(back, conversation);
}

// Cross-checked with Python's msgpack: packb({"turns": [{"request_id": bytes(16), "query": "q", "rewritten": "r",
// "entities": ["E"], "at_ms": 1}]}, use_bin_type=True); a UUID is 16 raw bytes in MessagePack.
const GOLDEN_CONVERSATION: &str = "81a57475726e739185aa726571756573745f6964c41000000000000000000000000000000000a57175657279a171a972657772697474656ea172a8656e74697469657391a145a561745f6d7301";

#[test]
fn a_turn_s_answer_is_additive() {
    let mut conversation = Conversation {
        turns: vec![ConversationTurn {
            request_id: Uuid::nil(),
            query: "q".into(),
            rewritten: "r".into(),
            entities: vec!["E".into()],
            clarifying_questions: vec![],
            at_ms: 1,
            answer: None,
        }],
    };
    let before: String = encode(&conversation, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(before, GOLDEN_CONVERSATION, "a turn without an answer writes no key for it");
    conversation.turns[0].answer = Some("A".into());
    let bytes = encode(&conversation, Encoding::MsgPack).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_CONVERSATION_WITH_ANSWER);
    assert_eq!(decode::<Conversation>(&bytes).unwrap().0, conversation);
}

// packb({"turns": [{... as above ..., "at_ms": 1, "answer": "A"}]}, use_bin_type=True).
const GOLDEN_CONVERSATION_WITH_ANSWER: &str = "81a57475726e739186aa726571756573745f6964c41000000000000000000000000000000000a57175657279a171a972657772697474656ea172a8656e74697469657391a145a561745f6d7301a6616e73776572a141";

#[test]
fn conversation_ids_are_kv_keys() {
    for ok in ["c1", "user-42.session_7", "a=b"] {
        assert!(valid_conversation_id(ok), "{ok}");
    }
    for bad in ["", "a b", "a*", "a>", ".a", "a.", "é", &"x".repeat(129)] {
        assert!(!valid_conversation_id(bad), "{bad:?}");
    }
}

#[test]
fn database_stats_action_uses_the_seed_tag_and_single_pass_is_not_a_cap() {
    let json = serde_json::to_string(&Action::DatabaseStats {}).unwrap();
    assert_eq!(json, r#"{"action":"database_stats"}"#);
    let (back, _): (Action, _) = decode(json.as_bytes()).unwrap();
    assert_eq!(back, Action::DatabaseStats {});
    assert_eq!(serde_json::to_string(&TerminationReason::SinglePass).unwrap(), r#""single_pass""#);
    assert!(!TerminationReason::SinglePass.is_cap());
}

#[test]
fn json_ask_from_the_nats_cli_decodes() {
    let (req, enc) = decode::<AskRequest>(br#"  {"query":"Which anime is Luffy in?"}"#).unwrap();
    assert_eq!(enc, Encoding::Json);
    assert_eq!(req.query, "Which anime is Luffy in?");
}

#[test]
fn next_step_validation_enforces_the_parallel_cap() {
    let search = |q: &str| Action::QdrantSearch { search_intent: SearchIntent::documents("", q) };
    assert!(NextStep { rationale: String::new(), actions: vec![search("a"), search("b")] }.validate().is_ok());
    assert!(
        NextStep { rationale: String::new(), actions: vec![search("a"), search("b"), search("c")] }.validate().is_err()
    );
    assert!(NextStep { rationale: String::new(), actions: vec![] }.validate().is_err());
    assert!(NextStep { rationale: String::new(), actions: vec![search("a"), Action::Final {}] }.validate().is_err());
}

#[test]
fn action_json_uses_the_seed_tag() {
    let json = serde_json::to_value(Action::Final {}).unwrap();
    assert_eq!(json, serde_json::json!({"action": "final"}));
}

#[test]
fn principal_golden_bytes_do_not_drift() {
    // Additive: a state without an owner writes no key for it (states stored before tenants decode as before), and
    // one with it carries the tenant, and the user when the server named one, by name.
    let hex =
        |p: &Principal| encode(p, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(&Principal::tenant("ALPHA")), "81a674656e616e74a5414c504841");
    let user = Principal { tenant: "ALPHA".into(), user: Some("alpha".into()) };
    assert_eq!(hex(&user), "82a674656e616e74a5414c504841a475736572a5616c706861");
    let mut state = sample_state();
    assert!(!String::from_utf8_lossy(&encode(&state, Encoding::MsgPack).unwrap()).contains("owner"));
    state.owner = Some(user);
    for encoding in [Encoding::MsgPack, Encoding::Json] {
        let bytes = encode(&state, encoding).unwrap();
        assert_eq!(decode::<LoopState>(&bytes).unwrap().0, state);
    }
}

#[test]
fn tenant_usage_golden_bytes_do_not_drift() {
    let hex =
        |u: &TenantUsage| encode(u, Encoding::MsgPack).unwrap().iter().map(|b| format!("{b:02x}")).collect::<String>();
    let usage = TenantUsage {
        under_way: vec![UnderWay { request_id: Uuid::nil(), deadline_ms: 7 }],
        rate: Some(RateBucket { held: 1.5, at_ms: 2 }),
        day: 3,
        tokens: 4,
    };
    assert_eq!(hex(&usage), GOLDEN_TENANT_USAGE);
    assert_eq!(decode::<TenantUsage>(&encode(&usage, Encoding::MsgPack).unwrap()).unwrap().0, usage);
    assert_eq!(hex(&TenantUsage::default()), GOLDEN_TENANT_USAGE_EMPTY);
    assert_eq!(decode::<TenantUsage>(b"{}").unwrap().0, TenantUsage::default(), "every field has a default");
    let nan = br#"{"rate":{"held":1e999,"at_ms":0}}"#;
    assert!(decode::<TenantUsage>(nan).is_err(), "a non-finite bucket is malformed");
}

// Cross-checked with Python's msgpack: packb({"under_way": [{"request_id": bytes(16), "deadline_ms": 7}],
// "rate": {"held": 1.5, "at_ms": 2}, "day": 3, "tokens": 4}, use_bin_type=True), and the empty one without "rate".
const GOLDEN_TENANT_USAGE: &str = "84a9756e6465725f7761799182aa726571756573745f6964c41000000000000000000000000000000000ab646561646c696e655f6d7307a47261746582a468656c64cb3ff8000000000000a561745f6d7302a364617903a6746f6b656e7304";
const GOLDEN_TENANT_USAGE_EMPTY: &str = "83a9756e6465725f77617990a364617900a6746f6b656e7300";

#[test]
fn a_tenant_usage_key_is_the_name_or_its_hex_and_never_another_tenants() {
    assert_eq!(usage_key("ALPHA"), "ALPHA");
    assert_eq!(usage_key("team_b-2"), "team_b-2");
    assert_eq!(usage_key("a.b"), "x.612e62");
    assert_eq!(usage_key("a>"), "x.613e");
    assert_eq!(usage_key(""), "x.");
    assert_ne!(usage_key("x.612e62"), usage_key("a.b"), "a name that looks encoded is encoded itself");
}
