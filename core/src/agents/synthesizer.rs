//! Synthesizer: writes the answer with `[n]` citations. Deterministic mode is extractive: the sentences of the
//! retrieved cards that best match the question, each cited by its card, so no citation can name a card that was
//! never retrieved. Citations are then numbered by first appearance, [1], [2], …, each keeping its card's number.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;
use sleuth_messages::{
    Action, AgentResponse, AnswerKind, Card, Citation, EntityRef, JsonMap, LoopState, ShortAnswer, TerminationReason,
};

use super::{
    entity_answer::EntityAnswer,
    lead::{completed, whole},
    sentences::{
        Asks, asked_kind, counted, counts, denies, identifiers, quotable, scored_sentences, section, sentence_score,
    },
};
use crate::{
    entities,
    entity_types::KnownTypes,
    reader::{self, Reading},
    text,
};

/// The warning an answer carries when the corpus has nothing that answers the question.
pub const NO_EVIDENCE: &str = "NO_EVIDENCE";

/// Most sentences an extractive answer quotes.
const MAX_SENTENCES: usize = 3;

static CITATION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[(\d+)\]").expect("static regex"));

/// The deterministic synthesizer; `types` are the graph's entity types, which an entity question asks for.
#[derive(Debug, Clone, Default)]
pub struct Synthesizer {
    pub types: KnownTypes,
}

/// Removes every `[n]` that does not name a retrieved card. Returns the cleaned answer and how many were removed.
pub fn verify_citations(answer: &str, cards: &[Card]) -> (String, usize) {
    let mut removed = 0;
    let cleaned = CITATION.replace_all(answer, |c: &regex::Captures| {
        let known = c[1].parse::<u32>().is_ok_and(|n| cards.iter().any(|card| card.n == n));
        if known {
            c[0].to_string()
        } else {
            removed += 1;
            String::new()
        }
    });
    (cleaned.split_whitespace().collect::<Vec<_>>().join(" "), removed)
}

