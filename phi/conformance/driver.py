"""The reference driver of the conformance suite (SPEC §10; protocol in phi/conformance/suite/README.md).

Reads one fixture (JSON) on stdin, runs it against phi's loop and writes JSON lines on stdout::

    {"kind": "event", "event": {...}}                  every AgentEvent, in emission order
    {"kind": "hook", "name": "before_turn", "args": [...]}
    {"kind": "provider_request", "index": 0, "request": {...}}
    {"kind": "tool_executed", "name": "echo", "tool_call_id": "t1", "args": {...}}
    {"kind": "child_event", "tool": "helper", "event": {...}}   every event of a sub-agent's child run
    {"kind": "child_provider_request", "tool": "helper", "index": 0, "request": {...}}
    {"kind": "queues", "steering": [...], "follow_up": [...]}   what the queues hold after the run
    {"kind": "context", "messages": [...]}              the context's messages after the run
    {"kind": "result", "messages": [...]}               last line on success, or
    {"kind": "error", "error": "InvalidContinue", "message": "..."}

Usage: ``python -m phi.conformance.driver < fixture.json``.

Protocol 2 (``suite/DRIVERS.md``): started with ``PHI_CONFORMANCE_PROTOCOL=2`` in the environment
(as the runner does) or with ``--persistent``, the driver first writes ``{"kind": "hello",
"protocol": 2, "persistent": true}``, then runs one fixture per stdin line, each on fresh objects,
ending its output with ``{"kind": "done", "id": ...}``; a fixture's output goes through a gate
that is shut at ``done``, so threads a fixture leaves behind (a tool ignoring cancellation) cannot
write into the next one. ``--once`` forces protocol 1.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Callable, Collection, cast

from ..concurrency.cancel import CancellationToken
from ..concurrency.queues import MessageQueue
from ..errors import ConfigError, PhiError
from ..events import AgentEvent, event_to_json
from ..json_values import is_object
from ..loop.config import AgentContext, AgentLoopConfig, ToolExecution
from ..loop.identity import reset_loop_numbers
from ..loop.run import agent_loop, agent_loop_continue
from ..providers.model_config import API_MOCK, ModelConfig
from ..providers.retry import RetryConfig
from ..types import (
    ContinuationKind,
    QueueMode,
    ThinkingLevel,
    TurnTrigger,
    message_to_json,
)
from .match import matches
from .scripted import (
    Recorder,
    ReportingProvider,
    ScriptedFailure,
    VirtualClock,
    make_filter,
    make_hook,
    make_tool,
    message_of,
)

if TYPE_CHECKING:
    from ..evaluation import EvaluationStrategy


@dataclass
class _Trigger:
    """An action waiting for the ``remaining``-th moment of ``kind`` that matches ``pattern``."""

    kind: str  # "event", "hook" or "tool" (see Recorder.moment)
    pattern: dict[str, Any]
    remaining: int
    do: object


def _trigger(when: dict[str, Any], do: object) -> _Trigger:
    """The trigger of a ``when`` object (suite/README.md §1.5): an event, a hook call or a tool call."""
    nth = int(when.get("nth", 1))
    where = when.get("where", {})
    if "event" in when:
        return _Trigger("event", {"type": when["event"], **where}, nth, do)
    if "hook" in when:
        return _Trigger("hook", {"hook": when["hook"], **where}, nth, do)
    if "tool" in when:
        return _Trigger("tool", {"tool": when["tool"]}, nth, do)
    raise ConfigError(f"unknown action trigger {when!r}")


class Actions:
    """The fixture's actions. Each fires once, synchronously, on the thread where its moment happens:
    inside the event sink for an event, inside the hook before it returns for a hook call, inside
    the tool's ``execute`` before its steps for a tool call."""

    def __init__(self, specs: list[dict[str, Any]], steering: MessageQueue, follow_up: MessageQueue,
                 cancel: CancellationToken, clock: VirtualClock, hooks: Collection[str] = ()) -> None:
        self.pending: list[_Trigger] = []
        self.lock = threading.Lock()  # tools fire from worker threads
        self.steering, self.follow_up, self.cancel, self.clock = steering, follow_up, cancel, clock
        for spec in specs:
            when = spec.get("when", "before_start")
            if when == "before_start":
                self.apply(spec["do"])
                continue
            trigger = _trigger(when, spec["do"])
            if trigger.kind == "hook" and trigger.pattern["hook"] not in hooks:
                raise ConfigError(f"an action is bound to {trigger.pattern['hook']!r}, which the fixture does not "
                                  "configure (config.hooks, or config.input_filters for input_filter)")
            self.pending.append(trigger)

    def on_event(self, event: dict[str, Any]) -> None:
        self.on_moment("event", event)

    def on_moment(self, kind: str, moment: dict[str, Any]) -> None:
        due: list[object] = []
        with self.lock:
            for trigger in self.pending:
                if trigger.kind == kind and trigger.remaining > 0 and matches(trigger.pattern, moment):
                    trigger.remaining -= 1
                    if trigger.remaining == 0:
                        due.append(trigger.do)
        for do in due:
            self.apply(do)

    def apply(self, do: object) -> None:
        if do == "abort" or (is_object(do) and do.get("abort")):
            self.cancel.cancel()
        elif is_object(do) and "steer" in do:
            self.steering.push(message_of(do["steer"]))
        elif is_object(do) and "follow_up" in do:
            self.follow_up.push(message_of(do["follow_up"]))
        elif is_object(do) and "advance_clock_ms" in do:
            self.clock.advance(float(do["advance_clock_ms"]) / 1000.0)
        elif is_object(do) and "raise" in do:
            raise ScriptedFailure(str(do["raise"]))
        else:
            raise ConfigError(f"unknown action {do!r}")


