"""Fixtures shared by the coding-layer tests."""

from __future__ import annotations

import os
import threading
import time

import pytest

#: Threads that outlive a session by design: the shared tool worker pool (phi/concurrency/workers.py)
#: and the one watchdog of every model call's time bounds (phi/providers/watchdog.py).
SHARED_THREADS = ("phi-tool", "phi-call-watchdog")


def session_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("phi") and t.name not in SHARED_THREADS}


def child_processes() -> list[int]:
    """Live (not zombie) processes whose parent is this test process (a command's own background jobs
    are checked by pid in the tests that start them: once their shell is gone they belong to init)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.append(int(entry))
    return found


@pytest.fixture
def nothing_left_behind():
    """After the test: no session thread still running, no child process still alive (SPEC CODE-10)."""
    before, older = session_threads(), set(child_processes())  # e.g. a session-wide local model server

    def left() -> list[int]:
        return [pid for pid in child_processes() if pid not in older]

    yield
    deadline = time.monotonic() + 10
    while (session_threads() - before or left()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not session_threads() - before, f"threads left: {session_threads() - before}"
    assert not left(), f"processes left: {left()}"
