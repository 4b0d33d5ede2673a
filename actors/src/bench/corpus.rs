//! `sleuth bench-corpus`: how cost grows with the corpus. Generates a synthetic corpus of any size in which every
//! question has a planted two-hop chain (a film's passage names its director, whose own passage gives the answer),
//! ingests it into a fresh index, asks the questions through the loop and as a single pass, and reports ingest
//! rate, index size on disk, peak RSS, latency and perfect@8 as one JSON object.

use std::{
    collections::HashSet,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::Context;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::json;

use crate::{
    access::Ownership,
    config::Config,
    eval::{self, Question},
    ingest::{self, Document},
    node::Node,
};

/// The corpus and its questions: passages about people, films and towns, each film directed by a person who has a
/// passage of their own, so every film starts a chain. Questions ask about a film's director: where they were
/// born, when they died. The same `seed` and sizes give the same corpus.
pub fn synthetic(passages: usize, questions: usize, seed: u64) -> (Vec<Document>, Vec<Question>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut names = Names::default();
    // A tenth towns, the rest people and films about one to one, so every film has a director with a passage.
    let towns: Vec<String> = (0..(passages / 10).max(1)).map(|_| names.town(&mut rng)).collect();
    let people_n = ((passages - towns.len().min(passages)) / 2).max(1);
    let people: Vec<Person> = (0..people_n).map(|_| Person::new(&mut rng, &mut names, &towns)).collect();
    let films_n = passages.saturating_sub(towns.len() + people.len());
    let mut docs = Vec::with_capacity(passages);
    let mut planted = Vec::with_capacity(films_n);
    for (i, town) in towns.iter().enumerate() {
        let region = names.word(&mut rng);
        let population = rng.random_range(800..900_000);
        let founded = rng.random_range(1100..1900);
        let text = format!(
            "{town} is a town in the {region} region, with a population of {population}. It was first recorded in \
             {founded}, and its economy rests on {}.",
            pick(&mut rng, INDUSTRIES)
        );
        docs.push(doc(format!("town-{i}"), town.clone(), text));
    }
    for (i, p) in people.iter().enumerate() {
        docs.push(doc(format!("person-{i}"), p.name.clone(), p.text()));
    }
    for i in 0..films_n {
        let director = rng.random_range(0..people.len());
        let title = names.film(&mut rng);
        let year = rng.random_range(1925..2024);
        let star = &people[rng.random_range(0..people.len())].name;
        let text = format!(
            "{title} is a {year} {} film directed by {}. It stars {star}, and tells of {}.",
            pick(&mut rng, GENRES),
            people[director].name,
            pick(&mut rng, PLOTS)
        );
        docs.push(doc(format!("film-{i}"), title.clone(), text));
        planted.push((title, director));
    }
    // Questions over films spread through the corpus, alternating what they ask of the director.
    let step = (planted.len() / questions.max(1)).max(1);
    let questions = planted
        .iter()
        .step_by(step)
        .take(questions)
        .enumerate()
        .map(|(i, (film, director))| {
            let p = &people[*director];
            let (question, answer) = match i % 2 {
                0 => (format!("Where was the director of film {film} born?"), p.born_in.clone()),
                _ => (format!("When did the director of film {film} die?"), p.died.clone()),
            };
            Question {
                id: format!("planted-{i}"),
                question,
                gold_titles: vec![film.clone(), p.name.clone()],
                multihop: true,
                answer: Some(answer),
            }
        })
        .collect();
    (docs, questions)
}

fn doc(id: String, title: String, text: String) -> Document {
    Document { parts: Vec::new(), id, title, text, metadata: Default::default(), ownership: Ownership::shared() }
}

fn pick<'a>(rng: &mut StdRng, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

const INDUSTRIES: &[&str] =
    &["fishing", "textiles", "a river port", "timber", "wine", "tourism", "coal mining", "a railway works"];
const GENRES: &[&str] = &["drama", "comedy", "war", "western", "crime", "musical", "silent", "documentary"];
const PLOTS: &[&str] = &[
    "a family divided by an inheritance",
    "two brothers who run a failing circus",
    "a journalist who uncovers a fraud",
    "a soldier's long walk home",
    "a singer's first season in the capital",
    "a village that hides a fugitive",
];
const JOBS: &[&str] = &["film director", "screenwriter", "actor", "producer", "playwright", "painter"];
const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

struct Person {
    name: String,
    job: &'static str,
    born: String,
    born_in: String,
    died: String,
    died_in: String,
}

impl Person {
    fn new(rng: &mut StdRng, names: &mut Names, towns: &[String]) -> Person {
        let year = rng.random_range(1880..1960);
        let date = |rng: &mut StdRng, year: i32| {
            format!("{} {} {year}", rng.random_range(1..29), MONTHS[rng.random_range(0..MONTHS.len())])
        };
        let born = date(rng, year);
        let span = rng.random_range(30..90);
        let died = date(rng, year + span);
        let town = |rng: &mut StdRng| towns[rng.random_range(0..towns.len())].clone();
        Person { name: names.person(rng), job: pick(rng, JOBS), born, born_in: town(rng), died, died_in: town(rng) }
    }

    fn text(&self) -> String {
        let Person { name, job, born, born_in, died, died_in } = self;
        format!(
            "{name} ({born} – {died}) was a {job}. {name} was born in {born_in} and worked there for most of their \
             life. They died in {died_in} on {died}."
        )
    }
}

/// Made-up names, each title used once: words of two or three syllables.
#[derive(Default)]
struct Names {
    used: HashSet<String>,
}

const ONSETS: &[&str] = &["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr"];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou"];
const CODAS: &[&str] = &["", "", "n", "r", "s", "l", "th"];
const FILM_NOUNS: &[&str] = &[
    "Sunrise", "Harbour", "Crossing", "Letters", "Garden", "Winter", "Return", "Station", "Voyage", "Mirror",
    "Frontier", "Orchard", "Lantern", "Summer", "Tide", "Shadow",
];
const TOWN_ENDINGS: &[&str] = &["ton", "burg", "ford", "wick", "stad", "mouth", "field", "bridge"];

impl Names {
    fn word(&self, rng: &mut StdRng) -> String {
        let syllables = rng.random_range(2..=3);
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(pick(rng, ONSETS));
            w.push_str(pick(rng, VOWELS));
            w.push_str(pick(rng, CODAS));
        }
        let mut chars = w.chars();
        chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
    }

    fn unique(&mut self, rng: &mut StdRng, make: impl Fn(&Self, &mut StdRng) -> String) -> String {
        loop {
            let name = make(self, rng);
            if self.used.insert(name.to_lowercase()) {
                return name;
            }
        }
    }

    fn person(&mut self, rng: &mut StdRng) -> String {
        self.unique(rng, |n, rng| format!("{} {}", n.word(rng), n.word(rng)))
    }

    fn film(&mut self, rng: &mut StdRng) -> String {
        self.unique(rng, |n, rng| format!("{} {}", n.word(rng), pick(rng, FILM_NOUNS)))
    }

    fn town(&mut self, rng: &mut StdRng) -> String {
        self.unique(rng, |n, rng| format!("{}{}", n.word(rng), pick(rng, TOWN_ENDINGS)))
    }
}

