//! LLM planner: writes the request's `PlannerState` once, then one `NextStep` per turn (up to two parallel
//! actions), each validated against the protocol's rules, the intents' vocabularies and the runtime's caps. When
//! the LLM is unavailable, keeps failing validation or the budget is spent, the deterministic [`Planner`] decides
//! instead and the request is marked degraded.

use async_trait::async_trait;
use sleuth_messages::{Action, EntityType, LoopState, NextStep, PlannerState, Route, Stage, WorkItem};

use super::{
    StageLogic, graph,
    planner::{Planner, initial_plan, intake_step},
};
use crate::{
    config::GraphConfig,
    entity_types::EntityTypes,
    llm::{Agent, LlmAgent, Usage, agent::charge, prompts},
    machine,
};

pub struct LlmPlanner {
    pub llm: LlmAgent,
    pub fallback: Planner,
    pub graph: GraphConfig,
}

#[async_trait]
impl StageLogic for LlmPlanner {
    fn stage(&self) -> Stage {
        Stage::Planner
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        // Only the agent route runs the LLM loop; the fast and enhanced routes are deterministic pipelines, and
        // clarifications and meta-questions are decided by intake (seed 001: the agent path costs 4–10× the tokens).
        if state.analysis.route != Route::Agent || intake_step(state).is_some() {
            return self.fallback.apply(state, item).await;
        }
        let mut usage = Usage::default();
        let mut fell_back: Option<String> = None;
        let plan = match state.plan {
            Some(_) => None,
            None => Some(
                match self
                    .llm
                    .ask::<PlannerState>(Agent::Planner, prompts::PLAN, state, &|_: &PlannerState| Ok(()))
                    .await
                {
                    Some(out) => {
                        usage.add(out.usage);
                        match out.result {
                            Ok(plan) => bounded_plan(plan, state),
                            Err(e) => {
                                fell_back = Some(e.to_string());
                                initial_plan(state, &self.fallback.types.get())
                            }
                        }
                    }
                    None => initial_plan(state, &self.fallback.types.get()),
                },
            ),
        };
        let check = |step: &NextStep| check_step(step, state, &self.graph, &self.fallback.types.get());
        let step = match self.llm.ask::<NextStep>(Agent::Planner, prompts::STEP, state, &check).await {
            Some(out) => {
                usage.add(out.usage);
                out.result.unwrap_or_else(|e| {
                    fell_back = Some(e.to_string());
                    self.fallback.step(state)
                })
            }
            None => self.fallback.step(state),
        };
        tracing::info!(
            request_id = %state.request_id, turn = state.turn, tokens = usage.total(), fell_back = fell_back.is_some(),
            actions = ?step.actions.iter().map(|a| a.describe()).collect::<Vec<_>>(), "planned"
        );
        if fell_back.is_some() {
            crate::telemetry::metrics::llm_fallback("planner");
        }
        Ok(machine::apply_plan(&charge(state, usage, fell_back.as_deref()), step, plan)?)
    }
}

/// The model's plan, held to the runtime's caps: its budget and stop conditions can only be tighter.
fn bounded_plan(mut plan: PlannerState, state: &LoopState) -> PlannerState {
    let caps = &state.caps;
    plan.stop_conditions.max_rounds = plan.stop_conditions.max_rounds.clamp(1, caps.max_turns);
    plan.stop_conditions.no_new_information_rounds =
        plan.stop_conditions.no_new_information_rounds.clamp(1, caps.no_new_information_rounds);
    if caps.token_budget > 0 {
        plan.budget.max_tokens = plan.budget.max_tokens.clamp(1, caps.token_budget);
    }
    plan.acceptance_criteria.min_independent_sources = plan.acceptance_criteria.min_independent_sources.clamp(1, 5);
    plan.planner_meta.planner_version = prompts::VERSION.into();
    plan
}

/// A step's intents must be executable as asked: a search needs a query or filters within the hit cap and a
/// collection that exists (documents, or one of the graph's entity `types`), a graph intent must pass the graph
/// stage's own checks (relations, end entity, ids), and no search may repeat.
pub fn check_step(
    step: &NextStep,
    state: &LoopState,
    graph_config: &GraphConfig,
    types: &EntityTypes,
) -> Result<(), String> {
    for action in &step.actions {
        match action {
            Action::QdrantSearch { search_intent: i } => {
                if !i.entity_type.is_document() && !types.contains(&i.entity_type) {
                    let known: Vec<&str> =
                        std::iter::once("document").chain(types.iter().map(EntityType::as_str)).collect();
                    return Err(format!(
                        "search_intent.entity_type {:?} is not in this corpus; use one of: {}",
                        i.entity_type.as_str(),
                        known.join(", ")
                    ));
                }
                let query = i.query.as_deref().map(str::trim).unwrap_or("");
                if query.is_empty() && i.filters.is_empty() {
                    return Err("a qdrant_search needs a query or filters".into());
                }
                if i.limit.is_some_and(|l| l == 0 || l > state.caps.max_hits_per_search) {
                    return Err(format!(
                        "search_intent.limit must be between 1 and {}",
                        state.caps.max_hits_per_search
                    ));
                }
                let repeated = state.turns.iter().flat_map(|t| &t.step.actions).any(|a| {
                    matches!(a, Action::QdrantSearch { search_intent: p }
                        if p.entity_type == i.entity_type && p.filters == i.filters
                        && p.query.as_deref().map(str::trim).unwrap_or("").eq_ignore_ascii_case(query))
                });
                if repeated {
                    return Err(format!("the search {query:?} was already run; broaden or change approach"));
                }
            }
            Action::PgGraph { graph_intent } => {
                // Only the intent's shape is checked here; what it may read is the graph stage's business.
                graph::check(graph_config, graph_intent, &crate::access::Access::shared())
                    .map_err(|e| format!("pg_graph: {e}"))?;
            }
            Action::Clarify { questions } if questions.is_empty() => {
                return Err("clarify needs at least one question".into());
            }
            Action::Clarify { .. } | Action::DatabaseStats {} | Action::Final {} => {}
        }
    }
    Ok(())
}
