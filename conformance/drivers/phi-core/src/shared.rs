//! What one fixture's parts share: the output, the event channel phi-core writes to, the actions,
//! the queues, the cancellation token, and what the scripted providers streamed.
//!
//! phi-core's sink is a tokio channel (`agent_loop(.., tx, ..)`), which the loop never waits on:
//! an application reads it when it gets the chance. The driver reads it in two ways:
//!
//! - **Observing** (`flush`): before it writes any line of its own (a hook call, a model call, a
//!   tool starting), the driver writes every event already in the channel, so the lines keep the
//!   order in which phi-core sent events and called application code (a hook's `at`).
//! - **Reacting** (`react`): the fixture's event-bound actions (abort, steer, follow up) are what an
//!   application does when it reads an event. The driver reacts as early as any phi-core
//!   application can: whenever phi-core hands control to application code (a hook, a tool, the
//!   provider, a queue read: `sync`), and in its consumer task, which runs whenever the loop yields
//!   to the runtime (a current-thread runtime, so the order is the same on every run), and once
//!   more after the run returned. What still comes later than SPEC's synchronous sink is what no
//!   phi-core application can avoid.

use crate::matching::matches;
use crate::out::{lock, Gate};
use crate::spec;
use phi_core::{AgentEvent, AgentMessage, Message, StopReason, StreamDelta};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// What a fixture's `raise` makes application code throw; Rust's way is a panic with this payload.
pub struct ScriptedFailure(pub String);

/// One delta a scripted provider streamed: the block index and the message so far. phi-core's
/// `MessageUpdate` carries neither (the loop drops `StreamEvent`'s `content_index` and sends its
/// empty placeholder message), so the driver fills them from here (README: "bridged").
pub struct Delta {
    pub index: usize,
    pub snapshot: Value,
}

struct Trigger {
    kind: &'static str,
    pattern: Value,
    remaining: u64,
    action: Value,
}

/// Which scripted run an event belongs to: "main", "branch{i}" (parallel), "judge".
pub type RunKey = String;

#[derive(Default)]
struct Translator {
    given_loop_id: Option<String>,
    session_id: Option<String>,
    config_segment: String,
    generated: Option<String>,
    branch_loops: Vec<String>,
}

pub struct Shared {
    pub gate: Arc<Gate>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<AgentEvent>>>,
    tr: Mutex<Translator>,
    events: Mutex<Vec<Value>>,
    unreacted: Mutex<VecDeque<Value>>,
    triggers: Mutex<Vec<Trigger>>,
    seen: watch::Sender<usize>,
    pub seen_rx: watch::Receiver<usize>,
    pub cancel: CancellationToken,
    pub steering: Mutex<VecDeque<AgentMessage>>,
    pub follow_up: Mutex<VecDeque<AgentMessage>>,
    pub deltas: Mutex<HashMap<RunKey, VecDeque<Delta>>>,
    pub vetoed: Mutex<HashSet<RunKey>>,
    /// Raw mode (PHI_CORE_DRIVER_RAW=1): no bridged fields, phi-core's events as they are.
    raw: bool,
}

impl Shared {
    pub fn new(gate: Arc<Gate>, rx: mpsc::UnboundedReceiver<AgentEvent>) -> Arc<Shared> {
        let (seen, seen_rx) = watch::channel(0);
        Arc::new(Shared {
            gate,
            rx: Mutex::new(Some(rx)),
            tr: Mutex::new(Translator::default()),
            events: Mutex::new(Vec::new()),
            unreacted: Mutex::new(VecDeque::new()),
            triggers: Mutex::new(Vec::new()),
            seen,
            seen_rx,
            cancel: CancellationToken::new(),
            steering: Mutex::new(VecDeque::new()),
            follow_up: Mutex::new(VecDeque::new()),
            deltas: Mutex::new(HashMap::new()),
            vetoed: Mutex::new(HashSet::new()),
            raw: std::env::var("PHI_CORE_DRIVER_RAW").map_or(false, |v| v == "1"),
        })
    }

    /// Write a line of the driver's own, after the events before it and the reactions to them.
    pub fn write(&self, line: Value) {
        self.sync();
        self.gate.write(&line);
    }

    /// phi-core has handed control to application code: read the channel, react to what is new.
    pub fn sync(&self) {
        self.flush();
        self.react();
    }

