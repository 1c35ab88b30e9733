//! One fixture: build phi-core's context and configuration from it, run `agent_loop`,
//! `agent_loop_continue` or `agent_loop_parallel`, and write what happened (suite README §2).

use crate::hooks::{self, ScriptedFilter};
use crate::out::{lock, Gate};
use crate::provider::{ProviderPanic, Reports, ScriptedProvider};
use crate::shared::{RunKey, ScriptedFailure, Shared};
use crate::spec;
use crate::tools::{make_tools, ToolPanic};
use futures::FutureExt;
use phi_core::agent_loop::{AgentLoopConfig, GetMessagesFn};
use phi_core::context::{ContextConfig, ExecutionLimits};
use phi_core::provider::{ModelConfig, ResponseFormat};
use phi_core::{
    agent_loop, agent_loop_continue, agent_loop_parallel, AgentContext, AgentMessage, CacheConfig, ContinuationKind,
    ElaborateEvaluation, EvaluationStrategy, InputFilter, LlmJudgeEvaluation, PickFirstEvaluation,
    RetryConfig, ThinkingLevel, TokenEfficientEvaluation, ToolExecutionStrategy, TransparentEvaluation, TurnTrigger,
};
use serde_json::{json, Value};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Why phi-core cannot run a fixture, or None. Only what phi-core's API cannot express.
pub fn unsupported(fixture: &Value) -> Option<String> {
    let uses_clock = fixture
        .get("actions")
        .and_then(Value::as_array)
        .map_or(false, |a| a.iter().any(|x| x.get("do").and_then(|d| d.get("advance_clock_ms")).is_some()));
    let has_duration = fixture.pointer("/config/limits/max_duration_ms").is_some()
        || fixture
            .get("branches")
            .and_then(Value::as_array)
            .map_or(false, |b| b.iter().any(|x| x.pointer("/config/limits/max_duration_ms").is_some()));
    if uses_clock || has_duration {
        // The attack on issue 37 set max_duration and played advance_clock_ms as real sleeps: 3 of
        // the 5 fixtures then passed, on timing a CI run cannot rely on.
        return Some(
            "phi-core's ExecutionLimits.max_duration is public but reads the real clock \
             (ExecutionTracker.started_at is a std::time::Instant), so the suite's virtual clock \
             (advance_clock_ms) cannot drive it deterministically; with real sleeps in its place 3 of \
             these 5 fixtures pass, which a CI suite cannot rely on"
                .into(),
        );
    }
    None
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn thinking_level(name: &str) -> ThinkingLevel {
    serde_json::from_value(json!(name)).unwrap_or(ThinkingLevel::Off)
}

/// The config segment of a loop id, as phi-core derives it (`BasicAgent::next_loop_id`,
/// `derive_config_segment`): the configured id, else `{provider}.{model slug}[.thinking]`.
fn config_segment(config: &AgentLoopConfig) -> String {
    if let Some(id) = &config.config_id {
        return id.clone();
    }
    let slug: String =
        config.model_config.id.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '-' }).collect();
    let thinking = if config.thinking_level != ThinkingLevel::Off { ".thinking" } else { "" };
    format!("{}.{}{}", config.model_config.provider, slug, thinking)
}

fn queue_reader(shared: &Arc<Shared>, steering: bool, all: bool) -> GetMessagesFn {
    let shared = shared.clone();
    Box::new(move || {
        shared.sync();
        let mut queue = lock(if steering { &shared.steering } else { &shared.follow_up });
        if all {
            queue.drain(..).collect()
        } else {
            queue.pop_front().into_iter().collect()
        }
    })
}

