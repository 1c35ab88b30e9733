"""Invariants checked on every fixture's event stream, whatever it expects (SPEC §10; DESIGN §5).

These are the loop contract's structural rules; a fixture can switch them off with
``"invariants": false`` (none of the shipped fixtures do).

1. A run's events start with ``AgentStart`` (or are a lone ``AgentEnd`` after a ``before_loop``
   veto) and end with ``AgentEnd``; every ``loop_id`` is the run's loop id.
2. ``TurnStart``/``TurnEnd`` alternate and pair up.
3. ``MessageStart``/``MessageEnd`` pair up without nesting; ``MessageUpdate`` only in between; the
   text/thinking deltas of a message concatenate to its final content.
4. The messages announced by ``MessageEnd`` are, in order, ``AgentEnd.messages`` and the returned
   messages.
5. Each tool call id has at most one ``ToolExecutionStart`` and one ``ToolExecutionEnd``, in that
   order; updates and progress fall between them.
6. The context after the run (the driver's ``context`` line) is a valid conversation: every tool
   call of an assistant message that did not fail is answered by one toolResult, in call order,
   before anything else follows (SPEC LOOP-5, TOOL-5).
7. Every timestamp in the events is well formed: RFC 3339 UTC for an event, unix milliseconds for a
   message (SPEC EVT-1, DATA-2; :mod:`.normalize` marks the malformed ones).

When the run ended by raising (an ``error`` line), the events simply stop (SPEC LOOP-5): rules 1-5
then only forbid what is out of order, not what was left open.
"""

from __future__ import annotations

from typing import Any

from ..json_values import is_array, is_object
from .normalize import MALFORMED_TIMESTAMP


def check(events: list[dict[str, Any]], result: list[Any] | None, raised: bool = False,
          context: list[Any] | None = None) -> list[str]:
    problems: list[str] = []
    if context is not None:
        problems += _valid_conversation(context)
    if not events:
        return problems
    problems += _timestamps(events)
    problems += _bracketing(events, raised)
    problems += [p for p in _turns(events) if not (raised and "has no" in p)]
    problems += [p for p in _messages(events, result) if not (raised and "has no" in p)]
    problems += [p for p in _tools(events) if not (raised and "never ended" in p)]
    return problems


def _timestamps(events: list[dict[str, Any]]) -> list[str]:
    """Rule 7: the first malformed timestamp, if any (normalisation marked it)."""
    def malformed(value: Any) -> str | None:
        if is_object(value):
            return next((found for item in value.values() if (found := malformed(item)) is not None), None)
        if is_array(value):
            return next((found for item in value if (found := malformed(item)) is not None), None)
        return value if isinstance(value, str) and value.startswith(MALFORMED_TIMESTAMP) else None

    for i, event in enumerate(events):
        found = malformed(event)
        if found is not None:
            return [f"invariant: events[{i}] ({event.get('type')}) has a {found[1:-1]} "
                    "(events: RFC 3339 UTC; messages: unix milliseconds)"]
    return []


def _valid_conversation(messages: list[Any]) -> list[str]:
    waiting: list[str] = []  # call ids of the last assistant message still without a result
    for i, message in enumerate(messages):
        role = message.get("role") if is_object(message) else None
        if role == "extension":
            continue
        if role == "toolResult":
            call_id = message.get("toolCallId")
            if not waiting or waiting[0] != call_id:
                return [f"invariant: context[{i}] is a result for {call_id!r}, but the next unanswered call is "
                        f"{waiting[0] if waiting else None!r}"]
            waiting.pop(0)
            continue
        if waiting:
            return [f"invariant: context[{i}] ({role}) comes before the results of tool calls {waiting}"]
        if role == "assistant" and message.get("stopReason") not in ("error", "aborted"):
            blocks: list[Any] = message.get("content") or []
            waiting = [b.get("id") for b in blocks if b.get("type") == "toolCall"]
    return [f"invariant: the context ends with tool calls {waiting} unanswered"] if waiting else []


