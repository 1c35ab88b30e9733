"""A deterministic simulator of phi's own concurrency (SPEC §6) — a test utility; phi never imports it.

``Simulation(seed).run(main)`` swaps the primitives of :mod:`phi.concurrency.sync` for its own and
runs ``main`` as the first simulated thread. From then on every thread phi starts (a run's worker,
tool workers, the cancel helper, parallel branches) and every thread the test starts through
``sync.Thread`` is simulated:

* **One at a time.** Each simulated thread is a real thread, but only the one holding the baton
  runs. At every synchronisation point — a lock, condition, event or queue operation, a thread's
  start or join, a sleep, a clock read, and :meth:`Simulation.point`, which test code calls where
  it wants one (on entering application code) — a PRNG seeded from ``seed`` picks which runnable
  thread goes on. The same seed gives the same interleaving, step for step.
* **Virtual time.** ``sync.monotonic()`` reads a virtual clock that only moves when no thread can
  run: it then jumps to the earliest pending timeout or sleep. A callback that "blocks for 5 s"
  costs no real time.
* **Failures are found, not waited for.** Nobody can run and no timer is pending while ``main`` is
  still going: a :class:`SimulationFailure` of kind ``deadlock``, with every simulated thread's
  stack. The thread holding the baton blocks in something the simulator does not see (a real lock,
  a socket) for ``stuck_after_s`` real seconds: ``stuck``. More than ``max_steps`` points:
  ``livelock``. An exception escapes a simulated thread: ``crash``. Test code reports what it checks
  with :meth:`Simulation.fail`.
* **Settling.** When ``main`` returns, the other threads run on (virtual time passes, so idle tool
  workers leave) until every one has ended or ``settle_s`` virtual seconds have passed; threads
  still alive then are reported as ``leftover``.

A failure ends the simulation at once: every simulated thread is woken with
:class:`SimulationKilled` (a ``BaseException``) so it unwinds, and ``run`` raises the failure, which
carries the seed, the step, the virtual time, the last steps of the trace and the stacks.
``trace=True`` keeps every step (``Simulation.trace_lines``), which is how a seed is replayed and read.

Limits, by design: only what goes through :mod:`~phi.concurrency.sync` is a switch point, so a race
on a plain attribute is only seen at the points around it (the same contract as loom's); primitives
made before ``run`` (module-level locks) stay real and must never be held across a switch point —
if one is, the run is reported ``stuck``.
"""

from __future__ import annotations

import gc
import queue
import random
import re
import sys
import threading
import traceback
from time import monotonic as _real_monotonic
from collections import deque
from typing import Any, Callable, Generic, TypeVar

from . import sync, workers

T = TypeVar("T")

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_RUNNABLE, _BLOCKED, _DONE = "runnable", "blocked", "done"
_HERE = __file__.rsplit(".", 1)[0]
_active: Simulation | None = None


class SimulationKilled(BaseException):
    """Raised in every simulated thread once the simulation has failed, so that each unwinds."""


class SimulationFailure(Exception):
    """What a failed simulation reports: ``kind`` (deadlock, stuck, livelock, crash, leftover or a
    kind of the test's own), a message, where it happened, and every simulated thread's stack."""

    def __init__(self, kind: str, message: str, *, seed: int, step: int, now: float, recent: list[str],
                 stacks: dict[str, str]) -> None:
        self.kind, self.seed, self.step, self.now = kind, seed, step, now
        self.recent, self.stacks = recent, stacks
        self.message = message
        super().__init__(kind, message)

    def __str__(self) -> str:
        return f"{self.kind} (seed {self.seed}, step {self.step}, t={self.now:.3f}s): {self.message}"

    def report(self) -> str:
        """The failure with the last steps before it and every simulated thread's stack."""
        parts = [str(self), "", "last steps:", *("  " + line for line in self.recent)]
        for name, stack in self.stacks.items():
            parts += ["", f"thread {name}:", stack.rstrip()]
        return "\n".join(parts)