/// phi-core's AgentLoopConfig for the fixture's `config` (the run's, or a branch's merged one).
fn build_config(
    spec: &Value,
    provider_spec: &Value,
    shared: &Arc<Shared>,
    key: RunKey,
    reports: Reports,
    queues: bool,
) -> Result<AgentLoopConfig, String> {
    let model = spec.get("model").cloned().unwrap_or(Value::Null);
    let mut model_config = ModelConfig::anthropic(
        str_of(&model, "id").unwrap_or("mock-model"),
        str_of(&model, "id").unwrap_or("mock-model"),
        "",
    );
    model_config.provider = str_of(&model, "provider").unwrap_or("mock").to_string();
    let tool_execution = match str_of(spec, "tool_execution").unwrap_or("parallel") {
        "sequential" => ToolExecutionStrategy::Sequential,
        "batched" => ToolExecutionStrategy::Batched {
            size: spec.get("batch_size").and_then(Value::as_u64).unwrap_or(4) as usize,
        },
        _ => ToolExecutionStrategy::Parallel,
    };
    let limits = spec.get("limits").map(|l| ExecutionLimits {
        max_turns: l.get("max_turns").and_then(Value::as_u64).map_or(usize::MAX, |n| n as usize),
        max_total_tokens: l.get("max_total_tokens").and_then(Value::as_u64).map_or(usize::MAX, |n| n as usize),
        max_duration: Duration::MAX,
        max_cost: None,
    });
    let context_config = spec.get("context").map(|c| {
        let n = |k: &str, d: usize| c.get(k).and_then(Value::as_u64).map_or(d, |v| v as usize);
        let base = ContextConfig::default();
        ContextConfig {
            max_context_tokens: n("max_context_tokens", base.max_context_tokens),
            system_prompt_tokens: n("system_prompt_tokens", base.system_prompt_tokens),
            keep_recent: n("keep_recent", base.keep_recent),
            keep_first: n("keep_first", base.keep_first),
            tool_output_max_lines: n("tool_output_max_lines", base.tool_output_max_lines),
            ..base
        }
    });
    let steering_all = str_of(spec, "steering_mode") == Some("all");
    let follow_up_all = str_of(spec, "follow_up_mode") == Some("all");
    let provider = ScriptedProvider::new(shared.clone(), key.clone(), reports, provider_spec);
    let mut config = AgentLoopConfig {
        model_config,
        provider_override: Some(Arc::new(provider)),
        thinking_level: thinking_level(str_of(spec, "thinking_level").unwrap_or("off")),
        max_tokens: spec.get("max_tokens").and_then(Value::as_u64).map(|n| n as u32),
        temperature: spec.get("temperature").and_then(Value::as_f64).map(|t| t as f32),
        convert_to_llm: None,
        transform_context: None,
        get_steering_messages: if queues { Some(queue_reader(shared, true, steering_all)) } else { None },
        get_follow_up_messages: if queues { Some(queue_reader(shared, false, follow_up_all)) } else { None },
        context_config,
        execution_limits: limits,
        cache_config: CacheConfig::default(),
        tool_execution,
        tool_timeout: spec.get("tool_timeout_ms").and_then(Value::as_u64).map(Duration::from_millis),
        // the suite's backoff delays are always zero (suite README §1.2)
        retry_config: RetryConfig {
            max_retries: spec.pointer("/retry/max_retries").and_then(Value::as_u64).unwrap_or(0) as usize,
            initial_delay_ms: 0,
            backoff_multiplier: 2.0,
            max_delay_ms: 0,
        },
        before_turn: None,
        after_turn: None,
        before_loop: None,
        after_loop: None,
        before_tool_execution: None,
        after_tool_execution: None,
        before_tool_execution_update: None,
        after_tool_execution_update: None,
        on_error: None,
        before_compaction_start: None,
        after_compaction_end: None,
        input_filters: vec![],
        first_turn_trigger: match str_of(spec, "first_turn_trigger") {
            Some("SubAgent") => TurnTrigger::SubAgent,
            Some("Continuation") => TurnTrigger::Continuation,
            Some("Branch") => TurnTrigger::Branch,
            _ => TurnTrigger::User,
        },
        config_id: str_of(spec, "config_id").map(str::to_string),
        context_translation: None,
        prun_pending: None,
        revert_pending: None,
        response_format: ResponseFormat::Text,
    };
    if let Some(filters) = spec.get("input_filters").and_then(Value::as_array) {
        config.input_filters = filters
            .iter()
            .enumerate()
            .map(|(index, f)| {
                Arc::new(ScriptedFilter { shared: shared.clone(), index, spec: f.clone() }) as Arc<dyn InputFilter>
            })
            .collect();
    }
    hooks::install(&mut config, spec.get("hooks").unwrap_or(&Value::Null), shared, &key)?;
    Ok(config)
}

