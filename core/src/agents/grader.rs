//! Grader: judges whether the evidence answers the question. Deterministic mode runs seed 003's acceptance
//! checks: entities covered, independent sources, literals present, the multi-hop bridge followed, new information.

use sleuth_messages::{CheckOutcome, LoopState, SufficiencyReport};

use super::{
    bridge::{BridgeGroup, bridge_groups, needs_bridge},
    hop,
};
use crate::{entity_types::KnownTypes, text};

/// The deterministic grader. With `graph_bridges`, a multi-hop question's bridge counts as followed only once
/// the anchors' mention links were expanded and their best bridges fetched. With `resolve_entities`, an entity
/// question is answered only once its names are resolved and the graph traversed.
#[derive(Debug, Clone, Default)]
pub struct Grader {
    pub graph_bridges: bool,
    pub resolve_entities: bool,
    /// The graph's entity types, which an entity question asks for.
    pub types: KnownTypes,
}

impl Grader {
    /// The acceptance checks this grader runs, as a report.
    pub fn report(&self, state: &LoopState) -> SufficiencyReport {
        let mut report = grade(state);
        if self.graph_bridges {
            require_graph_bridges(state, &mut report);
        }
        if hop::due(state, self.graph_bridges) {
            require_hops(state, &mut report);
        }
        if self.resolve_entities {
            require_entity_graph(state, &mut report, &self.types.get());
        }
        report
    }
}

fn check(name: &str, passed: bool, detail: String) -> CheckOutcome {
    CheckOutcome { name: name.to_string(), passed, detail }
}

/// Adds the graph's bridge check to `report`: a multi-hop question is not answered while an anchor's links are
/// unexpanded or its best bridges unfetched.
pub fn require_graph_bridges(state: &LoopState, report: &mut SufficiencyReport) {
    if !needs_bridge(state) {
        return;
    }
    let pending = super::bridge::graph_pending(state);
    report.checks.push(check(
        "graph_bridge_followed",
        !pending,
        if pending {
            "anchors' mention links not yet followed".into()
        } else {
            "anchors' mention links followed".into()
        },
    ));
    if pending && report.sufficient {
        report.sufficient = false;
        report.rationale = "failed: graph_bridge_followed".into();
        report.gaps.push("graph_bridge_followed: anchors' mention links not yet followed".into());
    }
}

/// Adds the hop check to `report`: a chained question is not answered while its next hop, rewritten as a question
/// with the bridge the evidence gives, was not searched.
pub fn require_hops(state: &LoopState, report: &mut SufficiencyReport) {
    if !needs_bridge(state) {
        return;
    }
    let hops = hop::next_queries(state, &hop::searched(state));
    report.checks.push(check(
        "next_hop_searched",
        hops.is_empty(),
        if hops.is_empty() { "no hop left to search".into() } else { format!("not yet searched: {hops:?}") },
    ));
    if !hops.is_empty() && report.sufficient {
        report.sufficient = false;
        report.rationale = "failed: next_hop_searched".into();
        report.gaps.push("next_hop_searched: the chain's next hop was not searched".into());
    }
}

/// Adds the entity-graph check to `report`: an entity question is not answered while a name is unresolved (and
/// untried), the graph untraversed, or the reached entities unfetched.
pub fn require_entity_graph(
    state: &LoopState,
    report: &mut SufficiencyReport,
    types: &crate::entity_types::EntityTypes,
) {
    if super::resolve::entity_question(state, types).is_none() {
        return;
    }
    let next = super::resolve::entity_step(state, types);
    report.checks.push(check(
        "entity_graph_followed",
        next.is_none(),
        next.as_ref()
            .map_or_else(|| "entities resolved and the graph traversed".into(), |s| format!("next: {}", s.rationale)),
    ));
    if next.is_some() && report.sufficient {
        report.sufficient = false;
        report.rationale = "failed: entity_graph_followed".into();
        report.gaps.push("entity_graph_followed: names to resolve or graph steps left".into());
    }
}

