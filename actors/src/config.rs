//! Configuration: one serde tree with defaults in code, read from an optional TOML file and `SLEUTH__SECTION__KEY`
//! environment overrides. [`ENV_VARS`] lists every environment variable sleuth reads.

use std::{path::PathBuf, time::Duration};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use serde::{Deserialize, Serialize};

/// Every environment variable sleuth reads, with what it does. `sleuth --help` and the README point here.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("SLEUTH_CONFIG", "path of a TOML configuration file"),
    ("SLEUTH__<SECTION>__<KEY>", "overrides one configuration key, e.g. SLEUTH__LOOP__MAX_TURNS_DEEP=8"),
    ("SLEUTH__NATS__URL", "set: distributed mode over NATS JetStream; unset: embedded mode"),
    ("NATS_URL", "fallback for SLEUTH__NATS__URL"),
    ("SLEUTH__DATA_DIR", "embedded data directory (default $XDG_DATA_HOME/sleuth)"),
    ("RUST_LOG", "log filter, e.g. sleuth_actors=debug"),
];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where the embedded index lives; `None` means `$XDG_DATA_HOME/sleuth`.
    pub data_dir: Option<PathBuf>,
    pub nats: NatsConfig,
    #[serde(rename = "loop")]
    pub loop_: LoopConfig,
    pub stages: StagesConfig,
    pub retrieval: RetrievalConfig,
    pub debug: DebugConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NatsConfig {
    /// `None` selects the embedded mode.
    pub url: Option<String>,
    pub prefix: String,
    /// Appended to stream, consumer and bucket names so several deployments can share one server.
    pub suffix: String,
    pub ack_wait_ms: u64,
    pub max_deliver: i64,
    pub duplicate_window_s: u64,
    /// How long a request's loop state is kept.
    pub loop_ttl_s: u64,
    pub events_max_age_s: u64,
}

