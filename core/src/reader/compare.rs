//! Comparisons and yes/no questions, decided from the compared values: the date, life span or number each
//! option's card gives (following the option's card to the card of the person a "who" clause describes), or
//! whether two things' cards share what a "same" question asks about.

use sleuth_messages::{AnswerKind, Card};

use super::{
    Reading,
    asked::{Asked, Order},
    chain::link_distance,
    fit::names_a_people,
    lifespan,
    spans::{self, DateValue, Shape},
    words::{card_named, fold, opening, same_word, subject},
};
use crate::text;

/// The card about `option`: its title is the option, or the nearest title that names it or that it names.
fn option_card<'a>(window: &[&'a Card], option: &str) -> Option<&'a Card> {
    card_named(window, option).or_else(|| {
        window.iter().copied().find(|c| {
            !c.hit.title.is_empty() && (text::mentions(&c.hit.title, option) || text::mentions(option, &c.hit.title))
        })
    })
}

/// The question's cue words that are not the options' own words.
fn relation_cues(a: &Asked) -> Vec<String> {
    let option_words: Vec<String> = a.options.iter().flat_map(|o| text::tokens(o)).collect();
    a.cues.iter().filter(|c| !option_words.contains(c)).cloned().collect()
}

fn mentions_cue(sentence: &str, cues: &[String]) -> bool {
    text::tokens(sentence).iter().any(|w| cues.iter().any(|c| same_word(w, c)))
}

/// The date a card gives for the question's relation: a death date when the question asks about dying, else
/// the first date of the first sentence that uses the question's words, else the card's first date.
fn date_in(card: &Card, cues: &[String]) -> Option<DateValue> {
    let sentences = text::sentences(&card.hit.text);
    let value = |s: &spans::Span| match s.shape {
        Shape::Date(d) => Some(d),
        _ => None,
    };
    let death = cues.iter().any(|c| ["die", "died", "death", "dead"].contains(&c.as_str()));
    let birth = cues.iter().any(|c| ["born", "birth", "older", "younger"].contains(&c.as_str()));
    // The life the card opens with: "(10 May 1890 – 17 August 1987)".
    if (birth || death)
        && let Some(life) = lifespan::life(&card.hit.text, subject(&card.hit.title))
        && let Some(date) = if death { life.death.date } else { life.birth.date }
        && let Some(d) = spans::dates(&date).first().and_then(value)
    {
        return Some(d);
    }
    if death {
        for s in &sentences {
            let found = spans::dates(s);
            if found.len() >= 2 {
                return value(&found[1]);
            }
            if text::tokens(s).iter().any(|w| w.starts_with("die") || w == "death")
                && let Some(d) = found.first()
            {
                return value(d);
            }
        }
    }
    let verbs: Vec<String> = cues.iter().filter(|c| !is_noun_cue(c)).cloned().collect();
    sentences
        .iter()
        .filter(|s| mentions_cue(s, &verbs))
        .find_map(|s| spans::dates(s).first().and_then(value))
        .or_else(|| sentences.iter().find_map(|s| spans::dates(s).first().and_then(value)))
}

/// Cue words that name the part a person plays in a thing: the value a question compares is that person's.
const ROLES: &[&str] = &["director", "composer", "performer", "author", "singer", "writer", "producer", "creator"];

/// Cue words that name the kind of thing compared ("film", "director") rather than the relation ("born").
fn is_noun_cue(cue: &str) -> bool {
    const THINGS: &[&str] =
        &["film", "movie", "book", "song", "album", "band", "person", "novel", "series", "show", "game", "company"];
    THINGS.iter().chain(ROLES).any(|n| same_word(cue, n))
}

fn is_role(cue: &str) -> bool {
    ROLES.iter().any(|n| same_word(cue, n))
}

