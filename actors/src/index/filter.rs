//! [`PayloadFilter`]: `SearchIntent.filters` parsed against a typed schema of filterable fields. Unknown fields and
//! values of the wrong type are rejected with a message naming the field; nothing is silently ignored.

use std::collections::BTreeMap;

use serde_json::Value;
use sleuth_messages::JsonMap;

pub use crate::config::FieldType;

/// One condition on one payload field.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The field equals any of these strings.
    Keyword(Vec<String>),
    /// The field equals any of these integers.
    Integer(Vec<i64>),
    Bool(bool),
    /// Inclusive or exclusive bounds, for integer and float fields.
    Range {
        gt: Option<f64>,
        gte: Option<f64>,
        lt: Option<f64>,
        lte: Option<f64>,
    },
    /// The field (an array of reader keys) is empty or missing (shared), or holds one of these keys. Never
    /// parsed from an intent: only [`PayloadFilter::readable_by`] makes it.
    Readable(Vec<String>),
}

/// A conjunction of conditions, keyed by payload path (`doc_id`, `title`, `metadata.year`, …).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PayloadFilter {
    pub must: Vec<(String, Condition)>,
}

/// The fields a search intent may filter on, and the payload path each one maps to.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterSchema {
    fields: BTreeMap<String, (String, FieldType)>,
}

impl FilterSchema {
    /// `id`/`doc_id` and `title` always; `metadata` names each extra field with its type (stored under `metadata.`).
    pub fn new(metadata: &BTreeMap<String, FieldType>) -> FilterSchema {
        let mut fields = BTreeMap::new();
        fields.insert("id".to_string(), ("doc_id".to_string(), FieldType::Keyword));
        fields.insert("doc_id".to_string(), ("doc_id".to_string(), FieldType::Keyword));
        fields.insert("title".to_string(), ("title".to_string(), FieldType::Keyword));
        for (name, ty) in metadata {
            fields.insert(name.clone(), (format!("metadata.{name}"), *ty));
        }
        FilterSchema { fields }
    }

    /// Every payload path to index, with its type, without duplicates.
    pub fn indexed_paths(&self) -> Vec<(String, FieldType)> {
        let mut paths: Vec<(String, FieldType)> = self.fields.values().cloned().collect();
        paths.push((super::READERS.to_string(), FieldType::Keyword));
        paths.sort_by(|a, b| a.0.cmp(&b.0));
        paths.dedup_by(|a, b| a.0 == b.0);
        paths
    }

    /// Parses an intent's filters. Errors name the field and say what was expected.
    pub fn parse(&self, filters: &JsonMap) -> Result<PayloadFilter, String> {
        let mut must = Vec::new();
        for (key, value) in filters {
            let Some((path, ty)) = self.fields.get(key) else {
                let allowed: Vec<&str> = self.fields.keys().map(String::as_str).collect();
                return Err(format!("unknown filter field '{key}', allowed: {}", allowed.join(", ")));
            };
            must.push((path.clone(), condition(key, *ty, value)?));
        }
        Ok(PayloadFilter { must })
    }
}

fn condition(key: &str, ty: FieldType, value: &Value) -> Result<Condition, String> {
    let wrong = |expected: &str| Err(format!("filter '{key}' must be {expected}, got {value}"));
    match ty {
        FieldType::Keyword => match value {
            Value::String(s) => Ok(Condition::Keyword(vec![s.clone()])),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or(()))
                .collect::<Result<Vec<_>, ()>>()
                .map(Condition::Keyword)
                .or_else(|_| wrong("a string or a non-empty array of strings")),
            _ => wrong("a string or a non-empty array of strings"),
        },
        FieldType::Bool => match value {
            Value::Bool(b) => Ok(Condition::Bool(*b)),
            _ => wrong("true or false"),
        },
        FieldType::Integer | FieldType::Float => {
            let integer = ty == FieldType::Integer;
            let number = |v: &Value| -> Option<f64> { if integer { v.as_i64().map(|i| i as f64) } else { v.as_f64() } };
            let expected = if integer {
                "an integer, an array of integers or a range {gt, gte, lt, lte}"
            } else {
                "a number or a range {gt, gte, lt, lte}"
            };
            match value {
                Value::Number(_) if integer => {
                    value.as_i64().map(|i| Condition::Integer(vec![i])).ok_or(()).or_else(|_| wrong(expected))
                }
                Value::Number(n) => {
                    let x = n.as_f64().unwrap_or(f64::NAN);
                    Ok(Condition::Range { gt: None, gte: Some(x), lt: None, lte: Some(x) })
                }
                Value::Array(items) if integer && !items.is_empty() => items
                    .iter()
                    .map(|v| v.as_i64().ok_or(()))
                    .collect::<Result<Vec<_>, ()>>()
                    .map(Condition::Integer)
                    .or_else(|_| wrong(expected)),
                Value::Object(bounds) if !bounds.is_empty() => {
                    let (mut gt, mut gte, mut lt, mut lte) = (None, None, None, None);
                    for (bound, v) in bounds {
                        let x = number(v).ok_or_else(|| {
                            format!(
                                "filter '{key}': bound '{bound}' must be {}",
                                if integer { "an integer" } else { "a number" }
                            )
                        })?;
                        match bound.as_str() {
                            "gt" => gt = Some(x),
                            "gte" => gte = Some(x),
                            "lt" => lt = Some(x),
                            "lte" => lte = Some(x),
                            other => {
                                return Err(format!(
                                    "filter '{key}': unknown range bound '{other}', allowed: gt, gte, lt, lte"
                                ));
                            }
                        }
                    }
                    Ok(Condition::Range { gt, gte, lt, lte })
                }
                _ => wrong(expected),
            }
        }
    }
}