def build_config(fixture: dict[str, Any], recorder: Recorder, steering: MessageQueue,
                 follow_up: MessageQueue, clock: VirtualClock, branch: int | None = None) -> AgentLoopConfig:
    spec = fixture.get("config", {})
    model = spec.get("model", {})
    model_config = ModelConfig(id=model.get("id", "mock-model"), api=API_MOCK, provider=model.get("provider", "mock"))
    config = AgentLoopConfig(
        model_config=model_config,
        provider=ReportingProvider(fixture.get("provider", {}), recorder, model_config.provider, branch=branch),
        thinking_level=ThinkingLevel(spec.get("thinking_level", "off")),
        max_tokens=spec.get("max_tokens"),
        temperature=spec.get("temperature"),
        config_id=spec.get("config_id"),
        first_turn_trigger=TurnTrigger(spec.get("first_turn_trigger", "User")),
        metadata=spec.get("metadata"),
        tool_execution=ToolExecution(spec.get("tool_execution", "parallel")),
        batch_size=int(spec.get("batch_size", 4)),
        tool_timeout_ms=spec.get("tool_timeout_ms"),
        tool_abort_grace_ms=int(spec.get("tool_abort_grace_ms", 1000)),
        retry_config=RetryConfig(max_retries=int(spec.get("retry", {}).get("max_retries", 0)), initial_delay_ms=0,
                                 max_delay_ms=0, jitter=False),
        get_steering_messages=steering.drain,
        get_follow_up_messages=follow_up.drain,
        # a source that cannot take messages back (LOOP-18) has no put-back function
        put_back_steering_messages=steering.put_back if spec.get("steering_put_back", True) else None,
        put_back_follow_up_messages=follow_up.put_back if spec.get("follow_up_put_back", True) else None,
        clock=clock.now,
    )
    if "context" in spec:
        from ..context.config import ContextConfig

        config.context_config = ContextConfig(**spec["context"])
    if "limits" in spec:
        from ..context.config import ExecutionLimits

        limits = spec["limits"]
        duration = limits.get("max_duration_ms")
        config.execution_limits = ExecutionLimits(limits.get("max_turns"), limits.get("max_total_tokens"),
                                                  None if duration is None else duration / 1000.0)
    config.input_filters = [make_filter(i, f, recorder) for i, f in enumerate(spec.get("input_filters", []))]
    for name, hook_spec in spec.get("hooks", {}).items():
        setattr(config, name, make_hook(name, hook_spec, recorder))
    return config


