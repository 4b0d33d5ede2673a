//! Planner: decides the next bounded step of the loop. Deterministic mode: search for the question first, then
//! for what the grader found missing or for the entities named in retrieved cards that the question needs.

use sleuth_messages::{
    Action, ClarifyingQuestion, LoopState, NextStep, PlannerState, QueryType, Route, SearchIntent,
    plan::{
        AcceptanceCriteria, AnswerRequirements, Budget, LiteralConstraints, PlannerMeta, Rerank, RetrievalMode,
        RetrievalModeType, RetrievalRound, RoundPurpose, Safety, Sensitivity, StopConditions, Strategy,
    },
};

use super::{
    bridge::{self, bridge_groups, expand_action, fetch_action, graph_anchors, graph_bridges, needs_bridge},
    hop, resolve,
};
use crate::{entity_types::KnownTypes, machine, text};

/// The deterministic planner. With `resolve_entities`, questions about the graph's entities resolve their names
/// and traverse the graph ([`resolve`](super::resolve)). With `graph_bridges`, multi-hop questions follow the
/// anchors' mention links through the graph stage; without, they search for the names the anchors' relation
/// sentences carry.
#[derive(Debug, Clone, Default)]
pub struct Planner {
    pub graph_bridges: bool,
    pub resolve_entities: bool,
    /// The graph's entity types, which an entity question asks for.
    pub types: KnownTypes,
}

impl Planner {
    /// This planner's step for the current turn. The clarify route asks its questions; a meta-question asks
    /// the database. Otherwise the entity graph is tried first when its weight is not under the skip threshold
    /// (seed 001: a confident factual question does not touch it), then the documents' mention links, then
    /// document search; a chained question also searches its next hop rewritten as a question ([`hop`]).
    pub fn step(&self, state: &LoopState) -> NextStep {
        if let Some(step) = intake_step(state) {
            return step;
        }
        let graph_lane = self.resolve_entities && machine::weights(state).runs_graph();
        let step = graph_lane
            .then(|| resolve::entity_step(state, &self.types.get()))
            .flatten()
            .or_else(|| self.graph_bridges.then(|| graph_step(state)).flatten())
            .and_then(|step| without_repeats(state, step))
            .unwrap_or_else(|| next_step(state));
        if hop::due(state, self.graph_bridges) { with_hops(state, step) } else { step }
    }
}

/// `action` with its rationale blanked: two actions are the same lookup whatever reason they give.
fn lookup(action: &Action) -> Action {
    let mut action = action.clone();
    match &mut action {
        Action::QdrantSearch { search_intent } => search_intent.rationale.clear(),
        Action::PgGraph { graph_intent } => graph_intent.rationale.clear(),
        _ => {}
    }
    action
}

/// The lookups of earlier turns that found nothing, and every lookup made so far.
fn lookups(state: &LoopState) -> (Vec<Action>, Vec<Action>) {
    let (mut empty, mut all) = (Vec::new(), Vec::new());
    for turn in &state.turns {
        for (slot, action) in turn.step.actions.iter().enumerate() {
            let found = turn.outcomes.iter().find(|o| o.slot as usize == slot).map(|o| o.result.hit_count());
            if found == Some(0) {
                empty.push(lookup(action));
            }
            all.push(lookup(action));
        }
    }
    (empty, all)
}

/// `step` without the lookups that already found nothing (seed 001 shifts weight after an empty result, seed 002
/// reformulates): a lookup in the entity collection that found nothing becomes the same query over the
/// documents, unless that was searched too; any other repeat is dropped. `None` when nothing is left, so the
/// document lane plans instead.
pub fn without_repeats(state: &LoopState, step: NextStep) -> Option<NextStep> {
    let (empty, all) = lookups(state);
    let mut actions: Vec<Action> = Vec::new();
    let mut rationale = vec![step.rationale];
    for action in step.actions {
        if !empty.contains(&lookup(&action)) {
            actions.push(action);
            continue;
        }
        let Action::QdrantSearch { search_intent } = &action else { continue };
        let Some(query) = search_intent.query.clone() else { continue };
        let why = format!(
            "the {} collection had nothing for {query}: search the documents instead",
            search_intent.entity_type.as_str()
        );
        let fallback = search(why.clone(), query);
        if all.contains(&lookup(&fallback)) || actions.iter().any(|a| lookup(a) == lookup(&fallback)) {
            continue;
        }
        rationale.push(why);
        actions.push(fallback);
    }
    (!actions.is_empty()).then(|| NextStep { rationale: rationale.join("; "), actions })
}

