"""Timeout and cancellation end every process a command started (issue 10 item 11).

The command detaches children the ways that escape a process-group kill — ``setsid``, ``nohup ...
&`` and a Python child with ``start_new_session=True`` — records their pids, then blocks. After the
timeout or the cancellation, none of those pids may still be alive.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.tools.process import reaper_available

from .conftest import assert_all_dead

pytestmark = pytest.mark.skipif(not reaper_available(), reason="descendant tracking needs Linux /proc")

SPAWN_PY = (
    "import subprocess, sys; "
    "p = subprocess.Popen(['sleep', '300'], start_new_session=True, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.DEVNULL); print(p.pid)"
)


def detaching_command(pids: Path) -> str:
    return (
        f"setsid sleep 300 >/dev/null 2>&1 & echo $! >> {pids}; "
        f"nohup sleep 300 >/dev/null 2>&1 & echo $! >> {pids}; "
        f"{sys.executable} -c \"{SPAWN_PY}\" >> {pids}; "
        f"(setsid bash -c 'sleep 300 & echo $! >> {pids}; wait' &) ; "
        "echo started; sleep 300"
    )


def wait_for_pids(path: Path, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists():
            pids = [int(p) for p in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.02)
    raise AssertionError(f"only {path.read_text() if path.exists() else ''!r} recorded")


def test_timeout_kills_detached_descendants(env, workdir):
    pids = workdir / "pids"
    result = env.exec_command(detaching_command(pids), 1500)
    assert result.timed_out and "started" in result.stdout
    assert_all_dead(wait_for_pids(pids, 4))


def test_cancellation_kills_detached_descendants(env, workdir):
    pids = workdir / "pids"
    token = CancellationToken()

    def cancel_when_started() -> None:
        wait_for_pids(pids, 4)
        token.cancel()

    threading.Thread(target=cancel_when_started, daemon=True).start()
    started = time.monotonic()
    result = env.exec_command(detaching_command(pids), 60_000, cancel=token)
    assert result.cancelled and time.monotonic() - started < 15
    assert_all_dead(wait_for_pids(pids, 4))


def test_many_detached_children_and_sigterm_ignorers(env, workdir):
    pids = workdir / "pids"
    inner = f"trap '' TERM; sleep 300 & echo \\$! >> {pids}; echo \\$\\$ >> {pids}; wait"
    command = f"for i in $(seq 30); do setsid bash -c \"{inner}\" & done; sleep 300"
    started = time.monotonic()
    result = env.exec_command(command, 1500)
    assert result.timed_out and time.monotonic() - started < 10
    assert_all_dead(wait_for_pids(pids, 60))


def test_normal_exit_keeps_exit_status_and_signals(env):
    assert env.exec_command("exit 7", 5000).exit_code == 7
    assert env.exec_command("kill -TERM $$", 5000).exit_code == 128 + signal.SIGTERM
    assert env.exec_command("echo out; echo err >&2", 5000).output == "out\nerr\n"
    missing = env.exec_command("no-such-command-phi", 5000)
    assert missing.exit_code == 127 and "not found" in missing.stderr


@pytest.mark.parametrize("given", [{}, {"LC_CTYPE": "C", "LANG": "C"}, {"LC_CTYPE": "C.UTF-8", "X": "1"}])
def test_the_command_gets_exactly_its_environment(workdir, given):
    """Python's locale coercion in the reaper (PEP 538) must not leak into the command."""
    from phi.tools.process import run_process

    runs = [run_process(["/usr/bin/env"], cwd=str(workdir), env=given, timeout_ms=5000, kill_descendants=kd)
            for kd in (False, True)]
    assert runs[0].stdout == runs[1].stdout
    assert sorted(runs[1].stdout.split()) == sorted(f"{k}={v}" for k, v in given.items())
