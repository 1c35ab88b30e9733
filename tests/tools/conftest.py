from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from phi.loop.tool import ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.tools.environment import LocalExecutionEnvironment


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


@pytest.fixture
def env(workdir: Path) -> LocalExecutionEnvironment:
    return LocalExecutionEnvironment(str(workdir))


@pytest.fixture
def ctx() -> ToolContext:
    return ToolContext("call-1", "tool", CancellationToken())


@pytest.fixture
def cancelled_ctx() -> ToolContext:
    token = CancellationToken()
    token.cancel()
    return ToolContext("call-1", "tool", token)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); look at its state
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def assert_all_dead(pids: list[int], within: float = 3.0) -> None:
    """Every pid in ``pids`` is gone (or a zombie) within ``within`` seconds; survivors are killed
    before the assertion fails so that no test leaves processes behind."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    survivors = [p for p in pids if pid_alive(p)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes survived: {survivors}"
