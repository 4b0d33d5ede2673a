//! The `llm` section: the OpenAI-compatible chat endpoint behind the agents, its retries, circuit breaker,
//! per-agent overrides and fallback provider.

use serde::{Deserialize, Serialize};

/// How the LLM is asked for JSON that follows a schema. Whatever the mode, the reply is parsed, held to the
/// schema and its rules, and repaired or replaced by the deterministic agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// Probe the endpoint once (the modes below, in order, with a one-field schema) and keep the first mode it
    /// accepts and follows.
    #[default]
    Auto,
    /// `response_format: {type: json_schema, json_schema: {...}}`: OpenAI, vLLM, recent llama.cpp, Ollama.
    JsonSchema,
    /// `response_format: {type: json_object, schema: {...}}`: servers that reject `json_schema`
    /// (llama-cpp-python's server).
    JsonObject,
    /// One function tool whose parameters are the schema, and `tool_choice` naming it: the reply is the call's
    /// arguments.
    Tools,
    /// No response format: the schema goes into the system prompt, and the JSON is found in the reply's text.
    Prompt,
}

impl StructuredOutput {
    /// The modes `auto` tries, in order.
    pub const PROBED: [StructuredOutput; 4] =
        [StructuredOutput::JsonSchema, StructuredOutput::JsonObject, StructuredOutput::Tools, StructuredOutput::Prompt];

    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::Auto => "auto",
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObject => "json_object",
            StructuredOutput::Tools => "tools",
            StructuredOutput::Prompt => "prompt",
        }
    }
}

/// Per-agent overrides of the [`LlmConfig`] defaults.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentLlmConfig {
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub timeout_ms: Option<u64>,
}

/// A second OpenAI-compatible provider, tried when the first one's retries are spent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FallbackLlmConfig {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
}

/// The OpenAI-compatible chat endpoint behind the planner, grader and synthesizer. Without `base_url` they stay
/// deterministic.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// OpenAI-compatible endpoint including `/v1`, e.g. http://localhost:8080/v1.
    pub base_url: Option<String>,
    pub model: String,
    /// Environment variable holding the API key (may be unset for local servers).
    pub api_key_env: String,
    pub temperature: f32,
    pub max_tokens: u32,
    /// Per call, including the server's time to first byte and the whole body.
    pub timeout_ms: u64,
    pub structured_output: StructuredOutput,
    /// Retries of one call on 429, 5xx, timeouts and refused connections.
    pub max_retries: u32,
    /// First backoff; doubled per retry, plus up to as much again of jitter, capped at `backoff_max_ms`.
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Re-asks, with a correction prompt, of a reply that is not valid JSON or breaks the schema or its rules.
    pub max_repairs: u32,
    /// The circuit opens after this many calls in a row fail ...
    pub breaker_consecutive_failures: u32,
    /// ... or when at least this share of the last `breaker_window` calls failed.
    pub breaker_failure_ratio: f32,
    pub breaker_window: u32,
    /// How long an open circuit sends every agent to its deterministic twin before one call probes again.
    pub breaker_cooldown_ms: u64,
    pub planner: AgentLlmConfig,
    pub grader: AgentLlmConfig,
    pub synthesizer: AgentLlmConfig,
    pub fallback: FallbackLlmConfig,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: None,
            model: "gpt-4o-mini".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            temperature: 0.0,
            max_tokens: 1024,
            timeout_ms: 60_000,
            structured_output: StructuredOutput::Auto,
            max_retries: 3,
            backoff_base_ms: 500,
            backoff_max_ms: 10_000,
            max_repairs: 2,
            breaker_consecutive_failures: 3,
            breaker_failure_ratio: 0.5,
            breaker_window: 10,
            breaker_cooldown_ms: 30_000,
            planner: AgentLlmConfig::default(),
            grader: AgentLlmConfig::default(),
            synthesizer: AgentLlmConfig::default(),
            fallback: FallbackLlmConfig::default(),
        }
    }
}
