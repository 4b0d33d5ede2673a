//! Reranking of fused candidates: the [`Reranker`] trait, [`KeepFused`] (RRF order, the baseline) and
//! [`FeatureReranker`], a linear model over five features that are cheap to compute for every candidate:
//!
//! - `fused`: the candidate's position in the RRF list, as 1 − rank/n;
//! - `dense`: cosine similarity between the question and the chunk (when both have a dense vector);
//! - `title`: the chunk's document title occurs in the question as a whole phrase (the question names it), whole
//!   for the document's two best chunks on the other features and 2/k for its k-th;
//! - `bridge`: the chunk's text names the title of another candidate that the question names, i.e. the passage
//!   is one hop away from an entity of the question ("Lothair II's mother" → the passage that mentions Lothair II);
//! - `link`: the chunk's title is named in the text of a candidate the question names, the hop in the other
//!   direction ("the composer of Inherent Vice" → the passage the Inherent Vice passage names as its composer),
//!   where that text writes the title as a name (capitalised), not as a common word; shared among the
//!   document's chunks like `title`.
//!
//! `bench/HISTORY.md` has its effect on the 2Wiki dev set against RRF alone.

use async_trait::async_trait;

pub use crate::config::FeatureWeights;
use crate::{embed::cosine, index::Candidate};

#[async_trait]
pub trait Reranker: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    /// Reorders `candidates` for the question, best first.
    async fn rerank(
        &self,
        question: &str,
        question_dense: Option<&[f32]>,
        candidates: Vec<Candidate>,
    ) -> anyhow::Result<Vec<Candidate>>;
}

/// Keeps the fused order: RRF alone.
pub struct KeepFused;

#[async_trait]
impl Reranker for KeepFused {
    fn name(&self) -> &'static str {
        "none"
    }

    async fn rerank(&self, _: &str, _: Option<&[f32]>, candidates: Vec<Candidate>) -> anyhow::Result<Vec<Candidate>> {
        Ok(candidates)
    }
}

pub struct FeatureReranker {
    pub weights: FeatureWeights,
}

/// Lowercases and turns every run of non-alphanumeric characters into one space, padded with spaces so that
/// `contains(" phrase ")` is a whole-word test.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

/// The phrase a title is recognised by: without a trailing disambiguation such as " (film)", normalised.
fn title_phrase(title: &str) -> String {
    let base = match (title.rfind(" ("), title.ends_with(')')) {
        (Some(i), true) if i > 0 => &title[..i],
        _ => title,
    };
    normalize(base)
}

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "and", "or", "to", "is", "it", "by", "for", "with", "who", "what", "where",
    "when", "which", "why", "how", "film", "song", "born", "die", "died", "same", "both",
];

