//! Small text utilities shared by the deterministic stages: tokens, stop words, sentences and name spans.

/// English function words and question words that carry no retrieval signal.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being",
    "between", "both", "but", "by", "can", "could", "did", "do", "does", "during", "each", "for", "from", "had", "has",
    "have", "he", "her", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "more", "most",
    "my", "no", "not", "of", "on", "one", "or", "other", "our", "over", "same", "she", "should", "so", "some", "such",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to",
    "under", "up", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "whose", "why",
    "will", "with", "would", "you", "your", "first", "later", "earlier", "tell", "know", "many", "much", "does",
    "came", "come",
];

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// Lowercase alphanumeric tokens (apostrophes split words; a possessive `'s` is dropped).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
        .filter(|t| t != "s")
        .collect()
}

/// Tokens that are not stop words, in order, without repeats.
pub fn content_words(text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for t in tokens(text) {
        if !is_stopword(&t) && !seen.contains(&t) {
            seen.push(t);
        }
    }
    seen
}

/// A crude stem so "created" matches "creator" and "films" matches "film": strips one common English suffix from
/// words long enough to keep a root. A word that ends in a silent "e" loses it, as its forms do ("derive",
/// "derived" and "deriving"; "title" and "titles"; "place" and "places").
pub fn stem(word: &str) -> &str {
    for suffix in ["ation", "ions", "ion", "ing", "ers", "ors", "er", "or", "ed", "es", "s"] {
        if word.len() > suffix.len() + 3
            && let Some(stripped) = word.strip_suffix(suffix)
        {
            return stripped;
        }
    }
    match word.len() > 4 {
        true => word.strip_suffix('e').unwrap_or(word),
        false => word,
    }
}

