"""Windows of tool execution found by the fourth fresh attack on issue 36 (``ToolRunner._wait``,
``_returned_in_time``, ``_keep_finished``, ``_outcome``): each test failed on the code before its fix,
and its docstring names the window and the clause (SPEC TOOL-6, TOOL-7, CANCEL-3, LOOP-5)."""

from __future__ import annotations

import queue
import threading
import time

import pytest
from abort_timing import abort_after_start
from loop_helpers import call, run, text_tool, tool_turn

from phi.concurrency import sync
from phi.concurrency.cancel import CancellationToken
from phi.loop.config import AgentContext
from phi.loop.tool_execution import ToolRunner
from phi.types import ToolResultMessage


class Boom(Exception):
    pass


class Unprintable(Exception):
    """An exception whose own text cannot be made (a common bug: ``__str__`` reads an attribute that
    ``__init__`` never set)."""

    def __str__(self) -> str:
        raise AttributeError("'Unprintable' object has no attribute 'detail'")


# --- 1. the abort's wake-up waits behind the application's own callbacks on the run's token ----------


def test_a_slow_callback_on_the_runs_token_delays_the_grace_of_an_abort():
    """``_run_group`` learns of an abort only by the ``_CANCELLED`` marker its ``on_cancel`` callback
    puts in the inbox; the token's callbacks run in registration order on one helper (CANCEL-1), so an
    application callback registered on the run's token before the run (allowed to take long: LOOP-19
    "cancellation callbacks that take long go on in the background") holds the marker back. A call
    without a timeout whose tool ignores its token leaves the run's thread in ``inbox.get(timeout=None)``:
    the grace starts only when the callback returns, and the call's End comes seconds after the abort
    (CANCEL-3: running calls get their own result if they return within the grace period, else
    ``Tool execution aborted.``; the change's claim: "the abort is seen from the run's token")."""
    cancel = CancellationToken()
    callback_release, tool_release = threading.Event(), threading.Event()
    cancel.on_cancel(lambda: callback_release.wait(4))  # the application's own clean-up, slow

    def stubborn(args, ctx):
        tool_release.wait(30)  # ignores its token
        return "late"

    try:
        text, seconds = abort_after_start(stubborn, after_s=0.1, cancel=cancel)
    finally:
        callback_release.set()
        tool_release.set()
    assert text == "Tool execution aborted."
    assert seconds < 1.5, f"End came {seconds:.2f} s after the abort"


def test_a_tool_returning_long_after_the_grace_keeps_its_result_when_a_callback_holds_the_marker_back():
    """The same window, seen in the result: the tool ignores the abort and returns 1.2 s after it
    (grace 200 ms). With the ``_CANCELLED`` marker held back by a slow application callback, the run's
    thread first wakes for the tool's DONE, only then starts the grace, and keeps the tool's own
    result (CANCEL-3: "else ``Tool execution aborted.``")."""
    cancel = CancellationToken()
    callback_release = threading.Event()
    cancel.on_cancel(lambda: callback_release.wait(4))

    def slow_to_stop(args, ctx):
        ctx.cancel.wait(10)
        time.sleep(1.2)  # ignores the abort for six graces
        return "my own result"

    def sink(event):
        if event.type == "ToolExecutionStart":
            threading.Timer(0.1, cancel.cancel).start()

    try:
        out = run([tool_turn(call("c1", "slow")), "never"], [text_tool("slow", slow_to_stop)], cancel=cancel,
                  sink=sink, tool_abort_grace_ms=200, timeout=20)
    finally:
        callback_release.set()
    assert out.results[0].text == "Tool execution aborted."


# --- 2. an exception's own code (its text) escapes _outcome ------------------------------------------


def test_a_tool_raising_an_exception_whose_text_raises_ends_the_run():
    """``_outcome`` now guards the conversion of a *returned* value, but formats a *raised* exception
    with ``RAISED.format(..., message=error)`` (``str(error)``) unguarded, on the run's thread: an
    exception whose ``__str__`` raises escapes ``_wait`` and ends the run with an AttributeError
    (SPEC TOOL-7 / LOOP-5: what a tool raises is its result, ``Tool {name} raised {Type}: {message}``)."""
    def bad(args, ctx):
        raise Unprintable()

    out = run([tool_turn(call("c1", "bad")), "done"], [text_tool("bad", bad)], timeout=20)
    assert out.results[0].text.startswith("Tool bad raised Unprintable")


