//! [`LlmClient`]: chat completions on any OpenAI-compatible server through async-openai, with the error tiers of
//! seed 002 §10: retries with exponential backoff and jitter on 429, 5xx, timeouts and refused connections; a
//! fallback provider; and a circuit breaker that sends the agents back to their deterministic twins. Each
//! provider's structured-output mode is configured, or found by one probe the first time a schema is asked for
//! ([`modes`](super::modes)).

use std::time::Duration;

use async_openai::{
    Client,
    config::OpenAIConfig,
    error::OpenAIError,
    types::chat::{ChatCompletionMessageToolCalls, CreateChatCompletionResponse, FinishReason},
};
use serde_json::{Value, json};
use tokio::sync::OnceCell;
use tracing::{Instrument, field::Empty};

use super::{
    Agent, Breaker, ChatMessage, LlmError, Usage,
    modes::{self, Probe},
    schema::SchemaSpec,
};
use crate::config::{AgentLlmConfig, LlmConfig, StructuredOutput};
use crate::guard::{backoff, retry_after::RetryAfterService};
use crate::telemetry::metrics;

/// One reachable server and the model asked there.
struct Provider {
    name: &'static str,
    client: Client<OpenAIConfig>,
    model: Option<String>,
    /// How this endpoint is asked for JSON, once `auto` has probed it.
    mode: OnceCell<StructuredOutput>,
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

    /// The primary provider's structured-output mode: the configured one, or what `auto` found (`None` until its
    /// probe has finished).
    pub fn structured_output(&self) -> Option<StructuredOutput> {
        match self.config.structured_output {
            StructuredOutput::Auto => self.providers.first().and_then(|p| p.mode.get().copied()),
            mode => Some(mode),
        }
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
        let schema = match schema {
            Some(spec) => Some((spec, self.mode_of(provider, &model).await)),
            None => None,
        };
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
                sleuth.structured_output = schema.map(|(_, mode)| mode.as_str()),
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

    /// The request body, with the schema where `mode` puts it.
    fn body(
        &self,
        model: &str,
        overrides: &AgentLlmConfig,
        messages: &[ChatMessage],
        schema: Option<(&SchemaSpec, StructuredOutput)>,
    ) -> Value {
        let mut body = json!({
            "model": model,
            "messages": messages,
            "temperature": overrides.temperature.unwrap_or(self.config.temperature),
            "max_tokens": overrides.max_tokens.unwrap_or(self.config.max_tokens),
            "stream": false,
        });
        if let Some((spec, mode)) = schema {
            modes::apply(&mut body, mode, spec);
        }
        body
    }

    /// The provider's structured-output mode: the configured one, or what `auto` found. A probe that could not
    /// finish (the server unreachable) is not kept: this call uses `prompt`, and the next call probes again.
    async fn mode_of(&self, provider: &Provider, model: &str) -> StructuredOutput {
        if self.config.structured_output != StructuredOutput::Auto {
            return self.config.structured_output;
        }
        match provider.mode.get_or_try_init(|| self.probe(provider, model)).await {
            Ok(mode) => *mode,
            Err(why) => {
                tracing::warn!(provider = provider.name, %why, "structured-output probe did not finish: prompt mode for this call");
                StructuredOutput::Prompt
            }
        }
    }

    /// Asks the probe's one-field schema in each mode, in order, and keeps the first the server follows.
    async fn probe(&self, provider: &Provider, model: &str) -> Result<StructuredOutput, String> {
        let span = crate::scoped_span!(
            "sleuth.llm.probe",
            sleuth.provider = provider.name,
            gen_ai.request.model = %model,
            sleuth.structured_output = Empty,
        );
        let (messages, spec) = modes::probe_request();
        let timeout = Duration::from_millis(self.config.timeout_ms);
        let overrides = AgentLlmConfig { max_tokens: Some(32), temperature: Some(0.0), ..AgentLlmConfig::default() };
        let mut found = Vec::new();
        let mut refused_by_5xx = false;
        for mode in StructuredOutput::PROBED {
            let body = self.body(model, &overrides, &messages, Some((&spec, mode)));
            let chat = provider.client.chat();
            let call = chat.create_byot::<&Value, CreateChatCompletionResponse>(&body);
            // No `retry_after::scope`: a probe is not retried, so a `Retry-After` would have no one to read it.
            let probe = match tokio::time::timeout(timeout, call).instrument(span.clone()).await {
                Err(_) => {
                    return Err(format!("no reply to the {} probe within {} ms", mode.as_str(), timeout.as_millis()));
                }
                Ok(Err(e)) => match refusal(e) {
                    Err(why) => return Err(format!("{} probe: {why}", mode.as_str())),
                    Ok((why, server_error)) => {
                        tracing::info!(provider = provider.name, mode = mode.as_str(), %why, "structured-output mode refused");
                        refused_by_5xx |= server_error;
                        Probe::Refused
                    }
                },
                Ok(Ok(response)) => match reply(response) {
                    Ok(r) if modes::follows_probe(&r.content) => Probe::Followed,
                    Ok(_) | Err(_) => Probe::Accepted,
                },
            };
            found.push((mode, probe));
            if probe == Probe::Followed {
                break;
            }
        }
        if refused_by_5xx && found.iter().all(|(_, p)| *p == Probe::Refused) {
            // Every mode failed and some with a server error: the server may be broken rather than picky.
            return Err("every mode was refused, some with a server error".into());
        }
        let mode = modes::choose(&found);
        span.record("sleuth.structured_output", mode.as_str());
        let tried: Vec<String> = found.iter().map(|(m, p)| format!("{} {p:?}", m.as_str()).to_lowercase()).collect();
        tracing::info!(provider = provider.name, mode = mode.as_str(), tried = %tried.join(", "), "structured-output mode chosen");
        Ok(mode)
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
    Ok(Provider { name, client, model, mode: OnceCell::new() })
}

fn reply(response: CreateChatCompletionResponse) -> Result<ChatReply, Failure> {
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(Failure::Retryable("the server returned no choices".into()));
    };
    let usage = response.usage.map_or(Usage { calls: 1, ..Usage::default() }, |u| Usage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        calls: 1,
        repairs: 0,
    });
    // In `tools` mode the JSON is the forced call's arguments.
    let called = choice.message.tool_calls.into_iter().flatten().find_map(|call| match call {
        ChatCompletionMessageToolCalls::Function(f) => Some(f.function.arguments),
        ChatCompletionMessageToolCalls::Custom(_) => None,
    });
    let content = choice.message.content.filter(|c| !c.trim().is_empty()).or(called).unwrap_or_default();
    Ok(ChatReply {
        content,
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

/// What a probe's failed request says of the mode: refused by a server that is up (`Ok`, with why and whether it
/// was a 500), or nothing, because the server is unreachable or overloaded (`Err`). llama-cpp-python's server
/// answers a `response_format` it does not know with a 500 carrying a validation error, so a 500 counts as a
/// refusal here, unlike in [`classify`], where it is retried.
fn refusal(error: OpenAIError) -> Result<(String, bool), String> {
    match error {
        OpenAIError::ApiError(e) => {
            let status = e.status_code.as_u16();
            let message = format!("HTTP {status}: {}", e.api_error.message);
            match status {
                408 | 429 | 502 | 503 | 504 => Err(message),
                _ => Ok((message, status >= 500)),
            }
        }
        OpenAIError::Reqwest(e) => Err(format!("transport: {e}")),
        other => Ok((other.to_string(), false)),
    }
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
