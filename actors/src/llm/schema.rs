//! JSON in and out of the model: the schema a reply is held to ([`SchemaSpec`], derived from the protocol type
//! with schemars), and the JSON object found in a reply as small models write it.

use schemars::JsonSchema;
use serde_json::Value;

/// A JSON schema the reply must follow, named for the server (`[a-zA-Z0-9_-]`, at most 64 characters).
#[derive(Debug, Clone)]
pub struct SchemaSpec {
    pub name: &'static str,
    pub schema: Value,
}

/// The JSON schema of `T`, every `$ref` inlined (some servers' grammar converters do not follow refs).
pub fn schema_of<T: JsonSchema>() -> Value {
    let settings = schemars::r#gen::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    serde_json::to_value(settings.into_generator().into_root_schema_for::<T>()).unwrap_or(Value::Null)
}

/// The JSON object in a reply: without markdown fences or prose around it.
pub fn extract_json(text: &str) -> &str {
    let trimmed = text.trim();
    match (trimmed.find('{'), trimmed.rfind('}')) {
        (Some(start), Some(end)) if start < end => &trimmed[start..=end],
        _ => trimmed,
    }
}

/// The reply with raw control characters inside its strings escaped: small models write a line break inside a
/// JSON string as a real one, which JSON forbids but whose meaning is plain.
pub fn escape_controls_in_strings(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.chars().any(|c| c.is_control()) {
        return std::borrow::Cow::Borrowed(json);
    }
    let (mut out, mut in_string, mut escaped) = (String::with_capacity(json.len() + 16), false, false);
    for c in json.chars() {
        match c {
            _ if escaped => {
                escaped = false;
                out.push(c);
            }
            '\\' if in_string => {
                escaped = true;
                out.push(c);
            }
            '"' => {
                in_string = !in_string;
                out.push(c);
            }
            '\n' if in_string => out.push_str("\\n"),
            '\r' if in_string => out.push_str("\\r"),
            '\t' if in_string => out.push_str("\\t"),
            c if in_string && c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}
