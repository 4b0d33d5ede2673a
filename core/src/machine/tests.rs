//! Table-driven tests of the loop state machine: transitions, caps, idempotence checks and outbound messages.

use sleuth_messages::{
    Action, ActionResult, AskRequest, Envelope, EventKind, Hit, JsonMap, LoopState, NextStep, Outcome, Phase,
    RetrievalResult, SCHEMA_VERSION, SearchIntent, Stage, TerminationReason, WorkItem,
};
use uuid::Uuid;

use super::*;
use crate::{analysis as intake, fixtures::report};

fn state() -> LoopState {
    let analysis = intake::analyze("Which anime is Luffy in?", &crate::fixtures::demo_types());
    new_state(NewRequest {
        request_id: Uuid::now_v7(),
        request: AskRequest::new("Which anime is Luffy in?"),
        caps: caps_for(&Tiers::default(), analysis.route, Some(3)),
        analysis,
        now_ms: 1_000,
        deadline_ms: 10_000,
        reply: None,
        trace: Default::default(),
        records_root_span: false,
    })
}

fn search(q: &str) -> Action {
    Action::QdrantSearch { search_intent: SearchIntent::documents("", q) }
}

fn hits(ids: &[&str]) -> ActionResult {
    let raw_data: Vec<Hit> = ids
        .iter()
        .map(|id| Hit {
            id: id.to_string(),
            doc_id: id.to_string(),
            title: id.to_string(),
            text: "t".into(),
            score: 1.0,
            metadata: JsonMap::new(),
        })
        .collect();
    ActionResult::Retrieval(RetrievalResult {
        summary: String::new(),
        count: raw_data.len() as u32,
        raw_data,
        from_cache: false,
        degraded: Vec::new(),
    })
}

fn item(state: &LoopState, stage: Stage, step: u32) -> WorkItem {
    WorkItem {
        envelope: Envelope {
            schema_version: SCHEMA_VERSION,
            request_id: state.request_id,
            turn: state.turn,
            step,
            deadline_ms: 0,
            attempt: 1,
        },
        stage,
    }
}

/// Runs one full turn: plan `queries`, record `results`, grade.
fn turn(s: &LoopState, queries: &[&str], results: Vec<ActionResult>, sufficient: bool, now: u64) -> LoopState {
    let step = NextStep { rationale: String::new(), actions: queries.iter().map(|q| search(q)).collect() };
    let mut s = apply_plan(s, step, None).unwrap();
    for (slot, r) in results.into_iter().enumerate() {
        s = apply_outcome(&s, slot as u32, r, 1).unwrap();
    }
    apply_report(&s, report(sufficient), now).unwrap()
}

#[test]
fn a_sufficient_turn_goes_straight_to_synthesis() {
    let s = turn(&state(), &["luffy"], vec![hits(&["a", "b"])], true, 2_000);
    assert_eq!(s.phase, Phase::Synthesizing);
    assert_eq!(s.stop_reason, Some(TerminationReason::Sufficient));
    assert_eq!(s.cards.iter().map(|c| c.n).collect::<Vec<_>>(), vec![1, 2]);
}

#[test]
fn caps_end_the_loop_with_their_reason() {
    // (turn results, now, expected phase after grading turn 1, reason)
    let cases: Vec<(Vec<ActionResult>, u64, Option<TerminationReason>)> =
        vec![(vec![hits(&["a"])], 2_000, None), (vec![hits(&["a"])], 20_000, Some(TerminationReason::Deadline))];
    for (results, now, reason) in cases {
        let s = turn(&state(), &["q"], results, false, now);
        assert_eq!(s.stop_reason, reason);
    }
}

#[test]
fn max_turns_gives_no_match_after_max_turns() {
    let mut s = state();
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        s = turn(&s, &[&format!("q{i}")], vec![hits(&[id])], false, 2_000);
    }
    assert_eq!(s.stop_reason, Some(TerminationReason::NoMatchAfterMaxTurns));
    assert_eq!(s.turn, 3);
}

#[test]
fn repeated_zero_results_end_as_not_found() {
    let mut s = state();
    s.caps.max_turns = 10;
    s.caps.no_new_information_rounds = 10;
    for i in 0..3 {
        s = turn(&s, &[&format!("q{i}")], vec![hits(&[])], false, 2_000);
    }
    assert_eq!(s.stop_reason, Some(TerminationReason::NotFound));
    assert_eq!(s.counters.zero_result_steps, 3);
}

#[test]
fn rounds_without_new_cards_end_as_no_new_information() {
    let mut s = state();
    s.caps.max_turns = 10;
    s = turn(&s, &["q0"], vec![hits(&["a"])], false, 2_000);
    s = turn(&s, &["q1"], vec![hits(&["a"])], false, 2_000);
    assert_eq!(s.phase, Phase::Planning);
    s = turn(&s, &["q2"], vec![hits(&["a"])], false, 2_000);
    assert_eq!(s.stop_reason, Some(TerminationReason::NoNewInformation));
}