class _Waitable:
    """Something threads block on: the threads waiting, oldest first."""

    __slots__ = ("waiters",)

    def __init__(self) -> None:
        self.waiters: list[SimThread] = []


def _simulation() -> Simulation:
    sim = _active
    if sim is None:
        raise RuntimeError("a simulated primitive was used outside its simulation")
    return sim


# --------------------------------------------------------------------------- threads


class SimThread(threading.Thread):
    """A real thread that runs only when the simulator hands it the baton (``sync.Thread``)."""

    def __init__(self, group: None = None, target: Callable[..., object] | None = None, name: str | None = None,
                 args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None, *,
                 daemon: bool | None = None) -> None:
        sim = _simulation()
        self.sim_id = len(sim.names)
        label = f"{name or 'thread'}#{self.sim_id}"
        super().__init__(group, target, label, args, kwargs, daemon=True)
        self._sim = sim
        self.baton = threading.Lock()  # the thread runs only while it holds this (the simulator hands it over)
        self.baton.acquire()
        self.state = _RUNNABLE
        self.waitable: _Waitable | None = None
        self.deadline: float | None = None
        self.timed_out = False
        self.ended = _Waitable()
        self.started_ = False
        sim.names.append(label)
        sim.all_threads.append(self)

    def start(self) -> None:
        sim = self._sim
        sim.check_current()
        if self.started_:
            raise RuntimeError("threads can only be started once")
        self.started_ = True
        sim.threads.append(self)
        threading.Thread.start(self)
        sim.point("start", self.name)

    def run(self) -> None:
        sim = self._sim
        self.baton.acquire()
        try:
            if not sim.killed:
                threading.Thread.run(self)
        except SimulationKilled:
            pass
        except BaseException as error:  # an exception that escapes a thread is a finding
            sim.crashed(self, error)
        finally:
            sim.exit(self)

    def join(self, timeout: float | None = None) -> None:
        sim = self._sim
        sim.point("join", self.name)
        deadline = None if timeout is None else sim.now + max(0.0, timeout)
        while self.state != _DONE:
            remaining = None if deadline is None else deadline - sim.now
            if remaining is not None and remaining <= 0:
                return
            sim.block(self.ended, remaining)

    def is_alive(self) -> bool:
        return self.started_ and self.state != _DONE


# --------------------------------------------------------------------------- primitives


class SimLock:
    """``threading.Lock`` under the simulator (any thread may release it)."""

    def __init__(self) -> None:
        self._sim = _simulation()
        self.label = self._sim.label("lock")
        self._owner: SimThread | None = None
        self._waiting = _Waitable()

    def acquire(self, blocking: bool = True, timeout: float | None = -1) -> bool:
        sim = self._sim
        sim.point("acquire", self.label)
        if self._owner is None:
            self._owner = sim.current
            return True
        if not blocking or timeout == 0:
            return False
        deadline = None if timeout is None or timeout < 0 else sim.now + timeout
        while self.locked():  # read afresh: other threads take and release the lock while this one blocks
            remaining = None if deadline is None else deadline - sim.now
            if (remaining is not None and remaining <= 0) or not sim.block(self._waiting, remaining):
                if not self.locked():
                    break
                return False
        self._owner = sim.current
        return True

    def release(self) -> None:
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        self._owner = None
        self._sim.wake(self._waiting)

    def locked(self) -> bool:
        return self._owner is not None

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    # what a SimCondition needs of its lock
    def release_save(self) -> int:
        """Release the lock for a condition wait; returns what :meth:`acquire_restore` needs back."""
        self.release()
        return 1

    def acquire_restore(self, saved: int) -> None:
        """Take the lock again after a condition wait (``saved`` from :meth:`release_save`)."""
        self.acquire()

    def is_owned(self) -> bool:
        """Whether the running simulated thread holds the lock."""
        return self._owner is self._sim.current


