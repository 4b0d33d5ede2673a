//! The query classifier (seed 001): one of seven query types with a confidence, from multilingual patterns, and
//! the vector/graph weight table with its three overrides.

use regex::RegexSet;
use sleuth_messages::{QueryType, RetrieverWeights};
use std::sync::LazyLock;

use crate::text;

/// Patterns per type, English, French, Spanish and German, matched case-insensitively.
const COMPARATIVE: &[&str] = &[
    r"\bcompar\w*",
    r"\bversus\b",
    r"\bvs\.?\s",
    r"\bdifferen(ce|ces|t) between\b",
    r"\bdiffer\b",
    r"\bpar rapport [àa]\b",
    r"\bdiff[ée]rences? entre\b",
    r"\bdiferencias? entre\b",
    r"\bfrente a\b",
    r"\bvergleich\w*",
    r"\bunterschied\w*",
    r"\bwho (lived|was born|died) (longer|first|later|earlier)\b",
    r"\b(older|younger|earlier|later|first)\b.*,.*\bor\b",
    r"\bthe same (country|nationality|place|city)\b",
    r"\bboth\b.*\bsame\b",
];
const RELATIONAL: &[&str] = &[
    r"\brelated\b",
    r"\brelationship\b",
    r"\bconnect(ed|ion)\b",
    r"\blink(ed)? (between|to)\b",
    r"\brelation\b",
    r"\bli[ée]s?\b",
    r"\blien entre\b",
    r"\brelaci[óo]n\b",
    r"\brelacionad[oa]s?\b",
    r"\bbeziehung\b",
    r"\bverbunden\b",
    r"\bzusammenhang\b",
];
const ANALYTICAL: &[&str] = &[
    r"\bwhy\b",
    r"\bexplain\w*",
    r"\banaly[sz]\w*",
    r"\bevaluat\w+",
    r"\bassess\w*",
    r"\bimpact of\b",
    r"\bpourquoi\b",
    r"\bexpliqu\w+",
    r"\b[ée]valuer\b",
    r"\bpor qu[ée]\b",
    r"\bexplicar\b",
    r"\banalizar\b",
    r"\bwarum\b",
    r"\berkl[äa]r\w*",
    r"\bbewerten\b",
];
const PROCEDURAL: &[&str] = &[
    r"^how (do|can|should) (i|we|you)\b",
    r"\bhow to\b",
    r"\bsteps?\b",
    r"\bprocedure\b",
    r"\binstall\w*",
    r"\bconfigur\w+",
    r"\bset ?up\b",
    r"^comment (faire|puis|peut|on)\b",
    r"\b[ée]tapes\b",
    r"\bproc[ée]dure\b",
    r"^c[óo]mo (puedo|se|hago)\b",
    r"\bpasos\b",
    r"\bprocedimiento\b",
    r"^wie (kann|mache|installiere)\b",
    r"\bschritte\b",
    r"\banleitung\b",
];
const EXPLORATORY: &[&str] = &[
    r"\boverview\b",
    r"\bsummar\w+",
    r"^tell me about\b",
    r"^what are the main\b",
    r"\bthemes?\b",
    r"\btopics?\b",
    r"\br[ée]sum\w+",
    r"\baper[çc]u\b",
    r"^parle[sz]?[- ]moi de\b",
    r"\bresumen\b",
    r"\bresumir\b",
    r"^h[áa]blame de\b",
    r"\bpanorama\b",
    r"[üu]berblick\b",
    r"\bzusammenfass\w+",
    r"^erz[äa]hl\w* mir\b",
];
/// Question words that open a factual question.
const FACTUAL: &[&str] = &[
    r"^(who|whom|whose|what|when|where|which|how (many|much|old|long)|is|are|was|were|did|does|do|has|have)\b",
    r"^(qui|que|quoi|quand|o[ùu]|quel(le)?s?|combien|est-ce)\b",
    r"^¿?(qui[ée]n|qu[ée]|cu[áa]ndo|d[óo]nde|cu[áa]l|cu[áa]nt[oa]s?)\b",
    r"^(wer|was|wann|wo|welche[rsn]?|wie viele|ist|sind)\b",
];

fn set(patterns: &[&str]) -> RegexSet {
    RegexSet::new(patterns.iter().map(|p| format!("(?i){p}"))).expect("static regex")
}

static SETS: LazyLock<[(QueryType, RegexSet); 5]> = LazyLock::new(|| {
    [
        (QueryType::Comparative, set(COMPARATIVE)),
        (QueryType::Relational, set(RELATIONAL)),
        (QueryType::Analytical, set(ANALYTICAL)),
        (QueryType::Procedural, set(PROCEDURAL)),
        (QueryType::Exploratory, set(EXPLORATORY)),
    ]
});
static FACTUAL_SET: LazyLock<RegexSet> = LazyLock::new(|| set(FACTUAL));

/// The question's type and how sure the classifier is. One type's patterns alone: 0.85. Several types'
/// patterns: the first in precedence order (comparative, relational, analytical, procedural, exploratory) at
/// 0.6. Only a question word: factual at 0.75. Nothing: unknown at 0.4. `asks_type_of_named` is "which anime is
/// Luffy in?", a question for an entity of some type related to a named one: relational.
pub fn classify(question: &str, entities: usize, asks_type_of_named: bool) -> (QueryType, f32) {
    let lower = question.to_lowercase();
    let mut matched: Vec<QueryType> = SETS.iter().filter(|(_, set)| set.is_match(&lower)).map(|(t, _)| *t).collect();
    // "Compare" needs two things to compare; "both ... same" needs two names.
    if matched.first() == Some(&QueryType::Comparative)
        && entities < 2
        && !lower.contains("compar")
        && !lower.contains("vergleich")
    {
        matched.remove(0);
    }
    if asks_type_of_named && !matched.contains(&QueryType::Relational) {
        matched.push(QueryType::Relational);
        matched.sort_by_key(|t| SETS.iter().position(|(s, _)| s == t));
    }
    match matched.as_slice() {
        [only] => (*only, 0.85),
        [first, ..] => (*first, 0.6),
        [] if FACTUAL_SET.is_match(&lower) => (QueryType::Factual, 0.75),
        [] if text::content_words(question).len() >= 2 => (QueryType::Unknown, 0.5),
        [] => (QueryType::Unknown, 0.4),
    }
}

