"""The run contract as code (issue 30): the invariants the explorer checks, each a plain function.

Checks that need the moment they are about (a tool beginning, an event arriving, an operation
returning) are called from ``world.py`` at that moment; the ones here judge collected facts. Each
returns a message describing the broken promise, or None. Times are virtual seconds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from phi.concurrency.cancel import CALLBACK_WAIT_S
from phi.types import AssistantMessage, ExtensionMessage, StopReason, TextContent, ToolResultMessage, UserMessage

EPS = 1e-6  # virtual time is exact; this only absorbs float rounding

#: ``abort()`` returns after at most the time cancel() waits for cancellation callbacks (SPEC LOOP-19).
ABORT_BOUND_S = CALLBACK_WAIT_S


@dataclass
class Pushed:
    """A text given to an agent — a prompt, a parallel prompt, a steer or a follow-up — and the
    steps around the call that gave it."""

    kind: str
    text: str
    start: int
    end: int


@dataclass
class ResetSpan:
    start: int
    end: int | None = None


def overlap(intervals: Iterable[tuple[float, float]], start: float, end: float) -> float:
    """Seconds of ``intervals`` inside [start, end] (application code the run had to wait for)."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)


def invalid_conversation(messages: Sequence[Any]) -> str | None:
    """SPEC LOOP-5, TOOL-5: every tool call of a reply that did not fail is answered by one result,
    in call order, before anything else follows; no result answers a call not waiting for one."""
    waiting: list[str] = []
    for i, message in enumerate(messages):
        if isinstance(message, ExtensionMessage):
            continue
        if isinstance(message, ToolResultMessage):
            if not waiting or waiting[0] != message.tool_call_id:
                return f"messages[{i}] answers {message.tool_call_id!r}, but the next unanswered call is {waiting[:1]}"
            waiting.pop(0)
            continue
        if waiting:
            return f"messages[{i}] ({message.role}) comes before the results of {waiting}"
        if isinstance(message, AssistantMessage) and message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
            waiting = [c.id for c in message.tool_calls]
    if waiting:
        return f"tool calls {waiting} were never answered"
    return None


def user_texts(messages: Iterable[Any]) -> Counter[str]:
    """How often each text block of a user message occurs."""
    found: Counter[str] = Counter()
    for message in messages:
        if isinstance(message, UserMessage):
            for block in message.content:
                if isinstance(block, TextContent):
                    found[block.text] += 1
    return found


def lost_or_duplicated(pushes: Sequence[Pushed], resets: Sequence[ResetSpan], found: Counter[str],
                       required_prompts: set[str], forgiven: set[str], may_drop: bool = False) -> str | None:
    """No input lost or duplicated, reset-aware (SPEC LOOP-18, AGENT-1).

    ``found``: how often each text is in the history and the queues. A text given before a reset
    began must be gone; one given after every reset ended must be there exactly once — a steer or
    follow-up always, a prompt when its run took it (``required_prompts``: it was announced); one
    given while a reset ran may be either. ``forgiven``: texts ``resume()`` dropped on purpose;
    ``may_drop``: the history is compacted, so only "never twice" holds.
    """
    for push in pushes:
        count = found[push.text]
        if count > 1:
            return f"{push.kind} {push.text!r} is in the history and queues {count} times"
        if push.text in forgiven:
            continue
        wiped = any(r.start > push.end for r in resets)
        racing = any(r.start <= push.end and (r.end is None or r.end >= push.start) for r in resets)
        if wiped and not racing:
            if count:
                return f"{push.kind} {push.text!r} given before a reset() is still there"
            continue
        if racing or wiped or may_drop:
            continue
        must = push.kind in ("steer", "follow_up") or push.text in required_prompts
        if must and count != 1:
            return f"{push.kind} {push.text!r} was lost (not in the history or the queues)"
    return None
