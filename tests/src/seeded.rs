//! Data directories with the bundled demo graph and corpus already indexed. The first call in a test binary
//! indexes them once into a template (embedding them takes tens of seconds on a busy 2-core machine); every
//! deployment then starts from a copy, so its `sleuth serve` processes are ready in seconds and the tests do not
//! race one another's start-up on a loaded CI machine.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use sleuth_actors::config::Config;

/// Fills `dest` (created if missing) with a copy of the indexed demo data.
pub fn seed_data_dir(dest: &Path) {
    copy_dir(template(), dest)
        .unwrap_or_else(|e| panic!("cannot copy the seeded data directory to {}: {e}", dest.display()));
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
                let config = Config { data_dir: Some(data_dir.clone()), ..Config::default() };
                let retriever = sleuth_actors::bootstrap::open_retriever(&config).await.unwrap_or_else(|e| {
                    panic!(
                        "cannot index the demo data into {} (is the model pulled? `sleuth models pull`): {e:#}",
                        data_dir.display()
                    )
                });
                // Closing the graph checkpoints its WAL, and dropping the retriever flushes the index, so the
                // directory is whole and nothing holds it open while it is copied.
                if let Some(graph) = &retriever.graph {
                    let closing = tokio::time::timeout(std::time::Duration::from_secs(60), graph.close()).await;
                    assert!(
                        closing.is_ok(),
                        "the seeded graph database in {} did not close in 60 s",
                        data_dir.display()
                    );
                }
                drop(retriever);
            });
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
        let source = entry.path();
        let target = to.join(entry.file_name());
        let copied = match entry.file_type()? {
            kind if kind.is_dir() => copy_dir(&source, &target),
            // A closed database's WAL (if one is left) is replayed on open; its shared-memory index is rebuilt.
            _ if entry.file_name().to_string_lossy().ends_with("-shm") => Ok(()),
            _ => std::fs::copy(&source, &target).map(drop),
        };
        match copied {
            // The index's background flush may still remove a temporary file it listed a moment ago: what is
            // gone from the template was not part of it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !source.exists() => {}
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", source.display()))),
            Ok(()) => {}
        }
    }
    Ok(())
}
