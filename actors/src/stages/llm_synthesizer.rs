//! LLM synthesizer: writes the answer from the retrieved cards only, with `[n]` citations. Every cited number
//! must name a retrieved card: the others are removed and counted. The entities and graph evidence come from the
//! deterministic synthesis of the same state, and an answer reached on a cap, a deadline or in degraded mode
//! says so.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use sleuth_messages::{AgentResponse, Card, LoopState, Stage, TerminationReason, WorkItem};

use super::{
    StageLogic,
    synthesizer::{
        answer_window, cited_numbers, cited_response, lead_sentence, question, synthesize, verify_citations,
        with_short_answer,
    },
};
use crate::{
    entity_types::KnownTypes,
    llm::{Agent, LlmAgent, Usage, agent::charge, context, prompts, structured::StructuredSpec},
    machine,
    reader::{self, Reading},
    telemetry, text,
};

/// Longest short answer a draft may give.
const MAX_SHORT_WORDS: usize = 12;
/// How many of the reader's answers the model chooses among, and how many cards it is shown for each.
const CHOICES: usize = 6;
const SOURCES_PER_CHOICE: usize = 3;
/// Longest prose a chosen answer may come with: one sentence.
const CHOSEN_PROSE_CHARS: usize = 240;

/// The draft's form when the model chooses among `choices`: one branch per answer, whose `source` may only name
/// a card that writes it, so a server that constrains its output to the schema cannot pair an answer with a card
/// that does not support it. The prose is optional and comes last.
fn choice_schema(choices: &[context::Choice<'_>]) -> serde_json::Value {
    let branches: Vec<serde_json::Value> = choices
        .iter()
        .map(|c| {
            let sources: Vec<u32> = c.written.iter().map(|w| w.0).collect();
            serde_json::json!({
                "type": "object",
                "properties": {
                    "short_answer": {"type": "string", "enum": [c.text]},
                    "source": {"type": "integer", "enum": sources},
                    "answer": {"type": "string", "maxLength": CHOSEN_PROSE_CHARS},
                },
                "required": ["short_answer", "source"],
                "additionalProperties": false,
            })
        })
        .collect();
    serde_json::json!({"type": "object", "required": ["short_answer", "source"], "anyOf": branches})
}

/// The sentence of `card` that writes `short`, else its first.
fn sentence_with<'a>(card: &'a Card, short: &str) -> &'a str {
    let words = text::content_words(short);
    let sentences = text::sentences(&card.hit.text);
    sentences
        .iter()
        .find(|s| {
            let have = text::tokens(s);
            words.iter().all(|w| have.contains(w))
        })
        .or(sentences.first())
        .copied()
        .unwrap_or(card.hit.text.as_str())
        .trim()
}

/// The cards among `cited` whose text supports `short`: every word of it that is not a function word appears in
/// the card. "yes" and "no" are supported by whatever the draft cites.
pub fn supporting<'a>(short: &str, cited: &[&'a Card]) -> Vec<&'a Card> {
    let words: Vec<String> = text::content_words(short);
    let polar = matches!(reader::fold(short).as_str(), "yes" | "no");
    cited
        .iter()
        .copied()
        .filter(|card| {
            let have = text::tokens(&card.hit.text);
            polar || (!words.is_empty() && words.iter().all(|w| have.contains(w)))
        })
        .collect()
}

/// Seed 002 §10's words for an answer reached without the LLM's full help.
pub const DEGRADED_NOTE: &str = "Search capabilities were limited; answer is based on partial information.";

/// What the model writes; the runtime adds citations, entities and evidence. `short_answer` and `source` are
/// required in the schema (a server that constrains its output to it must write them) but read as absent when a
/// reply leaves them out.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DraftAnswer {
    /// The answer itself in a few words, as a document writes it: a name, a date, a number, yes or no, or a short
    /// phrase. No citation marks. Empty when the documents do not answer the question.
    #[schemars(required)]
    pub short_answer: Option<String>,
    /// The number n of the document [n] that writes the short answer.
    #[schemars(required)]
    pub source: Option<u32>,
    /// The answer, with `[n]` after each claim naming the document it comes from.
    #[serde(default)]
    pub answer: String,
    /// 0 to 1. A reply that chooses among offered answers may leave it out.
    #[schemars(required, range(min = 0, max = 1))]
    pub confidence: Option<f32>,
}