/// The life span a card gives: the years between its first two dates.
fn lifespan(card: &Card) -> Option<f64> {
    let found: Vec<DateValue> = text::sentences(&card.hit.text)
        .iter()
        .flat_map(|s| spans::dates(s))
        .filter_map(|s| match s.shape {
            Shape::Date(d) => Some(d),
            _ => None,
        })
        .take(2)
        .collect();
    let [born, died] = found[..] else { return None };
    let days = |d: DateValue| f64::from(d.0) * 365.25 + f64::from(d.1.max(1)) * 30.4 + f64::from(d.2.max(1));
    (days(died) > days(born)).then(|| days(died) - days(born))
}

/// Most words between a role's word and the name it leads to: "directed by Clarence Brown" is one.
const ROLE_GAP: usize = 4;

/// The card of the person `card` names nearest a role the question asks about ("directed by Clarence Brown"),
/// when the window has it.
fn role_bridge<'a>(card: &Card, window: &[&'a Card], cues: &[String]) -> Option<&'a Card> {
    let roles: Vec<String> = cues.iter().filter(|c| is_role(c)).cloned().collect();
    if roles.is_empty() {
        return None;
    }
    window
        .iter()
        .copied()
        .filter(|c| c.hit.doc_id != card.hit.doc_id && fold(&c.hit.title) != fold(&card.hit.title))
        .filter_map(|c| Some((link_distance(&card.hit.text, subject(&c.hit.title), &roles, &[])?, c)))
        .filter(|(gap, _)| *gap <= ROLE_GAP)
        .min_by_key(|(gap, _)| *gap)
        .map(|(_, c)| c)
}