/// The extractive answer for the state's evidence.
pub fn synthesize(state: &LoopState, types: &crate::entity_types::EntityTypes) -> AgentResponse {
    let reason = state.stop_reason.unwrap_or(TerminationReason::PlannerFinal);
    let a = &state.analysis;
    let mut evidence = JsonMap::new();
    evidence.insert("termination_reason".into(), reason.as_str().into());
    evidence.insert("cards_considered".into(), state.cards.len().into());
    evidence.insert("turns".into(), state.turns.len().into());

    if reason == TerminationReason::Clarification {
        let questions: Vec<String> = state
            .turns
            .iter()
            .flat_map(|t| &t.step.actions)
            .filter_map(|a| match a {
                Action::Clarify { questions } => Some(questions.iter().map(|q| q.question.clone())),
                _ => None,
            })
            .flatten()
            .collect();
        return response(questions.join(" "), Vec::new(), evidence, 0.3, reason, Vec::new());
    }
    if state.cards.is_empty() {
        let answer = format!("I could not find anything in the corpus that answers \"{}\".", a.normalized);
        return response(answer, Vec::new(), evidence, 0.1, reason, vec![NO_EVIDENCE.into()]);
    }

    if a.meta_question
        && let Some(card) = state.cards.iter().find(|c| c.hit.id == sleuth_messages::DATABASE_STATS_ID)
    {
        return cited_response(state, &format!("{} [{}]", card.hit.text, card.n), &[card], evidence, reason);
    }
    // Only the head of the final ranking is read and quoted: the answer rests on the best evidence, and what it
    // cites is what the request reports as its best passages.
    let window = answer_window(state);
    if let Some(found) = super::entity_answer::entity_answer(state, types) {
        // The graph shows a reading that names an entity its traversal reached as the answer: that is given too.
        let reading = judge(state, &window, &mut evidence)
            .filter(|j| j.given || graph_shows(state, &found, &j.reading))
            .map(|j| j.reading);
        if reading.is_some()
            && let Some(Value::Object(judged)) = evidence.get_mut("reader")
        {
            judged.insert("given".into(), true.into());
        }
        return with_short_answer(entity_response(state, found, reading.as_ref(), evidence, reason), reading.as_ref());
    }
    let uncovered = super::coverage::uncovered(state, &window);
    if !uncovered.is_empty() {
        evidence.insert("uncovered".into(), uncovered.clone().into());
        let answer = format!(
            "I could not find anything in the corpus that answers \"{}\": the evidence never mentions {}.",
            a.normalized,
            uncovered.join(", ")
        );
        return response(answer, Vec::new(), evidence, 0.1, reason, vec![NO_EVIDENCE.into()]);
    }
    let asked = reader::asked::asked(question(state));
    let mut entities = a.entities.clone();
    entities.extend(identifiers(question(state)).into_iter().filter(|i| !a.entities.iter().any(|e| e == i)));
    let asks = Asks {
        stems: a.keywords.iter().map(|k| text::stem(k)).collect(),
        entities,
        kind: asked_kind(&asked),
        words: asked.words.clone(),
        counted: counted(question(state), &asked),
        abbreviation: super::abbreviations::asked(question(state)),
    };
    // The best sentence of each card, then the best cards.
    let mut best: Vec<(f32, &Card, &str)> = window
        .iter()
        .copied()
        .filter_map(|card| {
            scored_sentences(card, &asks)
                .into_iter()
                .map(|(score, s)| (score, card, s))
                .max_by(|x, y| x.0.total_cmp(&y.0))
        })
        .filter(|(score, _, _)| *score > 0.0)
        .collect();
    best.sort_by(|x, y| y.0.total_cmp(&x.0).then(y.1.hit.score.total_cmp(&x.1.hit.score)));
    // Quote only sentences that come close to the best one.
    let floor = best.first().map_or(0.0, |b| b.0 * 0.5);
    best.retain(|b| b.0 >= floor);
    best.truncate(MAX_SENTENCES);
    // A multi-hop answer quotes every link of the chain it followed: the anchors it expanded through the graph
    // and the bridge documents it fetched from them, each by its best sentence.
    let asks_ref = &asks;
    for doc_id in super::bridge::chain_documents(state) {
        if best.iter().any(|(_, card, _)| card.hit.doc_id == doc_id) {
            continue;
        }
        let quoted = window
            .iter()
            .copied()
            .filter(|c| c.hit.doc_id == doc_id)
            .flat_map(|card| scored_sentences(card, asks_ref).into_iter().map(move |(score, s)| (score, card, s)))
            .max_by(|x, y| x.0.total_cmp(&y.0));
        best.extend(quoted);
    }
    // A sentence a window's edge cut is quoted as another window holds it whole, and once.
    for entry in &mut best {
        (entry.1, entry.2) = whole(&window, entry.1, entry.2);
    }
    let mut quoted: Vec<&str> = Vec::new();
    best.retain(|(_, _, sentence)| {
        let fresh = !quoted.contains(&sentence.trim());
        quoted.push(sentence.trim());
        fresh
    });
    if best.is_empty() {
        let card = window.first().copied().unwrap_or(&state.cards[0]);
        let first = text::sentences(&card.hit.text).first().copied().unwrap_or(card.hit.text.as_str());
        best.push((0.0, card, first));
    }
    let judged = judge(state, &window, &mut evidence);
    let mut reading = judged.as_ref().filter(|j| j.given).map(|j| j.reading.clone());
    // A reading of a typed kind (a person, a place, a date, a number) not sure enough to be the short answer still
    // found where the evidence states the asked relation's value: that sentence leads the reply, not a guess. Code
    // states nothing, and a count leads only where it counts what a "how many" question counts.
    // Other kinds are names picked from any sentence, and the sentence that matches the question best leads.
    let typed = |j: &&reader::Judged<'_>| {
        matches!(j.reading.kind, AnswerKind::Person | AnswerKind::Place | AnswerKind::Date | AnswerKind::Number)
    };
    if reading.is_none()
        && let Some((card, sentence)) = judged.as_ref().filter(typed).and_then(|j| reader::source_sentence(&j.reading))
        && quotable(sentence)
        && (asks.counted.is_empty() || counts(sentence, &asks.counted))
        && !counted_better(&best, sentence, card, &asks)
    {
        best.retain(|(_, c, s)| !(c.n == card.n && *s == sentence));
        best.insert(0, (f32::MAX, card, sentence));
    }
    // A yes/no question the reader could not decide is answered no where a sentence that comes close to answering
    // it best denies what it asks ("… the fallback is not called", "… but not enabled in the default
    // configuration"), which the "no" cites; an affirming sentence is left to speak for itself.
    if reading.is_none()
        && asked.kind == AnswerKind::YesNo
        && let Some((_, card, _)) = best.iter().find(|(_, _, sentence)| denies(sentence, question(state), &asks))
    {
        reading = Some(Reading { text: "no".into(), kind: AnswerKind::YesNo, cards: vec![card], score: 1.0 });
    }
    // Quoted in the cards' order; without a short answer the sentence that answers best leads the reply (`best` is
    // still best first here), so a reply's first line is never a guess and never a lesser sentence.
    let quoted_from = usize::from(reading.is_none()).min(best.len());
    best[quoted_from..].sort_by_key(|(_, card, _)| card.n);
    let mut answer = String::new();
    if reason.is_cap() {
        answer.push_str(&format!("Best available answer (stopped early: {}). ", reason.as_str()));
    }
    let mut cited: Vec<&Card> = Vec::new();
    lead_with(&mut answer, &mut cited, reading.as_ref());
    let mut lead = String::new();
    for (i, (_, card, sentence)) in best.iter().enumerate() {
        let sentence = match i == 0 && reading.is_none() {
            true => completed(card, sentence, &asks),
            // A sentence the lead already quotes as its continuation is not quoted again.
            false if lead.contains(sentence.trim()) => continue,
            false => sentence.trim().to_string(),
        };
        if i == 0 {
            lead.clone_from(&sentence);
        }
        answer.push_str(&format!("{sentence} [{}] ", card.n));
        if !cited.iter().any(|c| c.n == card.n) {
            cited.push(card);
        }
    }
    with_short_answer(cited_response(state, answer.trim(), &cited, evidence, reason), reading.as_ref())
}