class SimRLock(SimLock):
    """``threading.RLock`` under the simulator."""

    def __init__(self) -> None:
        super().__init__()
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float | None = -1) -> bool:
        if self._owner is not None and self._owner is self._sim.current:
            self._count += 1
            return True
        if super().acquire(blocking, timeout):
            self._count = 1
            return True
        return False

    __enter__ = acquire

    def release(self) -> None:
        if self._owner is not self._sim.current:
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            super().release()

    def release_save(self) -> int:
        count, self._count = self._count, 1
        self.release()
        return count

    def acquire_restore(self, saved: int) -> None:
        self.acquire()
        self._count = saved


class SimCondition:
    """``threading.Condition`` under the simulator."""

    def __init__(self, lock: SimLock | None = None) -> None:
        self._sim = _simulation()
        self.label = self._sim.label("condition")
        self._lock = lock if lock is not None else SimRLock()
        self._waiting = _Waitable()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._lock.is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        saved = self._lock.release_save()
        try:
            return self._sim.block(self._waiting, timeout)
        finally:
            self._lock.acquire_restore(saved)

    def wait_for(self, predicate: Callable[[], T], timeout: float | None = None) -> T:
        sim = self._sim
        deadline = None if timeout is None else sim.now + timeout
        result = predicate()
        while not result:
            remaining = None if deadline is None else deadline - sim.now
            if remaining is not None and remaining <= 0:
                break
            self.wait(remaining)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._lock.is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        self._sim.wake(self._waiting, n)

    def notify_all(self) -> None:
        self.notify(len(self._waiting.waiters))


class SimEvent:
    """``threading.Event`` under the simulator."""

    def __init__(self) -> None:
        self._sim = _simulation()
        self.label = self._sim.label("event")
        self._flag = False
        self._waiting = _Waitable()

    def is_set(self) -> bool:
        flag = self._flag  # read, then switch: what was read may be stale when the caller acts on it
        self._sim.point("event.is_set", self.label)
        return flag

    def set(self) -> None:
        self._sim.point("event.set", self.label)
        self._flag = True
        self._sim.wake(self._waiting)

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        sim = self._sim
        sim.point("event.wait", self.label)
        if self._flag:
            return True
        if timeout is not None and timeout <= 0:
            return False
        sim.block(self._waiting, timeout)
        return self._flag


class SimSimpleQueue(Generic[T]):
    """``queue.SimpleQueue`` under the simulator."""

    def __init__(self) -> None:
        self._sim = _simulation()
        self.label = self._sim.label("queue")
        self._items: deque[T] = deque()
        self._waiting = _Waitable()

    def put(self, item: T, block: bool = True, timeout: float | None = None) -> None:
        self._sim.point("queue.put", self.label)
        self._items.append(item)
        self._sim.wake(self._waiting, 1)

    def put_nowait(self, item: T) -> None:
        self.put(item)

    def get(self, block: bool = True, timeout: float | None = None) -> T:
        sim = self._sim
        sim.point("queue.get", self.label)
        deadline = None if timeout is None else sim.now + timeout
        while not self._items:
            remaining = None if deadline is None else deadline - sim.now
            if not block or (remaining is not None and remaining <= 0):
                raise queue.Empty
            sim.block(self._waiting, remaining)
        item = self._items.popleft()
        if self._items:
            sim.wake(self._waiting, 1)  # a getter woken together with this one goes on
        return item

    def get_nowait(self) -> T:
        return self.get(False)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


# --------------------------------------------------------------------------- the scheduler


