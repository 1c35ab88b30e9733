"""Compaction with running token totals (SPEC CTX-2; issue 11).

:class:`IncrementalCompaction` is a :class:`~phi.context.compaction.CompactionStrategy` that returns
exactly what :func:`~phi.context.compaction.compact_messages` returns, but remembers what it learnt
about the history it handed back last time, so that the next call — the same history plus the
messages of one more turn — costs time in proportion to what is new, not to the whole history:

* the token total of that history (a running total, plus the estimates of the new messages);
* how far it is already level-1 truncated (truncating twice changes nothing);
* how far it is already level-2 summarised (the groups before the last summary boundary stay as
  they are, so a later level 2 only looks at the groups that crossed the boundary since);
* the token estimate of every message it has seen (by identity; forgotten when the message leaves).

Messages are immutable once announced (SPEC §2), and all these facts depend only on a message's
value, so a history that starts with the one returned last time (compared with ``==``, which is an
identity check for the objects the history keeps) can reuse them. Anything else — a history that
was edited, restored or replaced — falls back to counting from the start of the difference; a
change of counter or compaction settings forgets everything. Levels 3 and the fallback, which run
rarely, work on the whole history with the remembered estimates.

One object is meant for one history at a time — one per run; calls are serialised by a
lock, so sharing it is safe, only slower.
"""

from __future__ import annotations

import threading
from typing import Sequence

from ..errors import ConfigError
from ..log import get_logger
from ..types import AgentMessage
from .compaction import (
    keep_within,
    level3_drop_middle,
    message_groups,
    summarize_before,
    summary_boundary,
    truncate_tool_output,
)
from .config import ContextConfig
from .tokens import TokenCounter, message_tokens

__all__ = ["IncrementalCompaction"]

log = get_logger(__name__)


class _TokenMemo:
    """Token estimates by message identity; each entry keeps its message alive, so an id is never
    reused while its entry exists."""

    def __init__(self, counter: TokenCounter | None) -> None:
        self._counter = counter
        self._known: dict[int, tuple[AgentMessage, int]] = {}

    def __call__(self, message: AgentMessage) -> int:
        entry = self._known.get(id(message))
        if entry is None:
            entry = self._known[id(message)] = (message, message_tokens(message, self._counter))
        return entry[1]

    def keep_only(self, messages: Sequence[AgentMessage]) -> None:
        """Forget messages no longer in ``messages`` once they outnumber those that are."""
        if len(self._known) > 2 * len(messages) + 64:
            known = self._known
            self._known = {id(m): known[id(m)] for m in messages if id(m) in known}


class IncrementalCompaction:
    """The tiered cascade of :func:`~phi.context.compaction.compact_messages`, incremental across
    calls on a growing history (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settings: tuple[TokenCounter, int, int, int] | None = None
        self._forget(None)

    def __repr__(self) -> str:
        return f"IncrementalCompaction({len(self._last)} messages remembered)"

    def _forget(self, counter: TokenCounter | None) -> None:
        self._last: list[AgentMessage] = []  # the history returned last time
        self._total = 0  # its tokens
        self._truncated = 0  # _last[:n] is unchanged by level 1
        self._summarized = 0  # _last[:n] is unchanged by level 2; n starts a group (see _settled)
        self._cost = _TokenMemo(counter)

    def compact(self, messages: list[AgentMessage], config: ContextConfig) -> list[AgentMessage]:
        """``compact_messages(messages, config)``, reusing what the previous call learnt."""
        if not isinstance(config, ContextConfig):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            raise ConfigError(f"IncrementalCompaction needs a ContextConfig, got {type(config).__name__}")
        with self._lock:
            settings = (config.counter, config.tool_output_max_lines, config.keep_recent, config.keep_first)
            if settings != self._settings:
                self._settings = settings
                self._forget(config.counter)
            return self._compact(list(messages), config)

    def _known_prefix(self, messages: list[AgentMessage]) -> int:
        """How many leading messages equal those of the history returned last time."""
        last = self._last
        if len(messages) >= len(last):
            try:
                if messages[: len(last)] == last:  # identical objects compare without calling __eq__
                    return len(last)
            except Exception:  # an extension message whose data cannot be compared
                log.debug("history comparison raised; comparing by identity", exc_info=True)
        for index, (message, before) in enumerate(zip(messages, last)):
            if message is not before:
                return index
        return min(len(messages), len(last))

    def _compact(self, messages: list[AgentMessage], config: ContextConfig) -> list[AgentMessage]:
        cost, budget = self._cost, config.budget
        known = self._known_prefix(messages)
        if known == len(self._last):
            before = self._total + sum(map(cost, messages[known:]))
        else:
            before = sum(map(cost, messages))
        truncated = min(self._truncated, known)
        summarized = self._summarized if self._summarized < known else 0
        if before <= budget:
            return self._remember(messages, before, truncated, summarized)

        cut = messages[:truncated]
        cut += [truncate_tool_output(message, config.tool_output_max_lines) for message in messages[truncated:]]
        after = before - sum(map(cost, messages[truncated:])) + sum(map(cost, cut[truncated:]))
        if after <= budget:
            log.debug("compaction level 1 (truncate tool outputs): %d -> %d tokens (budget %d)", before, after, budget)
            return self._remember(cut, after, len(cut), summarized)

        spans = message_groups(cut, summarized)
        boundary = summary_boundary(spans, len(cut), config.keep_recent, summarized)
        summary = summarize_before(cut, spans, boundary, cost, summarized)
        settled = len(summary) - (len(cut) - boundary)  # where the boundary is in ``summary``
        after += sum(map(cost, summary[summarized:settled])) - sum(map(cost, cut[summarized:boundary]))
        if _settled(summary, settled):
            summarized = settled
        if after <= budget:
            log.debug("compaction level 2 (summarize old turns): %d -> %d tokens (budget %d)", before, after, budget)
            return self._remember(summary, after, len(summary), summarized)

        dropped = level3_drop_middle(summary, config.keep_first, config.keep_recent)
        after = sum(map(cost, dropped))
        if after <= budget:
            log.debug("compaction level 3 (drop middle): %d -> %d tokens (budget %d)", before, after, budget)
            return self._remember(dropped, after, len(dropped), 0)
        result = keep_within(summary, budget, cost, config.keep_first)
        after = sum(map(cost, result))
        log.debug("compaction fallback: %d -> %d tokens (budget %d)", before, after, budget)
        return self._remember(result, after, len(result), 0)

    def _remember(self, result: list[AgentMessage], total: int, truncated: int, summarized: int) -> list[AgentMessage]:
        self._last = list(result)  # the caller may change the list it gets
        self._total, self._truncated, self._summarized = total, truncated, summarized
        self._cost.keep_only(result)
        return result


def _settled(messages: Sequence[AgentMessage], index: int) -> bool:
    """Whether the groups before ``index`` cannot change when messages are added after it.

    A group is found by scanning forward over matching tool results and extension messages, so a
    group before an extension message may have looked past it; before any other message (which
    either ends the scan or is part of the group) it has not.
    """
    return index < len(messages) and getattr(messages[index], "role", None) != "extension"