/// English irregular verbs, each past or participle form with its base: "became" and "become" are one verb, as
/// are "wrote", "written" and "write". Regular forms are left to `stem`; forms that are also other words ("born",
/// "found", "left") are left out. Sorted by form, for a binary search: the reader asks for every word it compares.
const IRREGULAR_VERBS: &[(&str, &str)] = &[
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bought", "buy"),
    ("brought", "bring"),
    ("built", "build"),
    ("came", "come"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("did", "do"),
    ("done", "do"),
    ("drawn", "draw"),
    ("drew", "draw"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("fallen", "fall"),
    ("fell", "fall"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("fought", "fight"),
    ("gave", "give"),
    ("given", "give"),
    ("gone", "go"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("held", "hold"),
    ("knew", "know"),
    ("known", "know"),
    ("led", "lead"),
    ("lost", "lose"),
    ("made", "make"),
    ("met", "meet"),
    ("paid", "pay"),
    ("ran", "run"),
    ("risen", "rise"),
    ("rose", "rise"),
    ("sang", "sing"),
    ("sent", "send"),
    ("shot", "shoot"),
    ("sold", "sell"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("stood", "stand"),
    ("sung", "sing"),
    ("taken", "take"),
    ("taught", "teach"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("took", "take"),
    ("went", "go"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("written", "write"),
    ("wrote", "write"),
];

/// The base of an English verb form: an irregular past or participle gives its base ("became" gives "become"),
/// any other word itself.
pub fn verb_base(word: &str) -> &str {
    IRREGULAR_VERBS.binary_search_by_key(&word, |(form, _)| form).map_or(word, |i| IRREGULAR_VERBS[i].1)
}

/// Whether two lowercase words are one noun, singular or plural: "eye" and "eyes", "church" and "churches".
pub fn same_noun(a: &str, b: &str) -> bool {
    // "-es" after a sibilant or an o ("churches", "boxes", "heroes"); "-s" otherwise ("eyes"), so "Jones" is not
    // a plural of "Jon".
    let sibilant = |q: &str| ["s", "x", "z", "ch", "sh", "o"].iter().any(|e| q.ends_with(e));
    let plural_of = |p: &str, q: &str| p.strip_suffix("es") == Some(q) && sibilant(q) || p.strip_suffix('s') == Some(q);
    a == b || plural_of(a, b) || plural_of(b, a)
}

/// Whether two names are one, a word of either in the singular or the plural: "Big Eye" for the film "Big Eyes".
pub fn same_name(a: &str, b: &str) -> bool {
    let (x, y) = (tokens(a), tokens(b));
    !x.is_empty() && x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| same_noun(p, q))
}

/// Case-insensitive containment on word boundaries.
pub fn mentions(haystack: &str, needle: &str) -> bool {
    let needle = needle.trim().to_lowercase();
    if needle.is_empty() {
        return false;
    }
    let hay = haystack.to_lowercase();
    let mut from = 0;
    while let Some(pos) = hay[from..].find(&needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before_ok = hay[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after_ok = hay[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before_ok && after_ok {
            return true;
        }
        from = start + hay[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// True when the text before a period ends in an initial ("Monkey D.") or a common abbreviation ("Dr.").
fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace()).next().unwrap_or("");
    // "J. Smith", and a life's "(b. 1950)", "(d. 851)" or "(c. 1450)".
    let single_initial = word.chars().count() == 1 && word.chars().all(char::is_uppercase)
        || word.strip_prefix('(').is_some_and(|w| w.chars().count() == 1 && w.chars().all(char::is_alphabetic));
    // A month shortened before its day: "On Dec. 10, 1817".
    let month = ["Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec"].contains(&word);
    single_initial || month || ["Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "vs", "etc", "e.g", "i.e"].contains(&word)
}

/// Splits prose into sentences at `.`, `!` or `?` followed by white space, and at blank lines: a heading, a list
/// item or a table row is a sentence of its own even without a full stop.
pub fn sentences(text: &str) -> Vec<&str> {
    text.split("\n\n").flat_map(paragraph_sentences).collect()
}

fn paragraph_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if c == '.' && is_abbreviation(&text[start..i]) {
            continue;
        }
        // A question or exclamation mark that a lowercase word follows is inside its sentence: the `?` operator
        // in "the ? operator calls from", a quoted "Why? asked nobody".
        if matches!(c, '!' | '?') && text[i + 1..].trim_start().starts_with(|n: char| n.is_lowercase()) {
            continue;
        }
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) {
            let s = text[start..=i].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Words that may sit inside a name without being capitalised ("Ermengarde of Tours", "One Piece").
pub(crate) const NAME_CONNECTORS: &[&str] = &[
    "of", "de", "la", "le", "von", "van", "der", "den", "du", "the", "al", "bin", "ibn", "y", "am", "da", "di", "del",
    "zu", "upon",
];

/// Question and sentence-initial words that are capitalised without being names.
const NOT_NAMES: &[&str] = &[
    "Which",
    "What",
    "Who",
    "Whom",
    "Whose",
    "How",
    "When",
    "Where",
    "Why",
    "Is",
    "Are",
    "Was",
    "Were",
    "Did",
    "Do",
    "Does",
    "The",
    "A",
    "An",
    "In",
    "On",
    "Of",
    "And",
    "Compare",
    "Tell",
    "Give",
    "List",
    "Name",
    "Explain",
    "Can",
    "Could",
    "Should",
    "Would",
    "He",
    "She",
    "It",
    "They",
    "His",
    "Her",
    "Their",
    "This",
    "That",
    "These",
    "Those",
    "Both",
    "If",
    "For",
    "As",
    "At",
    "By",
    "From",
    "With",
    "Or",
    // French, Spanish and German question words and openers.
    "Qui",
    "Que",
    "Quoi",
    "Quand",
    "Où",
    "Quel",
    "Quelle",
    "Quels",
    "Quelles",
    "Comment",
    "Pourquoi",
    "Combien",
    "Comparer",
    "Et",
    "Quién",
    "Qué",
    "Cuándo",
    "Dónde",
    "Cuál",
    "Cuáles",
    "Cómo",
    "Cuántos",
    "Cuántas",
    "Por",
    "Comparar",
    "Wer",
    "Was",
    "Wann",
    "Wo",
    "Welche",
    "Welcher",
    "Welches",
    "Wie",
    "Warum",
    "Vergleiche",
    "Und",
];

/// Prepositions and conjunctions that open a question only because it begins with a clause before the one that
/// asks: "Besides join, which function …", "Using a RegexSet, how many …". Only a text's first word is read so: a
/// title may begin with one later on ("… first, Before Sunrise or …?").
const OPENERS: &[&str] = &[
    "Besides", "After", "Before", "Since", "Until", "Unlike", "Like", "Using", "Without", "Within", "Inside",
    "Outside", "Under", "Apart", "Except", "Although", "Though", "While", "Once", "Given", "Assuming", "Suppose",
    "Despite", "During", "Between", "Among", "Beyond", "Instead", "Unless", "Whenever", "Whether", "Because",
];

/// Capitalised word runs that look like names: "Lothair II", "Monkey D. Luffy", "Ermengarde of Tours".
/// Possessives are dropped; connectors are kept only between capitalised words.
pub fn name_spans(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut pending_connectors: Vec<String> = Vec::new();
    let flush = |current: &mut Vec<String>, pending: &mut Vec<String>, out: &mut Vec<String>| {
        pending.clear();
        if !current.is_empty() {
            let name = current.join(" ");
            if !out.contains(&name) {
                out.push(name);
            }
            current.clear();
        }
    };
    for (at, raw) in words.into_iter().enumerate() {
        // A parenthesis of several words bounds a name: "Victoria Falls (Tokaleya Tonga: …)" is two. One word in
        // parentheses is a title's disambiguation ("B Boy (Song)") and stays with it.
        let bare = raw.trim_end_matches(['?', '!', '.', ',', ';', ':']);
        let one_word = raw.starts_with(['(', '[']) && bare.ends_with([')', ']']);
        if raw.starts_with(['(', '[']) && !one_word {
            flush(&mut current, &mut pending_connectors, &mut out);
        }
        let closes = bare.ends_with([')', ']']) && !one_word;
        let ends_clause = closes || raw.ends_with([',', '?', '!', ';', ':']) || (raw.ends_with('.') && raw.len() > 3);
        let word =
            raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != '-' && c != '\'').trim_end_matches('.');
        let word = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
        let word = word.trim_matches('\'');
        let capitalised =
            word.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() && !current.is_empty());
        let opener = at == 0 && OPENERS.contains(&word);
        if capitalised && !opener && !(current.is_empty() && NOT_NAMES.contains(&word)) {
            current.append(&mut pending_connectors);
            current.push(word.to_string());
        } else if !current.is_empty() && NAME_CONNECTORS.contains(&word) {
            pending_connectors.push(word.to_string());
        } else {
            flush(&mut current, &mut pending_connectors, &mut out);
        }
        if ends_clause || raw.ends_with("'s") {
            flush(&mut current, &mut pending_connectors, &mut out);
        }
    }
    flush(&mut current, &mut pending_connectors, &mut out);
    out
}

/// An answer span as plain words: emphasis and code marks around it dropped ("`i32`" is "i32"), `None` when markup
/// is left inside it (a tag, a link, a table cell, a heading mark) or nothing is left. A short answer never
/// carries markup: a reader quoting "Attributes</span" or "Keyword](ch07-04…" has read the source, not the text.
pub fn plain_span(span: &str) -> Option<String> {
    const MARKS: &[char] = &['`', '*', '_', '~'];
    let text = span.trim().trim_matches(MARKS).trim();
    let markup = text.contains(['<', '>', '[', ']', '{', '}', '|', '`', '#', '\\']) || text.contains("://");
    (!text.is_empty() && !markup).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_span_is_plain_words() {
        assert_eq!(plain_span("`i32`").as_deref(), Some("i32"));
        assert_eq!(plain_span("**Mexico City**").as_deref(), Some("Mexico City"));
        assert_eq!(plain_span("max_body_size").as_deref(), Some("max_body_size"));
        for markup in [
            "Attributes</span",
            "Keyword](ch07-04-bringing-paths",
            "| retries |",
            "## Integer Types",
            "``",
            "see https://x.org",
        ] {
            assert_eq!(plain_span(markup), None, "{markup}");
        }
    }

    #[test]
    fn name_spans_find_names_and_drop_question_words() {
        let cases: &[(&str, &[&str])] = &[
            ("When did Lothair II's mother die?", &["Lothair II"]),
            ("How is Luffy related to Nami?", &["Luffy", "Nami"]),
            ("Which anime is Luffy in?", &["Luffy"]),
            ("His mother was Ermengarde of Tours, a noble.", &["Ermengarde of Tours"]),
            ("Compare Naruto and Bleach", &["Naruto", "Bleach"]),
            ("She was born in Frankfurt am Main in 1970.", &["Frankfurt am Main"]),
            ("what is the captain's name", &[]),
            ("Victoria Falls (Tokaleya Tonga: Mosi) is a waterfall", &["Victoria Falls", "Tokaleya Tonga", "Mosi"]),
            ("Where was the performer of song B Boy (Song) detained?", &["B Boy Song"]),
            ("Besides join, which function lets you create tasks?", &[]),
            ("Between Iain Banks and Irwin Shaw, who wrote more?", &["Iain Banks", "Irwin Shaw"]),
            ("Which film came out first, Before Sunrise or Heat?", &["Before Sunrise", "Heat"]),
        ];
        for (text, expected) in cases {
            assert_eq!(name_spans(text), expected.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{text}");
        }
    }

    #[test]
    fn a_name_is_the_same_with_a_word_in_the_plural() {
        assert!(same_name("Big Eye", "Big Eyes"));
        assert!(same_name("Old Church", "old churches"));
        assert!(!same_name("Big Eye", "Big Eyes Movie"));
        assert!(!same_name("Jon Smith", "Jones Smith"));
    }

    #[test]
    fn mentions_respects_word_boundaries() {
        assert!(mentions("Monkey D. Luffy is a pirate", "luffy"));
        assert!(!mentions("Luffyland", "luffy"));
        assert!(!mentions("anything", ""));
    }

    #[test]
    fn sentences_split_on_terminal_punctuation() {
        assert_eq!(sentences("One. Two! Three? Four"), vec!["One.", "Two!", "Three?", "Four"]);
        assert_eq!(sentences("Use the ? operator here. Done"), vec!["Use the ? operator here.", "Done"]);
        assert_eq!(sentences("Version 1.5 is out."), vec!["Version 1.5 is out."]);
        assert_eq!(
            sentences("Monkey D. Luffy sails. Dr. Kureha heals."),
            vec!["Monkey D. Luffy sails.", "Dr. Kureha heals."]
        );
        assert_eq!(
            sentences("Emma (d. 851) was a queen. She ruled."),
            vec!["Emma (d. 851) was a queen.", "She ruled."]
        );
        assert_eq!(
            sentences("On Dec. 10, 1817, it joined. Then more."),
            vec!["On Dec. 10, 1817, it joined.", "Then more."]
        );
        assert_eq!(
            sentences("Integer Types\n\nThey default to i32. See below\n\nOption: retries; Default: 3."),
            vec!["Integer Types", "They default to i32.", "See below", "Option: retries; Default: 3."]
        );
    }

    #[test]
    fn stems_join_related_word_forms() {
        assert_eq!(stem("created"), stem("creator"));
        assert_eq!(stem("directed"), stem("director"));
        assert_eq!(stem("films"), stem("film"));
        assert_eq!(stem("derive"), stem("derived"));
        assert_eq!(stem("derive"), stem("deriving"));
        assert_eq!(stem("title"), stem("titles"));
        assert_eq!(stem("place"), stem("places"));
        assert_eq!(stem("type"), stem("types"));
    }

    #[test]
    fn irregular_verb_forms_have_their_base() {
        assert_eq!(verb_base("became"), verb_base("become"));
        assert_eq!(verb_base("written"), verb_base("wrote"));
        assert_eq!(verb_base("write"), "write");
        assert_eq!(verb_base("joined"), "joined", "a regular form is left to stem");
        assert!(IRREGULAR_VERBS.windows(2).all(|p| p[0].0 < p[1].0), "the table is sorted by form");
    }

    #[test]
    fn content_words_drop_stopwords_and_repeats() {
        assert_eq!(content_words("Which anime is Luffy in, and which anime?"), vec!["anime", "luffy"]);
    }
}
