"""Scripted stand-ins the reference driver builds from a fixture (SPEC §10, phi/conformance/suite/README.md).

Tools that play per-call steps, hooks that return scripted values, input filters with scripted
results and a provider that reports each request. Everything reports to a :class:`Recorder`, which
writes the driver protocol's JSON lines and keeps the event log that ``wait_for_event`` steps and
event-bound actions look at.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import IO, Any, Callable

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError, ToolError
from ..json_values import is_array, is_object
from ..loop.filters import FilterResult
from ..loop.tool import AgentTool, ToolContext
from ..providers.base import StreamConfig, StreamEventSink
from ..providers.mock import ScriptedProvider
from ..types import (
    AgentMessage,
    AssistantMessage,
    Message,
    ToolResult,
    Usage,
    UserMessage,
    message_from_json,
    message_to_json,
)
from .match import matches

WAIT_FOR_EVENT_TIMEOUT_S = 5.0

# Exceptions a fixture may ask a tool to raise (``{"raise": {"type": ..., "message": ...}}``).
RAISABLE: dict[str, type[BaseException]] = {
    "ValueError": ValueError,
    "RuntimeError": RuntimeError,
    "KeyError": KeyError,
    "TypeError": TypeError,
    "ZeroDivisionError": ZeroDivisionError,
    "Error": RuntimeError,
}


class ScriptedFailure(Exception):
    """What a fixture's ``raise`` makes application code (a hook, an event consumer) throw."""


class VirtualClock:
    """The clock the duration limit is measured with: it moves only when an action advances it."""

    def __init__(self) -> None:
        self._now = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


# Where a fixture action can fire (phi/conformance/suite/README.md §1.5): ``kind`` is "event", "hook" or
# "tool"; ``moment`` is the event's JSON, the hook call's named arguments or ``{"tool": call_id}``.
MomentListener = Callable[[str, dict[str, Any]], None]


class Recorder:
    """Writes protocol lines (thread-safe), remembers every event for waits and actions, and tells
    ``on_moment`` (the fixture's actions) when a scripted hook or tool is called."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout
        self.lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.on_moment: MomentListener | None = None

    def moment(self, kind: str, moment: dict[str, Any]) -> None:
        """A hook or tool call is under way: fire the actions bound to it, there and then."""
        if self.on_moment is not None:
            self.on_moment(kind, moment)

    def write(self, line: dict[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False, default=str)
        with self.lock:
            self.out.write(text + "\n")
            self.out.flush()

    def event(self, event: dict[str, Any]) -> None:
        self.write({"kind": "event", "event": event})
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def wait_for_event(self, pattern: dict[str, Any], timeout: float = WAIT_FOR_EVENT_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not any(matches(pattern, e) for e in self.events):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"wait_for_event timed out waiting for {pattern}")
                self.changed.wait(left)


def message_of(data: object) -> AgentMessage:
    """A fixture message: a string is a user text message, an object is SPEC DATA-6 JSON."""
    if isinstance(data, str):
        return UserMessage.from_text(data)
    return message_from_json(data)


def tool_result_of(data: object) -> ToolResult:
    if isinstance(data, str):
        return ToolResult.from_text(data)
    return ToolResult.from_json(data)


# --------------------------------------------------------------------------- tools


class ScriptedTool:
    """A tool whose calls play the fixture's steps (``calls[tool_call_id]`` or ``default``)."""

    def __init__(self, spec: dict[str, Any], recorder: Recorder) -> None:
        self.name: str = spec["name"]
        self.description: str = spec.get("description", "")
        self.parameters: dict[str, Any] = spec.get("parameters", {"type": "object"})
        self.timeout_ms: int | None = spec.get("timeout_ms")
        self.calls: dict[str, list[dict[str, Any]]] = spec.get("calls", {})
        self.default: list[dict[str, Any]] = spec.get("default", [{"result": "ok"}])
        self.recorder = recorder

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.recorder.write({"kind": "tool_executed", "name": self.name, "tool_call_id": ctx.tool_call_id,
                             "args": args})
        self.recorder.moment("tool", {"tool": ctx.tool_call_id})
        steps = self.calls.get(ctx.tool_call_id, self.default)
        for step in steps:
            outcome = self.play(step, ctx)
            if outcome is not None:
                return outcome
        return ToolResult.from_text("")

    def play(self, step: dict[str, Any], ctx: ToolContext) -> ToolResult | None:
        """One step; returns the tool's result for a terminal step, None to go on."""
        if "update" in step:
            ctx.update(tool_result_of(step["update"]))
        elif "progress" in step:
            ctx.progress(step["progress"])
        elif "sleep_ms" in step:
            time.sleep(step["sleep_ms"] / 1000.0)  # deliberately ignores cancellation
        elif "wait_for_event" in step:
            self.recorder.wait_for_event(step["wait_for_event"])
        elif "block_until_cancelled" in step:
            if not ctx.cancel.wait(WAIT_FOR_EVENT_TIMEOUT_S * 2):
                raise RuntimeError("block_until_cancelled: never cancelled")
        elif "result" in step:
            return tool_result_of(step["result"])
        elif "error" in step:
            raise ToolError(step["error"])
        elif "raise" in step:
            spec = step["raise"]
            raise RAISABLE.get(spec.get("type", "RuntimeError"), RuntimeError)(spec.get("message", ""))
        else:
            raise ConfigError(f"unknown tool step {step!r}")
        return None