    /// The identity the loop id is derived from (LOOP-13, as phi-core's Agent wrapper derives it).
    pub fn set_identity(&self, given_loop_id: Option<String>, session_id: Option<String>, segment: String) {
        let mut tr = lock(&self.tr);
        tr.given_loop_id = given_loop_id;
        tr.session_id = session_id;
        tr.config_segment = segment;
    }

    // ------------------------------------------------------------------ actions

    pub fn add_trigger(&self, when: &Value, action: Value) -> Result<(), String> {
        let nth = when.get("nth").and_then(Value::as_u64).unwrap_or(1);
        let mut pattern = when.get("where").cloned().unwrap_or_else(|| json!({}));
        let kind = if let Some(t) = when.get("event") {
            pattern["type"] = t.clone();
            "event"
        } else if let Some(h) = when.get("hook") {
            pattern["hook"] = h.clone();
            "hook"
        } else if let Some(t) = when.get("tool") {
            pattern = json!({"tool": t});
            "tool"
        } else {
            return Err(format!("unknown action trigger {when}"));
        };
        lock(&self.triggers).push(Trigger { kind, pattern, remaining: nth, action });
        Ok(())
    }

    /// A moment of the run (an event the application read, a hook call, a tool call): fire the
    /// actions bound to it, there and then.
    pub fn fire(&self, kind: &str, moment: &Value) {
        let due: Vec<Value> = {
            let mut triggers = lock(&self.triggers);
            let mut due = Vec::new();
            for t in triggers.iter_mut() {
                if t.kind == kind && t.remaining > 0 && matches(&t.pattern, moment) {
                    t.remaining -= 1;
                    if t.remaining == 0 {
                        due.push(t.action.clone());
                    }
                }
            }
            due
        };
        for action in due {
            self.apply(&action, kind);
        }
    }

    /// One action (suite README §1.5). A `raise` from a hook or a tool panics there, which unwinds
    /// through phi-core's loop to the driver; one bound to an event is the consumer task's, and
    /// nothing an event consumer does reaches phi-core's loop (it is on the other end of a channel).
    pub fn apply(&self, action: &Value, origin: &str) {
        if action == "abort" || action.get("abort").is_some() {
            self.cancel.cancel();
        } else if let Some(m) = action.get("steer") {
            if let Ok(m) = spec::message_in(m) {
                lock(&self.steering).push_back(m);
            }
        } else if let Some(m) = action.get("follow_up") {
            if let Ok(m) = spec::message_in(m) {
                lock(&self.follow_up).push_back(m);
            }
        } else if action.get("advance_clock_ms").is_some() {
            // only the duration limit reads the virtual clock; fixtures using it are unsupported
        } else if let Some(text) = action.get("raise") {
            let text = text.as_str().unwrap_or("").to_string();
            if origin == "event" {
                eprintln!("phi-core driver: the event consumer raised {text:?}; phi-core's loop cannot see it");
            } else {
                std::panic::panic_any(ScriptedFailure(text));
            }
        }
    }

    // ------------------------------------------------------------------ events

    /// Write every event phi-core has sent so far (observing, not reacting).
    pub fn flush(&self) {
        loop {
            let event = match lock(&self.rx).as_mut() {
                Some(rx) => rx.try_recv().ok(),
                None => None,
            };
            match event {
                Some(event) => self.record(&event),
                None => break,
            }
        }
    }

    fn record(&self, event: &AgentEvent) {
        if let Some(value) = self.translate(event) {
            self.gate.write(&json!({"kind": "event", "event": value}));
            lock(&self.events).push(value.clone());
            lock(&self.unreacted).push_back(value);
            self.seen.send_modify(|n| *n += 1);
        }
    }

    /// Fire the actions of every event written and not yet read by the application.
    pub fn react(&self) {
        loop {
            let next = lock(&self.unreacted).pop_front();
            match next {
                Some(event) => self.fire("event", &event),
                None => break,
            }
        }
    }

    pub fn saw(&self, pattern: &Value) -> bool {
        lock(&self.events).iter().any(|e| matches(pattern, e))
    }

