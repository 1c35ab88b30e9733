"""The event stream as OpenTelemetry spans, by the GenAI semantic conventions (SPEC §17 OTEL-1..OTEL-7).

    tracer = OtelTracer()           # spans go to the global TracerProvider (or pass one)
    tracer.attach(agent)            # = agent.subscribe(tracer, include_subagents=True) + tool facts
    agent.subscribe(OtelTracer())   # also works: the agent's own runs, without their sub-agents' insides

The tree (span kind; ``semconv`` names the attributes):

* ``invoke_agent {name}`` (INTERNAL) — one per run, ``AgentStart`` to ``AgentEnd``.
* ``chat {model}`` (CLIENT) — one per model call. It starts at the turn's ``TurnStart`` — the last
  event before the request goes out (the stream shows ``MessageStart`` only at the first delta,
  EVT-7) — and ends at the reply's ``MessageEnd``; each retry is a ``phi.retry`` span event at the
  time the failed attempt gave up (from :func:`phi.providers.retry.observe_retries`).
* ``execute_tool {tool}`` (INTERNAL) — one per call, ``ToolExecutionStart`` to ``ToolExecutionEnd``.
  A sub-agent's ``invoke_agent`` span is the child of the call that ran it; MCP tools carry the
  ``mcp.*`` attributes (their MCP client span merged into it, as the MCP conventions allow).
* ``invoke_workflow parallel_evaluation`` (INTERNAL) — a parallel run; each branch's run is its child.

Runs on other threads are joined by loop ids, never by the ambient context: a branch's span hangs
under the workflow that listed its loop id in ``ParallelLoopStart``, and a sub-agent's under the
tool call whose ``ToolExecutionEnd.child_loop_id`` names it. Until that event a sub-agent's events
are kept back (its spans are made afterwards with the times they happened), so two concurrent calls
of one sub-agent tool can never be confused. A :class:`~phi.subagent.SubAgentTool` names its child
loop before running it (:func:`phi.tools.trace_context.child_run`): that child's spans are made as
it runs, under its call, so its MCP calls carry the trace. A run that starts without a parent is a
root span in the delivering thread's current context, linked to the run it continues
(``parent_loop_id``). A span never ends after its parent: a parent's end is moved to its latest
child's when events reached the tracer late (a parallel branch's come through the caller's queue).

The tracer never raises an ``Exception`` into the run: a failure inside it is logged and the event
dropped. A span processor that raises when a span starts or ends (user code) breaks no bookkeeping:
phi's state is updated first, the call is guarded, and the span counts as written; a span lost in
``on_start`` leaves a stand-in that does not silence its children (OTEL-7). A ``BaseException``
from a processor is raised once the event in hand is handled. A run that raises (no ``AgentEnd``)
is told by :func:`phi.loop.identity.observe_raised_runs`: its spans end then, with an error status.
Span processors and exporters are user code, so the tracer never calls them while holding a lock another
thread could wait on: events go into one queue, and whichever thread finds no one draining it turns
them into spans in order (:class:`_Serial`); the others return at once. The threads that end a run
(``AgentEnd``, ``ParallelLoopEnd``) and :meth:`OtelTracer.close` wait, for a bounded time, until
their own event has been handled, so a run's spans are finished when its ``run()`` returns.
"""

from __future__ import annotations

import random
import threading
import time
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, cast
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TracerProvider
from opentelemetry.util.types import AttributeValue

from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    ParallelLoopEnd,
    ParallelLoopStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from ..log import get_logger
from ..loop.identity import RunModel, observe_raised_runs, observe_run_models
from ..providers.retry import RetryNotice, observe_retries
from ..providers.secret_registry import redact, redact_data
from ..types import AgentMessage, AssistantMessage, RunOutcome, StopReason, Usage
from . import semconv as sc
from .content import ContentWriter
from ..tools.redact import Redactor
from ..tools.trace_context import observe_child_runs, register_carrier

log = get_logger(__name__)

Attributes = dict[str, AttributeValue]
_IGNORED = frozenset({"MessageUpdate", "ToolExecutionUpdate", "ProgressMessage", "InputRejected"})
_REMEMBERED_LOOPS = 4096  # ended runs whose span a continuation (or a late sub-agent) may still name
_NOTICES = 1024  # run-model and child-run notices kept for runs whose AgentStart has not come (yet)
_DESCRIPTION_LIMIT = 512  # characters of a tool description, or of an error status with content capture on
_STATUS_LIMIT = 200  # characters of an error status's message with content capture off (OTEL-11)
_FAILED_OUTCOMES = {RunOutcome.ERROR: None, RunOutcome.ABORTED: "cancelled", RunOutcome.LIMIT: "limit"}
_WAIT_FOR_SPANS = 5.0  # seconds a run-ending thread waits for another thread to write its spans
_WAIT_FOR_CARRIER = 0.5  # seconds an outgoing MCP request waits for its tool call's span (else goes without)
_RUN_ENDS = frozenset({"AgentEnd", "ParallelLoopEnd"})
_STARTS = frozenset({"AgentStart", "ParallelLoopStart"})


def _nothing() -> None:
    """The work of a flush: done once everything before it is."""