def _bracketing(events: list[dict[str, Any]], raised: bool = False) -> list[str]:
    problems: list[str] = []
    types = [e.get("type") for e in events]
    if "AgentEnd" in types[:-1]:
        problems.append("invariant: an event follows AgentEnd")
    if types[-1] != "AgentEnd" and not raised:
        problems.append(f"invariant: the last event must be AgentEnd, got {types[-1]}")
    if types[0] != "AgentStart" and types != ["AgentEnd"]:
        problems.append(f"invariant: the first event must be AgentStart, got {types[0]}")
    loop_ids = {e["loop_id"] for e in events if "loop_id" in e}
    if len(loop_ids) > 1:
        problems.append(f"invariant: events carry different loop ids {sorted(map(str, loop_ids))}")
    return problems


def _turns(events: list[dict[str, Any]]) -> list[str]:
    open_turn = False
    for i, event in enumerate(events):
        kind = event.get("type")
        if kind == "TurnStart":
            if open_turn:
                return [f"invariant: events[{i}] TurnStart inside an open turn"]
            open_turn = True
        elif kind == "TurnEnd":
            if not open_turn:
                return [f"invariant: events[{i}] TurnEnd without TurnStart"]
            open_turn = False
    return ["invariant: a TurnStart has no TurnEnd"] if open_turn else []


def _messages(events: list[dict[str, Any]], result: list[Any] | None) -> list[str]:
    problems: list[str] = []
    open_message: dict[str, Any] | None = None
    deltas: dict[tuple[str, int], str] = {}
    ended: list[Any] = []
    for i, event in enumerate(events):
        kind = event.get("type")
        if kind == "MessageStart":
            if open_message is not None:
                problems.append(f"invariant: events[{i}] MessageStart while another message is open")
            open_message, deltas = event, {}
        elif kind == "MessageUpdate":
            if open_message is None:
                problems.append(f"invariant: events[{i}] MessageUpdate outside MessageStart/MessageEnd")
                continue
            delta: dict[str, Any] = event.get("delta") or {}
            if delta.get("type") in ("text", "thinking"):
                key = (delta["type"], int(delta.get("index", 0)))
                deltas[key] = deltas.get(key, "") + str(delta.get("delta", ""))
        elif kind == "MessageEnd":
            if open_message is None:
                problems.append(f"invariant: events[{i}] MessageEnd without MessageStart")
            problems += _deltas_concatenate(i, deltas, event.get("message") or {})
            ended.append(event.get("message"))
            open_message, deltas = None, {}
    if open_message is not None:
        problems.append("invariant: a MessageStart has no MessageEnd")
    end = events[-1] if events[-1].get("type") == "AgentEnd" else None
    if end is not None and isinstance(end.get("messages"), list) and end["messages"] != ended:
        problems.append(
            f"invariant: AgentEnd.messages ({len(end['messages'])}) are not the messages announced by "
            f"MessageEnd ({len(ended)}), in order"
        )
    if end is not None and result is not None and isinstance(end.get("messages"), list) and result != end["messages"]:
        problems.append("invariant: the returned messages differ from AgentEnd.messages")
    return problems


def _deltas_concatenate(i: int, deltas: dict[tuple[str, int], str], message: dict[str, Any]) -> list[str]:
    content: object = message.get("content") or []
    for (kind, index), text in deltas.items():
        block = content[index] if is_array(content) and 0 <= index < len(content) else None
        final = block.get(kind) if is_object(block) else None
        if final != text:
            return [f"invariant: events[{i}] {kind} deltas of block {index} concatenate to {text!r}, "
                    f"but the final block has {final!r}"]
    return []


