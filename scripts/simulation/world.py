"""One scenario, live inside a :class:`~phi.concurrency.simulator.Simulation` (issue 30).

:class:`World` builds the agents of a :class:`~plan.Scenario` — their tools, hooks, subscribers,
tool source and scripted model — runs the actors, then checks the end state. Every piece of
application code starts with a switch point (``sim.point``), fires the triggers due at its site,
and checks what must hold at that moment; a broken promise ends the simulation through
``sim.fail(kind, message)``.

The checks need to see a few things phi does not publish, so :class:`Probe` wraps four methods while
a scenario runs: ``CancellationToken.__init__`` / ``child_token`` / ``cancel`` (which tokens exist,
which is whose child, when each was first cancelled) and ``EventStream.__init__`` / ``finish`` (which
run each stream is, when it ended). The wrappers only record; they change nothing.
"""

from __future__ import annotations

import random
import threading
import weakref
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from .checks import (
    ABORT_BOUND_S,
    EPS,
    Pushed,
    ResetSpan,
    overlap,
    user_texts,
)
from .plan import RUN_THREAD_SITES, SOURCE_SITE, TOOL_SITE, CANCEL_SITE, AgentPlan, Scenario

from phi import (
    Agent,
    AlreadyRunning,
    ContextConfig,
    ExecutionLimits,
    FunctionTool,
    PhiError,
    RetryConfig,
    ScriptedProvider,
    TextContent,
    ToolExecution,
    ToolResult,
    default_convert_to_llm,
)
from phi.concurrency import sync
from phi.concurrency.cancel import CancellationToken
from phi.concurrency.channel import EventStream
from phi.concurrency.simulator import Simulation
from phi.types import RunOutcome

TIMEOUT_TEXT = "Tool exceeded timeout of "
FINAL_IDLE_S = 600.0  # virtual seconds the end of a scenario waits for every agent to be idle


_calls = threading.local()  # .current: (loop id, call id) of the tool call this thread runs


class ScenarioError(Exception):
    """What application code of a scenario raises; ``site`` says where."""

    def __init__(self, site: str) -> None:
        super().__init__(f"raised by the scenario at {site}")
        self.site = site


# --------------------------------------------------------------------------- what phi does not publish


@dataclass
class StreamInfo:
    stream: EventStream[Any]
    token: CancellationToken | None
    agent: AgentWorld | None
    loop_id: str | None
    created: float
    thread: int  # ident of the thread that started the run
    finished: float | None = None