def build_parallel(fixture: dict[str, Any], recorder: Recorder, steering: MessageQueue, follow_up: MessageQueue,
                   clock: VirtualClock) -> tuple[list[AgentLoopConfig], EvaluationStrategy]:
    """The branch configs (the fixture's ``config`` with each branch's settings over it, and the
    branch's own scripted provider) and the strategy of an ``agent_loop_parallel`` fixture."""
    from .. import evaluation

    def config_for(spec: dict[str, Any], branch: int | None) -> AgentLoopConfig:
        merged = {**fixture, "config": {**fixture.get("config", {}), **spec.get("config", {})},
                  "provider": spec.get("provider", {})}
        config = build_config(merged, recorder, steering, follow_up, clock, branch)
        config.get_steering_messages = config.get_follow_up_messages = None  # queues are not shared by branches
        config.put_back_steering_messages = config.put_back_follow_up_messages = None
        return config

    configs = [config_for(spec, i) for i, spec in enumerate(fixture.get("branches", []))]
    name = fixture.get("strategy", "pick_first")
    simple: dict[str, Callable[[], EvaluationStrategy]] = {
        "pick_first": evaluation.PickFirstEvaluation, "transparent": evaluation.TransparentEvaluation,
        "token_efficient": evaluation.TokenEfficientEvaluation, "elaborate": evaluation.ElaborateEvaluation}
    if isinstance(name, str) and name in simple:
        return configs, simple[name]()
    if is_object(name) and set(name) == {"llm_judge"}:
        judge = name["llm_judge"]
        return configs, evaluation.LlmJudgeEvaluation(config_for(judge, None), judge.get("system_prompt"))
    raise ConfigError(f"unknown strategy {name!r}")


def configured_hooks(fixture: dict[str, Any]) -> set[str]:
    """The hooks a fixture installs, anywhere (its config, its branches'), as action triggers name them."""
    configs = [fixture.get("config", {})] + [b.get("config", {}) for b in fixture.get("branches", [])]
    names = {name for config in configs for name in config.get("hooks", {})}
    if any(config.get("input_filters") for config in configs):
        names.add("input_filter")
    return names


def build_context(fixture: dict[str, Any], recorder: Recorder) -> AgentContext:
    spec = fixture.get("context", {})
    kind = spec.get("continuation_kind")
    return AgentContext(
        system_prompt=spec.get("system_prompt", ""),
        messages=[message_of(m) for m in spec.get("messages", [])],
        tools=[make_tool(t, recorder) for t in fixture.get("tools", [])],
        agent_id=spec.get("agent_id"),
        session_id=spec.get("session_id"),
        loop_id=spec.get("loop_id"),
        parent_loop_id=spec.get("parent_loop_id"),
        continuation_kind=None if kind is None else ContinuationKind.from_json(kind),
    )


def run_fixture(fixture: dict[str, Any], out: IO[str] | None = None) -> None:
    """Run one fixture, writing protocol lines to ``out`` (stdout by default)."""
    recorder = Recorder(out)
    config_spec = fixture.get("config", {})
    steering = MessageQueue(QueueMode(config_spec.get("steering_mode", "one_at_a_time")))
    follow_up = MessageQueue(QueueMode(config_spec.get("follow_up_mode", "one_at_a_time")))
    cancel = CancellationToken()
    clock = VirtualClock()
    try:
        config = build_config(fixture, recorder, steering, follow_up, clock)
        context = build_context(fixture, recorder)
        history = context.messages  # the list the caller passed: compaction rewrites it in place (CTX-3)
        actions = Actions(fixture.get("actions", []), steering, follow_up, cancel, clock, configured_hooks(fixture))
        recorder.on_moment = actions.on_moment  # hook and tool calls fire the actions bound to them
        parallel = build_parallel(fixture, recorder, steering, follow_up, clock) \
            if fixture.get("entry") == "agent_loop_parallel" else None
    except (PhiError, ValueError, KeyError, TypeError) as error:
        recorder.write({"kind": "error", "error": "FixtureError", "message": f"{type(error).__name__}: {error}"})
        return

    def sink(event: AgentEvent) -> None:
        data = event_to_json(event)
        recorder.event(data)
        actions.on_event(data)

    prompts = [message_of(p) for p in fixture.get("prompts", [])]
    entry = fixture.get("entry", "agent_loop")
    selected: int | None = None  # a parallel run's chosen config, written with its result
    try:
        if parallel is not None:
            from ..evaluation.parallel import agent_loop_parallel

            outcome = agent_loop_parallel(prompts, context, *parallel, sink, cancel,
                                          max_workers=fixture.get("max_workers"))
            messages, selected = outcome.messages, outcome.selected_config_index
        elif entry == "agent_loop_continue":
            messages = agent_loop_continue(context, config, sink, cancel)
        else:
            messages = agent_loop(prompts, context, config, sink, cancel)
    except (PhiError, ScriptedFailure) as error:
        final: dict[str, Any] = {"kind": "error", "error": type(error).__name__, "message": str(error)}
    else:
        final = {"kind": "result", "messages": [message_to_json(m) for m in messages]}
        if selected is not None:
            final["selected_config_index"] = selected
    recorder.write({"kind": "queues", "steering": [message_to_json(m) for m in steering.snapshot()],
                    "follow_up": [message_to_json(m) for m in follow_up.snapshot()]})
    recorder.write({"kind": "context", "messages": [message_to_json(m) for m in history]})
    recorder.write(final)


