//! The scripted model (suite README §1.4) as a phi-core `StreamProvider`, put in
//! `AgentLoopConfig.provider_override`. It sits beneath phi-core's retry loop, so every attempt of a
//! retried call reaches it (DRIVERS.md §1.3), and it writes a `provider_request` line per call.
//!
//! It plays a reply in phi-core's provider vocabulary, as phi-core's own HTTP providers do: `Start`,
//! then `TextDelta` / `ThinkingDelta` / `ToolCallStart`+`ToolCallDelta`+`ToolCallEnd` per chunk, then
//! `Done` (or `Error` for an `error`/`aborted` reply) and the final message as its return value; a
//! classified failure is an `Err(ProviderError)`. Where the fixture format says more than phi-core's
//! providers do, it follows the fixture format:
//!
//! - `Start` is sent with the first chunk (or at the end of a reply with none), not when the call
//!   begins, unless the scripted error says `started` — "nothing of the attempt is visible yet"
//!   (EVT-7) is how phi-core's providers can report a failure before any delta.
//! - Cancellation, checked before every chunk, ends the reply `aborted` with what was sent (phi-core's
//!   HTTP providers return `Err(ProviderError::Cancelled)` instead); `cancelled_as` returns that
//!   kind's error instead.
//! - Streamed argument text that is not JSON becomes `{}`, as phi-core's providers parse it.
//! - `throw` (a provider bug, not a classified error) is a panic: Rust's unexpected failure.

use crate::out::lock;
use crate::shared::{Delta, RunKey, Shared};
use crate::spec;
use async_trait::async_trait;
use phi_core::provider::{ProviderError, StreamConfig, StreamEvent, StreamProvider};
use phi_core::types::content::now_ms;
use phi_core::{Content, Message, StopReason};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// Where a provider's calls are reported: the run's own model, a parallel branch's, or a sub-agent's.
#[derive(Clone)]
pub enum Reports {
    Main,
    Branch(usize),
    Child(String),
}

/// How long a scripted wait for cancellation lasts before the driver gives up on it (a run that
/// phi-core cannot cancel then ends with a message saying so, instead of at the fixture's time limit).
pub const NEVER_CANCELLED_S: u64 = 2;

/// A failure a scripted provider raises: a panic with this payload.
pub struct ProviderPanic(pub String);

pub struct ScriptedProvider {
    shared: Arc<Shared>,
    key: RunKey,
    reports: Reports,
    responses: Vec<Value>,
    default: Option<Value>,
    calls: Mutex<usize>,
}

impl ScriptedProvider {
    pub fn new(shared: Arc<Shared>, key: RunKey, reports: Reports, spec: &Value) -> ScriptedProvider {
        ScriptedProvider {
            shared,
            key,
            reports,
            responses: spec.get("responses").and_then(Value::as_array).cloned().unwrap_or_default(),
            default: spec.get("default").cloned(),
            calls: Mutex::new(0),
        }
    }

    fn report(&self, index: usize, config: &StreamConfig, api_key: &str) {
        let request = json!({
            "system_prompt": config.system_prompt,
            "messages": config.messages.iter().map(spec::llm_message_out).collect::<Vec<_>>(),
            "tools": config.tools.iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
                .collect::<Vec<_>>(),
            "model": config.model_config.id,
            "provider": config.model_config.provider,
            "thinking_level": config.thinking_level,
            "max_tokens": config.max_tokens,
            "temperature": spec::float_out(config.temperature),
            "api_key": if api_key.is_empty() { Value::Null } else { json!(api_key) },
        });
        let line = match &self.reports {
            Reports::Main => json!({"kind": "provider_request", "index": index, "request": request}),
            Reports::Branch(i) => json!({"kind": "provider_request", "index": index, "request": request, "branch": i}),
            Reports::Child(tool) => {
                json!({"kind": "child_provider_request", "tool": tool, "index": index, "request": request})
            }
        };
        self.shared.write(line);
    }
}

#[async_trait]
impl StreamProvider for ScriptedProvider {
    fn provider_id(&self) -> &str {
        "mock"
    }

    async fn stream(
        &self,
        config: StreamConfig,
        tx: UnboundedSender<StreamEvent>,
        cancel: CancellationToken,
    ) -> Result<Message, ProviderError> {
        self.shared.sync();
        // as every phi-core provider does first (get_api_key's counterpart: ModelConfig.credentials)
        let api_key = config.model_config.resolve_api_key().await?;
        let index = {
            let mut calls = lock(&self.calls);
            *calls += 1;
            *calls - 1
        };
        self.report(index, &config, &api_key);
        let reply = match self.responses.get(index).or(self.default.as_ref()) {
            Some(reply) => reply.clone(),
            None => {
                return Err(ProviderError::Other(format!(
                    "ScriptedProvider: script exhausted after {} responses",
                    self.responses.len()
                )))
            }
        };
        let reply = match reply {
            Value::String(text) => json!({"blocks": [{"type": "text", "chunks": [text]}]}),
            other => other,
        };
        let mut records = VecDeque::new();
        let result = Player::new(&reply, &config, &tx, &cancel, &mut records).play().await;
        lock(&self.shared.deltas).insert(self.key.clone(), records);
        result
    }
}

