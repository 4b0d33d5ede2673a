//! The chain walked on the cited evidence, one card per link: from the card the question names, to the card its
//! text names next to the link's words ("directed by Luis Mandoki" for "the director of film X"), and so on to the
//! chain's end, whose own sentences are the only place the asked relation is read from. A walk that reaches the
//! end, and finds there a span of the asked kind beside the asked relation's words, shows its answer; one that
//! stops short says which link is missing.

use sleuth_messages::{AnswerKind, Card};

use super::{
    Reading,
    asked::{self, Asked},
    chain::{Chain, depths, link_distance},
    extract::{cue_positions, extract},
    kin, lifespan, relatives, spans,
    words::{card_named, fold, subject},
};
use crate::text;

/// Most words between a link's words and the name it leads to: "music was composed by Isaac Schwartz" is three.
const LINK_GAP: usize = 6;

/// The cards a walk went through and what it read at the end.
#[derive(Debug, Clone)]
pub struct Walk<'a> {
    /// The card the question names first, then one card per link it could follow.
    pub path: Vec<&'a Card>,
    /// How many of the question's links it followed: the chain's end is reached when this is the question's link
    /// count.
    pub followed: usize,
    /// How many links the walk reads in the question: the descriptions that lead from one person to the next.
    pub links: usize,
    /// The asked relation read from the chain's end, and how many words from the relation's own words it sits.
    pub end: Option<(Reading<'a>, usize)>,
}

impl Walk<'_> {
    /// Whether the walk reached the chain's end and read there a span of the asked kind right after the asked
    /// relation's words (an end is read only once the walk has followed every link).
    pub fn shows(&self) -> bool {
        self.end.is_some()
    }
}

/// Nouns of events and their verbs, which a card uses where a question uses the noun: "the place of birth" is
/// where a card says "born", "the date of death" when it says "died". English, no data set's phrasings.
const EVENT_VERBS: &[(&str, &[&str])] = &[
    ("birth", &["born"]),
    ("birthday", &["born"]),
    ("death", &["died", "die", "dies", "killed", "assassinated", "murdered", "executed"]),
    ("burial", &["buried", "interred", "entombed"]),
    ("marriage", &["married"]),
    ("education", &["educated", "studied", "graduated"]),
    ("residence", &["lived", "lives", "resided"]),
];

/// The question's chain as a walk reads it: the links that lead from one person to another ("the director of",
/// "X's father"), outermost first, each with the words of its description; the words of the relation asked at the
/// end; and whether the last link is itself what is asked ("Who is the father of X?" is answered by the card the
/// link leads to).
struct Path {
    hops: Vec<Vec<String>>,
    asks: Vec<String>,
    to_card: bool,
}

/// A relative two links away, said in one word, as its links outermost first: a paternal grandfather is a father's
/// father, a mother-in-law a spouse's mother. English kinship, no data set's phrasings.
fn composite_relative(words: &[String]) -> Option<Vec<&'static str>> {
    let has = |w: &str| words.iter().any(|x| x == w);
    let line = if has("paternal") {
        Some("father")
    } else if has("maternal") {
        Some("mother")
    } else {
        None
    };
    if let Some(i) = words.windows(3).position(|w| w[1] == "in" && w[2] == "law") {
        return match words[i].as_str() {
            "mother" => Some(vec!["mother", "spouse"]),
            "father" => Some(vec!["father", "spouse"]),
            "son" => Some(vec!["husband", "child"]),
            "daughter" => Some(vec!["wife", "child"]),
            "child" => Some(vec!["spouse", "child"]),
            _ => None,
        };
    }
    match (has("grandfather"), has("grandmother"), line) {
        (true, _, Some(line)) => Some(vec!["father", line]),
        (_, true, Some(line)) => Some(vec!["mother", line]),
        _ => None,
    }
}

/// Nouns that describe an attribute of the chain's end rather than lead to another thing: "the *place* of death
/// of X", "the *date* of birth of X".
const ATTRIBUTES: &[&str] = &["place", "date", "time", "year", "day", "cause", "age", "birth", "death", "burial"];