impl Default for NatsConfig {
    fn default() -> Self {
        NatsConfig {
            url: None,
            prefix: sleuth_messages::subjects::DEFAULT_PREFIX.to_string(),
            suffix: String::new(),
            ack_wait_ms: 30_000,
            max_deliver: 5,
            duplicate_window_s: 120,
            loop_ttl_s: 3600,
            events_max_age_s: 3600,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopConfig {
    pub max_turns_simple: u32,
    pub max_turns_standard: u32,
    pub max_turns_deep: u32,
    pub no_new_information_rounds: u32,
    pub max_zero_result_steps: u32,
    pub max_hits_per_search: u32,
    /// 0 means no token budget (the deterministic agents use no tokens).
    pub token_budget: u32,
    /// Default time budget of a request.
    pub timeout_ms: u64,
    /// Upper bound for a request's own `timeout_ms`.
    pub max_timeout_ms: u64,
    /// Longest accepted question, in bytes.
    pub max_query_bytes: usize,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            max_turns_simple: 2,
            max_turns_standard: 5,
            max_turns_deep: 10,
            no_new_information_rounds: 2,
            max_zero_result_steps: 3,
            max_hits_per_search: 8,
            token_budget: 0,
            timeout_ms: 60_000,
            max_timeout_ms: 300_000,
            max_query_bytes: 4096,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StagesConfig {
    /// Workers per stage in this process.
    pub workers: usize,
}

impl Default for StagesConfig {
    fn default() -> Self {
        StagesConfig { workers: 2 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrievalConfig {
    /// Hits per search when the intent does not say.
    pub top_k: u32,
    /// Ingest the bundled demo corpus when the embedded index is empty.
    pub demo_corpus: bool,
    /// Words per chunk and overlap between chunks at ingestion.
    pub chunk_words: usize,
    pub chunk_overlap_words: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig { top_k: 8, demo_corpus: true, chunk_words: 180, chunk_overlap_words: 30 }
    }
}

/// Knobs for tests and demos; never needed in production.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugConfig {
    /// Every stage in this process sleeps this long before its work (to make crash tests land mid-request).
    pub stage_delay_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error(transparent)]
    Figment(#[from] Box<figment::Error>),
}

impl Config {
    /// Defaults, then the TOML file (`--config` or `SLEUTH_CONFIG`), then `SLEUTH__…` variables, then `NATS_URL`.
    pub fn load(file: Option<PathBuf>) -> Result<Config, ConfigError> {
        let file = file.or_else(|| std::env::var_os("SLEUTH_CONFIG").map(PathBuf::from));
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = &file {
            if !path.exists() {
                return Err(ConfigError::Invalid(format!("config file {} does not exist", path.display())));
            }
            figment = figment.merge(Toml::file(path));
        }
        figment = figment.merge(Env::prefixed("SLEUTH__").split("__"));
        let mut config: Config = figment.extract().map_err(Box::new)?;
        // An empty variable means unset, as in most tools: `SLEUTH__NATS__URL= sleuth ask …` runs embedded.
        config.nats.url = config.nats.url.filter(|u| !u.trim().is_empty());
        if config.nats.url.is_none()
            && let Ok(url) = std::env::var("NATS_URL")
            && !url.is_empty()
        {
            config.nats.url = Some(url);
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks that figment cannot: ranges and subject syntax. Errors name the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid(format!("{key}: {why}")));
        let token_ok = |s: &str| !s.is_empty() && s.split('.').all(|t| !t.is_empty() && !t.contains([' ', '*', '>']));
        if !token_ok(&self.nats.prefix) {
            return bad("nats.prefix", "must be dot-separated subject tokens without spaces or wildcards");
        }
        if !self.nats.suffix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return bad("nats.suffix", "may only contain letters, digits, '_' and '-'");
        }
        if self.nats.max_deliver < 1 {
            return bad("nats.max_deliver", "must be at least 1");
        }
        if self.nats.ack_wait_ms < 100 {
            return bad("nats.ack_wait_ms", "must be at least 100");
        }
        if self.nats.duplicate_window_s == 0 || self.nats.duplicate_window_s > self.nats.loop_ttl_s {
            return bad("nats.duplicate_window_s", "must be positive and no longer than nats.loop_ttl_s");
        }
        if self.stages.workers == 0 {
            return bad("stages.workers", "must be at least 1");
        }
        let l = &self.loop_;
        if l.max_turns_simple == 0 || l.max_turns_simple > l.max_turns_standard || l.max_turns_standard > l.max_turns_deep {
            return bad("loop.max_turns_*", "must satisfy 1 <= simple <= standard <= deep");
        }
        if l.max_zero_result_steps == 0 || l.no_new_information_rounds == 0 {
            return bad("loop", "max_zero_result_steps and no_new_information_rounds must be at least 1");
        }
        if l.timeout_ms == 0 || l.timeout_ms > l.max_timeout_ms {
            return bad("loop.timeout_ms", "must be positive and at most loop.max_timeout_ms");
        }
        if self.retrieval.top_k == 0 || self.retrieval.top_k > l.max_hits_per_search {
            return bad("retrieval.top_k", "must be between 1 and loop.max_hits_per_search");
        }
        if self.retrieval.chunk_words < 20 || self.retrieval.chunk_overlap_words >= self.retrieval.chunk_words {
            return bad("retrieval.chunk_words", "must be at least 20 and larger than chunk_overlap_words");
        }
        Ok(())
    }

    /// The embedded data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir
            .clone()
            .or_else(|| dirs::data_dir().map(|d| d.join("sleuth")))
            .unwrap_or_else(|| PathBuf::from(".sleuth"))
    }

    pub fn ack_wait(&self) -> Duration {
        Duration::from_millis(self.nats.ack_wait_ms)
    }

    pub fn subjects(&self) -> sleuth_messages::subjects::Subjects {
        sleuth_messages::subjects::Subjects::new(self.nats.prefix.clone(), self.nats.suffix.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn bad_values_are_reported_with_their_key() {
        let mut c = Config::default();
        c.stages.workers = 0;
        assert!(c.validate().unwrap_err().to_string().contains("stages.workers"));
        let mut c = Config::default();
        c.nats.prefix = "sleuth.>".into();
        assert!(c.validate().unwrap_err().to_string().contains("nats.prefix"));
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string("[nats]\nurll = \"x\""))
            .extract::<Config>()
            .unwrap_err();
        assert!(err.to_string().contains("urll"), "{err}");
    }
}
