"""Running the branches, at most ``max_workers`` at once, here or elsewhere (SPEC §13.3, EVAL-2,
EVAL-4, EVAL-7, EVAL-8).

:func:`run_branches` is the calling thread's part: it starts branches through a runner, at most
``max_workers`` at a time, and hands every event the branches post to the sink, one at a time,
until every branch it started has ended. The branches only ever put onto one queue, so the sink
runs on the calling thread with no lock of phi's held (SPEC LOOP-19), and a slow sink never stalls a
branch.

Two runners:

* :class:`LocalRunner` — in this process, on a thread of phi's own per branch (at most
  ``max_workers`` at once) or the caller's ``ThreadPoolExecutor``. Every branch runs, a cancelled one ending at once.
* :class:`RemoteRunner` — any other executor: each branch is pickled (:mod:`phi.evaluation.remote`)
  and streams its events back live through a :class:`~phi.evaluation.relay.Relay`, which also
  carries cancellation to it. A branch that has not started when it is cancelled never starts; one
  whose worker dies while it runs fails with :class:`~phi.evaluation.model.WorkerLost` (never runs twice),
  and so does one that has not ended within its tool grace + ``CALLBACK_WAIT_S`` of an abort (its
  worker is stopped or unreachable: EVAL-4 says the run still ends). One whose ``AgentEnd`` came
  before its worker was lost has ended, as its events said.
"""

from __future__ import annotations

import concurrent.futures
import pickle
import queue
import threading
from collections import deque
from typing import Any, Callable, Protocol

from ..concurrency import sync
from ..concurrency.cancel import CALLBACK_WAIT_S
from ..errors import ConfigError
from ..events import AgentEvent
from ..log import get_logger
from ..types import AgentMessage
from .branch import Branch, BranchReport, Ended, Posted
from .model import RemoteBranchError, Sink, WorkerLost
from .relay import Relay
from .remote import RemoteBranches, run_branch_task

log = get_logger(__name__)

__all__ = ["DEFAULT_MAX_WORKERS", "LocalRunner", "RemoteRunner", "Runner", "run_branches"]

#: The default cap on branches running at once: ``min(len(configs), DEFAULT_MAX_WORKERS)``.
DEFAULT_MAX_WORKERS = 16

#: How long, in seconds, the events of a remote branch whose worker failed are still awaited — and,
#: for a branch cut off (its worker died), the executor's account of what happened.
EOF_GRACE_S = 5.0

Post = Callable[[Posted], None]


class Runner(Protocol):
    """Starts branches and learns how they ended; ``close`` releases what it holds."""

    def start(self, branch: Branch, post: Post) -> None:
        """Start ``branch``; it posts its events, then its :class:`Ended`, through ``post``."""

    def finish(self, branch: Branch, ended: Ended) -> None:
        """On the calling thread, after ``branch``'s last event: fill in how it ended."""

    def close(self) -> None:
        """Every branch has ended (or will never start): release threads, ports, pools."""


def run_branches(branches: list[Branch], runner: Runner, emit: Sink, max_workers: int) -> None:
    """Run every branch through ``runner`` and hand their events to ``emit`` on this thread.

    If ``emit`` raises, every branch is cancelled, nothing more is emitted, and the exception is
    re-raised once every started branch has ended; an exception while waiting (e.g.
    ``KeyboardInterrupt``) does the same. The caller closes ``runner``.
    """
    items: queue.SimpleQueue[Posted] = sync.SimpleQueue()
    waiting = deque(branches)
    running = 0
    failure: BaseException | None = None

    def start_more() -> None:
        nonlocal running
        while waiting and running < max_workers:
            runner.start(waiting.popleft(), items.put)
            running += 1

    def take() -> None:
        nonlocal running, failure
        index, item = items.get()
        branch = branches[index]
        if isinstance(item, Ended):
            runner.finish(branch, item)
            branch.finished = True
            running -= 1
            start_more()
        elif branch.finished:
            log.debug("an event of branch %s came after its end and is dropped", branch.context.loop_id)
        else:
            branch.observe(item)
            if failure is None:
                failure = _emit(emit, item, branches)

    try:
        start_more()
        while running:
            take()
    except BaseException:  # e.g. KeyboardInterrupt while waiting: cancel, wait for what started, re-raise
        _cancel_all(branches)
        waiting.clear()
        while running:
            take()
        raise
    if failure is not None:
        raise failure


