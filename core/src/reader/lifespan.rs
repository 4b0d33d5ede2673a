//! A life's opening parenthesis, as English biographies write it after the name: "(c. 1580 in Lier – 17 May 1662
//! in The Hague)", "(22 September 1869, Évreux – 9 December 1925, Paris)", "(born May 24, 1946 in St. John's)".
//! What stands before the dash is the birth, what stands after it the death, each a date and perhaps a place.

use std::sync::LazyLock;

use regex::Regex;

use super::spans;
use crate::text;

/// A year of three digits, which the date spans do not take alone ("2005" they do): inside a life's span it is
/// one ("(c. 848 – after 890)").
static EARLY_YEAR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d{3}\b").expect("static regex"));

/// The date and the place of one end of a life, as the text writes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct End {
    pub date: Option<String>,
    pub place: Option<String>,
}

/// A life's two ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Life {
    pub birth: End,
    pub death: End,
}

/// The dashes a life's span is written with.
const DASHES: &[&str] = &[" – ", " — ", " - ", "–", "—"];

/// The life a text about `subject` opens with: from the first parenthesis, in its first sentence, after a word of
/// the subject's name, that holds a date.
pub fn life(text: &str, subject: &str) -> Option<Life> {
    // The first sentence, but a parenthesis it opens is read to its close: the splitter may end a sentence at an
    // abbreviation inside it ("(pl: Siemowit IV Młodszy; ca. 1353/1356 – 21 January 1426)").
    let first = text::sentences(text).into_iter().next()?;
    let start = text.find(first)?;
    let sentence = &text[start..];
    let limit = first.len();
    let named = text::content_words(subject);
    let dated = |p: &str| !spans::dates(p).is_empty() || dash(p).is_some() && EARLY_YEAR.is_match(p);
    let mut from = 0;
    while let Some(open) = sentence[from..].find('(').map(|i| i + from).filter(|open| *open < limit) {
        let close = sentence[open..].find(')').map_or(sentence.len(), |i| i + open);
        let inside = &sentence[open + 1..close];
        from = close.min(sentence.len() - 1) + 1;
        if !text::tokens(&sentence[..open]).iter().any(|w| named.contains(w)) || !dated(inside) {
            continue;
        }
        // "born Miriam Bilenkin; March 16, 1911, Dayton, Ohio – …": the part with the dates.
        let part = inside.split(';').find(|p| dated(p)).unwrap_or(inside);
        let split = dash(part);
        return Some(match split {
            Some((at, len)) => Life { birth: end(&part[..at]), death: end(&part[at + len..]) },
            None => {
                let lower = part.trim_start().to_lowercase();
                let died = lower.starts_with("died") || lower.starts_with("d.");
                let one = end(part);
                if died { Life { death: one, ..Life::default() } } else { Life { birth: one, ..Life::default() } }
            }
        });
    }
    None
}

/// A birth year run into the death date where a text lost its dash: "(8 March 181522 February 1888)",
/// "(May 3, 1869March 28, 1950)". The year is the first four digits.
static RUN_ON: LazyLock<Regex> = LazyLock::new(|| {
    const MONTH: &str = "(?:January|February|March|April|May|June|July|August|September|October|November|December)";
    Regex::new(&format!(r"\b\d{{4}}(?:\d{{1,2}} {MONTH}\b|{MONTH} \d)")).expect("static regex")
});

/// Where the first dash of a life's span stands, and its length; where the dash was lost between a year and the
/// date after it, the place it stood, of length 0.
fn dash(part: &str) -> Option<(usize, usize)> {
    let written = DASHES.iter().filter_map(|d| part.find(d).map(|i| (i, d.len()))).min_by_key(|(i, _)| *i);
    written.or_else(|| RUN_ON.find(part).map(|m| (m.start() + 4, 0)))
}