/// Generates the corpus, ingests it into a fresh index under the data directory (embedded) or into the configured
/// Qdrant server, asks the questions through the loop and then as a single pass, and reports what it cost.
pub async fn run(mut config: Config, passages: usize, questions: usize) -> anyhow::Result<serde_json::Value> {
    anyhow::ensure!(passages >= 100, "--passages must be at least 100, so the corpus has chains to ask about");
    let started = Instant::now();
    let (docs, questions) = synthetic(passages, questions, 7);
    let generated = started.elapsed();
    config.retrieval.demo_corpus = false;
    config.nats.url = None;
    let dir = config.data_dir().join("bench-corpus").join(passages.to_string());
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    config.data_dir = Some(dir.clone());
    let node = Node::embedded(config.clone()).await?;
    let retriever = node.retriever.clone().context("the embedded node has no index")?;
    let summary = ingest::ingest(&retriever, docs, false).await?;
    let index_bytes = disk_bytes(&dir);
    let rss_after_ingest = peak_rss_bytes();
    let (looped, _) = eval::score(&node, &retriever, questions.clone(), false).await?;
    let (single, _) = eval::score(&node, &retriever, questions, true).await?;
    node.shutdown().await;
    let summarise = |scored: &[eval::Scored], mode: &str| {
        let report = eval::to_json(scored, mode);
        let all = &report["subsets"][0];
        json!({"p50_ms": all["latency_p50_ms"], "p95_ms": all["latency_p95_ms"], "perfect_at_8": all["perfect_retrieval_at_8"], "exact_match": all["exact_match"], "f1": all["f1"]})
    };
    let seconds = |d: Duration| d.as_secs_f64();
    Ok(json!({
        "passages": passages,
        "questions": looped.len(),
        "index": retriever.describe(),
        "embedder": retriever.embedder.as_ref().map(|e| e.id().to_string()),
        "generate_s": seconds(generated),
        "ingest": {"documents": summary.documents, "chunks": summary.chunks, "mention_links": summary.links, "seconds": seconds(summary.elapsed), "documents_per_s": summary.documents as f64 / seconds(summary.elapsed).max(1e-9)},
        "index_bytes_on_disk": index_bytes,
        "peak_rss_bytes_after_ingest": rss_after_ingest,
        "peak_rss_bytes": peak_rss_bytes(),
        "loop": summarise(&looped, "loop"),
        "single_pass": summarise(&single, "single pass"),
    }))
}

/// Bytes the files under `dir` occupy on disk (allocated blocks, not apparent length).
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}

/// The process's peak resident set so far (Linux's `VmHWM`); `None` where /proc does not say.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_question_has_its_chain_in_the_corpus() {
        let (docs, questions) = synthetic(1_000, 20, 7);
        assert_eq!(docs.len(), 1_000);
        assert_eq!(questions.len(), 20);
        let titles: HashSet<&str> = docs.iter().map(|d| d.title.as_str()).collect();
        assert_eq!(titles.len(), docs.len(), "titles are unique");
        for q in &questions {
            let [film, director] = &q.gold_titles[..] else { panic!("two gold titles") };
            let film_doc = docs.iter().find(|d| &d.title == film).expect("the film's passage");
            assert!(film_doc.text.contains(director.as_str()), "the film's passage names its director");
            let person = docs.iter().find(|d| &d.title == director).expect("the director's passage");
            assert!(person.text.contains(q.answer.as_deref().unwrap()), "the director's passage gives the answer");
            assert!(!q.question.contains(director.as_str()), "the question does not name the bridge");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_corpus() {
        let (a, _) = synthetic(300, 5, 1);
        let (b, _) = synthetic(300, 5, 1);
        assert!(a.iter().zip(&b).all(|(x, y)| x.title == y.title && x.text == y.text));
    }
}
