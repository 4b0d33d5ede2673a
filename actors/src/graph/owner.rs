//! The graph stage's claim on an SQLite graph file. SQLite is one file on one machine, so one process per data
//! directory serves the graph stage from it; several graph replicas need PostgreSQL. A second graph process on
//! the same file is refused at start-up with that reason, instead of two writers contending for the file.

use std::{
    fs::{File, OpenOptions, TryLockError},
    path::Path,
};

use anyhow::Context;

/// Held for as long as this process serves the graph stage; the operating system releases it when the process
/// exits, however it exits, so a restarted process can claim the file again at once.
#[derive(Debug)]
pub struct SqliteOwner {
    _lock: File,
}

/// Claims the SQLite graph in `dir` for this process's graph stage.
pub fn claim(dir: &Path) -> anyhow::Result<SqliteOwner> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    let path = dir.join("graph.sqlite.owner");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(SqliteOwner { _lock: file }),
        Err(TryLockError::WouldBlock) => anyhow::bail!(
            "cannot serve the graph stage from {}: another sleuth process serves it. The SQLite graph has one \
             owner per data directory; to run several graph replicas, give them PostgreSQL (database.url, \
             SLEUTH__DATABASE__URL or DATABASE_URL)",
            dir.join("graph.sqlite").display()
        ),
        Err(TryLockError::Error(e)) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_on_one_data_directory_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = claim(dir.path()).expect("the first claim");
        let err = claim(dir.path()).unwrap_err().to_string();
        assert!(err.contains("another sleuth process serves it") && err.contains("database.url"), "{err}");
        drop(first);
        claim(dir.path()).expect("claimed again once released");
    }
}
