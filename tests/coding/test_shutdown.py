"""Graceful shutdown (seed 004 Appendix B, §2.8 item 4, §9.11) over each real wire protocol.

The parent runs a long command while its sub-agent's model is in the middle of a reply that never
ends; then the parent is aborted. By the time the parent's ``SESSION_END`` is delivered, every step
before it must have happened: the in-flight model stream was closed (the server saw the client go),
the commands' processes are gone, the child was shut down (its own ``SESSION_END`` came first) and
nothing of the child or the parent is still to be delivered (no event follows).
"""

from __future__ import annotations

import threading
import time

import pytest

from phi.coding import EventKind, SessionState

from .dialects import PROFILES, Dialect, session_for
from .test_subagents import pid_alive, wait_for_file
from .wire import Turn, server  # noqa: F401 (the fixture)

LONG = "sleep 60 & echo $! > {name}.pid; wait"


@pytest.mark.parametrize("profile", PROFILES)
def test_abort_closes_stream_kills_processes_closes_children_then_session_end(profile, server, tmp_path, nothing_left_behind):
    d = Dialect(profile)
    child_task = "Think about the design for a long time"
    server.script(child_task, Turn("Let me consider every option in great detail before I answer.", hang=True))
    server.script("Work", Turn(calls=[d.spawn(child_task), d.shell(LONG.format(name="parent"))]), Turn("never"))
    session = session_for(profile, server, str(tmp_path))
    seen: list = []
    at_end: dict = {}
    child_streaming = threading.Event()

    def on_event(event):
        seen.append(event)
        if event.session_id != session.id and event.kind == EventKind.ASSISTANT_TEXT_DELTA:
            child_streaming.set()
        if event.kind == EventKind.SESSION_END and event.session_id == session.id:
            at_end["stream_closed"] = len(server.closed_by_client)
            at_end["parent_alive"] = pid_alive(at_end["pid"])
            at_end["child_state"] = handle_state()

    def handle_state():
        (handle,) = session.subagents.handles()
        return handle.session.state

    session.subscribe(on_event, include_subagents=True)
    stream = session.submit_stream("Work on two things")
    at_end["pid"] = int(wait_for_file(tmp_path / "parent.pid"))
    assert child_streaming.wait(10), "the child's model never started its reply"
    aborted_at = time.monotonic()
    session.abort()
    assert time.monotonic() - aborted_at < 8  # SIGTERM ends `sleep` at once; no 10 s abort wait
    list(stream)
    assert stream.result(10).outcome == "aborted" and session.state == SessionState.CLOSED
    assert at_end == {"pid": at_end["pid"], "stream_closed": 1, "parent_alive": False,
                      "child_state": SessionState.CLOSED}
    ends = [(e.session_id == session.id) for e in seen if e.kind == EventKind.SESSION_END]
    assert ends == [False, True]  # the child's SESSION_END, then the parent's
    time.sleep(0.2)
    assert seen[-1].kind == EventKind.SESSION_END and seen[-1].session_id == session.id  # nothing after it
    shell_end = next(e for e in seen if e.kind == EventKind.TOOL_CALL_END and e.data["tool_name"] == "shell")
    assert shell_end.data["is_error"] and shell_end.session_id == session.id