#[test]
fn parallel_actions_join_when_the_last_slot_is_recorded() {
    let s = apply_plan(&state(), NextStep { rationale: String::new(), actions: vec![search("x"), search("y")] }, None)
        .unwrap();
    assert_eq!(s.phase, Phase::Acting { pending: vec![0, 1] });
    let work = |s: &LoopState, by: Stage| {
        next_messages(s, Some(by)).into_iter().filter(|o| matches!(o, Outbound::Work(_))).count()
    };
    assert_eq!(work(&s, Stage::Planner), 2, "two work messages fan out");
    // Slot 1 finishes first.
    let s = apply_outcome(&s, 1, hits(&["b"]), 1).unwrap();
    assert_eq!(s.phase, Phase::Acting { pending: vec![0] });
    assert_eq!(work(&s, Stage::Retrieve), 0, "the sibling's work was sent by the planner, not by its executor");
    assert_eq!(work(&s, Stage::Planner), 1, "a planner redelivery sends the pending slot again");
    assert!(expects(&s, &item(&s, Stage::Retrieve, 0)));
    assert!(!expects(&s, &item(&s, Stage::Retrieve, 1)), "slot 1 is recorded: a redelivery is a duplicate");
    let s = apply_outcome(&s, 0, hits(&["a", "b"]), 1).unwrap();
    assert_eq!(s.phase, Phase::Grading);
    assert_eq!(s.cards.len(), 2, "the shared hit becomes one card");
    assert_eq!(s.turns[0].outcomes.iter().map(|o| o.slot).collect::<Vec<_>>(), vec![0, 1]);
}

#[test]
fn expects_recognises_stale_and_foreign_work() {
    let s = state();
    assert!(expects(&s, &item(&s, Stage::Planner, 0)));
    assert!(!expects(&s, &item(&s, Stage::Grader, 0)), "wrong stage for the phase");
    let mut later = item(&s, Stage::Planner, 0);
    later.envelope.turn = 2;
    assert!(!expects(&s, &later), "wrong turn");
}

#[test]
fn planner_final_and_clarify_skip_to_synthesis() {
    let s = apply_plan(&state(), NextStep::single("done", Action::Final {}), None).unwrap();
    assert_eq!((s.phase.clone(), s.stop_reason), (Phase::Synthesizing, Some(TerminationReason::PlannerFinal)));
    let bad = NextStep { rationale: String::new(), actions: vec![search("a"), search("b"), search("c")] };
    assert!(matches!(apply_plan(&state(), bad, None), Err(TransitionError::InvalidStep(_))));
}

#[test]
fn deadline_stops_retrieval_but_not_synthesis() {
    let s = state();
    assert!(apply_deadline(&s, 5_000).is_none());
    let stopped = apply_deadline(&s, 10_000).unwrap();
    assert_eq!(stopped.stop_reason, Some(TerminationReason::Deadline));
    assert!(apply_deadline(&stopped, 99_000).is_none(), "synthesis still runs after the deadline");
}

#[test]
fn next_messages_is_a_function_of_the_state() {
    let s = turn(&state(), &["luffy"], vec![hits(&["a"])], true, 2_000);
    assert_eq!(next_messages(&s, Some(Stage::Grader)), next_messages(&s.clone(), Some(Stage::Grader)));
    let kinds: Vec<_> = next_messages(&s, Some(Stage::Grader))
        .into_iter()
        .map(|o| match o {
            Outbound::Work(w) => format!("work {}", w.stage),
            Outbound::Event(e) => format!("event {}", e.kind.as_str()),
            Outbound::Reply(..) => "reply".into(),
            Outbound::Deadline(_) => "deadline".into(),
        })
        .collect();
    assert_eq!(kinds, vec!["event graded", "work synthesizer"]);
}

