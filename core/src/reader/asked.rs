//! What a question asks for, read from its wording alone: the kind of answer (a person, place, date, number,
//! yes/no, one of two named things, an entity, a phrase), the two options of a choice, the order a comparison
//! wants, and the question's own words that an answer's sentence should sit near.

use std::sync::LazyLock;

use regex::Regex;
use sleuth_messages::AnswerKind;

pub use super::order::Order;
use super::{
    descriptions::{AUXILIARIES, chain_descriptions},
    order,
};
use crate::text;

/// What is compared in a choice or a "same" question.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub kind: AnswerKind,
    /// For a choice: the two things named ("X or Y"); for a yes/no question about two things: both.
    pub options: Vec<String>,
    /// The order a choice wants, when it compares dates or amounts.
    pub order: Option<Order>,
    /// The comparative that sets `order`, read outside a choice's options: "earlier", "older", "more".
    pub comparative: Option<String>,
    /// The comparison is of life spans ("lived longer").
    pub lifespan: bool,
    /// A yes/no question that asks whether two things share something ("the same country").
    pub same: Option<String>,
    /// The question's content words that are not part of a name it gives: the relation it asks about.
    pub cues: Vec<String>,
    /// The question's own words, lowercased, so an answer that repeats the question can be told apart.
    pub words: Vec<String>,
    /// The noun after "what"/"which" ("what company"), when there is one.
    pub noun: Option<String>,
    /// The words of the asked noun phrase, or of what "how many" counts: the words that may head an answer's name.
    pub heads: Vec<String>,
    /// The descriptions a chain goes through, nearest the named thing last: "the director of film X" gives
    /// `["director", "film"]`, "X's mother" gives `["mother"]`. Each is the describing noun and the words after it
    /// up to the next name.
    pub links: Vec<Vec<String>>,
    /// The question asks where someone works or studies: the answer is an institution ("UCLA", "Yale College"),
    /// not the city it stands in.
    pub institution: bool,
}

impl Asked {
    /// The order is of time ("first", "older", "later"), which dates decide; "more", "larger" or "taller" compare
    /// amounts that no date gives.
    pub fn timed(&self) -> bool {
        self.comparative.as_deref().is_some_and(order::timed)
    }

    /// The order is of age ("older", "youngest"), which birth dates decide.
    pub fn aged(&self) -> bool {
        self.comparative.as_deref().is_some_and(order::aged)
    }

    /// The cue words an answer's own sentence should use: without the words of the last `links` descriptions,
    /// which the bridge documents' sentences use instead ("composer" and "film" in "Where was the composer of
    /// film X born?" leave "born").
    pub fn final_cues(&self, links: usize) -> Vec<String> {
        let chain: Vec<&String> = self.links.iter().rev().take(links).flatten().collect();
        let left: Vec<String> = self.cues.iter().filter(|c| !chain.contains(c)).cloned().collect();
        if left.is_empty() { self.cues.clone() } else { left }
    }
}

/// Verbs and nouns of working and studying: "Where did X study?" asks for a school, "where does X work" for an
/// employer. An English vocabulary, not any data set's relation names.
const INSTITUTION_CUES: &[&str] = &[
    "work",
    "worked",
    "works",
    "study",
    "studied",
    "studies",
    "educated",
    "education",
    "attend",
    "attended",
    "teach",
    "taught",
    "teaches",
    "graduate",
    "graduated",
    "employed",
    "employer",
    "enrolled",
    "alma",
];