HELLO = {"kind": "hello", "protocol": 2, "persistent": True, "driver": "phi reference driver"}
_PROTOCOL_ENV = "PHI_CONFORMANCE_PROTOCOL"  # process.PROTOCOL_ENV; not imported, to keep the driver's start lean


class FixtureOutput(io.TextIOBase):
    """One fixture's share of the driver's stdout: writes go through until :meth:`shut`, then are
    dropped (a thread the fixture left running must not write into the next fixture's output)."""

    def __init__(self, sink: IO[str], lock: threading.Lock) -> None:
        super().__init__()
        self.sink, self.lock, self.open = sink, lock, True

    def write(self, text: str) -> int:
        with self.lock:
            if self.open:
                self.sink.write(text)
        return len(text)

    def flush(self) -> None:
        with self.lock:
            if self.open:
                self.sink.flush()

    def shut(self) -> None:
        with self.lock:
            self.open = False


def _line(sink: IO[str], lock: threading.Lock, data: dict[str, Any]) -> None:
    with lock:
        sink.write(json.dumps(data, ensure_ascii=False) + "\n")
        sink.flush()


def serve(source: IO[str], sink: IO[str]) -> int:
    """Protocol 2: hello, then each stdin line is a fixture, run on fresh objects and closed by a
    ``done`` line; returns at the end of stdin."""
    lock = threading.Lock()
    _line(sink, lock, HELLO)
    for text in source:
        if not text.strip():
            continue
        output = FixtureOutput(sink, lock)
        fixture_id = None
        reset_loop_numbers()  # the fixture starts as in a process of its own (loop ids count from 1)
        try:
            fixture = json.loads(text)
            fixture_id = fixture.get("id") if is_object(fixture) else None
            run_fixture(fixture, cast(IO[str], output))  # a TextIOBase, which typeshed does not count as IO[str]
        except Exception as error:  # a driver bug or a line that is not JSON: report it, serve on
            traceback.print_exc()
            output.write(json.dumps({"kind": "error", "error": "DriverError",
                                     "message": f"{type(error).__name__}: {error}"}) + "\n")
        output.shut()
        _line(sink, lock, {"kind": "done", "id": fixture_id})
    return 0


def wants_protocol_2(argv: list[str]) -> bool:
    """``--persistent``, or the runner's offer in the environment (``--once`` refuses it)."""
    if "--once" in argv:
        return False
    offered = os.environ.get(_PROTOCOL_ENV, "")
    return "--persistent" in argv or (offered.isdigit() and int(offered) >= 2)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if wants_protocol_2(args):
        return serve(sys.stdin, sys.stdout)
    try:
        fixture = json.load(sys.stdin)
    except ValueError as error:
        print(json.dumps({"kind": "error", "error": "FixtureError", "message": f"stdin is not JSON: {error}"}))
        return 2
    run_fixture(fixture)
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # threads a fixture left behind (a tool ignoring cancellation) must not hold the exit
