//! `sleuth eval QUESTIONS.json`: scores retrieval against gold titles, through the loop or as a single retrieval
//! pass. Reports perfect retrieval@8 (every gold title among the 8 passages finally retrieved or cited) on the final
//! ranking (cited first) and on retrieval order alone, recall@k, MRR@10, the share of answers that contain the gold
//! answer and of answers that abstain, the multi-hop subset, latency percentiles and the failed questions. Answers
//! are scored the way the field scores them ([`answer_score`]): exact match and token F1 of the short answer against
//! the gold answer, after SQuAD's normalisation.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use serde_json::json;
use sleuth_messages::{AskRequest, Card, LlmSpend, LoopState, Outcome, Route};

pub use self::answers::{answer_score, normalize_answer};
use crate::{
    config::Config,
    index::PayloadFilter,
    ingest,
    machine::ranking::ranking,
    node::Node,
    reader,
    retrieval::Retriever,
    stages::{intake::chain::links, synthesizer::NO_EVIDENCE},
};

mod answers;

/// Passages a question is judged on (fast-graphrag's benchmark retrieves 8).
pub const JUDGED: usize = 8;

#[derive(Debug, Clone)]
pub struct Question {
    pub id: String,
    pub question: String,
    pub gold_titles: Vec<String>,
    pub multihop: bool,
    /// The gold answer string, where the questions file carries one.
    pub answer: Option<String>,
}

/// One question's result.
#[derive(Debug, Clone)]
pub struct Scored {
    pub question: Question,
    /// Titles in the order the system reports them (cited first, then retrieved).
    pub ranked: Vec<String>,
    /// Titles in retrieval order alone: the final ranking of the evidence, citations aside.
    pub retrieved: Vec<String>,
    /// The answer the loop wrote (none in single-pass mode), and whether it abstained.
    pub answer: Option<String>,
    /// The short answer the reply led with, when it had one.
    pub short: Option<String>,
    pub abstained: bool,
    pub latency: Duration,
    /// The route intake chose (none in single-pass mode).
    pub route: Option<Route>,
    /// What the LLM cost the request (none without a model, or in single-pass mode).
    pub llm: Option<LlmSpend>,
}

impl Scored {
    fn judged(&self) -> &[String] {
        &self.ranked[..self.ranked.len().min(JUDGED)]
    }
    pub fn missing(&self) -> Vec<&String> {
        self.question.gold_titles.iter().filter(|g| !self.judged().contains(g)).collect()
    }
    pub fn perfect(&self) -> bool {
        self.missing().is_empty()
    }
    /// Perfect retrieval@8 on retrieval order alone.
    pub fn perfect_retrieved(&self) -> bool {
        let top = &self.retrieved[..self.retrieved.len().min(JUDGED)];
        self.question.gold_titles.iter().all(|g| top.contains(g))
    }
    /// Whether the answer contains the gold answer (case, punctuation and spacing aside); `None` without both.
    pub fn contains_gold(&self) -> Option<bool> {
        let (answer, gold) = (self.answer.as_ref()?, self.question.answer.as_ref()?);
        let fold = |s: &str| {
            s.chars()
                .map(|c| if c.is_alphanumeric() { c.to_lowercase().next().unwrap_or(c) } else { ' ' })
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let (answer, gold) = (fold(answer), fold(gold));
        Some(!gold.is_empty() && format!(" {answer} ").contains(&format!(" {gold} ")))
    }
    /// Exact match and token F1 of the short answer (the whole answer when there is none) against the gold
    /// answer; `None` when the question carries no gold answer. No answer at all (a single pass whose reader
    /// found nothing) scores 0, as the field's scorers count a missing prediction: leaving it out of the mean
    /// would make answering less score better.
    pub fn answer_score(&self) -> Option<(f64, f64)> {
        let gold = self.question.answer.as_ref()?;
        Some(self.short.as_ref().or(self.answer.as_ref()).map_or((0.0, 0.0), |predicted| answer_score(predicted, gold)))
    }
    /// Whether every gold title is in the first `k` titles.
    pub fn all_gold(&self, k: usize) -> bool {
        let top = &self.ranked[..self.ranked.len().min(k)];
        self.question.gold_titles.iter().all(|g| top.contains(g))
    }
    pub fn recall(&self, k: usize) -> f64 {
        let top = &self.ranked[..self.ranked.len().min(k)];
        let found = self.question.gold_titles.iter().filter(|g| top.contains(g)).count();
        found as f64 / self.question.gold_titles.len().max(1) as f64
    }
    pub fn reciprocal_rank(&self) -> f64 {
        self.ranked
            .iter()
            .take(10)
            .position(|t| self.question.gold_titles.contains(t))
            .map_or(0.0, |i| 1.0 / (i + 1) as f64)
    }
}

pub fn read_questions(path: &Path) -> anyhow::Result<Vec<Question>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let items = value.as_array().with_context(|| format!("{}: expected an array of questions", path.display()))?;
    items
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let field = |k: &str| q.get(k).and_then(|v| v.as_str()).map(str::to_string);
            let at = || format!("{}: question {}", path.display(), i + 1);
            Ok(Question {
                id: field("id").unwrap_or_else(|| i.to_string()),
                question: field("question").with_context(|| format!("{}: missing \"question\"", at()))?,
                gold_titles: q
                    .get("gold_titles")
                    .and_then(|v| v.as_array())
                    .with_context(|| format!("{}: missing \"gold_titles\"", at()))?
                    .iter()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect(),
                multihop: q.get("multihop").and_then(|v| v.as_bool()).unwrap_or(false),
                answer: field("answer"),
            })
        })
        .collect()
}

