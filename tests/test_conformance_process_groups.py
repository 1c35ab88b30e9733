"""The conformance runner ends what drivers start (issue 32; SPEC §10, suite DRIVERS.md §1): a
driver runs in a process group of its own; when it exits while a process it started keeps its
stdout open, that group is ended and the fixture says so (not TIMEOUT); after a run, and after
Ctrl-C, no process of a driver's group is left. Real processes throughout: a driver starts
``sleep 1000`` with its own stdout and the tests check by pid that it is gone."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from phi.conformance.runner import Outcome, load_fixtures, run_all

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

ROOT = Path(__file__).resolve().parents[1]
BASIC = next(f for f in load_fixtures() if f["id"] == "basic-text-reply")
KEPT_OPEN = "driver exited, a child kept its output open"


@pytest.fixture(autouse=True)
def phi_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def fixture(fixture_id: str) -> dict[str, Any]:
    """basic-text-reply under another id, with a time limit no test reaches: an outcome that comes
    back is decided by what happened, not by the clock."""
    return {**{k: v for k, v in BASIC.items() if k != "_path"}, "id": fixture_id, "timeout_ms": 120_000}


def gone(pid: int) -> bool:
    """No process has this pid, or only its zombie (nothing here may reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_until_gone(pid: int) -> bool:
    """SIGKILL is delivered asynchronously: wait for that (bounded), not for a fixed time."""
    deadline = time.monotonic() + 30
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return gone(pid)


def wait_for_file(path: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} was not written")


def python_driver(tmp_path: Path, body: str) -> str:
    """A Python driver: ``leave_a_child()`` starts ``sleep 1000`` with the driver's own stdout and
    records ``driver-pid sleep-pid sleep-pgid`` in ``pids``; ``serve_with(special)`` speaks protocol 2."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent('''
        import json, os, subprocess, sys, time
        from phi.conformance.driver import HELLO, run_fixture
        from phi.loop.identity import reset_loop_numbers
        PIDS = os.path.join(os.path.dirname(__file__), "pids")

        def leave_a_child():
            child = subprocess.Popen(["sleep", "1000"])  # stdout: the runner's pipe, like the driver's
            with open(PIDS, "w") as out:
                out.write(f"{os.getpid()} {child.pid} {os.getpgid(child.pid)}\\n")

        def serve_with(special):
            print(json.dumps(HELLO), flush=True)
            for line in sys.stdin:
                fixture = json.loads(line)
                reset_loop_numbers()
                if not special(fixture):
                    run_fixture(fixture)
                print(json.dumps({"kind": "done", "id": fixture["id"]}), flush=True)
        ''') + textwrap.dedent(body), encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def pids(tmp_path: Path) -> tuple[int, int, int]:
    driver, child, group = (int(n) for n in wait_for_file(tmp_path / "pids").split())
    return driver, child, group


def test_a_shell_drivers_background_sleep_is_ended_and_the_fixture_says_why(tmp_path: Path) -> None:
    script = tmp_path / "driver.sh"
    script.write_text(textwrap.dedent(f'''\
        #!/bin/sh
        sleep 1000 &
        echo "$!" > {shlex.quote(str(tmp_path / "sleep.pid"))}
        exec {shlex.quote(sys.executable)} -m phi.conformance.driver --once
        '''), encoding="utf-8")
    script.chmod(0o755)
    [outcome] = run_all(str(script), [fixture("a")], jobs=1, mode="per-fixture")
    assert outcome.status == "fail"
    assert outcome.problems[0].startswith(KEPT_OPEN), outcome.problems
    assert outcome.problems[1:] == []  # everything it wrote before it exited was read and is right
    assert wait_until_gone(int((tmp_path / "sleep.pid").read_text()))


def test_the_driver_leads_its_own_process_group_and_the_group_is_ended(tmp_path: Path) -> None:
    command = python_driver(tmp_path, '''
        leave_a_child()
        run_fixture(json.load(sys.stdin))
        sys.stdout.flush()
        os._exit(0)
        ''')
    [outcome] = run_all(command, [fixture("a")], jobs=1, mode="per-fixture")
    driver, child, group = pids(tmp_path)
    assert group == driver  # started with start_new_session: the driver's pid names its group
    assert outcome.status == "fail" and outcome.problems[0].startswith(KEPT_OPEN)
    assert wait_until_gone(child)


def test_a_persistent_driver_that_exits_leaving_a_child_fails_that_fixture_only(tmp_path: Path) -> None:
    command = python_driver(tmp_path, '''
        def special(fixture):
            if fixture["id"] == "leave":
                leave_a_child()
                sys.stdout.flush()
                os._exit(0)  # before its done line, with the child holding stdout
            return False
        serve_with(special)
        ''')
    outcomes = run_all(command, [fixture("a"), fixture("leave"), fixture("b")], jobs=1, mode="persistent")
    assert [o.status for o in outcomes] == ["pass", "fail", "pass"]
    assert outcomes[1].problems[0].startswith(KEPT_OPEN), outcomes[1].problems
    assert "before its 'done' line" in outcomes[1].problems[0]
    assert wait_until_gone(pids(tmp_path)[1])


def test_a_child_a_persistent_driver_leaves_running_is_ended_with_the_run(tmp_path: Path) -> None:
    command = python_driver(tmp_path, '''
        def special(fixture):
            if fixture["id"] == "leave":
                leave_a_child()
            return False
        serve_with(special)
        ''')
    outcomes = run_all(command, [fixture("a"), fixture("leave"), fixture("b")], jobs=1, mode="persistent")
    assert [o.status for o in outcomes] == ["pass"] * 3
    driver, child, _ = pids(tmp_path)
    assert wait_until_gone(child) and wait_until_gone(driver)


def test_a_child_of_a_per_fixture_driver_that_closed_its_output_is_ended_too(tmp_path: Path) -> None:
    command = python_driver(tmp_path, '''
        child = subprocess.Popen(["sleep", "1000"], stdout=subprocess.DEVNULL)
        with open(PIDS, "w") as out:
            out.write(f"{os.getpid()} {child.pid} {os.getpgid(child.pid)}\\n")
        run_fixture(json.load(sys.stdin))
        sys.stdout.flush()
        os._exit(0)
        ''')
    [outcome] = run_all(command, [fixture("a")], jobs=1, mode="per-fixture")
    assert outcome.status == "pass"  # leftovers that do not hold the output are no failure, but are ended
    assert wait_until_gone(pids(tmp_path)[1])


@pytest.mark.parametrize("mode", ["per-fixture", "persistent"])
def test_ctrl_c_ends_every_drivers_group(tmp_path: Path, mode: str) -> None:
    command = python_driver(tmp_path, '''
        def special(fixture):
            if fixture["id"] == "hang":
                leave_a_child()
                threading_event = __import__("threading").Event()
                threading_event.wait()  # until killed
            return False
        if os.environ.get("PHI_CONFORMANCE_PROTOCOL") == "2":
            serve_with(special)
        else:
            fixture = json.load(sys.stdin)
            if not special(fixture):
                run_fixture(fixture)
        ''')
    interrupted = threading.Event()

    def progress(outcome: Outcome) -> None:
        wait_for_file(tmp_path / "pids")  # the hanging fixture's driver and its child are running
        interrupted.set()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_all(command, [fixture("a"), fixture("hang")], jobs=2, mode=mode, progress=progress)
    assert interrupted.is_set()
    driver, child, _ = pids(tmp_path)
    assert wait_until_gone(child) and wait_until_gone(driver)


def test_a_persistent_driver_that_exited_after_done_has_its_group_ended_before_it_is_replaced(
        tmp_path: Path) -> None:
    from phi.conformance.drivers import DriverSession, Mode

    command = python_driver(tmp_path, '''
        def special(fixture):
            return False
        print(json.dumps(HELLO), flush=True)
        fixture = json.loads(sys.stdin.readline())
        reset_loop_numbers()
        run_fixture(fixture)
        child = subprocess.Popen(["sleep", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(PIDS, "w") as out:
            out.write(f"{os.getpid()} {child.pid} {os.getpgid(child.pid)}\\n")
        print(json.dumps({"kind": "done", "id": fixture["id"]}), flush=True)
        os._exit(0)  # right after its done line, leaving the child in its group
        ''')
    session = DriverSession(command, Mode("persistent"))
    try:
        first = session.run(fixture("a"), 120.0)
        assert first.failure is None
        driver, child, group = pids(tmp_path)
        assert group == driver
        assert wait_until_gone(driver)  # exited: the session must notice, end its group, start anew
        session.run(fixture("b"), 120.0)
        assert wait_until_gone(child)
    finally:
        session.close()


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_to_the_runner_ends_every_drivers_group(tmp_path: Path, signame: str) -> None:
    import json
    import signal
    import subprocess

    command = python_driver(tmp_path, '''
        leave_a_child()
        __import__("threading").Event().wait()  # until killed
        ''')
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "hang.json").write_text(json.dumps(fixture("hang")), encoding="utf-8")
    runner = subprocess.Popen([sys.executable, "-m", "phi.conformance", "run", "--driver", command, "--mode",
                               "per-fixture", "--fixtures", str(tmp_path / "fixtures")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        driver, child, _ = pids(tmp_path)
        runner.send_signal(getattr(signal, signame))
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 128 + getattr(signal, signame), err
    assert wait_until_gone(child) and wait_until_gone(driver)


def escape_helper() -> str:
    """Driver code: ``escape()`` starts ``sleep 1000`` in a session of its own (out of the driver's
    group) with the driver's stdout, and records its pid like ``leave_a_child``."""
    return '''
        def escape():
            child = subprocess.Popen(["sleep", "1000"], start_new_session=True)
            with open(PIDS, "w") as out:
                out.write(f"{os.getpid()} {child.pid} {os.getpgid(child.pid)}\\n")
        '''


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="processes outside the group are found via /proc")
def test_a_helper_that_left_the_group_but_holds_the_output_is_found_and_ended(tmp_path: Path) -> None:
    command = python_driver(tmp_path, escape_helper() + '''
        escape()
        run_fixture(json.load(sys.stdin))
        sys.stdout.flush()
        os._exit(0)
        ''')
    [outcome] = run_all(command, [fixture("a")], jobs=1, mode="per-fixture")
    driver, child, group = pids(tmp_path)
    assert group != driver  # it really left the driver's group
    assert outcome.status == "fail" and outcome.problems[0].startswith(KEPT_OPEN), outcome.problems
    assert outcome.problems[1:] == []
    assert wait_until_gone(child)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="processes outside the group are found via /proc")