/// Nouns that name places, dates and people; an English vocabulary, not any data set's relation names.
const PLACE_NOUNS: &[&str] = &[
    "city",
    "country",
    "state",
    "county",
    "town",
    "village",
    "place",
    "region",
    "river",
    "continent",
    "island",
    "province",
    "location",
    "nation",
    "area",
    "district",
    "capital",
    "municipality",
    "borough",
    "lake",
    "sea",
    "ocean",
    "mountain",
    "street",
    "neighborhood",
    "territory",
    "body of water",
];
const DATE_NOUNS: &[&str] = &["year", "date", "century", "decade", "month", "day", "era", "period", "time"];
const PERSON_NOUNS: &[&str] = &[
    "person",
    "man",
    "woman",
    "actor",
    "actress",
    "singer",
    "director",
    "writer",
    "author",
    "player",
    "king",
    "queen",
    "president",
    "politician",
    "musician",
    "artist",
    "composer",
    "producer",
    "member",
    "leader",
    "father",
    "mother",
    "son",
    "daughter",
    "husband",
    "wife",
    "brother",
    "sister",
    "founder",
    "owner",
    "coach",
    "poet",
    "painter",
    "scientist",
    "athlete",
    "footballer",
    "performer",
    "character",
    "emperor",
    "prince",
    "princess",
    "spouse",
    "child",
    "parent",
    "grandfather",
    "grandmother",
    "uncle",
    "aunt",
    "rapper",
    "band member",
    "minister",
];
const NUMBER_CUES: &[&str] = &["how many", "how much", "how old", "how long", "how tall", "how far", "how large"];
const NUMBER_NOUNS: &[&str] =
    &["number", "population", "percentage", "amount", "age", "size", "height", "length", "code"];

static CHOICE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i),\s*(.+?)\s+or\s+(.+?)\s*[?.!]*\s*$").expect("static regex"));
static BETWEEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(?:between|of)\s+(.+?)\s+(?:and|or)\s+(.+?),").expect("static regex"));
static AMONG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:out of|between|among)\s+(.+?)\s+(?:and|or)\s+(.+?)\s*[?.!]*\s*$").expect("static regex")
});
static SAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:the\s+)?same\s+([a-z]+(?:\s+of\s+[a-z]+)?)").expect("static regex"));
static PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:is|are|was|were|do|does|did|has|have|had)\s+(?:both\s+)?(.+?)\s+and\s+(.+?)(?:\s+(?:both|each|located|from|of|in|the|a|an|considered|known|based|found|part|members?|founded|directed|born|same|related|people)\b.*)?\s*[?.!]*$")
        .expect("static regex")
});

fn has_phrase(q: &str, phrase: &str) -> bool {
    text::mentions(q, phrase)
}

fn first_word(q: &str) -> String {
    q.split_whitespace().next().unwrap_or("").to_lowercase()
}

/// Conjunctions that open a condition before the question proper: "If a handler returns 404, is the fallback
/// called?"
const CONDITIONS: &[&str] = &["if", "when", "once", "after", "before", "while", "unless"];

/// The word that opens the question proper: its first word, or, after a condition clause, the first word after
/// the clause's comma when that is an auxiliary ("If …, is …?" is a yes/no question). "When was X born?" is no
/// condition: an auxiliary right after "when" makes it the question.
fn opening_word(q: &str) -> String {
    let first = first_word(q);
    let second = q.split_whitespace().nth(1).unwrap_or("").to_lowercase();
    if !CONDITIONS.contains(&first.as_str()) || AUXILIARIES.contains(&second.as_str()) {
        return first;
    }
    match q.rsplit_once(", ").map(|(_, rest)| first_word(rest)) {
        Some(word) if AUXILIARIES.contains(&word.as_str()) => word,
        _ => first,
    }
}

/// Nouns that only introduce the noun after them: "the *name* of the airport", "what *kind* of tree".
const LEAD_NOUNS: &[&str] = &["name", "type", "kind", "sort"];

/// Where the asked noun starts: the word after "what"/"which" (past an auxiliary, a determiner and a lead noun
/// with its "of").
fn wh_noun_at(words: &[&str]) -> Option<usize> {
    let at = words.iter().position(|w| *w == "what" || *w == "which")?;
    // "What is the place of birth of …" asks for a place: the noun after an auxiliary and a determiner counts.
    let skip = |i: &usize| AUXILIARIES.contains(&words[*i]) || ["the", "a", "an"].contains(&words[*i]);
    let mut next = (at + 1..words.len()).take(3).find(|i| !skip(i))?;
    // "What is the name of the waterfall …" asks for a waterfall.
    if LEAD_NOUNS.contains(&words[next]) && words.get(next + 1) == Some(&"of") {
        next = (next + 2..words.len()).take(2).find(|i| !skip(i))?;
    }
    (words[next] != "of").then_some(next)
}

/// The noun right after "what"/"which" (skipping an adjective or two is left to the caller's list lookups).
fn wh_noun(lower: &str) -> Option<String> {
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let at = wh_noun_at(&words)?;
    // "What area code …" asks for a code: a noun of amounts right after the asked noun heads the compound.
    let head = words.get(at + 1).filter(|w| NUMBER_NOUNS.contains(*w)).map_or(at, |_| at + 1);
    Some(words[head].to_string())
}

