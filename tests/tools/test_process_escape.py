"""Issue 35 item 9b: a daemon that kills its parent does not escape the end of its command.

The command double-forks a daemon (a subshell starts it in its own session and exits), the
daemon waits until it has been re-parented — to the keeper of the command's tree, the subreaper —
and then does what a careless or hostile daemon does: ``kill -9`` its parent. Whether the command
then finishes, times out or is aborted, the daemon's pid must be gone once the command has ended
(SPEC §9.1: when a command returns, everything it started is ended).
"""

from __future__ import annotations

import os
import select
import signal
from pathlib import Path

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.tools.process import reaper_available, run_process

from .conftest import pid_alive

pytestmark = pytest.mark.skipif(not reaper_available(), reason="descendant tracking needs Linux /proc")

DAEMON = r"""#!/bin/bash
# The daemon ($1: the subshell that starts it): wait until that subshell is gone, so the daemon has
# been re-parented, record its pid, then kill its new parent and live on.
daemon='while kill -0 "$1" 2>/dev/null; do sleep 0.01; done
read -r stat < /proc/$$/stat; stat=${stat##*) }; set -- $stat
echo $$ > pid.tmp && mv pid.tmp pid
kill -9 "$2"
exec sleep 300'
( sub=$BASHPID; setsid bash -c "$daemon" daemon "$sub" </dev/null >/dev/null 2>&1 & )
until [ -e pid ]; do sleep 0.01; done
echo ready
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "daemon.sh"
    path.write_text(DAEMON)
    path.chmod(0o755)
    return path


def wait_gone(pid: int, within: float = 30.0) -> bool:
    """Wait for ``pid`` to end (a pidfd becomes readable when it does: no polling); True when it
    is gone. A survivor is killed, so that no test leaves it behind."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        select.select([fd], [], [], within)
    finally:
        os.close(fd)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
        return False
    return True


def daemon_pid(tmp_path: Path) -> int:
    return int((tmp_path / "pid").read_text())


def test_a_daemon_that_kills_its_parent_ends_with_the_finished_command(script, tmp_path) -> None:
    outcome = run_process(["bash", "-c", f"{script}; echo after"], cwd=str(tmp_path), env=None, timeout_ms=60_000)
    assert not outcome.timed_out
    assert wait_gone(daemon_pid(tmp_path)), "the daemon survived the command"


def test_a_daemon_that_kills_its_parent_ends_with_a_timed_out_command(script, tmp_path) -> None:
    # the command blocks once the daemon is in place; it ends by its timeout (the daemon is
    # ready long before: it needs a few milliseconds of a 3 s budget)
    outcome = run_process(["bash", "-c", f"{script}; exec sleep 300"], cwd=str(tmp_path), env=None,
                          timeout_ms=3_000)
    assert outcome.timed_out or outcome.exit_code != 0
    assert wait_gone(daemon_pid(tmp_path)), "the daemon survived the command's timeout"


def test_a_daemon_that_kills_its_parent_ends_with_an_aborted_command(script, tmp_path) -> None:
    token = CancellationToken()

    def on_output(stream: str, data: bytes) -> None:
        if b"ready" in data:
            token.cancel(wait=False)

    outcome = run_process(["bash", "-c", f"{script}; exec sleep 300"], cwd=str(tmp_path), env=None,
                          timeout_ms=120_000, cancel=token, on_output=on_output)
    assert outcome.cancelled or outcome.exit_code != 0
    assert wait_gone(daemon_pid(tmp_path)), "the daemon survived the aborted command"


def test_the_command_keeps_its_exit_status_and_output(tmp_path) -> None:
    """The extra keeper changes nothing for an ordinary command: status, signals, output."""
    outcome = run_process(["bash", "-c", "echo out; echo err >&2; exit 7"], cwd=str(tmp_path), env=None,
                          timeout_ms=60_000)
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (7, "out\n", "err\n")
    killed = run_process(["bash", "-c", "kill -TERM $$"], cwd=str(tmp_path), env=None, timeout_ms=60_000)
    assert killed.exit_code == 128 + signal.SIGTERM
