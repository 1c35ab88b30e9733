//! The fixture's hooks (suite README §1.2) on phi-core's `AgentLoopConfig` hook fields. Each call
//! writes its `hook` line (after the events phi-core sent before it), fires the actions bound to it,
//! then returns its scripted value; a scripted `{"raise": ...}` panics (Rust's exception), which
//! unwinds through phi-core's loop to the driver.
//!
//! `get_api_key` has no loop hook in phi-core: a key is resolved per model call by the provider,
//! from `ModelConfig.credentials` (a `CredentialProvider`), which is where the driver plays it.

use crate::out::lock;
use crate::shared::{RunKey, ScriptedFailure, Shared};
use crate::spec;
use async_trait::async_trait;
use phi_core::provider::{CredentialProvider, ProviderError};
use phi_core::agent_loop::AgentLoopConfig;
use phi_core::{AgentMessage, FilterResult, InputFilter, Message, Usage};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The values a hook returns call by call: `returns[n]` for the n-th call, then `default`.
struct Script {
    returns: Vec<Value>,
    default: Value,
    count: Mutex<usize>,
}

impl Script {
    fn new(spec: &Value, default: Value) -> Script {
        let (returns, default) = match spec {
            Value::Object(o) if o.is_empty() => (vec![], default),
            Value::Object(o) => (
                o.get("returns").and_then(Value::as_array).cloned().unwrap_or_default(),
                o.get("default").cloned().unwrap_or(default),
            ),
            Value::Array(items) => (items.clone(), default),
            Value::Null => (vec![], default),
            other => (vec![], other.clone()),
        };
        Script { returns, default, count: Mutex::new(0) }
    }

    fn next(&self) -> Value {
        let n = {
            let mut count = lock(&self.count);
            *count += 1;
            *count - 1
        };
        let value = self.returns.get(n).cloned().unwrap_or_else(|| self.default.clone());
        if let Some(text) = value.as_object().filter(|o| o.len() == 1).and_then(|o| o.get("raise")) {
            std::panic::panic_any(ScriptedFailure(text.as_str().unwrap_or("").to_string()));
        }
        value
    }

    /// A veto hook's answer: only an explicit `false` vetoes (SPEC §4.1).
    fn allows(&self) -> bool {
        self.next() != Value::Bool(false)
    }
}

/// A hook call: its line (arguments by position), then the actions bound to it (by name).
fn called(shared: &Shared, name: &str, named: Value) {
    let args: Vec<Value> = named.as_object().map(|o| o.values().cloned().collect()).unwrap_or_default();
    shared.write(json!({"kind": "hook", "name": name, "args": args}));
    let mut moment = named;
    moment["hook"] = json!(name);
    shared.fire("hook", &moment);
}

fn veto(shared: &Shared, key: &RunKey, allowed: bool) -> bool {
    if !allowed {
        lock(&shared.vetoed).insert(key.clone());
    }
    allowed
}

fn usage_json(usage: &Usage) -> Value {
    spec::usage_out(usage)
}

/// The default conversion (phi-core's `default_convert_to_llm`, which is not public): keep what a
/// model can read, drop extension messages.
pub fn default_convert(messages: &[AgentMessage]) -> Vec<Message> {
    messages.iter().filter_map(|m| m.as_llm().cloned()).collect()
}