    /// The application's event loop: reads the channel whenever the runtime runs it.
    pub async fn consume(self: Arc<Self>) {
        enum Step {
            React,
            Event(AgentEvent),
            Closed,
        }
        loop {
            let step = futures::future::poll_fn(|cx| {
                if !lock(&self.unreacted).is_empty() {
                    return Poll::Ready(Step::React);
                }
                match lock(&self.rx).as_mut() {
                    None => Poll::Ready(Step::Closed),
                    Some(rx) => rx.poll_recv(cx).map(|e| e.map_or(Step::Closed, Step::Event)),
                }
            })
            .await;
            match step {
                Step::React => self.react(),
                Step::Event(event) => {
                    self.record(&event);
                    self.react();
                }
                Step::Closed => break,
            }
        }
    }

    /// After the run: the rest of the events, and the application's reaction to them.
    pub fn finish(&self) {
        self.sync();
    }

    // ------------------------------------------------------------------ translation (SPEC §3)

    fn run_key(&self, loop_id: &str) -> RunKey {
        let tr = lock(&self.tr);
        if tr.branch_loops.is_empty() {
            return "main".into();
        }
        match tr.branch_loops.iter().position(|l| l == loop_id) {
            Some(i) => format!("branch{i}"),
            None => "judge".into(),
        }
    }

    /// phi-core names a loop it was given no id for with a UUID (`agent_loop`'s `ensure_loop_ids`);
    /// the `{session_id}.{config_id}.{N}` id of LOOP-13 is its Agent wrapper's (`BasicAgent::
    /// next_loop_id`). The driver, as that caller, writes the id the wrapper would have given.
    fn loop_id(&self, raw: &str) -> String {
        let mut tr = lock(&self.tr);
        if tr.given_loop_id.is_some() || !tr.branch_loops.is_empty() || !is_uuid(raw) {
            return raw.to_string();
        }
        if tr.generated.is_none() {
            tr.generated = Some(raw.to_string());
        }
        match (&tr.generated, &tr.session_id) {
            (Some(g), Some(session)) if g == raw => format!("{session}.{}.1", tr.config_segment),
            _ => raw.to_string(),
        }
    }