def test_a_persistent_drivers_helper_that_left_the_group_is_ended_with_the_run(tmp_path: Path) -> None:
    command = python_driver(tmp_path, escape_helper() + '''
        def special(fixture):
            if fixture["id"] == "leave":
                escape()
            return False
        serve_with(special)
        ''')
    outcomes = run_all(command, [fixture("a"), fixture("leave"), fixture("b")], jobs=1, mode="persistent")
    assert [o.status for o in outcomes] == ["pass"] * 3
    driver, child, group = pids(tmp_path)
    assert group != driver
    assert wait_until_gone(child) and wait_until_gone(driver)


def test_a_child_that_keeps_writing_after_the_driver_exited_is_ended_too(tmp_path: Path) -> None:
    command = python_driver(tmp_path, '''
        fixture = json.load(sys.stdin)
        run_fixture(fixture)
        sys.stdout.flush()
        chatter = "import time\\nwhile True:\\n    print('still here', flush=True)\\n    time.sleep(0.05)"
        child = subprocess.Popen([sys.executable, "-c", chatter])  # in the driver's group, with its stdout
        with open(PIDS, "w") as out:
            out.write(f"{os.getpid()} {child.pid} {os.getpgid(child.pid)}\\n")
        os._exit(0)
        ''')
    [outcome] = run_all(command, [fixture("a")], jobs=1, mode="per-fixture")
    assert outcome.status == "fail" and outcome.problems[0].startswith(KEPT_OPEN), outcome.problems[:2]
    assert wait_until_gone(pids(tmp_path)[1])
