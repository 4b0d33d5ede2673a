//! The transitions: each stage's result applied to the state it was computed from, as the next state, or refused
//! with a [`TransitionError`]. The caps are checked here, so a planner cannot ask its way past them.

use sleuth_messages::degraded::record as record_degradation;
use sleuth_messages::{
    Action, ActionOutcome, ActionResult, AgentResponse, Backend, Card, Degradation, EntityType, ErrorKind,
    ErrorResponse, LoopState, NextStep, Outcome, Phase, PlannerState, RetrieverWeights, Route, SufficiencyReport,
    TerminationReason, TurnRecord,
};

use super::{TransitionError, cap_reached, compact, current_action};

/// The planner decided the current turn's step (and, on the first turn, the plan).
pub fn apply_plan(state: &LoopState, step: NextStep, plan: Option<PlannerState>) -> Result<LoopState, TransitionError> {
    if state.phase != Phase::Planning {
        return Err(TransitionError::WrongPhase { phase: state.phase.clone(), wanted: "apply a plan" });
    }
    step.validate().map_err(TransitionError::InvalidStep)?;
    let mut next = state.clone();
    if next.plan.is_none() {
        next.plan = plan;
    }
    let terminal = step.actions.iter().find_map(|a| match a {
        Action::Final {} => Some(TerminationReason::PlannerFinal),
        Action::Clarify { .. } => Some(TerminationReason::Clarification),
        _ => None,
    });
    let slots = step.actions.len() as u32;
    next.turns.push(TurnRecord { turn: state.turn, step, outcomes: Vec::new(), report: None });
    match terminal {
        Some(reason) => enter_synthesis(&mut next, reason),
        None => next.phase = Phase::Acting { pending: (0..slots).collect() },
    }
    Ok(next)
}

/// An executor finished action slot `slot` of the current turn. When the last slot is in, the turn's new hits, and
/// the statements of its graph results, become numbered cards in slot order, so the numbering does not depend on
/// which parallel action finished first.
pub fn apply_outcome(
    state: &LoopState,
    slot: u32,
    result: ActionResult,
    elapsed_ms: u64,
) -> Result<LoopState, TransitionError> {
    let Phase::Acting { pending } = &state.phase else {
        return Err(TransitionError::WrongPhase { phase: state.phase.clone(), wanted: "record an action outcome" });
    };
    let mut next = state.clone();
    if let Some(d) = degradation(current_action(state, slot), &result) {
        record_degradation(&mut next.degraded, d);
    }
    let remaining: Vec<u32> = pending.iter().copied().filter(|s| *s != slot).collect();
    let Some(turn) = next.turns.last_mut() else {
        return Err(TransitionError::WrongPhase {
            phase: state.phase.clone(),
            wanted: "record an outcome with no turn",
        });
    };
    turn.outcomes.push(ActionOutcome { slot, result, new_cards: 0, elapsed_ms });
    turn.outcomes.sort_by_key(|o| o.slot);
    if !remaining.is_empty() {
        next.phase = Phase::Acting { pending: remaining };
        return Ok(next);
    }
    for outcome in &mut turn.outcomes {
        let hits = match &outcome.result {
            ActionResult::Retrieval(retrieval) => retrieval.raw_data.as_slice(),
            ActionResult::Graph(graph) => graph.evidence.as_slice(),
            ActionResult::Failed(_) => &[],
        };
        for hit in hits {
            if next.cards.iter().any(|c| c.hit.id == hit.id) {
                continue;
            }
            let n = next.cards.len() as u32 + 1;
            next.cards.push(Card::new(n, state.turn, hit.clone()));
            outcome.new_cards += 1;
        }
    }
    compact::outcomes_to_handles(&mut turn.outcomes);
    compact::compact_cards(&mut next);
    // The fast route is one pass then the answer: no grading, no second turn (seed 001's simple path).
    if state.analysis.route == Route::Fast {
        enter_synthesis(&mut next, TerminationReason::SinglePass);
    } else {
        next.phase = Phase::Grading;
    }
    Ok(next)
}

/// The backend an action had to do without: the embeddings behind a BM25-only search, or the index or graph that
/// was unavailable (the executor's guard gave up on it).
fn degradation(action: Option<&Action>, result: &ActionResult) -> Option<Degradation> {
    match result {
        ActionResult::Retrieval(r) => r.degraded.first().cloned(),
        ActionResult::Failed(e) if e.kind == ErrorKind::Unavailable => {
            let backend = match action? {
                Action::PgGraph { .. } => Backend::Graph,
                _ => Backend::Index,
            };
            let prefix = format!("{} unavailable: ", backend.as_str());
            Some(Degradation::new(backend, e.message.strip_prefix(&prefix).unwrap_or(&e.message)))
        }
        _ => None,
    }
}

/// The retriever weights in force: intake's, after seed 001's post-hoc adjustment for every result recorded so
/// far. Derived from the turns, so the state stores nothing more.
pub fn weights(state: &LoopState) -> RetrieverWeights {
    state.turns.iter().fold(state.analysis.weights, |w, turn| shift_weights(w, &turn.step.actions, &turn.outcomes))
}