# --------------------------------------------------------------------------- hooks


class ScriptedReturns:
    """The values a hook returns, call by call: ``returns[n]`` for the n-th call, then ``default``."""

    def __init__(self, spec: object, default: object) -> None:
        self.returns: list[object]
        self.default: object
        if is_object(spec):
            self.returns = list(spec.get("returns", []))
            self.default = spec.get("default", default)
        elif is_array(spec):
            self.returns, self.default = list(spec), default
        else:
            self.returns, self.default = [], spec
        self.count = 0
        self.lock = threading.Lock()

    def next(self) -> object:
        """The next value; a value ``{"raise": message}`` makes the hook raise instead."""
        with self.lock:
            n, self.count = self.count, self.count + 1
        value = self.returns[n] if n < len(self.returns) else self.default
        if is_object(value) and set(value) == {"raise"}:
            raise ScriptedFailure(str(value["raise"]))
        return value


def _usage(usage: object) -> object:
    return usage.to_json() if isinstance(usage, Usage) else usage


def _before_loop(messages: list[AgentMessage], index: int) -> dict[str, Any]:
    return {"message_count": len(messages), "loop_index": index}


def _before_turn(messages: list[AgentMessage], index: int) -> dict[str, Any]:
    return {"message_count": len(messages), "turn_index": index}


def _after_loop_or_turn(messages: list[AgentMessage], usage: object) -> dict[str, Any]:
    return {"message_count": len(messages), "usage": _usage(usage)}


def _on_error(message: str) -> dict[str, Any]:
    return {"error_message": message}


def _before_tool(name: str, call_id: str, args: Any) -> dict[str, Any]:
    return {"tool_name": name, "tool_call_id": call_id, "args": args}


def _after_tool(name: str, call_id: str, is_error: bool) -> dict[str, Any]:
    return {"tool_name": name, "tool_call_id": call_id, "is_error": is_error}


def _tool_update(name: str, call_id: str, text: str) -> dict[str, Any]:
    return {"tool_name": name, "tool_call_id": call_id, "text": text}


def _get_api_key(provider: str) -> dict[str, Any]:
    return {"provider": provider}


def _messages_only(messages: list[AgentMessage]) -> dict[str, Any]:
    return {"message_count": len(messages)}


def _input_filter(index: int, text: str) -> dict[str, Any]:
    return {"index": index, "text": text}


# hook name -> its arguments by name (messages as their count): what an action's ``{"hook": name,
# "where": {...}}`` matches; the call's "hook" line writes the same values as a list, in this order
HOOK_FIELDS: dict[str, Callable[..., dict[str, Any]]] = {
    "before_loop": _before_loop,
    "after_loop": _after_loop_or_turn,
    "before_turn": _before_turn,
    "after_turn": _after_loop_or_turn,
    "on_error": _on_error,
    "before_tool_execution": _before_tool,
    "after_tool_execution": _after_tool,
    "before_tool_execution_update": _tool_update,
    "after_tool_execution_update": _tool_update,
    "get_api_key": _get_api_key,
    "transform_context": _messages_only,
    "convert_to_llm": _messages_only,
    "input_filter": _input_filter,
}
_DEFAULTS = {"get_api_key": None}


def _called(recorder: Recorder, name: str, args: tuple[Any, ...]) -> None:
    """Write the ``hook`` line of a call, then fire the actions bound to it (before it returns)."""
    fields = HOOK_FIELDS[name](*args)
    recorder.write({"kind": "hook", "name": name, "args": list(fields.values())})
    recorder.moment("hook", {"hook": name, **fields})


