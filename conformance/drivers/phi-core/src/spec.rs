//! JSON shapes: SPEC §2 messages in and out of phi-core's types.
//!
//! phi-core serialises messages almost as SPEC DATA-2/DATA-6 do (the seed's wire format); what
//! differs is extra bookkeeping (`turnId`, `nodeId`, ... on a message), which SPEC has no field for
//! and is dropped here, and fields a fixture may leave out (timestamps, usage), which are filled in
//! before phi-core's serde reads the message.

use chrono::{DateTime, SecondsFormat, Utc};
use phi_core::{AgentMessage, ContinuationKind, Message, ToolResult, Usage};
use serde_json::{json, Map, Value};

/// Keys phi-core adds to a serialised message (its turn and node bookkeeping) that SPEC §2 lacks.
const BOOKKEEPING: [&str; 5] = ["turnId", "nodeId", "parentId", "tags", "provenanceHint"];

/// A fixture's list of messages (`context.messages`, `prompts`); none when absent.
pub fn messages_in(list: Option<&Value>) -> Result<Vec<AgentMessage>, String> {
    list.and_then(Value::as_array).map(|ms| ms.iter().map(message_in).collect()).transpose().map(Option::unwrap_or_default)
}

/// A fixture message: a string is a user text message, an object is SPEC §2 JSON.
pub fn message_in(data: &Value) -> Result<AgentMessage, String> {
    let mut m = match data {
        Value::String(text) => json!({"role": "user", "content": [{"type": "text", "text": text}]}),
        Value::Object(_) => data.clone(),
        other => return Err(format!("a message must be a string or an object, got {other}")),
    };
    let obj = m.as_object_mut().ok_or("a message must be an object")?;
    let role = obj.get("role").and_then(Value::as_str).unwrap_or("user").to_string();
    if role != "extension" {
        obj.entry("timestamp").or_insert_with(|| json!(crate::clock::stamp()));
        if let Some(Value::String(text)) = obj.get("content") {
            let text = text.clone();
            obj.insert("content".into(), json!([{"type": "text", "text": text}]));
        }
        obj.entry("content").or_insert_with(|| json!([]));
    }
    match role.as_str() {
        "assistant" => {
            obj.entry("stopReason").or_insert_with(|| json!("stop"));
            obj.entry("model").or_insert_with(|| json!(""));
            obj.entry("provider").or_insert_with(|| json!(""));
            let usage = obj.get("usage").cloned().unwrap_or_else(|| json!({}));
            obj.insert("usage".into(), usage_in(&usage));
        }
        "toolResult" => {
            obj.entry("isError").or_insert_with(|| json!(false));
        }
        _ => {}
    }
    serde_json::from_value(m).map_err(|e| format!("not a message phi-core reads: {e}: {data}"))
}

/// A fixture's usage object with every field SPEC DATA-5 names (missing ones 0).
pub fn usage_in(data: &Value) -> Value {
    let mut out = Map::new();
    for key in ["input", "output", "reasoning", "cache_read", "cache_write", "total_tokens"] {
        out.insert(key.into(), data.get(key).cloned().unwrap_or(json!(0)));
    }
    Value::Object(out)
}

pub fn usage_of(data: &Value) -> Usage {
    serde_json::from_value(usage_in(data)).unwrap_or_default()
}

/// A fixture's tool result (`update` / `result` step): a string, or `{content, details}`.
pub fn tool_result_in(data: &Value) -> ToolResult {
    match data {
        Value::String(text) => ToolResult {
            content: vec![phi_core::Content::Text { text: text.clone() }],
            details: Value::Null,
            child_loop_id: None,
        },
        _ => {
            let content = data.get("content").cloned().unwrap_or_else(|| json!([]));
            ToolResult {
                content: serde_json::from_value(content).unwrap_or_default(),
                details: data.get("details").cloned().unwrap_or(Value::Null),
                child_loop_id: None,
            }
        }
    }
}

/// An AgentMessage in SPEC §2 JSON.
pub fn message_out(message: &AgentMessage) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
    if let Some(obj) = value.as_object_mut() {
        for key in BOOKKEEPING {
            obj.remove(key);
        }
    }
    value
}

pub fn llm_message_out(message: &Message) -> Value {
    serde_json::to_value(message).unwrap_or(Value::Null)
}

pub fn messages_out(messages: &[AgentMessage]) -> Value {
    Value::Array(messages.iter().map(message_out).collect())
}

/// A tool's result in an event (`ToolExecutionUpdate.partial_result`, `ToolExecutionEnd.result`).
pub fn tool_result_out(result: &ToolResult) -> Value {
    let mut out = json!({"content": result.content, "details": result.details});
    if let Some(id) = &result.child_loop_id {
        out["child_loop_id"] = json!(id);
    }
    out
}

pub fn usage_out(usage: &Usage) -> Value {
    serde_json::to_value(usage).unwrap_or(Value::Null)
}

/// An event's RFC 3339 UTC timestamp (SPEC EVT-1).
pub fn time_out(at: &DateTime<Utc>) -> Value {
    json!(at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// phi-core's continuation kind in SPEC EVT-2's shape. `Initial` is phi-core's name for "not a
/// continuation" (an origin call), which SPEC writes as null.
pub fn continuation_out(kind: &ContinuationKind) -> Value {
    match kind {
        ContinuationKind::Initial => Value::Null,
        ContinuationKind::Default => json!("Default"),
        ContinuationKind::Rerun { tag } => json!({"Rerun": {"tag": tag}}),
        ContinuationKind::Branch { tag } => json!({"Branch": {"tag": tag}}),
        ContinuationKind::Compaction => json!("Compaction"),
    }
}

/// A fixture's `continuation_kind`. phi-core's tags are strings, so a null tag becomes "".
pub fn continuation_in(data: &Value) -> Option<ContinuationKind> {
    let tag = |inner: &Value| inner.get("tag").and_then(Value::as_str).unwrap_or("").to_string();
    match data {
        Value::String(s) if s == "Default" => Some(ContinuationKind::Default),
        Value::String(s) if s == "Initial" => Some(ContinuationKind::Initial),
        Value::Object(o) if o.contains_key("Rerun") => Some(ContinuationKind::Rerun { tag: tag(&o["Rerun"]) }),
        Value::Object(o) if o.contains_key("Branch") => Some(ContinuationKind::Branch { tag: tag(&o["Branch"]) }),
        _ => None,
    }
}

/// JSON text with Python's default separators (`", "`, `": "`): how the fixture format streams a
/// tool call's `arguments` given as an object (suite README §1.4).
pub fn py_json(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("[{}]", items.iter().map(py_json).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// A float setting (temperature) as the fixture wrote it: f32 → shortest decimal → JSON number.
pub fn float_out(value: Option<f32>) -> Value {
    match value {
        None => Value::Null,
        Some(v) => format!("{v}").parse::<f64>().map(|f| json!(f)).unwrap_or(Value::Null),
    }
}