/// Words of a composite relative's description, which its expansion replaces.
const COMPOSITE_WORDS: &[&str] = &["paternal", "maternal", "grandfather", "grandmother", "law"];

/// The links of `a` that name a person: a description headed by a person noun. When the question asks for a person
/// ("Who is the father of the director of X?"), its first description is what is asked: the card it leads to.
fn path(a: &Asked, question: &str) -> Option<Path> {
    let words = text::tokens(question);
    let composite = composite_relative(&words);
    let part_of_composite =
        |l: &Vec<String>| l.iter().any(|w| COMPOSITE_WORDS.contains(&w.as_str()) || w.contains("-in-"));
    let mut hops: Vec<Vec<String>> = a
        .links
        .iter()
        .filter(|l| !(composite.is_some() && part_of_composite(l)))
        .filter(|l| l.first().is_some_and(|h| asked::is_person_noun(h)))
        .cloned()
        .collect();
    let who = words.first().is_some_and(|w| w == "who" || w == "whom");
    let to_card = match composite {
        // Only "Who is X's paternal grandfather?": the relative is what is asked.
        Some(links) if who => {
            hops.splice(0..0, links.iter().map(|w| vec![w.to_string()]));
            true
        }
        Some(_) => return None,
        None => who && a.links.first().is_some_and(|l| hops.first() == Some(l)),
    };
    // A relative the kinship words do not say how to reach ("uncle", "grandson") is no link a card names.
    let unreachable = |h: &Vec<String>| h.first().is_some_and(|w| kin::is_relative(w) && !kin::is_near_relative(w));
    if hops.iter().any(unreachable) {
        return None;
    }
    let on_hop = |w: &String| hops.iter().flatten().any(|h| h == w);
    let mut asks: Vec<String> = a.cues.iter().filter(|c| !on_hop(c)).cloned().collect();
    // An event asked by its noun or by one of its verbs is found by any of them: "Where did X die?" is answered
    // by "was assassinated in".
    for (noun, verbs) in EVENT_VERBS {
        if asks.iter().any(|c| c == noun || verbs.contains(&c.as_str())) {
            for verb in verbs.iter().filter(|v| !asks.iter().any(|c| c == *v)).collect::<Vec<_>>() {
                asks.push(verb.to_string());
            }
        }
    }
    Some(Path { hops, asks, to_card })
}

