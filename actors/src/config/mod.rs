//! Configuration: one serde tree with defaults in code, read from an optional TOML file and `SLEUTH__SECTION__KEY`
//! environment overrides. [`ENV_VARS`] lists every environment variable sleuth reads.

use std::{path::PathBuf, time::Duration};

use figment::{
    Figment,
    providers::{Env, Format, Serialized, Toml},
};
use serde::{Deserialize, Serialize};

mod backends;
mod gateway;
mod graph;
mod intake;
mod llm;
mod loop_;
mod nats;
mod retrieval;
mod stages;
mod telemetry;
mod tenants;

pub use backends::BackendsConfig;
pub use gateway::{ApiKey, GatewayConfig};
pub use graph::{DatabaseConfig, GraphConfig};
pub use intake::IntakeConfig;
pub use llm::{AgentLlmConfig, FallbackLlmConfig, LlmConfig, StructuredOutput};
pub use loop_::LoopConfig;
pub use nats::NatsConfig;
pub use retrieval::{
    EmbedderConfig, EmbedderKind, FeatureWeights, FieldType, IndexBackend, RerankKind, RetrievalConfig,
};
pub use stages::{DebugConfig, StagesConfig};
pub use telemetry::{OtlpProtocol, TelemetryConfig};
pub use tenants::{TenantLimits, TenantsConfig};