fn build_context(fixture: &Value, shared: &Arc<Shared>) -> Result<AgentContext, String> {
    let spec = fixture.get("context").cloned().unwrap_or_else(|| json!({}));
    let messages = spec::messages_in(spec.get("messages"))?;
    Ok(AgentContext {
        system_prompt: str_of(&spec, "system_prompt").unwrap_or("").to_string(),
        messages,
        tools: make_tools(shared, fixture.get("tools").and_then(Value::as_array).map_or(&[], |v| v)),
        agent_id: str_of(&spec, "agent_id").map(str::to_string),
        session_id: str_of(&spec, "session_id").map(str::to_string),
        loop_id: str_of(&spec, "loop_id").map(str::to_string),
        parent_loop_id: str_of(&spec, "parent_loop_id").map(str::to_string),
        continuation_kind: spec.get("continuation_kind").and_then(spec::continuation_in),
        ..AgentContext::default()
    })
}

/// The `error` line of a run that panicked: application code that raised (`ScriptedFailure`),
/// phi-core's `assert!`s on a continuation it refuses (`InvalidContinue`), or another panic.
fn panic_line(payload: Box<dyn Any + Send>) -> Value {
    let (name, message) = if let Some(ScriptedFailure(m)) = payload.downcast_ref() {
        ("ScriptedFailure", m.clone())
    } else if let Some(ToolPanic(m)) = payload.downcast_ref() {
        ("Panic", format!("a tool panicked: {m}"))
    } else if let Some(ProviderPanic(m)) = payload.downcast_ref() {
        ("Panic", format!("the provider panicked: {m}"))
    } else {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        let refusal = ["agent_loop_continue requires", "Cannot continue", "agent_loop_parallel with empty prompts"];
        if refusal.iter().any(|r| text.contains(r)) {
            ("InvalidContinue", text)
        } else if text.contains("TransparentEvaluation") {
            ("ConfigError", text)
        } else {
            ("Panic", text)
        }
    };
    json!({"kind": "error", "error": name, "message": message})
}

fn strategy(fixture: &Value, shared: &Arc<Shared>) -> Result<Arc<dyn EvaluationStrategy>, String> {
    let name = fixture.get("strategy").cloned().unwrap_or(json!("pick_first"));
    Ok(match name.as_str() {
        Some("pick_first") => Arc::new(PickFirstEvaluation),
        Some("transparent") => Arc::new(TransparentEvaluation),
        Some("token_efficient") => Arc::new(TokenEfficientEvaluation),
        Some("elaborate") => Arc::new(ElaborateEvaluation),
        _ => {
            let judge = name.get("llm_judge").ok_or_else(|| format!("unknown strategy {name}"))?;
            let mut merged = fixture.get("config").cloned().unwrap_or_else(|| json!({}));
            if let (Some(base), Some(over)) = (merged.as_object_mut(), judge.get("config").and_then(Value::as_object)) {
                base.extend(over.clone());
            }
            let judge_config = build_config(
                &merged,
                judge.get("provider").unwrap_or(&Value::Null),
                shared,
                "judge".into(),
                Reports::Main,
                false,
            )?;
            Arc::new(LlmJudgeEvaluation {
                judge_config,
                system_prompt: str_of(judge, "system_prompt").map(str::to_string),
            })
        }
    })
}