impl PayloadFilter {
    pub fn is_empty(&self) -> bool {
        self.must.is_empty()
    }

    /// This filter, restricted to what `access` may read.
    pub fn readable_by(mut self, access: &crate::access::Access) -> PayloadFilter {
        if !access.is_everything() {
            self.must.push((super::READERS.to_string(), Condition::Readable(access.keys().to_vec())));
        }
        self
    }

    /// A filter on document ids only.
    pub fn doc_ids(ids: Vec<String>) -> PayloadFilter {
        PayloadFilter { must: vec![("doc_id".into(), Condition::Keyword(ids))] }
    }

    /// The document ids this filter pins down, when it is a pure id lookup.
    pub fn id_lookup(&self) -> Option<&[String]> {
        match self.must.as_slice() {
            [(path, Condition::Keyword(ids))] if path == "doc_id" => Some(ids),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> FilterSchema {
        FilterSchema::new(&BTreeMap::from([
            ("year".to_string(), FieldType::Integer),
            ("score".to_string(), FieldType::Float),
            ("lang".to_string(), FieldType::Keyword),
            ("draft".to_string(), FieldType::Bool),
        ]))
    }

    fn parse(v: Value) -> Result<PayloadFilter, String> {
        schema().parse(&v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    #[test]
    fn typed_filters_parse_into_conditions() {
        let cases = [
            (json!({"id": "a"}), ("doc_id", Condition::Keyword(vec!["a".into()]))),
            (json!({"doc_id": ["a", "b"]}), ("doc_id", Condition::Keyword(vec!["a".into(), "b".into()]))),
            (json!({"lang": "en"}), ("metadata.lang", Condition::Keyword(vec!["en".into()]))),
            (json!({"year": 2001}), ("metadata.year", Condition::Integer(vec![2001]))),
            (json!({"year": [1, 2]}), ("metadata.year", Condition::Integer(vec![1, 2]))),
            (
                json!({"year": {"gte": 1990, "lt": 2000}}),
                ("metadata.year", Condition::Range { gt: None, gte: Some(1990.0), lt: Some(2000.0), lte: None }),
            ),
            (
                json!({"score": {"gt": 0.5}}),
                ("metadata.score", Condition::Range { gt: Some(0.5), gte: None, lt: None, lte: None }),
            ),
            (json!({"draft": false}), ("metadata.draft", Condition::Bool(false))),
        ];
        for (input, (path, cond)) in cases {
            let f = parse(input.clone()).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(f.must, vec![(path.to_string(), cond)], "{input}");
        }
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_rejected_by_name() {
        let cases = [
            (json!({"colour": "red"}), "unknown filter field 'colour'"),
            (json!({"year": "2001"}), "filter 'year' must be an integer"),
            (json!({"year": 20.5}), "filter 'year' must be an integer"),
            (json!({"year": {"after": 3}}), "unknown range bound 'after'"),
            (json!({"year": {"gt": "x"}}), "bound 'gt' must be an integer"),
            (json!({"lang": 3}), "filter 'lang' must be a string"),
            (json!({"lang": []}), "filter 'lang' must be a string"),
            (json!({"id": [1]}), "filter 'id' must be a string"),
            (json!({"draft": "no"}), "filter 'draft' must be true or false"),
        ];
        for (input, expected) in cases {
            let err = parse(input.clone()).unwrap_err();
            assert!(err.contains(expected), "{input}: {err}");
        }
    }

    #[test]
    fn id_lookup_is_recognised() {
        assert_eq!(parse(json!({"id": ["a"]})).unwrap().id_lookup(), Some(&["a".to_string()][..]));
        assert_eq!(parse(json!({"lang": "en"})).unwrap().id_lookup(), None);
    }
}
