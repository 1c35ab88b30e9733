#!/usr/bin/env python3
"""Soak of the run contract (issue 23): many agents on threads, every way of driving a run at once.

Each of ``--agents`` threads makes an Agent (a :class:`~phi.ScriptedProvider` whose replies are
decided per call), drives it through a random series of *operations*, checks it, drops it and makes
the next one, until ``--minutes`` / ``--seconds`` have passed. An operation is one prompt — streamed,
``prompt().result()``, ``run()``, ``run(timeout=)``, ``prompt_parallel`` or ``run_parallel`` with 2–3
variants — with, at random:

* tool calls in parallel, sequential or batched mode: tools that sleep a little, tools that ignore
  cancellation for a while (some past the grace period or the tool timeout, so they are abandoned),
  tools that raise, an unknown tool, and an "actor" tool that acts from its own thread and from its
  cancellation callback;
* steering and follow-ups pushed from other threads, and from callbacks;
* an abort from another thread, a subscriber, a hook or a tool; a ``reset()`` likewise;
* an exception raised from one callback site: every hook of ``AgentLoopConfig``, an input filter,
  ``transform_context``, ``convert_to_llm``, ``get_api_key``, a subscriber, a tool, a cancellation
  callback;
* failed model replies (``on_error``; some retried), replies that hang until cancelled (only where a
  timeout ends them), vetoes from the ``before_*`` hooks, input filters that warn or reject,
  execution limits, both queue modes, a consumer that stops reading or closes the stream;
* prompts started from the subscriber that hears ``AgentEnd`` / ``ParallelLoopEnd`` (AGENT-1, AGENT-8).

Checked, loudly (a message naming the seed and what broke; exit status 1):

* no hang — every operation is bounded (``--bound``, 20 s); past it all thread stacks are dumped
  and the soak stops (exit status 2);
* no lost or duplicated input — every prompt, steer and follow-up text is unique; when an agent's
  life ends, each text pushed since its last ``reset()`` is in its history or its queues exactly
  once (a prompt only if the run accepted it), and no text pushed before that reset is;
* exceptions — one raised by application code reaches the caller unchanged (SPEC LOOP-5); a tool's
  is its result, a cancellation callback's is logged, a parallel branch's hook's is kept in the
  branch's outcome; nothing else is raised;
* every history is a valid conversation — tool calls answered by their results in call order, no
  dangling call, no result without a call, never two assistant replies in a row;
* subscribers in order — one run's events (``AgentStart`` … ``AgentEnd``) never interleave with
  another's (a parallel run's ``ParallelLoopStart`` … ``ParallelLoopEnd`` wraps its branches, which
  may interleave with each other), nothing follows a run's ``AgentEnd``, and no subscriber is ever
  called concurrently; a run that ends without ``AgentEnd`` must have raised; ``AgentEnd`` lists
  exactly the messages the run announced (EVT-4); when a run's end is heard the agent is idle and
  its history ends with the run's new messages (AGENT-1, AGENT-8);
* ``abort()`` never blocks (LOOP-19: at most the 0.5 s it waits for cancellation callbacks, plus slack);
* threads back to baseline — at the end no ``phi-agent-*``, ``phi-branch-*`` or ``phi-cancel``
  thread is left and the tool pool has no busy or abandoned worker.

Operations that take longer than ``--stall`` seconds (but end), and ``reset()`` calls that wait
more than 2 s, are counted (``stalls``, ``slow_resets`` by thread) and the first few listed on
stderr. A parallel run keeps its prompt whatever ends it (SPEC AGENT-8) — except one whose winner
was vetoed or had its input rejected, which adds the winner's messages only.

Progress goes to stderr; the last line of stdout is one JSON object of the counts::

    python scripts/soak.py --minutes 10
    python scripts/soak.py --seconds 30 --agents 4 --seed 7
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import random
import sys
import threading
import time
import traceback
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the phi of this checkout

from phi import (  # noqa: E402
    Agent,
    AgentEnd,
    AgentResult,
    AlreadyRunning,
    AssistantMessage,
    ExecutionLimits,
    ExtensionMessage,
    FilterResult,
    FunctionTool,
    MessageEnd,
    ParallelLoopEnd,
    ParallelLoopStart,
    QueueMode,
    RetryConfig,
    ScriptedProvider,
    StopReason,
    TextContent,
    ToolExecution,
    ToolResultMessage,
    UserMessage,
    default_convert_to_llm,
)
from phi.concurrency import workers  # noqa: E402

if TYPE_CHECKING:
    from phi import (
        AgentEvent,
        AgentMessage,
        EventStream,
        Message,
        StreamConfig,
        ToolContext,
    )
    from phi.evaluation import ParallelLoopResult

HOOKS = ("before_loop", "after_loop", "before_turn", "after_turn", "on_error", "before_tool_execution",
         "after_tool_execution", "before_tool_execution_update", "after_tool_execution_update")
VETO_HOOKS = {"before_loop": 0.02, "before_turn": 0.03, "before_tool_execution": 0.05,
              "before_tool_execution_update": 0.1}  # hook -> how often it returns False
CALLABLES = ("input_filter", "transform_context", "convert_to_llm", "get_api_key")
EVENT_TYPES = ("AgentStart", "TurnStart", "MessageStart", "MessageUpdate", "MessageEnd", "ToolExecutionStart",
               "ToolExecutionUpdate", "ProgressMessage", "ToolExecutionEnd", "TurnEnd", "AgentEnd",
               "ParallelLoopStart", "ParallelLoopEnd")
SUBSCRIBER_SITES = tuple(f"subscriber:{name}" for name in EVENT_TYPES)
HOOK_SITES = tuple(f"hook:{name}" for name in HOOKS)
TOOL_SITE, CANCEL_SITE = "tool", "cancel_callback"
# where application code is called, and so where it may raise (SPEC LOOP-5)
RAISE_SITES = HOOK_SITES + CALLABLES + SUBSCRIBER_SITES + (TOOL_SITE, CANCEL_SITE)
NOT_RAISED_TO_CALLER = (TOOL_SITE, CANCEL_SITE)  # a tool's exception is its result; a callback's is logged
ABORT_SITES = ("thread",) * 6 + HOOK_SITES + SUBSCRIBER_SITES + (TOOL_SITE,)
RESET_SITES = ("thread",) * 4 + HOOK_SITES + SUBSCRIBER_SITES + (TOOL_SITE,)
PUSH_SITES = HOOK_SITES + SUBSCRIBER_SITES + (TOOL_SITE, CANCEL_SITE)
KINDS = ("stream", "stream", "result", "result", "run", "run_timeout", "parallel", "run_parallel")
ONCE_PER_RUN = ("hook:before_loop", "hook:after_loop", "input_filter", "subscriber:AgentStart", "subscriber:AgentEnd",
                "subscriber:ParallelLoopStart", "subscriber:ParallelLoopEnd", CANCEL_SITE)
ABORT_BLOCKS_S = 2.0  # cancel() waits at most 0.5 s for callbacks; the rest is slack for a loaded machine
SLOW_RESET_S = 2.0
NOTES_SHOWN = 10  # slow-but-not-broken notes printed per kind
TOOL_NAMES, TOOL_WEIGHTS = ("quick", "stubborn", "failing", "actor", "ghost"), (8, 3, 1, 2, 1)  # ghost: no such tool
LIMIT_NOTICE = "[Agent stopped: "  # SPEC LOOP-10
LEFTOVER_PREFIXES = ("phi-agent-", "phi-branch-", "phi-cancel")
EXPECTED_LOG_ERRORS = ("cancellation callback failed",)  # a cancellation callback's exception is logged


class SoakError(Exception):
    """What the soak's application code raises at a callback site."""