/// Seed 001's weight table, then its overrides: a confident factual question uses the index alone, an
/// exploratory one the graph alone, and a relational one without entities weighs both equally.
pub fn weights(query_type: QueryType, confidence: f32, entities: usize) -> RetrieverWeights {
    let (vector, graph) = match query_type {
        QueryType::Factual if confidence > 0.7 => (1.0, 0.0),
        QueryType::Exploratory => (0.0, 1.0),
        QueryType::Relational if entities == 0 => (0.5, 0.5),
        QueryType::Factual => (0.7, 0.3),
        QueryType::Relational => (0.2, 0.8),
        QueryType::Comparative => (0.3, 0.7),
        QueryType::Procedural => (0.8, 0.2),
        QueryType::Analytical => (0.5, 0.5),
        QueryType::Unknown => (0.6, 0.4),
    };
    RetrieverWeights { vector, graph }
}

#[cfg(test)]
mod tests {
    use super::*;
    use QueryType::*;

    #[test]
    fn seven_types_in_four_languages() {
        let cases: &[(&str, usize, bool, QueryType)] = &[
            ("Who is Nami?", 1, false, Factual),
            ("Quand est né Victor Hugo ?", 1, false, Factual),
            ("¿Dónde nació Picasso?", 1, false, Factual),
            ("Wann wurde Goethe geboren?", 1, false, Factual),
            ("How is Luffy related to Nami?", 2, false, Relational),
            ("Quel est le lien entre Luffy et Nami ?", 2, false, Relational),
            ("Which anime is Luffy in?", 1, true, Relational),
            ("Compare Naruto and Bleach", 2, false, Comparative),
            ("Which film came out first, 3 Dots or Dying God?", 2, false, Comparative),
            ("Who lived longer, Ludwig Elsbett or Pamela Ann Rymer?", 2, false, Comparative),
            ("Are both movies, Naked Tango and Algiers, from the same country?", 2, false, Comparative),
            ("Vergleich von Naruto und Bleach", 2, false, Comparative),
            ("Tell me about One Piece", 1, false, Exploratory),
            ("Donne un aperçu du corpus", 0, false, Exploratory),
            ("How do I install sleuth?", 1, false, Procedural),
            ("¿Cuáles son los pasos para instalarlo?", 0, false, Procedural),
            ("Why did John Middleton Murry's wife die?", 1, false, Analytical),
            ("Warum ist der Himmel blau?", 0, false, Analytical),
            ("pirate hat straw", 0, false, Unknown),
        ];
        for (q, entities, typed, want) in cases {
            assert_eq!(classify(q, *entities, *typed).0, *want, "{q}");
        }
    }

    #[test]
    fn confidence_reflects_how_clear_the_signal_is() {
        assert_eq!(classify("Compare Naruto and Bleach", 2, false), (Comparative, 0.85));
        assert_eq!(classify("Who is Nami?", 1, false), (Factual, 0.75));
        assert_eq!(classify("Why is Luffy related to Nami?", 2, false), (Relational, 0.6));
        assert_eq!(classify("pirate hat straw", 0, false), (Unknown, 0.5));
        assert_eq!(classify("hat", 0, false), (Unknown, 0.4));
    }

    #[test]
    fn weight_table_and_its_three_overrides() {
        let cases = [
            (Factual, 0.75, 1, (1.0, 0.0)),
            (Factual, 0.7, 1, (0.7, 0.3)),
            (Relational, 0.85, 2, (0.2, 0.8)),
            (Relational, 0.85, 0, (0.5, 0.5)),
            (Comparative, 0.85, 2, (0.3, 0.7)),
            (Exploratory, 0.5, 1, (0.0, 1.0)),
            (Procedural, 0.85, 0, (0.8, 0.2)),
            (Analytical, 0.85, 1, (0.5, 0.5)),
            (Unknown, 0.4, 0, (0.6, 0.4)),
        ];
        for (t, c, e, (vector, graph)) in cases {
            assert_eq!(weights(t, c, e), RetrieverWeights { vector, graph }, "{t:?} {c} {e}");
        }
    }

    #[test]
    fn a_retriever_under_15_percent_is_skipped_and_low_confidence_shifts_0_3() {
        let procedural = weights(Procedural, 0.85, 0);
        assert!(procedural.runs_vector() && procedural.runs_graph());
        let factual = weights(Factual, 0.75, 1);
        assert!(factual.runs_vector() && !factual.runs_graph());
        let shifted = weights(Factual, 0.6, 1).shifted_to_graph();
        assert!((shifted.vector - 0.4).abs() < 1e-6 && (shifted.graph - 0.6).abs() < 1e-6, "{shifted:?}");
        let back = weights(Relational, 0.85, 2).shifted_to_vector();
        assert!((back.vector - 0.5).abs() < 1e-6 && (back.graph - 0.5).abs() < 1e-6, "{back:?}");
        let floor = weights(Exploratory, 0.85, 1).shifted_to_graph();
        assert_eq!(floor, RetrieverWeights { vector: 0.0, graph: 1.0 });
    }
}