/// Every environment variable sleuth reads, with what it does. `sleuth --help` and the README point here.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("SLEUTH_CONFIG", "path of a TOML configuration file"),
    ("SLEUTH__<SECTION>__<KEY>", "overrides one configuration key, e.g. SLEUTH__LOOP__MAX_TURNS_DEEP=8"),
    ("SLEUTH__NATS__URL", "set: distributed mode over NATS JetStream; unset: embedded mode"),
    ("NATS_URL", "fallback for SLEUTH__NATS__URL"),
    ("SLEUTH__DATA_DIR", "embedded data directory (default $XDG_DATA_HOME/sleuth)"),
    ("SLEUTH__EMBEDDER__KIND", "local (all-MiniLM-L6-v2, the default), openai, or none for BM25 only"),
    ("SLEUTH__EMBEDDER__MODEL_DIR", "local model directory (default $XDG_CACHE_HOME/sleuth/models/all-MiniLM-L6-v2)"),
    (
        "SLEUTH__RETRIEVAL__BACKEND",
        "edge (in-process, the default) or qdrant (server at SLEUTH__RETRIEVAL__QDRANT_URL)",
    ),
    ("SLEUTH__DATABASE__URL", "set: the graph lives in PostgreSQL at this URL; unset: SQLite in the data dir"),
    ("DATABASE_URL", "fallback for SLEUTH__DATABASE__URL"),
    (
        "SLEUTH__DATABASE__MIGRATE",
        "false: only check the graph schema at start-up (a read-only role); `sleuth setup` migrates",
    ),
    ("SLEUTH__DATABASE__READER_ROLE", "a PostgreSQL role `sleuth setup` grants read access to the graph's tables"),
    (
        "SLEUTH__LLM__BASE_URL",
        "OpenAI-compatible chat endpoint (e.g. http://127.0.0.1:8080/v1): LLM planner, grader and synthesizer; unset: deterministic",
    ),
    ("SLEUTH__LLM__MODEL", "chat model name sent to that endpoint"),
    ("SLEUTH__LLM__STRUCTURED_OUTPUT", "json_schema (default) or json_object for servers without json_schema support"),
    ("OPENAI_API_KEY", "API key of the LLM endpoint, if it needs one (the variable named by llm.api_key_env)"),
    ("QDRANT_API_KEY", "API key of the Qdrant server, if it needs one"),
    ("HF_ENDPOINT", "Hugging Face Hub mirror for `sleuth models pull`"),
    ("RUST_LOG", "log filter, e.g. sleuth_actors=debug"),
    ("SLEUTH__TELEMETRY__OTLP_ENDPOINT", "OTLP endpoint for spans, e.g. http://localhost:4317; unset: no export"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "fallback for SLEUTH__TELEMETRY__OTLP_ENDPOINT (also ..._TRACES_ENDPOINT)"),
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc (default) or http/protobuf; fallback for telemetry.otlp_protocol"),
    ("OTEL_SERVICE_NAME", "fallback for telemetry.service_name (default sleuth-<stage>, or sleuth)"),
    ("OTEL_RESOURCE_ATTRIBUTES", "extra resource attributes of every span, key=value,..."),
    ("OTEL_TRACES_SAMPLER", "fallback for telemetry.sampler, e.g. parentbased_traceidratio"),
    ("OTEL_TRACES_SAMPLER_ARG", "fallback for telemetry.sampler_arg, the sampling ratio"),
    ("OTEL_BSP_SCHEDULE_DELAY", "milliseconds between span batches (default 5000)"),
    ("SLEUTH__GATEWAY__HTTP_ADDR", "where the HTTP gateway listens (default 127.0.0.1:8080)"),
    ("SLEUTH__GATEWAY__API_KEYS_FILE", "a file of API keys, one `<sha256 hex> <tenant>` per line"),
    ("SLEUTH__TELEMETRY__HTTP_ADDR", "where sleuth serve answers /metrics, /healthz, /readyz (default 127.0.0.1:0)"),
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
    pub embedder: EmbedderConfig,
    pub database: DatabaseConfig,
    pub graph: GraphConfig,
    pub llm: LlmConfig,
    pub backends: BackendsConfig,
    pub intake: IntakeConfig,
    pub telemetry: TelemetryConfig,
    pub gateway: GatewayConfig,
    pub tenants: TenantsConfig,
    pub debug: DebugConfig,
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
        config.database.url = config.database.url.filter(|u| !u.trim().is_empty());
        config.llm.base_url = config.llm.base_url.filter(|u| !u.trim().is_empty());
        if config.database.url.is_none()
            && let Ok(url) = std::env::var("DATABASE_URL")
            && !url.is_empty()
        {
            config.database.url = Some(url);
        }
        if config.nats.url.is_none()
            && let Ok(url) = std::env::var("NATS_URL")
            && !url.is_empty()
        {
            config.nats.url = Some(url);
        }
        config.telemetry = config.telemetry.with_otel_env(|name| std::env::var(name).ok());
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
        if self.nats.max_ack_pending < 1 {
            return bad("nats.max_ack_pending", "must be at least 1");
        }
        if self.nats.duplicate_window_s == 0 || self.nats.duplicate_window_s > self.nats.loop_ttl_s {
            return bad("nats.duplicate_window_s", "must be positive and no longer than nats.loop_ttl_s");
        }
        let inbox = |p: &String| {
            p.ends_with('.') && !p.starts_with(['$', '.']) && !p.contains(['*', '>', ' ']) && !p.contains("..")
        };
        if self.nats.inbox_prefixes.is_empty() || !self.nats.inbox_prefixes.iter().all(inbox) {
            return bad(
                "nats.inbox_prefixes",
                "must list at least one inbox prefix ending in '.', with no wildcard and not under '$' (e.g. \"_INBOX.\")",
            );
        }
        if !(1..=5).contains(&self.nats.replicas) {
            return bad("nats.replicas", "must be between 1 and 5 (JetStream's limit)");
        }
        if self.stages.workers == 0 {
            return bad("stages.workers", "must be at least 1");
        }
        if self.stages.hung_after_ms <= self.loop_.max_timeout_ms {
            return bad(
                "stages.hung_after_ms",
                "must be longer than loop.max_timeout_ms, the longest a request may run",
            );
        }
        let l = &self.loop_;
        if l.max_turns_standard == 0 || l.max_turns_standard > l.max_turns_deep {
            return bad("loop.max_turns_*", "must satisfy 1 <= standard <= deep");
        }
        self.tenants.check().map_err(ConfigError::Invalid)?;
        self.database.check().map_err(ConfigError::Invalid)?;
        let i = &self.intake;
        if i.conversation_ttl_s == 0 || i.conversation_turns == 0 {
            return bad("intake.conversation_*", "conversation_ttl_s and conversation_turns must be at least 1");
        }
        if i.cache_entries > 0 && i.cache_ttl_s == 0 {
            return bad("intake.cache_ttl_s", "must be positive when the cache is on (cache_entries > 0)");
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
        let m = &self.llm;
        if m.model.trim().is_empty() || m.max_tokens == 0 || m.timeout_ms == 0 {
            return bad("llm", "model must be named, and max_tokens and timeout_ms must be positive");
        }
        if !(0.0..=2.0).contains(&m.temperature) {
            return bad("llm.temperature", "must be between 0 and 2");
        }
        if m.breaker_consecutive_failures == 0
            || m.breaker_window == 0
            || !(0.0..=1.0).contains(&m.breaker_failure_ratio)
        {
            return bad(
                "llm.breaker_*",
                "consecutive failures and window must be at least 1, the failure ratio within 0..=1",
            );
        }
        if m.backoff_base_ms > m.backoff_max_ms {
            return bad("llm.backoff_base_ms", "must not exceed llm.backoff_max_ms");
        }
        let b = &self.backends;
        if b.breaker_failures == 0 || b.breaker_cooldown_ms == 0 || b.backoff_base_ms > b.backoff_max_ms {
            return bad(
                "backends",
                "breaker_failures and breaker_cooldown_ms must be positive, backoff_base_ms at most backoff_max_ms",
            );
        }
        let r = &self.retrieval;
        if r.chunk_tokens < 20 || r.chunk_overlap_tokens >= r.chunk_tokens {
            return bad("retrieval.chunk_tokens", "must be at least 20 and larger than chunk_overlap_tokens");
        }
        if r.backend == IndexBackend::Qdrant && r.qdrant_url.as_deref().is_none_or(|u| u.trim().is_empty()) {
            return bad("retrieval.qdrant_url", "must be set when retrieval.backend = \"qdrant\"");
        }
        if r.prefetch_limit == 0 || r.prefetch_limit > 1000 {
            return bad("retrieval.prefetch_limit", "must be between 1 and 1000");
        }
        if r.dense_threshold.is_some_and(|t| !(-1.0..=1.0).contains(&t)) {
            return bad("retrieval.dense_threshold", "must be a cosine similarity between -1 and 1");
        }
        for name in &self.graph.entity_types {
            if sleuth_messages::EntityType::parse(name).is_none_or(|t| t.is_document()) {
                return bad(
                    "graph.entity_types",
                    "each must be a lowercase identifier ([a-z][a-z0-9_]*, at most 32 bytes) other than document",
                );
            }
        }
        for name in r.filter_fields.keys() {
            if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || ["id", "doc_id", "title"].contains(&name.as_str())
            {
                return bad(
                    "retrieval.filter_fields",
                    "names must be letters, digits or '_' and not id, doc_id or title",
                );
            }
        }
        if let Some(url) = &self.database.url
            && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
        {
            return bad("database.url", "must be a postgres:// URL (leave it unset for SQLite in the data dir)");
        }
        if self.database.pool_max_size == 0 {
            return bad("database.pool_max_size", "must be at least 1");
        }
        let g = &self.graph;
        if g.relations.is_empty()
            || g.relations.iter().any(|r| r.is_empty() || !r.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        {
            return bad("graph.relations", "must be a non-empty list of snake_case names");
        }
        if g.max_hops == 0 || g.max_fanout_per_hop == 0 || g.max_results == 0 {
            return bad("graph", "max_hops, max_fanout_per_hop and max_results must be at least 1");
        }
        if g.statement_timeout_ms == 0 || g.query_timeout_ms == 0 {
            return bad("graph", "statement_timeout_ms and query_timeout_ms must be at least 1");
        }
        self.telemetry.validate().map_err(ConfigError::Invalid)?;
        if self.embedder.dim == 0 || self.embedder.batch == 0 || self.embedder.cache_entries == 0 {
            return bad("embedder", "dim, batch and cache_entries must be at least 1");
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

    /// Where the local embedding model lives.
    pub fn model_dir(&self) -> PathBuf {
        self.embedder.model_dir.clone().unwrap_or_else(|| {
            dirs::cache_dir()
                .unwrap_or_else(|| self.data_dir().join("cache"))
                .join("sleuth")
                .join("models")
                .join("all-MiniLM-L6-v2")
        })
    }

    pub fn ack_wait(&self) -> Duration {
        Duration::from_millis(self.nats.ack_wait_ms)
    }

    /// How long each delivery of a stage's work may go unacknowledged before it is delivered again (JetStream's
    /// consumer `backoff`): [`Config::ack_wait`] for the first, so the work of a killed stage comes back as soon,
    /// then twice and four times as long, one entry per delivery of `nats.max_deliver` (five when unlimited).
    /// A delivery that ran out its wait was not refused by its stage: it was held while the stage could not reach
    /// the consumer's leader (in-progress acks lost while a cluster elects one) or the stage died. So repeated
    /// faults spend a work message's deliveries over 15 × ack_wait (60 s with the defaults, a request's default
    /// budget) instead of 5 × ack_wait, and do not dead-letter a request whose stages are alive. Naks (a stage
    /// that failed, or hands work back) are redelivered after their own delay, as before.
    pub fn redelivery_backoff(&self) -> Vec<Duration> {
        let deliveries = if self.nats.max_deliver < 1 { 5 } else { self.nats.max_deliver.min(100) as u32 };
        (0..deliveries).map(|i| self.ack_wait() * (1 << i.min(2))).collect()
    }

    /// How long a request's loop state is kept after its last write, in the KV bucket and in memory.
    pub fn loop_ttl(&self) -> Duration {
        Duration::from_secs(self.nats.loop_ttl_s)
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
    fn a_reader_role_is_a_plain_postgres_name() {
        // It is written into GRANT statements, which bind no parameters.
        for bad in ["sleuth reader", "Reader", "r; DROP TABLE entities", "\"r\"", "", "9reader"] {
            let mut c = Config::default();
            c.database.reader_role = Some(bad.into());
            assert!(c.validate().unwrap_err().to_string().contains("database.reader_role"), "{bad:?}");
        }
        let mut c = Config::default();
        c.database.reader_role = Some("sleuth_reader_2".into());
        c.validate().unwrap();
    }

    #[test]
    fn a_worker_counts_as_hung_only_past_the_longest_request() {
        let mut c = Config::default();
        c.stages.hung_after_ms = c.loop_.max_timeout_ms;
        assert!(c.validate().unwrap_err().to_string().contains("stages.hung_after_ms"));
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