/// The first noun of a known kind among the few words after "what"/"which", past an adjective ("what was the
/// total population") or a slip ("what was he population").
fn noun_after_wh(lower: &str) -> Option<&'static str> {
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let at = words.iter().position(|w| *w == "what" || *w == "which")?;
    // A determiner after a verb opens another noun phrase, the verb's object: "which flag sets the number of
    // threads" asks for a flag, not a number. After an auxiliary it is the subject the question asks about ("what
    // nationality is the director"), and the search goes on.
    let mut before: Option<&str> = None;
    words[at + 1..]
        .iter()
        .take(4)
        .take_while(|w| {
            let object = ["the", "a", "an"].contains(*w)
                && before.is_some_and(|b| !AUXILIARIES.contains(&b) && !["the", "a", "an"].contains(&b));
            before = Some(w);
            !object && !["of", "in", "for", "did", "does", "do"].contains(*w)
        })
        .find_map(|w| KIND_NOUNS.iter().flat_map(|l| l.iter()).find(|n| *n == w).copied())
}

/// The words that may head the answer's own name: the asked noun phrase ("what mountain range" gives mountain and
/// range, "the name of the airport" airport), or what "how many" counts ("how many congressional districts").
/// An answer named by one of them ("Sangre de Cristo Range", "4 congressional districts") is of the kind asked.
fn head_words(lower: &str) -> Vec<String> {
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let counted = words.windows(2).position(|p| p[0] == "how" && ["many", "much"].contains(&p[1])).map(|i| i + 2);
    let Some(from) = counted.or_else(|| wh_noun_at(&words)) else {
        return Vec::new();
    };
    // "What body of water" asks for a water's name: a river, a lake, a sea.
    if words[from..].starts_with(&["body", "of", "water"]) {
        return WATERS.iter().map(|w| w.to_string()).collect();
    }
    words[from..]
        .iter()
        .take_while(|w| !text::is_stopword(w) && !AUXILIARIES.contains(w))
        .take(4)
        .map(|w| w.to_string())
        .collect()
}

/// What English calls a body of water.
const WATERS: &[&str] =
    &["river", "lake", "sea", "ocean", "bay", "gulf", "strait", "channel", "reservoir", "lagoon", "creek", "sound"];

/// True for a noun that names a person ("actress", "director").
pub fn is_person_noun(noun: &str) -> bool {
    PERSON_NOUNS.iter().any(|p| text::stem(p) == text::stem(noun))
}

const KIND_NOUNS: [&[&str]; 4] = [PLACE_NOUNS, DATE_NOUNS, PERSON_NOUNS, NUMBER_NOUNS];

fn kind_of_noun(noun: &str) -> Option<AnswerKind> {
    if PLACE_NOUNS.contains(&noun) {
        Some(AnswerKind::Place)
    } else if DATE_NOUNS.contains(&noun) {
        Some(AnswerKind::Date)
    } else if PERSON_NOUNS.contains(&noun) {
        Some(AnswerKind::Person)
    } else if NUMBER_NOUNS.contains(&noun) {
        Some(AnswerKind::Number)
    } else {
        None
    }
}

/// A choice between `options`, its order read from the question's words outside them: in "Which film came out
/// earlier, One More Time or Revenge?" the option's "More" is a title's word, not the comparison's.
fn choice(mut out: Asked, question: &str, options: Vec<String>) -> Asked {
    let mut rest = question.to_lowercase();
    for option in &options {
        rest = rest.replace(&option.to_lowercase(), " ");
    }
    let words = text::tokens(&rest);
    out.kind = AnswerKind::Choice;
    out.options = options;
    out.order = order::order_of(&words);
    out.comparative = order::order_word(&words).map(str::to_string);
    out
}

fn clean_option(s: &str) -> String {
    s.trim().trim_matches(|c: char| c == '"' || c == '\'' || c == '?' || c == '.' || c == ',').trim().to_string()
}

