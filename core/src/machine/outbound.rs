//! [`next_messages`]: what to publish, derived from the state alone.

use sleuth_messages::{
    AskReply, Envelope, Event, EventBody, EventKind, LoopState, Outcome, Phase, ReplyTo, SCHEMA_VERSION, Stage,
    TurnBrief, WorkItem,
};

use super::phase::{current_action, executor_of};

/// One message to publish. Work and events carry their own de-duplication ids.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    Work(WorkItem),
    Event(Event),
    /// Arms the request's deadline timer (once per request: the bus de-duplicates it).
    Deadline(Envelope),
    Reply(ReplyTo, AskReply),
}

/// Who may send work to `to`: `by` is the stage whose commit (or its redelivery) publishes, `None` for whatever
/// ends a request from outside the loop (cancel, the deadline watchdog, a dead letter). Each stage sends work
/// only to the stage its own commits lead to; any hop may send a request to synthesis (a passed deadline).
/// `deploy/nats/accounts.conf` grants each stage user exactly these subjects, and a test holds them together.
pub fn may_send(by: Option<Stage>, to: Stage) -> bool {
    match to {
        Stage::Synthesizer => true,
        Stage::Planner => matches!(by, Some(Stage::Intake | Stage::Grader)),
        Stage::Retrieve | Stage::Graph => by == Some(Stage::Planner),
        Stage::Grader => matches!(by, Some(Stage::Retrieve | Stage::Graph)),
        Stage::Intake => false,
    }
}

/// The messages that the state calls for, as `by` may send them ([`may_send`]). Publishing them twice is
/// harmless: work and events are de-duplicated by id, and a stale work item is recognised by [`super::expects`].
///
/// A turn's actions are sent by the planner that committed them, all at once; an executor that records one slot
/// while a sibling is still pending sends no work (the sibling's was sent with the plan, and a planner whose
/// publishing died re-sends it on redelivery). Intake alone arms the deadline timer.
pub fn next_messages(state: &LoopState, by: Option<Stage>) -> Vec<Outbound> {
    let event = |turn: u32, kind: EventKind, body: EventBody| {
        Outbound::Event(Event { request_id: state.request_id, turn, kind, body })
    };
    let last_report = |turn: u32| state.turns.iter().find(|t| t.turn == turn).and_then(|t| t.report.clone());

    let mut out = Vec::new();
    match &state.phase {
        Phase::Planning => {
            if state.turn == 1 {
                if by == Some(Stage::Intake) {
                    out.push(Outbound::Deadline(Envelope {
                        schema_version: SCHEMA_VERSION,
                        request_id: state.request_id,
                        turn: 0,
                        step: 0,
                        deadline_ms: state.deadline_ms,
                        attempt: 0,
                    }));
                }
                out.push(event(0, EventKind::Accepted, EventBody::Accepted(state.analysis.clone())));
            } else if let Some(report) = last_report(state.turn - 1) {
                out.push(event(state.turn - 1, EventKind::Graded, EventBody::Graded(report)));
            }
        }
        Phase::Acting { .. } => {
            if let Some(turn) = state.turns.last() {
                out.push(event(state.turn, EventKind::Planned, EventBody::Planned(turn.step.clone())));
            }
        }
        Phase::Grading => {
            let new_cards = state.turns.last().map(|t| t.outcomes.iter().map(|o| o.new_cards).sum()).unwrap_or(0);
            out.push(event(
                state.turn,
                EventKind::Retrieved,
                EventBody::Retrieved { cards: state.cards.len() as u32, new_cards },
            ));
        }
        Phase::Synthesizing => {
            if let Some(report) = last_report(state.turn) {
                out.push(event(state.turn, EventKind::Graded, EventBody::Graded(report)));
            }
        }
        Phase::Done => {
            let reply = reply_of(state);
            if let Some(to) = &state.reply {
                out.push(Outbound::Reply(to.clone(), reply.clone()));
            }
            out.push(event(state.turn, EventKind::Final, EventBody::Final(reply)));
        }
    }
    out.extend(work_items(state, by).map(Outbound::Work));
    out
}

/// The work the state calls for that `by` may send, in slot order (the work part of [`next_messages`]).
pub fn work_items(state: &LoopState, by: Option<Stage>) -> impl Iterator<Item = WorkItem> + '_ {
    let work = move |stage: Stage, step: u32| {
        may_send(by, stage).then_some(WorkItem {
            envelope: Envelope {
                schema_version: SCHEMA_VERSION,
                request_id: state.request_id,
                turn: state.turn,
                step,
                deadline_ms: state.deadline_ms,
                attempt: 0,
            },
            stage,
        })
    };
    // Every phase but acting sends one stage's work; acting sends a turn's pending slots (no allocation: this runs
    // on every hop).
    let (single, pending): (Option<(Stage, u32)>, &[u32]) = match &state.phase {
        Phase::Planning => (Some((Stage::Planner, 0)), &[]),
        Phase::Acting { pending } => (None, pending),
        Phase::Grading => (Some((Stage::Grader, 0)), &[]),
        Phase::Synthesizing => (Some((Stage::Synthesizer, 0)), &[]),
        Phase::Done => (None, &[]),
    };
    let slots =
        pending.iter().filter_map(|slot| current_action(state, *slot).and_then(executor_of).map(|s| (s, *slot)));
    single.into_iter().chain(slots).filter_map(move |(stage, step)| work(stage, step))
}

/// The first work item the state calls for that `by` may send: what a hop's commit carries over NATS.
pub fn first_work(state: &LoopState, by: Option<Stage>) -> Option<WorkItem> {
    work_items(state, by).next()
}

/// The client-facing reply: the outcome plus a brief of every turn.
pub fn reply_of(state: &LoopState) -> AskReply {
    let outcome = state.outcome.clone().unwrap_or_else(|| {
        Outcome::Error(sleuth_messages::ErrorResponse::new(
            sleuth_messages::ErrorKind::Internal,
            "request has no outcome yet",
        ))
    });
    let turns = state
        .turns
        .iter()
        .map(|t| TurnBrief {
            turn: t.turn,
            rationale: t.step.rationale.clone(),
            actions: t.step.actions.iter().map(|a| a.describe()).collect(),
            hits: t.outcomes.iter().map(|o| o.result.hit_count() as u32).sum(),
            new_cards: t.outcomes.iter().map(|o| o.new_cards).sum(),
            sufficient: t.report.as_ref().map(|r| r.sufficient),
            grader: t.report.as_ref().map(|r| r.rationale.clone()),
        })
        .collect();
    AskReply {
        request_id: Some(state.request_id),
        outcome,
        turns,
        elapsed_ms: state.finished_ms.unwrap_or(state.created_ms).saturating_sub(state.created_ms),
        route: Some(state.analysis.route),
        complexity: Some(state.analysis.complexity.clone()),
        llm: sleuth_messages::LlmSpend::of(&state.counters),
    }
}
