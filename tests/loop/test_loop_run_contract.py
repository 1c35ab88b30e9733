"""The run contract, third pass (issue 23): no tool after an abort, a worker pool that cannot run dry,
and an ``abort()`` that never blocks. Each test fails on the code before the fix."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from loop_helpers import call, run, text_tool, tool_turn

import phi.loop.tool_execution as tool_exec
from phi.concurrency.cancel import CALLBACK_WAIT_S, CancellationToken
from phi.concurrency.workers import PoolExhausted, WorkerPool, stats

pytestmark = pytest.mark.usefixtures("blocking_run_path")  # the run contract on both paths (issue 36)


def test_no_tool_runs_when_the_abort_arrives_while_before_tool_execution_runs():
    """CANCEL-3: an approval prompt (the hook) is answered "yes" after the user pressed Ctrl+C."""
    cancel = CancellationToken()
    ran: list[str] = []

    def approve(name: str, call_id: str, args: object) -> bool:
        cancel.cancel()  # the abort arrives while the hook still runs ...
        return True      # ... and the hook then approves

    out = run([tool_turn(call("t1", "write")), "never"], [text_tool("write", lambda a, c: ran.append("side effect"))],
              cancel=cancel, before_tool_execution=approve)
    assert ran == []
    assert [m.text for m in out.results] == ["Tool execution aborted."]
    assert not out.of("ToolExecutionStart") and not out.of("ToolExecutionEnd")
    assert out.end.outcome.value == "aborted"


def test_no_tool_runs_when_a_subscriber_aborts_on_its_start_event():
    cancel = CancellationToken()
    ran: list[str] = []
    out = run([tool_turn(call("t1", "write")), "never"], [text_tool("write", lambda a, c: ran.append("x"))],
              cancel=cancel, sink=lambda e: cancel.cancel() if e.type == "ToolExecutionStart" else None)
    assert ran == []
    assert [(e.type, e.result.content[0].text if e.type == "ToolExecutionEnd" else "") for e in out.events
            if e.type.startswith("ToolExecution")] == [("ToolExecutionStart", ""),
                                                         ("ToolExecutionEnd", "Tool execution aborted.")]


def test_no_tool_runs_when_the_abort_arrives_while_the_call_waits_for_a_worker(monkeypatch):
    small = WorkerPool(max_workers=1, idle_seconds=1)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    gate, ran = threading.Event(), []
    small.submit(lambda: gate.wait(5))  # the only worker is busy elsewhere
    cancel = CancellationToken()

    def work(args: object, ctx: object) -> str:
        ran.append("side effect")
        return "done"

    def abort_then_free(event: object) -> None:
        if getattr(event, "type", "") == "ToolExecutionStart":
            threading.Timer(0.05, lambda: (cancel.cancel(), gate.set())).start()

    out = run([tool_turn(call("t1", "write")), "never"], [text_tool("write", work)], cancel=cancel,
              sink=abort_then_free, tool_abort_grace_ms=2000)
    time.sleep(0.1)
    assert ran == [] and [m.text for m in out.results] == ["Tool execution aborted."]


def test_a_call_waiting_for_a_worker_is_not_timed_out_its_clock_starts_when_it_runs(monkeypatch, caplog):
    """TOOL-6: a call that waits for phi's own pool is not the tool being slow. Here it waits
    (well past its 200 ms timeout) until the only worker is free, then runs and answers."""
    small = WorkerPool(max_workers=1, idle_seconds=1)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    monkeypatch.setattr(tool_exec, "SLOW_START_S", 0.0)  # any wait is said
    monkeypatch.setattr(tool_exec, "_last_slow_start", [float("-inf")])  # (at most one warning each 10 s)
    gate = threading.Event()
    small.submit(lambda: gate.wait(10))  # the only worker: busy, not abandoned

    def free_the_worker(event: object) -> None:
        if getattr(event, "type", "") == "ToolExecutionStart":  # the call is queued behind the busy worker
            threading.Timer(0.5, gate.set).start()

    with caplog.at_level(logging.WARNING, logger="phi.loop.tool_execution"):
        out = run([tool_turn(call("t1", "t")), "done"], [text_tool("t", lambda a, c: "ran")], tool_timeout_ms=200,
                  sink=free_the_worker, timeout=10)
    assert [m.text for m in out.results] == ["ran"]
    assert "waited" in caplog.text and "max_workers=1" in caplog.text
    assert "every worker is busy; phi.configure_tool_pool(max_workers=...)" in caplog.text


def test_a_call_still_times_out_on_its_own_time_once_it_runs(monkeypatch):
    small = WorkerPool(max_workers=1, idle_seconds=1)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    release = threading.Event()
    try:
        out = run([tool_turn(call("t1", "slow")), "done"],
                  [text_tool("slow", lambda a, c: release.wait(10) and "late")], tool_timeout_ms=100, timeout=10)
        assert [m.text for m in out.results] == ["Tool exceeded timeout of 100ms"]
    finally:
        release.set()


def test_an_abort_ends_a_call_still_waiting_for_a_worker(monkeypatch):
    small = WorkerPool(max_workers=1, idle_seconds=1)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    gate = threading.Event()
    small.submit(lambda: gate.wait(10))
    ran: list[str] = []
    cancel = CancellationToken()

    def abort_on_start(event: object) -> None:
        if getattr(event, "type", "") == "ToolExecutionStart":
            cancel.cancel(wait=False)

    try:
        out = run([tool_turn(call("t1", "t")), "never"], [text_tool("t", lambda a, c: ran.append("x") or "ran")],
                  cancel=cancel, sink=abort_on_start, tool_timeout_ms=200, tool_abort_grace_ms=100, timeout=10)
        assert [m.text for m in out.results] == ["Tool execution aborted."]
    finally:
        gate.set()
    small.submit(lambda: None)  # the freed worker takes the queued call first: it must not run it
    deadline = time.monotonic() + 5
    while small.stats().queued and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == []


def test_abandoned_workers_do_not_starve_later_calls(monkeypatch, caplog):
    """A tool that times out but ignores its token keeps its thread; later calls still run."""
    small = WorkerPool(max_workers=2, idle_seconds=1, max_threads=20)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    release = threading.Event()
    stubborn = text_tool("stubborn", lambda a, c: release.wait(10) and "late")
    try:
        with caplog.at_level(logging.WARNING, logger="phi.concurrency.workers"):
            for i in range(6):  # 3 times the pool's capacity
                out = run([tool_turn(call(f"s{i}", "stubborn")), "ok"], [stubborn], tool_timeout_ms=50, timeout=10)
                assert out.results[0].text == "Tool exceeded timeout of 50ms"
            fine = run([tool_turn(call("f1", "fine")), "ok"], [text_tool("fine", lambda a, c: "fine")], timeout=10)
        assert fine.results[0].text == "fine"
        now = small.stats()
        assert now.abandoned == 6 and now.threads >= 7
        assert "abandoned" in caplog.text
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while small.stats().abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert small.stats().abandoned == 0  # the threads came back when their tools returned


def test_past_the_thread_limit_a_call_fails_at_once_with_a_clear_error(monkeypatch):
    small = WorkerPool(max_workers=1, idle_seconds=1, max_threads=2)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    release = threading.Event()
    stubborn = text_tool("stubborn", lambda a, c: release.wait(10) and "late")
    try:
        for i in range(2):
            run([tool_turn(call(f"s{i}", "stubborn")), "ok"], [stubborn], tool_timeout_ms=30, timeout=10)
        assert small.stats().abandoned == 2
        with pytest.raises(PoolExhausted, match="ignore their cancellation"):
            small.submit(lambda: None)
        started = time.monotonic()
        out = run([tool_turn(call("x1", "fine")), "ok"], [text_tool("fine", lambda a, c: "fine")], timeout=10)
        assert out.results[0].is_error and out.results[0].text.startswith("Tool fine could not start:")
        assert time.monotonic() - started < 2
    finally:
        release.set()


def test_the_shared_pool_reports_its_state():
    now = stats()
    assert now.threads == now.busy + now.abandoned + now.idle
    assert now.max_workers == 1024 and now.max_threads >= now.max_workers


def test_abort_returns_at_once_even_when_a_tool_cancel_callback_blocks():
    """LOOP-19: cancelling never blocks, whatever a callback does."""
    release = threading.Event()

    def tool(args: object, ctx: object) -> str:
        ctx.cancel.on_cancel(lambda: release.wait(10))  # type: ignore[attr-defined]
        ctx.cancel.wait(10)  # type: ignore[attr-defined]
        return "stopped"

    cancel = CancellationToken()
    timings: list[float] = []

    def later() -> None:
        time.sleep(0.05)
        started = time.monotonic()
        cancel.cancel()
        timings.append(time.monotonic() - started)

    aborter = threading.Thread(target=later, daemon=True)

    def abort_when_running(event: object) -> None:
        if getattr(event, "type", "") == "ToolExecutionStart":
            aborter.start()

    try:
        run([tool_turn(call("t1", "t")), "never"], [text_tool("t", tool)], cancel=cancel, sink=abort_when_running)
        aborter.join(5)
        assert timings and timings[0] < CALLBACK_WAIT_S + 0.3
    finally:
        release.set()


def test_callbacks_run_in_order_per_token_after_the_whole_tree_is_marked():
    """CANCEL-1: each token's callbacks run in registration order; every token of the tree reports
    cancelled before any callback runs (a slow callback of one token never delays another's mark)."""
    parent, seen = CancellationToken(), []
    child = parent.child_token()
    grandchild = child.child_token()
    parent.on_cancel(lambda: seen.append(("parent 1", child.is_cancelled(), grandchild.is_cancelled())))
    child.on_cancel(lambda: seen.append(("child", parent.is_cancelled(), grandchild.is_cancelled())))
    parent.on_cancel(lambda: seen.append(("parent 2", True, True)))
    parent.cancel()
    assert child.is_cancelled() and grandchild.is_cancelled()
    assert sorted(seen) == [("child", True, True), ("parent 1", True, True), ("parent 2", True, True)]
    assert [name for name, *_ in seen if name.startswith("parent")] == ["parent 1", "parent 2"]


def test_a_blocking_callback_does_not_delay_a_sibling_token():
    """issue 30: tool A's cancellation callback blocks; tool B's token is cancelled — and its own
    callback runs — at once, not when A's callback returns."""
    run_token = CancellationToken()
    a, b = run_token.child_token(), run_token.child_token()
    release, b_called = threading.Event(), threading.Event()
    a.on_cancel(lambda: release.wait(10))
    b.on_cancel(b_called.set)
    try:
        run_token.cancel(wait=False)
        assert b.is_cancelled() and a.is_cancelled()
        assert b_called.wait(5)
    finally:
        release.set()


def test_reset_lets_no_steering_of_the_old_conversation_into_the_new_one():
    """A run that took a steering message gives it back as it ends; after reset() it must not reach the
    next conversation (issue 23 item 4)."""
    from phi import Agent, ScriptedProvider

    provider = ScriptedProvider(["new answer"])
    holder: dict[str, Agent] = {}

    def before_turn(messages: list[object], turn_index: int) -> bool:
        holder["agent"].reset()  # from the run's own thread: the run ends right after
        return False

    agent = holder["agent"] = Agent(provider=provider, before_turn=before_turn)
    agent.steer("old steering")
    agent.run("old prompt")
    assert not agent.steering_queue and agent.messages == []
    agent.config.before_turn = None
    agent.run("new prompt")
    sent = [m.text for m in provider.calls[0].messages]
    assert sent == ["new prompt"]


def test_subscribers_see_one_run_after_the_other_never_concurrently():
    """issue 23 item 5: the agent is idle before AgentEnd reaches subscribers (AGENT-1), yet a run started
    in that window delivers nothing until the previous run's AgentEnd was delivered."""
    from phi import Agent, ScriptedProvider

    agent = Agent(provider=ScriptedProvider(["one", "two"]))
    seen: list[tuple[str, str]] = []
    active, overlaps = [0], [0]
    lock = threading.Lock()

    def slow_subscriber(event: object) -> None:
        with lock:
            active[0] += 1
            overlaps[0] = max(overlaps[0], active[0])
        if getattr(event, "type", "") == "AgentEnd":
            time.sleep(0.2)  # a slow subscriber: the next run is started meanwhile
        seen.append((event.type, getattr(event, "loop_id", "")))  # type: ignore[attr-defined]
        with lock:
            active[0] -= 1

    agent.subscribe(slow_subscriber)
    first = agent.prompt("first")
    assert agent.wait_for_idle(5)  # idle before AgentEnd was delivered: start the next run at once
    second = agent.prompt("second")
    first.result(timeout=5), second.result(timeout=5)
    ends = [i for i, (kind, _) in enumerate(seen) if kind == "AgentEnd"]
    starts = [i for i, (kind, _) in enumerate(seen) if kind == "AgentStart"]
    assert len(starts) == 2 and ends[0] < starts[1], seen
    assert overlaps[0] == 1


def test_blocking_on_a_run_inside_the_previous_runs_callback_is_refused_not_a_deadlock():
    from phi import Agent, AlreadyRunning, ScriptedProvider

    agent = Agent(provider=ScriptedProvider(["one", "two"]))
    problems: list[BaseException] = []

    def chain(event: object) -> None:
        if getattr(event, "type", "") == "AgentEnd" and not problems:
            stream = agent.prompt("second")  # starting it is fine (AGENT-1) ...
            try:
                stream.result(timeout=5)  # ... waiting for it here could never end
            except AlreadyRunning as error:
                problems.append(error)

    agent.subscribe(chain)
    agent.run("first")
    assert problems and "subscriber callback" in str(problems[0])
    assert agent.wait_for_idle(5) and [m.text for m in agent.messages][-1] == "two"


def test_run_timeout_covers_start_up_and_never_contradicts_the_outcome():
    """issue 23 item 6: ``run(timeout=)`` counts from the call (a slow tool source included), and a run
    that completed is never reported as timed out."""
    from phi import Agent, ScriptedProvider

    class SlowSource:
        def tools(self) -> list[object]:
            time.sleep(1.0)  # e.g. an MCP server listing its tools
            return []

    hanging = {"blocks": [{"type": "text", "chunks": ["x"]}], "hang_after_chunks": 1}
    agent = Agent(provider=ScriptedProvider([hanging]), tool_sources=[SlowSource()])
    started = time.monotonic()
    result = agent.run("hi", timeout=0.3)
    assert time.monotonic() - started < 1.25  # not 1.0 s of start-up plus 0.3 s more

    assert result.timed_out and result.outcome.value == "aborted"

    slow_after = Agent(provider=ScriptedProvider(["done"]), after_loop=lambda messages, usage: time.sleep(0.5))
    result = slow_after.run("hi", timeout=0.2)
    assert (result.outcome.value, result.timed_out) == ("completed", False)


def test_a_parallel_run_whose_branches_all_raised_keeps_the_prompt_and_what_the_result_reports():
    """issue 23 item 3 (AGENT-8): whatever ends a parallel run, the history is the base history plus the
    prompt plus the result's messages."""
    from phi import Agent, ScriptedProvider

    def boom(messages: list[object], turn_index: int) -> bool:
        raise RuntimeError("hook failed")

    agent = Agent(provider=ScriptedProvider(["base answer"]))
    agent.run("before")
    variants = [{"provider": ScriptedProvider(["a"]), "before_turn": boom, "config_id": "a"},
                {"provider": ScriptedProvider(["b"]), "before_turn": boom, "config_id": "b"}]
    result = agent.run_parallel("the prompt", variants)
    assert all(outcome.exception is not None for outcome in result.outcomes)
    assert [m.text for m in result.messages] == ["the prompt"]
    assert [m.text for m in agent.messages] == ["before", "base answer", "the prompt"]
    assert agent.last_loop_id == result.selected_loop_id


@pytest.mark.parametrize("hook", ["before_loop", "input_filters"])
def test_a_parallel_run_whose_branches_raised_before_taking_the_prompt_keeps_it(hook: str) -> None:
    """Found by scripts/soak.py: every branch raised before appending the prompt (a ``before_loop``
    hook or an input filter raised), so the winner's messages are empty; the run returns a result,
    no exception reaches the caller — and the prompt must still be in the history."""
    from phi import Agent, ScriptedProvider

    def boom(*args: object) -> None:
        raise RuntimeError("hook failed")

    setting: object = boom if hook == "before_loop" else [boom]
    agent = Agent(provider=ScriptedProvider(["base answer"]))
    agent.run("before")
    variants = [{"provider": ScriptedProvider(["a"]), hook: setting, "config_id": "a"},
                {"provider": ScriptedProvider(["b"]), hook: setting, "config_id": "b"}]
    result = agent.run_parallel("the prompt", variants)
    assert all(outcome.exception is not None for outcome in result.outcomes) and result.messages == []
    assert [m.text for m in agent.messages] == ["before", "base answer", "the prompt"]
    assert agent.last_loop_id == result.selected_loop_id


@pytest.mark.parametrize("method", ["reset", "close"])
def test_reset_or_close_from_a_parallel_branch_hook_does_not_wait_for_its_own_run(method: str) -> None:
    """Found by scripts/soak.py: a branch hook runs on a branch thread, not the agent's worker."""
    from phi import Agent, ScriptedProvider

    holder: dict[str, Agent] = {}
    took: list[float] = []

    def before_turn(messages: list[object], turn_index: int) -> None:
        started = time.monotonic()
        getattr(holder["agent"], method)()
        took.append(time.monotonic() - started)

    agent = holder["agent"] = Agent(provider=ScriptedProvider(default="ok"), before_turn=before_turn)
    agent.run_parallel("hi", [{}, {}])
    assert took and max(took) < 1.0, took


def test_a_queued_call_that_no_thread_will_ever_take_is_answered_not_left_hanging(monkeypatch):
    """Every thread the pool may hold runs an abandoned call: a call already queued behind them
    gets "could not start" once its timeout passes, instead of waiting forever (issue 23 stays fixed)."""
    small = WorkerPool(max_workers=1, idle_seconds=1, max_threads=1)
    monkeypatch.setattr(tool_exec, "shared_pool", lambda: small)
    release = threading.Event()
    stubborn = text_tool("stubborn", lambda a, c: release.wait(30) and "late")
    try:  # the two calls of one reply run in parallel: "fine" waits behind "stubborn" for the only thread
        first = run([tool_turn(call("s1", "stubborn"), call("f1", "fine")), "ok"],
                    [stubborn, text_tool("fine", lambda a, c: "fine")], tool_timeout_ms=200, timeout=20)
        texts = [m.text for m in first.results]
        assert texts[0] == "Tool exceeded timeout of 200ms"
        assert texts[1].startswith("Tool fine could not start:") and "ignore their cancellation" in texts[1]
    finally:
        release.set()


def test_a_larger_pool_takes_calls_already_waiting():
    pool = WorkerPool(max_workers=1, idle_seconds=1)
    gate = threading.Event()
    started: list[int] = []
    done = threading.Event()

    def work(i: int) -> None:
        started.append(i)
        if len(started) == 4:
            done.set()
        gate.wait(10)

    try:
        for i in range(4):
            pool.submit(work, i)
        pool.resize(4, None, None)
        assert done.wait(10) and sorted(started) == [0, 1, 2, 3]
    finally:
        gate.set()
