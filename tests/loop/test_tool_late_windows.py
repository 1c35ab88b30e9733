"""Windows of tool execution found by the fifth fresh attack on issue 36 (``ToolRunner._wait``,
``_returned_in_time``, ``_outcome``, ``ToolContext.update``, ``_execute``): each test failed on the code
before its fix, and its docstring names the window and the clause."""

from __future__ import annotations

import threading
import time

from loop_helpers import call, run, text_tool, tool_turn

import phi.loop.tool_execution as tool_exec
from phi.concurrency.cancel import CancellationToken
from phi.concurrency.workers import WorkerPool
from phi.errors import ToolError
from phi.loop.tool_execution import ToolRunner


# --- 2. a call's start is read from the snapshot, its return from the call -----------------------------


def test_a_call_that_started_after_the_snapshot_and_ran_past_its_timeout_keeps_its_result(monkeypatch):
    """``_returned_in_time`` learns that a call started (``working``, its real deadline) only from the
    STARTED messages in the backlog snapshot, but reads ``returned_at`` live, and ``_returned_late``
    judges a call not known to work as never late. A call waiting for a worker (busy pool, TOOL-6)
    whose provisional deadline triggers the snapshot, then starts, runs past its timeout and returns
    before the scan reads it, is marked ``returned`` and keeps its own result — it ran 300 ms with a
    200 ms timeout (TOOL-6; the claim "a call that ran past its timeout is timed out"). The run's
    thread being descheduled 0.6 s between the snapshot and the scan stands for load, as in the fourth
    attack's test_a_call_returning_between_the_scan_and_the_expiry_is_timed_out_though_it_returned_in_time."""
    small = WorkerPool(max_workers=1, max_threads=4, idle_seconds=5)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    real = ToolRunner._returned_in_time
    slept: list[bool] = []

    def descheduled(self, executions, backlog, grace_deadline):
        if not slept:
            slept.append(True)
            time.sleep(0.6)
        real(self, executions, backlog, grace_deadline)

    monkeypatch.setattr(ToolRunner, "_returned_in_time", descheduled)
    ran: dict[str, float] = {}

    def hold(args, ctx):  # holds the pool's only worker for 0.3 s
        time.sleep(0.3)
        return "held"

    def timed(args, ctx):
        ran["start"] = time.monotonic()
        time.sleep(0.3)  # longer than its 200 ms timeout
        ran["end"] = time.monotonic()
        return "ran too long"

    out = run([tool_turn(call("c1", "hold"), call("c2", "timed")), "done"],
              [text_tool("hold", hold), text_tool("timed", timed, timeout_ms=200)], timeout=20)
    texts = {m.tool_call_id: m.text for m in out.results}
    assert texts["c2"] == "Tool exceeded timeout of 200ms", f"ran {ran['end'] - ran['start']:.2f} s"


# --- 3. a ToolError's own text is read unguarded -----------------------------------------------------


class Unprintable(ToolError):
    """A tool's own error class whose ``__str__`` reads an attribute ``__init__`` never set."""

    def __str__(self) -> str:
        return self.detail  # type: ignore[attr-defined]


def test_a_tool_error_whose_text_raises_ends_the_run():
    """``_outcome`` guards the text of any other exception (``_said``) but makes a ToolError's result
    with ``str(error)`` unguarded, on the run's thread: a ToolError subclass whose ``__str__`` raises
    escapes ``_wait`` and ends the run with AttributeError (SPEC TOOL-7 / LOOP-5: what a tool raises is
    its result; the change's claim "``_said`` guards an exception's text")."""
    def bad(args, ctx):
        raise Unprintable()

    out = run([tool_turn(call("c1", "bad")), "done"], [text_tool("bad", bad)], timeout=20)
    assert out.results[0].is_error and out.results[0].text == "<Unprintable whose message could not be read>"


# --- 4. what a tool passes to on_update is used unguarded on the run's thread ---------------------------


def test_a_tool_passing_a_non_result_to_update_ends_the_run():
    """``ToolContext.update`` turns a ``str`` into a ToolResult and passes anything else as is; the run's
    thread then reads ``partial.content`` (``_text_of``) in ``_update``. A tool that streams a dict (or
    a number) ends the run with AttributeError — a tool's mistake taking the loop down (TOOL-7/LOOP-5:
    what a tool does is its result; the module docstring: only the run's thread emits, so nothing a
    worker posts may raise there)."""
    def chatty(args, ctx):
        ctx.update({"percent": 50})
        return "done"

    updates: list[str] = []

    def sink(event):
        if event.type == "ToolExecutionUpdate":
            updates.append("".join(block.text for block in event.partial_result.content))

    out = run([tool_turn(call("c1", "chatty")), "done"], [text_tool("chatty", chatty)], sink=sink, timeout=20)
    assert out.results[0].text == "done" and updates == ['{"percent": 50}']


# --- 5. a tool that raises after it was abandoned leaves a cycle: inbox -> its error -> frame -> inbox ---


def test_a_tool_raising_after_its_timeout_is_freed_without_the_collector(no_collector: None) -> None:
    """``_execute`` deletes ``ex`` so the error's traceback makes no cycle — but a call answered before
    its tool raised (timed out here; abandoned at the grace, or cut off when user code raised) posts
    its DONE into an inbox nobody reads again. The inbox holds the outcome, the outcome the error, the
    error's traceback ``_execute``'s frame, whose locals hold the inbox (and the tool, its context,
    the arguments): a cycle only a collection frees (issue 36, commit 46f37c8: "a run whose tool
    raised is freed by reference counting again"). Low severity: one cycle per such call."""
    import weakref

    from phi import Agent, ScriptedProvider, ScriptedResponse, tool

    raised = threading.Event()

    @tool(timeout_ms=200)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        time.sleep(0.5)  # past its timeout, ignoring its token
        raised.set()
        raise ValueError(f"cannot add {a} and {b}")

    script = [ScriptedResponse.from_json({"blocks": [{"type": "toolCall", "id": "c1", "name": "add",
                                                      "arguments": {"a": 1, "b": 2}}]}),
              ScriptedResponse.from_json({"blocks": [{"type": "text", "chunks": ["3"]}]})]
    agent = Agent(provider=ScriptedProvider(script), tools=[add], system_prompt="s")
    assert agent.run("go").text == "3"
    agent.wait_for_idle()
    assert raised.wait(10)
    refs = [weakref.ref(agent.tools[0])]
    del agent, add
    deadline = time.monotonic() + 3
    while refs[0]() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert refs[0]() is None