class Probe:
    """Records tokens, their parents and first cancellations, and every run's stream (see module doc)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.parents: weakref.WeakKeyDictionary[CancellationToken, CancellationToken] = weakref.WeakKeyDictionary()
        self.cancelled_at: weakref.WeakKeyDictionary[CancellationToken, float] = weakref.WeakKeyDictionary()
        self.tokens: weakref.WeakSet[CancellationToken] = weakref.WeakSet()
        self.streams: list[StreamInfo] = []
        self.by_stream: dict[int, StreamInfo] = {}
        self._saved: dict[tuple[type, str], Any] = {}

    def install(self) -> None:
        probe, sim = self, self.world.sim
        token_init, child_token, cancel = (CancellationToken.__init__, CancellationToken.child_token,
                                           CancellationToken.cancel)
        stream_init, finish = EventStream.__init__, EventStream.finish

        def init(token: CancellationToken) -> None:
            token_init(token)
            probe.tokens.add(token)

        def child(token: CancellationToken) -> CancellationToken:
            made = child_token(token)
            probe.parents[made] = token
            return made

        def cancel_(token: CancellationToken, *args: Any, **kwargs: Any) -> None:
            if token not in probe.cancelled_at:
                probe.cancelled_at[token] = sim.now
            cancel(token, *args, **kwargs)

        def stream_init_(stream: EventStream[Any], channel: Any, done: Any, abort: Any = None,
                         *args: Any, **kwargs: Any) -> None:
            stream_init(stream, channel, done, abort, *args, **kwargs)
            token = getattr(abort, "__self__", None)
            token = token if isinstance(token, CancellationToken) else None
            owner = next((aw for aw in probe.world.agents if token is not None and aw.agent._cancel is token), None)
            info = StreamInfo(stream, token, owner, None, sim.now, threading.get_ident())  # its loop id: at its first event
            probe.streams.append(info)
            probe.by_stream[id(stream)] = info

        def finish_(stream: EventStream[Any], result: Any, error: Any) -> None:
            info = probe.by_stream.get(id(stream))
            finish(stream, result, error)
            if info is not None:
                info.finished = sim.now
                probe.world.run_ended(info)

        for cls, name, fn in ((CancellationToken, "__init__", init), (CancellationToken, "child_token", child),
                              (CancellationToken, "cancel", cancel_), (EventStream, "__init__", stream_init_),
                              (EventStream, "finish", finish_)):
            self._saved[(cls, name)] = cls.__dict__[name]
            setattr(cls, name, fn)

    def uninstall(self) -> None:
        for (cls, name), fn in self._saved.items():
            setattr(cls, name, fn)
        self._saved.clear()

    def cancelled_ancestor(self, token: CancellationToken) -> CancellationToken | None:
        """The nearest ancestor of ``token`` (itself excluded) that is cancelled."""
        parent = self.parents.get(token)
        while parent is not None:
            if parent.is_cancelled():
                return parent
            parent = self.parents.get(parent)
        return None

    def root(self, token: CancellationToken) -> CancellationToken:
        while token in self.parents:
            token = self.parents[token]
        return token


# --------------------------------------------------------------------------- one agent's life


@dataclass
class RunLog:
    loop_id: str
    started: float
    announced: list[Any] = field(default_factory=list)
    tool_starts: dict[str, float] = field(default_factory=dict)
    tool_ends: Counter[str] = field(default_factory=Counter)
    ended: bool = False


@dataclass
class AgentWorld:
    plan: AgentPlan
    agent: Agent
    reply_rng: random.Random
    hits: Counter[str] = field(default_factory=Counter)
    triggers: list[Any] = field(default_factory=list)
    pushes: list[Pushed] = field(default_factory=list)
    resets: list[ResetSpan] = field(default_factory=list)
    forgiven: set[str] = field(default_factory=set)
    required: set[str] = field(default_factory=set)  # prompts a run took (announced)
    slack: list[tuple[float, float]] = field(default_factory=list)  # application code on the run's thread
    hang_ok: bool = False  # the current operation is bounded: the model may hang until it is aborted
    unsubscribes: list[Callable[[], None]] = field(default_factory=list)
    runs: dict[str, RunLog] = field(default_factory=dict)
    ends: dict[str, tuple[float, RunOutcome]] = field(default_factory=dict)
    open_single: str | None = None
    open_parallel: list[str] | None = None
    unended: list[str] = field(default_factory=list)  # runs with no AgentEnd: they must have raised
    delivering: int = 0
    timeouts: list[tuple[StreamInfo | None, float]] = field(default_factory=list)  # run(timeout=) that raised


class World:
    """Builds a scenario's agents and runs it; ``main`` is the simulation's first thread."""

    def __init__(self, scenario: Scenario, sim: Simulation) -> None:
        self.scenario = scenario
        self.sim = sim
        self.probe = Probe(self)
        self.agents: list[AgentWorld] = []
        self.texts = 0
        self.calls = 0
        self.final = False  # the end of the scenario: application code stops acting
        self.callback_threads: dict[int, int] = defaultdict(int)  # thread ident -> callbacks it is inside

    # ----------------------------------------------------------------- failing

    def fail(self, kind: str, message: str) -> None:
        self.sim.fail(kind, message)

    # ----------------------------------------------------------------- building

    def build(self) -> None:
        for plan in self.scenario.agents:
            self.agents.append(self._make_agent(plan))

    def _make_agent(self, plan: AgentPlan) -> AgentWorld:
        holder: list[AgentWorld] = []

        def hook(name: str, veto: bool = False) -> Callable[..., Any]:
            def fn(*args: Any) -> Any:
                verdict = self.callback(holder[0], f"hook:{name}")
                return False if verdict == "veto" and veto else None
            return fn

        def transform(messages: list[Any]) -> list[Any]:
            self.callback(holder[0], "call:transform_context")
            return messages

        def convert(messages: list[Any]) -> list[Any]:
            self.callback(holder[0], "call:convert_to_llm")
            return default_convert_to_llm(messages)

        def api_key(provider: str) -> None:
            self.callback(holder[0], "call:get_api_key")
            return None

        hooks = {name: hook(name, veto=name.startswith("before_")) for name in (
            "before_loop", "after_loop", "before_turn", "after_turn", "on_error", "before_tool_execution",
            "after_tool_execution", "before_tool_execution_update", "after_tool_execution_update")}
        provider = ScriptedProvider(default=lambda request: self.reply(holder[0], request), record_calls=False)
        sources = [_Source(self, holder, plan)] if plan.source else []
        agent = Agent(
            provider=provider, tools=[self._tool(holder, kind) for kind in plan.tools], tool_sources=sources,
            tool_execution=ToolExecution(plan.mode), batch_size=plan.batch_size, tool_timeout_ms=plan.tool_timeout_ms,
            tool_abort_grace_ms=plan.grace_ms, steering_mode=plan.steering_mode, follow_up_mode=plan.follow_up_mode,
            execution_limits=ExecutionLimits(max_turns=plan.max_turns) if plan.max_turns else None,
            retry_config=RetryConfig(max_retries=plan.retries, initial_delay_ms=200, jitter=False),
            context_config=ContextConfig(max_context_tokens=400, system_prompt_tokens=0, keep_recent=4, keep_first=1)
            if plan.compacts else None,
            transform_context=transform, convert_to_llm=convert, get_api_key=api_key, **hooks)
        aw = AgentWorld(plan, agent, random.Random(plan.reply_seed), triggers=list(plan.triggers))
        holder.append(aw)
        agent.subscribe(lambda event: self.on_event(aw, event))
        for _ in range(plan.subscribers):
            self.subscribe(aw)
        return aw

    def subscribe(self, aw: AgentWorld) -> None:
        inside = [False]

        def subscriber(event: Any) -> None:
            if inside[0]:
                self.fail("subscriber_concurrent", f"agent{aw.plan.index}'s subscriber was called while it was "
                                                   f"still handling an event ({event.type})")
            inside[0] = True
            try:
                self.callback(aw, f"subscriber:{event.type}")
            finally:
                inside[0] = False

        aw.unsubscribes.append(aw.agent.subscribe(subscriber))

    # ----------------------------------------------------------------- application code

    def callback(self, aw: AgentWorld, site: str) -> str | None:
        """Application code at ``site``: a switch point, then the triggers due there. Returns "veto"
        when one says so. Time spent here on the run's thread is the run's to wait for (slack)."""
        sim = self.sim
        start = sim.now
        sim.point(f"app {site}")
        if self.final:
            return None
        ident = threading.get_ident()
        self.callback_threads[ident] += 1
        try:
            aw.hits[site] += 1
            due = [t for t in aw.triggers if t.site == site and t.nth == aw.hits[site]]
            for trigger in due:
                aw.triggers.remove(trigger)
            verdict = None
            for trigger in sorted(due, key=lambda t: t.action == "raise"):
                verdict = self.act(aw, trigger.action, trigger.arg, site) or verdict
            return verdict
        finally:
            self.callback_threads[ident] -= 1
            if site in RUN_THREAD_SITES or site == SOURCE_SITE:
                aw.slack.append((start, sim.now))

    def act(self, aw: AgentWorld, action: str, arg: float, site: str) -> str | None:
        agent = aw.agent
        self.sim.note(f"agent{aw.plan.index} {action} at {site}")
        if action == "raise":
            raise ScenarioError(site)
        if action == "block":
            sync.sleep(arg)
        elif action == "abort":
            self.timed_abort(aw, site)
        elif action in ("reset", "close"):
            start = self.sim.now
            waited_for = self._waited_for(aw, site)
            self.reset(aw) if action == "reset" else agent.close()
            took = self.sim.now - start
            if took > ABORT_BOUND_S + EPS and waited_for:
                self.fail(f"{action}_stalled", f"agent{aw.plan.index}.{action}() called from its own {site} took "
                                                f"{took:.3f}s (a callback must not wait for the run it is part of)")
        elif action in ("steer", "follow_up"):
            self.push(aw, action)
        elif action == "veto":
            return "veto"
        elif action == "wait_idle":
            agent.wait_for_idle(arg)
        elif action == "prompt":
            try:
                self.push(aw, "prompt", lambda text: agent.prompt(text))
            except AlreadyRunning:
                pass
        return None

    def _waited_for(self, aw: AgentWorld, site: str) -> bool:
        """Whether the run waits for the application code at ``site`` on this thread: always for the
        run's own thread; for a tool, until the call was answered (timed out or abandoned, it runs
        on alone)."""
        if site != TOOL_SITE:
            return True
        call = getattr(_calls, "current", None)
        if call is None:
            return True
        loop_id, call_id = call
        run = aw.runs.get(loop_id)
        return run is None or not run.tool_ends[call_id]

    def timed_abort(self, aw: AgentWorld, where: str) -> None:
        start = self.sim.now
        aw.agent.abort()
        took = self.sim.now - start
        if took > ABORT_BOUND_S + EPS:
            self.fail("abort_blocked", f"agent{aw.plan.index}.abort() from {where} took {took:.3f}s "
                                       f"(bound {ABORT_BOUND_S}s)")

    def reset(self, aw: AgentWorld) -> None:
        span = ResetSpan(self.sim.step)
        aw.resets.append(span)
        try:
            aw.agent.reset()
        finally:
            span.end = self.sim.step

    def push(self, aw: AgentWorld, kind: str, give: Callable[[str], Any] | None = None) -> Any:
        """Give a new text to the agent and remember it (the ledger of lost and duplicated input)."""
        self.texts += 1
        text = f"{kind}-{aw.plan.index}-{self.texts}"
        start = self.sim.step
        if give is None:
            give = aw.agent.steer if kind == "steer" else aw.agent.follow_up
        try:
            result = give(text)
        except BaseException:
            if kind in ("steer", "follow_up"):
                raise
            aw.pushes.append(Pushed(kind, text, start, self.sim.step))  # a refused prompt must not appear
            raise
        aw.pushes.append(Pushed(kind, text, start, self.sim.step))
        return result

    # ----------------------------------------------------------------- the model

    def reply(self, aw: AgentWorld, request: Any) -> Any:
        """The scripted model's next reply, drawn from the agent's own stream."""
        self.callback(aw, "provider")
        plan, rng = aw.plan, aw.reply_rng
        rounds = 0  # replies since the run's prompt (steering and follow-ups do not start a new count)
        for message in reversed(request.messages):
            if _prompt_texts([message]):
                break
            if getattr(message, "role", "") == "assistant":
                rounds += 1
        delay = plan.chunk_delay_ms
        if aw.hang_ok and rng.random() < 0.15:  # slow enough to be ended by the operation's timeout
            return {"blocks": [{"type": "text", "chunks": ["wa", "it", "ing"]}], "chunk_delay_ms": 40_000}
        if rng.random() < plan.p_error:
            kind = rng.choice(("rate_limited", "network", "api", "context_overflow"))
            return {"error": {"kind": kind, "message": f"scripted {kind}", "after_chunks": rng.choice((0, 0, 1))},
                    "blocks": [{"type": "text", "chunks": ["par", "tial"]}], "chunk_delay_ms": delay}
        if rounds < plan.max_rounds and rng.random() < plan.p_tools:
            blocks = []
            for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
                self.calls += 1
                name = rng.choice(plan.tools + ["ghost"] * (1 if rng.random() < 0.1 else 0))
                args: dict[str, Any] = {"d": _duration(rng, name)}
                if rng.random() < 0.05:
                    args = {"d": "not a number"}
                blocks.append({"type": "toolCall", "id": f"call{self.calls}", "name": name, "arguments": args})
            return {"blocks": blocks, "chunk_delay_ms": delay}
        return {"blocks": [{"type": "text", "chunks": ["Hel", "lo"]}], "chunk_delay_ms": delay}

    # ----------------------------------------------------------------- tools

    def _tool(self, holder: list[AgentWorld], kind: str) -> FunctionTool:
        def execute(args: dict[str, Any], ctx: Any) -> Any:
            aw = holder[0]
            self.check_not_cancelled(ctx.cancel, f"{kind} tool {ctx.tool_call_id} began executing")
            _calls.current = (ctx.loop_id, ctx.tool_call_id)
            try:
                self.callback(aw, TOOL_SITE)
            finally:
                _calls.current = None
            return self.run_tool(aw, kind, float(args.get("d", 0.0)), ctx)

        schema = {"type": "object", "properties": {"d": {"type": "number"}}, "additionalProperties": False}
        return FunctionTool(kind, f"a {kind} tool", schema, execute)

    def run_tool(self, aw: AgentWorld, kind: str, d: float, ctx: Any) -> Any:
        if kind in ("slow", "stubborn"):
            sync.sleep(d)  # a stubborn tool ignores its token
        elif kind == "cooperative":
            for _ in range(max(1, int(d / 0.05))):
                if ctx.cancel.is_cancelled():
                    return "stopped"
                self.check_not_cancelled(ctx.cancel, f"cooperative tool {ctx.tool_call_id} did a side effect")
                sync.sleep(0.05)
        elif kind == "slow_cancel":
            def slow() -> None:
                self.callback(aw, CANCEL_SITE)
                if not self.final:
                    sync.sleep(5.0)
            unregister = ctx.cancel.on_cancel(slow)
            ctx.cancel.wait(d)
            unregister()
        elif kind == "raising":
            raise RuntimeError("the raising tool failed")
        elif kind == "steering":
            self.push(aw, "steer")
        elif kind == "updating":
            for i in range(3):
                ctx.on_update(ToolResult([TextContent(f"part {i}")]))
                sync.sleep(d / 3)
        return f"{kind} done"

    def check_not_cancelled(self, token: CancellationToken, what: str) -> None:
        """SPEC CANCEL-3: no tool begins, and no cooperative tool's side effect happens, once its run's
        cancellation was requested — whatever a sibling's cancellation callback is doing."""
        ancestor = self.probe.cancelled_ancestor(token)
        if ancestor is not None and not token.is_cancelled():
            at = self.probe.cancelled_at.get(ancestor)
            self.fail("effect_after_cancel", f"{what} {self.sim.now - (at or 0.0):.3f}s after its run was cancelled "
                                             f"(its own token was not cancelled yet)")

    # ----------------------------------------------------------------- events

    def on_event(self, aw: AgentWorld, event: Any) -> None:
        """The checking subscriber (the first of every agent): order, concurrency, EVT-4, TOOL-6."""
        if aw.delivering:
            self.fail("subscriber_concurrent", f"agent{aw.plan.index}'s subscribers were called for {event.type} "
                                               f"while still handling another event")
        aw.delivering += 1
        try:
            self.sim.point(f"event {event.type}")
            self._order(aw, event)
        finally:
            aw.delivering -= 1

    def _name_stream(self, aw: AgentWorld, loop_id: str) -> None:
        """The stream of the run this thread is delivering takes ``loop_id`` (a single run's only)."""
        token = aw.agent._runs.get(threading.get_ident())
        for info in reversed(self.probe.streams):
            if token is not None and info.token is token and info.loop_id is None:
                info.loop_id = loop_id
                return

    def _order(self, aw: AgentWorld, event: Any) -> None:
        name, kind = f"agent{aw.plan.index}", event.type
        now = self.sim.now
        if kind == "ParallelLoopStart":
            self._close_single(aw)
            aw.open_parallel = list(event.loop_ids)  # one still open raised (LOOP-5)
            return
        if kind == "ParallelLoopEnd":
            if aw.open_parallel is None:
                self.fail("event_order", f"{name}: ParallelLoopEnd without ParallelLoopStart")
            for loop_id in aw.open_parallel or []:
                run = aw.runs.get(loop_id)
                if run is not None and not run.ended:
                    aw.unended.append(loop_id)
            winner = aw.runs.get(event.selected_loop_id)
            if winner is not None:
                aw.required.update(_prompt_texts(winner.announced))
            aw.open_parallel = None
            return
        loop_id = event.loop_id
        if kind == "AgentStart":
            if aw.open_parallel is not None and loop_id not in aw.open_parallel:
                aw.open_parallel = None  # that parallel run raised: no ParallelLoopEnd (LOOP-5)
            if aw.open_parallel is None:
                self._close_single(aw)
                aw.open_single = loop_id
                self._name_stream(aw, loop_id)
            if loop_id in aw.runs:
                self.fail("event_order", f"{name}: a second AgentStart for {loop_id}")
            aw.runs[loop_id] = RunLog(loop_id, now)
            return
        run = aw.runs.get(loop_id)
        if run is None:
            if kind == "AgentEnd" and not event.messages and event.outcome == RunOutcome.VETOED:
                aw.ends[loop_id] = (now, event.outcome)  # vetoed by before_loop: no AgentStart (LOOP-1)
                if aw.open_parallel is None:
                    self._name_stream(aw, loop_id)
                return
            self.fail("event_order", f"{name}: {kind} of {loop_id}, which never started")
            return
        if run.ended:
            self.fail("event_order", f"{name}: {kind} of {loop_id} after its AgentEnd")
        if aw.open_parallel is None and aw.open_single != loop_id:
            self.fail("event_order", f"{name}: {kind} of {loop_id} while {aw.open_single} is the open run")
        if kind == "MessageEnd":
            run.announced.append(event.message)
            if aw.open_parallel is None:
                aw.required.update(_prompt_texts([event.message]))
        elif kind == "ToolExecutionStart":
            run.tool_starts[event.tool_call_id] = now
        elif kind == "ToolExecutionEnd":
            self._tool_end(aw, run, event, now)
        elif kind == "AgentEnd":
            run.ended = True
            aw.ends[loop_id] = (now, event.outcome)
            if [id(m) for m in event.messages] != [id(m) for m in run.announced]:
                self.fail("evt4", f"{name}: AgentEnd of {loop_id} lists {len(event.messages)} messages but the run "
                                  f"announced {len(run.announced)} (SPEC EVT-4)")
            missing = [c for c in run.tool_starts if not run.tool_ends[c]]
            if missing:
                self.fail("tool_unanswered", f"{name}: tool calls {missing} of {loop_id} started and never ended")
            if aw.open_single == loop_id:
                aw.open_single = None

    def _close_single(self, aw: AgentWorld) -> None:
        if aw.open_single is not None:
            aw.unended.append(aw.open_single)  # it raised (checked at the end)
            aw.open_single = None

    def _tool_end(self, aw: AgentWorld, run: RunLog, event: Any, now: float) -> None:
        call = event.tool_call_id
        if call not in run.tool_starts:
            self.fail("tool_unanswered", f"ToolExecutionEnd of {call} without its ToolExecutionStart")
        run.tool_ends[call] += 1
        if run.tool_ends[call] > 1:
            self.fail("tool_answered_twice", f"tool call {call} of {run.loop_id} ended twice")
        text = "".join(getattr(b, "text", "") for b in event.result.content)
        timeout = aw.plan.tool_timeout_ms
        if text.startswith(TIMEOUT_TEXT) and timeout:
            started = run.tool_starts[call]
            late = now - (started + timeout / 1000.0) - overlap(aw.slack, started, now)
            if late > EPS:
                self.fail("timeout_late", f"tool call {call} timed out at {timeout}ms but its ToolExecutionEnd came "
                                          f"{late:.3f}s late (the run must not wait for a timed-out call, TOOL-6)")

    # ----------------------------------------------------------------- runs

    def run_ended(self, info: StreamInfo) -> None:
        """A run's stream finished: it must have ended within its bound once it was cancelled."""
        if info.token is None or info.agent is None or info.finished is None:
            return
        cancelled = self.probe.cancelled_at.get(info.token)
        if cancelled is None or self.final:
            return
        aw = info.agent
        bound = ABORT_BOUND_S + aw.plan.grace_ms / 1000.0
        slack = overlap(aw.slack, cancelled, info.finished)
        late = info.finished - cancelled - bound - slack
        if late > EPS:
            self.fail("run_bound", f"agent{aw.plan.index}'s run {info.loop_id} ended {info.finished - cancelled:.3f}s "
                                   f"after it was cancelled (bound {bound:.3f}s + {slack:.3f}s of application code)")


class _Source:
    """A tool source whose ``tools()`` is quick, slow, very slow ("hang") or failing."""

    def __init__(self, world: World, holder: list[AgentWorld], plan: AgentPlan) -> None:
        self.world, self.holder, self.plan = world, holder, plan

    def tools(self) -> list[Any]:
        aw = self.holder[0]
        self.world.callback(aw, SOURCE_SITE)
        if self.plan.source == "failing":
            raise PhiError("the source is down")
        if self.plan.source_delay:
            sync.sleep(self.plan.source_delay)
        return []

    def close(self) -> None:
        return None


def _duration(rng: random.Random, tool: str) -> float:
    if tool == "stubborn":
        return rng.choice((2.0, 8.0, 30.0, 60.0))
    if tool in ("slow", "cooperative", "slow_cancel", "updating"):
        return rng.choice((0.02, 0.2, 0.8, 2.0))
    return 0.0


def _prompt_texts(messages: list[Any]) -> set[str]:
    return {t for t in user_texts(messages) if t.startswith(("prompt-", "parallel-"))}


__all__ = ["AgentWorld", "ScenarioError", "StreamInfo", "World"]
