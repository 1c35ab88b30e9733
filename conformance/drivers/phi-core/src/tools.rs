//! Fixture tools (suite README §1.3) as phi-core `AgentTool`s: scripted step players, and sub-agent
//! tools built with phi-core's own `SubAgentTool`.

use crate::provider::{Reports, ScriptedProvider, NEVER_CANCELLED_S};
use crate::shared::Shared;
use crate::spec;
use async_trait::async_trait;
use phi_core::provider::ModelConfig;
use phi_core::{AgentTool, RetryConfig, SubAgentTool, ToolContext, ToolError, ToolResult};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long `wait_for_event` and `block_until_cancelled` wait before failing the call (phi's reference
/// driver bounds them too), so a fixture phi-core cannot satisfy ends with a message, not a timeout.
const WAIT_S: u64 = NEVER_CANCELLED_S;

/// What a tool's `{"raise": ...}` step throws: a panic with this payload (Rust's unexpected failure).
pub struct ToolPanic(pub String);

pub struct ScriptedTool {
    shared: Arc<Shared>,
    name: String,
    description: String,
    parameters: Value,
    timeout: Option<Duration>,
    calls: serde_json::Map<String, Value>,
    default: Vec<Value>,
}

#[async_trait]
impl AgentTool for ScriptedTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        self.parameters.clone()
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let outcome = self.play(params, ctx).await;
        crate::clock::tick();
        outcome
    }
}

impl ScriptedTool {
    async fn play(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let id = ctx.tool_call_id.clone();
        self.shared.write(json!({"kind": "tool_executed", "name": self.name, "tool_call_id": id, "args": params}));
        self.shared.fire("tool", &json!({"tool": id}));
        let steps = match self.calls.get(&id) {
            Some(Value::Array(steps)) => steps.clone(),
            _ => self.default.clone(),
        };
        for step in &steps {
            self.shared.sync();
            if let Some(update) = step.get("update") {
                if let Some(on_update) = &ctx.on_update {
                    on_update(spec::tool_result_in(update));
                }
            } else if let Some(text) = step.get("progress") {
                if let Some(on_progress) = &ctx.on_progress {
                    on_progress(text.as_str().unwrap_or("").to_string());
                }
            } else if let Some(ms) = step.get("sleep_ms") {
                // deliberately ignores cancellation
                tokio::time::sleep(Duration::from_millis(ms.as_u64().unwrap_or(0))).await;
            } else if let Some(pattern) = step.get("wait_for_event") {
                self.wait_for_event(pattern).await?;
            } else if step.get("block_until_cancelled").is_some() {
                tokio::select! {
                    _ = ctx.cancel.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_secs(WAIT_S)) => {
                        return Err(ToolError::Failed(format!("block_until_cancelled: not cancelled within {WAIT_S} s (driver bound)")));
                    }
                }
            } else if let Some(result) = step.get("result") {
                return Ok(spec::tool_result_in(result));
            } else if let Some(message) = step.get("error") {
                return Err(ToolError::Failed(message.as_str().unwrap_or("").to_string()));
            } else if let Some(raise) = step.get("raise") {
                let kind = raise.get("type").and_then(Value::as_str).unwrap_or("RuntimeError");
                let message = raise.get("message").and_then(Value::as_str).unwrap_or("");
                std::panic::panic_any(ToolPanic(format!("{kind}: {message}")));
            }
        }
        Ok(spec::tool_result_in(&json!("")))
    }

    /// Block until an event matching `pattern` has been emitted (observed: read from phi-core's
    /// channel, whether or not the application has reacted to it yet).
    async fn wait_for_event(&self, pattern: &Value) -> Result<(), ToolError> {
        let mut seen = self.shared.seen_rx.clone();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(WAIT_S);
        loop {
            self.shared.sync();
            seen.borrow_and_update();
            if self.shared.saw(pattern) {
                return Ok(());
            }
            tokio::select! {
                _ = seen.changed() => {}
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(ToolError::Failed(format!("wait_for_event: no {pattern} within {WAIT_S} s (driver bound)")));
                }
            }
        }
    }
}

/// A fixture's `tools` (the run's, or a sub-agent's child run's).
pub fn make_tools(shared: &Arc<Shared>, specs: &[Value]) -> Vec<Arc<dyn AgentTool>> {
    specs.iter().map(|spec| make_tool(shared, spec)).collect()
}

fn make_tool(shared: &Arc<Shared>, spec: &Value) -> Arc<dyn AgentTool> {
    let name = spec.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let description = spec.get("description").and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(child) = spec.get("sub_agent") {
        return Arc::new(sub_agent(shared, &name, &description, child));
    }
    Arc::new(ScriptedTool {
        shared: shared.clone(),
        name,
        description,
        parameters: spec.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
        timeout: spec.get("timeout_ms").and_then(Value::as_u64).map(Duration::from_millis),
        calls: spec.get("calls").and_then(Value::as_object).cloned().unwrap_or_default(),
        default: spec
            .get("default")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| vec![json!({"result": "ok"})]),
    })
}

/// phi-core's `SubAgentTool` with the child's scripted provider and tools. It has no depth bound
/// (`max_depth`) and no per-call timeout of its own; its child's events stay inside it (it forwards
/// text deltas and progress to the parent call as updates), so no `child_event` line can be written.
fn sub_agent(shared: &Arc<Shared>, name: &str, description: &str, child: &Value) -> SubAgentTool {
    let mut model = ModelConfig::anthropic("mock-model", "mock-model", "");
    model.provider = "mock".into();
    let provider = ScriptedProvider::new(
        shared.clone(),
        format!("child:{name}"),
        Reports::Child(name.to_string()),
        child.get("provider").unwrap_or(&Value::Null),
    );
    let tools = make_tools(shared, child.get("tools").and_then(Value::as_array).map_or(&[], |v| v));
    let mut tool = SubAgentTool::new(name, model)
        .with_provider_override(Arc::new(provider))
        .with_system_prompt(child.get("system_prompt").and_then(Value::as_str).unwrap_or(""))
        .with_tools(tools)
        // SubAgentTool's own retry count (3), with the suite's zero backoff delays
        .with_retry_config(RetryConfig { initial_delay_ms: 0, max_delay_ms: 0, ..RetryConfig::default() });
    if !description.is_empty() {
        tool = tool.with_description(description);
    }
    if let Some(turns) = child.get("max_turns").and_then(Value::as_u64) {
        tool = tool.with_max_turns(turns as usize);
    }
    if let Some(parent) = child.get("parent_loop_id").and_then(Value::as_str) {
        tool = tool.with_parent_loop_id(parent);
    }
    tool
}