/// Titles with their repeats removed, first place kept.
fn distinct<'a>(titles: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for title in titles {
        if !out.contains(title) {
            out.push(title.clone());
        }
    }
    out
}

/// A finished loop's titles in retrieval order: the final ranking of its cards.
pub fn retrieved_titles(state: &LoopState) -> Vec<String> {
    distinct(ranking(state).into_iter().map(|c| &c.hit.title))
}

/// A finished loop's titles as it reports them: cited cards in citation order, then the final ranking.
pub fn ranked_titles(state: &LoopState) -> Vec<String> {
    let cited: Vec<&String> = match &state.outcome {
        Some(Outcome::Answer(a)) => a.citations.iter().map(|c| &c.title).collect(),
        _ => Vec::new(),
    };
    distinct(cited.into_iter().chain(ranking(state).into_iter().map(|c| &c.hit.title)))
}

/// Runs the evaluation. `corpus`, when given, is ingested first (idempotently) into an index of its own. Returns
/// the scores and a line describing the mode (loop or single pass, and how retrieval searched).
pub async fn run(
    mut config: Config,
    questions: Vec<Question>,
    corpus: Option<&Path>,
    single_pass: bool,
) -> anyhow::Result<(Vec<Scored>, String)> {
    config.retrieval.demo_corpus = false;
    let routing = match config.intake.force_route {
        Some(route) => format!("every question on the {route:?} route").to_lowercase(),
        None => "routed by complexity".to_string(),
    };
    config.nats.url = None;
    if let Some(corpus) = corpus {
        let stem = corpus.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "corpus".into());
        config.data_dir = Some(config.data_dir().join("eval").join(stem));
    }
    let node = Node::embedded(config.clone()).await?;
    let retriever: Arc<Retriever> = node.retriever.clone().context("the embedded node has no index")?;
    if let Some(corpus) = corpus {
        let docs = ingest::read_paths(&[corpus.to_path_buf()])?;
        let summary = ingest::ingest(&retriever, docs, true).await?;
        eprintln!("corpus: {summary}");
    }
    let mode = match single_pass {
        true => format!("single pass; {}", retriever.describe()),
        false => {
            let agents = match &config.llm.base_url {
                Some(url) => format!("LLM agents: {} at {url}", config.llm.model),
                None => "deterministic agents".to_string(),
            };
            format!("loop ({agents}), {routing}; {}", retriever.describe())
        }
    };
    let (scored, mut embedding) = score(&node, &retriever, questions, single_pass).await?;
    let mode = match embedding.is_empty() {
        true => mode,
        false => {
            embedding.sort();
            let p50 = embedding[(embedding.len() - 1) / 2].as_secs_f64() * 1000.0;
            format!("{mode}; latency is the search alone, the query embedding (p50 {p50:.1} ms) timed apart")
        }
    };
    let mode = match node.cache.as_ref().map(|c| c.stats()) {
        Some(c) => format!("{mode}; retrieval cache {} hits, {} misses", c.hits, c.misses),
        None => mode,
    };
    node.shutdown().await;
    Ok((scored, mode))
}