@pytest.mark.parametrize("ending", ["raises", "returns a value"])
def test_an_outcome_whose_own_text_raises_leaves_the_wind_down_as_it_should(ending: str):
    """In the wind-down after user code raised, ``_keep_finished`` turns the outcomes it finds into
    results. One whose own text raises (an exception's ``__str__``, or a value's met by the JSON
    encoder) once replaced the application's exception (LOOP-5: "the exception then reaches the
    caller unchanged") and skipped the loop that cancels the calls still running. Found by the third
    (a value) and fourth (an exception) attacks."""
    bad_done, stuck_began = threading.Event(), threading.Event()
    tokens: list[CancellationToken] = []

    def bad(args, ctx):
        bad_done.set()
        if ending == "raises":
            raise Unprintable()
        return {"v": Unprintable()}

    def stuck(args, ctx):
        tokens.append(ctx.cancel)
        stuck_began.set()
        ctx.cancel.wait(5)
        return "stopped"

    def before(name, call_id, args):
        if name == "raiser":
            assert stuck_began.wait(10) and bad_done.wait(10)
            time.sleep(0.2)  # "bad" has its outcome by now
            raise Boom("hook")
        return True

    context = AgentContext(messages=[], tools=[text_tool("bad", bad), text_tool("stuck", stuck), text_tool("raiser")])
    with pytest.raises(Boom):
        run([tool_turn(call("c1", "bad"), call("c2", "stuck"), call("c3", "raiser")), "never"],
            context=context, before_tool_execution=before, timeout=20)
    assert tokens and tokens[0].is_cancelled()
    results = {m.tool_call_id: m.text for m in context.messages if isinstance(m, ToolResultMessage)}
    expected = "Tool bad raised Unprintable: " if ending == "raises" else "Tool bad raised AttributeError: "
    assert results["c1"].startswith(expected) and results["c2"] == "Tool execution aborted."


# --- 3. _expire reads the clock after _returned_in_time looked -----------------------------------------


def test_a_call_returning_between_the_scan_and_the_expiry_is_timed_out_though_it_returned_in_time(monkeypatch):
    """``_wait`` scans for returned calls (``_returned_in_time``) and *then* ``_expire`` reads the clock.
    A call whose tool returns after the scan but before its deadline, when the deadline passes before
    ``_expire`` reads ``now``, is timed out though it ran for less than its timeout (TOOL-6; the
    claim "a call that returned in time keeps its result"). The run's thread being descheduled
    between the two (a few ms are enough under load; here 0.3 s once) stands for that: A's deadline
    (200 ms) triggers the scan; B returns at ~300 ms, within its 400 ms timeout; ``now`` is ~500 ms.
    Reading the clock before the scan closes it."""
    real = ToolRunner._returned_in_time
    slept: list[bool] = []

    def descheduled(self, executions, backlog, grace_deadline):
        real(self, executions, backlog, grace_deadline)
        if not slept:
            slept.append(True)
            time.sleep(0.3)

    monkeypatch.setattr(ToolRunner, "_returned_in_time", descheduled)
    release = threading.Event()

    def a_body(args, ctx):
        release.wait(30)  # ignores its token
        return "a late"

    def b_body(args, ctx):
        time.sleep(0.3)
        return "b in time"

    try:
        out = run([tool_turn(call("c1", "a"), call("c2", "b")), "done"],
                  [text_tool("a", a_body, timeout_ms=200), text_tool("b", b_body, timeout_ms=400)], timeout=20)
    finally:
        release.set()
    texts = {m.tool_call_id: m.text for m in out.results}
    assert texts["c1"] == "Tool exceeded timeout of 200ms"
    assert texts["c2"] == "b in time"


# --- 4. the wind-down does not wait for an outcome whose tool has returned ---------------------------


class _SlowDonePut(queue.SimpleQueue):
    """A worker preempted between ``ex.returned_at = ...`` and ``inbox.put(...)`` (as in
    tests/loop/test_tool_backlog.py): its DONE lands 0.6 s after its tool returned."""

    def put(self, item, block=True, timeout=None):  # noqa: D401
        if item[0] == "done" and threading.current_thread().name == "phi-tool":
            time.sleep(0.6)
        super().put(item, block, timeout)


def test_a_call_whose_tool_returned_before_user_code_raised_loses_its_result_when_its_post_is_late(monkeypatch):
    """``_returned_in_time`` treats a call with ``returned_at`` set as returned ("the outcome comes"),
    but ``_keep_finished`` reads only what was posted: a call whose tool returned before a later
    hook raised, its DONE not posted yet, gets ``Tool execution aborted.`` in the history (LOOP-5:
    "its own result if the call had finished"). Low severity: the window is a preempted worker."""
    monkeypatch.setattr(sync, "SimpleQueue", _SlowDonePut)
    returned = threading.Event()

    def quick(args, ctx):
        returned.set()
        return "mine"

    def before(name, call_id, args):
        if name == "raiser":
            assert returned.wait(10)
            time.sleep(0.1)  # its tool has returned; the worker is about to post
            raise Boom("hook")
        return True

    context = AgentContext(messages=[], tools=[text_tool("quick", quick), text_tool("raiser")])
    with pytest.raises(Boom):
        run([tool_turn(call("c1", "quick"), call("c2", "raiser")), "never"], context=context,
            before_tool_execution=before, timeout=20)
    results = {m.tool_call_id: m.text for m in context.messages if isinstance(m, ToolResultMessage)}
    assert results["c1"] == "mine"
