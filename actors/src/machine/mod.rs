//! The loop state machine: plain functions from a [`LoopState`] (plus a stage's result) to the next one. No I/O, no clock.
//!
//! Every stage follows the same rule (at-least-once delivery, exactly-once effect): load the state, check with [`expects`] that the
//! work still applies, compute the new state with one of the `apply_*` functions, commit it with
//! compare-and-swap, then publish [`next_messages`] of the committed state. Because what is published is a
//! function of the state alone, a redelivered or re-run message can only re-publish the same messages,
//! which the bus de-duplicates by id.

mod caps;
mod compact;
mod outbound;
pub mod ranking;
#[cfg(test)]
mod tests;

pub use caps::{budget_spent, cap_reached, caps_for};
pub use outbound::{Outbound, first_work, may_send, next_messages, reply_of, work_items};

use sleuth_messages::degraded::record as record_degradation;
use sleuth_messages::{
    Action, ActionOutcome, ActionResult, AgentResponse, AskRequest, Backend, Caps, Card, Degradation, EntityType,
    ErrorKind, ErrorResponse, LoopState, NextStep, Outcome, Phase, PlannerState, QueryAnalysis, ReplyTo,
    RetrieverWeights, Route, SCHEMA_VERSION, Stage, SufficiencyReport, TerminationReason, TurnRecord, WorkItem,
};
use uuid::Uuid;

use crate::telemetry::TraceHeaders;

/// Why a transition was refused. These are programming or model errors, not transient ones.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TransitionError {
    #[error("invalid next step: {0}")]
    InvalidStep(String),
    #[error("state is in phase {phase:?}, cannot {wanted}")]
    WrongPhase { phase: Phase, wanted: &'static str },
}

/// Everything intake knows when it creates a request.
pub struct NewRequest {
    pub request_id: Uuid,
    pub request: AskRequest,
    pub analysis: QueryAnalysis,
    pub caps: Caps,
    pub now_ms: u64,
    pub deadline_ms: u64,
    pub reply: Option<ReplyTo>,
    /// The context of the request's root span `sleuth.ask`.
    pub trace: TraceHeaders,
    /// Intake made the root up: the process that ends the request records it.
    pub records_root_span: bool,
}

/// The first state of a request: turn 1, waiting for the planner.
pub fn new_state(new: NewRequest) -> LoopState {
    LoopState {
        schema_version: SCHEMA_VERSION,
        request_id: new.request_id,
        request: new.request,
        analysis: new.analysis,
        plan: None,
        reply: new.reply,
        owner: None,
        traceparent: new.trace.traceparent,
        tracestate: new.trace.tracestate,
        baggage: new.trace.baggage,
        records_root_span: new.records_root_span,
        created_ms: new.now_ms,
        deadline_ms: new.deadline_ms,
        caps: new.caps,
        turn: 1,
        phase: Phase::Planning,
        stop_reason: None,
        turns: Vec::new(),
        cards: Vec::new(),
        counters: Default::default(),
        degraded: Vec::new(),
        outcome: None,
        finished_ms: None,
    }
}

/// The context of the request's root span, as the state keeps it.
pub fn root_trace(state: &LoopState) -> TraceHeaders {
    TraceHeaders {
        traceparent: state.traceparent.clone(),
        tracestate: state.tracestate.clone(),
        baggage: state.baggage.clone(),
    }
}

/// The stage that executes an action, or `None` for actions that end retrieval.
pub fn executor_of(action: &Action) -> Option<Stage> {
    match action {
        Action::QdrantSearch { .. } | Action::DatabaseStats {} => Some(Stage::Retrieve),
        Action::PgGraph { .. } => Some(Stage::Graph),
        Action::Clarify { .. } | Action::Final {} => None,
    }
}

/// Does `item` still have work to do against `state`? `false` means it is a duplicate or stale: its effect is
/// already recorded, and the stage should only re-publish [`next_messages`] and ack.
pub fn expects(state: &LoopState, item: &WorkItem) -> bool {
    if item.envelope.turn != state.turn {
        return false;
    }
    match (&state.phase, item.stage) {
        (Phase::Planning, Stage::Planner) => true,
        (Phase::Acting { pending }, stage) => {
            let slot = item.envelope.step;
            pending.contains(&slot) && current_action(state, slot).and_then(executor_of) == Some(stage)
        }
        (Phase::Grading, Stage::Grader) => true,
        (Phase::Synthesizing, Stage::Synthesizer) => true,
        _ => false,
    }
}

/// Could `item`'s own commit have left the request in `state`? Then what `state` calls for is this stage's to
/// (re-)publish: a delivery that finds its work already applied re-publishes only in that case, to cover a
/// crash between its first commit and its publishing. Later phases were published by whoever reached them.
/// What it re-publishes is still only what [`may_send`] lets it send: an executor that finds a sibling slot of
/// its turn pending leaves that slot's work to the planner (each stage's NATS user is allowed only its own).
pub fn published_by(state: &LoopState, item: &WorkItem) -> bool {
    let turn = item.envelope.turn;
    let ended_by_deadline = state.stop_reason == Some(TerminationReason::Deadline);
    match (item.stage, &state.phase) {
        // Any stage may find the deadline passed and send the request to synthesis.
        (_, Phase::Synthesizing) if ended_by_deadline => true,
        (Stage::Planner, Phase::Acting { .. } | Phase::Synthesizing) => state.turn == turn,
        (Stage::Retrieve | Stage::Graph, Phase::Acting { .. } | Phase::Grading | Phase::Synthesizing) => {
            state.turn == turn
        }
        (Stage::Grader, Phase::Planning) => state.turn == turn + 1,
        (Stage::Grader, Phase::Synthesizing) => state.turn == turn,
        (Stage::Synthesizer, Phase::Done) => true,
        _ => false,
    }
}

/// The stage the request is waiting for, or `None` once it is done.
pub fn waiting_on(state: &LoopState) -> Option<Stage> {
    match &state.phase {
        Phase::Planning => Some(Stage::Planner),
        Phase::Acting { pending } => {
            pending.first().and_then(|slot| current_action(state, *slot)).and_then(executor_of)
        }
        Phase::Grading => Some(Stage::Grader),
        Phase::Synthesizing => Some(Stage::Synthesizer),
        Phase::Done => None,
    }
}

/// The action in slot `slot` of the current turn.
pub fn current_action(state: &LoopState, slot: u32) -> Option<&Action> {
    state.turns.last().filter(|t| t.turn == state.turn)?.step.actions.get(slot as usize)
}

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