# --------------------------------------------------------------------------- shared bookkeeping


class Tally:
    """The counts the last line reports; safe to add to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.exceptions_by_site: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.known_issues: Counter[str] = Counter()
        self.slow_resets: Counter[str] = Counter()  # thread kind -> reset() calls that took long
        self.logged: Counter[str] = Counter()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def add_to(self, table: Counter[str], key: str) -> None:
        with self._lock:
            table[key] += 1

    def get(self, name: str) -> int:
        with self._lock:
            return self.counts[name]


class Failures:
    """Every broken promise, printed to stderr as it is found; the first one stops the soak."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._lock = threading.Lock()
        self.items: list[str] = []
        self.stop = threading.Event()

    def add(self, where: str, what: str) -> None:
        message = f"FAILURE (seed {self.seed}) {where}: {what}"
        with self._lock:
            self.items.append(message)
        print(message, file=sys.stderr, flush=True)
        self.stop.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self.items)


class Watchdog:
    """Bounds every operation: past ``bound`` seconds it dumps all thread stacks and ends the process."""

    def __init__(self, bound: float, on_hang: Callable[[str], None]) -> None:
        self.bound = bound
        self._on_hang = on_hang
        self._active: dict[int, tuple[float, str]] = {}
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self._done = threading.Event()
        threading.Thread(target=self._watch, name="soak-watchdog", daemon=True).start()

    @contextmanager
    def bounded(self, what: str) -> Iterator[None]:
        key = next(self._keys)
        with self._lock:
            self._active[key] = (time.monotonic(), what)
        try:
            yield
        finally:
            with self._lock:
                del self._active[key]

    def close(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(0.25):
            now = time.monotonic()
            with self._lock:
                late = [what for started, what in self._active.values() if now - started > self.bound]
            if late:
                self._on_hang(late[0])
                return


class CountingHandler(logging.Handler):
    """Counts phi's log records (they would flood stderr); unexpected errors are failures."""

    def __init__(self, tally: Tally, failures: Failures) -> None:
        super().__init__(logging.WARNING)
        self.tally, self.failures = tally, failures

    def emit(self, record: logging.LogRecord) -> None:
        template = str(record.msg)
        self.tally.add_to(self.tally.logged, f"{record.levelname} {template[:60]}")
        if record.levelno >= logging.ERROR and not template.startswith(EXPECTED_LOG_ERRORS):
            detail = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                detail += "\n" + "".join(traceback.format_exception(*record.exc_info))
            self.failures.add(f"logger {record.name}", f"unexpected error logged: {detail}")


# --------------------------------------------------------------------------- one operation's plan


@dataclass
class Trigger:
    """Do ``action`` the ``nth`` time application code is called at ``site``."""

    action: str  # raise | abort | reset | steer | follow_up | slow
    site: str
    nth: int


@dataclass
class Fired:
    """An exception the soak raised at a site, and whether it was raised in a parallel branch."""

    site: str
    error: SoakError
    in_branch: bool


@dataclass
class Plan:
    """What one operation does; read by the provider, the hooks, the tools and the subscriber."""

    kind: str
    tool_rounds: int
    p_error: float
    hang: bool
    chains: int
    timeout: float
    variants: int
    triggers: list[Trigger]
    helpers: list[tuple[float, str]]  # (delay in seconds, steer | follow_up | abort | reset), from other threads
    needs_actor: bool = False
    text: str = ""  # what it was made to do (describe() at the start)
    hits: Counter[str] = field(default_factory=Counter)
    fired: list[Fired] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def idle(cls) -> Plan:
        """The plan between operations: do nothing."""
        return cls(kind="idle", tool_rounds=0, p_error=0.0, hang=False, chains=0, timeout=0.0, variants=0,
                   triggers=[], helpers=[])

    def hit(self, site: str) -> list[str]:
        """Count a call at ``site``; the actions due now (a raise last)."""
        with self.lock:
            self.hits[site] += 1
            due = [t for t in self.triggers if t.site == site and t.nth == self.hits[site]]
            for trigger in due:
                self.triggers.remove(trigger)
        return sorted((t.action for t in due), key=lambda action: action == "raise")

    def take_chain(self) -> bool:
        with self.lock:
            if self.chains <= 0:
                return False
            self.chains -= 1
            return True

    def describe(self) -> str:
        parts = [self.kind, f"tools={self.tool_rounds}"]
        parts += [f"{t.action}@{t.site}#{t.nth}" for t in self.triggers]
        parts += [f"{action}@thread+{delay * 1000:.0f}ms" for delay, action in self.helpers]
        if self.hang:
            parts.append(f"hang,timeout={self.timeout:.2f}")
        if self.chains:
            parts.append(f"chain={self.chains}")
        return " ".join(parts)


def make_trigger(rng: random.Random, action: str, sites: tuple[str, ...]) -> Trigger:
    """``action`` at a random site, the first time it is called there (or a later time, where there is one)."""
    site = rng.choice(sites)
    return Trigger(action, site, 1 if site in ONCE_PER_RUN else rng.choice((1, 1, 2, 3)))


def make_plan(rng: random.Random) -> Plan:
    kind = rng.choice(KINDS)
    timed = kind in ("run_timeout", "run_parallel")
    hang = timed and rng.random() < 0.5  # a reply that hangs is ended by the timeout, nothing else
    plan = Plan(kind=kind, tool_rounds=rng.choice((0, 1, 1, 2, 3)), p_error=rng.choice((0.0, 0.0, 0.1, 0.3)),
                hang=hang, chains=0 if hang else rng.choice((0,) * 6 + (1, 2)),
                timeout=rng.uniform(0.01, 0.4), variants=rng.choice((2, 3)), triggers=[], helpers=[])
    if rng.random() < 0.4:
        plan.triggers.append(make_trigger(rng, "raise", RAISE_SITES))
    if rng.random() < 0.3:
        plan.triggers.append(make_trigger(rng, "abort", ABORT_SITES))
    if rng.random() < 0.08:
        plan.triggers.append(make_trigger(rng, "reset", RESET_SITES))
    for _ in range(rng.choice((0, 0, 1, 2))):
        plan.triggers.append(make_trigger(rng, rng.choice(("steer", "follow_up")), PUSH_SITES))
    if rng.random() < 0.1:
        plan.triggers.append(Trigger("slow", CANCEL_SITE, 1))  # a callback that outlasts cancel()'s wait
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        plan.helpers.append((rng.uniform(0, 0.06), rng.choice(("steer", "steer", "follow_up", "follow_up"))))
    moved: list[Trigger] = []
    for trigger in plan.triggers:  # "thread" sites become helpers
        if trigger.site == "thread":
            plan.helpers.append((rng.uniform(0, 0.06), trigger.action))
            moved.append(trigger)
    plan.triggers = [t for t in plan.triggers if t not in moved]
    sites = {t.site for t in plan.triggers}
    if sites & {TOOL_SITE, CANCEL_SITE} or any(s.startswith(("hook:before_tool", "hook:after_tool")) for s in sites):
        plan.needs_actor = True
        plan.tool_rounds = max(plan.tool_rounds, 1)
    if CANCEL_SITE in sites and not any(t.action == "abort" for t in plan.triggers):
        plan.triggers.append(Trigger("abort", TOOL_SITE, 1))  # a cancellation callback needs a cancellation
    if "hook:on_error" in sites:
        plan.p_error = max(plan.p_error, 0.5)
    plan.text = plan.describe()
    return plan


# --------------------------------------------------------------------------- inputs and their fate


@dataclass
class Pushed:
    """A text given to the agent (prompt, steer, follow-up) and the ticks around the call."""

    kind: str  # prompt | parallel | steer | follow_up
    text: str
    start: int
    end: int
    where: str  # the operation it was pushed in


@dataclass
class ResetSpan:
    """The ticks around one ``reset()`` call; ``end`` is None while it runs."""

    start: int
    end: int | None = None


class Ledger:
    """Every text one agent was given, every reset, and which prompts a run accepted.

    Ticks order pushes and resets: a text given before a reset began must be gone; one given after
    every reset ended must be there exactly once (a prompt: if its run accepted it); one given while
    a reset ran may be either.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ticks = itertools.count()
        self.pushes: list[Pushed] = []
        self.resets: list[ResetSpan] = []
        self.accepted: set[str] = set()  # prompts an input filter let through: the run recorded them
        self.parallel: dict[str, set[int]] = {}  # a parallel prompt -> how often it may be in the history

    def tick(self) -> int:
        with self._lock:
            return next(self._ticks)

    def push(self, kind: str, text: str, where: str, call: Callable[[], object]) -> None:
        """Record ``call`` (which gives ``text`` to the agent), whatever it returns or raises: a prompt
        that was refused never reached an input filter, so it is expected nowhere."""
        with self._lock:
            pushed = Pushed(kind, text, next(self._ticks), -1, where)
            self.pushes.append(pushed)
        try:
            call()
        finally:
            pushed.end = self.tick()

    def reset(self, call: Callable[[], object]) -> None:
        with self._lock:
            span = ResetSpan(next(self._ticks))
            self.resets.append(span)
        try:
            call()
        finally:
            span.end = self.tick()

    def accept(self, text: str) -> None:
        with self._lock:
            self.accepted.add(text)

    def reset_since(self, text: str) -> bool:
        """Whether a reset ran after ``text`` was pushed, or runs now (it may have taken the text away);
        true of a text never pushed, too (it cannot be told)."""
        with self._lock:
            start = next((p.start for p in self.pushes if p.text == text), None)
            return start is None or any(r.end is None or r.end > start for r in self.resets)

    def expect_parallel(self, text: str, allowed: set[int]) -> None:
        with self._lock:
            self.parallel[text] = allowed

    def allowed(self, pushed: Pushed) -> set[int]:
        """How many times ``pushed`` may be in the history and the queues together."""
        if any(r.start > pushed.end for r in self.resets):
            return {0}  # a reset began after the text was given: it is gone
        if any(r.end is None or r.end > pushed.start for r in self.resets):
            return {0, 1}  # a reset ran while the text was given
        if pushed.kind == "prompt":
            return {1} if pushed.text in self.accepted else {0}
        if pushed.kind == "parallel":
            return self.parallel.get(pushed.text, {0, 1})
        return {1}


def first_text(message: AgentMessage) -> str:
    """A user message's own text (an input filter's warning is a later block)."""
    content = getattr(message, "content", [])
    if content and isinstance(content[0], TextContent):
        return content[0].text
    return getattr(message, "text", "")


def count_text(messages: list[AgentMessage], text: str) -> int:
    return sum(isinstance(m, UserMessage) and first_text(m) == text for m in messages)


def input_problems(agent: Agent, ledger: Ledger) -> list[str]:
    """SPEC LOOP-18, AGENT-1: each text is where it belongs, once; nothing from before a reset."""
    where: Counter[str] = Counter(first_text(m) for m in agent.messages if isinstance(m, UserMessage))
    where.update(first_text(m) for m in agent.steering_queue.snapshot() + agent.follow_up_queue.snapshot())
    problems = []
    for pushed in ledger.pushes:
        allowed = ledger.allowed(pushed)
        if where[pushed.text] not in allowed:
            resets = [(r.start, r.end) for r in ledger.resets[-3:]]
            problems.append(f"{pushed.kind} {pushed.text!r} appears {where[pushed.text]} time(s), expected "
                            f"{' or '.join(map(str, sorted(allowed)))} (pushed in {pushed.where}; at ticks "
                            f"{pushed.start}..{pushed.end}; the last resets at {resets})")
    known = {pushed.text for pushed in ledger.pushes}
    problems += [f"unknown user text {text!r} in the history or a queue" for text in where
                 if text not in known and not text.startswith(LIMIT_NOTICE)]
    return problems


def history_problems(messages: list[AgentMessage]) -> list[str]:
    """SPEC LOOP-5, LOOP-12, TOOL-5: the history is a valid conversation."""
    waiting: list[str] = []
    previous: AgentMessage | None = None
    for i, message in enumerate(messages):
        if isinstance(message, ExtensionMessage):
            continue
        if isinstance(message, ToolResultMessage):
            if not waiting or waiting[0] != message.tool_call_id:
                return [f"messages[{i}] answers {message.tool_call_id!r}, but the next unanswered call is "
                        f"{waiting[:1]}"]
            waiting.pop(0)
        elif waiting:
            return [f"messages[{i}] ({message.role}) comes before the results of {waiting}"]
        elif isinstance(message, AssistantMessage):
            if previous is None or isinstance(previous, AssistantMessage):
                return [f"messages[{i}] is an assistant reply that follows {getattr(previous, 'role', 'nothing')}"]
            if message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
                waiting = [call.id for call in message.tool_calls]
        previous = message
    return [f"tool calls {waiting} were never answered"] if waiting else []


# --------------------------------------------------------------------------- what subscribers hear


class EventOrder:
    """Checks one agent's event order (one run after another; a parallel run wraps its branches)."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report
        self.top: str | frozenset[str] | None = None  # the open run's loop id, a parallel run's branch ids
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._announced: dict[str, list[AgentMessage]] = {}  # loop id -> its MessageEnd messages
        self.recent: deque[str] = deque(maxlen=24)

    def observe(self, event: AgentEvent) -> None:
        kind = event.type
        loop_id = str(getattr(event, "loop_id", ""))
        self.recent.append(f"{kind}({loop_id[-8:]})")
        if isinstance(event, ParallelLoopStart):
            self._expect(self.top is None, "ParallelLoopStart while another run is open")
            self.top = frozenset(event.loop_ids)
        elif isinstance(event, ParallelLoopEnd):
            self._expect(isinstance(self.top, frozenset) and event.selected_loop_id in self.top,
                         f"ParallelLoopEnd (selecting {event.selected_loop_id}) outside its parallel run")
            self.top = None
        elif isinstance(self.top, frozenset):
            self._expect(loop_id in self.top, f"{kind} of {loop_id} inside a parallel run of other branches")
            self._step(kind, loop_id)
            self._messages(event, loop_id)
        elif self.top is None:
            self._expect(kind in ("AgentStart", "AgentEnd"), f"{kind} of {loop_id} outside any run")
            self._step(kind, loop_id)
            self._messages(event, loop_id)
            self.top = loop_id if kind == "AgentStart" else None
        else:
            self._expect(loop_id == self.top, f"{kind} of {loop_id} interleaves with the run {self.top}")
            self._step(kind, loop_id)
            self._messages(event, loop_id)
            if kind == "AgentEnd":
                self.top = None

    def _step(self, kind: str, loop_id: str) -> None:
        self._expect(loop_id not in self._ended, f"{kind} of {loop_id} after its AgentEnd")
        if kind == "AgentStart":
            self._expect(loop_id not in self._started, f"a second AgentStart of {loop_id}")
            self._started.add(loop_id)
        elif kind == "AgentEnd":
            self._ended.add(loop_id)
        else:
            self._expect(loop_id in self._started, f"{kind} of {loop_id} before its AgentStart")

    def _messages(self, event: AgentEvent, loop_id: str) -> None:
        """SPEC EVT-4: AgentEnd lists exactly the messages the run announced, in that order."""
        if isinstance(event, MessageEnd):
            self._announced.setdefault(loop_id, []).append(event.message)
        elif isinstance(event, AgentEnd):
            announced = self._announced.pop(loop_id, [])
            same = len(announced) == len(event.messages) and all(a is b for a, b in zip(announced, event.messages))
            self._expect(same, f"AgentEnd of {loop_id} lists {len(event.messages)} messages, but the run announced "
                               f"{len(announced)} (or others)")

    def end_operation(self, raised: bool) -> None:
        """Every stream of the operation has ended: an open run is one that raised."""
        if self.top is not None and not raised:
            self._report(f"the run {self.top} ended without AgentEnd/ParallelLoopEnd, yet did not raise")
        self.top = None
        self._announced.clear()  # runs that raised (and parallel branches that did) end without AgentEnd

    def _expect(self, ok: bool, what: str) -> None:
        if not ok:
            self._report(f"event order: {what}; recent events: {list(self.recent)}")