/// Run one fixture, writing its lines through `gate`.
pub async fn run_fixture(fixture: Value, gate: Arc<Gate>) {
    if let Some(reason) = unsupported(&fixture) {
        gate.write(&json!({"kind": "unsupported", "reason": reason}));
        return;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let shared = Shared::new(gate.clone(), rx);
    if let Err(message) = run(&fixture, &shared, tx).await {
        gate.write(&json!({"kind": "error", "error": "FixtureError", "message": message}));
    }
}

async fn run(fixture: &Value, shared: &Arc<Shared>, tx: mpsc::UnboundedSender<phi_core::AgentEvent>) -> Result<(), String> {
    let config_spec = fixture.get("config").cloned().unwrap_or_else(|| json!({}));
    let entry = str_of(fixture, "entry").unwrap_or("agent_loop");
    let parallel = entry == "agent_loop_parallel";
    let config = build_config(
        &config_spec,
        fixture.get("provider").unwrap_or(&Value::Null),
        shared,
        "main".into(),
        Reports::Main,
        !parallel,
    )?;
    let mut context = build_context(fixture, shared)?;
    if entry == "agent_loop_continue" {
        // What an application continuing a run does, as phi-core's own Agent does it
        // (`Agent::continue_loop` passes `Default`; `BasicAgent::continue_loop_with_sender` turns
        // `Initial` into `Default`): agent_loop_continue reports whatever kind the context holds, and
        // the seed leaves the kind to the caller (REQ-190, REQ-192). The tag of a Rerun/Branch stays
        // the fixture's: BasicAgent's timestamp tag is its own choice, not the loop's.
        context.continuation_kind = match context.continuation_kind.take() {
            None | Some(ContinuationKind::Initial) => Some(ContinuationKind::Default),
            kind => kind,
        };
    }
    shared.set_identity(context.loop_id.clone(), context.session_id.clone(), config_segment(&config));
    let prompts = spec::messages_in(fixture.get("prompts"))?;
    for action in fixture.get("actions").and_then(Value::as_array).into_iter().flatten() {
        let what = action.get("do").cloned().unwrap_or(Value::Null);
        match action.get("when") {
            Some(w) if w != "before_start" => shared.add_trigger(w, what)?,
            // a `raise` before the run is the caller's own exception: the run never starts
            _ => {
                if let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(|| shared.apply(&what, "before_start"))) {
                    shared.write(panic_line(payload));
                    return Ok(());
                }
            }
        }
    }
    let consumer = tokio::spawn(shared.clone().consume());
    let cancel = shared.cancel.clone();
    let mut selected = None;
    let outcome: Result<Vec<AgentMessage>, Box<dyn Any + Send>> = if parallel {
        let configs = fixture
            .get("branches")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, branch)| {
                let mut merged = config_spec.clone();
                if let (Some(base), Some(over)) = (merged.as_object_mut(), branch.get("config").and_then(Value::as_object)) {
                    base.extend(over.clone());
                }
                build_config(&merged, branch.get("provider").unwrap_or(&Value::Null), shared, format!("branch{i}"),
                             Reports::Branch(i), false)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let strategy = strategy(fixture, shared)?;
        let base = context.clone();
        AssertUnwindSafe(agent_loop_parallel(prompts, base, configs, strategy, tx, cancel))
            .catch_unwind()
            .await
            .map(|result| {
                selected = Some(result.selected_index);
                result.selected_messages
            })
    } else if entry == "agent_loop_continue" {
        AssertUnwindSafe(agent_loop_continue(&mut context, &config, tx, cancel)).catch_unwind().await
    } else {
        AssertUnwindSafe(agent_loop(prompts, &mut context, &config, tx, cancel)).catch_unwind().await
    };
    // the run's senders are gone once it returned (or unwound); tasks phi-core spawned to forward
    // events (a parallel branch's) may still hold some: let them deliver before the last lines
    let mut consumer = consumer;
    if tokio::time::timeout(Duration::from_millis(500), &mut consumer).await.is_err() {
        consumer.abort();
    }
    shared.finish();
    let last = match outcome {
        Ok(messages) => {
            let mut line = json!({"kind": "result", "messages": spec::messages_out(&messages)});
            if let Some(i) = selected {
                line["selected_config_index"] = json!(i);
            }
            line
        }
        Err(payload) => panic_line(payload),
    };
    let steering: Vec<AgentMessage> = lock(&shared.steering).iter().cloned().collect();
    let follow_up: Vec<AgentMessage> = lock(&shared.follow_up).iter().cloned().collect();
    shared.write(json!({"kind": "queues", "steering": spec::messages_out(&steering),
                        "follow_up": spec::messages_out(&follow_up)}));
    shared.write(json!({"kind": "context", "messages": spec::messages_out(&context.messages)}));
    shared.write(last);
    Ok(())
}