/// Whether a "how many" question's best sentence by the scorer also counts what it asks for and scores above the
/// reader's count's sentence: of two sentences that count the asked thing ("takes 2 bytes", "is 4 bytes in
/// size"), the one that speaks of what the question names answers it.
fn counted_better(best: &[(f32, &Card, &str)], sentence: &str, card: &Card, asks: &Asks<'_>) -> bool {
    // A best sentence that is the reader's own scores no higher than itself (its score carries its position's
    // penalty), and `counts` is false for a question that counts nothing.
    best.first().is_some_and(|(score, _, top_sentence)| {
        counts(top_sentence, &asks.counted) && *score > sentence_score(sentence, card, asks)
    })
}

/// Whether a reading names an entity the graph reached as the answer (a result entity, by its card's title).
fn graph_shows(state: &LoopState, found: &EntityAnswer<'_>, reading: &Reading<'_>) -> bool {
    let asked = reader::fold(&reading.text);
    found.result_entities.iter().any(|entity| {
        state.cards.iter().any(|c| c.hit.doc_id == entity.id && reader::fold(reader::subject(&c.hit.title)) == asked)
    })
}

/// The reader's best reading and whether it is given, recorded in the evidence.
fn judge<'a>(state: &LoopState, window: &[&'a Card], evidence: &mut JsonMap) -> Option<reader::Judged<'a>> {
    let judged = reader::judge(question(state), window, &chain(state))?;
    evidence.insert("reader".into(), reader_evidence(&judged));
    Some(judged)
}

/// The reader's judgement as evidence: `{"reading", "kind", "score", "margin", "given", "walk"}`; the walk as
/// `{"path": [titles], "followed", "links", "end": {"reading", "gap"}}`.
pub fn reader_evidence(judged: &reader::Judged<'_>) -> serde_json::Value {
    let round = |x: f32| (x * 1000.0).round() / 1000.0;
    let walk = judged.walk.as_ref().map(|w| {
        serde_json::json!({
            "path": w.path.iter().map(|c| c.hit.title.as_str()).collect::<Vec<_>>(),
            "followed": w.followed,
            "links": w.links,
            "end": w.end.as_ref().map(|(r, gap)| serde_json::json!({"reading": r.text, "gap": gap})),
        })
    });
    serde_json::json!({
        "reading": judged.reading.text,
        "kind": judged.reading.kind,
        "score": round(judged.reading.score),
        "margin": round(judged.margin),
        "given": judged.given,
        "walk": walk,
    })
}