class _Serial:
    """Run submitted work one item at a time, in submission order, on whichever submitting thread
    finds no drain in progress; never blocks a submitter behind another thread's work unless it
    asks to wait (and then only for ``wait`` seconds). Work that submits more work from inside a
    drain (a span processor emitting an event) is queued behind it, not deadlocked."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[..., None], tuple[Any, ...], int]] = deque()
        self._lock = threading.Lock()  # entered directly (C speed); the condition only to wait on it
        self._done = threading.Condition(self._lock)
        self._submitted = self._completed = 0
        self._draining = False
        self._drainer: int | None = None

    def submit(self, work: Callable[..., None], *args: Any, wait: float | None = None) -> bool:
        """Run ``work(*args)`` now if no one is draining, else queue it (and with ``wait``, wait
        until it has run). Returns False only when the wait ran out."""
        with self._lock:
            if self._draining:
                self._submitted += 1
                ticket = self._submitted
                self._queue.append((work, args, ticket))
                if wait is None or self._drainer == threading.get_ident():
                    return True
                return self._done.wait_for(lambda: self._completed >= ticket, timeout=wait)
            self._draining, self._drainer = True, threading.get_ident()
        try:
            work(*args)  # the uncontended case: no queue, no ticket
        except Exception:
            log.exception("OtelTracer dropped an event")
        finally:
            self._drain()
        return True

    def _drain(self) -> None:
        """Run what others queued meanwhile, then let go (in the same hold as the empty check, or a
        submitter could be stranded)."""
        lock = self._lock
        try:
            while True:
                with lock:
                    if not self._queue:
                        self._draining, self._drainer = False, None
                        return
                    work, args, ticket = self._queue.popleft()
                try:
                    work(*args)
                except Exception:
                    log.exception("OtelTracer dropped an event")
                finally:
                    with lock:
                        self._completed = ticket
                        self._done.notify_all()
        except BaseException:  # a KeyboardInterrupt ended the drain: the next submitter drains what is left
            with lock:
                self._draining, self._drainer = False, None
            raise


class _Subscribable(Protocol):
    """What :meth:`OtelTracer.attach` needs of an :class:`~phi.agent.Agent`."""

    agent_id: str
    tools: list[Any]
    tool_sources: list[Any]

    def subscribe(self, callback: Callable[[AgentEvent], None], *,
                  include_subagents: bool = False) -> Callable[[], None]: ...


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


@dataclass
class _Turn:
    """One model call of a run, from ``TurnStart`` to its reply."""

    start_ns: int
    first_chunk_ns: int | None = None
    reply: AssistantMessage | None = None
    reply_ns: int | None = None
    inputs: list[AgentMessage] = field(default_factory=list[AgentMessage])


@dataclass
class _Start:
    """What a run's span learns before its first event is handled: its tools' attributes (an attached
    agent's) and the model it calls (:func:`phi.loop.identity.observe_run_models`)."""

    facts: dict[str, Attributes] = field(default_factory=dict[str, Attributes])  # tool name -> attributes
    model: RunModel | None = None


@dataclass
class _Run:
    """An open ``invoke_agent`` span and what its children need."""

    loop_id: str
    agent_id: str
    conversation: str
    span: Span
    context: otel_context.Context
    start: _Start
    start_ns: int  # no child span starts earlier
    under: tuple[str, str] | None = None  # (loop id, tool call id) of the call that runs this sub-agent
    turn: _Turn | None = None
    turns: int = 0
    # tool_call_id -> (span, tool name, start ns)
    calls: dict[str, tuple[Span, str, int]] = field(default_factory=dict[str, tuple[Span, str, int]])
    messages: list[AgentMessage] = field(default_factory=list[AgentMessage])  # announced so far (content capture only)
    last_reply: AssistantMessage | None = None
    described: bool = False  # the span names the model and provider of the first reply
    latest: int = 0  # the latest end of a child span (ns): the run's span ends no earlier
    call_floors: dict[str, int] = field(default_factory=dict[str, int])  # tool call id -> its sub-agent run's end


@dataclass
class _Workflow:
    span: Span
    loop_ids: list[str]
    outcomes: dict[str, AgentEnd] = field(default_factory=dict[str, AgentEnd])
    latest: int = 0  # the latest end of a branch's span (ns)


@dataclass
class _Held:
    """A sub-agent run whose calling tool call has not said yet that it ran it."""

    parent_loop_id: str
    events: list[tuple[AgentEvent, int]]
    start: _Start
    call: tuple[str, str] | None = None  # (loop id, tool call id) that said it runs this one, not yet seen


class OtelTracer:
    """An event subscriber that writes OpenTelemetry spans (see the module docstring).

    ``tracer_provider``: where spans go (default: the global one). ``capture_content``: record
    prompts, replies, tool arguments and results (default: off, unless
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks). ``agent_name``: ``gen_ai.agent.name``
    of the top-level runs (else ``AgentStart.metadata["agent_name"]`` when given; a sub-agent is named
    after its tool). ``secrets``: strings never to export, besides every secret phi knows of
    (:mod:`phi.providers.secret_registry`: keys of configs, providers and MCP servers, credential-like
    environment values) and the shapes :class:`~phi.tools.redact.Redactor` knows; they are
    registered, so logs and session files leave them out too. ``content_limit``: the characters
    kept of each captured string. ``legacy_names``: also write each renamed attribute under its
    v1.36.0 name (``gen_ai.system`` beside ``gen_ai.provider.name``) for a backend that reads only
    those — off by default, and off whatever it says when ``OTEL_SEMCONV_STABILITY_OPT_IN`` names
    ``gen_ai_latest_experimental``.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None, *, capture_content: bool | None = None,
                 agent_name: str | None = None, secrets: Iterable[str] = (), content_limit: int = 8192,
                 workflow_name: str = "parallel_evaluation", environ: Mapping[str, str] | None = None,
                 legacy_names: bool = False) -> None:
        from .. import __version__

        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer = provider.get_tracer(sc.INSTRUMENTATION_NAME, __version__, schema_url=sc.SCHEMA_URL)
        self.capture_content = sc.capture_from_environment(environ) if capture_content is None else capture_content
        self.legacy_names = legacy_names and not sc.latest_only(environ)
        self.agent_name, self.workflow_name = agent_name, workflow_name
        self._scrubber = Redactor(secrets, environ)
        self._content = ContentWriter(self._scrubber, content_limit)
        self._serial = _Serial()
        self._ambient: otel_context.Context = otel_context.get_current()  # the submitting thread's context
        self._runs: dict[str, _Run] = {}
        self._held: dict[str, _Held] = {}
        self._branches: dict[str, _Workflow] = {}  # branch loop id -> its parallel run
        self._ended: OrderedDict[str, SpanContext] = OrderedDict()
        self._retries: dict[str, list[RetryNotice]] = {}
        self._models: OrderedDict[str, RunModel] = OrderedDict()  # loop id -> model, until its AgentStart
        self._spawned: OrderedDict[str, tuple[str, str]] = OrderedDict()  # child loop -> (loop id, call id)
        self._attached: dict[str, weakref.ReferenceType[Any]] = {}
        self._adopted: dict[str, str] = {}  # agent id -> the loop id that started it (attach(parent_loop_id=))
        # runs whose span records nothing (a no-op provider, or sampled out): their turns and tool
        # calls are skipped before any work, as the API asks (``is_recording()``)
        self._silent: set[str] = set()
        self._stop_retries: Callable[[], None] | None = None
        self._stop_carrier: Callable[[], None] | None = None
        self._stop_models: Callable[[], None] | None = None
        self._stop_children: Callable[[], None] | None = None
        self._stop_raised: Callable[[], None] | None = None
        self._plugin_failures = 0  # span processors that raised (logged in full once)
        self._interrupt: BaseException | None = None  # a processor's KeyboardInterrupt, raised after the event
        self._listen()
        self._handlers: dict[str, Callable[[Any, int], None]] = {
            "AgentStart": self._agent_start, "AgentEnd": self._agent_end, "TurnStart": self._turn_start,
            "TurnEnd": self._turn_end, "MessageStart": self._message_start, "MessageEnd": self._message_end,
            "ToolExecutionStart": self._tool_start, "ToolExecutionEnd": self._tool_end,
            "ParallelLoopStart": self._parallel_start, "ParallelLoopEnd": self._parallel_end,
        }

    def __repr__(self) -> str:
        return f"OtelTracer(capture_content={self.capture_content}, open_runs={len(self._runs)})"

    # ----------------------------------------------------------------- turning it on and off

    def attach(self, agent: _Subscribable, *, parent_loop_id: str | None = None) -> Callable[[], None]:
        """Trace every run of ``agent`` and of the sub-agents its runs start; tool spans also get
        each tool's description and, for MCP tools, the ``mcp.*`` attributes. ``parent_loop_id``:
        the run that started this agent when its own runs cannot say so (a coding session's
        ``spawn_agent`` child); its runs' spans go under that run's. Returns the function that
        detaches."""
        agent_id = agent.agent_id
        self._attached[agent_id] = weakref.ref(agent)
        if parent_loop_id is not None:
            self._adopted[agent_id] = parent_loop_id
        # a long `phi --otel` session attaches every spawned child: forget each when it is gone
        weakref.finalize(agent, OtelTracer._forget, weakref.ref(self), agent_id)
        unsubscribe = agent.subscribe(self, include_subagents=True)

        def detach() -> None:  # a run in progress hears no AgentEnd now: its spans end here (OTEL-12)
            unsubscribe()
            if not self._serial.submit(self._detached, agent_id, time.time_ns(), wait=_WAIT_FOR_SPANS):
                log.warning("OtelTracer: spans of a detached agent still being written after %.0f s", _WAIT_FOR_SPANS)

        return detach

    def _detached(self, agent_id: str, now: int) -> None:
        try:
            for run in [run for run in self._runs.values() if run.agent_id == agent_id]:
                self._abandon(run, now, None)
        finally:
            self._raise_interrupt()

    @staticmethod
    def _forget(tracer_ref: weakref.ReferenceType[OtelTracer], agent_id: str) -> None:
        # static, and the tracer by a weak reference: the finalizer must keep neither it nor the agent alive
        tracer = tracer_ref()
        if tracer is not None:
            tracer._attached.pop(agent_id, None)
            tracer._adopted.pop(agent_id, None)

    def close(self) -> None:
        """End every span still open (a run that raised has no ``AgentEnd``, SPEC LOOP-5) with an
        error status, and stop listening for retries."""
        for stop in (self._stop_retries, self._stop_carrier, self._stop_models, self._stop_children, self._stop_raised):
            if stop is not None:
                stop()
        self._stop_retries = self._stop_carrier = self._stop_models = self._stop_children = self._stop_raised = None
        ambient = otel_context.get_current()
        if not self._serial.submit(self._close_all, ambient, wait=_WAIT_FOR_SPANS):
            log.warning("OtelTracer.close(): spans still being written after %.0f s", _WAIT_FOR_SPANS)

    def flush(self, timeout: float = _WAIT_FOR_SPANS) -> bool:
        """Wait until every event delivered so far has become spans (another thread may be writing
        them). True when done within ``timeout`` seconds."""
        return self._serial.submit(_nothing, wait=timeout)

    def _close_all(self, ambient: otel_context.Context) -> None:
        try:
            self._close_everything(ambient)
        finally:
            self._raise_interrupt()

    def _close_everything(self, ambient: otel_context.Context) -> None:
        self._ambient = ambient
        now = time.time_ns()
        for loop_id in list(self._held):
            if loop_id in self._held:
                self._release(loop_id, self._parent_context(self._held[loop_id].parent_loop_id), None)
        for run in list(self._runs.values()):
            self._abandon(run, now)
        for workflow in {id(w): w for w in self._branches.values()}.values():
            self._fail(workflow.span, sc.OTHER_ERROR, "the tracer was closed first")
            self._end(workflow.span, max(now, workflow.latest))
        self._branches.clear()
        self._models.clear()
        self._spawned.clear()

    def __enter__(self) -> OtelTracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- events

    def __call__(self, event: AgentEvent) -> None:
        """The subscriber: one event (SPEC §3) in, spans out. Thread-safe; never raises."""
        kind = event.type
        if kind in _IGNORED:
            return
        if isinstance(event, (MessageStart, MessageEnd)) and not self.capture_content \
                and not isinstance(event.message, AssistantMessage):
            return  # a prompt or tool result matters only to content capture
        if self._silent and kind != "AgentEnd" and getattr(event, "loop_id", None) in self._silent:
            return
        now = time.time_ns()
        try:
            facts = self._before_start(event) if isinstance(event, AgentStart) else None
            ambient = otel_context.get_current() if kind in _STARTS else None
            done = self._serial.submit(self._handle_in, ambient, event, now, facts,
                                       wait=_WAIT_FOR_SPANS if kind in _RUN_ENDS else None)
            if not done:
                log.warning("OtelTracer: the spans of %s are still being written after %.0f s", kind, _WAIT_FOR_SPANS)
        except Exception:
            log.exception("OtelTracer dropped a %s event", kind)

    def _handle_in(self, ambient: otel_context.Context | None, event: AgentEvent, now: int,
                   facts: dict[str, Attributes] | None) -> None:
        try:
            if ambient is not None:  # a run or workflow without a parent starts in its thread's context
                self._ambient = ambient
            if isinstance(event, AgentStart):  # a run's first event: never one of a held run's
                self._agent_start(event, now, facts)
            else:
                self._handle(event, now)
        finally:
            self._raise_interrupt()

    def _handle(self, event: AgentEvent, now: int) -> None:
        if self._held:  # some sub-agent run is held back: is this one of its events?
            loop_id = getattr(event, "loop_id", None)
            held = self._held.get(loop_id) if loop_id is not None else None
            if held is not None:
                held.events.append((event, now))
                return
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event, now)

    def _before_start(self, event: AgentStart) -> dict[str, Attributes] | None:
        """Outside the lock: the tools of an attached agent as its run starts. They go with the event
        to the run's span (a table by agent would outlive the agents, and a long process attaches
        many)."""
        if self._stop_retries is None:  # listening again after close()
            self._listen()
        ref = self._attached.get(event.agent_id)
        agent = ref() if ref is not None else None
        return _tool_facts(agent, self._scrubber) if agent is not None else None

    # ----------------------------------------------------------------- runs

    def _agent_start(self, event: AgentStart, now: int, facts: dict[str, Attributes] | None = None) -> None:
        start = _Start(facts or {}, self._models.pop(event.loop_id, None))
        spawned = self._spawned.pop(event.loop_id, None)
        workflow = self._branches.get(event.loop_id)
        parent = event.parent_loop_id
        if workflow is not None:
            self._open_run(event, trace.set_span_in_context(workflow.span), self._name_of(event), start)
        elif parent is not None and event.continuation_kind is None and (
                spawned is not None or parent in self._runs or parent in self._held):
            # a sub-agent. Its events come straight from the calling tool's thread, so they can be
            # here before its caller's (a parallel branch's events come through the caller's queue)
            caller = self._runs.get(spawned[0]) if spawned is not None else None
            call = caller.calls.get(spawned[1]) if caller is not None and spawned is not None else None
            if call is not None and spawned is not None:  # its call said it runs it: spans as it runs
                self._open_run(event, trace.set_span_in_context(call[0]), call[1], start, under=spawned,
                               not_before=call[2])
            else:  # wait for its call (to start, when it said it runs it; else to end naming it)
                self._held[event.loop_id] = _Held(parent, [(event, now)], start, spawned)
        elif parent is None and event.agent_id in self._adopted:
            self._open_run(event, self._parent_context(self._adopted[event.agent_id]), self._name_of(event), start)
        else:
            known = self._span_context_of(parent) if parent is not None else None
            self._open_run(event, self._ambient, self._name_of(event), start,
                           links=[Link(known)] if known is not None else [])

    def _name_of(self, event: AgentStart) -> str | None:
        if self.agent_name:
            return self.agent_name
        metadata = event.metadata  # the application's value: only a mapping can name the agent
        if not isinstance(metadata, Mapping):
            return None
        name = cast("Mapping[str, object]", metadata).get("agent_name")
        return name if isinstance(name, str) and name else None

    def _open_run(self, event: AgentStart, parent: otel_context.Context, name: str | None, start: _Start, *,
                  links: Sequence[Link] = (), under: tuple[str, str] | None = None, not_before: int = 0) -> None:
        """``not_before``: the start of the parent span when it is a tool call, stamped when its event
        was handled (a parallel branch's: later than it happened) — the child starts no earlier."""
        start_ns = max(_ns(event.timestamp), not_before)
        attributes: Attributes = {sc.OPERATION: sc.INVOKE_AGENT, sc.AGENT_ID: event.agent_id,
                                  sc.CONVERSATION_ID: event.session_id, sc.LOOP_ID: event.loop_id}
        if start.model is not None:  # for samplers: gen-ai-agent-spans.md asks for both at creation
            attributes.update(self._model_attributes(start.model.provider, start.model.model))
        if name:
            name = attributes[sc.AGENT_NAME] = self._scrubber.text(name)
        if event.parent_loop_id is not None:
            attributes[sc.PARENT_LOOP_ID] = event.parent_loop_id
        if event.continuation_kind is not None:
            attributes[sc.CONTINUATION] = event.continuation_kind.kind
        span = self._start(f"{sc.INVOKE_AGENT} {name}" if name else sc.INVOKE_AGENT,
                           context=parent, kind=SpanKind.INTERNAL, attributes=attributes,
                           links=list(links), start_time=start_ns)
        self._runs[event.loop_id] = _Run(event.loop_id, event.agent_id, event.session_id, span,
                                         trace.set_span_in_context(span), start, start_ns, under)
        if not span.is_recording() and not isinstance(span, _LostSpan):  # sampled out, not a plugin's failure
            self._silent.add(event.loop_id)

    def _agent_end(self, event: AgentEnd, now: int) -> None:
        run = self._runs.pop(event.loop_id, None)
        self._silent.discard(event.loop_id)
        if run is None:
            return
        end = _ns(event.timestamp)
        turn, run.turn = run.turn, None
        if turn is not None:
            self._close_turn(run, turn, end)
        calls, run.calls = run.calls, {}
        for span, *_ in calls.values():
            self._fail(span, "cancelled", None)
            self._end_child(run, span, end)
        for loop_id in [k for k, held in self._held.items() if held.parent_loop_id == run.loop_id]:
            self._release(loop_id, run.context, None)  # its call never named it (aborted, timed out)
        self._retries.pop(run.loop_id, None)
        workflow = self._branches.get(run.loop_id)
        if workflow is not None:
            workflow.outcomes[run.loop_id] = event
        self._finish_run(run, event)
        self._end_run(run, end)

    def _finish_run(self, run: _Run, event: AgentEnd) -> None:
        span, reply = run.span, run.last_reply
        attributes: Attributes = {sc.OUTCOME: event.outcome.value, sc.TURNS: run.turns, **self._usage(event.usage)}
        if reply is not None:
            attributes[sc.FINISH_REASONS] = [sc.finish_reason(reply.stop_reason)]
            attributes[sc.STOP_REASON] = reply.stop_reason.value
        if self.capture_content:
            prompts = event.messages[:_first_reply(event.messages)]
            attributes[sc.INPUT_MESSAGES] = self._content.messages(prompts)
            if reply is not None:
                attributes[sc.OUTPUT_MESSAGES] = self._content.messages([reply])
        self._set(span, attributes)
        if event.outcome in _FAILED_OUTCOMES:
            kind = _FAILED_OUTCOMES[event.outcome] or sc.provider_error_type(reply.error_message if reply else None)
            self._fail(span, kind, reply.error_message if reply is not None and kind != "cancelled" else None)

    def _abandon(self, run: _Run, now: int, kind: str | None = sc.OTHER_ERROR,
                 description: str | None = "the run ended without AgentEnd") -> None:
        """A run with no ``AgentEnd``: it raised (``kind`` is the exception's class), its workflow
        ended first, or ``close()`` came before its events stopped coming. ``kind`` None: the
        tracer was detached from it, which says nothing of how it went (no error status)."""
        self._runs.pop(run.loop_id, None)
        self._silent.discard(run.loop_id)
        self._retries.pop(run.loop_id, None)
        turn, run.turn = run.turn, None
        if turn is not None:
            self._close_turn(run, turn, now)
        calls, run.calls = run.calls, {}
        for span, *_ in calls.values():  # the run's end cancelled them (LOOP-5)
            if kind is not None:
                self._fail(span, "cancelled" if kind != sc.OTHER_ERROR else sc.OTHER_ERROR, None)
            self._end_child(run, span, now)
        for loop_id in [k for k, held in self._held.items() if held.parent_loop_id == run.loop_id]:
            self._release(loop_id, run.context, None)
        if kind is not None:
            self._fail(run.span, kind, description)
        else:
            run.span.set_attribute("phi.tracing_detached", True)
        self._end_run(run, now)

    def _on_run_raised(self, loop_id: str, error: BaseException) -> None:
        """On the run's thread as its exception leaves it (SPEC LOOP-5: no ``AgentEnd`` comes): its
        spans end now, with the exception's class as ``error.type`` — written when ``run()`` raises,
        not kept open until :meth:`close`."""
        kind = type(error).__name__
        description = f"{kind}: {error}" if self.capture_content else f"the run raised {kind}"
        # another agent's run (no run open here) is not kept waiting behind this tracer's exporters
        wait = _WAIT_FOR_SPANS if self._runs or self._held else None
        if not self._serial.submit(self._run_raised, loop_id, kind, description, time.time_ns(), wait=wait):
            log.warning("OtelTracer: the spans of a raised run are still being written after %.0f s", _WAIT_FOR_SPANS)

    def _run_raised(self, loop_id: str, kind: str, description: str, now: int) -> None:
        try:
            held = self._held.get(loop_id)
            if held is not None:  # its call never said it ran it: under the run that started it
                self._release(loop_id, self._parent_context(held.parent_loop_id), None)
            run = self._runs.get(loop_id)
            if run is not None:
                self._abandon(run, now, kind, description)
        finally:
            self._raise_interrupt()

    def _end_run(self, run: _Run, end: int) -> None:
        """End the run's span, no earlier than its last child, and tell whoever contains it (the call
        that ran it, the workflow it is a branch of) when it ended."""
        end = max(end, run.latest)
        self._ended[run.loop_id] = run.span.get_span_context()
        while len(self._ended) > _REMEMBERED_LOOPS:
            self._ended.popitem(last=False)
        caller = self._runs.get(run.under[0]) if run.under is not None else None
        if caller is not None and run.under is not None:
            caller.call_floors[run.under[1]] = max(end, caller.call_floors.get(run.under[1], 0))
        workflow = self._branches.get(run.loop_id)
        if workflow is not None:
            workflow.latest = max(workflow.latest, end)
        self._end(run.span, end)

    def _end_child(self, run: _Run, span: Span, end: int) -> None:
        run.latest = max(run.latest, end)
        self._end(span, end)

    def _span_context_of(self, loop_id: str) -> SpanContext | None:
        run = self._runs.get(loop_id)
        return run.span.get_span_context() if run is not None else self._ended.get(loop_id)

    def _parent_context(self, loop_id: str) -> otel_context.Context:
        known = self._span_context_of(loop_id)
        if known is None:
            return self._ambient
        return trace.set_span_in_context(trace.NonRecordingSpan(known))

    # ----------------------------------------------------------------- sub-agents held back

    def _release(self, loop_id: str, parent: otel_context.Context, name: str | None,
                 under: tuple[str, str] | None = None, not_before: int = 0) -> None:
        """Make the held sub-agent run's spans under ``parent``, replaying its events as they came."""
        held = self._held.pop(loop_id)
        for event, at in held.events:
            if isinstance(event, AgentStart) and event.loop_id == loop_id:
                self._open_run(event, parent, name, held.start, under=under, not_before=not_before)
            else:
                self._handle(event, at)

    # ----------------------------------------------------------------- turns and model calls

    def _turn_start(self, event: TurnStart, now: int) -> None:
        run = self._runs.get(event.loop_id)
        if run is None:
            return
        turn, run.turn = run.turn, _Turn(max(_ns(event.timestamp), run.start_ns))
        if turn is not None:  # a turn without TurnEnd (cannot happen by EVT-8; be safe)
            self._close_turn(run, turn, _ns(event.timestamp))
        run.turns += 1

    def _message_start(self, event: MessageStart, now: int) -> None:
        run = self._runs.get(event.loop_id)
        if run is not None and run.turn is not None and isinstance(event.message, AssistantMessage):
            run.turn.first_chunk_ns = run.turn.first_chunk_ns or now

    def _message_end(self, event: MessageEnd, now: int) -> None:
        run = self._runs.get(event.loop_id)
        if run is None:
            return
        message = event.message
        if isinstance(message, AssistantMessage):
            run.last_reply = message
            self._describe_run(run, message)
            if run.turn is not None and run.turn.reply is None:
                run.turn.reply, run.turn.reply_ns = message, now
                run.turn.inputs = list(run.messages) if self.capture_content else []
        if self.capture_content:
            run.messages.append(message)

    def _describe_run(self, run: _Run, reply: AssistantMessage) -> None:
        """A run whose model was not told before it started (events from elsewhere) names the
        model and provider of its first reply."""
        if run.described or run.start.model is not None:
            return
        run.described = True
        self._set(run.span, self._model_attributes(reply.provider, reply.model))

    def _model_attributes(self, provider: str, model: str) -> Attributes:
        attributes: Attributes = {sc.PROVIDER: sc.provider_name(provider)}
        if model:
            attributes[sc.REQUEST_MODEL] = model
        if self.legacy_names:
            attributes[sc.SYSTEM_V136] = attributes[sc.PROVIDER]
        return attributes

    def _turn_end(self, event: TurnEnd, now: int) -> None:
        run = self._runs.get(event.loop_id)
        if run is not None and run.turn is not None:
            turn, run.turn = run.turn, None
            self._close_turn(run, turn, _ns(event.timestamp))

    def _close_turn(self, run: _Run, turn: _Turn, until: int) -> None:
        """Write the turn's ``chat`` span, now that its reply and retries are known."""
        reply = turn.reply
        retries = self._take_retries(run.loop_id, until)
        known = run.start.model
        model = (reply.model if reply is not None else "") or (known.model if known is not None else "")
        attributes: Attributes = {sc.OPERATION: sc.CHAT, sc.LOOP_ID: run.loop_id, sc.REQUEST_STREAM: True,
                                  sc.CONVERSATION_ID: run.conversation}
        if known is not None:
            attributes.update(self._model_attributes(known.provider, known.model))
        if reply is not None:
            attributes.update(self._reply_attributes(reply, turn, retries))
        if retries:
            attributes[sc.RETRIES] = len(retries)
        span = self._start(f"{sc.CHAT} {model}" if model else sc.CHAT, context=run.context,
                           kind=SpanKind.CLIENT, attributes=attributes, start_time=turn.start_ns)
        for notice in retries:
            span.add_event(sc.RETRY_EVENT, self._retry_attributes(notice), timestamp=_ns(notice.timestamp))
        if reply is None:
            self._fail(span, sc.OTHER_ERROR, "the model call did not finish")
        elif reply.stop_reason == StopReason.ERROR:
            self._fail(span, sc.provider_error_type(reply.error_message), reply.error_message)
        elif reply.stop_reason == StopReason.ABORTED:
            self._fail(span, "cancelled", None)
        # the reply's MessageEnd was handled at reply_ns, TurnEnd was stamped at until: a branch's
        # events are handled after they happened, so the earlier of the two is nearer the truth
        end = min(turn.reply_ns, until) if turn.reply_ns is not None else until
        self._end_child(run, span, max(end, turn.start_ns))

    def _reply_attributes(self, reply: AssistantMessage, turn: _Turn, retries: list[RetryNotice]) -> Attributes:
        attributes: Attributes = {**self._model_attributes(reply.provider, reply.model),
                                  sc.FINISH_REASONS: [sc.finish_reason(reply.stop_reason)],
                                  sc.STOP_REASON: reply.stop_reason.value, **self._usage(reply.usage)}
        sent = _ns(retries[-1].timestamp + retries[-1].delay) if retries else turn.start_ns
        if turn.first_chunk_ns is not None and reply.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
            attributes[sc.TIME_TO_FIRST_CHUNK] = max(0, turn.first_chunk_ns - sent) / 1e9
        if self.capture_content:
            attributes[sc.INPUT_MESSAGES] = self._content.messages(turn.inputs)
            attributes[sc.OUTPUT_MESSAGES] = self._content.messages([reply])
        return attributes

    def _usage(self, usage: Usage) -> Attributes:
        attributes: Attributes = {sc.INPUT_TOKENS: usage.input + usage.cache_read + usage.cache_write,
                                  sc.OUTPUT_TOKENS: usage.output}
        if usage.cache_read:
            attributes[sc.CACHE_READ_TOKENS] = usage.cache_read
        if usage.cache_write:
            attributes[sc.CACHE_CREATION_TOKENS] = usage.cache_write
        if usage.reasoning:
            attributes[sc.REASONING_TOKENS] = usage.reasoning
        return attributes

    # ----------------------------------------------------------------- retries

    def _listen(self) -> None:
        """Hear of retries (OTEL-5), of the model each run calls (OTEL-2) and of the child loops tool
        calls run (OTEL-4), and answer tools' requests for trace context (OTEL-10) — all process-wide,
        through weak references: a tracer nobody keeps stops at the next call."""
        self._stop_retries = _register_weakly(observe_retries, self._on_retry, None)
        self._stop_carrier = _register_weakly(register_carrier, self._context_of_call, {})
        self._stop_models = _register_weakly(observe_run_models, self._on_run_model, None)
        self._stop_children = _register_weakly(observe_child_runs, self._on_child_run, None)
        self._stop_raised = _register_weakly(observe_raised_runs, self._on_run_raised, None)

    def _on_run_model(self, notice: RunModel) -> None:
        """On the run's thread, before its ``AgentStart`` reaches the tracer (whose handling takes it)."""
        self._serial.submit(_remember_bounded, self._models, notice.loop_id, notice)

    def _on_child_run(self, loop_id: str | None, tool_call_id: str, child_loop_id: str) -> None:
        """On the calling tool's thread, before the child's ``AgentStart``."""
        if loop_id is not None and loop_id not in self._silent:
            self._serial.submit(_remember_bounded, self._spawned, child_loop_id, (loop_id, tool_call_id))

    def _on_retry(self, notice: RetryNotice) -> None:
        """On the thread of the failed call: keep the notice until its turn's ``chat`` span is written."""
        loop_id = notice.loop_id
        if loop_id is not None and loop_id not in self._silent:
            self._serial.submit(self._keep_retry, loop_id, notice)

    def _keep_retry(self, loop_id: str, notice: RetryNotice) -> None:
        if loop_id in self._runs or loop_id in self._held or loop_id in self._branches:
            self._retries.setdefault(loop_id, []).append(notice)

    def _take_retries(self, loop_id: str, until: int) -> list[RetryNotice]:
        """The notices of the turn that ends at ``until`` (a later turn's may already be waiting when
        the run's events reach the tracer through a queue, as a parallel branch's do)."""
        waiting = self._retries.get(loop_id)
        if not waiting:
            return []
        mine = [n for n in waiting if _ns(n.timestamp) <= until]
        self._retries[loop_id] = [n for n in waiting if _ns(n.timestamp) > until]
        return mine

    def _retry_attributes(self, notice: RetryNotice) -> Attributes:
        failure = notice.failure
        attributes: Attributes = {sc.ERROR_TYPE: failure.kind.value, sc.RETRY_NUMBER: notice.retry,
                                  sc.RETRY_DELAY: round(notice.delay, 3)}
        if failure.status is not None:
            attributes["http.response.status_code"] = failure.status
        return attributes

    # ----------------------------------------------------------------- outgoing requests

    def _context_of_call(self, loop_id: str | None, tool_call_id: str) -> dict[str, str]:
        """``traceparent`` (and ``tracestate``, as the global propagator writes them) of the call's
        ``execute_tool`` span — once the events before it have become spans; a sub-agent's call,
        whose spans are written only after its parent's call ends, gets none."""
        if loop_id is None:
            return {}
        fields: dict[str, str] = {}

        def look_up() -> None:
            run = self._runs.get(loop_id)
            call = run.calls.get(tool_call_id) if run is not None else None
            if call is not None:
                propagate.inject(fields, context=trace.set_span_in_context(call[0]))
            elif run is not None and loop_id in self._silent:  # sampled out: say so downstream
                propagate.inject(fields, context=run.context)

        done = self._serial.submit(look_up, wait=_WAIT_FOR_CARRIER)
        return dict(fields) if done else {}

    # ----------------------------------------------------------------- tool calls

    def _tool_start(self, event: ToolExecutionStart, now: int) -> None:
        run = self._runs.get(event.loop_id)
        if run is None:
            return
        attributes: Attributes = {sc.OPERATION: sc.EXECUTE_TOOL, sc.TOOL_NAME: event.tool_name,
                                  sc.TOOL_CALL_ID: event.tool_call_id, sc.TOOL_TYPE: "function",
                                  sc.LOOP_ID: event.loop_id}
        attributes.update(run.start.facts.get(event.tool_name, {}))
        if self.capture_content:
            attributes[sc.TOOL_ARGUMENTS] = self._content.arguments(event.args)
        start_ns = max(now, run.start_ns)
        span = self._start(f"{sc.EXECUTE_TOOL} {event.tool_name}", context=run.context,
                           kind=SpanKind.INTERNAL, attributes=attributes, start_time=start_ns)
        run.calls[event.tool_call_id] = (span, event.tool_name, start_ns)
        if self._held:  # a sub-agent this call runs whose events came first
            waiting = (run.loop_id, event.tool_call_id)
            for loop_id in [k for k, held in self._held.items() if held.call == waiting]:
                self._release(loop_id, trace.set_span_in_context(span), event.tool_name, waiting, start_ns)

    def _tool_end(self, event: ToolExecutionEnd, now: int) -> None:
        run = self._runs.get(event.loop_id)
        call = run.calls.pop(event.tool_call_id, None) if run is not None else None
        if run is None or call is None:
            return
        span, name, started = call
        text = "\n".join(getattr(block, "text", "") for block in event.result.content)
        if event.is_error:
            self._fail(span, sc.tool_error_type(text), text if self.capture_content else None)
        elif self.capture_content:
            span.set_attribute(sc.TOOL_RESULT, self._content.result(event.result))
        child = event.child_loop_id
        if child is not None:
            span.set_attribute(sc.CHILD_LOOP_ID, redact(child))
            self._spawned.pop(child, None)  # a child whose events never came (subscribed without sub-agents)
            self._models.pop(child, None)
            if child in self._held:
                self._release(child, trace.set_span_in_context(span), name, (run.loop_id, event.tool_call_id), started)
        self._end_child(run, span, max(now, started, run.call_floors.pop(event.tool_call_id, 0)))

    # ----------------------------------------------------------------- parallel runs

    def _parallel_start(self, event: ParallelLoopStart, now: int) -> None:
        attributes: Attributes = {sc.OPERATION: sc.INVOKE_WORKFLOW, sc.WORKFLOW_NAME: self.workflow_name,
                                  sc.CONVERSATION_ID: event.session_id, sc.PARALLEL_LOOP_IDS: list(event.loop_ids)}
        span = self._start(f"{sc.INVOKE_WORKFLOW} {self.workflow_name}", context=self._ambient,
                           kind=SpanKind.INTERNAL, attributes=attributes,
                           start_time=_ns(event.timestamp))
        workflow = _Workflow(span, list(event.loop_ids))
        for loop_id in event.loop_ids:
            self._branches[loop_id] = workflow

    def _parallel_end(self, event: ParallelLoopEnd, now: int) -> None:
        workflow = self._branches.get(event.selected_loop_id)
        if workflow is None:
            return
        now = _ns(event.timestamp)
        for loop_id in workflow.loop_ids:  # a branch whose events stopped without AgentEnd ends with its workflow
            run = self._runs.get(loop_id)
            if run is not None:
                self._abandon(run, now)
        for loop_id in workflow.loop_ids:
            self._branches.pop(loop_id, None)
        span = workflow.span
        usage = event.evaluation_usage  # the judge's, and every branch's: the workflow's whole cost
        for ended in workflow.outcomes.values():
            usage = usage + ended.usage
        self._set(span, {sc.SELECTED_LOOP_ID: event.selected_loop_id,
                         sc.SELECTED_INDEX: event.selected_config_index, **self._usage(usage)})
        chosen = workflow.outcomes.get(event.selected_loop_id)
        if chosen is None or chosen.outcome in _FAILED_OUTCOMES:
            outcome = chosen.outcome if chosen is not None else None
            self._fail(span, (_FAILED_OUTCOMES.get(outcome) if outcome else None) or sc.OTHER_ERROR,
                       "the selected branch did not complete")
        self._end(span, max(_ns(event.timestamp), workflow.latest))

    # ----------------------------------------------------------------- errors

    def _fail(self, span: Span, kind: str, description: str | None) -> None:
        """Error status and ``error.type`` (recording-errors.md). The status says
        ``<error.type>: <message>``, the message scrubbed, then cut to 200 characters — 512 with
        content capture on — since a provider's error can echo the prompt (OTEL-11)."""
        kind = redact(kind)
        span.set_attribute(sc.ERROR_TYPE, kind)
        text = None
        if description:
            message = self._scrubber.text(description)
            if message.startswith(kind + ":"):  # a failed reply's text starts with its kind already
                message = message[len(kind) + 1:].lstrip()
            limit = _DESCRIPTION_LIMIT if self.capture_content else _STATUS_LIMIT
            text = f"{kind}: {message[:limit]}{'…' if len(message) > limit else ''}"
        span.set_status(Status(StatusCode.ERROR, text))

    def _start(self, name: str, *, attributes: Attributes, context: otel_context.Context, **options: Any) -> Span:
        """A span whose name and attributes hold no secret phi knows of: ids, tool names and model
        names come from the model and the application (content was scrubbed before, OTEL-11). When a
        span processor raises in ``on_start`` the span is lost to the SDK: a non-recording stand-in
        with the parent's context takes its place, so its children are still written and join the trace
        (a root's stand-in gets a context of its own, so its children still share one trace)."""
        try:
            return self._tracer.start_span(redact(name), context=context, attributes=redact_data(attributes),
                                           **options)
        except BaseException as error:
            self._plugin_failed("on_start", error)
            return _LostSpan.under(context)

    def _end(self, span: Span, end: int) -> None:
        """``span.end`` runs the span processors' ``on_end`` (user code): one that raises must not
        leave phi's bookkeeping half done, so it is caught here and the span counts as ended."""
        try:
            span.end(end_time=end)
        except BaseException as error:
            self._plugin_failed("on_end", error)

    def _plugin_failed(self, hook: str, error: BaseException) -> None:
        if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit: raised once the event's
            if self._interrupt is None:       # bookkeeping is done and every span it ends has ended
                self._interrupt = error
            return
        self._plugin_failures += 1
        if self._plugin_failures == 1:
            log.exception("OtelTracer: a span processor's %s raised (span kept; later failures logged at "
                          "debug level)", hook)
        else:
            log.debug("OtelTracer: a span processor's %s raised again", hook, exc_info=True)

    def _raise_interrupt(self) -> None:
        """Raise the ``BaseException`` a span processor raised while the work in hand ran (the
        delivering thread gets it: into the run, as the run's own exception — OTEL-7)."""
        interrupt, self._interrupt = self._interrupt, None
        if interrupt is not None:
            raise interrupt

    @staticmethod
    def _set(span: Span, attributes: Attributes) -> None:
        span.set_attributes(redact_data(attributes))


class _LostSpan(trace.NonRecordingSpan):
    """The stand-in for a span a span processor's ``on_start`` lost (OTEL-7). It records nothing, like
    a sampled-out span, but unlike one it does not silence its children: they are still written."""

    @classmethod
    def under(cls, parent: otel_context.Context) -> _LostSpan:
        known = trace.get_current_span(parent).get_span_context()
        if known.is_valid:
            return cls(known)
        # a root: the lost span's context would have been a new one too; with one of its own (sampled,
        # as a span whose on_start ran was recording) its children still share one trace
        return cls(SpanContext(random.getrandbits(128) or 1, random.getrandbits(64) or 1, is_remote=False,
                               trace_flags=TraceFlags(TraceFlags.SAMPLED)))


def _register_weakly(register: Callable[[Any], Callable[[], None]], method: Callable[..., Any],
                     when_gone: Any) -> Callable[[], None]:
    """``register`` a callback that calls the bound ``method`` while its object lives, and once the
    object is gone unregisters itself and answers ``when_gone``. Returns the function that stops it."""
    target = weakref.WeakMethod(method)

    def callback(*args: Any) -> Any:
        bound = target()
        if bound is None:
            stop()
            return when_gone
        return bound(*args)

    stop = register(callback)
    return stop


def _remember_bounded(table: OrderedDict[str, Any], key: str, value: Any) -> None:
    """Keep a notice until its run's ``AgentStart`` takes it; notices of runs this tracer never sees
    (another agent's, in the same process) are dropped, oldest first, past ``_NOTICES``."""
    table[key] = value
    while len(table) > _NOTICES:
        table.popitem(last=False)


def _first_reply(messages: Sequence[AgentMessage]) -> int:
    return next((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), len(messages))


def _tool_facts(agent: _Subscribable, scrubber: Redactor) -> dict[str, Attributes]:
    """Tool name -> the attributes its spans get: the description, and for MCP tools the MCP ones."""
    tools = list(agent.tools)
    for source in agent.tool_sources:
        if _looks_like_mcp_client(getattr(source, "client", None)):
            tools.extend(source.tools())  # the toolset's cached list (the run has just listed it)
    facts: dict[str, Attributes] = {}
    for tool in tools:
        attributes: Attributes = {}
        description = getattr(tool, "description", "")
        if isinstance(description, str) and description:
            attributes[sc.TOOL_DESCRIPTION] = scrubber.text(description)[:_DESCRIPTION_LIMIT]
        client = getattr(tool, "client", None)
        if _looks_like_mcp_client(client) and hasattr(tool, "info"):
            attributes.update(_mcp_attributes(client))
        facts[str(tool.name)] = attributes
    return facts


def _looks_like_mcp_client(client: object) -> bool:
    """An :class:`phi.mcp.McpClient` (phi.observability is a leaf: it does not import phi.mcp)."""
    return client is not None and hasattr(client, "call_tool") and hasattr(client, "protocol_version")


def _mcp_attributes(client: Any) -> Attributes:
    """gen-ai/mcp.md "Client": the method, protocol version and transport of a ``tools/call``."""
    attributes: Attributes = {sc.MCP_METHOD: "tools/call", sc.TOOL_TYPE: "extension"}
    if isinstance(client.protocol_version, str):
        attributes[sc.MCP_PROTOCOL_VERSION] = client.protocol_version
    if getattr(client, "pid", None) is not None:
        attributes[sc.NETWORK_TRANSPORT] = "pipe"
        return attributes
    attributes[sc.NETWORK_TRANSPORT] = "tcp"
    url = urlsplit(str(getattr(client, "label", "")))
    if url.hostname:
        attributes[sc.SERVER_ADDRESS] = url.hostname
        attributes[sc.SERVER_PORT] = url.port or (443 if url.scheme == "https" else 80)
    return attributes