/// Install the fixture's `config.hooks` on `config`. Unknown hook names are refused.
pub fn install(config: &mut AgentLoopConfig, hooks: &Value, shared: &Arc<Shared>, key: &RunKey) -> Result<(), String> {
    let Some(hooks) = hooks.as_object() else { return Ok(()) };
    for (name, spec) in hooks {
        let sh = shared.clone();
        let k = key.clone();
        match name.as_str() {
            "before_loop" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.before_loop = Some(Arc::new(move |messages, index| {
                    called(&sh, "before_loop", json!({"message_count": messages.len(), "loop_index": index}));
                    let go = veto(&sh, &k, script.allows());
                    Box::pin(async move { go })
                }));
            }
            "before_turn" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.before_turn = Some(Arc::new(move |messages, turn| {
                    called(&sh, "before_turn", json!({"message_count": messages.len(), "turn_index": turn}));
                    let go = veto(&sh, &k, script.allows());
                    Box::pin(async move { go })
                }));
            }
            "after_turn" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.after_turn = Some(Arc::new(move |messages, usage| {
                    called(&sh, "after_turn", json!({"message_count": messages.len(), "usage": usage_json(usage)}));
                    script.next();
                    Box::pin(async {})
                }));
            }
            "after_loop" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.after_loop = Some(Arc::new(move |messages, usage| {
                    called(&sh, "after_loop", json!({"message_count": messages.len(), "usage": usage_json(usage)}));
                    script.next();
                    Box::pin(async {})
                }));
            }
            "on_error" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.on_error = Some(Arc::new(move |message| {
                    called(&sh, "on_error", json!({"error_message": message}));
                    script.next();
                    Box::pin(async {})
                }));
            }
            "before_tool_execution" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.before_tool_execution = Some(Arc::new(move |name, id, args| {
                    called(&sh, "before_tool_execution", json!({"tool_name": name, "tool_call_id": id, "args": args}));
                    let go = script.allows();
                    Box::pin(async move { go })
                }));
            }
            "after_tool_execution" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.after_tool_execution = Some(Arc::new(move |name, id, is_error| {
                    called(&sh, "after_tool_execution", json!({"tool_name": name, "tool_call_id": id, "is_error": is_error}));
                    script.next();
                    Box::pin(async {})
                }));
            }
            "before_tool_execution_update" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.before_tool_execution_update = Some(Arc::new(move |name, id, text| {
                    called(&sh, "before_tool_execution_update", json!({"tool_name": name, "tool_call_id": id, "text": text}));
                    script.allows()
                }));
            }
            "after_tool_execution_update" => {
                let script = Arc::new(Script::new(spec, json!(true)));
                config.after_tool_execution_update = Some(Arc::new(move |name, id, text| {
                    called(&sh, "after_tool_execution_update", json!({"tool_name": name, "tool_call_id": id, "text": text}));
                    script.next();
                }));
            }
            "transform_context" => {
                let keep = spec.get("keep_last").and_then(Value::as_u64).unwrap_or(0) as usize;
                config.transform_context = Some(Arc::new(move |messages: Vec<AgentMessage>| {
                    called(&sh, "transform_context", json!({"message_count": messages.len()}));
                    if keep > 0 && messages.len() > keep {
                        messages[messages.len() - keep..].to_vec()
                    } else {
                        messages
                    }
                }));
            }
            "convert_to_llm" => {
                config.convert_to_llm = Some(Arc::new(move |messages: &[AgentMessage]| {
                    called(&sh, "convert_to_llm", json!({"message_count": messages.len()}));
                    default_convert(messages)
                }));
            }
            "get_api_key" => {
                let provider = config.model_config.provider.clone();
                config.model_config.credentials =
                    Some(Arc::new(ScriptedKey { shared: sh, provider, script: Script::new(spec, Value::Null) }));
            }
            other => return Err(format!("unknown hook {other:?}")),
        }
    }
    Ok(())
}

/// `get_api_key` as phi-core has it: the model config's credential source, asked by the provider.
struct ScriptedKey {
    shared: Arc<Shared>,
    provider: String,
    script: Script,
}

impl std::fmt::Debug for ScriptedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScriptedKey")
    }
}

#[async_trait]
impl CredentialProvider for ScriptedKey {
    async fn current(&self) -> Result<String, ProviderError> {
        called(&self.shared, "get_api_key", json!({"provider": self.provider}));
        Ok(self.script.next().as_str().unwrap_or("").to_string())
    }
}

/// An input filter (suite README §1.2): a scripted result, passing unless the text contains
/// `if_contains` when that is given.
pub struct ScriptedFilter {
    pub shared: Arc<Shared>,
    pub index: usize,
    pub spec: Value,
}

#[async_trait]
impl InputFilter for ScriptedFilter {
    async fn filter(&self, text: &str) -> FilterResult {
        called(&self.shared, "input_filter", json!({"index": self.index, "text": text}));
        if let Some(needle) = self.spec.get("if_contains").and_then(Value::as_str) {
            if !text.contains(needle) {
                return FilterResult::Pass;
            }
        }
        let text = self.spec.get("text").and_then(Value::as_str).unwrap_or("").to_string();
        match self.spec.get("action").and_then(Value::as_str).unwrap_or("pass") {
            "warn" => FilterResult::Warn(text),
            "reject" => FilterResult::Reject(text),
            _ => FilterResult::Pass,
        }
    }
}