/// The request's chain as the reader follows it: its links, and the bridges its hops were searched with.
pub fn chain(state: &LoopState) -> reader::Chain {
    reader::Chain { links: super::bridge::chain_links(state), bridges: super::hop::searched_bridges(state) }
}

/// The question the request answers: the rewritten one when intake rewrote it.
pub fn question(state: &LoopState) -> &str {
    match state.analysis.rewritten.trim() {
        "" => &state.analysis.normalized,
        rewritten => rewritten,
    }
}

/// The head of the final ranking: the cards an answer is read from and quoted.
pub fn answer_window(state: &LoopState) -> Vec<&Card> {
    crate::machine::ranking::ranking(state).into_iter().take(crate::machine::ranking::ANSWER_WINDOW).collect()
}

/// The short answer as the reply's first sentence, cited by the cards that support it: "One Piece [15]. "
pub fn lead_sentence(reading: &Reading<'_>) -> String {
    let marks: String = reading.cards.iter().map(|c| format!("[{}]", c.n)).collect();
    format!("{} {marks}. ", reading.text.trim_end_matches('.'))
}

/// Puts the short answer first and its cards among the cited.
fn lead_with<'a>(answer: &mut String, cited: &mut Vec<&'a Card>, reading: Option<&Reading<'a>>) {
    let Some(reading) = reading else { return };
    answer.push_str(&lead_sentence(reading));
    for card in &reading.cards {
        if !cited.iter().any(|c| c.n == card.n) {
            cited.push(card);
        }
    }
}

/// Records the short answer on a response, its citations renumbered as the response's are.
pub fn with_short_answer(mut response: AgentResponse, reading: Option<&Reading<'_>>) -> AgentResponse {
    if let Some(reading) = reading {
        let citations: Vec<u32> = reading
            .cards
            .iter()
            .filter_map(|card| response.citations.iter().find(|c| c.card == card.n).map(|c| c.n))
            .collect();
        if !citations.is_empty() {
            response.short_answer = Some(ShortAnswer { text: reading.text.clone(), kind: reading.kind, citations });
        }
    }
    response
}

/// The answer to an entity question: the graph's statements and the entities' descriptions, each cited, after
/// the short answer when the reader found one.
fn entity_response<'a>(
    state: &'a LoopState,
    found: EntityAnswer<'a>,
    reading: Option<&Reading<'a>>,
    mut evidence: JsonMap,
    reason: TerminationReason,
) -> AgentResponse {
    let mut answer = String::new();
    if reason.is_cap() {
        answer.push_str(&format!("Best available answer (stopped early: {}). ", reason.as_str()));
    }
    let mut cited: Vec<&Card> = Vec::new();
    lead_with(&mut answer, &mut cited, reading);
    for sentence in &found.sentences {
        match sentence.card {
            Some(card) => {
                answer.push_str(&format!("{} [{}] ", sentence.text.trim(), card.n));
                if !cited.iter().any(|c| c.n == card.n) {
                    cited.push(card);
                }
            }
            None => answer.push_str(&format!("{} ", sentence.text.trim())),
        }
    }
    if !found.paths.is_empty() {
        evidence.insert("paths".into(), found.paths.into());
    }
    let mut response = cited_response(state, answer.trim(), &cited, evidence, reason);
    response.source_entities = found.source_entities;
    response.result_entities = found.result_entities;
    response
}

/// The card numbers an answer cites, in order of first appearance.
pub fn cited_numbers(answer: &str) -> Vec<u32> {
    let mut seen = Vec::new();
    for c in CITATION.captures_iter(answer) {
        if let Ok(n) = c[1].parse::<u32>()
            && !seen.contains(&n)
        {
            seen.push(n);
        }
    }
    seen
}