/// The steps intake's analysis decides: clarify on the clarify route, `database_stats` for a meta-question.
pub fn intake_step(state: &LoopState) -> Option<NextStep> {
    let a = &state.analysis;
    if a.route == Route::Clarify && state.turn == 1 {
        let mut questions = a.clarifying_questions.clone();
        if questions.is_empty() {
            questions.push(ClarifyingQuestion {
                question: "Could you say more precisely what you are looking for?".into(),
                reason: a.complexity.reason.clone(),
                blocking: true,
            });
        }
        return Some(NextStep::single(
            "the question is ambiguous: ask before searching",
            Action::Clarify { questions },
        ));
    }
    let asked = state.turns.iter().flat_map(|t| &t.step.actions).any(|a| matches!(a, Action::DatabaseStats {}));
    (a.meta_question && !asked).then(|| {
        NextStep::single("a question about the database itself: ask the database_stats tool", Action::DatabaseStats {})
    })
}

/// How many independent sources the question needs: two when it relates or compares things, or hops through a relation.
pub fn min_sources(state: &LoopState) -> u32 {
    let a = &state.analysis;
    let relational = matches!(a.query_type, QueryType::Comparative | QueryType::Relational) && a.entities.len() >= 2;
    if relational || needs_bridge(state) { 2 } else { 1 }
}

/// The plan for the whole request, emitted once (seed 003 PlannerState).
pub fn initial_plan(state: &LoopState, types: &crate::entity_types::EntityTypes) -> PlannerState {
    let a = &state.analysis;
    let literal = !a.literal_terms.is_empty();
    let mut tags = vec![format!("route_{:?}", a.route).to_lowercase()];
    if literal {
        tags.push("literal_term_present".into());
    }
    if needs_bridge(state) {
        tags.push("multi_hop_relation".into());
    }
    if resolve::entity_question(state, types).is_some() {
        tags.push("entity_question".into());
    }
    if a.meta_question {
        tags.push("database_meta".into());
    }
    let k = state.caps.max_hits_per_search;
    // Literals force exact, BM25-only matching (seed 003); otherwise both lanes fused with RRF.
    let modes = if literal {
        vec![RetrievalMode { mode: RetrievalModeType::Bm25, k, alpha: None }]
    } else {
        vec![
            RetrievalMode { mode: RetrievalModeType::Vector, k, alpha: None },
            RetrievalMode { mode: RetrievalModeType::Bm25, k, alpha: None },
        ]
    };
    PlannerState {
        goal: a.normalized.clone(),
        strategy: if a.route == Route::Clarify { Strategy::ClarifyThenRetrieve } else { Strategy::RetrieveThenAnswer },
        clarifying_questions: a.clarifying_questions.clone(),
        retrieval_rounds: vec![RetrievalRound {
            round_id: 1,
            purpose: RoundPurpose::Recall,
            query_variants: if a.subquestions.len() > 1 { a.subquestions.clone() } else { vec![a.rewritten.clone()] },
            rrf: !literal,
            retrieval_modes: modes,
            filters: Default::default(),
            use_hyde: false,
            rerank: Rerank { enabled: false, model: "cross_encoder".into(), rerank_top_k: 0 },
            max_docs: state.caps.max_hits_per_search,
        }],
        literal_constraints: LiteralConstraints {
            must_preserve_terms: a.literal_terms.clone(),
            must_match_exactly: literal,
        },
        acceptance_criteria: AcceptanceCriteria {
            min_independent_sources: min_sources(state),
            require_authoritative_source: false,
            must_cover_entities: a.entities.clone(),
            must_answer_subquestions: None,
        },
        stop_conditions: StopConditions {
            max_rounds: state.caps.max_turns,
            max_total_docs: state.caps.max_turns * state.caps.max_hits_per_search,
            confidence_threshold: None,
            no_new_information_rounds: state.caps.no_new_information_rounds,
        },
        answer_requirements: AnswerRequirements {
            format: vec!["extractive".into(), "citations".into()],
            tone: None,
            length: Some("short".into()),
            citation_style: Some("[n]".into()),
        },
        budget: Budget {
            max_tokens: state.caps.token_budget,
            max_latency_ms: Some(state.deadline_ms.saturating_sub(state.created_ms)),
        },
        safety: Safety { sensitivity: Sensitivity::Public, pii_allowed: false },
        planner_meta: PlannerMeta { planner_version: "deterministic-1".into(), rationale_tags: tags },
    }
}