/// Seed 001's post-hoc adjustment: a retriever whose results came back with low confidence (nothing, or a
/// failure) hands 0.3 of its weight to the other. Document searches are the vector retriever; entity
/// searches and graph traversals are the graph retriever.
fn shift_weights(mut weights: RetrieverWeights, actions: &[Action], outcomes: &[ActionOutcome]) -> RetrieverWeights {
    for outcome in outcomes {
        if outcome.result.hit_count() > 0 {
            continue;
        }
        weights = match actions.get(outcome.slot as usize) {
            Some(Action::QdrantSearch { search_intent }) if search_intent.entity_type == EntityType::DOCUMENT => {
                weights.shifted_to_graph()
            }
            Some(Action::QdrantSearch { .. } | Action::PgGraph { .. }) => weights.shifted_to_vector(),
            _ => weights,
        };
    }
    weights
}

/// The grader judged the current turn. Sufficient evidence goes straight to synthesis (binding reflection,
/// seed 001); otherwise a cap may end the loop, or the next turn starts.
pub fn apply_report(state: &LoopState, report: SufficiencyReport, now_ms: u64) -> Result<LoopState, TransitionError> {
    if state.phase != Phase::Grading {
        return Err(TransitionError::WrongPhase { phase: state.phase.clone(), wanted: "apply a report" });
    }
    let mut next = state.clone();
    let (hits, new_cards, reached) = next
        .turns
        .last()
        .map(|t| {
            let hits: usize = t.outcomes.iter().map(|o| o.result.hit_count()).sum();
            // A traversal that reached nodes moved the loop on even when its nodes (documents) are not cards.
            let reached = t.outcomes.iter().any(|o| matches!(&o.result, ActionResult::Graph(g) if g.count > 0));
            (hits, t.outcomes.iter().map(|o| o.new_cards).sum::<u32>(), reached)
        })
        .unwrap_or((0, 0, false));
    next.counters.zero_result_steps = if hits == 0 { next.counters.zero_result_steps + 1 } else { 0 };
    next.counters.no_new_information_rounds =
        if new_cards == 0 && !reached { next.counters.no_new_information_rounds + 1 } else { 0 };
    let sufficient = report.sufficient;
    if let Some(turn) = next.turns.last_mut() {
        turn.report = Some(report);
    }
    if sufficient {
        enter_synthesis(&mut next, TerminationReason::Sufficient);
    } else if let Some(reason) = cap_reached(&next, now_ms) {
        enter_synthesis(&mut next, reason);
    } else {
        next.turn += 1;
        next.phase = Phase::Planning;
    }
    Ok(next)
}

/// If the deadline has passed while retrieval is still going on, stop it: synthesize from what was gathered.
/// Returns `None` when nothing needs to change.
pub fn apply_deadline(state: &LoopState, now_ms: u64) -> Option<LoopState> {
    let retrieving = matches!(state.phase, Phase::Planning | Phase::Acting { .. } | Phase::Grading);
    if !retrieving || now_ms < state.deadline_ms {
        return None;
    }
    let mut next = state.clone();
    enter_synthesis(&mut next, TerminationReason::Deadline);
    Some(next)
}

/// Stops a request that is not done yet, whatever it is waiting for: retrieval ends with `reason` and the state
/// waits for synthesis. `None` if the request is already done (the first ending wins).
pub fn apply_stop(state: &LoopState, reason: TerminationReason) -> Option<LoopState> {
    if state.phase == Phase::Done {
        return None;
    }
    let mut next = state.clone();
    enter_synthesis(&mut next, reason);
    Some(next)
}

/// The synthesizer wrote the answer: the request is done.
pub fn apply_response(state: &LoopState, response: AgentResponse, now_ms: u64) -> Result<LoopState, TransitionError> {
    if state.phase != Phase::Synthesizing {
        return Err(TransitionError::WrongPhase { phase: state.phase.clone(), wanted: "apply a response" });
    }
    let mut next = state.clone();
    let mut response = response;
    // The answer says which backends it was written without.
    for d in &state.degraded {
        record_degradation(&mut response.degraded, d.clone());
    }
    next.outcome = Some(Outcome::Answer(response));
    next.phase = Phase::Done;
    next.finished_ms = Some(now_ms);
    Ok(next)
}

/// End the request with an error (a dead letter). `None` if it is already done: the first ending wins.
pub fn apply_failure(state: &LoopState, error: ErrorResponse, now_ms: u64) -> Option<LoopState> {
    if state.phase == Phase::Done {
        return None;
    }
    let mut next = state.clone();
    next.outcome = Some(Outcome::Error(error.for_request(state.request_id)));
    next.phase = Phase::Done;
    next.finished_ms = Some(now_ms);
    Some(next)
}

fn enter_synthesis(state: &mut LoopState, reason: TerminationReason) {
    state.stop_reason = Some(reason);
    state.phase = Phase::Synthesizing;
}
