"""What the run's thread reads once a deadline has passed (``ToolRunner._wait``'s backlog, SPEC TOOL-6,
CANCEL-3, LOOP-5) and the tool pool at its thread limit. Written by the second fresh attack on issue 36
against a first version of the backlog (and a pool that let a new call wait at its limit); each failed
there. Each docstring tells the window it closes."""

from __future__ import annotations

import queue
import threading
import time

import pytest
from abort_timing import abort_after_start
from loop_helpers import call, run, text_tool, tool_turn

import phi.loop.tool_execution as tool_exec
from phi.concurrency import sync
from phi.concurrency.workers import WorkerPool
from phi.loop.config import AgentContext
from phi.types import ToolResultMessage


class Boom(Exception):
    pass


def test_a_call_whose_deadline_passes_while_the_backlog_is_read_is_timed_out_though_it_returned_in_time():
    """The backlog is a snapshot taken when the *first* deadline passed; it is read (hooks run) and then
    every call past its deadline is expired. A call whose deadline passes while the backlog is being
    read (the run's thread busy in a hook) and whose tool returned in time — its outcome posted after
    the snapshot — is timed out although its result is waiting in the inbox (the claim of the change:
    "a call whose tool returned before its deadline keeps its result even if the run's thread was busy
    past that deadline"; SPEC TOOL-6: only a call that *runs* longer than its timeout times out)."""
    b_go, b_returned, c_began, c_go, c_returned = (threading.Event() for _ in range(5))
    began: dict[str, float] = {}

    def b_body(args, ctx):  # timeout 500 ms; returns well within it
        began["b"] = time.monotonic()
        b_go.wait(30)
        b_returned.set()
        return "b in time"

    def c_body(args, ctx):  # timeout 1500 ms; returns ~0.6 s in, ~0.9 s before its deadline
        began["c"] = time.monotonic()
        c_began.set()
        c_go.wait(30)
        c_returned.set()
        return "c in time"

    def after(name: str, call_id: str, is_error: bool) -> None:
        if name == "quick":  # holds the run's thread past b's deadline, b's result posted in time
            b_go.set()
            assert b_returned.wait(30) and c_began.wait(30)
            time.sleep(max(0.0, began["b"] + 0.6 - time.monotonic()))
        elif name == "b":  # read from the backlog; holds the thread past c's deadline, c returned in time
            c_go.set()
            assert c_returned.wait(30)
            time.sleep(max(0.0, began["c"] + 1.8 - time.monotonic()))

    out = run([tool_turn(call("c0", "quick"), call("c1", "b"), call("c2", "c")), "done"],
              [text_tool("quick"), text_tool("b", b_body, timeout_ms=500), text_tool("c", c_body, timeout_ms=1500)],
              after_tool_execution=after, timeout=20)
    texts = {m.tool_call_id: m.text for m in out.results}
    assert texts["c1"] == "b in time"  # held: it was in the backlog
    assert texts["c2"] == "c in time"  # it returned in time, though its deadline passed while b's hook ran


def test_a_hook_raising_while_the_backlog_is_read_loses_a_finished_calls_result():
    """The backlog is taken out of the inbox into a local deque. When application code raises while
    it is read (here ``before_tool_execution_update`` on an update of the backlog), ``_run_group``'s
    ``_keep_finished`` reads only the inbox: a call whose outcome was in the rest of the backlog is
    treated as still running and answered ``Tool execution aborted.`` in the history, though its tool
    had returned (SPEC LOOP-5: "its own result if the call had finished"). Before the backlog,
    the outcome stayed in the inbox and _keep_finished found it."""
    go, returned = threading.Event(), threading.Event()
    began: list[float] = []

    def timed_body(args, ctx):
        began.append(time.monotonic())
        go.wait(30)
        ctx.update("partial")
        returned.set()
        return "mine"

    def after(name: str, call_id: str, is_error: bool) -> None:
        if name == "quick":  # the run's thread is held past the timed call's deadline; that call returned in time
            go.set()
            assert returned.wait(30)
            time.sleep(max(0.0, began[0] + 1.2 - time.monotonic()))

    def before_update(name: str, call_id: str, text: str) -> bool:
        raise Boom("update hook")

    context = AgentContext(messages=[], tools=[text_tool("quick"), text_tool("timed", timed_body, timeout_ms=1000)])
    with pytest.raises(Boom):
        run([tool_turn(call("c1", "quick"), call("c2", "timed")), "never"], context=context,
            after_tool_execution=after, before_tool_execution_update=before_update, timeout=20)
    assert returned.is_set()
    timed = next(m for m in context.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == "c2")
    assert timed.text == "mine"  # its outcome was in the backlog when the hook raised


