//! Subset matching (suite README §3) for action triggers and `wait_for_event` patterns.

use serde_json::Value;

pub fn matches(expected: &Value, actual: &Value) -> bool {
    match expected {
        Value::Object(map) if map.len() == 1 && map.keys().next().map_or(false, |k| k.starts_with('$')) => {
            let (key, arg) = map.iter().next().expect("one key");
            let text = actual.as_str();
            match key.as_str() {
                "$any" => true,
                "$absent" => actual.is_null(),
                "$startswith" => text.zip(arg.as_str()).map_or(false, |(t, a)| t.starts_with(a)),
                "$contains" => text.zip(arg.as_str()).map_or(false, |(t, a)| t.contains(a)),
                "$type" => arg.as_str() == Some(type_name(actual)),
                _ => false,
            }
        }
        Value::Object(map) => {
            let Some(actual) = actual.as_object() else { return false };
            map.iter().all(|(k, v)| match actual.get(k) {
                Some(a) => matches(v, a),
                None => v.is_null(),
            })
        }
        Value::Array(items) => actual
            .as_array()
            .map_or(false, |a| a.len() == items.len() && items.iter().zip(a).all(|(e, x)| matches(e, x))),
        other => other == actual,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
