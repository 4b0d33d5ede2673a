//! The tables `sleuth eval` prints and the JSON it writes: one row per subset (all, multi-hop) and per route, with
//! exact match, F1, the short answers' coverage and precision, the first lines that say the gold answer,
//! recall@k, perfect retrieval@8 and latency percentiles; the LLM's spend per route; and every question's own
//! scores.

use serde_json::json;
use sleuth_messages::{LlmSpend, Route};

use super::{JUDGED, Scored};

pub(super) struct Row {
    pub(super) name: String,
    pub(super) n: usize,
    pub(super) perfect: f64,
    pub(super) perfect_retrieved: f64,
    /// Share of answers containing the gold answer, over the questions that carry one (none: no such question).
    pub(super) contains_gold: Option<f64>,
    pub(super) abstained: f64,
    /// Of the short answers given to questions with a gold answer, the share that say it (none: no short answer).
    pub(super) short_precision: Option<f64>,
    /// Share of the questions the reply leads with a short answer for.
    pub(super) short_coverage: f64,
    /// Share of replies whose first line (the short answer, else the text before the first citation) says the gold
    /// answer, over the questions that carry one.
    pub(super) first_line: Option<f64>,
    /// Exact match and token F1 over the questions that carry a gold answer (none: no such question).
    pub(super) em: Option<f64>,
    pub(super) f1: Option<f64>,
    pub(super) recall: f64,
    pub(super) recall2: f64,
    pub(super) recall5: f64,
    pub(super) all_gold5: f64,
    pub(super) mrr: f64,
    pub(super) p50: f64,
    pub(super) p95: f64,
}