/// The card a "who" clause points at from an option's card: the person (or thing) named in the option's card
/// whose own card is in the window (its document's opening), preferring one named next to the question's noun
/// ("directed by …").
fn bridged<'a>(card: &Card, window: &[&'a Card], cues: &[String]) -> Option<&'a Card> {
    // The one named nearest the role's own word ("directed by Clarence Brown"), when the question names a role.
    if let Some(c) = role_bridge(card, window, cues) {
        return Some(opening(window, c));
    }
    let mut best: Option<(usize, &'a Card)> = None;
    for sentence in text::sentences(&card.hit.text) {
        let cue_here = mentions_cue(sentence, cues);
        for name in text::name_spans(sentence) {
            if fold(&name) == fold(&card.hit.title) {
                continue;
            }
            if let Some(target) = card_named(window, &name) {
                let rank = if cue_here { 0 } else { 1 };
                if best.is_none_or(|(r, _)| rank < r) {
                    best = Some((rank, target));
                }
            }
        }
    }
    best.map(|(_, c)| opening(window, c))
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Value {
    Date(DateValue),
    Span(f64),
}

/// Which of two named things the question picks.
pub fn choose<'a>(a: &Asked, window: &[&'a Card]) -> Option<Reading<'a>> {
    // "more diverse", "taller", "larger": an amount or a quality, which no date or life span decides.
    if a.order.is_some() && !a.timed() && !a.lifespan {
        return None;
    }
    let cues = relation_cues(a);
    // "Who is older", "whose director is younger": an age, which the birth dates decide. The comparative is not a
    // cue word (`asked`), so the birth is asked for here.
    let mut date_cues = cues.clone();
    if a.aged() {
        date_cues.push("born".into());
    }
    let relative = a.words.iter().any(|w| w == "who" || w == "whose");
    // "Which film has the director born later": the value is the director's, not the film's; unless the options
    // are directors themselves ("Which director was born first").
    let role = cues.iter().any(|c| is_role(c) && a.noun.as_deref().is_none_or(|n| !same_word(n, c)));
    let bridging = relative && a.words.first().is_none_or(|w| w != "who") || role;
    let cards: Vec<Option<&'a Card>> = a.options.iter().map(|o| option_card(window, o)).collect();
    // "the film whose director was born first": the value is the director's, found through the film's card. When
    // the bridge is not walked for every option, each option's own value stands in for all (a film's year for its
    // director's dates): never one option's director against the other's film.
    let bridges: Vec<Option<&'a Card>> =
        cards.iter().map(|c| c.filter(|_| bridging).and_then(|c| bridged(c, window, &cues))).collect();
    let across = bridging && bridges.iter().all(Option::is_some);
    let mut values: Vec<(String, Vec<&'a Card>, Option<Value>)> = Vec::new();
    for ((option, card), bridge) in a.options.iter().zip(&cards).zip(&bridges) {
        let Some(card) = *card else {
            values.push((option.clone(), Vec::new(), None));
            continue;
        };
        let subject = if across { bridge.unwrap_or(card) } else { card };
        let cards = if across { vec![card, subject] } else { vec![card] };
        let value =
            if a.lifespan { lifespan(subject).map(Value::Span) } else { date_in(subject, &date_cues).map(Value::Date) };
        values.push((option.clone(), cards, value));
    }
    let order = if a.lifespan { Order::Most } else { a.order.unwrap_or(Order::Least) };
    let known: Vec<&(String, Vec<&'a Card>, Option<Value>)> = values.iter().filter(|v| v.2.is_some()).collect();
    let pick = match known.as_slice() {
        [x, y] if x.2 != y.2 => {
            let first_wins = (x.2 < y.2) == (order == Order::Least);
            if first_wins { *x } else { *y }
        }
        // Nothing to compare: the option whose card says most of what the question asks, when one does.
        _ => {
            let said = |v: &(String, Vec<&Card>, Option<Value>)| {
                v.1.first().map_or(0, |c| {
                    let words = text::tokens(&c.hit.text);
                    cues.iter().filter(|q| words.iter().any(|w| same_word(w, q))).count()
                })
            };
            match values.as_slice() {
                [x, y] if !x.1.is_empty() && !y.1.is_empty() && said(x) != said(y) => {
                    if said(x) > said(y) {
                        x
                    } else {
                        y
                    }
                }
                _ => return None,
            }
        }
    };
    let mut cards: Vec<&'a Card> = pick.1.clone();
    for (_, other, _) in &values {
        for c in other {
            if !cards.iter().any(|k| k.n == c.n) {
                cards.push(c);
            }
        }
    }
    Some(Reading { text: pick.0.clone(), kind: AnswerKind::Choice, cards, score: 1.0 })
}

/// A comparison's options as answers: the one [`choose`] picks first, then the other, each cited by its card.
pub fn options<'a>(a: &Asked, window: &[&'a Card]) -> Vec<Reading<'a>> {
    let picked = choose(a, window);
    let mut found: Vec<Reading<'a>> = picked.into_iter().collect();
    for option in &a.options {
        if found.iter().any(|r| r.text == *option) {
            continue;
        }
        if let Some(card) = option_card(window, option) {
            found.push(Reading { text: option.clone(), kind: AnswerKind::Choice, cards: vec![card], score: 0.0 });
        }
    }
    found
}

/// The names in a card's first two sentences, other than its own title's: where it is, what it is.
fn descriptors(card: &Card) -> Vec<String> {
    let title = text::tokens(&card.hit.title);
    text::sentences(&card.hit.text)
        .iter()
        .take(2)
        .flat_map(|s| text::name_spans(s))
        .flat_map(|n| text::tokens(&n))
        .filter(|t| !title.contains(t) && !text::is_stopword(t) && t.chars().all(char::is_alphabetic))
        .collect()
}

/// Adjectives of a people's shape that name a faith, a party or an age instead ("a Republican politician", "a
/// Roman Catholic prelate", "a Victorian novelist"). English, no data set's words.
const NOT_PEOPLES: &[&str] = &[
    "republican",
    "democratic",
    "christian",
    "catholic",
    "protestant",
    "anglican",
    "lutheran",
    "presbyterian",
    "episcopalian",
    "methodist",
    "islamic",
    "libertarian",
    "socialist",
    "victorian",
    "edwardian",
    "elizabethan",
    "georgian",
    "roman",
    "olympic",
    "olympian",
];