def _emit(emit: Sink, event: AgentEvent, branches: list[Branch]) -> BaseException | None:
    """Give ``event`` to the sink; if it raises, cancel every branch and return the exception."""
    try:
        emit(event)
    except BaseException as exc:
        _cancel_all(branches)
        return exc
    return None


def _cancel_all(branches: list[Branch]) -> None:
    for branch in branches:
        branch.cancel.cancel()


# --------------------------------------------------------------------------- in this process


class LocalRunner:
    """Branches on threads of this process: a thread of phi's own per branch (``executor`` None;
    :func:`run_branches` keeps at most ``max_workers`` of them running; ``close`` joins them), or the
    caller's ``ThreadPoolExecutor`` (left running)."""

    def __init__(self, prompts: list[AgentMessage], executor: concurrent.futures.ThreadPoolExecutor | None) -> None:
        self._prompts = prompts
        self._executor = executor
        self._threads: list[threading.Thread] = []

    def start(self, branch: Branch, post: Post) -> None:
        if self._executor is None:
            def body() -> None:
                try:
                    branch.run_local(self._prompts, post)
                finally:
                    post((branch.index, Ended()))

            thread = sync.Thread(target=body, name="phi-branch", daemon=True)
            self._threads.append(thread)
            thread.start()
            return
        try:
            future = self._executor.submit(branch.run_local, self._prompts, post)
        except BaseException as exc:  # e.g. the caller's pool was shut down: this branch fails, not the run
            post((branch.index, Ended(failure=exc)))
            return
        future.add_done_callback(lambda done: post((branch.index, Ended(future=done))))

    def finish(self, branch: Branch, ended: Ended) -> None:
        future = ended.future
        if ended.failure is not None or (isinstance(future, concurrent.futures.Future) and future.cancelled()):
            branch.started = False  # it never ran
            branch.exception = ended.failure

    def close(self) -> None:
        for thread in self._threads:  # each has posted its Ended: it is past the branch's last line
            thread.join()
        self._threads = []


# --------------------------------------------------------------------------- in other processes


