"""The deterministic simulator of phi's concurrency (issue 30; phi.concurrency.simulator): one thread at
a time, a seeded choice at every switch point, virtual time, and failures reported with stacks."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from phi.concurrency import sync, workers
from phi.concurrency.simulator import Simulation, SimulationFailure, current


def test_virtual_time_costs_no_real_time():
    def main() -> float:
        sync.sleep(3600.0)
        return sync.monotonic()

    started = time.perf_counter()
    assert Simulation(1).run(main) == 3600.0
    assert time.perf_counter() - started < 30  # an hour of virtual time


def test_a_timeout_fires_in_virtual_time_when_nobody_can_run():
    def main() -> tuple[bool, float, bool]:
        event, items = sync.Event(), sync.SimpleQueue()
        waited = event.wait(2.5)
        at = sync.monotonic()
        try:
            items.get(timeout=1.0)
            empty = False
        except queue.Empty:
            empty = True
        return waited, at, empty

    assert Simulation(3).run(main) == (False, 2.5, True)


def test_a_lock_order_inversion_is_a_deadlock_reported_with_every_stack():
    def main() -> None:
        first, second = sync.Lock(), sync.Lock()

        def one() -> None:
            with first:
                sync.sleep(1.0)
                with second:
                    pass

        def two() -> None:
            with second:
                sync.sleep(1.0)
                with first:
                    pass

        threads = [sync.Thread(target=one, name="one"), sync.Thread(target=two, name="two")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    with pytest.raises(SimulationFailure) as caught:
        Simulation(11).run(main)
    failure = caught.value
    assert failure.kind == "deadlock" and failure.seed == 11 and failure.now == 1.0
    names = " ".join(failure.stacks)
    assert "one#" in names and "two#" in names and "main#" in names
    assert any("with second:" in stack for stack in failure.stacks.values())
    assert "deadlock" in failure.report() and "last steps:" in failure.report()
    assert sync.Lock is threading.Lock and workers.shared_pool() is workers._pool  # the seam is restored


def _race(seed: int) -> tuple[list[str], list[str]]:
    """Three threads append to one list with switch points between their steps."""
    order: list[str] = []

    def main() -> None:
        def worker(name: str) -> None:
            for i in range(4):
                sim = current()
                assert sim is not None
                sim.point("step")
                order.append(f"{name}{i}")

        threads = [sync.Thread(target=worker, args=(n,), name=n) for n in "abc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    sim = Simulation(seed, trace=True, preemption=1.0)
    sim.run(main)
    assert sim.trace_lines is not None
    return order, sim.trace_lines


def test_the_same_seed_replays_the_same_interleaving_and_seeds_differ():
    first, trace = _race(5)
    again, trace_again = _race(5)
    assert first == again and trace == trace_again
    orders = {tuple(_race(seed)[0]) for seed in range(12)}
    assert len(orders) > 3  # the seed picks the interleaving


def test_a_thread_blocked_for_ever_after_main_returns_is_left_over():
    def main() -> None:
        never = sync.Event()
        sync.Thread(target=never.wait, name="forgotten").start()

    with pytest.raises(SimulationFailure) as caught:
        Simulation(2).run(main)
    assert caught.value.kind == "leftover" and "forgotten" in caught.value.message


def test_idle_pool_workers_leave_while_the_simulation_settles():
    def main() -> None:
        done = sync.Event()
        workers.shared_pool().submit(done.set)
        done.wait()

    sim = Simulation(4)
    sim.run(main)
    assert sim.now >= workers.DEFAULT_IDLE_SECONDS  # the worker waited out its idle time, virtually


def test_an_exception_escaping_a_thread_is_a_crash():
    def main() -> None:
        def boom() -> None:
            raise ValueError("no")

        thread = sync.Thread(target=boom, name="boom")
        thread.start()
        thread.join()

    with pytest.raises(SimulationFailure) as caught:
        Simulation(6).run(main)
    assert caught.value.kind == "crash" and "ValueError: no" in caught.value.message


def test_a_real_lock_held_across_a_switch_point_is_reported_stuck():
    real = threading.Lock()

    def main() -> None:
        def grab() -> None:
            with real:
                pass

        with real:
            thread = sync.Thread(target=grab, name="grab")
            thread.start()
            sync.sleep(1.0)  # the simulator runs grab, which blocks on the real lock
        thread.join()

    with pytest.raises(SimulationFailure) as caught:
        Simulation(8, stuck_after_s=0.5).run(main)
    assert caught.value.kind == "stuck" and "grab" in caught.value.message


def test_a_run_that_never_ends_is_a_livelock():
    def main() -> None:
        flag = sync.Event()
        while not flag.is_set():
            pass

    with pytest.raises(SimulationFailure) as caught:
        Simulation(9, max_steps=500).run(main)
    assert caught.value.kind == "livelock"


def test_conditions_wake_their_waiters():
    def main() -> list[int]:
        lock = sync.Lock()
        ready = sync.Condition(lock)
        box: list[int] = []

        def consumer() -> None:
            with ready:
                while not box:
                    ready.wait()
                box.append(box[0] + 1)

        thread = sync.Thread(target=consumer, name="consumer")
        thread.start()
        sync.sleep(0.5)
        with ready:
            box.append(1)
            ready.notify()
        thread.join()
        return box

    for seed in range(5):
        assert Simulation(seed).run(main) == [1, 2]


def test_primitives_outside_a_simulation_are_the_standard_library():
    assert sync.Lock is threading.Lock and sync.Thread is threading.Thread and sync.SimpleQueue is queue.SimpleQueue
    assert abs(sync.monotonic() - time.monotonic()) < 5