/// Runs the acceptance checks on the evidence gathered so far.
pub fn grade(state: &LoopState) -> SufficiencyReport {
    let a = &state.analysis;
    let criteria = state.plan.as_ref().map(|p| &p.acceptance_criteria);
    let must_cover = criteria.map(|c| c.must_cover_entities.clone()).unwrap_or_else(|| a.entities.clone());
    let min_sources = criteria.map(|c| c.min_independent_sources).unwrap_or(1);
    let in_evidence = |needle: &str| {
        state.cards.iter().any(|c| text::mentions(&c.hit.title, needle) || text::mentions(&c.hit.text, needle))
    };

    let mut checks = Vec::new();
    let mut missing = Vec::new();
    checks.push(check("evidence_present", !state.cards.is_empty(), format!("{} cards", state.cards.len())));

    let uncovered: Vec<String> = must_cover.iter().filter(|e| !in_evidence(e)).cloned().collect();
    checks.push(check(
        "entities_covered",
        uncovered.is_empty(),
        if uncovered.is_empty() { format!("all of {must_cover:?}") } else { format!("missing {uncovered:?}") },
    ));
    missing.extend(uncovered);

    let stems: Vec<&str> = a.keywords.iter().map(|k| text::stem(k)).collect();
    let mut sources: Vec<&str> = state
        .cards
        .iter()
        .filter(|c| {
            text::tokens(&format!("{} {}", c.hit.title, c.hit.text)).iter().any(|t| stems.contains(&text::stem(t)))
        })
        .map(|c| c.hit.doc_id.as_str())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    checks.push(check(
        "independent_sources",
        sources.len() as u32 >= min_sources,
        format!("{} relevant documents, {min_sources} required", sources.len()),
    ));

    if a.meta_question {
        let stats = state.cards.iter().any(|c| c.hit.id == sleuth_messages::DATABASE_STATS_ID);
        checks.push(check(
            "database_stats_present",
            stats,
            if stats { "the database answered".into() } else { "database_stats not run yet".into() },
        ));
    }

    let absent: Vec<String> = a
        .literal_terms
        .iter()
        .filter(|l| !state.cards.iter().any(|c| c.hit.text.contains(l.as_str()) || c.hit.title.contains(l.as_str())))
        .cloned()
        .collect();
    checks.push(check("literals_present", absent.is_empty(), format!("absent {absent:?}")));
    missing.extend(absent);

    if needs_bridge(state) {
        // Every anchor that names a related entity must have one of those entities followed.
        let groups = bridge_groups(state);
        let followed = |name: &String| {
            state.cards.iter().any(|c| text::mentions(&c.hit.title, name) || text::mentions(name, &c.hit.title))
        };
        let open: Vec<&BridgeGroup> =
            groups.iter().filter(|g| !g.names.is_empty() && !g.names.iter().any(followed)).collect();
        let passed = if groups.iter().all(|g| g.names.is_empty()) { state.turn > 1 } else { open.is_empty() };
        let detail = if passed {
            format!(
                "followed {:?}",
                groups.iter().filter_map(|g| g.names.iter().find(|n| followed(n))).collect::<Vec<_>>()
            )
        } else if open.is_empty() {
            "no related entity named in the evidence".to_string()
        } else {
            format!("not yet followed: {:?}", open.iter().map(|g| &g.names).collect::<Vec<_>>())
        };
        checks.push(check("bridge_followed", passed, detail));
        missing.extend(open.iter().filter_map(|g| g.names.first().cloned()));
    }

    let new_cards: u32 = state.turns.last().map(|t| t.outcomes.iter().map(|o| o.new_cards).sum()).unwrap_or(0);
    let no_new_information = state.turn > 1 && new_cards == 0;

    let passed = checks.iter().filter(|c| c.passed).count();
    let sufficient = passed == checks.len();
    let confidence = (passed as f32 / checks.len() as f32) * if sufficient { 0.9 } else { 0.6 };
    let failed: Vec<&str> = checks.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
    SufficiencyReport {
        sufficient,
        confidence,
        rationale: if sufficient {
            "all acceptance checks pass".into()
        } else {
            format!("failed: {}", failed.join(", "))
        },
        gaps: checks.iter().filter(|c| !c.passed).map(|c| format!("{}: {}", c.name, c.detail)).collect(),
        missing,
        new_queries: Vec::new(),
        checks,
        no_new_information,
    }
}
