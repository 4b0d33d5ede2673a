//! `sleuth eval QUESTIONS.json`: scores answers and retrieval against gold data, through the loop or as a single retrieval
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
use sleuth_messages::{AskRequest, Card, LlmSpend, LoopState, Outcome, Route};

pub use self::{
    answers::{answer_score, normalize_answer},
    report::{render, to_json},
};
use crate::{
    config::Config,
    index::PayloadFilter,
    ingest,
    machine::ranking::ranking,
    node::Node,
    reader,
    retrieval::Retriever,
    stages::{
        intake::chain::links,
        synthesizer::{self, NO_EVIDENCE},
    },
};

mod answers;
mod report;

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
    /// What the reader read and how sure it was, given as the short answer or not (the evidence's `reader`).
    pub reader: Option<serde_json::Value>,
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
    /// What the reply leads with: its short answer, else the answer's text before the first citation mark.
    pub fn first_line(&self) -> Option<&str> {
        self.short.as_deref().or_else(|| self.answer.as_deref().map(answers::first_line))
    }
    /// Whether the short answer says the gold answer; `None` without a short answer or a gold one.
    pub fn short_right(&self) -> Option<bool> {
        Some(answers::says_answer(self.short.as_ref()?, self.question.answer.as_ref()?))
    }
    /// Whether the reply's first line says the gold answer; `None` without a gold answer.
    pub fn first_line_right(&self) -> Option<bool> {
        let gold = self.question.answer.as_ref()?;
        Some(self.first_line().is_some_and(|line| answers::says_answer(line, gold)))
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
                    .filter_map(|t| t.as_str().map(ingest::plain_title))
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
        let docs = ingest::files::read_paths(&[corpus.to_path_buf()])?;
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
        let (mut route, mut answer, mut short, mut abstained, mut llm, mut reader) =
            (None, None, None, false, None, None);
        let (ranked, retrieved) = if single_pass {
            let hits = retriever.search(&question.question, &PayloadFilter::default(), JUDGED).await?;
            // One pass has an answer too: the same reader over the passages it found, so the loop's answers are
            // measured against it.
            let cards: Vec<Card> =
                hits.iter().enumerate().map(|(i, h)| Card::new(i as u32 + 1, 1, h.clone())).collect();
            let window: Vec<&Card> = cards.iter().collect();
            let judged = reader::judge(&question.question, &window, &reader::Chain::of(links(&question.question)));
            reader = judged.as_ref().map(synthesizer::reader_evidence);
            short = judged.filter(|j| j.given).map(|j| j.reading.text);
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
                reader = a.evidence.get("reader").cloned();
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
            reader,
        });
    }
    Ok((scored, embedding))
}

#[cfg(test)]
mod tests {
    use super::{
        report::{llm_rows, row},
        *,
    };

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
            reader: None,
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