pub(super) fn row(name: &str, items: &[&Scored]) -> Row {
    let n = items.len();
    let mean =
        |f: &dyn Fn(&Scored) -> f64| if n == 0 { 0.0 } else { items.iter().map(|s| f(s)).sum::<f64>() / n as f64 };
    let mut lat: Vec<f64> = items.iter().map(|s| s.latency.as_secs_f64() * 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| if lat.is_empty() { 0.0 } else { lat[((lat.len() - 1) as f64 * p).round() as usize] };
    let golds: Vec<bool> = items.iter().filter_map(|s| s.contains_gold()).collect();
    let scores: Vec<(f64, f64)> = items.iter().filter_map(|s| s.answer_score()).collect();
    let rate = |v: Vec<bool>| (!v.is_empty()).then(|| v.iter().filter(|b| **b).count() as f64 / v.len() as f64);
    let share = |f: &dyn Fn(&(f64, f64)) -> f64| {
        (!scores.is_empty()).then(|| scores.iter().map(f).sum::<f64>() / scores.len() as f64)
    };
    Row {
        name: name.to_string(),
        n,
        perfect: mean(&|s| if s.perfect() { 1.0 } else { 0.0 }),
        perfect_retrieved: mean(&|s| if s.perfect_retrieved() { 1.0 } else { 0.0 }),
        contains_gold: (!golds.is_empty()).then(|| golds.iter().filter(|g| **g).count() as f64 / golds.len() as f64),
        abstained: mean(&|s| if s.abstained { 1.0 } else { 0.0 }),
        short_precision: rate(items.iter().filter_map(|s| s.short_right()).collect()),
        short_coverage: mean(&|s| if s.short.is_some() { 1.0 } else { 0.0 }),
        first_line: rate(items.iter().filter_map(|s| s.first_line_right()).collect()),
        em: share(&|s| s.0),
        f1: share(&|s| s.1),
        recall: mean(&|s| s.recall(JUDGED)),
        recall2: mean(&|s| s.recall(2)),
        recall5: mean(&|s| s.recall(5)),
        all_gold5: mean(&|s| if s.all_gold(5) { 1.0 } else { 0.0 }),
        mrr: mean(&|s| s.reciprocal_rank()),
        p50: pct(0.5),
        p95: pct(0.95),
    }
}

/// The LLM's spend on one set of requests: means per request, and the repair and fallback rates.
pub(super) struct SpendRow {
    pub(super) name: String,
    pub(super) n: usize,
    pub(super) calls: f64,
    pub(super) input: f64,
    pub(super) output: f64,
    pub(super) repairs: u32,
    /// Repaired replies over completions.
    pub(super) repair_rate: f64,
    pub(super) fallbacks: u32,
    /// Share of requests where some agent step fell back to its deterministic twin.
    pub(super) fell_back: f64,
}

/// One row per route, then `all`; empty when no request asked a model.
pub(super) fn llm_rows(scored: &[Scored]) -> Vec<SpendRow> {
    if scored.iter().all(|s| s.llm.is_none()) {
        return Vec::new();
    }
    let spend_row = |name: &str, items: &[&Scored]| {
        let n = items.len().max(1) as f64;
        let sum = |f: &dyn Fn(&LlmSpend) -> u32| items.iter().filter_map(|s| s.llm.as_ref()).map(f).sum::<u32>();
        let calls = sum(&|l| l.calls);
        SpendRow {
            name: name.to_string(),
            n: items.len(),
            calls: f64::from(calls) / n,
            input: f64::from(sum(&|l| l.input_tokens)) / n,
            output: f64::from(sum(&|l| l.output_tokens)) / n,
            repairs: sum(&|l| l.repairs),
            repair_rate: if calls == 0 { 0.0 } else { f64::from(sum(&|l| l.repairs)) / f64::from(calls) },
            fallbacks: sum(&|l| l.fallbacks),
            fell_back: items.iter().filter(|s| s.llm.as_ref().is_some_and(|l| l.fallbacks > 0)).count() as f64 / n,
        }
    };
    let mut out: Vec<SpendRow> = by_route(scored).into_iter().map(|(name, items)| spend_row(&name, &items)).collect();
    out.push(spend_row("all", &scored.iter().collect::<Vec<_>>()));
    out
}

fn rows(scored: &[Scored]) -> Vec<Row> {
    let all: Vec<&Scored> = scored.iter().collect();
    let multi: Vec<&Scored> = scored.iter().filter(|s| s.question.multihop).collect();
    let single: Vec<&Scored> = scored.iter().filter(|s| !s.question.multihop).collect();
    vec![row("all", &all), row("multi-hop", &multi), row("single-hop", &single)]
}

/// One row per route taken, in route order: the route distribution and its latency.
fn route_rows(scored: &[Scored]) -> Vec<Row> {
    by_route(scored).into_iter().map(|(name, items)| row(&name, &items)).collect()
}

/// The questions grouped by the route taken, in route order, each route named; routes nobody took are left out.
fn by_route(scored: &[Scored]) -> Vec<(String, Vec<&Scored>)> {
    [Route::Fast, Route::Enhanced, Route::Agent, Route::Clarify]
        .into_iter()
        .filter_map(|route| {
            let items: Vec<&Scored> = scored.iter().filter(|s| s.route == Some(route)).collect();
            (!items.is_empty()).then(|| (format!("{route:?}").to_lowercase(), items))
        })
        .collect()
}

/// The report as a table, with the failed questions.
pub fn render(scored: &[Scored], mode: &str) -> String {
    let mut out = format!(
        "mode: {mode}\n(perfect@8: final ranking, cited first; retrieved@8: retrieval order alone; gold: answers \
         containing the gold answer; abstain: answers saying the corpus has nothing; short: share of replies \
         with a short answer; short ok: share of those that say the gold answer; line 1: first lines that say it)\n\
         {:<11} {:>4} {:>6} {:>6} {:>6} {:>8} {:>6} {:>10} {:>12} {:>9} {:>9} {:>9} {:>8} {:>7} {:>6} {:>8} {:>8} {:>8}\n",
        "subset",
        "n",
        "EM",
        "F1",
        "short",
        "short ok",
        "line 1",
        "perfect@8",
        "retrieved@8",
        "recall@2",
        "recall@5",
        "recall@8",
        "all@5",
        "MRR@10",
        "gold",
        "abstain",
        "p50 ms",
        "p95 ms"
    );
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |g| format!("{g:.3}"));
    for r in rows(scored) {
        out.push_str(&format!(
            "{:<11} {:>4} {:>6} {:>6} {:>6.3} {:>8} {:>6} {:>10.3} {:>12.3} {:>9.3} {:>9.3} {:>9.3} {:>8.3} {:>7.3} {:>6} {:>8.3} {:>8.1} {:>8.1}\n",
            r.name,
            r.n,
            opt(r.em),
            opt(r.f1),
            r.short_coverage,
            opt(r.short_precision),
            opt(r.first_line),
            r.perfect,
            r.perfect_retrieved,
            r.recall2,
            r.recall5,
            r.recall,
            r.all_gold5,
            r.mrr,
            opt(r.contains_gold),
            r.abstained,
            r.p50,
            r.p95
        ));
    }
    let routes = route_rows(scored);
    if !routes.is_empty() {
        out.push_str(&format!(
            "\n{:<11} {:>4} {:>7} {:>11} {:>9} {:>9}\n",
            "route", "n", "share", "perfect@8", "p50 ms", "p95 ms"
        ));
        for r in routes {
            let share = r.n as f64 / scored.len().max(1) as f64;
            out.push_str(&format!(
                "{:<11} {:>4} {:>7.3} {:>11.3} {:>9.1} {:>9.1}\n",
                r.name, r.n, share, r.perfect, r.p50, r.p95
            ));
        }
    }
    let spend = llm_rows(scored);
    if !spend.is_empty() {
        out.push_str(&format!(
            "\n{:<11} {:>4} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>11}\n",
            "llm", "n", "calls/req", "in tok/req", "out tok/req", "repairs", "repair %", "fallbacks", "fell back %"
        ));
        for r in spend {
            out.push_str(&format!(
                "{:<11} {:>4} {:>10.2} {:>10.0} {:>10.0} {:>9} {:>9.1} {:>10} {:>11.1}\n",
                r.name,
                r.n,
                r.calls,
                r.input,
                r.output,
                r.repairs,
                r.repair_rate * 100.0,
                r.fallbacks,
                r.fell_back * 100.0
            ));
        }
    }
    let failed: Vec<&Scored> = scored.iter().filter(|s| !s.perfect()).collect();
    out.push_str(&format!("\nfailed ({}):\n", failed.len()));
    for s in failed {
        out.push_str(&format!("  {} {:?}\n    missing {:?}\n", s.question.id, s.question.question, s.missing()));
    }
    out
}