def _tools(events: list[dict[str, Any]]) -> list[str]:
    state: dict[str, str] = {}
    for i, event in enumerate(events):
        kind, call_id = event.get("type"), str(event.get("tool_call_id"))
        if kind == "ToolExecutionStart":
            if call_id in state:
                return [f"invariant: events[{i}] second ToolExecutionStart for {call_id}"]
            state[call_id] = "running"
        elif kind == "ProgressMessage" and call_id == "":
            continue  # progress of no tool call: an LLM judge's (SPEC EVAL-6)
        elif kind in ("ToolExecutionUpdate", "ProgressMessage"):
            if state.get(call_id) != "running":
                return [f"invariant: events[{i}] {kind} for {call_id} outside its Start/End"]
        elif kind == "ToolExecutionEnd":
            if state.get(call_id) != "running":
                return [f"invariant: events[{i}] ToolExecutionEnd for {call_id} without a running start"]
            state[call_id] = "ended"
    running = [c for c, s in state.items() if s == "running"]
    return [f"invariant: tool calls {running} started but never ended"] if running else []


def check_parallel(everything: list[dict[str, Any]], result: list[Any] | None, raised: bool = False,
                   context: list[Any] | None = None, selected: int | None = None,
                   max_workers: int | None = None) -> list[str]:
    """A parallel run (SPEC EVAL-1): ``ParallelLoopStart`` first and ``ParallelLoopEnd`` last among
    the events of no branch; every branch, and a judge's run after all of them, a complete run by the
    rules above (the selected branch's AgentEnd messages are the returned ones); with ``max_workers``,
    never more branches between their AgentStart and AgentEnd at once (EVAL-7)."""
    events, branches = split_parallel(everything)
    problems: list[str] = []
    if max_workers is not None:
        problems += _at_most_running(everything, branches, max_workers)
    ends = [i for i, e in enumerate(everything) if e.get("type") == "AgentEnd" and e in (b[-1] for b in branches if b)]
    judge_start = next((i for i, e in enumerate(everything) if e.get("type") == "AgentStart" and e in events), None)
    if judge_start is not None and ends and judge_start < max(ends):
        problems.append("invariant: the judge's run starts before every branch has ended")
    if context is not None:
        problems += _valid_conversation(context)
    if not everything and raised:
        return problems  # refused before anything was emitted (SPEC EVAL-3, EVAL-5)
    if not everything or everything[0].get("type") != "ParallelLoopStart":
        problems.append("invariant: a parallel run starts with ParallelLoopStart")
    if not raised and (not everything or everything[-1].get("type") != "ParallelLoopEnd"):
        problems.append("invariant: a parallel run ends with ParallelLoopEnd")
    for i, branch in enumerate(branches):
        problems += [f"branch {i}: {p}" for p in check(branch, result if i == selected else None, raised=raised)]
    judge = [e for e in events if e.get("type") not in ("ParallelLoopStart", "ParallelLoopEnd")]
    problems += [f"judge: {p}" for p in check(judge, None, raised=raised)]
    return problems


def _at_most_running(everything: list[dict[str, Any]], branches: list[list[dict[str, Any]]],
                     max_workers: int) -> list[str]:
    """Events are written in the order they happen, so a branch that starts before another's
    AgentEnd was written ran beside it."""
    ids = {branch[0].get("loop_id") for branch in branches if branch}
    running: set[Any] = set()
    for event in everything:
        loop_id = event.get("loop_id")
        if loop_id not in ids:
            continue
        if event.get("type") == "AgentStart":
            running.add(loop_id)
            if len(running) > max_workers:
                return [f"invariant: {len(running)} branches ran at once, max_workers is {max_workers} (SPEC EVAL-7)"]
        elif event.get("type") == "AgentEnd":
            running.discard(loop_id)
    return []


def split_parallel(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """A parallel run's events: those of no branch (ParallelLoopStart/End, a judge's run), and each
    branch's own, in the order ParallelLoopStart lists the branch loop ids."""
    start = next((e for e in events if e.get("type") == "ParallelLoopStart"), None) or {}
    ids = [str(i) for i in start.get("loop_ids", [])]
    branches: list[list[dict[str, Any]]] = [[] for _ in ids]
    rest: list[dict[str, Any]] = []
    for event in events:
        loop_id = event.get("loop_id")
        if loop_id in ids:
            branches[ids.index(loop_id)].append(event)
        else:
            rest.append(event)
    return rest, branches