/// Reads what `question` asks for.
pub fn asked(question: &str) -> Asked {
    let q = question.trim();
    let lower = q.to_lowercase();
    let words = text::tokens(q);
    // A question after a statement ("X has an OBE. Does Y also have one?") is asked by its last sentence.
    let first = match text::sentences(q).last() {
        Some(last) if !last.trim().is_empty() => opening_word(last),
        _ => opening_word(q),
    };
    let names = text::name_spans(q);
    let name_words: Vec<String> = names.iter().flat_map(|n| text::tokens(n)).collect();
    let cues: Vec<String> =
        text::content_words(q).into_iter().filter(|w| !name_words.contains(w) && !order::is_comparative(w)).collect();
    let institution = cues.iter().any(|c| INSTITUTION_CUES.contains(&c.as_str()));
    let noun = wh_noun(&lower);
    let lifespan = has_phrase(&lower, "lived longer") || has_phrase(&lower, "live longer");
    let order = order::order_of(&words);
    let mut out = Asked {
        kind: AnswerKind::Entity,
        options: Vec::new(),
        comparative: order::order_word(&words).map(str::to_string),
        order,
        lifespan,
        same: None,
        cues,
        words: words.clone(),
        noun: noun.clone(),
        heads: head_words(&lower),
        links: chain_descriptions(q, &name_words),
        institution,
    };

    // A choice between two named things: "Which film came out first, X or Y?"
    let wh_start = ["which", "who", "what", "whose", "whom"].contains(&first.as_str());
    if let Some(c) = CHOICE.captures(q)
        && (wh_start || AUXILIARIES.contains(&first.as_str()))
    {
        return choice(out, q, vec![clean_option(&c[1]), clean_option(&c[2])]);
    }
    // "Who was born first out of X and Y?"
    if let Some(c) = AMONG.captures(q)
        && wh_start
        && order.is_some()
    {
        return choice(out, q, vec![clean_option(&c[1]), clean_option(&c[2])]);
    }
    // "Between X and Y, which writer …?"
    if let Some(c) = BETWEEN.captures(q)
        && (lower.contains("which") || lower.contains("who"))
    {
        return choice(out, q, vec![clean_option(&c[1]), clean_option(&c[2])]);
    }
    // "Little Caesars and Pizza Hut were founded within a year of each other. Which was the first to serve
    // pizza?": the options are the two things a statement before the question joins.
    let said = text::sentences(q);
    if wh_start
        && order.is_some()
        && let [opening, _, ..] = said.as_slice()
        && let [x, y, ..] = text::name_spans(opening).as_slice()
        && text::mentions(opening, &format!("{x} and {y}"))
    {
        return choice(out, q, vec![x.clone(), y.clone()]);
    }
    // "Was X or Y born first?": an auxiliary opens it, but two names joined by "or" and an order make it a choice,
    // never a yes/no.
    if AUXILIARIES.contains(&first.as_str())
        && order.is_some()
        && let [.., x, y] = names.as_slice()
        && text::mentions(q, &format!("{x} or {y}"))
    {
        return choice(out, q, vec![x.clone(), y.clone()]);
    }
    if AUXILIARIES.contains(&first.as_str()) {
        out.kind = AnswerKind::YesNo;
        out.same = SAME.captures(&lower).map(|c| c[1].to_string());
        if let Some(c) = PAIR.captures(q) {
            out.options = vec![clean_option(&c[1]), clean_option(&c[2])];
        } else if names.len() >= 2 {
            out.options = names[..2].to_vec();
        }
        return out;
    }
    // "Who is older, X or Y" without a comma: two names joined by "or".
    if wh_start && names.len() >= 2 && lower.contains(" or ") && order.is_some() {
        return choice(out, q, names[names.len() - 2..].to_vec());
    }

    // The question's words outside the names it gives: "When The Stars Go Blue" asks no date.
    let plain: Vec<String> = words.iter().filter(|w| !name_words.contains(w)).cloned().collect();
    // "In which city …", "From whom …": the question word after a leading preposition.
    let lead = match first.as_str() {
        "in" | "on" | "at" | "from" | "during" | "by" | "to" | "for" | "with" => {
            words.get(1).cloned().unwrap_or_default()
        }
        _ => first.clone(),
    };
    out.kind = if NUMBER_CUES.iter().any(|c| lower.starts_with(c) || has_phrase(&lower, c)) {
        AnswerKind::Number
    } else if first == "when"
        || has_phrase(&lower, "what year")
        || has_phrase(&lower, "which year")
        || has_phrase(&lower, "what date")
    {
        AnswerKind::Date
    } else if first == "why" || has_phrase(&lower, "cause of death") || has_phrase(&lower, "how did") {
        AnswerKind::Phrase
    } else if first == "where" {
        AnswerKind::Place
    } else if let Some(kind) = noun.as_deref().and_then(kind_of_noun) {
        kind
    } else if let Some(kind) = noun_after_wh(&lower).and_then(kind_of_noun) {
        kind
    } else if ["who", "whom"].contains(&first.as_str()) || lower.contains(" whom ") || lower.starts_with("to whom") {
        AnswerKind::Person
    } else if let Some(kind) = ["what", "which", "who", "where", "when"]
        .iter()
        .filter_map(|w| plain.iter().position(|t| t == w))
        .min()
        .and_then(|at| plain.get(at + 1))
        .and_then(|n| kind_of_noun(n))
    {
        kind
    } else if lead == "who" || lead == "whom" {
        AnswerKind::Person
    } else if lead == "where" {
        AnswerKind::Place
    } else if lead == "when" {
        AnswerKind::Date
    } else {
        AnswerKind::Entity
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_of_answer_follows_the_question_word() {
        let cases: &[(&str, AnswerKind)] = &[
            ("Which anime is Luffy in?", AnswerKind::Entity),
            ("Who directed Spirited Away?", AnswerKind::Person),
            ("Where was the director of Alien born?", AnswerKind::Place),
            ("When did the composer of Aida die?", AnswerKind::Date),
            ("What year was Toyota founded?", AnswerKind::Date),
            ("How many moons does Mars have?", AnswerKind::Number),
            ("Why did John Keats die?", AnswerKind::Phrase),
            ("In what city is the Louvre?", AnswerKind::Place),
            ("Are Paris and Lyon in the same country?", AnswerKind::YesNo),
            ("Which film came out first, Alien or Aliens?", AnswerKind::Choice),
            ("Who was born first, Ada Lovelace or Charles Babbage?", AnswerKind::Choice),
            ("The band was formed in what year?", AnswerKind::Date),
            ("Ann Lee has an OBE. Does Bo Ek also have one?", AnswerKind::YesNo),
            ("If a handler returns 404, is the fallback called?", AnswerKind::YesNo),
            ("Between Ann Lee and Bo Ek, which writer had a more diverse career?", AnswerKind::Choice),
            ("Ann Lee and Bo Ek were born a year apart. Which was born first?", AnswerKind::Choice),
            ("At the 2011 census, what was the total population of Lyon?", AnswerKind::Number),
            ("What is the area code for Lyon in the country where Ada Lee died?", AnswerKind::Number),
            ("What area is Lyon in?", AnswerKind::Place),
        ];
        for (question, kind) in cases {
            assert_eq!(asked(question).kind, *kind, "{question}");
        }
    }

    #[test]
    fn a_choice_names_its_options_and_its_order() {
        let a = asked("Which film has the director who was born later, Playing It Wild or The Heart Of Doreon?");
        assert_eq!(a.options, ["Playing It Wild", "The Heart Of Doreon"]);
        assert_eq!(a.order, Some(Order::Most));
        let among = asked("Who was born first out of Ada Lovelace and Charles Babbage?");
        assert_eq!(among.options, ["Ada Lovelace", "Charles Babbage"]);
        assert_eq!(among.kind, AnswerKind::Choice);
        let b = asked("Who lived longer, Ada Lovelace or Charles Babbage?");
        assert!(b.lifespan);
        assert_eq!(asked("Which came first, A or B?").order, Some(Order::Least));
        let stated =
            asked("Little Caesars and Pizza Hut were founded a year apart. Which was the first to serve pizza?");
        assert_eq!(stated.options, ["Little Caesars", "Pizza Hut"]);
    }

    #[test]
    fn the_chain_s_descriptions_leave_the_final_relation() {
        let a = asked("Where was the composer of film Billy Elliot born?");
        assert_eq!(a.final_cues(1), ["born"]);
        let b = asked("When did Lothair II's mother die?");
        assert_eq!(b.final_cues(1), ["die"]);
        let c = asked("What is the date of death of the director of film Madame X?");
        assert_eq!(c.final_cues(1), ["date", "death"]);
        assert_eq!(c.final_cues(0), c.cues, "a question without links keeps every cue");
    }

    #[test]
    fn a_relative_clause_describes_a_link_by_its_verb() {
        let a = asked("When did the state where Ada Lee died become a republic?");
        assert_eq!(a.links, [["died"]]);
        assert_eq!(
            a.final_cues(1),
            ["state", "become", "republic"],
            "the clause's noun names what the answer is about"
        );
        let b = asked("When was the company in which Bo Ek was employed founded?");
        assert_eq!(b.final_cues(1), ["company", "founded"]);
        assert!(asked("Where was Ada Lee born?").links.is_empty());
        let c = asked("What body of water is near the city where Ada Lee died?");
        assert_eq!(c.links, [["died"]], "the asked noun is not a link");
        let d = asked("Ada Lee starred in a series that originally aired on what network?");
        assert!(d.links.is_empty(), "a clause that holds the question word is the asked relation: {:?}", d.links);
        assert_eq!(asked("Where is the city that Bo Ek originally founded?").links, [["founded"]]);
    }

    #[test]
    fn the_asked_noun_phrase_gives_the_words_an_answer_may_be_named_by() {
        assert_eq!(asked("What is the name of the airport in the city where WXYZ is licensed?").heads, ["airport"]);
        assert_eq!(asked("Humboldt Peak is part of what mountain range?").heads, ["mountain", "range"]);
        assert_eq!(asked("The state has how many congressional districts?").heads, ["congressional", "districts"]);
        assert_eq!(asked("What is the name of the city where Ada Lee died?").kind, AnswerKind::Place);
        assert!(asked("Who directed Spirited Away?").heads.is_empty());
        assert!(asked("What body of water is near Kassel?").heads.contains(&"river".to_string()));
    }

    #[test]
    fn working_and_studying_ask_for_an_institution() {
        assert!(asked("Where does the director of film Night Ferry work at?").institution);
        assert!(asked("Where did Ada Lee's father study?").institution);
        assert!(!asked("Where did Ada Lee's father die?").institution);
    }

    #[test]
    fn a_yes_no_question_names_what_it_compares() {
        let a = asked("Are Vasilyevsky Island and Kotlin Island located in the same country?");
        assert_eq!(a.same.as_deref(), Some("country"));
        assert_eq!(a.options, ["Vasilyevsky Island", "Kotlin Island"]);
        let b = asked("Are Christopher Nolan and Sofia Coppola both film directors?");
        assert_eq!(b.options, ["Christopher Nolan", "Sofia Coppola"]);
        assert_eq!(b.same, None);
    }

    #[test]
    fn a_choice_s_order_is_read_outside_its_options_and_only_time_is_timed() {
        let a = asked("Which film was released earlier, Dreamville Presents: Revenge or One More Time With Feeling?");
        assert_eq!((a.order, a.timed()), (Some(Order::Least), true));
        let a =
            asked("Which film has the director who died first, The Goose Woman or You Can No Longer Remain Silent?");
        assert_eq!((a.order, a.timed()), (Some(Order::Least), true));
        let a = asked("Between Ann Lee and Bo Ek, which writer had a more diverse career?");
        assert_eq!((a.order, a.timed()), (Some(Order::Most), false));
        assert!(!asked("Which mountain is taller, Ben Nevis or Snowdon?").timed());
        assert!(asked("Who was born later, Ada Lee or Bo Chan?").timed());
    }

    #[test]
    fn an_auxiliary_question_that_joins_two_names_by_or_with_an_order_is_a_choice() {
        let a = asked("Was Ada Lee or Bo Chan born first?");
        assert_eq!(a.kind, AnswerKind::Choice);
        assert_eq!(a.options, ["Ada Lee", "Bo Chan"]);
        // The noun the verb's object starts with is not the asked one.
        assert_ne!(asked("Which flag sets the number of threads used to run tests?").kind, AnswerKind::Number);
        assert_eq!(asked("What was the total population of Lyon?").kind, AnswerKind::Number);
        assert_eq!(asked("What nationality is the director of film X?").kind, AnswerKind::Person);
        // Without an order it stays a yes/no question.
        assert_eq!(asked("Was Ada Lee or Bo Chan a painter?").kind, AnswerKind::YesNo);
    }
}
