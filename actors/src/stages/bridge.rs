//! Multi-hop bridging for the deterministic agents: which entities, named in the retrieved cards, does the
//! question need next? "When did Lothair II's mother die?" retrieves Lothair II, whose card says "son of …
//! Ermengarde of Tours"; Ermengarde of Tours is the bridge to follow.

use sleuth_messages::LoopState;

use super::intake::RELATION_NOUNS;
use crate::text;

/// Words whose presence in a sentence signals the relation a question asks about, by relation noun stem.
/// "mother" is rarely written as "mother" in the card of the child: "son of X and Y", "born to".
const RELATION_TRIGGERS: &[(&str, &[&str])] = &[
    ("moth", &["son", "daughter", "child", "born", "parent"]),
    ("fath", &["son", "daughter", "child", "born", "parent"]),
    ("parent", &["son", "daughter", "child", "born"]),
    ("son", &["father", "moth", "fath", "child", "children"]),
    ("daughter", &["father", "moth", "fath", "child", "children"]),
    ("child", &["father", "moth", "fath", "son", "daughter", "children"]),
    ("wife", &["marri", "husband", "spouse"]),
    ("husband", &["marri", "wife", "spouse"]),
    ("spouse", &["marri", "wife", "husband"]),
    ("compos", &["music", "score", "compos"]),
    ("perform", &["song", "singer", "record", "sung", "perform", "single"]),
    ("direct", &["film", "direct"]),
    ("produc", &["produc"]),
    ("writ", &["written", "wrote", "writ"]),
    ("auth", &["written", "wrote", "novel"]),
    ("creat", &["creat"]),
    ("found", &["found"]),
];

/// True when the question asks about something related to a named entity ("Lothair II's mother").
pub fn needs_bridge(state: &LoopState) -> bool {
    state.analysis.keywords.iter().any(|k| RELATION_NOUNS.contains(&k.as_str()))
}

/// The related entities named in one anchor card: a card about one of the question's entities.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeGroup {
    pub anchor: String,
    pub names: Vec<String>,
}

/// Stems that mark a sentence as relevant: the question's own non-entity words plus the triggers of its relations.
fn relation_stems(state: &LoopState) -> Vec<String> {
    let a = &state.analysis;
    let mut stems: Vec<String> = a
        .keywords
        .iter()
        .filter(|k| !a.entities.iter().any(|e| text::mentions(e, k)))
        .map(|k| text::stem(k).to_string())
        .collect();
    for keyword in &a.keywords {
        let stem = text::stem(keyword);
        if let Some((_, triggers)) = RELATION_TRIGGERS.iter().find(|(r, _)| stem.starts_with(r) || *r == stem) {
            stems.extend(triggers.iter().map(|t| t.to_string()));
        }
    }
    stems.sort();
    stems.dedup();
    stems
}

/// For each anchor card (best first), the names in its relevant sentences that the question does not name.
pub fn bridge_groups(state: &LoopState) -> Vec<BridgeGroup> {
    let a = &state.analysis;
    let stems = relation_stems(state);
    let about = |title: &str| a.entities.iter().any(|e| text::mentions(title, e) || text::mentions(e, title));
    let mut anchors: Vec<_> = state.cards.iter().filter(|c| a.entities.is_empty() || about(&c.hit.title)).collect();
    anchors.sort_by(|x, y| y.hit.score.total_cmp(&x.hit.score));
    anchors.truncate(if a.entities.is_empty() { 1 } else { 4 });
    let mut groups: Vec<BridgeGroup> = Vec::new();
    for card in anchors {
        if groups.iter().any(|g| g.anchor == card.hit.title) {
            continue;
        }
        let mut names = Vec::new();
        for sentence in text::sentences(&card.hit.text) {
            let words: Vec<&str> = sentence.split_whitespace().collect();
            let is_trigger = |w: &str| {
                text::tokens(w).iter().map(|t| text::stem(t)).any(|t| stems.iter().any(|s| t == s || t.starts_with(s.as_str()) && s.len() >= 4))
            };
            let Some(trigger) = words.iter().position(|w| is_trigger(w)) else { continue };
            // The related entity usually follows the word that names the relation: "son of X", "directed by X".
            let after = words[trigger..].join(" ");
            let before = words[..trigger].join(" ");
            for name in text::name_spans(&after).into_iter().chain(text::name_spans(&before).into_iter().rev()) {
                let known = a.entities.iter().any(|e| text::mentions(e, &name) || text::mentions(&name, e))
                    || text::mentions(&card.hit.title, &name);
                if !known && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        groups.push(BridgeGroup { anchor: card.hit.title.clone(), names });
    }
    groups
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Card, Hit, JsonMap};

    use super::*;
    use crate::{config::LoopConfig, machine, stages::intake};

    fn state_with(question: &str, cards: &[(&str, &str)]) -> LoopState {
        let analysis = intake::analyze(question);
        let mut state = machine::new_state(machine::NewRequest {
            request_id: uuid::Uuid::now_v7(),
            request: sleuth_messages::AskRequest::new(question),
            caps: machine::caps_for(&LoopConfig::default(), analysis.route, None),
            analysis,
            now_ms: 0,
            deadline_ms: u64::MAX,
            reply: None,
            traceparent: None,
        });
        state.cards = cards
            .iter()
            .enumerate()
            .map(|(i, (title, text))| Card {
                n: i as u32 + 1,
                turn: 1,
                hit: Hit { id: title.to_string(), doc_id: title.to_string(), title: title.to_string(), text: text.to_string(), score: 10.0 - i as f32, metadata: JsonMap::new() },
            })
            .collect();
        state
    }

    #[test]
    fn bridges_follow_the_relation_word() {
        let cases: &[(&str, (&str, &str), &str)] = &[
            (
                "When did Lothair II's mother die?",
                ("Lothair II", "Lothair II was king of Lotharingia. He was the son of Emperor Lothair I and Ermengarde of Tours."),
                "Ermengarde of Tours",
            ),
            (
                "Where was the director of film The Private Life Of Cinema born?",
                ("The Private Life of Cinema", "The Private Life of Cinema is a 2011 documentary by Quebec film director and producer Denys Desjardins."),
                "Denys Desjardins",
            ),
        ];
        for (question, card, expected) in cases {
            let state = state_with(question, &[*card]);
            assert!(needs_bridge(&state), "{question}");
            let groups = bridge_groups(&state);
            let likeliest: Vec<&str> = groups[0].names.iter().take(2).map(String::as_str).collect();
            assert!(likeliest.contains(expected), "{question}: {groups:?}");
        }
    }
}