# --------------------------------------------------------------------------- one agent


@dataclass
class Operation:
    """The streams of one operation (its own, and those chained from AgentEnd) and what they gave."""

    plan: Plan
    streams: list[EventStream[Any]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    parallel: list[ParallelLoopResult] = field(default_factory=list)
    parallel_prompt: str | None = None
    selected_loop_id: str | None = None  # from the parallel run's ParallelLoopEnd, when it was heard
    ends: dict[str, AgentEnd] = field(default_factory=dict)  # the AgentEnd of every run heard, by loop id
    lock: threading.Lock = field(default_factory=threading.Lock)


class SoakAgent:
    """One agent's life: an Agent, its ledger, its event-order check, and the operations it runs."""

    def __init__(self, slot: int, life: int, rng: random.Random, soak: Soak) -> None:
        self.slot, self.life, self.rng, self.soak = slot, life, rng, soak
        self.ledger = Ledger()
        self.order = EventOrder(self.fail)
        self.busy = threading.Lock()  # held while the subscriber runs: it must never be called concurrently
        self.op = Operation(Plan.idle())
        self.op_index = 0
        self.agent = self._make_agent()
        self.agent.subscribe(self.on_event)

    # ------------------------------------------------------------- set-up

    def _make_agent(self) -> Agent:
        hooks: dict[str, Any] = {name: self._hook(name) for name in HOOKS}
        tools = [FunctionTool("quick", "returns soon", {"type": "object"}, self.quick),
                 FunctionTool("stubborn", "ignores cancellation for a while", {"type": "object"}, self.stubborn),
                 FunctionTool("failing", "always raises", {"type": "object"}, self.failing),
                 FunctionTool("actor", "acts from its own thread", {"type": "object"}, self.actor)]
        rng = self.rng
        limits = None
        if rng.random() < 0.25:  # SPEC LOOP-10: a limit notice ends some runs
            limits = ExecutionLimits(max_turns=rng.randint(1, 4), max_total_tokens=None,
                                     max_duration=rng.choice((None, 0.3)))
        return Agent(provider=ScriptedProvider(default=self.reply, record_calls=False), tools=tools,
                     steering_mode=rng.choice(tuple(QueueMode)), follow_up_mode=rng.choice(tuple(QueueMode)),
                     execution_limits=limits, retry_config=RetryConfig(initial_delay_ms=1, max_delay_ms=5),
                     input_filters=[self.input_filter], transform_context=self.transform_context,
                     convert_to_llm=self.convert_to_llm, get_api_key=self.get_api_key, **hooks)

    def where(self) -> str:
        return f"agent {self.slot} life {self.life} op {self.op_index} [{self.op.plan.text}]"

    def fail(self, what: str) -> None:
        self.soak.failures.add(self.where(), what)

    def text(self, kind: str) -> str:
        return f"{kind}-{self.slot}.{self.life}.{next(self.soak.serial)}"

    # ------------------------------------------------------------- application code at every site

    def act(self, site: str) -> None:
        """Whatever the plan says to do at ``site`` now: push, abort, reset, stall, raise."""
        for action in self.op.plan.hit(site):
            if action in ("steer", "follow_up"):
                self.push(action)
            elif action == "abort":
                self.abort()
            elif action == "reset":
                self.reset()
            elif action == "slow":
                time.sleep(0.7)
            else:
                error = SoakError(f"raised at {site} ({self.where()})")
                in_branch = threading.current_thread().name.startswith("phi-branch-")
                with self.op.plan.lock:
                    self.op.plan.fired.append(Fired(site, error, in_branch))
                self.soak.tally.add_to(self.soak.tally.exceptions_by_site, site)
                raise error

    def abort(self) -> None:
        """SPEC LOOP-19: aborting never blocks (cancel() waits for callbacks at most 0.5 s)."""
        self.soak.tally.add("aborts")
        started = time.monotonic()
        self.agent.abort()
        took = time.monotonic() - started
        if took > ABORT_BLOCKS_S:
            self.fail(f"abort() blocked for {took:.1f} s on {threading.current_thread().name}")

    def reset(self) -> None:
        """reset() waits for the aborted run only outside the run's own callbacks: a slow one is counted
        by the thread it was called on."""
        self.soak.tally.add("resets")
        started = time.monotonic()
        self.ledger.reset(self.agent.reset)
        took = time.monotonic() - started
        if took > SLOW_RESET_S:
            thread = threading.current_thread().name
            self.soak.tally.add_to(self.soak.tally.slow_resets, thread.split("-")[0] + "-" + thread.split("-")[1])
            self.soak.note("slow reset", f"reset() took {took:.1f} s on {thread}: {self.where()}")

    def push(self, kind: str) -> None:
        text = self.text(kind[0])
        self.soak.tally.add("steers" if kind == "steer" else "follow_ups")
        give = self.agent.steer if kind == "steer" else self.agent.follow_up
        self.ledger.push(kind, text, self.where(), lambda: give(text))

    def _hook(self, name: str) -> Callable[..., object]:
        veto = VETO_HOOKS.get(name, 0.0)

        def hook(*args: object) -> object:
            self.act(f"hook:{name}")
            return False if veto and self.rng.random() < veto else None

        hook.__name__ = name
        return hook

    def input_filter(self, text: str) -> FilterResult | None:
        self.act("input_filter")
        roll = self.rng.random()
        if roll < 0.03:
            return FilterResult.reject("the soak says no")
        self.ledger.accept(text)  # the run records the prompt right after its filters pass
        return FilterResult.warn("careful") if roll < 0.08 else None

    def transform_context(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        self.act("transform_context")
        return messages

    def convert_to_llm(self, messages: list[AgentMessage]) -> list[Message]:
        self.act("convert_to_llm")
        return default_convert_to_llm(messages)

    def get_api_key(self, provider: str) -> str | None:
        self.act("get_api_key")
        return None

    def on_event(self, event: AgentEvent) -> None:
        """The subscriber: checks the order, acts as planned, and may chain a prompt (AGENT-1)."""
        if not self.busy.acquire(blocking=False):
            self.fail(f"a subscriber was called concurrently ({event.type})")
            return
        try:
            self.order.observe(event)
            if isinstance(event, AgentEnd):
                self.op.ends[event.loop_id] = event
            elif isinstance(event, ParallelLoopEnd):
                self.op.selected_loop_id = event.selected_loop_id
            if self.rng.random() < 0.01:
                time.sleep(0.002)  # a slow subscriber now and then widens any race
            ended = event.type in ("AgentEnd", "ParallelLoopEnd") and self.order.top is None
            if ended:
                self.check_settled(event)
            self.act(f"subscriber:{event.type}")
            if ended and self.op.plan.take_chain():
                self.chain()
        finally:
            self.busy.release()

    def check_settled(self, event: AgentEvent) -> None:
        """SPEC AGENT-1, AGENT-8: when a run's end is heard the agent is idle, and a run's new messages
        are the end of the history (unless a reset has dropped them)."""
        if self.agent.is_streaming:
            self.fail(f"the agent is not idle when {event.type} reaches a subscriber (SPEC AGENT-1, AGENT-8)")
        if not isinstance(event, AgentEnd):
            return
        new = event.messages
        if not new or not isinstance(new[0], UserMessage) or self.ledger.reset_since(first_text(new[0])):
            return
        tail = self.agent.messages[-len(new):]
        if len(tail) != len(new) or any(a is not b for a, b in zip(tail, new)):
            self.fail(f"the history does not end with the {len(new)} new messages of the run {event.loop_id} when "
                      "its AgentEnd is heard (SPEC AGENT-1)")

    def chain(self) -> None:
        """A prompt started from the subscriber that hears a run's end: the agent is idle there."""
        text = self.text("p")
        self.soak.tally.add("prompts")
        self.soak.tally.add("runs")
        self.soak.tally.add("chained_prompts")
        try:
            self.ledger.push("prompt", text, self.where(), lambda: self.op.streams.append(self.agent.prompt(text)))
        except AlreadyRunning as error:
            self.fail(f"a prompt started from the subscriber of AgentEnd was refused (SPEC AGENT-1): {error}")

    # ------------------------------------------------------------- tools

    def quick(self, args: dict[str, Any], ctx: ToolContext) -> str:
        for i in range(self.rng.randint(0, 2)):
            ctx.update(f"partial {i}")
            ctx.progress(f"step {i}")
        ctx.cancel.wait(self.rng.uniform(0, 0.01))
        return "quick result"

    def stubborn(self, args: dict[str, Any], ctx: ToolContext) -> str:
        # ignores ctx.cancel meanwhile; now and then past the grace period of an abort (1 s by default)
        time.sleep(self.rng.choice((0.01, 0.03, 0.1, 0.25)) if self.rng.random() < 0.9 else 1.2)
        return "stubborn result"

    def failing(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.soak.tally.add_to(self.soak.tally.exceptions_by_site, "tool:failing")
        raise RuntimeError("this tool always fails")

    def actor(self, args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.cancel.on_cancel(lambda: self.act(CANCEL_SITE))
        ctx.update("acting")
        self.act(TOOL_SITE)
        ctx.cancel.wait(self.rng.uniform(0, 0.03))
        return "acted"

    # ------------------------------------------------------------- the model

    def reply(self, config: StreamConfig) -> dict[str, Any]:
        """A reply decided per call: hang (timed operations only), fail, call tools, or answer."""
        plan, rng = self.op.plan, self.rng
        delay = rng.choice((0, 0, 1, 2))
        if plan.hang and rng.random() < 0.7:
            return {"blocks": [{"type": "text", "chunks": ["hold", " on"]}], "hang_after_chunks": 1}
        if rng.random() < plan.p_error:  # rate_limited before any chunk is retried (SPEC ERR-1, ERR-2)
            error = {"kind": rng.choice(("api", "rate_limited")), "message": "scripted failure",
                     "after_chunks": rng.choice((0, 1)), "retry_after_ms": 0}
            return {"blocks": [{"type": "text", "chunks": ["oops"]}], "error": error}
        if tool_rounds(config.messages) < plan.tool_rounds:
            names = rng.choices(TOOL_NAMES, TOOL_WEIGHTS, k=rng.randint(1, 4))
            if plan.needs_actor and "actor" not in names:
                names[0] = "actor"
            calls = [{"type": "toolCall", "id": f"c{next(self.soak.serial)}", "name": name, "arguments": {"i": i}}
                     for i, name in enumerate(names)]
            return {"blocks": [{"type": "text", "chunks": ["let me ", "look"]}, *calls], "chunk_delay_ms": delay,
                    "usage": {"input": 10, "output": 5}}
        chunks = [f"w{i} " for i in range(rng.randint(1, 6))]
        return {"blocks": [{"type": "text", "chunks": chunks}], "chunk_delay_ms": delay,
                "usage": {"input": 10, "output": 3}}

    # ------------------------------------------------------------- operations

    def run_operation(self) -> None:
        self.op_index += 1
        plan = make_plan(self.rng)
        self.op = Operation(plan)
        self.configure(plan)
        started = time.monotonic()
        with self.soak.watchdog.bounded(self.where()):
            helpers = [self.helper(delay, action) for delay, action in plan.helpers]
            self.drive(plan)
            self.finish_streams()
            for helper in helpers:
                helper.join()
            if not self.agent.wait_for_idle(self.soak.bound):
                self.fail("the agent did not become idle")
        elapsed = time.monotonic() - started
        if elapsed > self.soak.stall:
            self.soak.stalled(self.where(), elapsed)
        self.check_operation()
        if self.rng.random() < 0.03:
            self.reset()

    def configure(self, plan: Plan) -> None:
        config = self.agent.config  # the agent is idle: the next run copies it as it starts
        config.tool_execution = self.rng.choice(tuple(ToolExecution))
        config.batch_size = 2
        config.tool_timeout_ms = self.rng.choice((None, None, None, 150))
        config.tool_abort_grace_ms = self.rng.choice((1000, 1000, 200))

    def helper(self, delay: float, action: str) -> threading.Thread:
        def work() -> None:
            time.sleep(delay)
            if action in ("steer", "follow_up"):
                self.push(action)
            elif action == "abort":
                self.abort()
            else:
                self.reset()

        thread = threading.Thread(target=work, name=f"soak-helper-{self.slot}", daemon=True)
        thread.start()
        return thread

    def drive(self, plan: Plan) -> None:
        """Start the operation's run as its kind says, and wait for it."""
        parallel = plan.kind in ("parallel", "run_parallel")
        text = self.text("p")
        self.soak.tally.add("prompts")
        self.soak.tally.add("runs")
        if parallel:
            self.soak.tally.add("parallel_runs")
            self.op.parallel_prompt = text
        variants = [{"temperature": 0.1 * i} for i in range(plan.variants)]
        try:
            if plan.kind in ("stream", "result"):
                self.ledger.push("prompt", text, self.where(), lambda: self.op.streams.append(self.agent.prompt(text)))
                if plan.kind == "stream":
                    self.consume(self.op.streams[0])
            elif plan.kind == "parallel":
                self.ledger.push("parallel", text, self.where(),
                                 lambda: self.op.streams.append(self.agent.prompt_parallel(text, variants)))
            elif plan.kind == "run_parallel":
                limit = plan.timeout if plan.hang or self.rng.random() < 0.5 else None
                run_parallel = self.agent.run_parallel
                self.ledger.push("parallel", text, self.where(),
                                 lambda: self.op.parallel.append(run_parallel(text, variants, timeout=limit)))
            else:
                limit = plan.timeout if plan.kind == "run_timeout" else None
                self.ledger.push("prompt", text, self.where(),
                                 lambda: self.record_result(self.agent.run(text, timeout=limit)))
        except AlreadyRunning as error:
            self.fail(f"the operation's prompt was refused: {error}")
        except Exception as error:  # what the run raised: judged in check_exceptions
            self.add_error(error)

    def consume(self, stream: EventStream[Any]) -> None:
        """Read the events live, as an application would; sometimes stop early, or close the stream
        (which aborts the run)."""
        stop_after = self.rng.choice((None, None, None, 3, 8))
        try:
            for count, _ in enumerate(stream):
                if stop_after is not None and count >= stop_after:
                    break
        except BaseException:
            return  # the run's exception: result() gives it again
        if stop_after is not None and self.rng.random() < 0.5:
            self.soak.tally.add("aborts")
            stream.close()

    def finish_streams(self) -> None:
        """Wait for every stream of the operation, chained ones included (their list may grow)."""
        done = 0
        while done < len(self.op.streams):
            stream = self.op.streams[done]
            done += 1
            if not stream.wait(self.soak.bound):
                self.fail("a run did not end within the bound")
                continue
            try:
                outcome = stream.result()
            except BaseException as error:
                self.add_error(error)
                continue
            if isinstance(outcome, AgentResult):
                self.record_result(outcome)
            else:
                self.op.parallel.append(outcome)

    def record_result(self, result: AgentResult) -> None:
        self.soak.tally.add_to(self.soak.tally.outcomes, result.outcome.value)
        if result.timed_out:
            self.soak.tally.add("timeouts")
            if result.outcome.value != "aborted":
                self.fail(f"timed_out with outcome {result.outcome.value} (SPEC AGENT-2)")

    def add_error(self, error: BaseException) -> None:
        with self.op.lock:
            self.op.errors.append(error)
        self.soak.tally.add_to(self.soak.tally.outcomes, "raised")

    # ------------------------------------------------------------- checks

    def check_operation(self) -> None:
        self.order.end_operation(raised=bool(self.op.errors))
        self.check_exceptions()
        text = self.op.parallel_prompt
        if text is not None:
            if self.op.parallel:
                self.check_parallel(text, self.op.parallel[0])
            else:
                self.check_parallel_raised(text)
        for problem in history_problems(self.agent.messages):
            self.fail(f"invalid history: {problem}")

    def check_exceptions(self) -> None:
        """SPEC LOOP-5: what application code raised reaches the caller unchanged, and nothing else does."""
        fired = list(self.op.plan.fired)
        for error in self.op.errors:
            source = next((f for f in fired if f.error is error), None)
            if source is None:
                shown = "".join(traceback.format_exception(type(error), error, error.__traceback__))
                self.fail(f"a run raised what no application code raised:\n{shown}")
            elif source.site in NOT_RAISED_TO_CALLER or source.in_branch:
                self.fail(f"an exception raised at {source.site} reached the caller")
        branch_errors = [o.exception for r in self.op.parallel for o in r.outcomes]
        for source in fired:
            if source.site in NOT_RAISED_TO_CALLER:
                continue
            if source.in_branch:
                if self.op.parallel and not any(e is source.error for e in branch_errors):
                    self.fail(f"a parallel branch's exception at {source.site} is not in its outcome")
            elif not any(e is source.error for e in self.op.errors):
                self.fail(f"the exception raised at {source.site} never reached the caller")

    def check_parallel(self, text: str, result: ParallelLoopResult) -> None:
        """AGENT-8: the history gains the winner's messages, so the prompt iff the winner recorded it."""
        for branch in result.outcomes:
            for problem in history_problems(branch.context.messages):
                self.fail(f"invalid history of the parallel branch {branch.loop_id}: {problem}")
        winner = result.selected
        outcome = winner.outcome.value if winner.outcome is not None else "raised"
        self.soak.tally.add_to(self.soak.tally.outcomes, f"parallel:{outcome}")
        recorded = count_text(winner.context.messages, text)
        if winner.exception is not None:  # issue 23 item 3: every branch raised; the prompt is kept anyway
            if not count_text(self.agent.messages, text) and not self.ledger.reset_since(text):
                self.fail("a parallel run whose winner raised lost its prompt (SPEC AGENT-8)")
            self.ledger.expect_parallel(text, {1})
        else:
            self.ledger.expect_parallel(text, {recorded})

    def check_parallel_raised(self, text: str) -> None:
        """A parallel run that raised (a subscriber did) keeps its prompt (issue 23 item 3, SPEC
        AGENT-8) — unless it raised after the winner was chosen and the winner's run, ending without
        an exception, had not recorded it (it was vetoed or its input rejected)."""
        if count_text(self.agent.messages, text) or self.ledger.reset_since(text):
            return
        selected = self.op.selected_loop_id
        end = self.op.ends.get(selected) if selected is not None else None
        if end is not None and not count_text(end.messages, text):
            self.soak.tally.add_to(self.soak.tally.outcomes, f"parallel:raised_after_{end.outcome.value}_winner")
            return
        self.fail("a parallel run that raised lost its prompt (SPEC AGENT-8)")
        self.ledger.expect_parallel(text, {0, 1})

    def end_of_life(self) -> None:
        with self.soak.watchdog.bounded(f"{self.where()} end of life"):
            if not self.agent.wait_for_idle(self.soak.bound):
                self.fail("the agent did not become idle at the end of its life")
            for problem in input_problems(self.agent, self.ledger):
                self.fail(f"lost or duplicated input: {problem}")
            for problem in history_problems(self.agent.messages):
                self.fail(f"invalid history: {problem}")
            self.agent.close()


# --------------------------------------------------------------------------- the soak


class Soak:
    """Runs the agent slots until the deadline, then checks that phi's threads are gone."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.seed: int = args.seed
        self.agents: int = args.agents
        self.bound: float = args.bound
        self.stall: float = args.stall
        self.duration: float = args.seconds if args.seconds is not None else args.minutes * 60.0
        self.tally = Tally()
        self.failures = Failures(self.seed)
        self.watchdog = Watchdog(self.bound, self.hang)
        self.serial = itertools.count()
        self.notes: Counter[str] = Counter()
        self._notes_lock = threading.Lock()
        self.started = time.monotonic()

    def run(self) -> int:
        handler = CountingHandler(self.tally, self.failures)
        phi_log = logging.getLogger("phi")
        phi_log.addHandler(handler)
        propagate, phi_log.propagate = phi_log.propagate, False
        try:
            self.soak()
        finally:
            phi_log.removeHandler(handler)
            phi_log.propagate = propagate
        self.watchdog.close()
        print(json.dumps(self.summary()), flush=True)
        return 1 if len(self.failures) else 0

    def soak(self) -> None:
        """Every slot until the deadline, then the check that phi's threads are gone."""
        deadline = self.started + self.duration
        slots = [threading.Thread(target=self.slot, args=(i, deadline), name=f"soak-slot-{i}", daemon=True)
                 for i in range(self.agents)]
        for thread in slots:
            thread.start()
        while any(t.is_alive() for t in slots):
            for thread in slots:
                thread.join(10.0)
                if thread.is_alive():
                    break
            self.progress()
        self.check_baseline()

    def slot(self, index: int, deadline: float) -> None:
        rng = random.Random(f"{self.seed}-{index}")
        life = 0
        while time.monotonic() < deadline and not self.failures.stop.is_set():
            life += 1
            self.tally.add("lives")
            soak_agent: SoakAgent | None = None
            try:
                soak_agent = SoakAgent(index, life, rng, self)
                for _ in range(rng.randint(5, 25)):
                    if time.monotonic() >= deadline or self.failures.stop.is_set():
                        break
                    soak_agent.run_operation()
                    self.tally.add("operations")
                soak_agent.end_of_life()
            except Exception:  # a bug of the soak itself, or something phi raised where it must not
                where = soak_agent.where() if soak_agent is not None else f"agent {index} life {life}"
                self.failures.add(where, f"the driver raised:\n{traceback.format_exc()}")

    def stalled(self, where: str, seconds: float) -> None:
        self.tally.add("stalls")
        self.note("stall", f"an operation took {seconds:.1f} s: {where}")

    def note(self, kind: str, what: str) -> None:
        """Something slow but not broken: to stderr (the first few of each kind; the JSON counts them all)."""
        with self._notes_lock:
            self.notes[kind] += 1
            shown = self.notes[kind]
        if shown <= NOTES_SHOWN:
            more = " (further ones are only counted)" if shown == NOTES_SHOWN else ""
            print(f"note (seed {self.seed}): {kind}: {what}{more}", file=sys.stderr, flush=True)

    def progress(self) -> None:
        t = self.tally
        print(f"[{time.monotonic() - self.started:6.0f} s] runs {t.get('runs')} operations {t.get('operations')} "
              f"lives {t.get('lives')} stalls {t.get('stalls')} failures {len(self.failures)}",
              file=sys.stderr, flush=True)

    def check_baseline(self) -> None:
        """Every phi thread gone, no worker busy or abandoned (after the slowest tool has returned)."""
        started = time.monotonic()
        deadline = started + 10.0
        while True:
            leftover = sorted(t.name for t in threading.enumerate() if t.name.startswith(LEFTOVER_PREFIXES))
            pool = workers.stats()
            if not leftover and pool.busy == 0 and pool.abandoned == 0:
                print(f"back to baseline after {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
                return
            if time.monotonic() > deadline:
                self.failures.add("the end", f"not back to baseline: threads {dict(Counter(leftover))}, pool {pool}")
                return
            time.sleep(0.1)

    def hang(self, what: str) -> None:
        """The watchdog fired: show every thread, report, and end the process (threads may be stuck)."""
        self.failures.add(what, f"no progress within {self.bound:.0f} s (a hang); thread stacks follow")
        dump_threads()
        summary = self.summary()
        summary["hang"] = what
        print(json.dumps(summary), flush=True)
        os._exit(2)

    def summary(self) -> dict[str, Any]:
        t = self.tally
        names = ("runs", "prompts", "steers", "follow_ups", "aborts", "resets", "parallel_runs", "timeouts",
                 "chained_prompts", "operations", "lives", "stalls")
        return {**{name: t.get(name) for name in names},
                "exceptions_by_site": dict(sorted(t.exceptions_by_site.items())),
                "outcomes": dict(sorted(t.outcomes.items())),
                "known_issues": dict(sorted(t.known_issues.items())),
                "slow_resets": dict(sorted(t.slow_resets.items())),
                "logged": dict(sorted(t.logged.items())),
                "failures": len(self.failures),
                "seconds": round(time.monotonic() - self.started, 1),
                "agents": self.agents, "seed": self.seed}


def dump_threads() -> None:
    """Every thread's stack, with its name, to stderr."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        print(f"\n--- thread {names.get(ident, '?')} ({ident}):", file=sys.stderr)
        print("".join(traceback.format_stack(frame)), end="", file=sys.stderr)
    sys.stderr.flush()


def tool_rounds(messages: list[Message]) -> int:
    """How many replies with tool calls followed the last user message."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage) and message.tool_calls:
            rounds += 1
    return rounds


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to soak (default 1)")
    parser.add_argument("--seconds", type=float, default=None, help="how long to soak, for short runs")
    parser.add_argument("--agents", type=int, default=8, help="agents driven at once (default 8)")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: chosen and printed)")
    parser.add_argument("--bound", type=float, default=20.0, help="seconds an operation may take before it is a hang")
    parser.add_argument("--stall", type=float, default=8.0, help="seconds past which an operation counts as a stall")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.randrange(10**6)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import phi

    print(f"soak: seed {args.seed}, {args.agents} agents, phi from {os.path.dirname(phi.__file__)}",
          file=sys.stderr, flush=True)
    return Soak(args).run()


if __name__ == "__main__":
    sys.exit(main())
