//! [`LlmClient`]: chat completions on any OpenAI-compatible server through async-openai, with the error tiers of
//! seed 002 §10: retries with exponential backoff and jitter on 429, 5xx, timeouts and refused connections; a
//! fallback provider; and a circuit breaker that sends the agents back to their deterministic twins.

use std::time::Duration;

use async_openai::{
    Client,
    config::OpenAIConfig,
    error::OpenAIError,
    types::chat::{CreateChatCompletionResponse, FinishReason},
};
use serde_json::{Value, json};
use tracing::{Instrument, field::Empty};

use super::{Agent, Breaker, ChatMessage, LlmError, Usage};
use crate::config::{AgentLlmConfig, LlmConfig, StructuredOutput};
use crate::guard::{backoff, retry_after::RetryAfterService};
use crate::telemetry::metrics;

/// One reachable server and the model asked there.
struct Provider {
    name: &'static str,
    client: Client<OpenAIConfig>,
    model: Option<String>,
}

/// A JSON schema the reply must follow, named for the server (`[a-zA-Z0-9_-]`, at most 64 characters).
#[derive(Debug, Clone)]
pub struct SchemaSpec {
    pub name: &'static str,
    pub schema: Value,
}

/// One completion.
#[derive(Debug, Clone)]
pub struct ChatReply {
    pub content: String,
    pub usage: Usage,
    /// The model that answered (the fallback's, when it did).
    pub model: String,
    /// The server stopped at the token limit: the content is probably cut off.
    pub truncated: bool,
    /// Why the server stopped, as it said (`stop`, `length`, ...).
    pub finish_reason: String,
}

/// What one failed HTTP attempt means for the next one.
enum Failure {
    Retryable(String),
    Fatal(String),
}

pub struct LlmClient {
    config: LlmConfig,
    providers: Vec<Provider>,
    breaker: Breaker,
}

impl LlmClient {
    /// The configured client, or `None` when `llm.base_url` is unset (the agents stay deterministic).
    pub fn from_config(config: &LlmConfig) -> anyhow::Result<Option<LlmClient>> {
        let Some(base) = config.base_url.as_deref().filter(|u| !u.trim().is_empty()) else { return Ok(None) };
        let mut providers = vec![provider("primary", base, &config.api_key_env, None)?];
        if let Some(fallback) = config.fallback.base_url.as_deref().filter(|u| !u.trim().is_empty()) {
            let key_env = config.fallback.api_key_env.as_deref().unwrap_or(&config.api_key_env);
            providers.push(provider("fallback", fallback, key_env, config.fallback.model.clone())?);
        }
        let breaker = Breaker::new(
            config.breaker_consecutive_failures,
            config.breaker_failure_ratio,
            config.breaker_window,
            Duration::from_millis(config.breaker_cooldown_ms),
        );
        Ok(Some(LlmClient { config: config.clone(), providers, breaker }))
    }

    /// True while the circuit keeps calls out.
    pub fn degraded(&self) -> bool {
        self.breaker.is_open()
    }

    /// The model an agent asks for on the primary provider.
    pub fn model(&self, agent: Agent) -> &str {
        self.agent(agent).model.as_deref().unwrap_or(&self.config.model)
    }

    fn agent(&self, agent: Agent) -> &AgentLlmConfig {
        match agent {
            Agent::Planner => &self.config.planner,
            Agent::Grader => &self.config.grader,
            Agent::Synthesizer => &self.config.synthesizer,
        }
    }

    /// One completion: the primary provider with retries, then the fallback's. The breaker sees one outcome.
    pub async fn chat(
        &self,
        agent: Agent,
        messages: &[ChatMessage],
        schema: Option<&SchemaSpec>,
    ) -> Result<ChatReply, LlmError> {
        if !self.breaker.allow() {
            return Err(LlmError::CircuitOpen);
        }
        let mut last = LlmError::Unavailable("no provider is configured".into());
        for provider in &self.providers {
            match self.with_retries(provider, agent, messages, schema).await {
                Ok(reply) => {
                    self.breaker.record(true);
                    metrics::llm_breaker(self.breaker.is_open());
                    return Ok(reply);
                }
                Err(e) => {
                    tracing::warn!(provider = provider.name, agent = agent.as_str(), error = %e, "LLM call failed");
                    last = e;
                }
            }
        }
        self.breaker.record(false);
        metrics::llm_breaker(self.breaker.is_open());
        Err(last)
    }