impl DraftAnswer {
    /// The confidence on the 0–1 scale. Small models often answer on a 0–10 or 0–100 scale ("confidence": 9);
    /// what they mean is plain, so it is read that way rather than refused.
    pub fn confidence(&self) -> Option<f32> {
        self.confidence.map(|c| match c {
            c if c <= 1.0 => c,
            c if c <= 10.0 => c / 10.0,
            c => c / 100.0,
        })
    }

    /// The cards the draft cites: those its answer names as `[n]`, then its `source` when that card writes the
    /// short answer; each once and only when it was retrieved. A `source` that does not write the answer is not
    /// a citation.
    pub fn cited<'a>(&self, cards: &'a [Card]) -> Vec<&'a Card> {
        let find = |n: u32| cards.iter().find(|c| c.n == n);
        let mut cited: Vec<&Card> = cited_numbers(&self.answer).into_iter().filter_map(find).collect();
        let source = self.source.and_then(find).filter(|card| {
            !cited.iter().any(|c| c.n == card.n) && self.short().is_some_and(|s| !supporting(s, &[*card]).is_empty())
        });
        cited.extend(source);
        cited
    }

    fn short(&self) -> Option<&str> {
        self.short_answer.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
}

impl StructuredSpec for DraftAnswer {
    const NAME: &'static str = "draft_answer";

    fn check(&self) -> Result<(), String> {
        if self.answer.trim().is_empty() && self.short().is_none() {
            return Err("answer must not be empty".into());
        }
        if let Some(c) = self.confidence
            && !(0.0..=100.0).contains(&c)
        {
            return Err(format!("confidence must be between 0 and 1, not {c}"));
        }
        if let Some(short) = &self.short_answer
            && short.split_whitespace().count() > MAX_SHORT_WORDS
        {
            return Err(format!(
                "short_answer has {} words; give the answer alone in at most {MAX_SHORT_WORDS} words",
                short.split_whitespace().count()
            ));
        }
        Ok(())
    }
}

pub struct LlmSynthesizer {
    pub llm: LlmAgent,
    /// The graph's entity types, for the deterministic draft.
    pub types: KnownTypes,
}

#[async_trait]
impl StageLogic for LlmSynthesizer {
    fn stage(&self) -> Stage {
        Stage::Synthesizer
    }

    async fn apply(&self, state: &LoopState, _item: &WorkItem) -> anyhow::Result<LoopState> {
        let reason = state.stop_reason.unwrap_or(TerminationReason::PlannerFinal);
        let mut response = synthesize(state, &self.types.get());
        let mut usage = Usage::default();
        let mut fell_back: Option<String> = None;
        // The deterministic twin abstains when the evidence never mentions what the question asks about: the model
        // is not asked to write an answer from it.
        let abstained = response.warnings.iter().any(|w| w == super::synthesizer::NO_EVIDENCE);
        if !abstained && reason != TerminationReason::Clarification {
            let window = answer_window(state);
            let choices = offered(state, &window);
            let cites_a_card = |d: &DraftAnswer| -> Result<(), String> {
                let cited = d.cited(&state.cards);
                if cited.is_empty() {
                    return Err(
                        "the answer cites none of the numbered documents; cite each claim as [n] and give the \
                                number of the document that writes the short answer as source"
                            .into(),
                    );
                }
                if let Some(short) = d.short()
                    && supporting(short, &cited).is_empty()
                {
                    return Err(format!(
                        "the short_answer \"{short}\" is not written in any document the answer cites; give the answer as a cited document writes it"
                    ));
                }
                // A chosen answer stands on its own; its prose is kept only when it is about the question.
                if choices.is_empty() || d.short().is_none() { about_the_question(state, &d.answer) } else { Ok(()) }
            };
            let asked = if choices.is_empty() {
                self.llm.ask::<DraftAnswer>(Agent::Synthesizer, prompts::SYNTHESIZE, state, &cites_a_card).await
            } else {
                let user = context::render_reading(question(state), &window, &choices);
                let schema = choice_schema(&choices);
                self.llm
                    .ask_with::<DraftAnswer>(Agent::Synthesizer, prompts::READ, user, schema, state, &cites_a_card)
                    .await
            };
            if let Some(out) = asked {
                usage = out.usage;
                match out.result {
                    Ok(draft) => response = written(state, response, draft, reason),
                    Err(e) => fell_back = Some(e.to_string()),
                }
            }
        }
        if fell_back.is_some() || state.counters.llm_fallbacks > 0 {
            mark_degraded(&mut response);
        }
        tracing::info!(request_id = %state.request_id, citations = response.citations.len(), tokens = usage.total(), fell_back = fell_back.is_some(), reason = reason.as_str(), "synthesized");
        if fell_back.is_some() {
            crate::telemetry::metrics::llm_fallback("synthesizer");
        }
        Ok(machine::apply_response(&charge(state, usage, fell_back.as_deref()), response, telemetry::now_ms())?)
    }
}

