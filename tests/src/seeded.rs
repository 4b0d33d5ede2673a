//! Data directories with the bundled demo graph and corpus already indexed. The first call in a test binary
//! indexes them once into a template (embedding them takes tens of seconds on a busy 2-core machine); every
//! deployment then starts from a copy, so its `sleuth serve` processes are ready in seconds and the tests do not
//! race one another's start-up on a loaded CI machine.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use sleuth_actors::{config::Config, retrieval::Retriever};

/// Fills `dest` (created if missing) with a copy of the indexed demo data.
pub fn seed_data_dir(dest: &Path) {
    copy_dir(template(), dest).unwrap_or_else(|e| panic!("cannot copy the seeded data directory to {}: {e}", dest.display()));
}

fn template() -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = tempfile::Builder::new().prefix("sleuth-seeded-").tempdir().expect("temporary directory").keep();
        let data_dir = dir.clone();
        // Its own runtime on its own thread: the caller may already be inside a tokio runtime.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
            runtime.block_on(async {
                let mut config = Config::default();
                config.data_dir = Some(data_dir.clone());
                let retriever = Retriever::open(&config).await.unwrap_or_else(|e| {
                    panic!("cannot index the demo data into {} (is the model pulled? `sleuth models pull`): {e:#}", data_dir.display())
                });
                // Dropping the retriever flushes the index and closes the graph database, so the copy is whole.
                drop(retriever);
            });
            // SQLite's connections close on their own threads; the last one checkpoints the WAL and removes it.
            let pending = || ["graph.sqlite-wal", "graph.sqlite-shm"].iter().any(|f| data_dir.join(f).exists());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while pending() {
                assert!(std::time::Instant::now() < deadline, "the seeded graph database in {} was never closed", data_dir.display());
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
        .join()
        .expect("indexing the demo data panicked");
        dir
    })
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