/// One end: its date, and the place written after it ("17 May 1662 in The Hague", "1869, Évreux").
fn end(part: &str) -> End {
    let early = || EARLY_YEAR.find(part).map(|m| (m.start(), m.as_str().to_string()));
    let Some((at, date)) = spans::dates(part).into_iter().next().map(|d| (d.at, d.text)).or_else(early) else {
        return End::default();
    };
    let after = part[at + date.len()..].trim_start_matches([',', ' ']);
    let after = after.strip_prefix("in ").or_else(|| after.strip_prefix("at ")).unwrap_or(after).trim();
    let place = (!after.is_empty()
        && after.starts_with(char::is_uppercase)
        && !after.chars().any(|c| c.is_ascii_digit())
        && after
            .split_whitespace()
            .all(|w| w.starts_with(|c: char| !c.is_lowercase()) || ["of", "de", "upon", "am", "on"].contains(&w)))
    .then(|| after.trim_end_matches(['.', ',']).to_string());
    End { date: Some(date), place }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_life_is_read_birth_before_the_dash_and_death_after() {
        let l = life(
            "Margaretha van Mechelen (c. 1580 in Lier – 17 May 1662 in The Hague) was a noble.",
            "Margaretha van Mechelen",
        )
        .unwrap();
        assert_eq!((l.birth.place.as_deref(), l.death.place.as_deref()), (Some("Lier"), Some("The Hague")));
        assert_eq!(l.death.date.as_deref(), Some("17 May 1662"));
        let l = life(
            "André Beaunier (22 September 1869, Évreux – 9 December 1925, Paris) was a French writer.",
            "André Beaunier",
        )
        .unwrap();
        assert_eq!((l.birth.date.as_deref(), l.birth.place.as_deref()), (Some("22 September 1869"), Some("Évreux")));
        let l = life("Marion Byron (born Miriam Bilenkin; March 16, 1911, Dayton, Ohio – July 5, 1985, Santa Monica, California) was an actress.", "Marion Byron").unwrap();
        assert_eq!(l.birth.place.as_deref(), Some("Dayton, Ohio"));
        let l =
            life("Prince Harald of Denmark (8 October 1876 – 30 March 1949) was a prince.", "Prince Harald of Denmark")
                .unwrap();
        assert_eq!((l.birth.date.as_deref(), l.birth.place), (Some("8 October 1876"), None));
        let l = life(
            "William MacGillivray (born May 24, 1946 in St. John's, Newfoundland) is a director.",
            "William MacGillivray",
        )
        .unwrap();
        assert_eq!((l.birth.place.as_deref(), l.death), (Some("St. John's, Newfoundland"), End::default()));
        assert_eq!(life("The war (1914 – 1918) was long.", "Harald"), None, "a parenthesis after another name");
        let l = life("Onneca Fortúnez (c. 848 – after 890) was a Basque princess.", "Onneca Fortúnez").unwrap();
        assert_eq!((l.birth.date.as_deref(), l.death.date.as_deref()), (Some("848"), Some("890")));
        assert_eq!(life("Leofric (pop. 350) was a village.", "Leofric"), None, "three digits without a span");
        let l = life(
            "Siemowit IV (Ziemowit IV), also known as Siemowit IV the Younger (pl: \"Siemowit IV Młodszy\"; ca. \
             1353/1356 – 21 January 1426) , was a Polish prince.",
            "Siemowit IV, Duke of Masovia",
        )
        .unwrap();
        assert_eq!(l.death.date.as_deref(), Some("21 January 1426"), "read past the abbreviation's full stop");
        let l = life("Leofric (died 31 August 1057) was an Earl of Mercia.", "Leofric").unwrap();
        assert_eq!((l.death.date.as_deref(), l.birth), (Some("31 August 1057"), End::default()));
    }

    #[test]
    fn a_life_whose_dash_was_lost_is_split_after_the_birth_year() {
        let l = life("Éric Rohmer (21 March 192011 January 2010) was a French director.", "Éric Rohmer").unwrap();
        assert_eq!(
            (l.birth.date.as_deref(), l.death.date.as_deref()),
            (Some("21 March 1920"), Some("11 January 2010"))
        );
        let l = life("Julia Arthur (May 3, 1869March 28, 1950) was an actress.", "Julia Arthur").unwrap();
        assert_eq!((l.birth.date.as_deref(), l.death.date.as_deref()), (Some("May 3, 1869"), Some("March 28, 1950")));
        let l = life("Cheryl Dunye (born May 13, 1966) is a director.", "Cheryl Dunye").unwrap();
        assert_eq!((l.birth.date.as_deref(), l.death), (Some("May 13, 1966"), End::default()));
    }
}