fn search(rationale: impl Into<String>, query: impl Into<String>) -> Action {
    Action::QdrantSearch { search_intent: SearchIntent::documents(rationale, query) }
}

/// `step` with the chain's next hop searched beside it ([`hop`]): in a free slot, or instead of a final step that
/// would answer before the rewritten question was searched.
fn with_hops(state: &LoopState, step: NextStep) -> NextStep {
    if state.turn == 1 {
        return step;
    }
    let planned = |q: &String, step: &NextStep| {
        step.actions.iter().any(|a| match a {
            Action::QdrantSearch { search_intent } => {
                search_intent.query.as_ref().is_some_and(|x| x.eq_ignore_ascii_case(q))
            }
            _ => false,
        })
    };
    let queries: Vec<String> =
        hop::next_queries(state, &hop::searched(state)).into_iter().filter(|q| !planned(q, &step)).collect();
    if queries.is_empty() {
        return step;
    }
    // A graph step keeps its actions and the hop takes a free slot; searches for names go after the hop.
    let graph = step.actions.iter().any(|a| matches!(a, Action::PgGraph { .. }) || !bridge::fetches(a).is_empty());
    let others: Vec<Action> = step.actions.into_iter().filter(|a| !matches!(a, Action::Final {})).collect();
    let hops: Vec<Action> = queries
        .into_iter()
        .map(|query| search(format!("search the chain's next hop as a question: {query}"), query))
        .collect();
    let mut actions: Vec<Action> =
        if graph { others.into_iter().chain(hops).collect() } else { hops.into_iter().chain(others).collect() };
    actions.truncate(sleuth_messages::MAX_PARALLEL_ACTIONS);
    let rationale = actions.iter().filter_map(rationale_of).collect::<Vec<_>>().join("; ");
    NextStep { rationale, actions }
}

/// The reason an action gives for itself.
fn rationale_of(action: &Action) -> Option<&str> {
    match action {
        Action::QdrantSearch { search_intent } => Some(search_intent.rationale.as_str()),
        Action::PgGraph { graph_intent } => Some(graph_intent.rationale.as_str()),
        _ => None,
    }
}

/// The multi-hop step through the graph, if one is due: fetch the best bridges of expanded anchors, else expand
/// the anchors (the cards the question names) through their `mentions` links.
pub fn graph_step(state: &LoopState) -> Option<NextStep> {
    if state.turn == 1 || !needs_bridge(state) {
        return None;
    }
    let bridges = graph_bridges(state);
    let actions: Vec<Action> = if !bridges.is_empty() {
        bridges
            .iter()
            .take(sleuth_messages::MAX_PARALLEL_ACTIONS)
            .map(|(anchor, docs)| fetch_action(state, anchor, docs))
            .collect()
    } else {
        let expanded_before =
            state.turns.iter().flat_map(|t| &t.step.actions).any(|a| matches!(a, Action::PgGraph { .. }));
        let anchors = graph_anchors(state);
        if expanded_before && anchors.is_empty() {
            return None;
        }
        anchors.iter().take(sleuth_messages::MAX_PARALLEL_ACTIONS).map(expand_action).collect()
    };
    if actions.is_empty() {
        return None;
    }
    let rationale = actions.iter().filter_map(rationale_of).collect::<Vec<_>>().join("; ");
    Some(NextStep { rationale, actions })
}

