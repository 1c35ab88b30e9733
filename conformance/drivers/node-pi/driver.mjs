// Conformance driver for @mariozechner/pi-agent-core (TypeScript), see README.md in this directory.
// Runs fixtures through pi's runAgentLoop / runAgentLoopContinue with a scripted stream function and
// writes the driver protocol's JSON lines (phi/conformance/suite/README.md §2, DRIVERS.md). Protocol 1:
// one fixture on stdin. Protocol 2 (PHI_CONFORMANCE_PROTOCOL=2 or --persistent): hello, then one fixture per
// stdin line, each closed by a done line.
import { randomUUID } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const write = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const CACHE = process.env.PI_CACHE || join(homedir(), ".cache", "phi-conformance", "node-pi");
const mod = (pkg, file) => pathToFileURL(join(CACHE, "node_modules", "@mariozechner", pkg, "dist", file)).href;
const { runAgentLoop, runAgentLoopContinue } = await import(mod("pi-agent-core", "index.js"));
const { createAssistantMessageEventStream, parseStreamingJson } = await import(mod("pi-ai", "index.js"));

// JSON text as the fixtures define it for tool-call arguments given as an object (Python json.dumps
// separators: ", " and ": "), so argument deltas compare equal across implementations.
const pyJson = (v) => Array.isArray(v) ? `[${v.map(pyJson).join(", ")}]`
  : v && typeof v === "object" ? `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`).join(", ")}}`
  : JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// What a fixture's "raise" makes application code (a hook, the event consumer) throw.
class ScriptedFailure extends Error {}
// A fixture this driver cannot read (written as a FixtureError line).
class FixtureError extends Error {}

// ------------------------------------------------------------------ features pi does not have
const SUPPORTED_HOOKS = new Set(["before_tool_execution", "after_tool_execution", "after_turn", "transform_context", "convert_to_llm",
  "get_api_key"]);
const ADAPTER_ONLY = new Set(["LOOP-13", "EVT-2", "EVT-5"]);

function unsupported(f) {
  const c = f.config || {};
  if (f.spec?.length && f.spec.every((id) => ADAPTER_ONLY.has(id)))
    return "pi has no loop identity or turn triggers; this adapter synthesises them, so the fixture proves nothing";
  if ((f.tools || []).some((t) => t.sub_agent)) return "pi-agent-core has no sub-agent tool";
  if (f.entry === "agent_loop_parallel") return "pi-agent-core has no parallel evaluation";
  if (c.input_filters) return "pi has no input filters";
  if (c.limits) return "pi has no execution limits";
  if (c.context) return "pi has no built-in compaction / context-overflow recovery";
  if (c.tool_execution === "batched") return "pi has no batched tool mode";
  if (c.tool_timeout_ms || (f.tools || []).some((t) => t.timeout_ms)) return "pi has no tool timeouts";
  if (c.first_turn_trigger && c.first_turn_trigger !== "User") return "pi has no turn triggers";
  for (const name of Object.keys(c.hooks || {}))
    if (!SUPPORTED_HOOKS.has(name)) return `pi has no ${name} hook`;
  const steps = (f.tools || []).flatMap((t) => [...Object.values(t.calls || {}).flat(), ...(t.default || [])]);
  if (steps.some((s) => "progress" in s)) return "pi has no progress messages";
  const responses = (f.provider || {}).responses || [];
  if ((c.retry?.max_retries || 0) > 0 && responses.some((r) => r.error && ["rate_limited", "network"].includes(r.error.kind)))
    return "pi-agent-core's loop does not retry provider errors (pi leaves retries to pi-ai's provider clients and to applications)";
  return null;
}

// ------------------------------------------------------------------ JSON shapes (phi <-> pi)
const zeroCost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
const piUsage = (u = {}) => ({ input: u.input || 0, output: u.output || 0, cacheRead: u.cache_read || 0,
  cacheWrite: u.cache_write || 0, totalTokens: u.total_tokens || 0, cost: { ...zeroCost } });
const phiUsage = (u = {}) => ({ input: u.input || 0, output: u.output || 0, reasoning: 0, cache_read: u.cacheRead || 0,
  cache_write: u.cacheWrite || 0, total_tokens: u.totalTokens || 0 });
const addUsage = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, a[k] + b[k]]));

function piBlock(b) {
  if (b.type === "thinking") return { type: "thinking", thinking: b.thinking, ...(b.signature ? { thinkingSignature: b.signature } : {}) };
  return { ...b };
}
function phiBlock(b) {
  if (b.type === "text") return { type: "text", text: b.text };
  if (b.type === "thinking") return { type: "thinking", thinking: b.thinking, ...(b.thinkingSignature ? { signature: b.thinkingSignature } : {}) };
  if (b.type === "toolCall") return { type: "toolCall", id: b.id, name: b.name, arguments: b.arguments };
  if (b.type === "image") return { type: "image", data: b.data, mimeType: b.mimeType };
  return b;
}
function piMessage(m) {
  if (typeof m === "string") return { role: "user", content: [{ type: "text", text: m }], timestamp: Date.now() };
  if (m.role === "assistant")
    return { role: "assistant", content: m.content.map(piBlock), api: "mock", provider: m.provider || "", model: m.model || "",
      usage: piUsage(m.usage), stopReason: m.stopReason || "stop", timestamp: m.timestamp || 0,
      ...(m.error_message ? { errorMessage: m.error_message } : {}) };
  if (m.role === "extension") return { ...m };
  return { ...m, content: (m.content || []).map(piBlock) };
}
function phiMessage(m) {
  if (m.role === "assistant") {
    const out = { role: "assistant", content: m.content.map(phiBlock), stopReason: m.stopReason, model: m.model,
      provider: m.provider, usage: phiUsage(m.usage), timestamp: m.timestamp };
    if (m.errorMessage !== undefined) out.error_message = m.errorMessage;
    return out;
  }
  if (m.role === "toolResult")
    return { role: "toolResult", toolCallId: m.toolCallId, toolName: m.toolName, content: m.content.map(phiBlock),
      isError: m.isError, timestamp: m.timestamp, ...(m.details !== undefined ? { details: m.details } : {}) };
  if (m.role === "user") return { role: "user", content: (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content).map(phiBlock), timestamp: m.timestamp };
  return m;
}
const phiResult = (r) => ({ content: (r?.content || []).map(phiBlock), details: r?.details ?? null });

// ------------------------------------------------------------------ matching (for actions and waits)
function matches(expected, actual) {
  if (expected && typeof expected === "object" && !Array.isArray(expected)) {
    if (!actual || typeof actual !== "object") return false;
    return Object.entries(expected).every(([k, v]) => matches(v, actual[k]));
  }
  if (Array.isArray(expected)) return Array.isArray(actual) && expected.length === actual.length && expected.every((e, i) => matches(e, actual[i]));
  return expected === actual;
}

// ------------------------------------------------------------------ one fixture
// Everything a fixture touches is created here, so a persistent process starts each one fresh; `out`
// is shut when the fixture is done, so work it leaves behind (a tool ignoring the abort) cannot write
// into the next fixture's output.
async function runFixture(fixture, out) {
  const reason = unsupported(fixture);
  if (reason) { out({ kind: "unsupported", reason }); return; }


  const cfg = fixture.config || {};
  const ctxSpec = fixture.context || {};
  const model = { id: cfg.model?.id || "mock-model", provider: cfg.model?.provider || "mock", api: "mock", name: "mock" };
  const agentId = ctxSpec.agent_id || randomUUID();
  const sessionId = ctxSpec.session_id || randomUUID();
  const slug = model.id.replace(/[^A-Za-z0-9-]/g, "-");
  const configId = cfg.config_id || `${model.provider}.${slug}${cfg.thinking_level && cfg.thinking_level !== "off" ? ".thinking" : ""}`;
  const loopId = ctxSpec.loop_id || `${sessionId}.${configId}.1`;
  const isContinue = fixture.entry === "agent_loop_continue";
  const controller = new AbortController();
  const queues = { steer: [], follow_up: [] };
  const drain = (q, mode) => (mode === "all" ? q.splice(0, q.length) : q.splice(0, 1));
  const events = [];
  const announced = []; // messages pi ended with message_end, in order (pi copies the context of runAgentLoop)
  const waiters = [];
  let streamSeen = 0;

  // Actions (suite README §1.5) fire once, at a moment of the run: an event (inside the event callback),
  // a hook call (inside the pi callback, after its hook line, before it returns) or a tool call (inside
  // execute, after its tool_executed line, before its first step).
  const actions = [];
  for (const a of fixture.actions || []) {
    const w = a.when;
    if (!w || w === "before_start") { apply(a.do); continue; }
    const where = w.where || {};
    const [kind, pattern] = "event" in w ? ["event", { type: w.event, ...where }]
      : "hook" in w ? ["hook", { hook: w.hook, ...where }]
      : "tool" in w ? ["tool", { tool: w.tool }]
      : [null, null];
    if (!kind) throw new FixtureError(`unknown action trigger ${JSON.stringify(w)}`);
    actions.push({ kind, pattern, left: w.nth || 1, do: a.do });
  }
  function fire(kind, moment) {
    for (const a of actions) if (a.kind === kind && a.left > 0 && matches(a.pattern, moment) && --a.left === 0) apply(a.do);
  }
  function apply(action) {
    if (action === "abort" || action?.abort) controller.abort();
    else if (action.steer !== undefined) queues.steer.push(piMessage(action.steer));
    else if (action.follow_up !== undefined) queues.follow_up.push(piMessage(action.follow_up));
    else if (action.raise !== undefined) throw new ScriptedFailure(action.raise);
    // advance_clock_ms only matters for execution limits, which pi does not have (such fixtures are unsupported)
  }

  let turnIndex = 0;
  // pi's events carry no time; SPEC EVT-1 gives these four an RFC 3339 UTC timestamp, so the adapter stamps them
  const now = () => new Date().toISOString();
  function toPhiEvent(e) {
    switch (e.type) {
      case "agent_start":
        return { type: "AgentStart", agent_id: agentId, session_id: sessionId, loop_id: loopId, parent_loop_id: ctxSpec.parent_loop_id ?? null,
          continuation_kind: isContinue ? (ctxSpec.continuation_kind ?? "Default") : null, timestamp: now(), metadata: cfg.metadata ?? null };
      case "agent_end": {
        const messages = e.messages.map(phiMessage);
        const usage = messages.filter((m) => m.role === "assistant").map((m) => m.usage).reduce(addUsage, phiUsage());
        // pi does not say why a run ended (EVT-9): derived from its last reply and the abort signal
        const last = [...messages].reverse().find((m) => m.role === "assistant");
        const outcome = last?.stopReason === "error" ? "error"
          : controller.signal.aborted || last?.stopReason === "aborted" ? "aborted" : "completed";
        return { type: "AgentEnd", loop_id: loopId, messages, usage, timestamp: now(), rejection: null, outcome };
      }
      case "turn_start": {
        const kind = ctxSpec.continuation_kind;
        const first = isContinue ? (kind && kind.Branch ? "Branch" : "Continuation") : "User";
        return { type: "TurnStart", loop_id: loopId, turn_index: turnIndex, triggered_by: turnIndex++ === 0 ? first : "Continuation", timestamp: now() };
      }
      case "turn_end":
        return { type: "TurnEnd", loop_id: loopId, message: phiMessage(e.message), usage: phiUsage(e.message.usage), tool_results: e.toolResults.map(phiMessage), timestamp: now() };
      case "message_start": return { type: "MessageStart", loop_id: loopId, message: phiMessage(e.message) };
      case "message_end": announced.push(e.message); return { type: "MessageEnd", loop_id: loopId, message: phiMessage(e.message) };
      case "message_update": {
        const ev = e.assistantMessageEvent;
        const kind = { text_delta: "text", thinking_delta: "thinking", toolcall_delta: "toolCall" }[ev.type];
        if (!kind) return null; // pi's *_start/*_end updates carry no delta; phi has no such event
        return { type: "MessageUpdate", loop_id: loopId, message: phiMessage(e.message), delta: { type: kind, delta: ev.delta, index: ev.contentIndex } };
      }
      case "tool_execution_start": return { type: "ToolExecutionStart", loop_id: loopId, tool_call_id: e.toolCallId, tool_name: e.toolName, args: e.args };
      case "tool_execution_update": return { type: "ToolExecutionUpdate", loop_id: loopId, tool_call_id: e.toolCallId, tool_name: e.toolName, partial_result: phiResult(e.partialResult) };
      case "tool_execution_end": return { type: "ToolExecutionEnd", loop_id: loopId, tool_call_id: e.toolCallId, tool_name: e.toolName, result: phiResult(e.result), is_error: e.isError, child_loop_id: null };
      default: return null;
    }
  }

  async function emit(e) {
    if ((e.type === "message_start" && e.message.role === "assistant") || e.type === "message_update") streamSeen++;
    const event = toPhiEvent(e);
    if (event) {
      out({ kind: "event", event });
      events.push(event);
      fire("event", event);
    }
    for (const w of [...waiters]) w();
  }
  function waitFor(test) {
    return new Promise((resolve) => {
      const check = () => { if (test()) { waiters.splice(waiters.indexOf(check), 1); resolve(); } };
      waiters.push(check); check();
    });
  }

  // ------------------------------------------------------------------ scripted provider (StreamFn)
  const responses = fixture.provider?.responses || [];
  let calls = 0;
  function streamFn(m, context, options) {
    out({ kind: "provider_request", index: calls, request: { system_prompt: context.systemPrompt, messages: context.messages.map(phiMessage),
      tools: (context.tools || []).map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
      model: m.id, provider: m.provider, thinking_level: options.reasoning ?? "off", max_tokens: options.maxTokens ?? null,
      temperature: options.temperature ?? null, api_key: options.apiKey ?? null } });
    const spec = calls < responses.length ? responses[calls] : fixture.provider?.default;
    calls++;
    const stream = createAssistantMessageEventStream();
    play(typeof spec === "string" ? { blocks: [{ type: "text", chunks: [spec] }] } : spec, stream, options.signal, m);
    return spec?.throw ? throwing(stream, spec.throw) : stream;
  }

  // A stream that throws (a provider bug, not a reported error) once `after_chunks` deltas went out.
  function throwing(stream, spec) {
    const fail = () => { throw new Error(spec.message || "scripted failure"); };
    return {
      async *[Symbol.asyncIterator]() {
        let deltas = 0;
        if ((spec.after_chunks || 0) === 0) fail();
        for await (const event of stream) {
          yield event;
          if (/_delta$/.test(event.type) && ++deltas === (spec.after_chunks || 0)) fail();
        }
      },
      result: async () => fail(),
    };
  }

  async function play(spec, stream, signal, m) {
    const msg = { role: "assistant", content: [], api: "mock", provider: m.provider, model: m.id, usage: piUsage(), stopReason: "stop", timestamp: Date.now() };
    const snap = () => ({ ...msg, content: msg.content.map((b) => ({ ...b })) });
    let pushed = 0;
    const push = async (ev) => { stream.push(ev); pushed++; const target = streamSeen + 1; await waitFor(() => streamSeen >= target); };
    const finish = (stopReason, errorMessage) => {
      msg.stopReason = stopReason; if (errorMessage) msg.errorMessage = errorMessage;
      const final = snap();
      stream.push(stopReason === "error" || stopReason === "aborted" ? { type: "error", reason: stopReason, error: final } : { type: "done", reason: stopReason, message: final });
      stream.end(final);
    };
    if (!spec) return finish("error", `other: script exhausted after ${responses.length} responses`);
    const error = spec.error;
    let sent = 0;
    const checkpoint = async () => {
      if (error && sent === (error.after_chunks || 0)) { finish("error", `${error.kind || "api"}: ${error.message || "scripted error"}`); return true; }
      if (spec.hang_after_chunks !== undefined && sent === spec.hang_after_chunks && !signal?.aborted)
        await new Promise((r) => signal?.addEventListener("abort", r, { once: true }));
      if (signal?.aborted) {
        // cancelled_as: a provider whose closed stream reports the cancellation as an error of that kind
        if (spec.cancelled_as) finish("error", `${spec.cancelled_as}: the stream was closed`);
        else finish("aborted", "aborted");
        return true;
      }
      return false;
    };
    await push({ type: "start", partial: snap() });
    for (const block of spec.blocks || []) {
      const i = msg.content.length;
      if (block.type === "toolCall") {
        const pieces = block.chunks ?? (block.arguments && Object.keys(block.arguments).length ? [pyJson(block.arguments)] : []);
        if (await checkpoint()) return;
        msg.content.push({ type: "toolCall", id: block.id, name: block.name, arguments: {} });
        await push({ type: "toolcall_start", contentIndex: i, partial: snap() });
        let raw = "";
        for (const piece of pieces) {
          if (await checkpoint()) return;
          raw += piece; msg.content[i].arguments = parseStreamingJson(raw);
          await push({ type: "toolcall_delta", contentIndex: i, delta: piece, partial: snap() }); sent++;
        }
        if (block.arguments && !block.chunks) msg.content[i].arguments = block.arguments;
        await push({ type: "toolcall_end", contentIndex: i, toolCall: { ...msg.content[i] }, partial: snap() });
        continue;
      }
      const key = block.type === "text" ? "text" : "thinking";
      const chunks = block.chunks ?? (block.text !== undefined ? [block.text] : [""]);
      if (await checkpoint()) return;
      msg.content.push({ type: block.type, [key]: "", ...(block.signature ? { thinkingSignature: block.signature } : {}) });
      await push({ type: `${key}_start`, contentIndex: i, partial: snap() });
      for (const piece of chunks) {
        if (sent > 0 && await checkpoint()) return;
        msg.content[i][key] += piece;
        await push({ type: `${key}_delta`, contentIndex: i, delta: piece, partial: snap() }); sent++;
      }
      await push({ type: `${key}_end`, contentIndex: i, content: msg.content[i][key], partial: snap() });
    }
    if (await checkpoint()) return;
    msg.usage = piUsage(spec.usage);
    const hasCalls = (spec.blocks || []).some((b) => b.type === "toolCall");
    finish(spec.stop_reason || (hasCalls ? "toolUse" : "stop"), spec.error_message);
  }

  // ------------------------------------------------------------------ scripted tools and hooks
  function tool(t) {
    return {
      name: t.name, label: t.name, description: t.description || "", parameters: t.parameters || { type: "object" },
      async execute(toolCallId, params, signal, onUpdate) {
        out({ kind: "tool_executed", name: t.name, tool_call_id: toolCallId, args: params });
        fire("tool", { tool: toolCallId });
        for (const step of (t.calls || {})[toolCallId] || t.default || [{ result: "ok" }]) {
          if ("update" in step) onUpdate?.(toolResult(step.update));
          else if ("sleep_ms" in step) await sleep(step.sleep_ms);
          else if ("wait_for_event" in step) await waitFor(() => events.some((e) => matches(step.wait_for_event, e)));
          else if ("block_until_cancelled" in step) { if (!signal?.aborted) await new Promise((r) => signal?.addEventListener("abort", r, { once: true })); }
          else if ("result" in step) return toolResult(step.result);
          else if ("error" in step) throw new Error(step.error);
          else if ("raise" in step) throw new Error(step.raise.message || "");
        }
        return toolResult("");
      },
    };
  }
  const toolResult = (r) => (typeof r === "string" ? { content: [{ type: "text", text: r }], details: undefined } : { content: r.content, details: r.details });

  function scripted(spec, fallback) {
    const returns = Array.isArray(spec) ? spec : spec && typeof spec === "object" ? spec.returns || [] : [];
    const dflt = spec === null || typeof spec !== "object" ? (spec ?? fallback) : Array.isArray(spec) ? fallback : (spec.default ?? fallback);
    let n = 0;
    return () => {
      const value = n < returns.length ? returns[n++] : dflt;
      if (value && typeof value === "object" && "raise" in value) throw new ScriptedFailure(value.raise);
      return value;
    };
  }
  const hooks = cfg.hooks || {};
  // pi's convertToLlm is mandatory; the driver's default keeps what a model can read and drops app-only messages
  const toLlm = (messages) => messages.filter((m) => ["user", "assistant", "toolResult"].includes(m.role));
  // A hook call: its hook line (arguments by position), then the actions bound to it (by name, README §1.5).
  const called = (name, named) => { out({ kind: "hook", name, args: Object.values(named) }); fire("hook", { hook: name, ...named }); };
  const config = {
    model, apiKey: undefined,
    // model settings: pi hands its config to the stream function as stream options
    reasoning: cfg.thinking_level && cfg.thinking_level !== "off" ? cfg.thinking_level : undefined,
    maxTokens: cfg.max_tokens ?? undefined, temperature: cfg.temperature ?? undefined,
    convertToLlm: toLlm,
    toolExecution: cfg.tool_execution === "sequential" ? "sequential" : "parallel",
    // pi pulls queued messages through these and never hands any back, whether or not the fixture's
    // source could take them back (config.steering_put_back / follow_up_put_back)
    getSteeringMessages: async () => drain(queues.steer, cfg.steering_mode),
    getFollowUpMessages: async () => drain(queues.follow_up, cfg.follow_up_mode),
  };
  if ("convert_to_llm" in hooks) {
    // the fixture's custom converter converts as the default does; what it is given is the point (LOOP-11)
    config.convertToLlm = async (messages) => {
      called("convert_to_llm", { message_count: messages.length });
      return toLlm(messages);
    };
  }
  if ("transform_context" in hooks) {
    const keep = hooks.transform_context?.keep_last || 0;
    config.transformContext = async (messages) => {
      called("transform_context", { message_count: messages.length });
      return keep ? messages.slice(-keep) : messages;
    };
  }
  if ("get_api_key" in hooks) {
    const next = scripted(hooks.get_api_key, undefined);
    config.getApiKey = (provider) => { called("get_api_key", { provider }); return next() ?? undefined; };
  }
  if ("before_tool_execution" in hooks) {
    const next = scripted(hooks.before_tool_execution, true);
    config.beforeToolCall = async ({ toolCall, args }) => {
      called("before_tool_execution", { tool_name: toolCall.name, tool_call_id: toolCall.id, args });
      return next() === false ? { block: true, reason: "Tool execution skipped by before_tool_execution hook." } : undefined;
    };
  }
  if ("after_tool_execution" in hooks) {
    const next = scripted(hooks.after_tool_execution, true);
    config.afterToolCall = async ({ toolCall, isError }) => {
      called("after_tool_execution", { tool_name: toolCall.name, tool_call_id: toolCall.id, is_error: isError });
      next();
      return undefined;
    };
  }
  if ("after_turn" in hooks) {
    // pi's callback after turn_end; SPEC's after_turn cannot end the run, so pi is always told to go on
    const next = scripted(hooks.after_turn, true);
    config.shouldStopAfterTurn = ({ message, context: c }) => {
      called("after_turn", { message_count: c.messages.length, usage: phiUsage(message.usage) });
      next();
      return false;
    };
  }

  const context = { systemPrompt: ctxSpec.system_prompt || "", messages: (ctxSpec.messages || []).map(piMessage), tools: (fixture.tools || []).map(tool) };
  const initial = [...context.messages];
  let final;
  try {
    const result = isContinue
      ? await runAgentLoopContinue(context, config, emit, controller.signal, streamFn)
      : await runAgentLoop((fixture.prompts || []).map(piMessage), context, config, emit, controller.signal, streamFn);
    final = { kind: "result", messages: result.map(phiMessage) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const error = err instanceof ScriptedFailure ? "ScriptedFailure" : /^Cannot continue/.test(message) ? "InvalidContinue" : "Error";
    final = { kind: "error", error, message };
  }
  out({ kind: "queues", steering: queues.steer.map(phiMessage), follow_up: queues.follow_up.map(phiMessage) });
  // runAgentLoopContinue works on the context's own array; runAgentLoop on a copy, seen through its announcements
  const after = isContinue ? context.messages : [...initial, ...announced];
  out({ kind: "context", messages: after.map(phiMessage) });
  out(final);
  controller.abort(); // let anything still waiting for the signal (a hanging stream) end
}

// ------------------------------------------------------------------ the protocol
function gate() {
  let open = true;
  return { out: (line) => { if (open) write(line); }, shut: () => { open = false; } };
}

// One fixture's lines; a failure of the driver itself ends them with an error line.
async function runOne(text, out) {
  let fixture;
  try { fixture = JSON.parse(text); } catch (err) { out({ kind: "error", error: "FixtureError", message: String(err.message) }); return null; }
  try {
    await runFixture(fixture, out);
  } catch (err) {
    if (!(err instanceof FixtureError)) console.error(err);
    out({ kind: "error", error: err instanceof FixtureError ? "FixtureError" : "DriverError", message: String(err?.message ?? err) });
  }
  return fixture?.id ?? null;
}

async function once() {
  const data = await new Promise((resolve) => {
    let text = ""; process.stdin.setEncoding("utf8");
    process.stdin.on("data", (c) => (text += c)); process.stdin.on("end", () => resolve(text));
  });
  const { out, shut } = gate();
  await runOne(data, out);
  shut();
}

async function serve() {
  // a promise a fixture left behind may reject after its done line: log it, serve on
  process.on("unhandledRejection", (err) => console.error("left behind:", err));
  write({ kind: "hello", protocol: 2, persistent: true, driver: "node-pi (pi-agent-core)" });
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    const { out, shut } = gate();
    // While a fixture runs, stdin does not keep the process alive: a run that can never settle (nothing
    // left to wait for) ends the process with status 13, as it does in protocol 1, instead of hanging.
    process.stdin.unref();
    const id = await runOne(line, out);
    process.stdin.ref();
    shut();
    write({ kind: "done", id });
  }
}

const persistent = process.argv.includes("--persistent") || Number(process.env.PHI_CONFORMANCE_PROTOCOL || 0) >= 2;
await (persistent ? serve() : once());
process.exit(0);