#[test]
fn the_first_turn_arms_the_deadline_timer_and_later_turns_do_not() {
    let s = state();
    let timers: Vec<_> = next_messages(&s, Some(Stage::Intake))
        .into_iter()
        .filter_map(|o| match o {
            Outbound::Deadline(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(timers.len(), 1);
    assert_eq!((timers[0].request_id, timers[0].deadline_ms), (s.request_id, s.deadline_ms));
    let later = turn(&s, &["luffy"], vec![hits(&["a"])], false, 2_000);
    assert!(
        !next_messages(&s, Some(Stage::Planner)).iter().any(|o| matches!(o, Outbound::Deadline(_))),
        "intake's alone"
    );
    assert!(!next_messages(&later, Some(Stage::Intake)).iter().any(|o| matches!(o, Outbound::Deadline(_))));
}

#[test]
fn a_stop_ends_retrieval_once_and_never_reopens_a_finished_request() {
    let s = state();
    let stopped = apply_stop(&s, TerminationReason::Cancelled).unwrap();
    assert_eq!((stopped.phase.clone(), stopped.stop_reason), (Phase::Synthesizing, Some(TerminationReason::Cancelled)));
    assert_eq!(waiting_on(&stopped), Some(Stage::Synthesizer));
    let done =
        apply_response(&stopped, crate::agents::synthesizer::synthesize(&stopped, &Default::default()), 3_000).unwrap();
    assert!(apply_stop(&done, TerminationReason::Deadline).is_none(), "the first ending wins");
    assert_eq!(waiting_on(&done), None);
}

#[test]
fn a_failure_ends_the_request_once() {
    let s = state();
    let err = sleuth_messages::ErrorResponse::new(sleuth_messages::ErrorKind::DeadLetter, "boom");
    let done = apply_failure(&s, err.clone(), 5).unwrap();
    assert_eq!(done.phase, Phase::Done);
    assert!(apply_failure(&done, err, 6).is_none(), "the first ending wins");
    let finals = next_messages(&done, None)
        .into_iter()
        .filter(|o| matches!(o, Outbound::Event(e) if e.kind == EventKind::Final))
        .count();
    assert_eq!(finals, 1);
}

#[test]
fn an_empty_document_search_shifts_0_3_of_the_weight_to_the_graph() {
    let start = state();
    let before = weights(&start);
    let s = turn(&start, &["luffy"], vec![hits(&["a"])], false, 2_000);
    assert_eq!(weights(&s), before, "results with hits shift nothing");
    let s = turn(&s, &["nothing"], vec![hits(&[])], false, 3_000);
    assert_eq!(weights(&s), before.shifted_to_graph());
}

#[test]
fn a_duplicate_re_publishes_only_what_its_own_commit_led_to() {
    let item = |stage: Stage, turn: u32| WorkItem {
        envelope: Envelope {
            schema_version: SCHEMA_VERSION,
            request_id: Uuid::nil(),
            turn,
            step: 0,
            deadline_ms: 0,
            attempt: 1,
        },
        stage,
    };
    let planning = state();
    let acting =
        apply_plan(&planning, NextStep { rationale: String::new(), actions: vec![search("luffy")] }, None).unwrap();
    let grading = apply_outcome(&acting, 0, hits(&["a"]), 1).unwrap();
    let next_turn = apply_report(&grading, report(false), 2_000).unwrap();
    let cases = [
        (&acting, Stage::Planner, 1, true),
        (&acting, Stage::Grader, 1, false),
        (&grading, Stage::Retrieve, 1, true),
        (&grading, Stage::Planner, 1, false),
        (&next_turn, Stage::Grader, 1, true),
        (&next_turn, Stage::Retrieve, 1, false),
        (&next_turn, Stage::Planner, 1, false),
        (&planning, Stage::Planner, 1, false),
    ];
    for (state, stage, turn, expected) in cases {
        assert_eq!(published_by(state, &item(stage, turn)), expected, "{stage} turn {turn} in {:?}", state.phase);
    }
    let late = apply_deadline(&grading, 99_999_999).unwrap();
    assert!(published_by(&late, &item(Stage::Retrieve, 7)), "whoever applied the deadline sends it to synthesis");
}

#[test]
fn an_unavailable_backend_is_recorded_once_and_the_answer_carries_it() {
    use sleuth_messages::{Backend, Degradation, ErrorKind, ErrorResponse};
    let down = |m: &str| ActionResult::Failed(ErrorResponse::new(ErrorKind::Unavailable, m));
    let mut bm25_only = hits(&["a"]);
    if let ActionResult::Retrieval(r) = &mut bm25_only {
        r.degraded.push(Degradation::new(Backend::Embeddings, "connection refused"));
    }
    let s = turn(&state(), &["q1", "q2"], vec![down("index unavailable: circuit open"), bm25_only], false, 2_000);
    let s = turn(&s, &["q3"], vec![down("index unavailable: still down")], false, 2_000);
    let backends: Vec<(Backend, &str)> = s.degraded.iter().map(|d| (d.backend, d.reason.as_str())).collect();
    assert_eq!(
        backends,
        vec![(Backend::Index, "circuit open"), (Backend::Embeddings, "connection refused")],
        "one entry per backend, the first reason kept, the backend's name not repeated in it"
    );
    // A failure that is not an outage (a bad filter) degrades nothing.
    let invalid = ActionResult::Failed(ErrorResponse::new(ErrorKind::InvalidInput, "unknown field"));
    let t = turn(&state(), &["q"], vec![invalid], false, 2_000);
    assert!(t.degraded.is_empty());

    let mut s = s;
    s.phase = Phase::Synthesizing;
    let response = crate::agents::synthesizer::synthesize(&s, &crate::fixtures::demo_types());
    let done = apply_response(&s, response, 3_000).unwrap();
    let Some(Outcome::Answer(answer)) = done.outcome else { panic!("an answer") };
    assert_eq!(answer.degraded, s.degraded);
}