class _RemoteState:
    """Where one remote branch is: pending (submitted, not connected), started (told to go), never
    (cancelled before it started) or over (its end posted).

    Written by the relay's thread (``hello``, ``end``, ``eof``), the executor's (``future_done``),
    cancel callbacks, the timer and the calling thread, under ``lock``; it posts the branch's
    :class:`Ended` exactly once. No code of the application runs under the lock.
    """

    def __init__(self, index: int, relay: Relay) -> None:
        self.index = index
        self.relay = relay
        self.lock = threading.Lock()
        self.phase = "pending"
        self.post: Post | None = None
        self.future: concurrent.futures.Future[Any] | None = None
        self.finished = False  # the branch sent its end marker: its run is over
        self.eof_seen = False
        self.done = False
        self.started = False
        self.restarted = False  # the executor started it a second time: it took its first worker for lost
        self.cancelled = False  # it was told to abort while it ran
        self.unanswered = False  # ... and its connection was still open when phi stopped waiting for it
        self.waited = False  # phi stopped waiting: the grace period passed, or the run was cancelled
        self.abort_wait = EOF_GRACE_S  # how long an aborted branch may take to end (set by the runner)
        self.timer: threading.Timer | None = None

    def hello(self) -> bool:
        with self.lock:
            if self.phase == "pending":
                self.phase, self.started = "started", True
                return True
            if self.started:  # run again by the executor (Dask retries a task whose worker it took for lost)
                self.restarted = True
            return False

    def end(self) -> None:
        with self.lock:
            self.finished = True

    def eof(self) -> None:
        with self.lock:
            self.eof_seen = True
            self._end_if_over()

    def future_done(self, future: concurrent.futures.Future[Any]) -> None:
        with self.lock:
            self.done = True
            self._end_if_over()

    def cancel(self) -> None:
        """Abort the branch. A started one is told to abort and has ``abort_wait`` seconds to end — its
        peer may never answer (a stopped process, a machine gone without closing its connections):
        then it is lost (SPEC EVAL-4: cancelling, the run still ends). A wait for the executor's
        account of a branch already cut off ends at once."""
        give_up = False
        with self.lock:
            if self.phase == "started":
                self.cancelled = True
                self.relay.cancel(self.index)
                if self.timer is not None or self.eof_seen:
                    give_up = True
                else:
                    self._start_timer(self.abort_wait)
            future = self.future if self.phase == "pending" else None
            if self.phase == "pending":
                self.phase = "never"
                self._end_if_over()
        if give_up:
            self.give_up()
        if future is not None:
            future.cancel()  # frees the executor's queue; the handshake keeps it from starting if it runs

    def attach(self, future: concurrent.futures.Future[Any]) -> None:
        with self.lock:
            self.future = future
            never = self.phase == "never"
        if never:
            future.cancel()
        future.add_done_callback(self.future_done)

    def _end_if_over(self) -> None:
        """Under ``lock``: post the end once it is known.

        A started branch has ended when its end marker and end of file have arrived and its future
        is done (its report). End of file without the marker means it was cut off — its worker
        died — and it is *lost*: as soon as its future is done too (the executor's account of the
        death), or after :data:`EOF_GRACE_S` seconds (an executor may retry the task, or not notice
        a death for long). A future that failed first, or a second run of the branch that phi
        refused (the executor took its first worker for lost), waits as long for the end of file: a
        dead process's connection closes at once, a frozen or lost machine's may never. A branch
        whose run is over but whose report does not come waits as long for it."""
        if self.phase == "over" or self.post is None:
            return
        if self.phase == "never":
            ended = Ended(never_started=True)
        elif self.phase == "pending" or (self.finished and self.eof_seen and not self.waited):
            if not self.done:
                if self.phase == "started":
                    self._start_timer(EOF_GRACE_S)
                return
            ended = Ended(future=self.future)
        elif self.eof_seen and (self.done or self.waited):
            ended = Ended(future=self.future, lost=True)
        else:
            if self.eof_seen or (self.done and (_failed(self.future) or self.restarted)):
                self._start_timer(EOF_GRACE_S)
            return
        self.phase = "over"
        self.post((self.index, ended))

    def _start_timer(self, seconds: float) -> None:
        """Under ``lock``: give up on the branch in ``seconds`` (unless a timer runs already)."""
        if self.timer is None:
            self.timer = threading.Timer(seconds, self.give_up)
            self.timer.name = f"phi-relay-grace-{self.index}"
            self.timer.daemon = True
            self.timer.start()

    def give_up(self) -> None:
        """Nothing more of the branch is read or awaited (the grace period or the abort's wait passed,
        or the run was cancelled while phi waited for the executor's account): it is lost."""
        with self.lock:
            if self.phase != "started":
                return
            if not self.eof_seen:
                self.relay.drop(self.index)
                self.eof_seen = True
                self.unanswered = self.cancelled
            self.waited = True
            future = None if self.done else self.future
            self._end_if_over()
        if future is not None:
            future.cancel()  # should the executor run it again, the handshake keeps it from starting

    def account(self, cause: BaseException | None) -> str:
        """How the branch was lost, as far as phi knows (``cause``: what its future failed with)."""
        if cause is not None:
            return f"its process died ({type(cause).__name__}: {cause})"
        if self.restarted:
            return ("the executor started the branch again (it took the worker running it for lost), which phi "
                    "refused (a branch never runs twice)")
        if self.finished:  # its end marker came: only the report is missing
            when = "before the run was cancelled" if self.cancelled else f"within {EOF_GRACE_S:g} s"
            return f"its run ended, but its report did not come back {when} (its process is stopped, or died)"
        if self.unanswered:
            return (f"it did not answer the abort within {self.abort_wait:g} s (its process is stopped or its "
                    "machine unreachable); nothing more of it is read")
        if self.cancelled and self.waited:
            return ("its connection to this process closed before the branch ended, and the run was cancelled "
                    "before the executor said what happened (its process died, or the network failed)")
        return (f"its connection to this process closed before the branch ended and the executor said nothing "
                f"more within {EOF_GRACE_S:g} s (its process died, or the network failed)")

    def close(self) -> None:
        timer = self.timer
        if timer is not None:
            timer.cancel()
            timer.join()


def _failed(future: concurrent.futures.Future[Any] | None) -> bool:
    return future is None or future.cancelled() or future.exception() is not None


def _cause(future: object) -> BaseException | None:
    """What a done future failed with (None if it is not done, was cancelled or succeeded)."""
    if not isinstance(future, concurrent.futures.Future) or not future.done() or future.cancelled():
        return None
    return future.exception()


def _report(future: concurrent.futures.Future[Any] | None) -> tuple[BranchReport | None, BaseException | None]:
    """The report a done future returned, or what it failed with (neither when it is not done)."""
    if future is None or not future.done() or future.cancelled():
        return None, None
    error = future.exception()
    if error is not None:
        return None, error
    try:
        report = pickle.loads(future.result())
    except Exception as exc:  # e.g. a class in its messages that this process cannot import
        return None, exc
    if not isinstance(report, BranchReport):
        return None, RemoteBranchError(f"the worker returned {report!r}")
    return report, None


