"""Retrying a model call (SPEC §7: ERR-1, ERR-2, ERR-4).

:func:`call_with_retries` is the rule set: a failed attempt is retried only while nothing of it has
reached the consumer; ``rate_limited`` and ``network`` failures are retried with backoff; a
``context_overflow`` is retried once after the caller compacts the context (each model call gets its
own single overflow retry). :class:`RetryConfig` is the policy.

``delay_for_attempt(n)`` is ``initial_delay_ms * multiplier ** (n - 1)``, capped at ``max_delay_ms``,
times a uniform jitter in [0.8, 1.2]. A server's Retry-After, when given, replaces the computed delay
(capped at ``max_retry_after_ms`` so a hostile header cannot park the loop for hours).

Retries never reach the event stream (SPEC EVT-7: an attempt that failed unseen leaves no trace
there). Observers registered with :func:`observe_retries` — tracing (SPEC §17, OTEL-5) — are told of
each one as a :class:`RetryNotice`, on the thread that runs the call, before its wait.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable

from ..concurrency.callbacks import CallbackList
from ..concurrency.cancel import CancellationToken
from ..log import get_logger
from ..types import AssistantMessage, StopReason
from .base import ErrorKind, ProviderError, is_context_overflow

log = get_logger(__name__)


@dataclass(slots=True)
class RetryConfig:
    """How the loop retries a model call that failed with ``rate_limited`` or ``network`` before any
    of its reply was shown (SPEC ERR-2): at most ``max_retries`` times, waiting
    ``initial_delay_ms * backoff_multiplier ** (attempt - 1)`` capped at ``max_delay_ms`` (±20 % with
    ``jitter``), or the server's ``Retry-After`` capped at ``max_retry_after_ms``."""

    max_retries: int = 3
    initial_delay_ms: int = 1000
    backoff_multiplier: float = 2.0
    max_delay_ms: int = 30_000
    jitter: bool = True
    max_retry_after_ms: int = 120_000

    @classmethod
    def none(cls) -> RetryConfig:
        """Never retry."""
        return cls(max_retries=0)

    def delay_for_attempt(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        base = self.initial_delay_ms * (self.backoff_multiplier ** max(0, attempt - 1))
        base = min(base, float(self.max_delay_ms))
        if self.jitter:
            base *= random.uniform(0.8, 1.2)
        return base / 1000.0

    def delay_for(self, attempt: int, retry_after_ms: int | None) -> float:
        """The server's Retry-After when it gave one, else the backoff delay."""
        if retry_after_ms is not None:
            return min(retry_after_ms, self.max_retry_after_ms) / 1000.0
        return self.delay_for_attempt(attempt)


@dataclass(slots=True)
class Attempt:
    """One attempt of a model call: the reply (None when the provider failed), the failure, and
    whether anything of it became visible to the consumer (SPEC EVT-7)."""

    reply: AssistantMessage | None
    failure: ProviderError | None
    visible: bool


@dataclass(frozen=True, slots=True)
class RetryNotice:
    """A model call about to be tried again (SPEC ERR-1, ERR-4): the run's ``loop_id`` (None when the
    caller gave none), which ``retry`` this is (1-based), the seconds it waits first (``delay``; 0
    for the overflow retry), the ``failure`` that caused it and when that attempt failed
    (``timestamp``, ``time.time()``)."""

    loop_id: str | None
    retry: int
    delay: float
    failure: ProviderError
    timestamp: float = field(default_factory=time.time)


RetryObserver = Callable[[RetryNotice], None]
_observers: CallbackList[RetryObserver] = CallbackList()


def observe_retries(observer: RetryObserver) -> Callable[[], None]:
    """Tell ``observer`` of every retry of every model call in this process (SPEC §17 OTEL-5);
    returns the function that stops it. An observer that raises is logged and ignored."""
    return _observers.add(observer)


def _tell(notice: RetryNotice) -> None:
    for observer in _observers:
        try:
            observer(notice)
        except Exception:
            log.exception("retry observer %r raised", observer)


def call_with_retries(attempt: Callable[[], Attempt], policy: RetryConfig, cancel: CancellationToken,
                      on_overflow: Callable[[], None] | None = None, *, loop_id: str | None = None) -> Attempt:
    """Run ``attempt`` until it succeeds or may not be retried; returns the last attempt.

    - ERR-2: an attempt that became visible, or a cancelled call, is never retried.
    - ERR-1: ``rate_limited`` and ``network`` failures are retried up to ``policy.max_retries`` times,
      after the backoff delay or the server's Retry-After (a cancel during the wait ends the call).
    - ERR-4: a ``context_overflow`` — also an error reply that says so before anything was shown —
      calls ``on_overflow`` (the caller compacts with a tighter budget) and is retried once. Without
      ``on_overflow`` (no context settings) it is final.

    Each retry is told to the :func:`observe_retries` observers, naming ``loop_id``.
    """
    retries = 0
    overflow_retried = False
    while True:
        result = attempt()
        reply, failure = result.reply, result.failure
        if failure is None and reply is not None and reply.stop_reason == StopReason.ERROR \
                and not result.visible and is_context_overflow(None, reply.error_message):
            failure = result.failure = ProviderError(ErrorKind.CONTEXT_OVERFLOW, reply.error_message or "context overflow")
        if failure is None or result.visible or cancel.is_cancelled():
            return result
        if failure.is_retryable() and retries < policy.max_retries:
            retries += 1
            delay = policy.delay_for(retries, failure.retry_after_ms)
            log.warning("retry %d/%d in %.2fs after %s", retries, policy.max_retries, delay, failure)
            if _observers:
                _tell(RetryNotice(loop_id, retries + int(overflow_retried), delay, failure))
            if cancel.wait(delay):
                return result
            continue
        if failure.kind == ErrorKind.CONTEXT_OVERFLOW and on_overflow is not None and not overflow_retried:
            overflow_retried = True
            log.warning("context overflow; compacting and retrying once")
            if _observers:
                _tell(RetryNotice(loop_id, retries + 1, 0.0, failure))
            on_overflow()
            continue
        return result