/// Walks `question`'s chain over `window`. `None` when the question asks for no typed span or no card is one the
/// question names.
pub fn walk<'a>(a: &Asked, question: &str, window: &[&'a Card], chain: &Chain) -> Option<Walk<'a>> {
    if !matches!(a.kind, AnswerKind::Person | AnswerKind::Place | AnswerKind::Date | AnswerKind::Number) {
        return None;
    }
    // A choice is decided by comparing; a nationality is an adjective or a country, not a typed span.
    // Where someone works or studies is an institution, whose name the spans cut at its commas ("University of
    // California, Los Angeles").
    if !a.options.is_empty() || question.contains(" or ") || a.institution || a.cues.iter().any(|c| c == "nationality")
    {
        return None;
    }
    let Path { hops, asks, to_card } = path(a, question)?;
    if asks.is_empty() && !to_card {
        return None;
    }
    let links = hops.len();
    // A chain through things other than people ("the state where X is located", "the city X was born in") has
    // links the walk cannot read: the question's chain counts more links than its people and the asked
    // attribute's own description ("the place of death of …") make.
    let attributes = a.links.iter().filter(|l| l.first().is_some_and(|h| ATTRIBUTES.contains(&h.as_str()))).count();
    if chain.links > links + attributes {
        return None;
    }
    let depth = depths(question, window, &chain.bridges);
    let anchors: Vec<&Card> = (0..window.len()).filter(|i| depth[*i] == Some(0)).map(|i| window[i]).collect();
    // Of the cards the question names, the best-ranked one whose chain goes furthest.
    let mut best: Option<Vec<&Card>> = None;
    for anchor in anchors {
        let mut path = vec![anchor];
        while path.len() <= links {
            let hop = &hops[links - path.len()];
            let Some(head) = hop.first() else { break };
            let cue = std::slice::from_ref(head);
            let other_end = kin::other_end(cue);
            let sex = kin::asked_sex(cue);
            let last = path[path.len() - 1];
            let said_by = document_text(window, last);
            // The link that is itself the answer is taken only where the card says it, of the named sex.
            let answer = to_card && path.len() == links;
            let open: Vec<&Card> = window
                .iter()
                .copied()
                .filter(|c| !path.iter().any(|p| p.hit.doc_id == c.hit.doc_id))
                .filter(|c| match (sex, kin::sex_of(c)) {
                    (Some(asked), Some(of)) => asked == of,
                    (Some(_), None) => !answer,
                    (None, _) => true,
                })
                .collect();
            // The name nearest the link's own words; else, for who made a thing, the name right after "by" ("a
            // song by Meek Mill"); else the one person the card names.
            let nearest = |cues: &[String], before: &[String]| {
                open.iter()
                    .filter_map(|c| Some((link_distance(&said_by, subject(&c.hit.title), cues, before)?, *c)))
                    .filter(|(gap, _)| *gap <= LINK_GAP)
                    .min_by_key(|(gap, _)| *gap)
                    .map(|(_, c)| c)
            };
            // A parent or a spouse named in the card's family clause ("the daughter of the Count Aznar Sánchez of
            // Larraun and Onneca Fortúnez" names the mother second), when the window has that person's card.
            let relative = || {
                let sex = |name: &str| card_named(window, name).and_then(kin::sex_of);
                let name = relatives::named(head, subject(&last.hit.title), &said_by, sex)?;
                open.iter().copied().find(|c| names_card(&name, c))
            };
            let maker = other_end.is_empty() && !answer;
            let next = relative()
                .or_else(|| nearest(cue, &other_end))
                .or_else(|| maker.then(|| nearest(&[], &by())).flatten())
                .or_else(|| if answer { None } else { only_person(&open, &said_by) });
            match next {
                Some(card) => path.push(card),
                None => break,
            }
        }
        if best.as_ref().is_none_or(|b| path.len() > b.len()) {
            best = Some(path);
        }
    }
    let path = best?;
    let followed = path.len() - 1;
    let end_card = path[path.len() - 1];
    let on_path = |text: &str| path.iter().any(|c| fold(subject(&c.hit.title)) == fold(text));
    if to_card {
        // The last link's card is the answer, cited with the card that names it.
        let end = (followed == links && links > 0).then(|| {
            let reading = Reading {
                text: subject(&end_card.hit.title).to_string(),
                kind: AnswerKind::Person,
                cards: vec![path[path.len() - 2], end_card],
                score: 1.0,
            };
            (reading, 0)
        });
        // A relative the evidence has no card of is read from the text of the card before it: "the son of Odo III,
        // Duke of Burgundy and Alice de Vergy".
        let named = || {
            let link = hops.first()?.first()?;
            let text = document_text(window, end_card);
            let sex = |name: &str| card_named(window, name).and_then(kin::sex_of);
            let name = relatives::named(link, subject(&end_card.hit.title), &text, sex).filter(|n| !on_path(n))?;
            let card = same_document(window, end_card).into_iter().find(|c| text::mentions(&c.hit.text, &name))?;
            Some((Reading { text: name, kind: AnswerKind::Person, cards: vec![card], score: 1.0 }, 0))
        };
        let end = end.or_else(|| (followed + 1 == links).then(named).flatten());
        return Some(Walk { path, followed, links, end });
    }
    // A person is read only as a card a link leads to: a name in a sentence is as often a place or a prize.
    if a.kind == AnswerKind::Person {
        return Some(Walk { path, followed, links, end: None });
    }
    // A birth or a death asked of the end is read first from the life its text opens with: "(c. 1580 in Lier – 17
    // May 1662 in The Hague)".
    if followed == links
        && let Some(reading) = life_end(a.kind, &asks, window, end_card).filter(|r| !on_path(&r.text))
    {
        return Some(Walk { path, followed, links, end: Some((reading, 0)) });
    }
    // The end card is read for the asked relation alone, as a question about the end card itself.
    let at_end = Asked { cues: asks.clone(), links: Vec::new(), ..a.clone() };
    let end = (followed == links)
        .then(|| extract(&at_end, question, &same_document(window, end_card), &Chain::of(0), 10))
        .into_iter()
        .flatten()
        .filter(|r| !on_path(&r.text) && !names_the_path(&r.text, &path))
        .find_map(|r| {
            let text = &r.cards.first()?.hit.text;
            let gap = cue_gap(a.kind, text, &r.text, &asks)?;
            (gap <= end_gap(a.kind) || a.kind == AnswerKind::Place && first_place_after(text, &r.text, &asks))
                .then_some((r, gap))
        });
    Some(Walk { path, followed, links, end })
}