/// The deterministic planner's step for the current turn.
pub fn next_step(state: &LoopState) -> NextStep {
    let a = &state.analysis;
    let done = hop::searched(state);
    let fresh = |q: &String| !q.trim().is_empty() && !done.contains(&q.to_lowercase());

    if state.turn == 1 {
        if a.query_type == QueryType::Comparative && a.entities.len() >= 2 {
            let rest: Vec<&String> =
                a.keywords.iter().filter(|k| !a.entities.iter().any(|e| text::mentions(e, k))).collect();
            let tail = rest.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
            return NextStep {
                rationale: "compare two entities: look both up in parallel".into(),
                actions: vec![
                    search("first entity of the comparison", format!("{} {tail}", a.entities[0]).trim().to_string()),
                    search("second entity of the comparison", format!("{} {tail}", a.entities[1]).trim().to_string()),
                ],
            };
        }
        // A question decomposed into several (two questions in one, "… and when was it released?") searches
        // the first two in parallel.
        let parts: Vec<&String> = a.subquestions.iter().filter(|q| !q.eq_ignore_ascii_case(&a.normalized)).collect();
        if parts.len() >= 2 {
            return NextStep {
                rationale: "the question asks two things: search both sub-questions in parallel".into(),
                actions: parts
                    .iter()
                    .take(2)
                    .map(|q| search("sub-question", q.trim_end_matches('?').to_string()))
                    .collect(),
            };
        }
        return NextStep::single("search for the question", search("the question as asked", a.rewritten.clone()));
    }

    let last = state.turns.last();
    let report = last.and_then(|t| t.report.as_ref());
    let mut queries: Vec<(String, String)> = Vec::new();
    if let Some(report) = report {
        for missing in report.missing.iter().chain(&report.new_queries) {
            if fresh(missing) && !queries.iter().any(|(q, _)| q.eq_ignore_ascii_case(missing)) {
                queries.push((missing.clone(), format!("look up {missing}, which the evidence does not cover yet")));
            }
        }
    }
    // Unexplored bridges, best of each anchor first, so "compare the directors of X and Y" follows both in
    // parallel and a single anchor gets its two likeliest candidates tried at once.
    let groups = bridge_groups(state);
    let depth = groups.iter().map(|g| g.names.len()).max().unwrap_or(0);
    for rank in 0..depth {
        for group in &groups {
            if let Some(name) = group.names.get(rank)
                && fresh(name)
                && !queries.iter().any(|(q, _)| q.eq_ignore_ascii_case(name))
            {
                queries.push((
                    name.clone(),
                    format!("follow {name}, named in {}, which the question needs", group.anchor),
                ));
            }
        }
    }
    let zero_last = last.is_some_and(|t| t.outcomes.iter().all(|o| o.result.hit_count() == 0));
    if queries.is_empty() && zero_last {
        let broad = a.keywords.join(" ");
        if fresh(&broad) {
            queries.push((broad, "the last search found nothing: broaden to the question's keywords".into()));
        }
    }
    if queries.is_empty() {
        return NextStep::single("nothing new left to search: answer from the evidence", Action::Final {});
    }
    queries.truncate(sleuth_messages::MAX_PARALLEL_ACTIONS);
    let rationale = queries.iter().map(|(_, r)| r.as_str()).collect::<Vec<_>>().join("; ");
    NextStep { rationale, actions: queries.into_iter().map(|(q, r)| search(r, q)).collect() }
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{ActionOutcome, ActionResult, EntityType, RetrievalResult, TurnRecord};

    use super::*;
    use crate::fixtures;

    fn entity_search(query: &str) -> Action {
        let mut intent = SearchIntent::documents("resolve the name", query);
        intent.entity_type = EntityType::parse("character").unwrap();
        Action::QdrantSearch { search_intent: intent }
    }

    #[test]
    fn a_lookup_that_found_nothing_is_not_repeated_but_moved_to_the_documents() {
        let mut state = fixtures::state_for("In what film did Roddy Maude-Roxby play a character?");
        let empty = ActionResult::Retrieval(RetrievalResult {
            summary: String::new(),
            raw_data: Vec::new(),
            count: 0,
            from_cache: false,
            degraded: Vec::new(),
        });
        state.turns.push(TurnRecord {
            turn: 1,
            step: NextStep { rationale: "resolve".into(), actions: vec![entity_search("Roddy Maude-Roxby")] },
            outcomes: vec![ActionOutcome { slot: 0, result: empty, new_cards: 0, elapsed_ms: 1 }],
            report: None,
        });
        let again = NextStep { rationale: "resolve again".into(), actions: vec![entity_search("Roddy Maude-Roxby")] };
        let step = without_repeats(&state, again.clone()).expect("a reformulated step");
        assert_eq!(step.actions.len(), 1);
        assert_eq!(step.actions[0].describe(), "qdrant_search document \"Roddy Maude-Roxby\"", "{step:?}");

        // Once the documents were searched for it too, nothing of the step is left.
        state.turns[0].step.actions.push(search("fallback", "Roddy Maude-Roxby"));
        let nothing = state.turns[0].outcomes[0].result.clone();
        state.turns[0].outcomes.push(ActionOutcome { slot: 1, result: nothing, new_cards: 0, elapsed_ms: 1 });
        assert_eq!(without_repeats(&state, again), None);
    }
}