def test_at_the_thread_limit_a_new_call_fails_at_once_so_none_hangs_behind_an_abandoned_worker(monkeypatch):
    """Why a new call at max_threads fails at once rather than queueing behind a live worker: if that
    worker's call is then abandoned (timed out, ignoring its token), every thread runs abandoned work: nothing
    will ever take the queued call. ``_expire`` answers it "could not start" only at a deadline, so a
    call without a timeout (the default: tool_timeout_ms=None) waits until some abandoned tool returns
    — possibly never (issue-23 starvation; TOOL-6: "past the pool's thread limit a new call fails at
    once")."""
    small = WorkerPool(max_workers=2, max_threads=2, idle_seconds=5)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    release = threading.Event()
    held = threading.Event()
    try:
        stuck = small.submit(lambda: (held.set(), release.wait(60)))  # one thread runs abandoned work
        assert held.wait(10)
        stuck.abandon()
        live = text_tool("live", lambda a, c: release.wait(60) and "late", timeout_ms=300)  # ignores its token
        free = text_tool("free", lambda a, c: "free")  # no timeout: queued behind "live" at the limit
        out = run([tool_turn(call("l1", "live"), call("f1", "free")), "done"], [live, free], timeout=6)
        texts = [m.text for m in out.results]
        assert texts[0] == "Tool exceeded timeout of 300ms"
        assert texts[1].startswith("Tool free could not start:")
    finally:
        release.set()


def test_a_chatty_tool_with_a_slow_subscriber_delays_its_timeout_by_its_whole_backlog():
    """A tool posts many updates and then ignores its token; a subscriber takes ~2 ms per update, so
    updates queue up. When the deadline passes, *everything* queued is taken as the backlog and emitted
    before the call is expired: its ``ToolExecutionEnd`` comes seconds after its 200 ms deadline (SPEC
    TOOL-6: "its ToolExecutionEnd comes at its deadline"; the change's claim: "a chatty tool cannot stop
    a timeout from firing"). Before the change it ended at the deadline and the rest was dropped."""
    release = threading.Event()

    def chatty(args, ctx):
        for i in range(1500):
            ctx.update(f"u{i}")
        release.wait(30)  # ignores its token
        return "late"

    ends: list[float] = []
    began: list[float] = []

    def sink(event):
        if event.type == "ToolExecutionStart":
            began.append(time.monotonic())
        elif event.type == "ToolExecutionUpdate":
            time.sleep(0.002)
        elif event.type == "ToolExecutionEnd":
            ends.append(time.monotonic())

    try:
        out = run([tool_turn(call("c1", "chatty")), "done"], [text_tool("chatty", chatty, timeout_ms=200)],
                  sink=sink, timeout=30)
    finally:
        release.set()
    assert out.results[0].text == "Tool exceeded timeout of 200ms"
    assert ends[0] - began[0] < 1.2, f"End came {ends[0] - began[0]:.2f} s after Start (timeout 200 ms)"


@pytest.mark.parametrize("burst", ["after the abort", "before the abort"])
def test_a_chatty_tool_with_a_slow_subscriber_is_answered_at_the_grace(burst: str):
    """A tool posts a burst of updates, then ignores its token; a slow subscriber (~2 ms per update)
    lets them queue up. The call is answered ``Tool execution aborted.`` at the grace (200 ms), not
    after every queued update was emitted (SPEC CANCEL-3). Found by the second and third attacks:

    * *after the abort* — once the grace had passed, everything queued was taken as the backlog and
      emitted before the call was answered (the first backlog);
    * *before the abort* — the run's thread learned of the abort only from its marker, queued behind
      every update, so the grace itself started seconds late (the second backlog; the abort is now
      read from the run's token)."""
    release = threading.Event()

    def chatty(args, ctx):
        if burst == "after the abort":
            ctx.cancel.wait(30)
            time.sleep(0.1)  # the run's thread has seen the abort
        for i in range(1500):
            ctx.update(f"u{i}")
        release.wait(30)  # ignores its token
        return "late"

    try:
        text, seconds = abort_after_start(chatty, after_s=0.05 if burst == "after the abort" else 0.1,
                                          update_s=0.002)
    finally:
        release.set()
    assert text == "Tool execution aborted."
    assert seconds < 1.2, f"End came {seconds:.2f} s after the abort"