HOOKS = tuple(name for name in HOOK_FIELDS if name != "input_filter")  # what config.hooks may install


def make_hook(name: str, spec: object, recorder: Recorder) -> Callable[..., object]:
    if name not in HOOKS:
        raise ConfigError(f"unknown hook {name!r}; known: {', '.join(HOOKS)}")
    if name == "transform_context":
        keep_last = int(spec.get("keep_last", 0)) if is_object(spec) else 0

        def transform(messages: list[AgentMessage]) -> list[AgentMessage]:
            _called(recorder, name, (messages,))
            return messages[-keep_last:] if keep_last else messages

        return transform
    if name == "convert_to_llm":
        from ..loop.llm_view import default_convert_to_llm

        def convert(messages: list[AgentMessage]) -> list[Message]:
            # a custom converter that converts as the default does: what it is given is the point
            _called(recorder, name, (messages,))
            return default_convert_to_llm(messages)

        return convert
    returns = ScriptedReturns(spec if spec != {} else None, _DEFAULTS.get(name, True))

    def hook(*args: Any) -> object:
        _called(recorder, name, args)
        return returns.next()

    return hook


def make_filter(index: int, spec: dict[str, Any], recorder: Recorder) -> Callable[[str], FilterResult]:
    """An input filter with a scripted result; ``if_contains`` makes it pass unless the text has it."""
    result = FilterResult(spec.get("action", "pass"), spec.get("text", ""))
    needle = spec.get("if_contains")

    def flt(text: str) -> FilterResult:
        _called(recorder, "input_filter", (index, text))
        if needle is not None and needle not in text:
            return FilterResult.passed()
        return result

    return flt


# --------------------------------------------------------------------------- provider


def request_to_json(config: StreamConfig) -> dict[str, Any]:
    """What one provider call received, in the protocol's ``provider_request`` shape."""
    return {
        "system_prompt": config.system_prompt,
        "messages": [message_to_json(m) for m in config.messages],
        "tools": [t.to_json() for t in config.tools],
        "model": config.model_config.id,
        "provider": config.model_config.provider,
        "thinking_level": config.thinking_level.value,
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "api_key": config.api_key,
    }


class ReportingProvider(ScriptedProvider):
    """A ScriptedProvider that writes a ``provider_request`` line for every call (a
    ``child_provider_request`` line naming the sub-agent tool when ``child`` is given; with a
    ``branch`` number when it serves a branch of a parallel run)."""

    def __init__(self, spec: dict[str, Any], recorder: Recorder, provider_id: str, child: str | None = None,
                 branch: int | None = None) -> None:
        super().__init__(spec.get("responses", []), provider_id=provider_id, default=spec.get("default"))
        self.recorder = recorder
        self.child = child
        self.branch = branch

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        line = {"kind": "provider_request", "index": len(self.calls), "request": request_to_json(config)}
        if self.child is not None:
            line.update(kind="child_provider_request", tool=self.child)
        if self.branch is not None:
            line["branch"] = self.branch
        self.recorder.write(line)
        return super().stream(config, on_event, cancel)


def make_tool(spec: dict[str, Any], recorder: Recorder) -> AgentTool:
    """A fixture tool: a :class:`ScriptedTool`, or a sub-agent when the entry has ``sub_agent``
    (its child run writes ``child_event`` and ``child_provider_request`` lines)."""
    if "sub_agent" not in spec:
        return ScriptedTool(spec, recorder)
    from ..events import event_to_json
    from ..providers.model_config import API_MOCK, ModelConfig
    from ..subagent import SubAgentTool

    child, name = spec["sub_agent"], spec["name"]
    return SubAgentTool(
        name, model_config=ModelConfig(id="mock-model", api=API_MOCK, provider="mock"),
        provider=ReportingProvider(child.get("provider", {}), recorder, "mock", child=name),
        system_prompt=child.get("system_prompt", ""), tools=[make_tool(t, recorder) for t in child.get("tools", [])],
        # limits the fixture leaves out are SubAgentTool's own defaults, so the suite checks those (SPEC SUB-1, SUB-4)
        max_turns=int(child.get("max_turns", SubAgentTool.max_turns)),
        max_depth=int(child.get("max_depth", SubAgentTool.max_depth)),
        parent_loop_id=child.get("parent_loop_id"), description=spec.get("description", ""),
        timeout_ms=spec.get("timeout_ms"),
        on_event=lambda event: recorder.write({"kind": "child_event", "tool": name, "event": event_to_json(event)}))
