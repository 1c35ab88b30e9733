"""One watchdog thread for every model call's time bounds (issue 36; SPEC PROV-4): calls in flight
cost no thread of their own for their bounds, ended calls are forgotten, bounds act in time order,
and one failing bound does not stop the others."""

from __future__ import annotations

import threading

from phi.concurrency.cancel import CancellationToken
from phi.providers import watchdog
from phi.providers.transport import CallStop


def watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "phi-call-watchdog" and t.is_alive()]


def test_a_thousand_calls_in_flight_share_one_watchdog_thread_and_are_forgotten_when_they_end():
    before = watchdog.watched()
    stops = [CallStop(CancellationToken(), total_timeout=600, idle_timeout=300) for _ in range(1000)]
    assert watchdog.watched() == before + 1000
    assert 1 <= len(watchdog_threads()) <= 2  # one (and perhaps the previous one leaving), never one per call
    for stop in stops:
        stop.close()
    assert watchdog.watched() == before
    assert not any(stop.token.is_cancelled() for stop in stops)


def test_a_total_bound_stops_its_call_and_only_its_call():
    short = CallStop(CancellationToken(), total_timeout=0.05)
    long = CallStop(CancellationToken(), total_timeout=600)
    try:
        assert short.token.wait(10)
        assert short.expired and not short.idle_expired
        assert not long.token.is_cancelled()
    finally:
        short.close()
        long.close()


def test_an_idle_bound_waits_for_the_response_to_begin_then_fires_after_silence():
    stop = CallStop(CancellationToken(), total_timeout=600, idle_timeout=0.05)
    try:
        assert not stop.token.wait(0.2)  # not watching yet: the response has not begun
        stop.start_idle()
        assert stop.token.wait(10)
        assert stop.idle_expired and not stop.expired
    finally:
        stop.close()


def test_a_cancelled_run_stops_its_call_without_the_watchdog():
    run = CancellationToken()
    stop = CallStop(run, total_timeout=600)
    run.cancel()
    try:
        assert stop.token.is_cancelled() and not stop.expired
    finally:
        stop.close()


def test_bounds_fire_in_time_order_and_a_failing_one_does_not_stop_the_others():
    fired: list[str] = []
    done = threading.Event()

    def failing() -> float | None:
        fired.append("failing")
        raise RuntimeError("a broken bound")

    def later() -> float | None:
        fired.append("later")
        done.set()
        return None

    watchdog.watch(later, 0.1)
    watchdog.watch(failing, 0.0)
    assert done.wait(10)
    assert fired == ["failing", "later"]


def test_a_bound_asked_again_is_rescheduled():
    asked: list[int] = []
    done = threading.Event()

    def twice() -> float | None:
        asked.append(1)
        if len(asked) < 3:
            return 0.01
        done.set()
        return None

    watchdog.watch(twice, 0.0)
    assert done.wait(10) and len(asked) == 3
