//! The chain's next hop as a question of its own. The innermost description of a chained question ("the country
//! where the Bubye River is found") is read from the cards about its named thing by the reader, and the question
//! is searched again with the reader's answer in the description's place ("What is the name of the waterfall in
//! Zimbabwe"). A corpus need not hold a document for the bridge itself (no "Zimbabwe" page to follow a mention
//! link to), so the graph's links cannot always take this step; a search for the rewritten question can.

use sleuth_messages::{Action, AnswerKind, Card, LoopState};

use super::bridge;
use crate::{analysis::chain, reader, text};

/// The reader's best answers searched per hop, in parallel: the second is tried when the first is wrong.
const READINGS_PER_HOP: usize = 2;

/// Cards about the described thing that the reader reads a bridge from, best first.
const WINDOW: usize = 6;

/// Most hops rewritten: the chains the planner follows.
const MAX_HOPS: usize = 3;

/// Determiners that open a description: "*the* country where …".
const DETERMINERS: &[&str] = &["the", "a", "an"];

/// Words that join a description's noun to the clause naming its thing: "the country *where* X is found", "the
/// director *of* X".
const JOINERS: &[&str] = &["of", "where", "who", "whom", "which", "that", "whose", "in", "from", "for", "by"];

/// Auxiliaries and prepositions that end a clause after its name: "where X *was born in*", "X *is from*".
const AUXILIARIES: &[&str] = &["is", "was", "are", "were", "has", "had", "have", "did", "does", "do", "been"];
const PARTICLES: &[&str] = &["in", "from", "at", "by", "on", "to", "for", "into", "with"];

/// Most words between a description's noun and the name it describes by ("the person who broke the salt law in").
const MAX_GAP: usize = 8;

/// A description in a question's words: `[start, end)`, the name it describes by, and whether it asks for a person.
#[derive(Debug, Clone, PartialEq)]
struct Description {
    start: usize,
    end: usize,
    person: bool,
}

fn fold(word: &str) -> String {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
    w.trim_end_matches("'s").trim_end_matches("’s").trim_matches(['\'', '’']).to_lowercase()
}

fn ends_clause(word: &str) -> bool {
    word.ends_with([',', '?', '!', ';', ':', '.'])
}

fn is_plain(word: &str) -> bool {
    let f = fold(word);
    !f.is_empty()
        && word.chars().next().is_some_and(|c| c.is_lowercase())
        && !text::is_stopword(&f)
        && f.chars().all(|c| c.is_alphanumeric() || c == '-')
}

/// Where `name` occurs in `words`, as `[start, end)`.
fn find(words: &[&str], name: &str) -> Option<(usize, usize)> {
    let wanted: Vec<String> = name.split_whitespace().map(fold).filter(|w| !w.is_empty()).collect();
    if wanted.is_empty() || wanted.len() > words.len() {
        return None;
    }
    (0..=words.len() - wanted.len())
        .find(|&i| wanted.iter().enumerate().all(|(k, w)| &fold(words[i + k]) == w))
        .map(|i| (i, i + wanted.len()))
}

/// The end of a relative clause whose name ends at `at`: its auxiliaries, one verb or a determiner and a noun,
/// and one particle ("where X *was born in*", "X *is from*", "where X *was a citizen*", "X *is licensed to
/// broadcast*").
fn clause_end(words: &[&str], mut at: usize) -> usize {
    let open = |at: usize| at < words.len() && !ends_clause(words[at - 1]);
    while open(at) && AUXILIARIES.contains(&fold(words[at]).as_str()) {
        at += 1;
    }
    if open(at) && DETERMINERS.contains(&fold(words[at]).as_str()) && at + 1 < words.len() && is_plain(words[at + 1]) {
        at += 2;
    } else if open(at) && is_plain(words[at]) {
        at += 1;
    }
    if open(at) && PARTICLES.contains(&fold(words[at]).as_str()) {
        at += 1;
        // "licensed *to broadcast*": an infinitive after the verb is the clause's too.
        if fold(words[at - 1]) == "to" && open(at) && is_plain(words[at]) {
            at += 1;
        }
    }
    at
}

