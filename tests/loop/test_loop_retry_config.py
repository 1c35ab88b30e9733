"""RetryConfig.delay_for_attempt: exponential, capped, jitter in [0.8, 1.2] (SPEC ERR-2)."""

from __future__ import annotations

import statistics

from phi.providers.retry import RetryConfig


def test_exponential_without_jitter():
    config = RetryConfig(initial_delay_ms=100, backoff_multiplier=2.0, max_delay_ms=10_000, jitter=False)
    assert [config.delay_for_attempt(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.4, 0.8]


def test_delay_is_capped():
    config = RetryConfig(initial_delay_ms=1000, backoff_multiplier=3.0, max_delay_ms=5000, jitter=False)
    assert config.delay_for_attempt(10) == 5.0
    assert config.delay_for_attempt(100) == 5.0


def test_jitter_stays_within_bounds_over_10000_samples():
    config = RetryConfig(initial_delay_ms=1000, backoff_multiplier=2.0, max_delay_ms=30_000, jitter=True)
    for attempt, base in ((1, 1.0), (3, 4.0), (20, 30.0)):
        samples = [config.delay_for_attempt(attempt) for _ in range(10_000)]
        assert min(samples) >= 0.8 * base and max(samples) <= 1.2 * base
        # the jitter actually spreads: both ends of the range are reached and the mean is centred
        assert min(samples) < 0.82 * base and max(samples) > 1.18 * base
        assert abs(statistics.fmean(samples) - base) < 0.02 * base


def test_retry_after_replaces_backoff_and_is_capped():
    config = RetryConfig(initial_delay_ms=1000, jitter=False, max_retry_after_ms=60_000)
    assert config.delay_for(1, 250) == 0.25
    assert config.delay_for(1, 3_600_000) == 60.0
    assert config.delay_for(2, None) == 2.0


def test_none_never_retries():
    assert RetryConfig.none().max_retries == 0