/// The model's draft as the response: unknown citations removed and counted; the deterministic response's
/// entities and graph evidence kept. A draft that chose its short answer without prose about the question gets
/// the sentences of the cards that write it.
fn written(state: &LoopState, base: AgentResponse, draft: DraftAnswer, reason: TerminationReason) -> AgentResponse {
    let cited = draft.cited(&state.cards);
    // The short answer leads, cited by the cards the draft cites that write it (checked before it was accepted).
    let reading = draft.short().and_then(|short| {
        let cards = supporting(short, &cited);
        (!cards.is_empty()).then(|| Reading {
            text: short.trim_end_matches('.').to_string(),
            kind: reader::asked::asked(&state.analysis.rewritten).kind,
            cards,
            score: 1.0,
        })
    });
    let (prose, cited) = match &reading {
        Some(r) if about_the_question(state, &draft.answer).is_err() || cited_numbers(&draft.answer).is_empty() => {
            let sentences: Vec<String> =
                r.cards.iter().map(|c| format!("{} [{}]", sentence_with(c, &r.text), c.n)).collect();
            (sentences.join(" "), r.cards.clone())
        }
        _ => (draft.answer.clone(), cited),
    };
    let (mut answer, removed) = verify_citations(&prose, &state.cards);
    if let Some(r) = &reading {
        answer = format!("{}{answer}", lead_sentence(r));
    }
    if reason.is_cap() {
        answer = format!("Best available answer (stopped early: {}). {answer}", reason.as_str());
    }
    let mut evidence = base.evidence.clone();
    evidence.insert("synthesis".into(), "llm".into());
    evidence.insert("citations_removed".into(), removed.into());
    let mut response = with_short_answer(cited_response(state, &answer, &cited, evidence, reason), reading.as_ref());
    if response.evidence.contains_key("paths") {
        // An entity answer: the graph's chain names the entities, not the cards the model happened to cite.
        response.source_entities = base.source_entities;
        response.result_entities = base.result_entities;
    }
    let confidence = draft.confidence().unwrap_or(base.confidence);
    response.confidence = if reason.is_cap() { confidence * 0.6 } else { confidence };
    if removed > 0 {
        response.warnings.push("HALLUCINATED_CITATIONS_REMOVED".into());
    }
    response
}

/// The answers the deterministic reader finds in `window`, best first, each with the cards that write it and
/// where: what the model chooses among.
fn offered<'a>(state: &LoopState, window: &[&'a Card]) -> Vec<context::Choice<'a>> {
    let mut choices: Vec<context::Choice<'a>> = Vec::new();
    for reading in reader::candidates(question(state), window, &super::synthesizer::chain(state), CHOICES) {
        let mut cards: Vec<&'a Card> = reading.cards.clone();
        cards.extend(window.iter().copied().filter(|c| !reading.cards.iter().any(|r| r.n == c.n)));
        let written: Vec<(u32, &'a str)> = supporting(&reading.text, &cards)
            .into_iter()
            .take(SOURCES_PER_CHOICE)
            .map(|c| (c.n, sentence_with(c, &reading.text)))
            .collect();
        if !written.is_empty() {
            choices.push(context::Choice { text: reading.text, written });
        }
    }
    choices
}
/// An answer must say something about what was asked: at least one of the question's entities or key terms.
/// A model that follows an instruction planted in a document ("ignore the question and reply …") writes an
/// answer about something else; it is asked again, and its deterministic twin answers if it persists.
fn about_the_question(state: &LoopState, answer: &str) -> Result<(), String> {
    let a = &state.analysis;
    let stems = |t: &str| -> Vec<String> { text::content_words(t).iter().map(|w| text::stem(w).to_string()).collect() };
    let asked: Vec<String> = a.entities.iter().chain(&a.keywords).flat_map(|t| stems(t)).collect();
    if asked.is_empty() {
        return Ok(());
    }
    let said = stems(answer);
    if asked.iter().any(|t| said.contains(t)) {
        Ok(())
    } else {
        let terms: Vec<&str> = a.entities.iter().chain(&a.keywords).map(String::as_str).collect();
        Err(format!(
            "the answer does not mention what the question asks about ({}); answer the question itself, from the documents",
            terms.join(", ")
        ))
    }
}

