"""Context-size and execution-limit trackers (SPEC CTX-1, LOOP-10).

:class:`ContextTracker` (seed REQ-136) answers "how big is the context now?" by trusting the most
recent provider-reported usage and adding heuristic estimates only for the messages appended since
that report. :class:`ExecutionTracker` (seed REQ-012/061) counts turns, tokens and wall-clock time
against :class:`~phi.context.config.ExecutionLimits`; the loop calls :meth:`check_limits` at the
start of every turn and, when it returns a reason, appends the user message
``[Agent stopped: {reason}]`` and ends the run.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..concurrency import sync
from ..types import AgentMessage, AssistantMessage, Usage
from .config import ExecutionLimits
from .tokens import TokenCounter, message_tokens, total_tokens

__all__ = ["ContextTracker", "ExecutionTracker", "usage_context_tokens"]


def usage_context_tokens(usage: Usage) -> int:
    """The context size a provider report implies: everything sent plus everything generated."""
    return usage.input + usage.cache_read + usage.cache_write + usage.output


class ContextTracker:
    """Hybrid context-size tracking: provider-reported usage + estimates for newer messages.

    Call :meth:`record_usage` after each provider response (or let :meth:`current_tokens` find
    the newest assistant message with usage itself). If the messages the report covered have
    been replaced (compaction, restore), the report is ignored and everything is estimated.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter
        self._reported: int | None = None
        self._anchor_index = 0  # number of messages covered by the report
        self._anchor: AgentMessage | None = None  # the message at _anchor_index - 1

    def reset(self) -> None:
        """Forget the last provider report."""
        self._reported = None
        self._anchor_index = 0
        self._anchor = None

    def record_usage(self, usage: Usage, messages: Sequence[AgentMessage]) -> None:
        """Record that ``usage`` covers all of ``messages`` (typically ending with the assistant
        message the usage came from)."""
        tokens = usage_context_tokens(usage)
        if tokens <= 0 or not messages:
            return
        self._reported = tokens
        self._anchor_index = len(messages)
        self._anchor = messages[-1]

    def _find_report(self, messages: Sequence[AgentMessage]) -> None:
        """Adopt the usage of the newest assistant message newer than the current report."""
        for index in range(len(messages) - 1, self._anchor_index - 1, -1):
            message = messages[index]
            if isinstance(message, AssistantMessage) and usage_context_tokens(message.usage) > 0:
                self.record_usage(message.usage, messages[: index + 1])
                return

    def current_tokens(self, messages: Sequence[AgentMessage]) -> int:
        """Reported tokens plus estimates for messages after the report; all-estimate otherwise."""
        if self._reported is not None and not self._covers(messages):
            self.reset()
        self._find_report(messages)
        if self._reported is None:
            return total_tokens(messages, self.counter)
        return self._reported + sum(message_tokens(m, self.counter) for m in messages[self._anchor_index :])

    def _covers(self, messages: Sequence[AgentMessage]) -> bool:
        index = self._anchor_index
        return 0 < index <= len(messages) and messages[index - 1] is self._anchor

    @property
    def last_reported(self) -> int | None:
        """The most recent provider-reported context size, if any."""
        return self._reported


class ExecutionTracker:
    """Turns, tokens and elapsed time of one run, checked against :class:`ExecutionLimits`.

    ``clock`` (default :func:`phi.concurrency.sync.monotonic`) is injectable for tests. Thread-safe.
    """

    def __init__(self, limits: ExecutionLimits | None = None, clock: Callable[[], float] = sync.monotonic) -> None:
        self.limits = limits if limits is not None else ExecutionLimits()
        self._clock = clock
        self._lock = sync.Lock()
        self.turns = 0
        self.tokens_used = 0
        self.started_at = clock()

    def reset(self) -> None:
        """Start counting afresh (turns and tokens 0, clock restarted)."""
        with self._lock:
            self.turns = 0
            self.tokens_used = 0
            self.started_at = self._clock()

    def record_turn(self, tokens: int | Usage = 0) -> None:
        """Count one LLM call and the tokens it used (an int or a :class:`Usage`)."""
        used = tokens.tokens() if isinstance(tokens, Usage) else int(tokens)
        if used < 0:
            raise ValueError(f"tokens must be >= 0, got {used}")
        with self._lock:
            self.turns += 1
            self.tokens_used += used

    @property
    def elapsed(self) -> float:
        """Seconds since construction (or the last :meth:`reset`)."""
        return self._clock() - self.started_at

    def check_limits(self) -> str | None:
        """The reason the run must stop, or None while every limit holds.

        Reasons: ``"Max turns reached (3/3)"``, ``"Max tokens reached (1200/1000)"``,
        ``"Max duration reached (601.2s/600s)"``. Limits are reached at equality, so an agent with
        ``max_turns=2`` stops before its third LLM call.
        """
        limits = self.limits
        with self._lock:
            turns, tokens = self.turns, self.tokens_used
        if limits.max_turns is not None and turns >= limits.max_turns:
            return f"Max turns reached ({turns}/{limits.max_turns})"
        if limits.max_total_tokens is not None and tokens >= limits.max_total_tokens:
            return f"Max tokens reached ({tokens}/{limits.max_total_tokens})"
        if limits.max_duration is not None:
            elapsed = self.elapsed
            if elapsed >= limits.max_duration:
                return f"Max duration reached ({elapsed:.1f}s/{limits.max_duration:g}s)"
        return None
