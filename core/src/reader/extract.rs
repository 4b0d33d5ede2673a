//! Extracting the short answer: the spans of the asked shape in the evidence's sentences, each scored by the
//! question's own words near it (at most two count, so the sentences that only describe the chain do not win), by
//! how it fits the asked kind, by the card's place on the chain, and by how often the evidence gives it.

use sleuth_messages::{AnswerKind, Card};

use super::{
    Reading,
    asked::{self, Asked},
    chain::{Chain, depths, link_distance},
    fit::{fit, is_peoples_adjective, names_a_people, past_office, past_title},
    kin,
    spans::{self, Shape, Span},
    words::{fold, same_word, subject},
};
use crate::text;

/// A life's abbreviations, "(b. 1950)" and "(d. 20 March 851)": the word they stand for when `word` (with its
/// trailing separator) is one of them and opens a parenthesis or follows a comma or semicolon inside one.
fn life_abbreviation(before: &str, word: &str) -> Option<&'static str> {
    let opens = matches!(before.trim_end().chars().last(), Some('(' | ';' | ','));
    match word {
        "d." if opens => Some("died"),
        "b." if opens => Some("born"),
        _ => None,
    }
}

/// A life's span "(795 – 29 September 855)": the dash between two dates inside a parenthesis stands for "died".
fn life_dash(before: &str, word: &str) -> Option<&'static str> {
    let dash = matches!(word.trim(), "–" | "—" | "-");
    let open = before.matches('(').count() > before.matches(')').count();
    let after_number = before.trim_end().chars().last().is_some_and(|c| c.is_ascii_digit());
    (dash && open && after_number).then_some("died")
}

/// Byte offsets of the question's cue words in a sentence.
pub(super) fn cue_positions(sentence: &str, cues: &[String]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for word in sentence.split_inclusive(|c: char| !c.is_alphanumeric()) {
        let at = offset;
        offset += word.len();
        let w = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        let w = if w.is_empty() { life_dash(&sentence[..at], word).map_or(w, str::to_string) } else { w };
        if w.is_empty() {
            continue;
        }
        let w = life_abbreviation(&sentence[..at], word).map_or(w, str::to_string);
        if let Some(i) = cues.iter().position(|c| same_word(&w, c)) {
            out.push((at, i));
        }
    }
    out
}

/// Most words between a card's opening "is" and the noun it says its subject is: "is *a* waterfall", "was an
/// American *film*".
const DEFINITION_GAP: usize = 4;

/// Whether a card's first sentence says its subject is a thing of the asked noun (the last of `heads`):
/// "Victoria Falls (…) is a waterfall in southern Africa" for "the waterfall in …".
fn defines_as(card: &Card, heads: &[String]) -> bool {
    let Some(noun) = heads.last() else { return false };
    let Some(first) = text::sentences(&card.hit.text).into_iter().next() else { return false };
    let words = text::tokens(first);
    let Some(copula) = words.iter().position(|w| matches!(w.as_str(), "is" | "was" | "are" | "were")) else {
        return false;
    };
    words.iter().skip(copula + 1).take(DEFINITION_GAP).any(|w| same_word(w, noun))
}

/// Whether a name is a fuller form of a title: its words in order with more between, ending alike ("Jocelyn Charles
/// Bjorn Lovell" for "Jocelyn Lovell", "Sven Olof Joachim Palme" for "Olof Palme").
pub(super) fn fuller_form(name: &[String], title: &[String]) -> bool {
    if title.len() < 2 || name.len() <= title.len() || name.last() != title.last() {
        return false;
    }
    let mut words = name.iter();
    title.iter().all(|t| words.any(|w| w == t))
}

/// How near, in words, a value sits after a mention of one of `names` in its sentence; a value before the name
/// counts two words farther ("Guyana 1 August 1973" in a table of members and the days they joined).
fn value_gap(sentence: &str, span: &Span, names: &[String]) -> Option<usize> {
    if names.is_empty() {
        return None;
    }
    let words = text::tokens(sentence);
    let start = text::tokens(sentence.get(..span.at)?).len();
    let end = start + text::tokens(&span.text).len();
    let mut best: Option<usize> = None;
    for name in names.iter().map(|n| text::tokens(n)).filter(|n| !n.is_empty() && n.len() <= words.len()) {
        let len = name.len();
        for i in (0..=words.len() - len).filter(|i| words[*i..*i + len] == name[..]) {
            let gap = match (i + len <= start, i >= end) {
                (true, _) => start - (i + len),
                (_, true) => i - end + 2,
                _ => continue,
            };
            best = Some(best.map_or(gap, |b| b.min(gap)));
        }
    }
    best
}