/// The description of the name at `[ns, ne)`, if the question describes something by it: "*Big Eye's main
/// director*", "*the producer of* X", "*the country where* X *is found*", "*the country* X *is from*".
fn description(words: &[&str], (ns, ne): (usize, usize)) -> Option<Description> {
    let last = words[ne - 1];
    let possessive = last.trim_end_matches(|c: char| !c.is_alphanumeric()).ends_with("'s")
        || last.trim_end_matches(|c: char| !c.is_alphanumeric()).ends_with("’s");
    if possessive && !ends_clause(last) {
        // "When did X's mother *die*": after "did", the clause's last word is its verb, not the description's.
        let clause = (ne..words.len()).find(|&i| ends_clause(words[i])).map_or(words.len(), |i| i + 1);
        let supported = words.iter().take(3).any(|w| matches!(fold(w).as_str(), "did" | "does" | "do"));
        let room = if supported { clause.saturating_sub(ne + 1) } else { clause - ne };
        let nouns = words[ne..].iter().take(3.min(room)).take_while(|w| is_plain(w)).count();
        let nouns = (ne..ne + nouns).position(|i| ends_clause(words[i])).map_or(nouns, |p| p + 1);
        if nouns > 0 {
            let head = fold(words[ne + nouns - 1]);
            return Some(Description { start: ns, end: ne + nouns, person: reader::asked::is_person_noun(&head) });
        }
    }
    // The nearest determiner before the name that opens a plain noun: "the country where the Bubye River".
    let from = ns.saturating_sub(MAX_GAP + 4);
    let det = (from..ns).rev().find(|&i| {
        DETERMINERS.contains(&words[i].to_lowercase().as_str())
            && words.get(i + 1).is_some_and(|w| is_plain(w))
            && !words[i..ns].iter().any(|w| ends_clause(w))
    })?;
    let nouns = words[det + 1..ns].iter().take(3).take_while(|w| is_plain(w)).count();
    let head = fold(words[det + nouns]);
    let joined = det + 1 + nouns;
    let joiner = fold(words[joined]);
    let of = joiner == "of" && joined + 1 == ns
        || joiner == "of" && joined + 2 == ns && DETERMINERS.contains(&fold(words[joined + 1]).as_str());
    let end = if of {
        ne
    } else if joined == ns || JOINERS.contains(&joiner.as_str()) && ns - joined <= MAX_GAP {
        clause_end(words, ne)
    } else {
        return None;
    };
    Some(Description { start: det, end, person: reader::asked::is_person_noun(&head) })
}

/// The innermost description in `question` of one of `names`: the shortest.
fn innermost(words: &[&str], names: &[String]) -> Option<Description> {
    names
        .iter()
        .filter_map(|name| find(words, name))
        .filter_map(|span| description(words, span))
        .min_by_key(|d| d.end - d.start)
}

/// Whether the chain's hops are searched as questions: always without the graph's mention links (`graph_bridges`
/// off), else once the links have nothing left to follow and never took a hop (the corpus has no document for the
/// bridge), so a walk the links can make is not crowded by searches.
pub fn due(state: &LoopState, graph_bridges: bool) -> bool {
    !graph_bridges || !bridge::graph_pending(state) && !bridge::fetched_a_bridge(state)
}

/// Every query searched so far, lowercased, so no query is repeated.
pub fn searched(state: &LoopState) -> Vec<String> {
    state
        .turns
        .iter()
        .flat_map(|t| &t.step.actions)
        .filter_map(|a| match a {
            Action::QdrantSearch { search_intent } => search_intent.query.as_ref().map(|q| q.to_lowercase()),
            _ => None,
        })
        .collect()
}

