//! Mention links: where a document's text names another document's title, or an entity's name or alias, a
//! `mentions` edge records it. Names are matched in one pass per text with an Aho-Corasick automaton over the
//! whole dictionary, on word boundaries and case-sensitively (titles are proper names), so linking stays linear
//! in the corpus size.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, MatchKind};
use uuid::Uuid;

/// The relation mention links are stored under.
pub const MENTIONS: &str = "mentions";

/// A surface form naming more nodes than this is too ambiguous to link.
const MAX_TARGETS_PER_NAME: usize = 8;

pub use sleuth_core::entities::surface_forms;

/// A dictionary of names compiled into one automaton.
pub struct MentionLinker {
    automaton: AhoCorasick,
    targets: Vec<Vec<Uuid>>,
}

/// One node a text mentions, in order of first mention.
#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    pub node: Uuid,
    pub surface: String,
    pub count: u32,
}

impl MentionLinker {
    /// Compiles `(node, name)` pairs; names shorter than `min_chars` characters are left out.
    pub fn new(names: impl IntoIterator<Item = (Uuid, String)>, min_chars: usize) -> anyhow::Result<MentionLinker> {
        let mut by_form: HashMap<String, Vec<Uuid>> = HashMap::new();
        for (node, name) in names {
            for form in surface_forms(&name) {
                if form.chars().count() < min_chars {
                    continue;
                }
                let targets = by_form.entry(form).or_default();
                if !targets.contains(&node) {
                    targets.push(node);
                }
            }
        }
        let mut forms: Vec<(String, Vec<Uuid>)> =
            by_form.into_iter().filter(|(_, t)| t.len() <= MAX_TARGETS_PER_NAME).collect();
        forms.sort_by(|a, b| a.0.cmp(&b.0));
        let automaton =
            AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(forms.iter().map(|(f, _)| f))?;
        Ok(MentionLinker { automaton, targets: forms.into_iter().map(|(_, t)| t).collect() })
    }

    /// The nodes `text` names on word boundaries, first-mentioned first, `exclude` left out.
    pub fn find(&self, text: &str, exclude: Uuid) -> Vec<Mention> {
        let mut out: Vec<Mention> = Vec::new();
        for m in self.automaton.find_iter(text) {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            if before.is_some_and(char::is_alphanumeric) || after.is_some_and(char::is_alphanumeric) {
                continue;
            }
            for node in &self.targets[m.pattern().as_usize()] {
                if *node == exclude {
                    continue;
                }
                match out.iter_mut().find(|x| x.node == *node) {
                    Some(existing) => existing.count += 1,
                    None => out.push(Mention { node: *node, surface: text[m.start()..m.end()].to_string(), count: 1 }),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_forms_drop_disambiguation_and_titles() {
        assert_eq!(surface_forms("Algiers (film)"), ["Algiers (film)", "Algiers"]);
        assert_eq!(
            surface_forms("Frederick I, Holy Roman Emperor"),
            ["Frederick I, Holy Roman Emperor", "Frederick I"]
        );
        assert_eq!(surface_forms("Paris"), ["Paris"]);
    }

    #[test]
    fn finds_names_on_word_boundaries_longest_first() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let linker = MentionLinker::new(
            [(a, "Lothair I".to_string()), (b, "Lothair II".to_string()), (c, "Tours".to_string())],
            4,
        )
        .unwrap();
        let found =
            linker.find("Lothair II was the son of Lothair I and Ermengarde of Tours. Toursville is elsewhere.", b);
        let nodes: Vec<Uuid> = found.iter().map(|m| m.node).collect();
        assert_eq!(nodes, [a, c], "{found:?}");
    }
}
