"""Retry policy for rate limits and network failures (SPEC ERR-2).

``delay_for_attempt(n)`` is ``initial_delay_ms * multiplier ** (n - 1)``, capped at ``max_delay_ms``,
times a uniform jitter in [0.8, 1.2]. A server's Retry-After, when given, replaces the computed delay
(capped at ``max_retry_after_ms`` so a hostile header cannot park the loop for hours).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


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
