"""Hook ordering (seed 001 §6 "Event Hook Ordering", DESIGN §5) and tool updates/progress events."""

from __future__ import annotations

import threading

from loop_helpers import call, run, text_of, text_tool, tool_turn

from phi.loop.config import ToolExecution
from phi.types import ToolResult


def _hooks(log):
    def hook(name, result=None):
        def fn(*args):
            log.append(name)
            return result

        return fn

    return dict(
        before_loop=hook("before_loop", True),
        after_loop=hook("after_loop"),
        before_turn=hook("before_turn", True),
        after_turn=hook("after_turn"),
        on_error=hook("on_error"),
        before_tool_execution=lambda name, call_id, args: log.append(f"before_tool:{call_id}") or True,
        after_tool_execution=lambda name, call_id, is_error: log.append(f"after_tool:{call_id}"),
        before_tool_execution_update=lambda name, call_id, text: log.append(f"before_update:{text}") or True,
        after_tool_execution_update=lambda name, call_id, text: log.append(f"after_update:{text}"),
    )


def _event_label(event):
    kind = event.type
    if kind in ("MessageStart", "MessageEnd"):
        return f"{kind}:{event.message.role}"
    if kind in ("ToolExecutionStart", "ToolExecutionEnd"):
        return f"{kind}:{event.tool_call_id}"
    if kind == "ToolExecutionUpdate":
        return f"{kind}:{text_of(event.partial_result)}"
    return kind


def _squeeze_updates(log):
    out = []
    for item in log:
        if item == "MessageUpdate" and out and out[-1] == "MessageUpdate":
            continue
        out.append(item)
    return out


def _reporting_tool():
    def fn(args, ctx):
        if ctx.tool_call_id == "t1":
            ctx.update("half")
        return "done"

    return text_tool("work", fn)


def test_hooks_fire_in_the_documented_order_over_a_multi_turn_multi_tool_run():
    log: list[str] = []
    script = [
        tool_turn(call("t1", "work"), call("t2", "work"), text="thinking aloud"),
        tool_turn(call("t3", "work", {"x": 1})),
        {"error": {"kind": "api", "message": "boom"}},
    ]
    run(script, [_reporting_tool()], sink=lambda e: log.append(_event_label(e)),
        tool_execution=ToolExecution.SEQUENTIAL, **_hooks(log))
    tool = lambda cid: [f"before_tool:{cid}", f"ToolExecutionStart:{cid}", f"ToolExecutionEnd:{cid}",  # noqa: E731
                        f"after_tool:{cid}", "MessageStart:toolResult", "MessageEnd:toolResult"]
    expected = [
        "before_loop", "AgentStart",
        "before_turn", "TurnStart", "MessageStart:user", "MessageEnd:user",
        "MessageStart:assistant", "MessageUpdate", "MessageEnd:assistant",
        "before_tool:t1", "ToolExecutionStart:t1",
        "before_update:half", "ToolExecutionUpdate:half", "after_update:half",
        "ToolExecutionEnd:t1", "after_tool:t1", "MessageStart:toolResult", "MessageEnd:toolResult",
        *tool("t2"),
        "TurnEnd", "after_turn",
        "before_turn", "TurnStart", "MessageStart:assistant", "MessageUpdate", "MessageEnd:assistant",
        *tool("t3"),
        "TurnEnd", "after_turn",
        "before_turn", "TurnStart", "MessageStart:assistant", "MessageEnd:assistant", "on_error",
        "TurnEnd", "after_turn",
        "AgentEnd", "after_loop",
    ]
    assert _squeeze_updates(log) == expected


def test_parallel_mode_pairs_each_hook_with_its_event():
    log: list[str] = []
    lock = threading.Lock()

    def record(item):
        with lock:
            log.append(item)

    hooks = _hooks(log)
    script = [tool_turn(call("t1", "work"), call("t2", "work"), call("t3", "work")), "ok"]
    run(script, [_reporting_tool()], sink=lambda e: record(_event_label(e)), **hooks)
    for cid in ("t1", "t2", "t3"):
        start = log.index(f"ToolExecutionStart:{cid}")
        assert log[start - 1] == f"before_tool:{cid}"
        end = log.index(f"ToolExecutionEnd:{cid}")
        assert log[end + 1] == f"after_tool:{cid}"
    # Start events in call order, all before any result message; results announced after every End
    starts = [i for i, x in enumerate(log) if x.startswith("ToolExecutionStart")]
    assert [log[i] for i in starts] == ["ToolExecutionStart:t1", "ToolExecutionStart:t2", "ToolExecutionStart:t3"]
    last_end = max(i for i, x in enumerate(log) if x.startswith("ToolExecutionEnd"))
    first_result = log.index("MessageStart:toolResult")
    assert first_result > last_end