class Simulation:
    """One seeded, replayable run of simulated threads (see the module docstring).

    ``preemption``: the chance that a switch point hands over to another runnable thread (default:
    drawn from the seed, so that both long runs and fine interleavings are explored).
    """

    def __init__(self, seed: int, *, preemption: float | None = None, trace: bool = False,
                 max_steps: int = 2_000_000, settle_s: float = 300.0, stuck_after_s: float = 10.0,
                 epoch: float = 1_800_000_000.0) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.preemption = preemption if preemption is not None else self.rng.choice((0.05, 0.2, 0.5, 1.0))
        self.now = 0.0
        self.step = 0
        self.epoch = epoch
        self.max_steps = max_steps
        self.settle_s = settle_s
        self.stuck_after_s = stuck_after_s
        self.threads: list[SimThread] = []  # started and not ended, in start order
        self.names: list[str] = []
        self.current: SimThread | None = None
        self.killed = False
        self.failure: SimulationFailure | None = None
        self.trace_lines: list[str] | None = [] if trace else None
        self.recent: deque[tuple[int, float, str, str, object]] = deque(maxlen=80)
        self.main: SimThread | None = None
        self.main_done = False
        self.settle_deadline: float | None = None
        self._finished = threading.Event()  # real: the controller waits on it
        self._every_step: list[Callable[[], None]] = []
        self._labels = 0
        self._aliases: dict[str, str] = {}
        self.all_threads: list[SimThread] = []
        self._result: Any = None

    # ----------------------------------------------------------------- running

    def run(self, main: Callable[[], T]) -> T:
        """Run ``main`` as the first simulated thread, then let the others settle; returns what
        ``main`` returned, or raises the :class:`SimulationFailure`."""
        global _active
        if _active is not None:
            raise RuntimeError("a simulation is already running in this process")
        saved = {name: getattr(sync, name) for name in _SWAPPED}
        saved_pool = workers.shared_pool()
        gc_was_enabled = gc.isenabled()
        gc.disable()  # a finalizer would run at a different step on every run: not replayable
        random_state = random.getstate()
        random.seed(self.seed)  # phi's own draws (retry jitter) are part of the replay
        _active = self
        try:
            sync.Lock, sync.RLock, sync.Condition = SimLock, SimRLock, SimCondition  # type: ignore[assignment]
            sync.Event, sync.SimpleQueue, sync.Thread = SimEvent, SimSimpleQueue, SimThread  # type: ignore[assignment]
            sync.monotonic_source, sync.wall_source, sync.sleep_source = self.monotonic, self.wall_time, self.sleep
            workers.swap_shared_pool(workers.WorkerPool())  # its threads are simulated ones

            def body() -> None:
                self._result = main()

            thread = self.main = SimThread(target=body, name="main")
            thread.started_ = True
            self.threads.append(thread)
            self.current = thread
            threading.Thread.start(thread)
            thread.baton.release()
            self._watch()
        finally:
            for name, value in saved.items():
                setattr(sync, name, value)
            workers.swap_shared_pool(saved_pool)
            random.setstate(random_state)
            _active = None
            if gc_was_enabled:
                gc.enable()
        if self.failure is not None:
            raise self.failure
        result: T = self._result
        return result

    def _watch(self) -> None:
        """On the caller's (real) thread: wait for the end; report a thread stuck outside the simulator."""
        seen, quiet = -1, 0.0
        while not self._finished.wait(0.2):
            if self.step != seen:
                seen, quiet = self.step, 0.0
                continue
            quiet += 0.2
            if quiet >= self.stuck_after_s and not self.killed:
                holder = self.current
                self._record("stuck", f"thread {holder.name if holder else '?'} has not reached a switch point for "
                                      f"{self.stuck_after_s:.0f} s: it blocks in something the simulator does not "
                                      f"see (a real lock, a socket, time.sleep)")
                self._kill()
                break
        deadline = _real_monotonic() + 10.0
        for thread in self.all_threads:
            if thread.ident is not None:
                threading.Thread.join(thread, max(0.0, deadline - _real_monotonic()))
        stuck = [t.name for t in self.all_threads if threading.Thread.is_alive(t)]
        if stuck and self.failure is not None:
            self.failure.message += f" (threads that never unwound: {stuck})"

    # ----------------------------------------------------------------- what test code calls

    def point(self, what: str = "point", detail: object = None) -> None:
        """A switch point: another runnable thread may go on before this one returns."""
        if self.killed:
            raise SimulationKilled()
        cur = self.current
        if cur is None or threading.current_thread() is not cur:
            raise RuntimeError(f"simulator: {threading.current_thread().name} is not the thread holding the baton "
                               f"({cur.name if cur else None}); use sync primitives only on simulated threads")
        self.step += 1
        if self.trace_lines is not None:
            self.trace_lines.append(self._line(self.step, self.now, cur.name, what, detail))
        self.recent.append((self.step, self.now, cur.name, what, detail))
        for check in self._every_step:
            check()
        if self.step > self.max_steps:
            self.fail("livelock", f"more than {self.max_steps} switch points")
        self._switch(self._choose())

    def note(self, text: str) -> None:
        """Put ``text`` into the trace (operations and events of the test), without a switch."""
        cur = self.current
        name = cur.name if cur is not None else "-"
        if self.trace_lines is not None:
            self.trace_lines.append(self._line(self.step, self.now, name, "note", text))
        self.recent.append((self.step, self.now, name, "note", text))

    def every_step(self, check: Callable[[], None]) -> None:
        """Call ``check`` at every switch point (it reports with :meth:`fail`)."""
        self._every_step.append(check)

    def fail(self, kind: str, message: str) -> None:
        """Record a failure, end the simulation and unwind the calling thread."""
        if not self.killed:
            self._record(kind, message)
            self._kill()
        raise SimulationKilled()

    def check_current(self) -> None:
        if self.killed:
            raise SimulationKilled()
        if threading.current_thread() is not self.current:
            raise RuntimeError("simulator: a simulated primitive was used outside a simulated thread")

    def label(self, kind: str) -> str:
        """A name for a new primitive that is the same on every replay of the seed."""
        self._labels += 1
        return f"{kind}{self._labels}"

    # ----------------------------------------------------------------- the clocks

    def monotonic(self) -> float:
        self.point("clock")
        return self.now

    def wall_time(self) -> float:
        return self.epoch + self.now

    def sleep(self, seconds: float) -> None:
        self.point("sleep", seconds)
        if seconds > 0:
            self.block(_Waitable(), seconds)

    # ----------------------------------------------------------------- blocking and waking

    def block(self, waitable: _Waitable, timeout: float | None) -> bool:
        """Block the current thread on ``waitable`` until woken (True) or ``timeout`` passes (False)."""
        if self.killed:
            raise SimulationKilled()
        cur = self.current
        assert cur is not None
        if timeout is not None and timeout <= 0:
            return False
        cur.state, cur.waitable, cur.timed_out = _BLOCKED, waitable, False
        cur.deadline = None if timeout is None else self.now + timeout
        waitable.waiters.append(cur)
        self._switch(self._choose())
        return not cur.timed_out

    def wake(self, waitable: _Waitable, n: int | None = None) -> None:
        """Make the first ``n`` (default: all) threads waiting on ``waitable`` runnable."""
        if self.killed:
            return
        woken = waitable.waiters if n is None else waitable.waiters[:n]
        waitable.waiters = [] if n is None else waitable.waiters[n:]
        for thread in woken:
            thread.state, thread.waitable, thread.deadline = _RUNNABLE, None, None

    def _choose(self) -> SimThread:
        """The thread to run next; moves virtual time when nobody can run."""
        while True:
            runnable = [t for t in self.threads if t.state == _RUNNABLE]
            if runnable:
                cur = self.current
                if cur is not None and cur.state == _RUNNABLE and (
                        len(runnable) == 1 or self.rng.random() >= self.preemption):
                    return cur
                return runnable[0] if len(runnable) == 1 else self.rng.choice(runnable)
            if not self._advance_time():
                self._nobody_can_run()

    def _advance_time(self) -> bool:
        timed = [t for t in self.threads if t.state == _BLOCKED and t.deadline is not None]
        if not timed:
            return False
        moment = min(t.deadline for t in timed if t.deadline is not None)
        if self.settle_deadline is not None and moment > self.settle_deadline:
            return False
        self.now = max(self.now, moment)
        for thread in timed:
            if thread.deadline is not None and thread.deadline <= self.now:
                if thread.waitable is not None and thread in thread.waitable.waiters:
                    thread.waitable.waiters.remove(thread)
                thread.state, thread.waitable, thread.deadline, thread.timed_out = _RUNNABLE, None, None, True
        return True

    def _nobody_can_run(self) -> None:
        alive = [t.name for t in self.threads]
        if self.main_done:
            why = (f"still alive {self.settle_s:.0f} s (virtual) after main returned"
                   if self.settle_deadline is not None and any(t.deadline is not None for t in self.threads)
                   else "blocked for ever after main returned")
            self.fail("leftover", f"threads {alive} are {why}")
        self.fail("deadlock", f"no thread can run and no timer is pending; blocked: {alive}")

    def _switch(self, nxt: SimThread) -> None:
        cur = self.current
        if nxt is cur:
            return
        assert cur is not None
        self.current = nxt
        nxt.baton.release()
        cur.baton.acquire()
        if self.killed:
            raise SimulationKilled()

    # ----------------------------------------------------------------- thread ends

    def crashed(self, thread: SimThread, error: BaseException) -> None:
        if not self.killed:
            detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            self._record("crash", f"thread {thread.name} raised {type(error).__name__}: {error}\n{detail}")
            self._kill()

    def exit(self, thread: SimThread) -> None:
        """``thread`` has ended: hand the baton on (it never waits again)."""
        thread.state = _DONE
        try:
            self.threads.remove(thread)
        except ValueError:
            pass
        if self.killed:
            return
        self.wake(thread.ended)
        if thread is self.main:
            self.main_done = True
            self.settle_deadline = self.now + self.settle_s
        if not self.threads:
            self.current = None
            self._finished.set()
            return
        try:
            nxt = self._choose()  # the ended thread is not runnable: another one is picked
        except SimulationKilled:
            return
        self.current = nxt
        nxt.baton.release()

    # ----------------------------------------------------------------- failing

    def _record(self, kind: str, message: str) -> None:
        if self.failure is not None:
            return
        self.failure = SimulationFailure(
            kind, _UUID.sub(self._alias, message), seed=self.seed, step=self.step, now=self.now,
            recent=[self._line(*entry) for entry in self.recent], stacks=self._stacks())

    def _stacks(self) -> dict[str, str]:
        frames = sys._current_frames()  # pyright: ignore[reportPrivateUsage]  # no public API for it
        stacks: dict[str, str] = {}
        me = threading.get_ident()
        for thread in self.threads:
            frame = frames.get(thread.ident or -1)
            if frame is None:
                continue
            lines = traceback.format_stack(frame)
            if thread.ident != me:  # a parked thread: cut the simulator's own frames at the end
                while lines and _HERE in lines[-1]:
                    lines.pop()
            stacks[thread.name] = "".join(lines)
        return stacks

    def _kill(self) -> None:
        """Wake every parked thread with SimulationKilled; the controller waits for them to unwind."""
        self.killed = True
        me = threading.current_thread()
        for thread in list(self.threads):
            if thread is not me and thread.state != _DONE:
                try:
                    thread.baton.release()
                except RuntimeError:  # not parked (a thread stuck outside the simulator)
                    pass
        self._finished.set()

    def _line(self, step: int, now: float, name: str, what: str, detail: object) -> str:
        text = "" if detail is None else f" {detail}"
        return _UUID.sub(self._alias, f"{step:>7} {now:9.3f}s {name:<24} {what}{text}")

    def _alias(self, match: re.Match[str]) -> str:
        """A random id (UUID) as a short name in order of first appearance, so a replay reads the same."""
        return self._aliases.setdefault(match.group(0), f"<id{len(self._aliases) + 1}>")


_SWAPPED = ("Lock", "RLock", "Condition", "Event", "SimpleQueue", "Thread", "monotonic_source", "wall_source",
            "sleep_source")


def current() -> Simulation | None:
    """The simulation running now, if any."""
    return _active


__all__ = ["Simulation", "SimulationFailure", "SimulationKilled", "SimThread", "current"]
