//! Structured replies: a JSON schema derived from the protocol types with schemars, the reply parsed and held to
//! that schema and to the type's own rules (seed 000 §6.1), and a failed reply repaired by asking again with an
//! explicit correction prompt, at most `llm.max_repairs` times.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sleuth_messages::{NextStep, PlannerState, QueryRewrite, SufficiencyReport};

use super::{
    Agent, ChatMessage, LlmClient, LlmError, Usage,
    schema::{SchemaSpec, escape_controls_in_strings, extract_json, schema_of},
};

/// A protocol type an agent may ask the LLM for.
pub trait StructuredSpec: DeserializeOwned + JsonSchema {
    /// The schema's name on the wire (`[a-zA-Z0-9_-]`).
    const NAME: &'static str;

    /// Rules the schema cannot say, checked after parsing.
    fn check(&self) -> Result<(), String>;
}

impl StructuredSpec for NextStep {
    const NAME: &'static str = "next_step";

    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

impl StructuredSpec for SufficiencyReport {
    const NAME: &'static str = "sufficiency_report";

    fn check(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.confidence) {
            return Err(format!("confidence must be between 0 and 1, not {}", self.confidence));
        }
        Ok(())
    }
}

impl StructuredSpec for PlannerState {
    const NAME: &'static str = "planner_state";

    fn check(&self) -> Result<(), String> {
        if self.goal.trim().is_empty() {
            return Err("goal must not be empty".into());
        }
        if self.retrieval_rounds.len() > 3 {
            return Err(format!("{} retrieval rounds planned, at most 3 are allowed", self.retrieval_rounds.len()));
        }
        Ok(())
    }
}

impl StructuredSpec for QueryRewrite {
    const NAME: &'static str = "query_rewrite";

    fn check(&self) -> Result<(), String> {
        if self.rewritten.trim().is_empty() {
            return Err("rewritten must not be empty".into());
        }
        if self.subquestions.len() > 4 {
            return Err(format!("{} sub-questions, at most 4 are allowed", self.subquestions.len()));
        }
        if self.subquestions.iter().any(|q| q.trim().is_empty()) {
            return Err("sub-questions must not be empty".into());
        }
        Ok(())
    }
}

/// What one structured ask produced: the value or why not, and what it cost.
#[derive(Debug)]
pub struct Structured<T> {
    pub result: Result<T, LlmError>,
    pub usage: Usage,
    /// Why each rejected reply was rejected, in order.
    pub repairs: Vec<String>,
}

/// Parses and checks one reply.
pub fn parse<T: StructuredSpec>(text: &str, extra: &(dyn Fn(&T) -> Result<(), String> + Sync)) -> Result<T, String> {
    let json = escape_controls_in_strings(extract_json(text));
    let json = json.as_ref();
    let value: T = serde_json::from_str(json).map_err(|e| {
        if serde_json::from_str::<Value>(json).is_err() {
            format!("the reply is not valid JSON ({e})")
        } else {
            format!("the reply does not follow the schema: {e}")
        }
    })?;
    value.check()?;
    extra(&value)?;
    Ok(value)
}

/// Asks for a `T`; a reply that fails to parse or breaks a rule is sent back with the reason, at most
/// `max_repairs` times. `extra` holds the caller's rules (vocabularies, caps) on top of `T::check`.
pub async fn ask<T: StructuredSpec>(
    client: &LlmClient,
    agent: Agent,
    messages: Vec<ChatMessage>,
    max_repairs: u32,
    extra: &(dyn Fn(&T) -> Result<(), String> + Sync),
) -> Structured<T> {
    ask_in(client, agent, messages, schema_of::<T>(), max_repairs, extra).await
}

/// [`ask`] with a narrower schema than `T`'s own, made for this request (the values a field may take), which the
/// reply must still parse as a `T`.
pub async fn ask_in<T: StructuredSpec>(
    client: &LlmClient,
    agent: Agent,
    mut messages: Vec<ChatMessage>,
    schema: Value,
    max_repairs: u32,
    extra: &(dyn Fn(&T) -> Result<(), String> + Sync),
) -> Structured<T> {
    let spec = SchemaSpec { name: T::NAME, schema };
    let mut usage = Usage::default();
    let mut repairs = Vec::new();
    loop {
        let reply = match client.chat(agent, &messages, Some(&spec)).await {
            Ok(reply) => reply,
            Err(e) => return Structured { result: Err(e), usage, repairs },
        };
        usage.add(reply.usage);
        let problem = match parse::<T>(&reply.content, extra) {
            Ok(value) => return Structured { result: Ok(value), usage, repairs },
            Err(problem) if reply.truncated => {
                format!("{problem}; the reply was cut off at the token limit, so keep it shorter")
            }
            Err(problem) => problem,
        };
        tracing::info!(agent = agent.as_str(), schema = T::NAME, %problem, "LLM reply rejected");
        repairs.push(problem.clone());
        if repairs.len() as u32 > max_repairs {
            let attempts = repairs.len() as u32;
            return Structured { result: Err(LlmError::Invalid { attempts, last: problem }), usage, repairs };
        }
        // A repair is a rejected reply sent back; the last rejection, which is not, is a fallback.
        usage.repairs += 1;
        crate::telemetry::metrics::llm_repair(agent.as_str(), T::NAME);
        messages.push(ChatMessage::assistant(reply.content));
        messages.push(ChatMessage::user(super::prompts::CORRECT.replace("{{problem}}", &problem)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_line_break_inside_a_string_is_read_as_an_escaped_one() {
        let reply = "{\"goal\": \"find\nLuffy\", \"n\": 1}\n";
        let fixed = escape_controls_in_strings(reply);
        let value: Value = serde_json::from_str(&fixed).expect("repaired");
        assert_eq!(value["goal"], "find\nLuffy");
        let clean = "{\n  \"a\": \"b\\\"c\"\n}";
        assert_eq!(escape_controls_in_strings(clean), clean, "line breaks between tokens stay");
    }

    #[test]
    fn the_next_step_schema_names_every_action() {
        let schema = schema_of::<NextStep>().to_string();
        for action in ["qdrant_search", "pg_graph", "final", "clarify", "database_stats"] {
            assert!(schema.contains(&format!("\"{action}\"")), "{action} missing from {schema}");
        }
        assert!(!schema.contains("$ref"), "refs are inlined: {schema}");
        let actions = &schema_of::<NextStep>()["properties"]["actions"];
        assert_eq!((actions["minItems"].as_u64(), actions["maxItems"].as_u64()), (Some(1), Some(2)), "{actions}");
    }

    #[test]
    fn replies_are_found_inside_fences_and_checked() {
        let none = |_: &NextStep| Ok(());
        let fenced = "Sure:\n```json\n{\"rationale\": \"r\", \"actions\": [{\"action\": \"final\"}]}\n```";
        assert!(parse::<NextStep>(fenced, &none).is_ok());
        let err = parse::<NextStep>("{\"rationale\": \"r\", \"actions\": [", &none).unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = parse::<NextStep>("{\"rationale\": \"r\", \"actions\": [{\"action\": \"fly\"}]}", &none).unwrap_err();
        assert!(err.contains("does not follow the schema"), "{err}");
        let three = "{\"rationale\": \"r\", \"actions\": [{\"action\": \"final\"}, {\"action\": \"final\"}, {\"action\": \"final\"}]}";
        assert!(parse::<NextStep>(three, &none).unwrap_err().contains("at most 2"));
    }
}