/// Renumbers an answer's card citations `[7] … [1] … [7]` as `[1] … [2] … [1]`, and orders `cited` the same way
/// (cards the answer never cites go last). A bracketed number that names no cited card, such as a footnote mark in
/// quoted text, is dropped so it cannot pass for a citation.
fn in_reading_order<'a>(answer: &str, cited: &[&'a Card]) -> (String, Vec<&'a Card>) {
    let mut order: Vec<&Card> =
        cited_numbers(answer).iter().filter_map(|n| cited.iter().find(|c| c.n == *n).copied()).collect();
    for card in cited {
        if !order.iter().any(|c| c.n == card.n) {
            order.push(card);
        }
    }
    let renumbered = CITATION.replace_all(answer, |c: &regex::Captures| {
        match c[1].parse::<u32>().ok().and_then(|n| order.iter().position(|card| card.n == n)) {
            Some(i) => format!("[{}]", i + 1),
            None => String::new(),
        }
    });
    (renumbered.split_whitespace().collect::<Vec<_>>().join(" "), order)
}

/// The response for an answer whose `[n]` name `cited`: citations checked, confidence from the last report.
pub fn cited_response(
    state: &LoopState,
    answer: &str,
    cited: &[&Card],
    evidence: JsonMap,
    reason: TerminationReason,
) -> AgentResponse {
    let (answer, removed) = verify_citations(answer, &state.cards);
    debug_assert_eq!(removed, 0, "deterministic citations always name retrieved cards");
    let (answer, cited) = in_reading_order(&answer, cited);
    let citations = cited
        .iter()
        .enumerate()
        .map(|(i, c)| Citation {
            n: i as u32 + 1,
            hit_id: c.hit.id.clone(),
            doc_id: c.hit.doc_id.clone(),
            title: c.hit.title.clone(),
            card: c.n,
            section: section(c).map(str::to_string),
            page: c.hit.metadata.get("page").and_then(|v| v.as_u64()).and_then(|p| u32::try_from(p).ok()),
        })
        .collect();
    let source_entities: Vec<EntityRef> =
        cited.iter().map(|c| EntityRef { entity_type: entities::type_of(&c.hit), id: c.hit.doc_id.clone() }).collect();
    let report_confidence = state.turns.iter().rev().find_map(|t| t.report.as_ref()).map_or(0.5, |r| r.confidence);
    let confidence = if reason.is_cap() { report_confidence * 0.6 } else { report_confidence };
    let mut warnings = Vec::new();
    if reason.is_cap() {
        warnings.push(reason.as_str().to_uppercase());
    }
    let mut response = response(answer, citations, evidence, confidence, reason, warnings);
    response.result_entities = source_entities.iter().take(1).cloned().collect();
    response.source_entities = source_entities;
    response
}

