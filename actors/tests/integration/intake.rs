//! Intake end to end on the embedded default (qdrant-edge, SQLite, the real model, the bundled demo data): a
//! two-turn conversation whose follow-up is answered about the right entity, a clarification and its answer,
//! the routes (fast is one pass with no grading), the `database_stats` tool, literal constraints and the
//! retrieval cache.

use crate::common;

use common::demo::node;
use sleuth_actors::{ingest::graph::entity_id, node::Node};
use sleuth_messages::{
    Action, ActionResult, AgentResponse, AskReply, AskRequest, EntityRef, EntityType, LoopState, Outcome, Route,
    TerminationReason,
};

async fn ask(node: &Node, question: &str, conversation: Option<&str>) -> (AgentResponse, AskReply, LoopState) {
    let mut request = AskRequest::new(question);
    request.conversation_id = conversation.map(str::to_string);
    let reply = node.ask(request, None).await.expect("answer");
    let request_id = reply.request_id.expect("request id");
    let (state, _) = node.ctx.store.load(request_id).await.unwrap().expect("stored state");
    match &reply.outcome {
        Outcome::Answer(answer) => (answer.clone(), reply, std::sync::Arc::unwrap_or_clone(state)),
        Outcome::Error(e) => panic!("{question}: expected an answer, got {e}"),
    }
}

fn anime(key: &str) -> EntityRef {
    EntityRef { entity_type: EntityType::parse("anime").unwrap(), id: entity_id(key).to_string() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_is_answered_about_the_right_entity_and_a_clarification_continues_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;

    let (first, _, _) = ask(&node, "Which anime is Luffy in?", Some("chat-1")).await;
    assert!(first.result_entities.contains(&anime("anime:one-piece")), "{first:?}");

    // "And Ichigo?" borrows the first question's frame: which anime is Ichigo in?
    let (second, reply, state) = ask(&node, "And Ichigo?", Some("chat-1")).await;
    assert_eq!(state.analysis.rewritten, "Which anime is Ichigo in", "{:?}", state.analysis.resolved);
    assert!(second.result_entities.contains(&anime("anime:bleach")), "{second:?}");
    assert!(!second.result_entities.contains(&anime("anime:one-piece")), "{second:?}");
    assert_eq!(reply.route, Some(state.analysis.route));
    assert!(reply.complexity.is_some());

    // The same words in another conversation are not a follow-up of anything.
    let (_, _, alone) = ask(&node, "And Ichigo?", Some("chat-2")).await;
    assert_eq!(alone.analysis.rewritten, "And Ichigo");

    // An ambiguous question is answered with questions, and the next turn completes it.
    let (clarify, reply, state) = ask(&node, "his crew?", Some("chat-3")).await;
    assert_eq!(reply.route, Some(Route::Clarify));
    assert_eq!(clarify.termination_reason, TerminationReason::Clarification);
    assert!(state.cards.is_empty(), "nothing is retrieved before the user answers");
    assert!(matches!(&state.turns[0].step.actions[0], Action::Clarify { questions } if !questions.is_empty()));
    let (answered, _, state) = ask(&node, "Monkey D. Luffy", Some("chat-3")).await;
    assert_eq!(state.analysis.rewritten, "Monkey D. Luffy's crew");
    assert_ne!(state.analysis.route, Route::Clarify);
    assert!(answered.answer.contains("Straw Hat"), "{}", answered.answer);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_differ_meta_questions_ask_the_database_and_the_cache_serves_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path()).await;

    // Fast: one retrieval pass, no grading, answered with the single_pass reason.
    let (fast, reply, state) = ask(&node, "Who created One Piece?", None).await;
    assert_eq!(reply.route, Some(Route::Fast), "{:?}", reply.complexity);
    assert_eq!(state.turns.len(), 1);
    assert!(state.turns[0].report.is_none(), "the fast route is not graded");
    assert_eq!(fast.termination_reason, TerminationReason::SinglePass);
    assert!(fast.answer.contains("Eiichiro Oda"), "{}", fast.answer);

    // The same question, written differently, comes from the cache.
    let (_, _, again) = ask(&node, "who created one piece", None).await;
    let from_cache = |s: &LoopState| {
        s.turns
            .iter()
            .flat_map(|t| &t.outcomes)
            .any(|o| matches!(&o.result, ActionResult::Retrieval(r) if r.from_cache))
    };
    assert!(from_cache(&again), "{:?}", again.turns);

    // Enhanced: a multi-hop relation question is graded and may take more passes.
    let (_, reply, state) = ask(&node, "Where was the creator of One Piece born?", None).await;
    assert_eq!(reply.route, Some(Route::Enhanced));
    assert!(state.turns[0].report.is_some(), "the enhanced route is graded");

    // A database meta-question is answered by the database_stats tool, with its numbers cited.
    let (meta, reply, state) = ask(&node, "How many documents are in the database?", None).await;
    assert_eq!(reply.route, Some(Route::Agent));
    assert!(
        reply
            .complexity
            .as_ref()
            .is_some_and(|c| c.score >= 0.75 && c.overrides.contains(&"database_meta".to_string()))
    );
    assert!(matches!(state.turns[0].step.actions[0], Action::DatabaseStats {}));
    assert!(meta.answer.contains("documents") && meta.answer.contains("[1]"), "{}", meta.answer);
    assert_eq!(meta.citations.len(), 1);

    // A quoted literal searches BM25 only, exact matches first, and the grader checks it is really there.
    let (literal, _, state) = ask(&node, r#"Which story has a "Devil Fruit"?"#, None).await;
    assert_eq!(state.analysis.literal_terms, vec!["Devil Fruit".to_string()]);
    let first = state.cards.first().expect("a card");
    assert!(first.hit.text.contains("Devil Fruit"), "{:?}", first.hit);
    let checks = state.turns.iter().filter_map(|t| t.report.as_ref()).flat_map(|r| &r.checks);
    assert!(checks.clone().any(|c| c.name == "literals_present" && c.passed), "{literal:?}");
    node.shutdown().await;
}
