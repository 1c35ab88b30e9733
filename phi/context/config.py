"""Context and execution-limit settings (SPEC CTX-2, LOOP-10).

:class:`ContextConfig` tunes compaction. Its defaults are phi-core's: a 100,000-token window of
which 4,000 are reserved for the system prompt (so the message budget is 96,000), the first 2 and
the last 10 messages protected, and tool outputs cut to 50 lines at level 1. ``token_counter``
swaps the four-bytes-per-token heuristic for a real tokenizer.

:class:`ExecutionLimits` caps a run: 50 turns, 1,000,000 tokens, 600 seconds by default. Any cap
may be ``None`` (no limit on that dimension).
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Callable, Union

from ..errors import ConfigError
from .tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["ContextConfig", "ExecutionLimits", "CallableTokenCounter"]


class CallableTokenCounter:
    """Adapts a plain ``fn(text) -> int`` to the :class:`TokenCounter` protocol."""

    def __init__(self, fn: Callable[[str], int]) -> None:
        self.fn = fn

    def count(self, text: str) -> int:
        return self.fn(text)

    def __repr__(self) -> str:
        return f"CallableTokenCounter({self.fn!r})"


def _check_count(owner: str, name: str, value: object, minimum: int = 0, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{owner}.{name} must be an integer >= {minimum}, got {value!r}")


@dataclass
class ContextConfig:
    """Compaction settings (seed REQ-011). The message budget is ``max_context_tokens -
    system_prompt_tokens`` (:attr:`budget`)."""

    max_context_tokens: int = 100_000
    system_prompt_tokens: int = 4_000
    keep_recent: int = 10
    keep_first: int = 2
    tool_output_max_lines: int = 50
    token_counter: Union[TokenCounter, Callable[[str], int]] = field(default=DEFAULT_COUNTER)

    def __post_init__(self) -> None:
        _check_count("ContextConfig", "max_context_tokens", self.max_context_tokens, 1)
        _check_count("ContextConfig", "system_prompt_tokens", self.system_prompt_tokens, 0)
        _check_count("ContextConfig", "keep_recent", self.keep_recent, 0)
        _check_count("ContextConfig", "keep_first", self.keep_first, 0)
        _check_count("ContextConfig", "tool_output_max_lines", self.tool_output_max_lines, 1)
        if self.system_prompt_tokens >= self.max_context_tokens:
            raise ConfigError(
                f"ContextConfig.system_prompt_tokens ({self.system_prompt_tokens}) must be smaller than "
                f"max_context_tokens ({self.max_context_tokens}); nothing would be left for messages"
            )
        counter = self.token_counter
        if counter is None:
            self.token_counter = DEFAULT_COUNTER
        elif not isinstance(counter, TokenCounter):
            if not callable(counter):
                raise ConfigError(
                    "ContextConfig.token_counter must have a count(text) -> int method or be a callable, "
                    f"got {counter!r}"
                )
            self.token_counter = CallableTokenCounter(counter)

    @property
    def budget(self) -> int:
        """Tokens available for messages: ``max_context_tokens - system_prompt_tokens``."""
        return self.max_context_tokens - self.system_prompt_tokens

    @property
    def counter(self) -> TokenCounter:
        """``token_counter`` as a :class:`TokenCounter` (callables are wrapped on construction)."""
        counter = self.token_counter
        if not isinstance(counter, TokenCounter):  # a plain callable assigned after construction
            counter = self.token_counter = CallableTokenCounter(counter)
        return counter

    def with_budget(self, budget: int) -> ContextConfig:
        """A copy whose :attr:`budget` is ``budget`` (e.g. a tighter one after a context overflow)."""
        _check_count("ContextConfig.with_budget", "budget", budget, 1)
        return dataclasses.replace(self, max_context_tokens=budget + self.system_prompt_tokens)


@dataclass(frozen=True)
class ExecutionLimits:
    """Hard caps on one run (seed REQ-012). ``max_duration`` is in seconds (a ``timedelta`` is
    accepted and converted). ``None`` disables a cap."""

    max_turns: int | None = 50
    max_total_tokens: int | None = 1_000_000
    max_duration: float | None = 600.0

    def __post_init__(self) -> None:
        _check_count("ExecutionLimits", "max_turns", self.max_turns, 1, allow_none=True)
        _check_count("ExecutionLimits", "max_total_tokens", self.max_total_tokens, 1, allow_none=True)
        duration = self.max_duration
        if isinstance(duration, datetime.timedelta):
            duration = duration.total_seconds()
        if duration is not None:
            if (not isinstance(duration, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]  # user input
                    or isinstance(duration, bool) or not duration > 0):
                raise ConfigError("ExecutionLimits.max_duration must be a positive number of seconds, "
                                  f"got {duration!r}")
            object.__setattr__(self, "max_duration", float(duration))

    @classmethod
    def unlimited(cls) -> ExecutionLimits:
        """No caps at all."""
        return cls(None, None, None)