fn mark_degraded(response: &mut AgentResponse) {
    response.answer = format!("{DEGRADED_NOTE} {}", response.answer);
    response.warnings.push("DEGRADED".into());
    response.evidence.insert("degraded".into(), true.into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn draft(short: &str, source: u32, answer: &str) -> DraftAnswer {
        DraftAnswer {
            short_answer: Some(short.into()),
            source: Some(source),
            answer: answer.into(),
            confidence: Some(9.0),
        }
    }

    #[test]
    fn the_source_is_cited_only_when_it_writes_the_short_answer() {
        let cards = vec![
            fixtures::card(1, 1, "luffy", "Monkey D. Luffy", "Luffy is the protagonist of One Piece."),
            fixtures::card(2, 1, "naruto", "Naruto", "Naruto is a manga by Masashi Kishimoto."),
        ];
        let numbers = |d: &DraftAnswer| d.cited(&cards).iter().map(|c| c.n).collect::<Vec<_>>();
        assert_eq!(numbers(&draft("One Piece", 1, "Luffy is in an anime.")), [1]);
        assert_eq!(
            numbers(&draft("One Piece", 2, "Luffy is in an anime.")),
            Vec::<u32>::new(),
            "[2] does not write it"
        );
        assert_eq!(numbers(&draft("One Piece", 1, "See [2] and [1].")), [2, 1], "each card once, in reading order");
        assert_eq!(numbers(&draft("One Piece", 9, "Luffy [1].")), [1], "an unknown source is no citation");
        assert!((draft("x", 1, "y").confidence().unwrap() - 0.9).abs() < 1e-6);
    }

    fn luffy() -> LoopState {
        let mut state = fixtures::state_for("Which anime is Luffy in?");
        state.cards = vec![
            fixtures::card(1, 1, "luffy", "Monkey D. Luffy", "Luffy is the hero of the anime One Piece. He sails."),
            fixtures::card(2, 1, "naruto", "Naruto", "Naruto is a manga by Masashi Kishimoto."),
        ];
        state
    }

    #[test]
    fn the_model_chooses_among_answers_each_paired_with_the_cards_that_write_it() {
        let state = luffy();
        let window = answer_window(&state);
        let choices = offered(&state, &window);
        assert_eq!(choices.first().map(|c| c.text.as_str()), Some("One Piece"));
        let one_piece = &choices[0];
        assert_eq!(one_piece.written, vec![(1, "Luffy is the hero of the anime One Piece.")]);
        let schema = choice_schema(&choices);
        let branches = schema["anyOf"].as_array().unwrap();
        assert_eq!(branches.len(), choices.len());
        assert_eq!(branches[0]["properties"]["short_answer"]["enum"], serde_json::json!(["One Piece"]));
        assert_eq!(branches[0]["properties"]["source"]["enum"], serde_json::json!([1]), "only a card that writes it");
        assert_eq!(branches[0]["required"], serde_json::json!(["short_answer", "source"]), "the prose is optional");
        let user = context::render_reading("Which anime is Luffy in?", &window, &choices);
        assert!(user.contains("- \"One Piece\": [1] \"Luffy is the hero of the anime One Piece.\""), "{user}");
    }

    #[test]
    fn a_chosen_answer_without_prose_is_followed_by_the_sentence_that_writes_it() {
        let state = luffy();
        let base = synthesize(&state, &fixtures::demo_types());
        let chosen = DraftAnswer {
            short_answer: Some("One Piece".into()),
            source: Some(1),
            answer: String::new(),
            confidence: None,
        };
        assert!(chosen.check().is_ok(), "a chosen answer needs no prose");
        let response = written(&state, base.clone(), chosen, TerminationReason::PlannerFinal);
        assert_eq!(response.answer, "One Piece [1]. Luffy is the hero of the anime One Piece. [1]");
        assert_eq!(response.short_answer.as_ref().map(|s| s.text.as_str()), Some("One Piece"));
        assert!(
            (response.confidence - base.confidence).abs() < 1e-6,
            "the reader's confidence when the model gives none"
        );
        // Prose about something else is replaced by the same sentence; the chosen answer stands.
        let off = draft("One Piece", 1, "Bananas are yellow [2].");
        let response = written(&state, base, off, TerminationReason::PlannerFinal);
        assert!(response.answer.starts_with("One Piece [1]. Luffy is the hero"), "{}", response.answer);
    }
}