def _lost(loop_id: str, how: str, cause: BaseException | None, restarted: bool) -> WorkerLost:
    """The error of a branch whose worker was lost, saying what is known of how."""
    return WorkerLost(f"the worker running branch {loop_id} was lost: {how}", cause, restarted)


class RemoteRunner:
    """Branches in other processes through ``remote.executor``, their events through a relay."""

    def __init__(self, remote: RemoteBranches, payloads: list[bytes], base: list[AgentMessage],
                 prompts: list[AgentMessage]) -> None:
        self._remote = remote
        self._payloads = payloads
        self._base = base
        self._prompts = prompts
        try:
            self._relay = Relay(remote.relay_host, remote.relay_port, self)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {remote.relay_host}:{remote.relay_port} for remote branches: {exc}; "
                              "see RemoteBranches.relay_host / relay_port") from None
        self._states = [_RemoteState(i, self._relay) for i in range(len(payloads))]
        self._posts: dict[int, Post] = {}
        self._unlink: list[Callable[[], None]] = []

    # the relay's handler (on the relay's thread)

    def hello(self, index: int) -> bool:
        return 0 <= index < len(self._states) and self._states[index].hello()

    def frame(self, index: int, payload: bytes) -> None:
        try:
            event = pickle.loads(payload)
        except Exception as exc:
            log.error("an event of remote branch %d could not be unpickled here and is lost: %s", index, exc)
            return
        self._posts[index]((index, event))

    def end(self, index: int) -> None:
        self._states[index].end()

    def eof(self, index: int) -> None:
        self._states[index].eof()

    # the runner

    def start(self, branch: Branch, post: Post) -> None:
        state = self._states[branch.index]
        self._posts[branch.index] = post
        with state.lock:
            state.post = post
            # an aborted branch ends within its tool grace period, its callbacks within CALLBACK_WAIT_S:
            # one that has not ended by then is not going to (its process is stopped or unreachable)
            state.abort_wait = branch.config.tool_abort_grace_ms / 1000.0 + CALLBACK_WAIT_S
        self._unlink.append(branch.cancel.on_cancel(state.cancel))  # at once if it is cancelled already
        if state.phase != "pending":
            return
        host = self._remote.advertise_host or self._relay.address[0]
        try:
            future = self._remote.executor.submit(run_branch_task, self._payloads[branch.index],
                                                  (host, self._relay.address[1]), self._relay.key, branch.index,
                                                  float(self._remote.connect_timeout))
        except BaseException as exc:  # e.g. the executor was shut down: this branch fails, not the run
            with state.lock:
                failed = state.phase == "pending"  # not cancelled meanwhile (that has posted its end)
                if failed:
                    state.phase = "over"
            if failed:
                post((branch.index, Ended(failure=exc)))
            return
        state.attach(future)

    def finish(self, branch: Branch, ended: Ended) -> None:
        if ended.never_started or ended.failure is not None:
            branch.started, branch.exception = False, ended.failure
            return
        future = ended.future
        assert isinstance(future, concurrent.futures.Future)
        state = self._states[branch.index]
        report, error = _report(future)
        if report is not None and (report.started or not state.started):
            branch.apply_report(report, self._base)  # its run (or its refusal to start) as it reported it
            return
        if not state.started:  # the worker failed before the branch started (an import error, a broken pool)
            branch.started, branch.exception = False, error
            return
        cause = _cause(future)
        unreadable = error is not None and cause is None  # a report this process cannot read
        if branch.end is not None:  # its AgentEnd came: its run is over, only its report is missing
            how = f"its report could not be read ({type(error).__name__}: {error})" if unreadable \
                else f"its worker was lost: {state.account(cause)}"
            log.warning("parallel branch %s ended, but %s; its outcome is what its events said",
                        branch.context.loop_id, how)
            branch.finish_from_events(self._base)
            return
        if unreadable:
            branch.started, branch.exception = True, error
            branch.context.messages = [*self._base, *branch.announced]  # the history as far as its events told
            return
        lost = _lost(branch.context.loop_id or "", state.account(cause), cause, state.restarted)
        log.warning("parallel branch %s failed: %s", branch.context.loop_id, lost)
        branch.lose(lost, self._base, self._prompts)

    def close(self) -> None:
        for unlink in self._unlink:
            unlink()
        for state in self._states:
            state.close()
        self._relay.stop()