    fn translate(&self, event: &AgentEvent) -> Option<Value> {
        Some(match event {
            AgentEvent::AgentStart { agent_id, session_id, loop_id, parent_loop_id, continuation_kind, timestamp, metadata, .. } => {
                {
                    let mut tr = lock(&self.tr);
                    if tr.session_id.is_none() {
                        tr.session_id = Some(session_id.clone());
                    }
                }
                json!({"type": "AgentStart", "agent_id": agent_id, "session_id": session_id,
                       "loop_id": self.loop_id(loop_id), "parent_loop_id": parent_loop_id,
                       "continuation_kind": spec::continuation_out(continuation_kind),
                       "timestamp": spec::time_out(timestamp), "metadata": metadata})
            }
            AgentEvent::AgentEnd { loop_id, messages, usage, timestamp, rejection } => {
                let mut out = json!({"type": "AgentEnd", "loop_id": self.loop_id(loop_id),
                       "messages": spec::messages_out(messages), "usage": spec::usage_out(usage),
                       "timestamp": spec::time_out(timestamp), "rejection": rejection});
                if !self.raw {
                    out["outcome"] = json!(self.outcome(&self.run_key(loop_id), messages, rejection.is_some()));
                }
                out
            }
            AgentEvent::TurnStart { loop_id, turn_index, timestamp, triggered_by } => {
                json!({"type": "TurnStart", "loop_id": self.loop_id(loop_id), "turn_index": turn_index,
                       "triggered_by": triggered_by, "timestamp": spec::time_out(timestamp)})
            }
            AgentEvent::TurnEnd { loop_id, message, usage, timestamp, tool_results } => {
                json!({"type": "TurnEnd", "loop_id": self.loop_id(loop_id), "message": spec::message_out(message),
                       "usage": spec::usage_out(usage),
                       "tool_results": tool_results.iter().map(spec::llm_message_out).collect::<Vec<_>>(),
                       "timestamp": spec::time_out(timestamp)})
            }
            AgentEvent::MessageStart { loop_id, message } => {
                json!({"type": "MessageStart", "loop_id": self.loop_id(loop_id), "message": spec::message_out(message)})
            }
            AgentEvent::MessageEnd { loop_id, message } => {
                json!({"type": "MessageEnd", "loop_id": self.loop_id(loop_id), "message": spec::message_out(message)})
            }
            AgentEvent::MessageUpdate { loop_id, message, delta } => {
                let (kind, text) = match delta {
                    StreamDelta::Text { delta } => ("text", delta),
                    StreamDelta::Thinking { delta } => ("thinking", delta),
                    StreamDelta::ToolCallDelta { delta } => ("toolCall", delta),
                };
                let streamed = if self.raw {
                    None
                } else {
                    lock(&self.deltas).get_mut(&self.run_key(loop_id)).and_then(VecDeque::pop_front)
                };
                match streamed {
                    Some(d) => json!({"type": "MessageUpdate", "loop_id": self.loop_id(loop_id), "message": d.snapshot,
                                      "delta": {"type": kind, "delta": text, "index": d.index}}),
                    None => json!({"type": "MessageUpdate", "loop_id": self.loop_id(loop_id),
                                   "message": spec::message_out(message), "delta": {"type": kind, "delta": text}}),
                }
            }
            AgentEvent::ToolExecutionStart { loop_id, tool_call_id, tool_name, args } => {
                json!({"type": "ToolExecutionStart", "loop_id": self.loop_id(loop_id), "tool_call_id": tool_call_id,
                       "tool_name": tool_name, "args": args})
            }
            AgentEvent::ToolExecutionUpdate { loop_id, tool_call_id, tool_name, partial_result } => {
                json!({"type": "ToolExecutionUpdate", "loop_id": self.loop_id(loop_id), "tool_call_id": tool_call_id,
                       "tool_name": tool_name, "partial_result": spec::tool_result_out(partial_result)})
            }
            AgentEvent::ToolExecutionEnd { loop_id, tool_call_id, tool_name, result, is_error, child_loop_id } => {
                json!({"type": "ToolExecutionEnd", "loop_id": self.loop_id(loop_id), "tool_call_id": tool_call_id,
                       "tool_name": tool_name, "result": spec::tool_result_out(result), "is_error": is_error,
                       "child_loop_id": child_loop_id})
            }
            AgentEvent::ProgressMessage { loop_id, tool_call_id, tool_name, text } => {
                json!({"type": "ProgressMessage", "loop_id": self.loop_id(loop_id), "tool_call_id": tool_call_id,
                       "tool_name": tool_name, "text": text})
            }
            AgentEvent::InputRejected { loop_id, reason } => {
                json!({"type": "InputRejected", "loop_id": self.loop_id(loop_id), "reason": reason})
            }
            AgentEvent::ParallelLoopStart { session_id, loop_ids, timestamp } => {
                lock(&self.tr).branch_loops = loop_ids.clone();
                json!({"type": "ParallelLoopStart", "session_id": session_id, "loop_ids": loop_ids,
                       "timestamp": spec::time_out(timestamp)})
            }
            AgentEvent::ParallelLoopEnd { session_id, selected_loop_id, selected_config_index, evaluation_usage, timestamp } => {
                json!({"type": "ParallelLoopEnd", "session_id": session_id, "selected_loop_id": selected_loop_id,
                       "selected_config_index": selected_config_index,
                       "evaluation_usage": spec::usage_out(evaluation_usage), "timestamp": spec::time_out(timestamp)})
            }
            // TurnRequest (the annotated request of a turn), compaction, prune and revert events have
            // no SPEC counterpart (EVT-1 lists the variants)
            _ => return None,
        })
    }

    /// SPEC EVT-9's `AgentEnd.outcome`, which phi-core does not report: derived (README: "bridged")
    /// from what phi-core does report — the rejection, the last new message (a limit notice, the
    /// last reply's stop reason) — and what the driver knows (a veto its hook returned, the token).
    fn outcome(&self, key: &RunKey, messages: &[AgentMessage], rejected: bool) -> &'static str {
        if rejected {
            return "rejected";
        }
        if lock(&self.vetoed).contains(key) {
            return "vetoed";
        }
        if let Some(Message::User { content, .. }) = messages.last().and_then(AgentMessage::as_llm) {
            if content.iter().any(|c| matches!(c, phi_core::Content::Text { text } if text.starts_with("[Agent stopped: "))) {
                return "limit";
            }
        }
        let last_reply = messages.iter().rev().find_map(|m| match m.as_llm() {
            Some(Message::Assistant { stop_reason, .. }) => Some(stop_reason.clone()),
            _ => None,
        });
        match last_reply {
            Some(StopReason::Error) => "error",
            Some(StopReason::Aborted) => "aborted",
            _ if self.cancel.is_cancelled() => "aborted",
            _ => "completed",
        }
    }
}

fn is_uuid(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}