def test_on_error_is_not_called_for_a_clean_run_and_after_loop_gets_the_usage():
    seen = {}
    run([{"blocks": [{"type": "text", "chunks": ["x"]}], "usage": {"input": 3, "output": 4}}],
        on_error=lambda msg: seen.setdefault("error", msg),
        after_loop=lambda messages, usage: seen.setdefault("usage", usage),
        after_turn=lambda messages, usage: seen.setdefault("turn_usage", usage))
    assert "error" not in seen
    assert (seen["usage"].input, seen["usage"].output) == (3, 4)
    assert (seen["turn_usage"].input, seen["turn_usage"].output) == (3, 4)


def test_tool_updates_and_progress_become_events():
    def fn(args, ctx):
        ctx.progress("starting")
        ctx.update("10%")
        ctx.update(ToolResult.from_text("50%", details={"pct": 50}))
        ctx.update("secret")
        return "100%"

    after_updates = []
    out = run([tool_turn(call("t1", "job")), "ok"], [text_tool("job", fn)],
              before_tool_execution_update=lambda name, cid, text: text != "secret",
              after_tool_execution_update=lambda name, cid, text: after_updates.append(text))
    updates = out.of("ToolExecutionUpdate")
    assert [text_of(u.partial_result) for u in updates] == ["10%", "50%"]
    assert updates[1].partial_result.details == {"pct": 50}
    assert all(u.tool_call_id == "t1" and u.tool_name == "job" and u.loop_id == out.context.loop_id for u in updates)
    assert after_updates == ["10%", "50%"]  # the vetoed update calls no after hook
    (progress,) = out.of("ProgressMessage")
    assert (progress.text, progress.tool_call_id, progress.tool_name) == ("starting", "t1", "job")
    types = out.types
    start, end = types.index("ToolExecutionStart"), types.index("ToolExecutionEnd")
    assert all(start < i < end for i, t in enumerate(types) if t in ("ToolExecutionUpdate", "ProgressMessage"))
    assert text_of(out.results[0]) == "100%"


def test_updates_after_a_tool_finished_are_dropped():
    leaked = {}

    def fn(args, ctx):
        leaked["ctx"] = ctx
        return "done"

    out = run([tool_turn(call("t1", "job")), "ok"], [text_tool("job", fn)])
    leaked["ctx"].update("too late")
    leaked["ctx"].progress("too late")
    assert out.of("ToolExecutionUpdate") == [] and out.of("ProgressMessage") == []


def test_an_abandoned_tool_never_reports_after_its_end():
    # regression: a timed-out tool that keeps calling update/progress could slip an event in
    # between the loop marking it finished and emitting its ToolExecutionEnd
    for _ in range(20):
        stop = threading.Event()

        def spam(args, ctx):
            while not stop.is_set():
                ctx.update("x")
                ctx.progress("p")
            return "done"

        try:
            out = run([tool_turn(call("t1", "spam")), "ok"], [text_tool("spam", spam)], tool_timeout_ms=15)
        finally:
            stop.set()
        types = out.types
        after_end = types[types.index("ToolExecutionEnd"):]
        assert "ToolExecutionUpdate" not in after_end and "ProgressMessage" not in after_end


def _after_loop_paths():
    from phi.concurrency.cancel import CancellationToken
    from phi.context.config import ExecutionLimits

    cancelled = CancellationToken()
    cancelled.cancel()
    limits = ExecutionLimits(max_turns=1, max_total_tokens=None, max_duration=None)
    return {
        "clean": (["ok"], {}),
        "abort before start": (["never"], {"cancel": cancelled}),
        "provider error": ([{"error": {"kind": "auth", "message": "no"}}], {}),
        "limit": ([tool_turn(call("t1", "echo")), "never"], {"execution_limits": limits}),
        "before_turn veto": (["never"], {"before_turn": lambda m, i: False}),
    }


def test_after_loop_runs_once_right_after_agent_end_on_every_exit_path():
    for name, (script, settings) in _after_loop_paths().items():
        log: list[str] = []
        run(script, [text_tool("echo")], sink=lambda e: log.append(e.type),
            after_loop=lambda messages, usage: log.append("after_loop"), **settings)
        assert log.count("after_loop") == 1, name
        assert log[-2:] == ["AgentEnd", "after_loop"], name