/// Asks each question of `node` (the loop) or searches `retriever` once (a single pass), and scores what came
/// back. Also returns, for a single pass with an embedding model, the time each query's vector took (the search's
/// latency leaves it out).
pub async fn score(
    node: &Node,
    retriever: &Retriever,
    questions: Vec<Question>,
    single_pass: bool,
) -> anyhow::Result<(Vec<Scored>, Vec<Duration>)> {
    let mut scored = Vec::with_capacity(questions.len());
    let mut embedding = Vec::new();
    for question in questions {
        if single_pass && let Some(embedder) = &retriever.embedder {
            // A single pass times the search alone: the query's vector is made first (the search then finds it
            // in the embedder's cache), and its time is reported apart.
            let started = Instant::now();
            embedder.embed(std::slice::from_ref(&question.question)).await?;
            embedding.push(started.elapsed());
        }
        let started = Instant::now();
        let (mut route, mut answer, mut short, mut abstained, mut llm) = (None, None, None, false, None);
        let (ranked, retrieved) = if single_pass {
            let hits = retriever.search(&question.question, &PayloadFilter::default(), JUDGED).await?;
            // One pass has an answer too: the same reader over the passages it found, so the loop's answers are
            // measured against it.
            let cards: Vec<Card> =
                hits.iter().enumerate().map(|(i, h)| Card::new(i as u32 + 1, 1, h.clone())).collect();
            let window: Vec<&Card> = cards.iter().collect();
            short = reader::read(&question.question, &window, &reader::Chain::of(links(&question.question)))
                .map(|r| r.text);
            let titles = distinct(hits.iter().map(|h| &h.title));
            (titles.clone(), titles)
        } else {
            let request_id = uuid::Uuid::now_v7();
            let request = AskRequest { request_id: Some(request_id), ..AskRequest::new(question.question.clone()) };
            node.ask(request, None).await.map_err(|e| anyhow::anyhow!("{}: {e}", question.id))?;
            let (state, _) = node.ctx.store.load(request_id).await?.context("finished request has no state")?;
            route = Some(state.analysis.route);
            llm = LlmSpend::of(&state.counters);
            if let Some(Outcome::Answer(a)) = &state.outcome {
                abstained = a.warnings.iter().any(|w| w == NO_EVIDENCE);
                answer = Some(a.answer.clone());
                short = a.short_answer.as_ref().map(|s| s.text.clone());
            }
            (ranked_titles(&state), retrieved_titles(&state))
        };
        scored.push(Scored {
            question,
            ranked,
            retrieved,
            answer,
            short,
            abstained,
            latency: started.elapsed(),
            route,
            llm,
        });
    }
    Ok((scored, embedding))
}

struct Row {
    name: String,
    n: usize,
    perfect: f64,
    perfect_retrieved: f64,
    /// Share of answers containing the gold answer, over the questions that carry one (none: no such question).
    contains_gold: Option<f64>,
    abstained: f64,
    /// Exact match and token F1 over the questions that carry a gold answer (none: no such question).
    em: Option<f64>,
    f1: Option<f64>,
    recall: f64,
    recall2: f64,
    recall5: f64,
    all_gold5: f64,
    mrr: f64,
    p50: f64,
    p95: f64,
}