/// The peoples' adjectives a card's first sentence describes its subject with, after its "is" or "was" ("an
/// American film director", "a Greek-American photographer"), lower case: each before a common noun or another
/// people's adjective, so that a place's name of the same shape ("Isfahan Province") is none. One joined to "born"
/// says a birthplace, not a nationality ("a Russian-born French director" is French).
fn peoples(card: &Card) -> Vec<String> {
    let Some(first) = text::sentences(&card.hit.text).into_iter().next() else { return Vec::new() };
    let title = text::tokens(&card.hit.title);
    let bare = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    let words: Vec<String> =
        first.split(|c: char| c.is_whitespace() || c == '-').map(bare).filter(|w| !w.is_empty()).collect();
    let Some(copula) = words.iter().position(|w| matches!(w.as_str(), "is" | "was" | "are" | "were")) else {
        return Vec::new();
    };
    let people = |w: &str| names_a_people(w) && !NOT_PEOPLES.contains(&w.to_lowercase().as_str());
    let mut out: Vec<String> = Vec::new();
    for (i, word) in words.iter().enumerate().skip(copula + 1) {
        let lower = word.to_lowercase();
        let next = words.get(i + 1).map_or("", String::as_str);
        let before_noun = next.starts_with(char::is_lowercase) && next != "born" || people(next);
        if people(word) && before_noun && !title.contains(&lower) {
            out.push(lower);
        }
    }
    out
}

/// Yes or no: whether two things share what the question asks about, or whether each is what it says.
pub fn yes_no<'a>(a: &Asked, window: &[&'a Card]) -> Option<Reading<'a>> {
    let cards: Vec<&'a Card> =
        a.options.iter().filter_map(|o| option_card(window, o)).map(|c| opening(window, c)).collect();
    if cards.is_empty() || (a.options.len() >= 2 && cards.len() < 2) || cards.len() == 2 && cards[0].n == cards[1].n {
        return None;
    }
    let yes = if let Some(same) = a.same.as_deref()
        && cards.len() >= 2
    {
        // "Are the directors of films X and Y from the same country?": each film's director, named nearest the
        // role's word, is compared; a film's own country is no director's nationality, so a director the window
        // has no card of leaves the question unanswered.
        let (x, y) = if a.links.iter().any(|l| l.first().is_some_and(|h| is_role(h))) {
            let by_role = |c: &Card| role_bridge(c, window, &a.cues);
            (by_role(cards[0])?, by_role(cards[1])?)
        } else {
            (cards[0], cards[1])
        };
        // Two openings that share no name have not been shown to differ: one may name a country and the other a
        // city in it, a nationality and a birthplace, a people and a religion (measured on 2Wiki, a "no" read from
        // differing peoples or places was right 2 times in 6). A nationality differs where each opening says what
        // its subject is with a people's adjective, and the two share none ("an American film director", "a
        // British director").
        let (named_x, named_y) = (descriptors(x), descriptors(y));
        if named_x.iter().any(|w| named_y.contains(w)) {
            true
        } else {
            let (p, q) = (peoples(x), peoples(y));
            let nationality = matches!(same, "country" | "nationality");
            if !nationality || p.is_empty() || q.is_empty() || p.iter().any(|w| q.contains(w)) {
                return None;
            }
            false
        }
    } else {
        let cues: Vec<String> = relation_cues(a).into_iter().filter(|c| c != "both" && c != "located").collect();
        if cues.is_empty() {
            return None;
        }
        // Each must be described so in its card's opening, where a card says what its subject is.
        cards.iter().all(|c| {
            let words: Vec<String> =
                text::sentences(&c.hit.text).iter().take(2).flat_map(|s| text::tokens(s)).collect();
            cues.iter().all(|q| words.iter().any(|w| same_word(w, q)))
        })
    };
    Some(Reading { text: if yes { "yes" } else { "no" }.into(), kind: AnswerKind::YesNo, cards, score: 1.0 })
}
