"""Tiered context compaction (SPEC CTX-2; seed REQ-056–059, REQ-023, REQ-146).

:func:`compact_messages` returns the history unchanged when it fits the budget. Otherwise it
tries, in order, stopping at the first result that fits:

1. :func:`level1_truncate_tool_outputs` — every text block of every tool result is cut to
   ``tool_output_max_lines`` lines: head, a ``[... N lines truncated ...]`` marker, tail.
2. :func:`level2_summarize_old_turns` — outside the last ``keep_recent`` messages, each assistant
   message together with its tool results becomes one ``[Summary] ...`` user message.
3. :func:`level3_drop_middle` — keep the first ``keep_first`` and last ``keep_recent`` messages,
   replace the middle by one ``[... N messages omitted ...]`` marker.
4. :func:`keep_within_budget` on the level-2 result — the first ``keep_first`` messages when they
   leave room, an omission marker, and the newest whole groups that fit.

Every level treats an assistant message and the tool results answering its tool calls as one
unit ("group"): they are kept, summarised or dropped together, so the result is always a valid
conversation — no tool result without the assistant tool call before it, no tool call without its
result. The newest group (what the model is about to answer) is never summarised or dropped, only
level-1 truncated. The only case where the result can exceed the budget is when the newest group alone (after
level 1) is larger than the budget; it is then returned on its own and a warning is logged.

A :class:`CompactionStrategy` replaces the cascade (``compact(messages, config)``); the loop uses
:func:`compact_with` and, after a context-overflow error, retries once with
``budget=overflow_budget(messages, config)`` (DESIGN §5).

The levels take the token cost of a message as a function (:data:`Cost`), so that
:class:`~phi.context.incremental.IncrementalCompaction` — the same cascade, keeping running token
totals across the turns of a run — shares them with the plain functions here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Protocol, Sequence, runtime_checkable

from ..errors import ConfigError
from ..log import get_logger
from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    TextContent,
    ToolResultMessage,
    UserMessage,
    now_ms,
)
from .config import ContextConfig
from .tokens import TokenCounter, message_tokens, total_tokens

__all__ = [
    "Cost",
    "counter_cost",
    "CompactionStrategy",
    "DefaultCompaction",
    "compact_messages",
    "compact_with",
    "overflow_budget",
    "level1_truncate_tool_outputs",
    "level2_summarize_old_turns",
    "level3_drop_middle",
    "keep_within_budget",
    "keep_within",
    "summary_boundary",
    "summarize_before",
    "message_groups",
    "truncate_lines",
    "truncate_tool_output",
    "SUMMARY_PREFIX",
    "OMISSION_PREFIX",
]

log = get_logger(__name__)

SUMMARY_PREFIX = "[Summary] "
OMISSION_PREFIX = "[... "
_SUMMARY_TEXT_CHARS = 120

Cost = Callable[[AgentMessage], int]
"""The token cost of one message; :func:`counter_cost` builds it from a :class:`TokenCounter`."""


def counter_cost(counter: TokenCounter | None) -> Cost:
    """:func:`~phi.context.tokens.message_tokens` with ``counter``, as a :data:`Cost`."""
    return lambda message: message_tokens(message, counter)


# --------------------------------------------------------------------------- groups


def message_groups(messages: Sequence[AgentMessage], start: int = 0) -> list[tuple[int, int]]:
    """Split ``messages[start:]`` into ``[start, end)`` spans (indices into ``messages``) that must
    stay together.

    An assistant message with tool calls forms a span with the tool-result messages that follow it
    and answer those calls (extension messages in between are carried along); every other message
    is a span of its own. A span only looks forward, so when ``start`` begins a span of the whole
    list, the result is the tail of ``message_groups(messages)``.
    """
    spans: list[tuple[int, int]] = []
    i, n = start, len(messages)
    while i < n:
        message = messages[i]
        end = i + 1
        if isinstance(message, AssistantMessage):
            pending = [call.id for call in message.tool_calls]
            while end < n and pending:
                nxt = messages[end]
                if isinstance(nxt, ToolResultMessage) and nxt.tool_call_id in pending:
                    pending.remove(nxt.tool_call_id)
                elif getattr(nxt, "role", None) != "extension":
                    break
                end += 1
            while end > i + 1 and getattr(messages[end - 1], "role", None) == "extension":
                end -= 1  # trailing extension messages are not part of the group
        spans.append((i, end))
        i = end
    return spans


def _group_start(spans: list[tuple[int, int]], index: int) -> int:
    """The start of the span containing ``index`` (``index`` itself if it starts a span)."""
    for start, end in spans:
        if start <= index < end:
            return start
    return index


def _group_end(spans: list[tuple[int, int]], index: int) -> int:
    """The end of the span containing message ``index - 1`` (so a prefix never splits a span)."""
    if index <= 0:
        return 0
    for start, end in spans:
        if start < index < end:
            return end
    return index


# --------------------------------------------------------------------------- level 1


def truncate_lines(text: str, max_lines: int) -> str:
    """Cut ``text`` to ``max_lines`` lines: head, ``[... N lines truncated ...]``, tail.

    The result has exactly ``max_lines`` lines when truncation happens (the marker counts).
    """
    if max_lines < 1:
        raise ConfigError(f"max_lines must be >= 1, got {max_lines}")
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text
    keep = max_lines - 1
    head = (keep + 1) // 2
    tail = keep - head
    marker = f"[... {len(lines) - keep} lines truncated ...]"
    return "\n".join(lines[:head] + [marker] + (lines[len(lines) - tail :] if tail else []))


def truncate_tool_output(message: AgentMessage, max_lines: int) -> AgentMessage:
    """A tool result with every text block cut to ``max_lines`` lines; any other message, or a tool
    result with nothing to cut, is returned itself. Applying it twice changes nothing more."""
    if not isinstance(message, ToolResultMessage):
        return message
    content: list[Content] = []
    changed = False
    for block in message.content:
        if isinstance(block, TextContent):
            cut = truncate_lines(block.text, max_lines)
            if cut != block.text:
                block, changed = TextContent(cut), True
        content.append(block)
    return dataclasses.replace(message, content=content) if changed else message


def level1_truncate_tool_outputs(messages: Sequence[AgentMessage], max_lines: int) -> list[AgentMessage]:
    """Every text block of every tool result cut to ``max_lines`` lines (others untouched)."""
    return [truncate_tool_output(message, max_lines) for message in messages]


# --------------------------------------------------------------------------- level 2


def _one_line(text: str, limit: int = _SUMMARY_TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _summarize_group(group: Sequence[AgentMessage]) -> UserMessage:
    assistant = group[0]
    assert isinstance(assistant, AssistantMessage)
    results = {m.tool_call_id: m for m in group[1:] if isinstance(m, ToolResultMessage)}
    parts: list[str] = []
    if assistant.text.strip():
        parts.append(f"Assistant said: {_one_line(assistant.text)}")
    calls: list[str] = []
    for call in assistant.tool_calls:
        result = results.get(call.id)
        status = "no result" if result is None else ("error" if result.is_error else "ok")
        calls.append(f"{call.name} ({status})")
    if calls:
        parts.append("called " + ", ".join(calls))
    if not parts:
        parts.append(f"Assistant turn ended ({assistant.stop_reason.value}) without text")
    return UserMessage([TextContent(SUMMARY_PREFIX + "; ".join(parts))], timestamp=assistant.timestamp)


def level2_summarize_old_turns(
    messages: Sequence[AgentMessage], keep_recent: int, counter: TokenCounter | None = None
) -> list[AgentMessage]:
    """Replace each old assistant group by a one-line ``[Summary] ...`` user message.

    The last ``keep_recent`` messages (widened to a whole group if the boundary falls inside one,
    and always including the newest group, which the model is about to answer) stay untouched, as
    do user messages. A group is only replaced when its summary is smaller.
    """
    spans = message_groups(messages)
    boundary = summary_boundary(spans, len(messages), keep_recent)
    return summarize_before(messages, spans, boundary, counter_cost(counter))


def summary_boundary(spans: list[tuple[int, int]], count: int, keep_recent: int, start: int = 0) -> int:
    """Where level 2 stops: the start of the group holding message ``count - keep_recent`` (never
    before ``start``, the first index ``spans`` cover), and never after the newest group."""
    boundary = _group_start(spans, max(start, count - keep_recent))
    if spans:
        boundary = min(boundary, spans[-1][0])  # the newest group is never summarised
    return boundary


def summarize_before(
    messages: Sequence[AgentMessage], spans: list[tuple[int, int]], boundary: int, cost: Cost, start: int = 0
) -> list[AgentMessage]:
    """Level 2 over the groups ``spans`` (which cover ``messages[start:]``) that end before
    ``boundary``; ``messages[:start]`` is taken as already summarised and kept as it is."""
    out: list[AgentMessage] = list(messages[:start])
    for first, end in spans:
        if first >= boundary:
            break
        group = messages[first:end]
        if isinstance(group[0], AssistantMessage):
            summary = _summarize_group(group)
            if cost(summary) < sum(map(cost, group)):
                out.append(summary)
                continue
        out.extend(group)
    out.extend(messages[boundary:])
    return out


# --------------------------------------------------------------------------- level 3


def _omission_marker(count: int, messages: Sequence[AgentMessage] = (), first_omitted: int = 0) -> UserMessage:
    """The user message standing in for ``count`` dropped messages, from ``messages[first_omitted]``
    on. It takes the first timestamp found from there (extension messages have none), so compaction
    is deterministic."""
    noun = "message" if count == 1 else "messages"
    text = f"{OMISSION_PREFIX}{count} {noun} omitted to fit the context window ...]"
    stamps = (getattr(messages[i], "timestamp", None) for i in range(first_omitted, len(messages)))
    timestamp = next((stamp for stamp in stamps if isinstance(stamp, int)), None)
    return UserMessage([TextContent(text)], timestamp=now_ms() if timestamp is None else timestamp)


def _is_marker(message: AgentMessage) -> bool:
    return (
        isinstance(message, UserMessage)
        and len(message.content) == 1
        and isinstance(message.content[0], TextContent)
        and message.content[0].text.startswith(OMISSION_PREFIX)
    )


def level3_drop_middle(messages: Sequence[AgentMessage], keep_first: int, keep_recent: int) -> list[AgentMessage]:
    """Head (``keep_first``) + one omission marker + tail (``keep_recent``); middle dropped.

    Head and tail are widened to whole groups; the tail always holds at least the newest group.
    Nothing changes when head and tail already cover everything.
    """
    spans = message_groups(messages)
    n = len(messages)
    head_end = _group_end(spans, min(keep_first, n))
    tail_start = _group_start(spans, max(0, n - keep_recent))
    if spans:
        tail_start = min(tail_start, spans[-1][0])  # the newest group is never dropped
    if tail_start <= head_end:
        return list(messages)
    dropped = tail_start - head_end
    return [*messages[:head_end], _omission_marker(dropped, messages, head_end), *messages[tail_start:]]


# --------------------------------------------------------------------------- fallback


def _newest_fitting(
    messages: Sequence[AgentMessage], spans: list[tuple[int, int]], budget: int, cost: Cost
) -> tuple[int, int]:
    """(index of the first kept message, tokens used) for the newest whole groups within budget."""
    used = 0
    first_kept = len(messages)
    for start, end in reversed(spans):
        tokens = sum(map(cost, messages[start:end]))
        if used + tokens > budget:
            break
        used += tokens
        first_kept = start
    return first_kept, used


def keep_within_budget(
    messages: Sequence[AgentMessage], budget: int, counter: TokenCounter | None = None, keep_first: int = 0
) -> list[AgentMessage]:
    """The newest whole groups that fit ``budget``, with an omission marker when room allows.

    With ``keep_first`` > 0 the first messages (widened to whole groups) are kept too, ahead of the
    marker, provided head + marker + the newest group fit; otherwise they are given up.
    If even the newest group does not fit, it is returned alone (over budget) and a warning logged:
    dropping the message the model must answer would be worse than a clear overflow error.
    """
    return keep_within(messages, budget, counter_cost(counter), keep_first)


def keep_within(messages: Sequence[AgentMessage], budget: int, cost: Cost, keep_first: int = 0) -> list[AgentMessage]:
    """:func:`keep_within_budget` with the token cost of a message given as ``cost``."""
    spans = message_groups(messages)
    if not spans:
        return []
    head = _fit_with_head(messages, spans, budget, cost, keep_first)
    if head is not None:
        return head
    first_kept, used = _newest_fitting(messages, spans, budget, cost)
    if first_kept == len(messages):
        start = spans[-1][0]
        log.warning(
            "newest message group alone needs %d tokens, more than the budget of %d; keeping it anyway",
            sum(map(cost, messages[start:])),
            budget,
        )
        return list(messages[start:])
    kept = list(messages[first_kept:])
    if first_kept > 0 and not _is_marker(kept[0]):
        marker = _omission_marker(first_kept, messages)
        if used + cost(marker) <= budget:
            kept.insert(0, marker)
    return kept


def _fit_with_head(
    messages: Sequence[AgentMessage], spans: list[tuple[int, int]], budget: int, cost: Cost, keep_first: int
) -> list[AgentMessage] | None:
    head_end = _group_end(spans, min(keep_first, len(messages)))
    if head_end == 0 or head_end >= len(messages):
        return None
    head = list(messages[:head_end])
    reserve = sum(map(cost, head)) + cost(_omission_marker(len(messages)))
    if reserve >= budget:
        return None
    tail_spans = [span for span in spans if span[0] >= head_end]
    first_kept, _ = _newest_fitting(messages, tail_spans, budget - reserve, cost)
    if first_kept == len(messages):
        return None
    if first_kept == head_end:
        return list(messages)
    return [*head, _omission_marker(first_kept - head_end, messages, head_end), *messages[first_kept:]]


# --------------------------------------------------------------------------- cascade


def compact_messages(
    messages: Sequence[AgentMessage], config: ContextConfig, budget: int | None = None
) -> list[AgentMessage]:
    """Fit ``messages`` into ``budget`` tokens (default ``config.budget``) via the level cascade.

    Returns a new list; the input is never modified. Returns the messages unchanged (as a new list)
    when they already fit.
    """
    if not isinstance(config, ContextConfig):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
        raise ConfigError(f"compact_messages needs a ContextConfig, got {type(config).__name__}")
    if budget is None:
        budget = config.budget
    elif (not isinstance(budget, int)  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
          or isinstance(budget, bool) or budget < 0):
        raise ConfigError(f"compaction budget must be a non-negative integer, got {budget!r}")
    counter = config.counter
    current = list(messages)
    before = total_tokens(current, counter)
    if before <= budget:
        return current
    levels: list[tuple[str, Callable[[list[AgentMessage]], list[AgentMessage]]]] = [
        ("level 1 (truncate tool outputs)", lambda m: level1_truncate_tool_outputs(m, config.tool_output_max_lines)),
        ("level 2 (summarize old turns)", lambda m: level2_summarize_old_turns(m, config.keep_recent, counter)),
        ("level 3 (drop middle)", lambda m: level3_drop_middle(m, config.keep_first, config.keep_recent)),
    ]
    summarized = current
    for label, level in levels:
        current = level(current)
        after = total_tokens(current, counter)
        if after <= budget:
            log.debug("compaction %s: %d -> %d tokens (budget %d)", label, before, after, budget)
            return current
        if label.startswith("level 2"):
            summarized = current  # the fallback works on level 2's result, not level 3's
    result = keep_within_budget(summarized, budget, counter, config.keep_first)
    log.debug("compaction fallback: %d -> %d tokens (budget %d)", before, total_tokens(result, counter), budget)
    return result


@runtime_checkable
class CompactionStrategy(Protocol):
    """Custom compaction (seed REQ-023): return the messages to send, fitting ``config.budget``."""

    def compact(self, messages: list[AgentMessage], config: ContextConfig) -> list[AgentMessage]:
        ...


class DefaultCompaction:
    """The tiered cascade of :func:`compact_messages` as a :class:`CompactionStrategy`."""

    def compact(self, messages: list[AgentMessage], config: ContextConfig) -> list[AgentMessage]:
        return compact_messages(messages, config)

    def __repr__(self) -> str:
        return "DefaultCompaction()"


def compact_with(
    strategy: CompactionStrategy | None,
    messages: Sequence[AgentMessage],
    config: ContextConfig,
    budget: int | None = None,
) -> list[AgentMessage]:
    """Run ``strategy`` (default cascade when None) with an optional tighter ``budget``.

    A custom strategy sees the tighter budget as ``config.budget`` (``config.with_budget``).
    Raises ConfigError when a strategy returns something that is not a list of messages.
    """
    if strategy is None:
        return compact_messages(messages, config, budget)
    effective = config if budget is None else config.with_budget(max(1, budget))
    result = strategy.compact(list(messages), effective)
    if not isinstance(result, list):  # pyright: ignore[reportUnnecessaryIsInstance]  # a user's strategy
        raise ConfigError(f"compaction strategy {strategy!r} returned {type(result).__name__}, "
                          "expected a list of messages")
    return result


def overflow_budget(messages: Sequence[AgentMessage], config: ContextConfig, factor: float = 0.5) -> int:
    """A tighter budget for the single retry after a context-overflow error (DESIGN §5).

    The provider rejected what the estimate said would fit, so the estimate is too optimistic:
    aim for ``factor`` (default one half) of the smaller of the budget and the current size.
    """
    if not 0 < factor < 1:
        raise ConfigError(f"overflow factor must be between 0 and 1, got {factor!r}")
    current = total_tokens(messages, config.counter)
    return max(1, int(min(config.budget, current) * factor))
