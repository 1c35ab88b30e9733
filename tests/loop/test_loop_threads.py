"""Threads and memory a run owns (SPEC TOOL-6, LOOP-19; issue 9 item 6).

A tool that is timed out or abandoned must not keep the interpreter alive; nothing a tool reports after
its call was answered is emitted; process-wide tables stay bounded however many short-lived agents come
and go. (The worker pool's abandoned threads and timeouts: tests/loop/test_loop_run_contract.py.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
from loop_helpers import call, run, text_tool, tool_turn

import phi.loop.arguments as arguments
from phi.loop.tool import FunctionTool
from phi.concurrency.cancel import CancellationToken
from phi.loop.identity import _loop_counters, next_loop_number
from phi.loop.arguments import _validators, validate_arguments
from phi.concurrency.workers import WorkerPool


def test_an_abandoned_tool_does_not_keep_the_process_alive():
    script = textwrap.dedent("""
        import time
        from phi import Agent, FunctionTool, ScriptedProvider
        stuck = FunctionTool("stuck", "ignores cancellation", {"type": "object"}, lambda a, c: time.sleep(30))
        agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "toolCall", "id": "t1", "name": "stuck",
                                                             "arguments": {}}]}, "done"]),
                      tools=[stuck], tool_timeout_ms=200)
        print(agent.run("go").text)
    """)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=25)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert elapsed < 6, f"the process took {elapsed:.1f}s to exit: a tool thread kept it alive"


def test_nothing_is_emitted_for_a_call_after_it_was_answered():
    stop = threading.Event()

    def chatty(args, ctx):
        while not stop.is_set():
            ctx.update("still going")
            ctx.progress("p")
            time.sleep(0.001)
        return "finally"

    try:
        out = run([tool_turn(call("t1", "chatty")), "done"], [text_tool("chatty", chatty)], tool_timeout_ms=50)
        time.sleep(0.05)  # the tool keeps reporting after it was abandoned
        late = list(out.events)
    finally:
        stop.set()
    end = [i for i, e in enumerate(late) if e.type == "ToolExecutionEnd"][0]
    assert not [e for e in late[end:] if e.type in ("ToolExecutionUpdate", "ProgressMessage")]
    assert late[-1].type == "AgentEnd"


def test_events_and_hooks_happen_on_the_run_thread():
    threads = set()

    def note(*args):
        threads.add(threading.current_thread().name)

    def tool(args, ctx):
        ctx.update("u")
        ctx.progress("p")
        return "ok"

    out = run([tool_turn(call("t1", "t"), call("t2", "t")), "done"], [text_tool("t", tool)], sink=note,
              before_tool_execution_update=note, after_tool_execution_update=note, after_tool_execution=note)
    assert threads == {"test-loop"}, threads
    assert out.of("ToolExecutionUpdate") and out.of("ProgressMessage")


def test_tool_tokens_are_released_after_each_call():
    cancel = CancellationToken()
    out = run([tool_turn(*[call(f"t{i}", "t") for i in range(20)]), tool_turn(call("u1", "t")), "done"],
              [text_tool("t")], cancel=cancel)
    assert len(out.results) == 21
    assert len(cancel._callbacks) == 0  # no child token of a finished call stays registered


def test_the_validator_cache_is_bounded():
    before = len(_validators)
    for i in range(arguments._VALIDATORS_MAX + 200):
        tool = FunctionTool(f"t{i}", "", {"type": "object", "properties": {f"p{i}": {"type": "integer"}}}, lambda a, c: "")
        assert validate_arguments(tool, {f"p{i}": 1}) is None
        assert validate_arguments(tool, {f"p{i}": "x"}) is not None
    assert before <= len(_validators) <= arguments._VALIDATORS_MAX


def test_the_loop_counter_table_is_bounded():
    for i in range(5000):
        assert next_loop_number(f"short-lived-session-{i}", "mock.m") == 1
    assert len(_loop_counters) <= 4096
    assert next_loop_number("short-lived-session-4999", "mock.m") == 2


def test_the_worker_pool_grows_on_demand_and_shrinks_when_idle():
    pool = WorkerPool(max_workers=8, idle_seconds=0.05)
    gate = threading.Event()
    finished = []
    for _ in range(20):
        pool.submit(lambda: gate.wait(5) and finished.append(1))
    time.sleep(0.05)
    assert pool.size == 8
    gate.set()
    deadline = time.monotonic() + 5
    while (len(finished) < 20 or pool.size) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(finished) == 20 and pool.size == 0
    assert all(t.daemon for t in threading.enumerate() if t.name == "phi-tool")


def test_an_inline_tool_runs_on_the_run_thread_with_the_same_events():
    where = []

    def body(args, ctx):
        where.append(threading.current_thread().name)
        ctx.update("half")
        return "done"

    hop = run([tool_turn(call("t1", "t")), "ok"], [text_tool("t", body)])
    inline_tool = text_tool("t", body)
    inline_tool.inline = True
    inline = run([tool_turn(call("t1", "t")), "ok"], [inline_tool])
    assert where[0] == "phi-tool" and where[1] == "test-loop"
    assert hop.types == inline.types
    assert [m.text for m in inline.results] == ["done"]


def test_an_inline_tool_cannot_have_a_timeout():
    import pytest

    from phi import tool
    from phi.errors import ConfigError

    with pytest.raises(ConfigError, match="inline"):
        @tool(inline=True, timeout_ms=10)
        def quick() -> str:
            """Quick."""
            return "x"


def test_tool_arguments_are_validated_once_by_the_loop():
    from phi import tool
    from phi.loop.tool import ToolContext
    from phi.errors import InvalidArgs

    @tool
    def double(n: int) -> int:
        """Double it.

        Args:
            n: The number.
        """
        return 2 * n

    def refuse():
        raise AssertionError("the @tool validated arguments the loop had already validated")

    direct_check = double._get_validator
    double._get_validator = refuse
    out = run([tool_turn(call("t1", "double", {"n": 4})), "ok"], [double])
    assert [m.text for m in out.results] == ["8"]
    double._get_validator = direct_check  # called on its own, the tool still checks its arguments
    import pytest

    with pytest.raises(InvalidArgs):
        double.execute({"n": "four"}, ToolContext("c", "double"))


def test_a_call_that_returned_in_time_keeps_its_result_when_the_runs_thread_was_busy():
    """A call returns well within its timeout while the run's thread is busy in application code (an
    ``after_tool_execution`` hook of the other call) until past that timeout: it keeps its own result
    (SPEC TOOL-6: only a call that *runs* longer than its timeout is timed out; found by the issue-36
    attack)."""
    quick_done, timed_returned = threading.Event(), threading.Event()
    began: list[float] = []

    def timed_body(args, ctx):
        began.append(time.monotonic())
        quick_done.wait(30)
        timed_returned.set()
        return "in time"

    def after(name: str, call_id: str, is_error: bool) -> None:
        if name == "quick":
            quick_done.set()
            assert timed_returned.wait(30)  # its result is posted (if it took under its 1 s, as it does)
            time.sleep(max(0.0, began[0] + 1.2 - time.monotonic()))  # this hook holds the thread past the timeout

    outcome = run([tool_turn(call("c1", "quick"), call("c2", "timed")), "done"],
                  [text_tool("quick"), text_tool("timed", timed_body, timeout_ms=1000)],
                  after_tool_execution=after)
    timed = next(m for m in outcome.results if m.tool_call_id == "c2")
    assert [b.text for b in timed.content] == ["in time"]


def test_a_call_that_ran_past_its_timeout_is_timed_out_however_late_the_run_reads_it():
    """The other side: the call finished after its deadline while the run's thread was busy — it ran
    longer than its timeout, so it is timed out even though its result was waiting."""
    quick_done, timed_returned = threading.Event(), threading.Event()
    began: list[float] = []

    def timed_body(args, ctx):
        began.append(time.monotonic())
        quick_done.wait(30)
        time.sleep(max(0.0, began[0] + 0.3 - time.monotonic()))  # past its 200 ms
        timed_returned.set()
        return "late"

    def after(name: str, call_id: str, is_error: bool) -> None:
        if name == "quick":
            quick_done.set()
            assert timed_returned.wait(30)

    outcome = run([tool_turn(call("c1", "quick"), call("c2", "timed")), "done"],
                  [text_tool("quick"), text_tool("timed", timed_body, timeout_ms=200)],
                  after_tool_execution=after)
    timed = next(m for m in outcome.results if m.tool_call_id == "c2")
    assert [b.text for b in timed.content] == ["Tool exceeded timeout of 200ms"]