/// Nouns that ask for the larger place of a "City, Region" pair.
const REGION_NOUNS: &[&str] = &["state", "country", "nation", "province", "region"];

/// Spans that cannot be answers: a lone capitalised function word, a month, a weekday, a sentence opener, a
/// company's suffix.
fn is_noise(span: &str) -> bool {
    const OTHERS: &[&str] = &[
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "however",
        "during",
        "after",
        "before",
        "although",
        "since",
        "following",
        "according",
        // Words that open a sentence to join it to the last one: "Therefore", "Instead".
        "therefore",
        "thus",
        "hence",
        "moreover",
        "furthermore",
        "otherwise",
        "instead",
        "meanwhile",
        "nevertheless",
        "nonetheless",
        "consequently",
        "finally",
        "additionally",
        "similarly",
        "likewise",
        "indeed",
        "here",
        "there",
        "then",
        "now",
        "note",
        // A company's or a person's suffix alone: "Inc" in "Cartoon Network, Inc".
        "inc",
        "ltd",
        "llc",
        "corp",
        "jr",
        "sr",
    ];
    let lower = span.to_lowercase();
    // One letter is no answer; one digit is a count ("4 bytes").
    (lower.len() < 2 && !lower.chars().all(|c| c.is_ascii_digit()))
        || text::is_stopword(&lower)
        || spans::MONTHS.contains(&lower.as_str())
        || OTHERS.contains(&lower.as_str())
}

/// A life's dates "(3 May 1900 – 5 June 1980)": when the question asks about a death, the second is the one; when
/// about a birth, the first.
fn life_dates(found: Vec<Span>, cues: &[String]) -> Vec<Span> {
    if found.len() < 2 {
        return found;
    }
    let asks = |stems: &[&str]| cues.iter().any(|c| stems.iter().any(|s| same_word(c, s)));
    if asks(&["died", "death", "die"]) {
        found.into_iter().skip(1).take(1).collect()
    } else if asks(&["born", "birth"]) {
        found.into_iter().take(1).collect()
    } else {
        found
    }
}

/// Scored candidates, summed over the places they appear.
struct Tally<'a> {
    text: String,
    /// `text` folded, the key its places are summed under.
    key: String,
    best: f32,
    seen: usize,
    card: &'a Card,
    /// The best place it appears in a card about something the question names: the citation a reader checks.
    about: Option<(f32, &'a Card)>,
    /// A date's value, when the candidate is one.
    date: Option<spans::DateValue>,
}

impl Tally<'_> {
    /// Its best place's score, and a little for each other place that says it.
    fn total(&self) -> f32 {
        self.best + 0.3 * (self.seen as f32 - 1.0).min(3.0)
    }
}

/// Whether date `fuller` says all that `less` does and more: "16 August 1967" for "1967" or "August 1967".
fn refines(fuller: spans::DateValue, less: spans::DateValue) -> bool {
    let (y, m, d) = less;
    fuller != less && fuller.0 == y && (m == 0 || fuller.1 == m) && (d == 0 || fuller.2 == d) && y != 0
}

/// A date that the evidence also gives more fully counts for the fuller one, the best placed where it gives
/// several: the year a sentence mentions is most often the day another sentence dates.
fn merge_dates(tally: &mut Vec<Tally<'_>>) {
    let mut i = 0;
    while i < tally.len() {
        let fuller = tally[i].date.and_then(|less| {
            (0..tally.len())
                .filter(|j| tally[*j].date.is_some_and(|f| refines(f, less)))
                .max_by(|x, y| tally[*x].best.total_cmp(&tally[*y].best))
        });
        match fuller {
            Some(j) => {
                let (seen, best, about) = (tally[i].seen, tally[i].best, tally[i].about);
                let into = &mut tally[j];
                into.seen += seen;
                into.best = into.best.max(best);
                into.about = into.about.or(about);
                tally.remove(i);
            }
            None => i += 1,
        }
    }
}

