"""What the tests of an abort's grace share (tests/loop/test_tool_backlog.py, test_tool_wind_down.py):
one tool call, aborted a moment after its ToolExecutionStart, and how long its End took after that."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from loop_helpers import call, run, text_tool, tool_turn

from phi.concurrency.cancel import CancellationToken


def abort_after_start(body: Callable[[Any, Any], Any], *, after_s: float, cancel: CancellationToken | None = None,
                      update_s: float = 0.0, grace_ms: int = 200) -> tuple[str, float]:
    """Run one call of ``body``, abort ``after_s`` after its ToolExecutionStart (on ``cancel``, the
    run's token), with a subscriber that takes ``update_s`` per ToolExecutionUpdate. Returns the call's
    result text and the seconds from the abort to its ToolExecutionEnd."""
    token = cancel or CancellationToken()
    marks: dict[str, float] = {}

    def sink(event: Any) -> None:
        if event.type == "ToolExecutionStart":
            threading.Timer(after_s, lambda: (marks.setdefault("abort", time.monotonic()), token.cancel())).start()
        elif event.type == "ToolExecutionUpdate" and update_s:
            time.sleep(update_s)
        elif event.type == "ToolExecutionEnd":
            marks["end"] = time.monotonic()

    out = run([tool_turn(call("c1", "t")), "never"], [text_tool("t", body)], cancel=token, sink=sink,
              tool_abort_grace_ms=grace_ms, timeout=30)
    return out.results[0].text, marks["end"] - marks["abort"]