/// The question with each code path cut to its last segment: `fancy_regex::RegexSet` names the type RegexSet, not
/// the document titled "fancy-regex".
fn last_segments(question: &str) -> String {
    question
        .split_whitespace()
        .map(|w| match w.rsplit_once("::") {
            Some((_, last)) => last,
            None => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the question names this title. One-word titles must also be capitalised in the question, so that a
/// document titled "Director" is not matched by "the director of".
fn names_title(question: &str, question_norm: &str, phrase: &str) -> bool {
    let words: Vec<&str> = phrase.split_whitespace().collect();
    if words.is_empty() || words.iter().all(|w| STOPWORDS.contains(w)) || !question_norm.contains(phrase) {
        return false;
    }
    if words.len() > 1 {
        return true;
    }
    question
        .split(|c: char| !c.is_alphanumeric())
        .skip(1)
        .any(|w| w.chars().next().is_some_and(char::is_uppercase) && w.to_lowercase() == words[0])
}

/// Whether `raw` writes the normalised `phrase` somewhere as a name: its first word that is not a stopword begins
/// with a capital or a digit there. A passage that names "Jonny Greenwood" links to his passage; one that speaks of
/// "recursion" or "performance" does not link to a manual's sections titled "Recursion" and "PERFORMANCE".
fn written_as_name(raw: &str, phrase: &str) -> bool {
    let wanted: Vec<&str> = phrase.split_whitespace().collect();
    let Some(key) = wanted.iter().position(|w| !STOPWORDS.contains(w)) else { return false };
    let words: Vec<&str> = raw.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.windows(wanted.len()).any(|window| {
        window.iter().zip(&wanted).all(|(w, p)| w.to_lowercase() == *p)
            && window[key].chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
    })
}

#[async_trait]
impl Reranker for FeatureReranker {
    fn name(&self) -> &'static str {
        "features"
    }

    async fn rerank(
        &self,
        question: &str,
        question_dense: Option<&[f32]>,
        candidates: Vec<Candidate>,
    ) -> anyhow::Result<Vec<Candidate>> {
        let w = self.weights;
        let n = candidates.len().max(1) as f32;
        let question_norm = normalize(&last_segments(question));
        let phrases: Vec<String> = candidates.iter().map(|c| title_phrase(&c.hit.title)).collect();
        let named: Vec<bool> = phrases.iter().map(|p| names_title(question, &question_norm, p)).collect();
        let mut named_phrases: Vec<&str> =
            phrases.iter().zip(&named).filter(|(_, n)| **n).map(|(p, _)| p.as_str()).collect();
        named_phrases.sort();
        named_phrases.dedup();
        let texts: Vec<String> = candidates.iter().map(|c| normalize(&c.hit.text)).collect();
        let named_texts: Vec<(&str, &str, &str)> = (0..candidates.len())
            .filter(|&i| named[i])
            .map(|i| (phrases[i].as_str(), texts[i].as_str(), candidates[i].hit.text.as_str()))
            .collect();
        let links: Vec<bool> = phrases
            .iter()
            .map(|own| {
                own.split_whitespace().any(|w| !STOPWORDS.contains(&w))
                    && named_texts
                        .iter()
                        .any(|(p, t, raw)| p != own && t.contains(own.as_str()) && written_as_name(raw, own))
            })
            .collect();
        // Each chunk's own score first: its fused rank, its cosine and whether its text names a named title.
        let own: Vec<f32> = candidates
            .iter()
            .enumerate()
            .map(|(rank, c)| {
                let fused = 1.0 - rank as f32 / n;
                let dense = match (question_dense, c.dense.as_deref()) {
                    (Some(q), Some(d)) => cosine(q, d),
                    _ => 0.0,
                };
                let bridge = named_phrases.iter().any(|p| *p != phrases[rank] && texts[rank].contains(p));
                w.fused * fused + w.dense * dense + w.bridge * f32::from(u8::from(bridge))
            })
            .collect();
        // What a title earns (named by the question, or linked from a passage it names) goes whole to the
        // document's two best chunks on their own score (a passage the chunker split, or a section and its
        // continuation) and 2/k to its k-th: a question that names a manual's README ("… fancy-regex …") does not
        // fill the top with every chunk of it, nor of a file it links to.
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&a, &b| own[b].total_cmp(&own[a]).then(a.cmp(&b)));
        let mut share = vec![1.0_f32; candidates.len()];
        let mut seen: std::collections::HashMap<&str, f32> = std::collections::HashMap::new();
        for &i in &order {
            let k = seen.entry(candidates[i].hit.doc_id.as_str()).or_insert(0.0);
            *k += 1.0;
            share[i] = (2.0 / *k).min(1.0);
        }
        drop(seen);
        let mut scored: Vec<(f32, Candidate)> = candidates
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let title = if named[i] { share[i] } else { 0.0 };
                let link = if links[i] { share[i] } else { 0.0 };
                (own[i] + w.title * title + w.link * link, c)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored
            .into_iter()
            .map(|(score, mut c)| {
                c.hit.score = score;
                c
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Hit, JsonMap};

    use super::*;

    fn cand(title: &str, text: &str) -> Candidate {
        Candidate {
            hit: Hit {
                id: format!("{title}#0"),
                doc_id: title.into(),
                title: title.into(),
                text: text.into(),
                score: 0.0,
                metadata: JsonMap::new(),
            },
            dense: None,
        }
    }

    /// `candidates` reranked for `question` with the default weights.
    fn reranked(question: &str, dense: Option<&[f32]>, candidates: Vec<Candidate>) -> Vec<Candidate> {
        let reranker = FeatureReranker { weights: FeatureWeights::default() };
        futures::executor::block_on(reranker.rerank(question, dense, candidates)).unwrap()
    }

    fn titles(out: &[Candidate]) -> Vec<&str> {
        out.iter().map(|c| c.hit.title.as_str()).collect()
    }

    fn ids(out: &[Candidate]) -> Vec<&str> {
        out.iter().map(|c| c.hit.id.as_str()).collect()
    }

    #[test]
    fn normalisation_makes_whole_word_phrases() {
        assert_eq!(normalize("I'Ll Be Going-Now?"), " i ll be going now ");
        assert_eq!(title_phrase("Inherent Vice (film)"), " inherent vice ");
        assert_eq!(title_phrase("(Untitled)"), " untitled ");
    }

    #[test]
    fn named_titles_and_their_bridges_rise_to_the_top() {
        let candidates = vec![
            cand("Mother", "A mother is a female parent."),
            cand("Lothair I", "Lothair I was emperor."),
            cand("Ermengarde of Tours", "Ermengarde was the wife of Lothair I and mother of Lothair II."),
            cand("Lothair II", "Lothair II was king of Lotharingia."),
        ];
        let out = reranked("When did Lothair Ii's mother die?", None, candidates);
        let titles = titles(&out);
        assert_eq!(titles, ["Lothair II", "Ermengarde of Tours", "Mother", "Lothair I"]);
    }

    #[test]
    fn passages_that_a_named_passage_names_are_linked() {
        let candidates = vec![
            cand("Film score", "A film score is music written for a film."),
            cand("Jonny Greenwood", "Jonny Greenwood is an English musician."),
            cand("Inherent Vice (film)", "Inherent Vice is a 2014 film with music by Jonny Greenwood."),
        ];
        let out = reranked("Where was the composer of Inherent Vice born?", None, candidates);
        let titles = titles(&out);
        assert_eq!(titles, ["Inherent Vice (film)", "Jonny Greenwood", "Film score"]);
    }

    #[test]
    fn a_code_path_names_its_last_segment_not_the_crate_s_document() {
        let candidates = vec![
            cand("Sets", "A RegexSet matches many patterns at once; it is not a drop-in replacement."),
            cand("fancy-regex", "fancy-regex is a regex library with backtracking."),
        ];
        let out = reranked("Is fancy_regex::RegexSet a drop-in replacement?", None, candidates);
        let titles = titles(&out);
        assert_eq!(titles, ["Sets", "fancy-regex"], "the crate's document is not named by the path");
        assert_eq!(last_segments("Is fancy_regex::RegexSet like regex::RegexSet?"), "Is RegexSet like RegexSet?");
    }

    #[test]
    fn a_named_manual_does_not_fill_the_top_and_common_words_do_not_link() {
        // The question names the README ("fancy-regex"), whose text speaks of "recursion" and "performance"; the
        // section that answers leads the fused order but is titled otherwise.
        let readme = |i: usize, text: &str| {
            let c = cand("fancy-regex", text);
            Candidate { hit: Hit { id: format!("fancy-regex#{i}"), ..c.hit }, dense: None }
        };
        let candidates = vec![
            cand("Left recursion", "fancy-regex rejects left-recursive patterns at compile time."),
            cand("Recursion", "Recursion is when a subroutine calls itself."),
            readme(0, "fancy-regex has Backreferences at recursion levels and good performance."),
            readme(1, "The authors."),
            readme(2, "Contributions."),
            cand("PERFORMANCE", "The Seek pre-filter."),
        ];
        let out = reranked("When does fancy-regex reject left-recursive patterns?", None, candidates);
        let ids = ids(&out);
        assert_eq!(ids[..4], ["fancy-regex#0", "fancy-regex#1", "Left recursion#0", "fancy-regex#2"], "{ids:?}");
        assert_eq!(ids[5], "PERFORMANCE#0", "{ids:?}");
        assert!(written_as_name("music by Jonny Greenwood.", " jonny greenwood "));
        assert!(written_as_name("a song by the Beatles", " the beatles "));
        assert!(!written_as_name("at recursion levels", " recursion "));
    }

    #[test]
    fn a_named_document_s_best_chunks_on_their_own_features_earn_the_whole_title() {
        // Fused order puts the serial's later chunks first; the question's vector is closer to the one with the date.
        let with = |id: &str, title: &str, text: &str, dense: [f32; 2]| {
            let c = cand(title, text);
            Candidate { hit: Hit { id: id.into(), ..c.hit }, dense: Some(dense.to_vec()) }
        };
        let serial = "Flash Gordon Conquers the Universe";
        let candidates = vec![
            with("serial#2", serial, "In 1966 it was edited down.", [0.0, 1.0]),
            with("serial#1", serial, "It stars Buster Crabbe.", [0.0, 1.0]),
            with("other#0", "Siti Noerbaja", "Siti Noerbaja is a 1941 film.", [0.6, 0.8]),
            with("serial#0", serial, "It is a 1940 serial.", [1.0, 0.0]),
        ];
        let out = reranked(
            "Which film was released earlier, Flash Gordon Conquers The Universe or Siti Noerbaja?",
            Some(&[1.0, 0.0]),
            candidates,
        );
        let ids = ids(&out);
        assert_eq!(ids, ["serial#0", "other#0", "serial#2", "serial#1"]);
    }

    #[test]
    fn one_word_titles_need_a_capital_in_the_question() {
        let q = "Who is the director of Alien?";
        let qn = normalize(q);
        assert!(names_title(q, &qn, " alien "));
        assert!(!names_title(q, &qn, " director "));
        assert!(!names_title(q, &qn, " the "));
    }

    #[test]
    fn keep_fused_is_the_identity() {
        let c = vec![cand("B", "x"), cand("A", "y")];
        let out = futures::executor::block_on(KeepFused.rerank("A", None, c.clone())).unwrap();
        assert_eq!(out, c);
    }
}