/// The cards that speak of `name` (every content word of it, stemmed, singular or plural: "Big Eye" is in "Big
/// Eyes"), best first.
fn about<'a>(cards: &'a [Card], name: &str) -> Vec<&'a Card> {
    let wanted: Vec<String> = text::content_words(name).iter().map(|w| text::stem(w).to_string()).collect();
    let speaks_of = |card: &Card| {
        let words: Vec<String> = text::tokens(&format!("{} {}", card.hit.title, card.hit.text))
            .iter()
            .map(|w| text::stem(w).to_string())
            .collect();
        !wanted.is_empty() && wanted.iter().all(|w| words.iter().any(|x| text::same_noun(x, w)))
    };
    let mut found: Vec<&Card> = cards.iter().filter(|c| speaks_of(c)).collect();
    found.sort_by(|x, y| y.hit.score.total_cmp(&x.hit.score));
    found.truncate(WINDOW);
    found
}

/// One hop of the chain: the reader's answers to its description, best first, and the question rewritten with
/// each in the description's place.
struct Hop {
    bridges: Vec<String>,
    queries: Vec<String>,
}

/// The chain's hops, innermost first, each read from the cards about the thing its description names, and each
/// after the first going on from the best answer of the one before. Stops at the first hop the evidence gives no
/// bridge for, or once `more` says no more are needed.
fn walk(state: &LoopState, mut more: impl FnMut(&Hop) -> bool) -> Vec<Hop> {
    let a = &state.analysis;
    let links = bridge::chain_links(state).min(MAX_HOPS);
    let mut question = a.rewritten.trim().trim_end_matches(['?', '.', '!']).to_string();
    let mut names = a.entities.clone();
    let mut hops = Vec::new();
    for _ in 0..links {
        let words: Vec<&str> = question.split_whitespace().collect();
        let Some(d) = innermost(&words, &names) else { break };
        let described = words[d.start..d.end].join(" ");
        let described = described.trim_end_matches(|c: char| !c.is_alphanumeric());
        let inner = format!("{} is {described}?", if d.person { "Who" } else { "What" });
        let Some(name) = names.iter().find(|n| text::mentions(described, n)) else { break };
        let window = about(&state.cards, name);
        let bridges: Vec<String> =
            reader::candidates(&inner, &window, &reader::Chain::of(chain::links(&inner)), READINGS_PER_HOP * 2)
                .into_iter()
                .filter(|r| match r.kind {
                    AnswerKind::Person => true,
                    AnswerKind::Place | AnswerKind::Entity => !d.person,
                    _ => false,
                })
                .map(|r| r.text)
                .filter(|b| !names.iter().any(|n| text::mentions(n, b) || text::mentions(b, n)))
                .fold(Vec::new(), |mut kept: Vec<String>, b| {
                    // "Wilmington" adds nothing to "Wilmington, Delaware".
                    if !kept.iter().any(|k| text::mentions(k, &b) || text::mentions(&b, k)) {
                        kept.push(b);
                    }
                    kept
                })
                .into_iter()
                .take(READINGS_PER_HOP)
                .collect();
        let Some(best) = bridges.first().cloned() else { break };
        let rewrite = |bridge: &str| {
            // The description's closing comma stays: "in the city X was born, is located" keeps its clause.
            let comma = if words[d.end - 1].ends_with(',') { "," } else { "" };
            let (head, tail) = (words[..d.start].join(" "), words[d.end..].join(" "));
            format!("{head} {bridge}{comma} {tail}").split_whitespace().collect::<Vec<_>>().join(" ")
        };
        let queries: Vec<String> = bridges.iter().map(|b| rewrite(b)).collect();
        question = rewrite(&best);
        names.push(best);
        let hop = Hop { bridges, queries };
        let go_on = more(&hop);
        hops.push(hop);
        if !go_on {
            break;
        }
    }
    hops
}

/// The questions the chain's next hop asks that were not searched yet (`searched`, lowercase), best bridge first.
/// The question's descriptions are walked innermost first: each is asked of the cards about its named thing, and
/// the question is rewritten with the reader's answers in its place. A hop whose questions were all searched goes
/// on from its best answer to the next description. Empty for a question that chains nothing, once every hop was
/// searched, or when the evidence gives no bridge.
pub fn next_queries(state: &LoopState, searched: &[String]) -> Vec<String> {
    let fresh = |hop: &Hop| -> Vec<String> {
        hop.queries.iter().filter(|q| !searched.contains(&q.to_lowercase())).cloned().collect()
    };
    walk(state, |hop| fresh(hop).is_empty()).last().map(fresh).unwrap_or_default()
}