fn provider_error(kind: &str, message: &str, retry_after_ms: Option<u64>) -> ProviderError {
    let message = message.to_string();
    match kind {
        "rate_limited" => ProviderError::RateLimited { retry_after_ms },
        "network" => ProviderError::Network(message),
        "auth" => ProviderError::Auth(message),
        "api" => ProviderError::Api(message),
        "context_overflow" => ProviderError::ContextOverflow { message },
        "cancelled" => ProviderError::Cancelled,
        _ => ProviderError::Other(message),
    }
}

/// One reply being played: the content so far, the chunks sent, whether `Start` went out.
struct Player<'a> {
    reply: &'a Value,
    model: String,
    provider: String,
    tx: &'a UnboundedSender<StreamEvent>,
    cancel: &'a CancellationToken,
    records: &'a mut VecDeque<Delta>,
    content: Vec<Content>,
    sent: u64,
    started: bool,
}

enum Stop {
    Done(Message),
    Failed(ProviderError),
}

impl<'a> Player<'a> {
    fn new(
        reply: &'a Value,
        config: &StreamConfig,
        tx: &'a UnboundedSender<StreamEvent>,
        cancel: &'a CancellationToken,
        records: &'a mut VecDeque<Delta>,
    ) -> Player<'a> {
        let model = reply.get("model").and_then(Value::as_str).filter(|m| !m.is_empty());
        Player {
            reply,
            model: model.map_or_else(|| config.model_config.id.clone(), str::to_string),
            provider: config.model_config.provider.clone(),
            tx,
            cancel,
            records,
            content: Vec::new(),
            sent: 0,
            started: false,
        }
    }

    /// The message so far; `usage` only on the reply's last chunk (a reply cut short has none).
    fn message(&self, stop_reason: StopReason, error_message: Option<String>, with_usage: bool) -> Message {
        self.message_at(stop_reason, error_message, with_usage, crate::clock::stamp())
    }

    fn message_at(&self, stop_reason: StopReason, error_message: Option<String>, with_usage: bool, timestamp: u64) -> Message {
        let usage = if with_usage { spec::usage_of(self.reply.get("usage").unwrap_or(&Value::Null)) } else { Default::default() };
        Message::Assistant {
            content: self.content.clone(),
            stop_reason,
            model: self.model.clone(),
            provider: self.provider.clone(),
            usage,
            timestamp,
            error_message,
        }
    }

    fn start(&mut self) {
        if !self.started {
            self.started = true;
            let _ = self.tx.send(StreamEvent::Start);
        }
    }

    /// A delta went out: remember its block and the message so far (SPEC EVT-6's snapshot).
    fn record(&mut self, index: usize) {
        let snapshot = spec::llm_message_out(&self.message_at(StopReason::Stop, None, false, now_ms()));
        self.records.push_back(Delta { index, snapshot });
    }

    /// Before every chunk: fail, throw, hang or stop as scripted.
    async fn checkpoint(&mut self) -> Option<Stop> {
        if let Some(error) = self.reply.get("error") {
            if self.sent == error.get("after_chunks").and_then(Value::as_u64).unwrap_or(0) {
                if error.get("started").and_then(Value::as_bool).unwrap_or(false) {
                    self.start();
                }
                let kind = error.get("kind").and_then(Value::as_str).unwrap_or("api");
                let message = error.get("message").and_then(Value::as_str).unwrap_or("scripted error");
                return Some(Stop::Failed(provider_error(kind, message, error.get("retry_after_ms").and_then(Value::as_u64))));
            }
        }
        if let Some(throw) = self.reply.get("throw") {
            if self.sent == throw.get("after_chunks").and_then(Value::as_u64).unwrap_or(0) {
                let message = throw.get("message").and_then(Value::as_str).unwrap_or("scripted failure").to_string();
                std::panic::panic_any(ProviderPanic(message));
            }
        }
        if self.reply.get("hang_after_chunks").and_then(Value::as_u64) == Some(self.sent) {
            self.start();
            tokio::select! {
                _ = self.cancel.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_secs(NEVER_CANCELLED_S)) => {
                    // nothing can cancel it (an abort bound to one of this reply's own deltas never
                    // fires: phi-core forwards them after the provider returned), so end the call
                    // instead of the fixture's time limit, saying why
                    return Some(Stop::Failed(ProviderError::Other(format!(
                        "hang_after_chunks: the run was not cancelled within {NEVER_CANCELLED_S} s (driver bound)"))));
                }
            }
        }
        if let Some(ms) = self.reply.get("chunk_delay_ms").and_then(Value::as_u64).filter(|ms| *ms > 0) {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                _ = self.cancel.cancelled() => {}
            }
        }
        if self.cancel.is_cancelled() {
            if let Some(kind) = self.reply.get("cancelled_as").and_then(Value::as_str) {
                return Some(Stop::Failed(provider_error(kind, "the stream was closed", None)));
            }
            return Some(Stop::Done(self.message(StopReason::Aborted, Some("aborted".into()), false)));
        }
        None
    }

    async fn play(mut self) -> Result<Message, ProviderError> {
        let stop = match self.blocks().await {
            Some(stop) => stop,
            None => {
                let has_calls = self.content.iter().any(|c| matches!(c, Content::ToolCall { .. }));
                let stop_reason = match self.reply.get("stop_reason").and_then(Value::as_str) {
                    Some(s) => serde_json::from_value(json!(s)).unwrap_or(StopReason::Stop),
                    None if has_calls => StopReason::ToolUse,
                    None => StopReason::Stop,
                };
                let error_message = self.reply.get("error_message").and_then(Value::as_str).map(str::to_string);
                Stop::Done(self.message(stop_reason, error_message, true))
            }
        };
        match stop {
            Stop::Failed(error) => Err(error),
            Stop::Done(message) => {
                self.start();
                let failed = matches!(&message, Message::Assistant { stop_reason: StopReason::Error | StopReason::Aborted, .. });
                let event = if failed {
                    StreamEvent::Error { message: message.clone() }
                } else {
                    StreamEvent::Done { message: message.clone() }
                };
                let _ = self.tx.send(event);
                Ok(message)
            }
        }
    }

    /// Stream every block; Some(stop) when the reply ended early (failed, aborted).
    async fn blocks(&mut self) -> Option<Stop> {
        let blocks = self.reply.get("blocks").and_then(Value::as_array).cloned().unwrap_or_default();
        for block in &blocks {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("text");
            let index = self.content.len();
            if kind == "toolCall" {
                if let Some(stop) = self.checkpoint().await {
                    return Some(stop);
                }
                let id = block.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                let name = block.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let arguments = block.get("arguments").cloned();
                let chunks: Vec<String> = match block.get("chunks").and_then(Value::as_array) {
                    Some(chunks) => chunks.iter().map(|c| c.as_str().unwrap_or("").to_string()).collect(),
                    None => match &arguments {
                        Some(Value::Object(map)) if map.is_empty() => vec![],
                        Some(args) => vec![spec::py_json(args)],
                        None => vec![],
                    },
                };
                self.start();
                self.content.push(Content::ToolCall { id: id.clone(), name: name.clone(), arguments: json!({}) });
                let _ = self.tx.send(StreamEvent::ToolCallStart { content_index: index, id, name });
                let mut raw = String::new();
                for chunk in chunks {
                    if let Some(stop) = self.checkpoint().await {
                        return Some(stop);
                    }
                    raw.push_str(&chunk);
                    let _ = self.tx.send(StreamEvent::ToolCallDelta { content_index: index, delta: chunk });
                    self.record(index);
                    self.sent += 1;
                }
                let parsed = match (&arguments, block.get("chunks")) {
                    (Some(args), None) => args.clone(),
                    // what phi-core's providers do with argument text that is not JSON
                    _ => serde_json::from_str(&raw).unwrap_or_else(|_| json!({})),
                };
                if let Some(Content::ToolCall { arguments, .. }) = self.content.get_mut(index) {
                    *arguments = parsed;
                }
                let _ = self.tx.send(StreamEvent::ToolCallEnd { content_index: index });
                continue;
            }
            let mut chunks: Vec<String> = match block.get("chunks").and_then(Value::as_array) {
                Some(chunks) => chunks.iter().map(|c| c.as_str().unwrap_or("").to_string()).collect(),
                None => block.get("text").and_then(Value::as_str).map(|t| vec![t.to_string()]).unwrap_or_default(),
            };
            if chunks.is_empty() {
                chunks.push(String::new());
            }
            let signature = block.get("signature").and_then(Value::as_str).map(str::to_string);
            for (i, chunk) in chunks.into_iter().enumerate() {
                if let Some(stop) = self.checkpoint().await {
                    return Some(stop);
                }
                self.start();
                if i == 0 {
                    self.content.push(if kind == "thinking" {
                        Content::Thinking { thinking: String::new(), signature: None }
                    } else {
                        Content::Text { text: String::new() }
                    });
                }
                match self.content.get_mut(index) {
                    Some(Content::Thinking { thinking, .. }) => thinking.push_str(&chunk),
                    Some(Content::Text { text }) => text.push_str(&chunk),
                    _ => {}
                }
                let event = if kind == "thinking" {
                    StreamEvent::ThinkingDelta { content_index: index, delta: chunk }
                } else {
                    StreamEvent::TextDelta { content_index: index, delta: chunk }
                };
                let _ = self.tx.send(event);
                self.record(index);
                self.sent += 1;
            }
            if let (Some(sig), Some(Content::Thinking { signature, .. })) = (signature, self.content.get_mut(index)) {
                *signature = Some(sig);
            }
        }
        self.checkpoint().await
    }
}