/// The `k` best candidate spans of the asked shape, best first.
pub(super) fn extract<'a>(a: &Asked, question: &str, window: &[&'a Card], chain: &Chain, k: usize) -> Vec<Reading<'a>> {
    let (links, bridges) = (chain.links, &chain.bridges);
    let question_names: Vec<String> = text::name_spans(question);
    let depth = depths(question, window, bridges);
    let target = links + 1;
    let final_cues = a.final_cues(links);
    // The chain's end is in the window: a card as many hops from the question as the question has links.
    let reached_end = links > 0 && depth.contains(&Some(links));
    // A link is described by the chain's words ("mother" in "X's mother"), not by the relation the answer ends it
    // with ("die"): "married to T (died 875)" does not make T the mother.
    let link_cues: Vec<String> = a.cues.iter().filter(|c| !final_cues.contains(c)).cloned().collect();
    let link_cues = if link_cues.is_empty() { a.cues.clone() } else { link_cues };
    // A family link is also said from its other end ("son of X" for X's mother), and names a sex.
    let link_sex = kin::asked_sex(&link_cues);
    let other_end = kin::other_end(&link_cues);
    let against = kin::against(&link_cues);
    // What the chain arrived at: a value written next to its name in a card about something else (a table of
    // members and the days they joined) is that thing's value.
    // The chain's words may count more links than its cards take ("a member of" is a relation, not a hop), so
    // every card the chain reached counts, each but for its own sentences.
    let reached: Vec<(usize, String)> = (0..window.len())
        .filter(|i| depth[*i].is_some_and(|d| d > 0 && d <= links))
        .map(|i| (i, subject(&window[i].hit.title).to_string()))
        .collect();
    let mut tally: Vec<Tally<'a>> = Vec::new();
    for (rank, card) in window.iter().copied().enumerate() {
        // A card whose title is only the question's own words ("Place of birth") defines the question's terms;
        // it is not evidence about what the question names.
        let title_words = text::tokens(&card.hit.title);
        let title_subject = subject(&card.hit.title);
        let title_last = text::tokens(title_subject).pop();
        if !title_words.is_empty()
            && title_words.iter().all(|t| a.words.contains(t))
            && !question_names.iter().any(|n| text::mentions(n, &card.hit.title) || text::mentions(&card.hit.title, n))
        {
            continue;
        }
        // Where the card sits on the chain: an answer is as many hops from the question as the question has links,
        // plus one; a card that nothing the question names leads to is likely a distractor.
        let chain = match depth[rank] {
            Some(d) => 1.0 - 0.75 * (d as f32 + 1.0 - target as f32).abs(),
            None => -0.5,
        };
        // A card reached through a mention next to the question's words is the link the question describes.
        // A parent or child link is not the one the bridge says it married ("He was married to Teutberga").
        let link = match depth[rank] {
            Some(d) if d > 0 => {
                let bridges = || (0..window.len()).filter(|i| depth[*i] == Some(d - 1)).map(|i| &window[i].hit.text);
                let name = subject(&card.hit.title);
                let gap = bridges().filter_map(|text| link_distance(text, name, &link_cues, &other_end)).min();
                let married = !against.is_empty()
                    && bridges().any(|text| link_distance(text, name, &[], &against).is_some_and(|gap| gap <= 3));
                gap.map_or(0.0, |gap| 1.0 / (1.0 + gap as f32 / 2.0)) - if married { 0.5 } else { 0.0 }
            }
            _ => 0.0,
        };
        // The relative asked for is of the sex the link names: "X's mother" is not the card whose pronouns say he.
        let other_sex = links > 0
            && depth[rank] == Some(links)
            && link_sex.is_some_and(|asked| kin::sex_of(card).is_some_and(|sex| sex != asked));
        let chain = chain + link - if other_sex { 2.0 } else { 0.0 };
        for (j, sentence) in text::sentences(&card.hit.text).into_iter().enumerate() {
            let mut cues = cue_positions(sentence, &a.cues);
            // A people's adjective says a nationality ("an American singer") without the word.
            if let Some(i) = a.cues.iter().position(|c| c == "nationality")
                && cues.iter().all(|c| c.1 != i)
                && let Some(at) = spans::names(sentence).iter().find(|n| names_a_people(&n.text))
            {
                cues.push((at.at, i));
            }
            let mut distinct: Vec<usize> = cues.iter().map(|c| c.1).collect();
            distinct.sort_unstable();
            distinct.dedup();
            // The chain's own descriptions count half: they crowd the bridge's sentences, not the answer's.
            let weight: f32 = distinct.iter().map(|i| if final_cues.contains(&a.cues[*i]) { 1.0 } else { 0.5 }).sum();
            let named = question_names.iter().filter(|n| text::mentions(sentence, n)).count() as f32;
            // A sentence of a card about something the question names speaks for it most directly.
            let about = question_names.iter().any(|n| text::mentions(&card.hit.title, n));
            // In a chain the answer is about the chain's end ("the director of film X" is asked where he was
            // born), not about the thing the question names. Once the end is in the window, a bridge card's
            // sentences speak for a bridge, and the end card's speak for what the chain arrived at (most of all
            // those that use the question's words). A question that names two things may ask how the chain's end
            // relates to the second ("When did the spouse of X make Y?"), so their cards keep speaking for them.
            let (named, about) = match depth[rank] {
                Some(d) if d < links && reached_end && question_names.len() <= 1 => (0.0, false),
                Some(d) if links > 0 && d == links => (1.0, weight > 0.0),
                _ => (named, about),
            };
            // Past two of the question's words a sentence is not more likely to hold the answer: the words that
            // describe the chain ("the composer of the film") crowd the bridge's sentences, not the answer's.
            let relevance = weight.min(2.0) + 0.5 * named + if about && named > 0.0 { 0.5 } else { 0.0 };
            if relevance == 0.0 {
                continue;
            }
            let found: Vec<Span> = match a.kind {
                AnswerKind::Date => life_dates(spans::dates(sentence), &a.cues),
                AnswerKind::Number => spans::numbers(sentence),
                AnswerKind::Phrase => spans::phrase_after(sentence, &final_cues, 6)
                    .map(|(text, at)| vec![Span { text, at, shape: Shape::Name }])
                    .unwrap_or_default(),
                _ => spans::names(sentence),
            };
            for span in found {
                let mut span = match a.kind {
                    AnswerKind::Place => past_office(span),
                    AnswerKind::Person => past_title(span),
                    _ => span,
                };
                // A count's unit that the question already gives ("how many congressional districts") marks the
                // number asked for, and is not repeated in the answer.
                let mut counted = false;
                if let Shape::Number(_) = span.shape
                    && let Some((number, unit)) = span.text.split_once(' ')
                    && text::tokens(unit).iter().all(|u| a.heads.iter().any(|h| same_word(u, h)))
                {
                    counted = true;
                    span.text = number.to_string();
                }
                // So does a number a few words after the asked noun ("Population … Total 2,913,123").
                if let Shape::Number(_) = span.shape
                    && a.kind == AnswerKind::Number
                    && spans::words_before(sentence, span.at, 4)
                        .iter()
                        .any(|w| !text::is_stopword(w) && a.heads.iter().any(|h| same_word(w, h)))
                {
                    counted = true;
                }
                let mut folded = fold(&span.text);
                // A day without its year ("October 24") is a date too, never a name.
                let day = match text::tokens(&span.text).as_slice() {
                    [month, rest @ ..] => {
                        spans::MONTHS.contains(&month.as_str()) && rest.iter().all(|w| w.parse::<u32>().is_ok())
                    }
                    [] => false,
                };
                let dated = span.shape == Shape::Name && (day || !spans::dates(&span.text).is_empty());
                // "Where" and "who" are never answered by a nationality ("was a Canadian cyclist").
                let adjective = matches!(a.kind, AnswerKind::Place | AnswerKind::Person)
                    && span.shape == Shape::Name
                    && is_peoples_adjective(&span, sentence);
                if folded.is_empty() || is_noise(&span.text) || dated || adjective {
                    continue;
                }
                // A name headed by the asked noun ("Sangre de Cristo Range" for "what mountain range") is of the
                // kind asked. A person is named, not headed by the noun ("which actress" is not "Best Actress").
                let headed = span.shape == Shape::Name
                    && a.kind != AnswerKind::Person
                    && text::tokens(&span.text).last().is_some_and(|w| {
                        a.heads.iter().any(|head| !asked::is_person_noun(head) && text::stem(w) == text::stem(head))
                    });
                // The answer is what the question does not already say, and not the card's own subject, unless
                // that subject is a thing of the asked kind that the chain reached ("the airport in the city" is
                // the airport's card when a card on the chain leads to it; another city's airport is a distractor).
                let span_words = text::tokens(&span.text);
                let repeats = span_words.iter().all(|t| a.words.contains(t));
                let own = span.shape == Shape::Name
                    && (span_words.iter().all(|t| title_words.contains(t)) || fuller_form(&span_words, &title_words));
                // A card that says its subject is a thing of the asked kind ("Victoria Falls … is a waterfall")
                // heads it by that noun as well.
                let headed = headed || own && a.kind != AnswerKind::Person && defines_as(card, &a.heads);
                let own_subject = own && a.kind != AnswerKind::Phrase && !(headed && depth[rank].is_some());
                // Nor is a longer name built on one the question gives ("X the Musical" for "X").
                let derived = question_names.iter().any(|n| text::mentions(&span.text, n));
                if repeats || own_subject || derived {
                    continue;
                }
                // The corpus knows a card's subject by its title: the name the card opens with, ending like the
                // title ("Michael Edwards (born 1963), best known as "Eddie the Eagle"" in the card `Eddie "The
                // Eagle" Edwards`), is answered with the title.
                let opens = j == 0 && sentence.get(..span.at).is_some_and(|before| before.trim().is_empty());
                if opens && span.shape == Shape::Name && title_last.as_ref() == span_words.last() {
                    span.text = title_subject.to_string();
                    folded = fold(&span.text);
                }
                // A thing the chain went through on its way ("the director of X" when the question asks where
                // the director was born) is a bridge, not the answer.
                let bridge = links > 0
                    && window
                        .iter()
                        .position(|c| fold(subject(&c.hit.title)) == folded)
                        .is_some_and(|i| depth[i].is_some_and(|d| d < links))
                    || bridges.iter().any(|b| fold(&b.name) == folded);
                let near = cues
                    .iter()
                    .map(|(at, _)| {
                        let (lo, hi) = if *at < span.at { (*at, span.at) } else { (span.at, *at) };
                        text::tokens(&sentence[lo..hi.min(sentence.len())]).len() as f32
                    })
                    .fold(f32::MAX, f32::min);
                let proximity = if near == f32::MAX { 0.0 } else { 2.0 / (1.0 + near / 3.0) };
                let shape_fit = match span.shape {
                    Shape::Name if a.kind != AnswerKind::Phrase => fit(a, &span, sentence, window),
                    _ => 0.0,
                };
                let heads = if headed || counted { 1.5 } else { 0.0 };
                let beside_end = match span.shape {
                    Shape::Date(_) | Shape::Number(_) => {
                        let others: Vec<String> =
                            reached.iter().filter(|(i, _)| *i != rank).map(|(_, name)| name.clone()).collect();
                        value_gap(sentence, &span, &others).map_or(0.0, |gap| 1.5 / (1.0 + gap as f32 / 2.0))
                    }
                    _ => 0.0,
                };
                let score = relevance + proximity + shape_fit + heads + beside_end + chain + 0.5 / (1.0 + rank as f32)
                    - 0.05 * j as f32
                    - if bridge { 1.0 } else { 0.0 };
                tracing::trace!(score, span = %span.text, relevance, proximity, shape_fit, chain, beside_end, rank, bridge, card = %card.hit.title, "answer candidate");
                let about_card = (about && named > 0.0).then_some((score, card));
                match tally.iter_mut().find(|t| t.key == folded) {
                    Some(t) => {
                        t.seen += 1;
                        if score > t.best {
                            (t.best, t.card) = (score, card);
                        }
                        if let Some((s, c)) = about_card
                            && t.about.is_none_or(|(best, _)| s > best)
                        {
                            t.about = Some((s, c));
                        }
                    }
                    None => tally.push(Tally {
                        text: span.text.clone(),
                        key: folded,
                        best: score,
                        seen: 1,
                        card,
                        about: about_card,
                        date: match span.shape {
                            Shape::Date(value) => Some(value),
                            _ => None,
                        },
                    }),
                }
            }
        }
    }
    merge_dates(&mut tally);
    let total = Tally::total;
    // Best first; among equals the later found, as the reader has always chosen.
    tally.reverse();
    tally.sort_by(|x, y| total(y).total_cmp(&total(x)));
    let mut readings: Vec<Reading<'a>> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for t in &tally {
        if readings.len() == k {
            break;
        }
        let reading = answer_of(a, t);
        let key = fold(&reading.text);
        if !keys.contains(&key) {
            keys.push(key);
            readings.push(reading);
        }
    }
    readings
}

/// A candidate as the answer: the part of it the question's noun asks for, cited by the card that says it best.
fn answer_of<'a>(a: &Asked, best: &Tally<'a>) -> Reading<'a> {
    let noun = a.noun.as_deref().unwrap_or("");
    // "In what year …" asks for the year of the day the evidence dates.
    let year = best.date.map(|(y, _, _)| y.to_string()).filter(|y| noun == "year" && best.text.contains(y.as_str()));
    // "In what state …" asks for the region of "Philadelphia, Pennsylvania".
    // "In what county …" asks for the part of "DuPage County, Illinois" that is a county.
    let text = match (year, best.text.split_once(", ")) {
        (Some(year), _) => year,
        (None, Some((part, _))) if text::tokens(part).iter().any(|w| same_word(w, noun)) => part.to_string(),
        (None, Some(_)) if REGION_NOUNS.contains(&noun) => best.text.rsplit_once(", ").map_or("", |p| p.1).to_string(),
        _ => best.text.clone(),
    };
    let card = best.about.map_or(best.card, |(_, c)| c);
    Reading { text, kind: a.kind, cards: vec![card], score: best.total() }
}