/// The birth's or the death's date or place, as `kind` and the asked relation's words `asks` want, from the life
/// that `card`'s document opens with.
fn life_end<'a>(kind: AnswerKind, asks: &[String], window: &[&'a Card], card: &'a Card) -> Option<Reading<'a>> {
    let asks_any = |words: &[&str]| asks.iter().any(|c| words.contains(&c.as_str()));
    let (birth, death) = (asks_any(&["born", "birth"]), asks_any(&["died", "die", "dies", "death"]));
    if birth == death || !matches!(kind, AnswerKind::Place | AnswerKind::Date) {
        return None;
    }
    same_document(window, card).into_iter().find_map(|c| {
        let life = lifespan::life(&c.hit.text, subject(&c.hit.title))?;
        let end = if birth { life.birth } else { life.death };
        let text = if kind == AnswerKind::Place { end.place } else { end.date }?;
        Some(Reading { text, kind, cards: vec![c], score: 1.0 })
    })
}

/// Whether `name`, as a text writes it, is `card`'s subject: the same words, or the subject after a title or an
/// office ("Caliph Abd al-Malik", "chief minister M. Karunanidhi"), or before a title after a comma ("Odo III, Duke
/// of Burgundy").
fn names_card(name: &str, card: &Card) -> bool {
    let title = text::tokens(subject(&card.hit.title));
    let (whole, head) = (text::tokens(name), text::tokens(name.split(", ").next().unwrap_or(name)));
    !title.is_empty() && (whole == title || head == title || title.len() >= 2 && head.ends_with(&title))
}

/// Whether a span of a person or a place shares a name's word with a card on the path: another form of the end's
/// own name ("Gordon Chan Kar-Seung" for "Gordon Chan"), or a title it holds ("Count of Cleves").
fn names_the_path(span: &str, path: &[&Card]) -> bool {
    let words = text::content_words(span);
    path.iter().any(|c| text::content_words(subject(&c.hit.title)).iter().any(|w| words.contains(w)))
}

/// Prepositions a place is written after: "born *in* Montreal", "died *at* Delft".
const LOCATIVES: &[&str] = &["in", "at", "near", "from", "on"];

/// Whether the mention at `at` is written after a locative preposition, at most two words before it.
fn located(sentence: &str, at: usize) -> bool {
    spans::words_before(sentence, at, 2).iter().any(|w| LOCATIVES.contains(&w.as_str()))
}

/// The window's cards of `card`'s document, in the window's order: a long document is indexed in passages, and
/// the one that leads the walk to it need not be the one that says what is asked.
fn same_document<'a>(window: &[&'a Card], card: &'a Card) -> Vec<&'a Card> {
    window.iter().copied().filter(|c| c.hit.doc_id == card.hit.doc_id).collect()
}

/// The text of `card`'s document as far as the window holds it, its passages apart.
fn document_text(window: &[&Card], card: &Card) -> String {
    same_document(window, card).iter().map(|c| c.hit.text.as_str()).collect::<Vec<_>>().join("\n\n")
}

