//! Which files an ingestion reads, and what it skipped: directories recurse, include and exclude globs choose
//! among the files found in them, and a file that cannot be read (too large, damaged, encrypted, of an unknown
//! type) is skipped with the reason while the rest are read.

use std::path::{Path, PathBuf};

use anyhow::Context;
use globset::{Glob, GlobSet, GlobSetBuilder};

use super::{Document, formats};

/// Largest file read, in bytes: a bigger one is skipped, naming this limit.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Which files found in a directory are read: those of a known type that match an include glob (when any is
/// given) and no exclude glob, each matched against the path below the directory named (`guide/*.md`,
/// `**/drafts/**`). A file named on its own is always read.
#[derive(Debug, Default)]
pub struct Selection {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl Selection {
    pub fn new(include: &[String], exclude: &[String]) -> anyhow::Result<Selection> {
        let set = |globs: &[String]| -> anyhow::Result<Option<GlobSet>> {
            if globs.is_empty() {
                return Ok(None);
            }
            let mut builder = GlobSetBuilder::new();
            for glob in globs {
                builder.add(Glob::new(glob).with_context(|| format!("bad glob {glob:?}"))?);
            }
            Ok(Some(builder.build()?))
        };
        Ok(Selection { include: set(include)?, exclude: set(exclude)? })
    }

    fn takes(&self, relative: &Path) -> bool {
        self.include.as_ref().is_none_or(|g| g.is_match(relative))
            && !self.exclude.as_ref().is_some_and(|g| g.is_match(relative))
    }
}

/// A file not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// What a read found.
#[derive(Debug, Default)]
pub struct Read {
    pub documents: Vec<Document>,
    /// Files read, of every type.
    pub files: usize,
    /// Pages of the paged files read (PDF).
    pub pages: usize,
    pub skipped: Vec<Skipped>,
    /// The time reading took (finding, reading and converting the files; no embedding).
    pub elapsed: std::time::Duration,
}

impl std::fmt::Display for Read {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.elapsed.as_secs_f64().max(1e-9);
        write!(f, "{} files", self.files)?;
        if self.pages > 0 {
            write!(f, " ({} PDF pages, {:.0} pages/s)", self.pages, self.pages as f64 / seconds)?;
        }
        write!(
            f,
            " read in {:.1} s ({:.0} files/s), {} skipped",
            self.elapsed.as_secs_f64(),
            self.files as f64 / seconds,
            self.skipped.len()
        )
    }
}

/// Reads every file under `paths` that `selection` takes, in path order; a file that cannot be read is skipped
/// with its reason. Fails only when a directory cannot be listed.
pub fn read(paths: &[PathBuf], selection: &Selection) -> anyhow::Result<Read> {
    let started = std::time::Instant::now();
    let mut found = Vec::new();
    let mut out = Read::default();
    for path in paths {
        if path.is_dir() {
            for entry in walkdir::WalkDir::new(path).follow_links(true) {
                let entry = entry.with_context(|| format!("cannot list {}", path.display()))?;
                let file = entry.path();
                let known = file
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| formats::EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
                if entry.file_type().is_file() && known && selection.takes(file.strip_prefix(path).unwrap_or(file)) {
                    found.push(file.to_path_buf());
                }
            }
        } else if path.exists() {
            found.push(path.clone());
        } else {
            out.skipped.push(Skipped { path: path.clone(), reason: "does not exist".into() });
        }
    }
    found.sort();
    found.dedup();
    for file in found {
        match read_one(&file) {
            Ok(documents) => {
                out.files += 1;
                // A page cut into sections is several parts: count it once.
                out.pages += documents
                    .iter()
                    .map(|d| d.parts.iter().filter_map(|p| p.page).collect::<std::collections::BTreeSet<_>>().len())
                    .sum::<usize>();
                out.documents.extend(documents);
            }
            Err(e) => out.skipped.push(Skipped { path: file, reason: format!("{e:#}") }),
        }
    }
    out.elapsed = started.elapsed();
    Ok(out)
}

/// Reads every document under `paths` (directories recursively), failing on the first file that cannot be read:
/// for corpora that must be read whole (`sleuth eval`). `sleuth ingest docs` reads with [`read`] instead,
/// which skips a bad file and says why.
pub fn read_paths(paths: &[PathBuf]) -> anyhow::Result<Vec<Document>> {
    let found = read(paths, &Selection::default())?;
    if let Some(skipped) = found.skipped.first() {
        anyhow::bail!("{}: {}", skipped.path.display(), skipped.reason);
    }
    Ok(found.documents)
}

fn read_one(file: &Path) -> anyhow::Result<Vec<Document>> {
    let size = std::fs::metadata(file).context("cannot read it")?.len();
    if size > MAX_FILE_BYTES {
        anyhow::bail!("{size} bytes, more than the {MAX_FILE_BYTES} a file may have");
    }
    let bytes = std::fs::read(file).context("cannot read it")?;
    formats::read(file, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_recurse_globs_choose_and_a_bad_file_is_skipped_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("guide/drafts")).unwrap();
        std::fs::write(root.join("guide/a.md"), "# A\n\nAlpha.").unwrap();
        std::fs::write(root.join("guide/b.txt"), "Beta.").unwrap();
        std::fs::write(root.join("guide/drafts/c.md"), "# C\n\nDraft.").unwrap();
        std::fs::write(root.join("guide/broken.pdf"), "not a pdf").unwrap();
        std::fs::write(root.join("guide/image.png"), "png").unwrap();
        let all = read(&[root.to_path_buf()], &Selection::default()).unwrap();
        let ids: Vec<&str> = all.documents.iter().map(|d| d.title.as_str()).collect();
        assert_eq!(ids, ["A", "b", "C"], "every known type, recursively, in path order; .png is not one");
        assert_eq!(all.skipped.len(), 1, "{:?}", all.skipped);
        assert!(all.skipped[0].path.ends_with("broken.pdf") && all.skipped[0].reason.contains("PDF"));

        let selection = Selection::new(&["guide/**/*.md".into()], &["**/drafts/**".into()]).unwrap();
        let chosen = read(&[root.to_path_buf()], &selection).unwrap();
        assert_eq!(chosen.documents.iter().map(|d| d.title.as_str()).collect::<Vec<_>>(), ["A"]);
        assert!(chosen.skipped.is_empty());

        let missing = read(&[root.join("nope.md")], &Selection::default()).unwrap();
        assert_eq!(missing.skipped[0].reason, "does not exist");
        assert!(Selection::new(&["a[".into()], &[]).unwrap_err().to_string().contains("bad glob"));
    }
}