fn row(name: &str, items: &[&Scored]) -> Row {
    let n = items.len();
    let mean =
        |f: &dyn Fn(&Scored) -> f64| if n == 0 { 0.0 } else { items.iter().map(|s| f(s)).sum::<f64>() / n as f64 };
    let mut lat: Vec<f64> = items.iter().map(|s| s.latency.as_secs_f64() * 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| if lat.is_empty() { 0.0 } else { lat[((lat.len() - 1) as f64 * p).round() as usize] };
    let golds: Vec<bool> = items.iter().filter_map(|s| s.contains_gold()).collect();
    let scores: Vec<(f64, f64)> = items.iter().filter_map(|s| s.answer_score()).collect();
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
struct SpendRow {
    name: String,
    n: usize,
    calls: f64,
    input: f64,
    output: f64,
    repairs: u32,
    /// Repaired replies over completions.
    repair_rate: f64,
    fallbacks: u32,
    /// Share of requests where some agent step fell back to its deterministic twin.
    fell_back: f64,
}

/// One row per route, then `all`; empty when no request asked a model.
fn llm_rows(scored: &[Scored]) -> Vec<SpendRow> {
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
         containing the gold answer; abstain: answers saying the corpus has nothing)\n\
         {:<11} {:>4} {:>6} {:>6} {:>10} {:>12} {:>9} {:>9} {:>9} {:>8} {:>7} {:>6} {:>8} {:>8} {:>8}\n",
        "subset",
        "n",
        "EM",
        "F1",
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
            "{:<11} {:>4} {:>6} {:>6} {:>10.3} {:>12.3} {:>9.3} {:>9.3} {:>9.3} {:>8.3} {:>7.3} {:>6} {:>8.3} {:>8.1} {:>8.1}\n",
            r.name,
            r.n,
            opt(r.em),
            opt(r.f1),
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
        .map(|r| json!({"subset": r.name, "n": r.n, "exact_match": r.em, "f1": r.f1, "recall_at_2": r.recall2, "recall_at_5": r.recall5, "all_gold_at_5": r.all_gold5, "perfect_retrieval_at_8": r.perfect, "perfect_retrieval_at_8_retrieval_order": r.perfect_retrieved, "answer_contains_gold": r.contains_gold, "abstention_rate": r.abstained, "recall_at_8": r.recall, "mrr_at_10": r.mrr, "latency_p50_ms": r.p50, "latency_p95_ms": r.p95}))
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
            json!({"id": s.question.id, "route": route, "perfect": s.perfect(), "perfect_retrieval_order": s.perfect_retrieved(), "missing": s.missing(), "ranked": s.judged(), "answer": s.short.as_ref().or(s.answer.as_ref()), "answer_text": s.answer, "gold_answer": s.question.answer, "exact_match": score.map(|x| x.0), "f1": score.map(|x| x.1), "contains_gold": s.contains_gold(), "abstained": s.abstained, "latency_ms": s.latency.as_secs_f64() * 1000.0, "llm": s.llm.as_ref().map(|l| json!({"calls": l.calls, "input_tokens": l.input_tokens, "output_tokens": l.output_tokens, "repairs": l.repairs, "fallbacks": l.fallbacks}))})
        })
        .collect();
    json!({"mode": mode, "subsets": subsets, "routes": routes, "llm": llm, "questions": questions})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(gold: &[&str], ranked: &[&str]) -> Scored {
        Scored {
            question: Question {
                id: "q".into(),
                question: "?".into(),
                gold_titles: gold.iter().map(|s| s.to_string()).collect(),
                multihop: true,
                answer: Some("Vienna".into()),
            },
            ranked: ranked.iter().map(|s| s.to_string()).collect(),
            retrieved: ranked.iter().rev().map(|s| s.to_string()).collect(),
            answer: Some("He was born in Vienna, Austria [1].".into()),
            short: None,
            abstained: false,
            latency: Duration::ZERO,
            route: Some(Route::Enhanced),
            llm: None,
        }
    }

    #[test]
    fn the_llm_table_reports_spend_per_request_by_route_and_in_all() {
        let plain = scored(&["A"], &["A"]);
        assert!(llm_rows(std::slice::from_ref(&plain)).is_empty(), "no model asked: no table");
        let spend = |calls, repairs, fallbacks| LlmSpend {
            calls,
            input_tokens: 100 * calls,
            output_tokens: 10 * calls,
            repairs,
            fallbacks,
        };
        let agent = Scored { route: Some(Route::Agent), llm: Some(spend(4, 1, 1)), ..plain.clone() };
        let enhanced = Scored { llm: Some(spend(1, 0, 0)), ..plain };
        let rows = llm_rows(&[agent, enhanced]);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["enhanced", "agent", "all"]);
        let all = &rows[2];
        assert_eq!((all.calls, all.input, all.output), (2.5, 250.0, 25.0));
        assert_eq!((all.repairs, all.fallbacks), (1, 1));
        assert_eq!((all.repair_rate, all.fell_back), (0.2, 0.5));
    }

    #[test]
    fn perfect_retrieval_needs_every_gold_title_in_the_first_eight() {
        let ten: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        let ranked: Vec<&str> = ten.iter().map(String::as_str).collect();
        let cases: &[(&[&str], bool, f64, f64)] = &[
            (&["t0", "t7"], true, 1.0, 1.0),
            (&["t2", "t8"], false, 0.5, 1.0 / 3.0),
            (&["t9"], false, 0.0, 0.1),
            (&["nope"], false, 0.0, 0.0),
        ];
        for (gold, perfect, recall, rr) in cases {
            let s = scored(gold, &ranked);
            assert_eq!(s.perfect(), *perfect, "{gold:?}");
            assert!((s.recall(JUDGED) - recall).abs() < 1e-9, "{gold:?}");
            assert!((s.reciprocal_rank() - rr).abs() < 1e-9, "{gold:?}");
        }
    }

    #[test]
    fn retrieval_order_and_gold_answers_are_scored_apart_from_the_final_ranking() {
        let ten: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        let ranked: Vec<&str> = ten.iter().map(String::as_str).collect();
        let s = scored(&["t0", "t1"], &ranked);
        assert!(s.perfect() && !s.perfect_retrieved(), "retrieval order is t9 … t0");
        assert_eq!(s.contains_gold(), Some(true));
        let wrong = Scored { answer: Some("Viennal".into()), ..s.clone() };
        assert_eq!(wrong.contains_gold(), Some(false), "a gold answer is matched as whole words");
        let none = Scored { answer: None, ..s };
        assert_eq!(none.contains_gold(), None);
    }

    #[test]
    fn a_question_is_scored_on_its_short_answer() {
        let mut s = scored(&["A"], &["A"]);
        assert_eq!(s.answer_score().map(|x| x.0), Some(0.0), "the whole answer when there is no short one");
        s.short = Some("vienna".into());
        assert_eq!(s.answer_score(), Some((1.0, 1.0)));
    }

    #[test]
    fn a_question_left_unanswered_scores_zero_and_counts_in_the_mean() {
        let answered = Scored { short: Some("vienna".into()), ..scored(&["A"], &["A"]) };
        let unanswered = Scored { answer: None, short: None, ..answered.clone() };
        assert_eq!(unanswered.answer_score(), Some((0.0, 0.0)));
        let r = row("all", &[&answered, &unanswered]);
        assert_eq!((r.em, r.f1), (Some(0.5), Some(0.5)), "two questions, one right: not one of one");
        let no_gold = Scored { question: Question { answer: None, ..answered.question.clone() }, ..answered };
        assert_eq!(no_gold.answer_score(), None, "a question without a gold answer is not scored");
    }

    #[test]
    fn questions_file_errors_name_the_question() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.json");
        std::fs::write(&path, r#"[{"id":"a","question":"x","gold_titles":["T"]},{"id":"b","gold_titles":[]}]"#)
            .unwrap();
        let err = read_questions(&path).unwrap_err().to_string();
        assert!(err.contains("question 2") && err.contains("question\""), "{err}");
    }
}