/// The one card of a person among the `open` ones (of the asked sex, when the link gives one) that the path's
/// last document names, when it names exactly one: "a song of Ukrainian singer Ruslana" leads to the singer
/// without saying "performer". A card is a person's when its pronouns say so.
fn only_person<'a>(open: &[&'a Card], said_by: &str) -> Option<&'a Card> {
    let mut people =
        open.iter().copied().filter(|c| text::mentions(said_by, subject(&c.hit.title)) && kin::sex_of(c).is_some());
    let one = people.next()?;
    people.next().is_none().then_some(one)
}

fn by() -> Vec<String> {
    vec!["by".to_string()]
}

/// Whether `span` is the first place a sentence of `text` writes after the asked event's words, with no other
/// place between and no clause boundary: "He died on March 28, 2015, at the age of 101 at his home in Newport
/// Beach", "assassinated by Balthasar Gérard (also written as Gerardts) in Delft". A name not written after a
/// locative ("by Balthasar Gérard") is a person, not a place, and does not count.
fn first_place_after(text: &str, span: &str, cues: &[String]) -> bool {
    text::sentences(text).into_iter().any(|sentence| {
        let Some((cue, _)) = cue_positions(sentence, cues).into_iter().next() else { return false };
        let after = sentence[cue..].find(';').map_or(sentence.len(), |i| cue + i);
        // A day ("on March 28") is a name's shape too, but no place.
        let dated = |name: &str| {
            text::tokens(name).first().is_some_and(|w| spans::MONTHS.contains(&w.as_str()))
                || !spans::dates(name).is_empty()
        };
        let names = spans::names(sentence);
        let Some(first) = names
            .iter()
            .filter(|n| n.at > cue && n.at < after && located(sentence, n.at) && !dated(&n.text))
            .min_by_key(|n| n.at)
        else {
            return false;
        };
        // The place with its region, when the sentence writes one after a comma: "Nantes, France".
        let end = first.at + first.text.len();
        let region = names.iter().find(|n| sentence.get(end..n.at) == Some(", "));
        span == region.map_or(first.text.clone(), |r| format!("{}, {}", first.text, r.text))
    })
}

/// Most words between the span read at the chain's end and the asked relation's own words, by kind:
/// "(born August 17, 1954 in Mexico City)" is five. A date is taken only right after them ("(2 February 1886 –
/// 10 August 1960)"): one a few words on is most often another event's.
fn end_gap(kind: AnswerKind) -> usize {
    match kind {
        AnswerKind::Place => 4,
        _ => 1,
    }
}

/// How many words a mention of `span` in a sentence of `text` sits after the nearest of `cues` before it: a
/// place or a date follows its event ("died in Delft"), and a cue after the span opens the next clause ("born in
/// Los Angeles; died … in Shaftsbury"). A number may stand on either side ("a population of 2,000", "2,000
/// inhabitants"). A place counts only where it is written after a locative preposition.
fn cue_gap(kind: AnswerKind, text: &str, span: &str, cues: &[String]) -> Option<usize> {
    let after_only = matches!(kind, AnswerKind::Place | AnswerKind::Date);
    text::sentences(text)
        .into_iter()
        .flat_map(|sentence| {
            let cues = cue_positions(sentence, cues);
            sentence
                .match_indices(span)
                .filter(|(at, _)| kind != AnswerKind::Place || located(sentence, *at))
                .filter_map(|(at, _)| {
                    cues.iter()
                        .filter(|(cue, _)| !after_only || *cue < at)
                        .map(|(cue, _)| {
                            let (lo, hi) = if *cue < at { (*cue, at) } else { (at + span.len(), *cue) };
                            let between = text::tokens(sentence.get(lo..hi).unwrap_or("")).len();
                            between.saturating_sub(usize::from(*cue < at))
                        })
                        .min()
                })
                .collect::<Vec<_>>()
        })
        .min()
}