# --- the third attack (each failed on the second backlog) ---------------------------------------


class _SlowDonePut(queue.SimpleQueue):
    """Stands for a worker thread preempted between ``ex.returned_at = sync.monotonic()`` and
    ``inbox.put(...)`` (under load — thousands of threads, docs/many-sessions.md — a thread can wait
    a long time for the interpreter lock): the DONE of a worker arrives 0.6 s after its tool returned."""

    def put(self, item, block=True, timeout=None):  # noqa: D401
        if item[0] == "done" and threading.current_thread().name == "phi-tool":
            time.sleep(0.6)
        super().put(item, block, timeout)


def test_a_call_whose_tool_returned_in_time_is_timed_out_when_its_post_lands_after_the_snapshot(monkeypatch):
    """``_execute`` sets ``ex.returned_at`` and only then posts DONE. At the deadline ``_wait``
    snapshots the inbox, ``_returned_in_time`` looks for DONEs *in the snapshot* only, and ``_expire``
    times out every call not marked ``returned`` — it never reads ``ex.returned_at`` itself. A tool
    that returned 50 ms into a 300 ms timeout but whose post lands after the snapshot is answered
    ``Tool exceeded timeout`` (SPEC TOOL-6: only a call that *runs* longer than its timeout times
    out; the change's claim: "a call that returned in time keeps its result however late the run's
    thread reads it")."""
    monkeypatch.setattr(sync, "SimpleQueue", _SlowDonePut)

    def quick(args, ctx):
        time.sleep(0.05)
        return "in time"

    out = run([tool_turn(call("c1", "quick")), "done"], [text_tool("quick", quick, timeout_ms=300)], timeout=20)
    assert out.results[0].text == "in time"


class Weird:
    def __str__(self) -> str:
        raise RuntimeError("no text for me")


def test_a_tool_value_that_cannot_be_turned_into_text_ends_the_run_instead_of_being_its_result():
    """``_outcome`` turns a returned value into a ToolResult with ``json.dumps(default=str)``, on the
    run's thread, and catches only TypeError/ValueError. A value whose ``__str__`` raises anything else
    escapes ``_wait`` and ends the run with that exception (SPEC TOOL-7 / LOOP-5: what a *tool* raises
    — or returns — is its result, ``Tool {name} raised {ExceptionType}: {message}``; a tool bug must
    not take the loop down, as ``_execute``'s comment says)."""
    out = run([tool_turn(call("c1", "weird")), "done"], [text_tool("weird", lambda a, c: {"v": Weird()})],
              timeout=20)
    assert out.results[0].text.startswith("Tool weird raised RuntimeError")


@pytest.mark.parametrize("first, expected", [
    ("vetoed", "Tool execution skipped by before_tool_execution hook."),
    ("nowhere", "Tool nowhere not found"),
])
def test_a_call_decided_before_a_later_hook_raised_keeps_its_own_result(first: str, expected: str):
    """A reply's first call is decided without running (vetoed by ``before_tool_execution``, or a tool
    that does not exist); the hook then raises on the second call. The history keeps the first call's
    own result, the second gets ``Tool execution aborted.`` (LOOP-5: "its own result if the call had
    finished"; found by the third issue-36 attack)."""

    def before(name: str, call_id: str, args: object) -> bool:
        if name == "raiser":
            raise Boom("hook")
        return name != "vetoed"

    context = AgentContext(messages=[], tools=[text_tool("vetoed"), text_tool("raiser")])
    with pytest.raises(Boom):
        run([tool_turn(call("c1", first), call("c2", "raiser")), "never"], context=context,
            before_tool_execution=before, timeout=20)
    results = {m.tool_call_id: m.text for m in context.messages if isinstance(m, ToolResultMessage)}
    assert results == {"c1": expected, "c2": "Tool execution aborted."}