/// The bridges whose hops were searched, each with how many hops from the question it is (1 for the innermost
/// description's): where the chain went when the corpus has no document for its bridges, for the reader.
pub fn searched_bridges(state: &LoopState) -> Vec<reader::Bridge> {
    let searched = searched(state);
    let hops = walk(state, |hop| hop.queries.iter().any(|q| searched.contains(&q.to_lowercase())));
    hops.iter()
        .enumerate()
        .flat_map(|(i, hop)| {
            hop.bridges
                .iter()
                .zip(&hop.queries)
                .filter(|(_, q)| searched.contains(&q.to_lowercase()))
                .map(move |(b, _)| reader::Bridge { name: b.clone(), depth: i + 1 })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use sleuth_messages::{Card, Hit, JsonMap, NextStep, SearchIntent, TurnRecord};

    use super::*;
    use crate::fixtures;

    fn described(question: &str, name: &str) -> Option<String> {
        let words: Vec<&str> = question.split_whitespace().collect();
        innermost(&words, &[name.to_string()]).map(|d| words[d.start..d.end].join(" "))
    }

    #[test]
    fn descriptions_are_found_by_their_shape() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "What is the name of the waterfall in the country where the Bubye River is found?",
                "Bubye River",
                Some("the country where the Bubye River is found?"),
            ),
            (
                "What currency predated the Euro in the country Signmark is from?",
                "Signmark",
                Some("the country Signmark is from?"),
            ),
            ("Who is the spouse of Big Eye's main director?", "Big Eye", Some("Big Eye's main director?")),
            (
                "When did the state where Pocahontas Mounds is located become part of the United States?",
                "Pocahontas Mounds",
                Some("the state where Pocahontas Mounds is located"),
            ),
            (
                "When did the country where the composer of Aschenbrodel was a citizen join the EU?",
                "Aschenbrodel",
                Some("the composer of Aschenbrodel"),
            ),
            (
                "When did the country where Johann Strauss II was a citizen join the EU?",
                "Johann Strauss II",
                Some("the country where Johann Strauss II was a citizen"),
            ),
            ("What currency predated the Euro in the country Signmark is from?", "Euro", None),
            ("Who is Nami?", "Nami", None),
        ];
        for (question, name, expected) in cases {
            assert_eq!(described(question, name).as_deref(), *expected, "{question}");
        }
    }

    #[test]
    fn the_next_hop_searches_the_question_with_the_bridge_in_its_description() {
        let mut state = fixtures::state_for("What currency predated the Euro in the country Signmark is from?");
        let hit = Hit {
            id: "s".into(),
            doc_id: "s".into(),
            title: "Signmark".into(),
            text: "Signmark is a rapper from Finland. He competed in the national qualifications of Finland.".into(),
            score: 1.0,
            metadata: JsonMap::new(),
        };
        state.cards = vec![Card::new(1, 1, hit)];
        let queries = next_queries(&state, &[]);
        assert_eq!(
            queries.first().map(String::as_str),
            Some("What currency predated the Euro in Finland"),
            "{queries:?}"
        );
        assert!(searched_bridges(&state).is_empty(), "no hop was searched yet");
        // Once searched, the hop is done: this question chains one description only.
        let searched: Vec<String> = queries.iter().map(|q| q.to_lowercase()).collect();
        assert!(next_queries(&state, &searched).is_empty());
        // The searched hop's bridge is where the chain went, one hop from the question.
        let search = |q: &String| Action::QdrantSearch { search_intent: SearchIntent::documents("hop", q.as_str()) };
        let step = NextStep { rationale: "hop".into(), actions: queries.iter().map(search).collect() };
        state.turns.push(TurnRecord { turn: 2, step, outcomes: Vec::new(), report: None });
        assert_eq!(searched_bridges(&state).first(), Some(&reader::Bridge { name: "Finland".into(), depth: 1 }));
    }
}
