//! Where each card sits on the question's chain: how many hops from the cards the question names, through the
//! titles the cards name and the bridges the loop's hops were searched with, and how closely a card's parent names
//! it next to the question's words.

use sleuth_messages::Card;

use super::words::{same_word, subject};
use crate::text;

/// What is known of the question's chain: how many links it has ("the director of X" has one), and the bridges
/// its hops were searched with.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    pub links: usize,
    pub bridges: Vec<Bridge>,
}

/// A thing the chain went through that the corpus may have no document for ("Zimbabwe" for "the country where
/// the Bubye River is found"), and how many hops from the question it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Bridge {
    pub name: String,
    pub depth: usize,
}

impl Chain {
    /// A chain of `links` links and no searched bridges.
    pub fn of(links: usize) -> Chain {
        Chain { links, bridges: Vec::new() }
    }
}

/// How many hops from the question each card is: 0 for a card the question names, then one more for each card
/// named in a card one hop nearer. A card that names a searched bridge is as far as the bridge: the corpus need
/// not hold the bridge's own document ("Victoria Falls … in Zimbabwe" is where "the country where the Bubye River
/// is" leads). Cards nothing reaches are `None`.
pub fn depths(question: &str, window: &[&Card], bridges: &[Bridge]) -> Vec<Option<usize>> {
    // A card the question names is one whose title is a name the question gives, not one that only shares its
    // common words ("Place of birth").
    let mut names = text::name_spans(question);
    // A one-word disambiguation stays with its name ("B Boy (Song)"), so a title that opens with an article the
    // name drops ("The Organization (Film)" gives "Organization Film") is found by the name without it as well.
    let undisambiguated: Vec<&str> = question
        .split_whitespace()
        .filter(|w| !(w.starts_with('(') && w.trim_end_matches('?').ends_with(')')))
        .collect();
    for name in text::name_spans(&undisambiguated.join(" ")) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let named = |title: &str| {
        !title.is_empty()
            && (text::mentions(question, title)
                && names.iter().any(|n| text::mentions(n, title) || text::mentions(title, n))
                || names.iter().any(|n| text::same_name(n, title)))
    };
    // A title's comma qualifier is a disambiguation too: "Consulate General of the United States, Frankfurt" is
    // the consulate the question names, and a text that names it without the city still names it.
    let short = |title: &str| -> String {
        let bare = subject(title);
        bare.split_once(", ").map_or(bare, |(head, _)| head).to_string()
    };
    let mut depth: Vec<Option<usize>> =
        window.iter().map(|c| (named(subject(&c.hit.title)) || named(&short(&c.hit.title))).then_some(0)).collect();
    // A title that is a name plus the question's own words ("Prague astronomical clock" for "the astronomical
    // clock in the city where X died") is about that name's thing: the name is what a card must give to reach it.
    let asked = text::tokens(question);
    let reached_by = |title: &str| -> String {
        let words = text::tokens(title);
        let rest: Vec<String> = words.iter().filter(|w| !asked.contains(w)).cloned().collect();
        match rest.len() {
            n if n > 0 && n < words.len() && n <= 3 => rest.join(" "),
            _ => short(title),
        }
    };
    // Of a hop's bridges (best first) the first that a card names leads on: the second reading is a fallback, and
    // a broad one ("United States") would reach every card.
    let names_bridge =
        |card: &Card, b: &Bridge| text::mentions(&card.hit.title, &b.name) || text::mentions(&card.hit.text, &b.name);
    let mut hops: Vec<usize> = bridges.iter().map(|b| b.depth).collect();
    hops.dedup();
    for hop in hops {
        let open: Vec<usize> = (0..window.len()).filter(|i| depth[*i].is_none()).collect();
        let leading =
            bridges.iter().filter(|b| b.depth == hop).find(|b| open.iter().any(|i| names_bridge(window[*i], b)));
        for i in open {
            if leading.is_some_and(|b| names_bridge(window[i], b)) {
                depth[i] = Some(hop);
            }
        }
    }
    for d in 0..4 {
        let from: Vec<usize> = (0..window.len()).filter(|i| depth[*i] == Some(d)).collect();
        for j in 0..window.len() {
            let title = short(&window[j].hit.title);
            let by = reached_by(&window[j].hit.title);
            let reaches = |i: &usize| {
                *i != j && (text::mentions(&window[*i].hit.text, &title) || text::mentions(&window[*i].hit.text, &by))
            };
            if depth[j].is_none() && from.iter().any(reaches) {
                depth[j] = Some(d + 1);
            }
        }
    }
    depth
}

/// How near, in words, a mention of `name` in `text` sits to one of the question's cue words: "music composed by
/// Stephen Warbeck" links the film to its composer more closely than "written by Lee Hall" does. A word of
/// `before` counts only ahead of the name ("the son of X" says X is a parent; "X, daughter of Y" does not).
pub(super) fn link_distance(text: &str, name: &str, cues: &[String], before: &[String]) -> Option<usize> {
    let words = text::tokens(text);
    let name = text::tokens(name);
    if name.is_empty() || words.len() < name.len() {
        return None;
    }
    let cue_at: Vec<(usize, bool)> = (0..words.len())
        .filter_map(|i| {
            if cues.iter().any(|c| same_word(&words[i], c)) {
                Some((i, false))
            } else {
                before.iter().any(|c| same_word(&words[i], c)).then_some((i, true))
            }
        })
        .collect();
    let len = name.len();
    (0..=words.len() - len)
        .filter(|i| words[*i..*i + len] == name[..])
        .flat_map(|i| {
            cue_at.iter().filter_map(move |&(c, ahead_only)| match c < i {
                true => Some(i - c),
                false if ahead_only => None,
                false => Some(c.saturating_sub(i + len - 1)),
            })
        })
        .min()
}
