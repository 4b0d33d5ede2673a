//! The four ways of asking an OpenAI-compatible server for JSON that follows a schema (`llm.structured_output`),
//! and `auto`'s probe, which finds the one an endpoint takes.
//!
//! Servers differ: OpenAI and vLLM take `response_format: json_schema`; llama-cpp-python's server rejects it
//! and takes `json_object` with a `schema` beside it; others only follow a forced function call; a few take none
//! of them, and only the prompt is left. The reply is validated the same way whichever mode carried the schema.

use serde_json::{Value, json};

use super::{ChatMessage, schema::SchemaSpec};
use crate::config::StructuredOutput;

/// The probe's schema name and the one field it asks for.
pub const PROBE_NAME: &str = "sleuth_probe";

/// Puts `spec` into a chat completion `body` the way `mode` says. `Auto` must be resolved first; it is treated
/// as `prompt`, which every server takes.
pub fn apply(body: &mut Value, mode: StructuredOutput, spec: &SchemaSpec) {
    match mode {
        StructuredOutput::JsonSchema => {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": spec.name, "schema": spec.schema, "strict": false}
            });
        }
        StructuredOutput::JsonObject => {
            body["response_format"] = json!({"type": "json_object", "schema": spec.schema});
        }
        StructuredOutput::Tools => {
            body["tools"] = json!([{
                "type": "function",
                "function": {"name": spec.name, "description": "Reply with this object.", "parameters": spec.schema}
            }]);
            body["tool_choice"] = json!({"type": "function", "function": {"name": spec.name}});
        }
        StructuredOutput::Prompt | StructuredOutput::Auto => {
            let rule = format!(
                "\n\nReply with only one JSON object, no prose and no markdown fences, that follows this JSON schema:\n{}",
                spec.schema
            );
            let Some(messages) = body["messages"].as_array_mut() else { return };
            match messages.iter().position(|m| m["role"] == "system") {
                Some(i) => {
                    let text = messages[i]["content"].as_str().unwrap_or_default().to_string();
                    messages[i]["content"] = Value::String(text + &rule);
                }
                None => messages.insert(0, json!({"role": "system", "content": rule.trim_start()})),
            }
        }
    }
}

/// The probe's question and schema: one boolean field, small enough to cost a few tokens on any server.
pub fn probe_request() -> (Vec<ChatMessage>, SchemaSpec) {
    let messages = vec![
        ChatMessage::system("You answer with JSON only."),
        ChatMessage::user("Reply with the JSON object {\"ok\": true}."),
    ];
    let schema = json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    });
    (messages, SchemaSpec { name: PROBE_NAME, schema })
}

/// Whether a probe reply follows the probe's schema.
pub fn follows_probe(text: &str) -> bool {
    serde_json::from_str::<Value>(super::schema::extract_json(text))
        .is_ok_and(|v| v.get("ok").is_some_and(Value::is_boolean))
}

/// What one probe of one mode found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The server took the request and the reply followed the schema.
    Followed,
    /// The server took the request but the reply did not follow the schema (the format was ignored, or the
    /// model wandered off).
    Accepted,
    /// The server refused the request (a 4xx, or the 500 llama-cpp-python gives): it does not support this mode.
    Refused,
}

/// The mode `auto` settles on: the first that was followed, else the first accepted, else `prompt`.
pub fn choose(found: &[(StructuredOutput, Probe)]) -> StructuredOutput {
    let first = |p: Probe| found.iter().find(|(_, f)| *f == p).map(|(m, _)| *m);
    first(Probe::Followed).or_else(|| first(Probe::Accepted)).unwrap_or(StructuredOutput::Prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Value {
        json!({"model": "m", "messages": [{"role": "system", "content": "Plan."}, {"role": "user", "content": "q"}]})
    }

    #[test]
    fn each_mode_carries_the_schema_where_its_servers_read_it() {
        let (_, spec) = probe_request();
        let mut b = body();
        apply(&mut b, StructuredOutput::JsonSchema, &spec);
        assert_eq!(b["response_format"]["json_schema"]["name"], PROBE_NAME);
        let mut b = body();
        apply(&mut b, StructuredOutput::JsonObject, &spec);
        assert_eq!(b["response_format"]["type"], "json_object");
        assert_eq!(b["response_format"]["schema"], spec.schema);
        let mut b = body();
        apply(&mut b, StructuredOutput::Tools, &spec);
        assert_eq!(b["tools"][0]["function"]["parameters"], spec.schema);
        assert_eq!(b["tool_choice"]["function"]["name"], PROBE_NAME);
        assert!(b.get("response_format").is_none());
        let mut b = body();
        apply(&mut b, StructuredOutput::Prompt, &spec);
        let system = b["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("Plan.") && system.contains("\"ok\""), "{system}");
        assert!(b.get("response_format").is_none() && b.get("tools").is_none());
    }

    #[test]
    fn auto_prefers_a_followed_mode_then_an_accepted_one_then_the_prompt() {
        use Probe::*;
        use StructuredOutput::*;
        assert_eq!(choose(&[(JsonSchema, Refused), (JsonObject, Followed)]), JsonObject);
        assert_eq!(choose(&[(JsonSchema, Accepted), (JsonObject, Followed)]), JsonObject);
        assert_eq!(choose(&[(JsonSchema, Accepted), (JsonObject, Refused), (Tools, Refused)]), JsonSchema);
        assert_eq!(
            choose(&[(JsonSchema, Refused), (JsonObject, Refused), (Tools, Refused), (Prompt, Refused)]),
            Prompt
        );
        assert!(follows_probe("```json\n{\"ok\": true}\n```"));
        assert!(!follows_probe("{\"ok\": \"yes\"}") && !follows_probe("sure!"));
    }
}