/// The report for machines.
pub fn to_json(scored: &[Scored], mode: &str) -> serde_json::Value {
    let subsets: Vec<_> = rows(scored)
        .into_iter()
        .map(|r| json!({"subset": r.name, "n": r.n, "exact_match": r.em, "f1": r.f1, "recall_at_2": r.recall2, "recall_at_5": r.recall5, "all_gold_at_5": r.all_gold5, "perfect_retrieval_at_8": r.perfect, "perfect_retrieval_at_8_retrieval_order": r.perfect_retrieved, "answer_contains_gold": r.contains_gold, "short_answer_precision": r.short_precision, "short_answer_coverage": r.short_coverage, "first_line_contains_gold": r.first_line, "abstention_rate": r.abstained, "recall_at_8": r.recall, "mrr_at_10": r.mrr, "latency_p50_ms": r.p50, "latency_p95_ms": r.p95}))
        .collect();
    let routes: Vec<_> = route_rows(scored)
        .into_iter()
        .map(|r| json!({"route": r.name, "n": r.n, "exact_match": r.em, "f1": r.f1, "recall_at_2": r.recall2, "recall_at_5": r.recall5, "all_gold_at_5": r.all_gold5, "perfect_retrieval_at_8": r.perfect, "latency_p50_ms": r.p50, "latency_p95_ms": r.p95}))
        .collect();
    let llm: Vec<_> = llm_rows(scored)
        .into_iter()
        .map(|r| json!({"route": r.name, "n": r.n, "llm_calls_per_request": r.calls, "input_tokens_per_request": r.input, "output_tokens_per_request": r.output, "repairs": r.repairs, "repair_rate": r.repair_rate, "fallbacks": r.fallbacks, "requests_with_fallback": r.fell_back}))
        .collect();
    let questions: Vec<_> = scored
        .iter()
        .map(|s| {
            let route = s.route.map(|r| format!("{r:?}").to_lowercase());
            let score = s.answer_score();
            json!({"id": s.question.id, "route": route, "perfect": s.perfect(), "perfect_retrieval_order": s.perfect_retrieved(), "missing": s.missing(), "ranked": s.judged(), "answer": s.short.as_ref().or(s.answer.as_ref()), "answer_text": s.answer, "short_answer": s.short, "first_line": s.first_line(), "short_right": s.short_right(), "first_line_contains_gold": s.first_line_right(), "reader": s.reader, "gold_answer": s.question.answer, "exact_match": score.map(|x| x.0), "f1": score.map(|x| x.1), "contains_gold": s.contains_gold(), "abstained": s.abstained, "latency_ms": s.latency.as_secs_f64() * 1000.0, "llm": s.llm.as_ref().map(|l| json!({"calls": l.calls, "input_tokens": l.input_tokens, "output_tokens": l.output_tokens, "repairs": l.repairs, "fallbacks": l.fallbacks}))})
        })
        .collect();
    json!({"mode": mode, "subsets": subsets, "routes": routes, "llm": llm, "questions": questions})
}