    async fn with_retries(
        &self,
        provider: &Provider,
        agent: Agent,
        messages: &[ChatMessage],
        schema: Option<&SchemaSpec>,
    ) -> Result<ChatReply, LlmError> {
        let overrides = self.agent(agent);
        let model = provider.model.clone().unwrap_or_else(|| self.model(agent).to_string());
        let timeout = Duration::from_millis(overrides.timeout_ms.unwrap_or(self.config.timeout_ms));
        let body = self.body(&model, overrides, messages, schema);
        let mut attempt = 0;
        loop {
            let span = crate::scoped_span!(
                "gen_ai.chat",
                otel.name = %format_args!("chat {model}"),
                otel.kind = "client",
                gen_ai.operation.name = "chat",
                gen_ai.provider.name = "openai",
                gen_ai.request.model = %model,
                gen_ai.request.temperature = f64::from(overrides.temperature.unwrap_or(self.config.temperature)),
                gen_ai.request.max_tokens = overrides.max_tokens.unwrap_or(self.config.max_tokens),
                gen_ai.response.model = Empty,
                gen_ai.response.finish_reasons = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                gen_ai.input.messages = Empty,
                gen_ai.output.messages = Empty,
                "error.type" = Empty,
                sleuth.agent = agent.as_str(),
                sleuth.provider = provider.name,
                sleuth.attempt = attempt,
            );
            if crate::telemetry::capture_content() {
                span.record("gen_ai.input.messages", serde_json::to_string(messages).unwrap_or_default());
            }
            let chat = provider.client.chat();
            let call = chat.create_byot::<&Value, CreateChatCompletionResponse>(&body);
            let (outcome, retry_after) =
                crate::guard::retry_after::scope(tokio::time::timeout(timeout, call).instrument(span.clone())).await;
            let outcome = match outcome {
                Err(_) => Err(Failure::Retryable(format!("no reply within {} ms", timeout.as_millis()))),
                Ok(Err(e)) => Err(classify(e)),
                Ok(Ok(response)) => reply(response),
            };
            match outcome {
                Ok(reply) => {
                    span.record("gen_ai.response.model", reply.model.as_str());
                    span.record("gen_ai.response.finish_reasons", format!("[\"{}\"]", reply.finish_reason));
                    span.record("gen_ai.usage.input_tokens", reply.usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", reply.usage.output_tokens);
                    if crate::telemetry::capture_content() {
                        let output = json!([{"role": "assistant", "content": reply.content}]);
                        span.record("gen_ai.output.messages", output.to_string());
                    }
                    metrics::llm_call(&model, agent.as_str(), reply.usage.input_tokens, reply.usage.output_tokens);
                    return Ok(reply);
                }
                Err(Failure::Fatal(message)) => {
                    span.record("error.type", "rejected");
                    crate::telemetry::record_error(&span, &message);
                    metrics::llm_error(&model, agent.as_str(), "rejected");
                    return Err(LlmError::Rejected(message));
                }
                Err(Failure::Retryable(message)) => {
                    span.record("error.type", "unavailable");
                    crate::telemetry::record_error(&span, &message);
                    metrics::llm_error(&model, agent.as_str(), "unavailable");
                    if attempt >= self.config.max_retries {
                        return Err(LlmError::Unavailable(format!("{message} (after {} attempts)", attempt + 1)));
                    }
                    // The server's Retry-After, when it sent one, within the same cap as the backoff.
                    let wait = retry_after
                        .map(|d| d.min(Duration::from_millis(self.config.backoff_max_ms)))
                        .unwrap_or_else(|| backoff(attempt, self.config.backoff_base_ms, self.config.backoff_max_ms));
                    tracing::info!(agent = agent.as_str(), attempt, wait_ms = wait.as_millis() as u64, %message, "retrying the LLM call");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }

    /// The request body. `json_schema` servers get the schema as a response format; `json_object` servers get
    /// it alongside (llama-cpp-python reads it there), and the reply is validated either way.
    fn body(
        &self,
        model: &str,
        overrides: &AgentLlmConfig,
        messages: &[ChatMessage],
        schema: Option<&SchemaSpec>,
    ) -> Value {
        let mut body = json!({
            "model": model,
            "messages": messages,
            "temperature": overrides.temperature.unwrap_or(self.config.temperature),
            "max_tokens": overrides.max_tokens.unwrap_or(self.config.max_tokens),
            "stream": false,
        });
        if let Some(spec) = schema {
            body["response_format"] = match self.config.structured_output {
                StructuredOutput::JsonSchema => {
                    json!({"type": "json_schema", "json_schema": {"name": spec.name, "schema": spec.schema, "strict": false}})
                }
                StructuredOutput::JsonObject => json!({"type": "json_object", "schema": spec.schema}),
            };
        }
        body
    }
}

fn provider(name: &'static str, base: &str, key_env: &str, model: Option<String>) -> anyhow::Result<Provider> {
    let key = std::env::var(key_env).unwrap_or_default();
    let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).build()?;
    // async-openai's own retry layer would retry 429s and 5xx on its own schedule, uncapped by Retry-After;
    // this service retries nothing and notes `Retry-After`, leaving every retry to `with_retries`, where the backoff,
    // jitter and caps are ours.
    let client = Client::with_config(OpenAIConfig::new().with_api_base(base.trim_end_matches('/')).with_api_key(key))
        .with_http_client(http.clone())
        .with_http_service(RetryAfterService::new(http));
    Ok(Provider { name, client, model })
}

fn reply(response: CreateChatCompletionResponse) -> Result<ChatReply, Failure> {
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(Failure::Retryable("the server returned no choices".into()));
    };
    let usage = response.usage.map_or(Usage { calls: 1, ..Usage::default() }, |u| Usage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        calls: 1,
    });
    Ok(ChatReply {
        content: choice.message.content.unwrap_or_default(),
        usage,
        model: response.model,
        truncated: matches!(choice.finish_reason, Some(FinishReason::Length)),
        finish_reason: choice
            .finish_reason
            .and_then(|r| serde_json::to_value(r).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "unknown".into()),
    })
}

/// 429, 408, 5xx and transport errors are worth another try; any other refusal is not.
fn classify(error: OpenAIError) -> Failure {
    match error {
        OpenAIError::ApiError(e) => {
            let status = e.status_code;
            let message = format!("HTTP {}: {}", status.as_u16(), e.api_error.message);
            if status.as_u16() == 429 || status.as_u16() == 408 || status.is_server_error() {
                Failure::Retryable(message)
            } else {
                Failure::Fatal(message)
            }
        }
        OpenAIError::Reqwest(e) => Failure::Retryable(format!("transport: {e}")),
        OpenAIError::JSONDeserialize(e, body) => {
            Failure::Fatal(format!("not a chat completion ({e}): {}", body.chars().take(200).collect::<String>()))
        }
        other => Failure::Fatal(other.to_string()),
    }
}
