"""Cancelling a command (issue 11 item 5, SPEC §9.1 "Command execution").

The wait for a command is woken by the cancellation itself (a self-pipe written from the token's
callback), never by a polling timer; the call returns with the output written so far while the
SIGTERM → grace → SIGKILL sequence finishes in the background, and that sequence still leaves no
process, thread or zombie behind.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.tools import process
from phi.tools.process import KILL_GRACE_SECONDS, reaper_available, run_process

from .conftest import assert_all_dead
from .test_process_tree import wait_for_pids


def zombie_children() -> set[int]:
    """Pids of this process's children that exited and were not reaped."""
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            found.add(int(name))
    return found


def wait_for_background_stops(within: float) -> None:
    deadline = time.monotonic() + within
    while process.stopping_count():
        assert time.monotonic() < deadline, "the background stop of a cancelled command never ended"
        time.sleep(0.05)


def cancel_when(ready: threading.Event, token: CancellationToken, settle: float = 0.0) -> list[float]:
    """Cancel ``token`` from another thread once ``ready`` is set; returns [cancel time]."""
    cancelled_at: list[float] = []

    def run() -> None:
        ready.wait(20)
        time.sleep(settle)
        cancelled_at.append(time.monotonic())
        token.cancel()

    threading.Thread(target=run, daemon=True).start()
    return cancelled_at


@pytest.mark.parametrize("kill_descendants", [True, False], ids=["reaper", "process-group"])
def test_cancellation_wakes_the_wait_instead_of_a_timer(workdir, monkeypatch, kill_descendants):
    # With a 30 s poll interval a loop that looks for cancellation between selects would now sleep
    # for 30 s; the call must return because the cancellation itself woke it.
    monkeypatch.setattr(process, "_POLL_SECONDS", 30.0)
    token = CancellationToken()
    started = threading.Event()
    cancelled_at = cancel_when(started, token, settle=0.2)  # the loop is back in select by then
    outcome = run_process(["/bin/bash", "-c", "echo started; exec sleep 60"], cwd=str(workdir), env=None,
                          timeout_ms=120_000, cancel=token, on_output=lambda name, data: started.set(),
                          kill_descendants=kill_descendants)
    assert time.monotonic() - cancelled_at[0] < 5
    assert outcome.cancelled and not outcome.timed_out and outcome.stdout == "started\n"
    wait_for_background_stops(within=KILL_GRACE_SECONDS + 5)


@pytest.mark.skipif(not reaper_available(), reason="descendant tracking needs Linux /proc")
def test_cancelled_call_returns_before_the_grace_period_and_leaves_nothing(env, workdir):
    pids = workdir / "pids"
    inner = f"trap '' TERM; sleep 300 & echo \\$! >> {pids}; echo \\$\\$ >> {pids}; wait"
    command = f"echo started; for i in $(seq 5); do setsid bash -c \"{inner}\" & done; sleep 300"
    token = CancellationToken()
    recorded = threading.Event()
    threading.Thread(target=lambda: (wait_for_pids(pids, 10), recorded.set()), daemon=True).start()
    cancelled_at = cancel_when(recorded, token)
    zombies_before = zombie_children()
    result = env.exec_command(command, 60_000, cancel=token)
    # The SIGTERM-ignoring shells keep the tree alive for the whole grace period; the call does not
    # wait for it (it used to take KILL_GRACE_SECONDS).
    assert time.monotonic() - cancelled_at[0] < KILL_GRACE_SECONDS / 2
    assert result.cancelled and result.stdout.startswith("started\n")
    assert_all_dead(wait_for_pids(pids, 10), within=KILL_GRACE_SECONDS + 3)
    wait_for_background_stops(within=5)
    assert zombie_children() <= zombies_before


def test_a_command_cleaning_up_after_sigterm_may_still_write(env, workdir: Path):
    """Output is still read (and dropped) after the call returned, so a SIGTERM handler that
    prints is not killed by SIGPIPE before it finished its cleanup."""
    done = workdir / "done"
    command = f"trap 'sleep 0.3; echo cleaning up; echo cleaned > {done}' TERM; echo started; sleep 60 & wait"
    token = CancellationToken()
    started = threading.Event()
    cancel_when(started, token, settle=0.1)
    result = env.exec_command(command, 60_000, cancel=token, on_output=lambda name, data: started.set())
    assert result.cancelled and result.stdout == "started\n"
    deadline = time.monotonic() + KILL_GRACE_SECONDS + 3
    while not (done.exists() and done.read_text() == "cleaned\n"):
        assert time.monotonic() < deadline, "the SIGTERM handler did not finish"
        time.sleep(0.05)
    wait_for_background_stops(within=5)


@pytest.mark.parametrize("kill_descendants", [True, False], ids=["reaper", "process-group"])
def test_an_exception_in_the_wait_stops_the_command(workdir, kill_descendants):
    """A KeyboardInterrupt (here raised by the output observer) leaves no process behind."""
    pidfile = workdir / "pid"

    def interrupt(name: str, data: bytes) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_process(["/bin/bash", "-c", f"echo $$ > {pidfile}; echo started; exec sleep 60"], cwd=str(workdir),
                    env=None, timeout_ms=120_000, on_output=interrupt, kill_descendants=kill_descendants)
    assert_all_dead([int(pidfile.read_text())], within=KILL_GRACE_SECONDS + 3)
    wait_for_background_stops(within=KILL_GRACE_SECONDS + 5)