fn response(
    answer: String,
    citations: Vec<Citation>,
    evidence: JsonMap,
    confidence: f32,
    termination_reason: TerminationReason,
    warnings: Vec<String>,
) -> AgentResponse {
    AgentResponse {
        answer,
        short_answer: None,
        result_entities: Vec::new(),
        source_entities: Vec::new(),
        evidence,
        citations,
        confidence,
        termination_reason,
        warnings,
        degraded: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_messages::{Hit, JsonMap};

    fn card(n: u32) -> Card {
        let hit = Hit {
            id: format!("h{n}"),
            doc_id: format!("d{n}"),
            title: "t".into(),
            text: "x".into(),
            score: 1.0,
            metadata: JsonMap::new(),
        };
        Card::new(n, 1, hit)
    }

    #[test]
    fn citations_are_numbered_by_first_appearance_and_keep_their_card() {
        let cards = [card(1), card(4), card(7)];
        let (answer, order) = in_reading_order("A [7]. B [1] and [4]. C [7].", &[&cards[0], &cards[1], &cards[2]]);
        assert_eq!(answer, "A [1]. B [2] and [3]. C [1].");
        assert_eq!(order.iter().map(|c| c.n).collect::<Vec<_>>(), vec![7, 1, 4]);
    }

    #[test]
    fn a_yes_no_question_is_answered_no_where_the_answering_sentence_denies_it() {
        let answer = |text: &str| {
            let mut state = crate::fixtures::state_for("If a handler returns 404, is the fallback called?");
            let mut c = card(1);
            c.hit.text = text.into();
            state.cards = vec![c];
            synthesize(&state, &Default::default())
        };
        let denied = answer("Routing is done first. If a handler returns 404 the fallback is not called.");
        assert_eq!(denied.short_answer.map(|s| s.text).as_deref(), Some("no"));
        assert!(denied.answer.starts_with("no [1]."), "{}", denied.answer);
        let affirmed = answer("Routing is done first. If a handler returns 404 the fallback is called.");
        assert_eq!(affirmed.short_answer, None, "an affirming sentence speaks for itself: {}", affirmed.answer);
        assert!(affirmed.answer.starts_with("If a handler returns 404"), "{}", affirmed.answer);
    }

    #[test]
    fn of_two_sentences_that_count_the_asked_thing_the_one_about_the_question_leads() {
        let asks = Asks {
            stems: ["rust", "char", "type", "byte"].iter().map(|w| text::stem(w)).collect(),
            entities: Vec::new(),
            kind: Vec::new(),
            words: Vec::new(),
            counted: vec!["bytes".into()],
            abbreviation: None,
        };
        let (first, second) = (card(1), card(2));
        let read = "Rust's answer is 24, because each scalar value in that string takes 2 bytes of storage.";
        let about = "Rust's char type is 4 bytes in size.";
        let best = [(sentence_score(about, &second, &asks), &second, about)];
        assert!(counted_better(&best, read, &first, &asks), "the sentence about char counts its bytes too");
        let uncounted = [(9.0, &second, "Rust's char type is a Unicode scalar value.")];
        assert!(!counted_better(&uncounted, read, &first, &asks), "a best sentence that counts nothing yields");
        assert!(!counted_better(&best, about, &second, &asks), "the reading's own sentence is not better than itself");
    }

    #[test]
    fn a_denial_that_comes_close_to_the_best_sentence_answers_no() {
        let mut state = crate::fixtures::state_for("Is the maximum size limit enabled in the default configuration?");
        let (mut first, mut second) = (card(1), card(2));
        first.hit.text = "Change the configuration to enable a maximum size limit for untrusted input.".into();
        second.hit.text = "A maximum size limit exists, but it is not enabled in the default configuration.".into();
        state.cards = vec![first, second];
        let answer = synthesize(&state, &Default::default());
        assert_eq!(answer.short_answer.map(|s| s.text).as_deref(), Some("no"), "{}", answer.answer);
        assert!(answer.answer.starts_with("no [1]."), "{}", answer.answer);
        assert!(answer.answer.contains("not enabled in the default configuration. [1]"), "{}", answer.answer);
    }

    #[test]
    fn a_next_sentence_that_points_back_and_goes_on_to_answer_is_quoted_after_the_lead() {
        let mut state = crate::fixtures::state_for("Which struct replaces the Options trait from bincode 1?");
        let mut c = card(1);
        c.hit.text = "Bincode 1 had the Options trait. This has been replaced with the Configuration struct. \
                      It is still a trait in version one."
            .into();
        state.cards = vec![c];
        let answer = synthesize(&state, &Default::default());
        let lead = answer.answer.split(" [1]").next().unwrap_or_default();
        assert_eq!(lead, "Bincode 1 had the Options trait. This has been replaced with the Configuration struct.");
        assert_eq!(answer.answer.matches("Configuration struct").count(), 1, "quoted once: {}", answer.answer);
        // A pointing sentence that adds nothing the question asks is not quoted with it.
        let mut c = card(1);
        c.hit.text = "Bincode 1 had the Options trait. It was popular with users.".into();
        state.cards = vec![c];
        let answer = synthesize(&state, &Default::default());
        assert!(answer.answer.starts_with("Bincode 1 had the Options trait. [1]"), "{}", answer.answer);
        // A lead that is a window's cut-off first words is continued too.
        let mut state = crate::fixtures::state_for("Which layer handles errors from fallible middleware?");
        let mut c = card(1);
        c.hit.id = "d1#2".into();
        c.hit.text = "handle errors from fallible middleware. That is done with [HandleErrorLayer]:".into();
        state.cards = vec![c];
        let answer = synthesize(&state, &Default::default());
        let expected = "… handle errors from fallible middleware. That is done with [HandleErrorLayer]: [1]";
        assert!(answer.answer.starts_with(expected), "{}", answer.answer);
    }

    #[test]
    fn citations_to_unknown_cards_are_removed_and_counted() {
        let (answer, removed) = verify_citations("Luffy is a pirate [1] and a captain [99].", &[card(1)]);
        assert_eq!(answer, "Luffy is a pirate [1] and a captain .");
        assert_eq!(removed, 1);
    }
}
