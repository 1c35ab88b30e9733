"""LocalExecutionEnvironment with real subprocesses (SPEC §9.1)."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError
from phi.tools.environment import (
    LocalExecutionEnvironment, LoggingEnvironment, ReadOnlyEnvironment, filter_environment,
)
from phi.tools.process import KILL_GRACE_SECONDS

from .conftest import assert_all_dead, pid_alive


def _wait_for_file(path: Path, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            time.sleep(0.05)
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def test_stdout_and_stderr_are_separate(env):
    result = env.exec_command("echo out; echo err >&2; exit 4", 5000)
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert result.exit_code == 4
    assert not result.timed_out and not result.cancelled
    assert result.duration_ms >= 0
    assert result.output == "out\nerr\n"


def test_runs_in_working_directory_and_resolves_paths(env, workdir):
    assert env.exec_command("pwd", 5000).stdout.strip() == os.path.realpath(workdir)
    (workdir / "sub").mkdir()
    assert env.exec_command("pwd", 5000, working_dir="sub").stdout.strip().endswith("/sub")
    assert env.resolve_path("a/../b.txt") == str(workdir / "b.txt")
    assert env.working_directory() == str(workdir)
    with pytest.raises(FileNotFoundError):
        env.exec_command("true", 5000, working_dir="missing")


def test_metadata(env):
    assert env.platform() == "linux"
    assert env.os_version()
    env.initialize()
    env.cleanup()
    with pytest.raises(ConfigError):
        LocalExecutionEnvironment("/nonexistent/dir/for/phi").initialize()
    with pytest.raises(ConfigError):
        LocalExecutionEnvironment(env_policy="bogus")


def test_timeout_kills_group_that_ignores_sigterm(env, workdir):
    pids = workdir / "pids"
    script = (
        "trap '' TERM; "
        f"(trap '' TERM; sleep 60 & echo $! >> {pids}; wait) & "
        f"echo $$ >> {pids}; echo $! >> {pids}; echo started; wait"
    )
    started = time.monotonic()
    result = env.exec_command(script, 500)
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert "started" in result.stdout  # partial output is kept
    assert 2.0 <= elapsed < 6.0  # SIGTERM, 2 s grace, SIGKILL
    recorded = [int(p) for p in _wait_for_file(pids).split()]
    assert len(recorded) == 3
    time.sleep(0.1)
    assert not any(pid_alive(p) for p in recorded), "child or grandchild survived"


def test_timeout_of_well_behaved_command_is_quick(env):
    started = time.monotonic()
    result = env.exec_command("echo partial; sleep 30", 300)
    assert result.timed_out and "partial" in result.stdout
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("ignore_term", [False, True], ids=["plain", "ignores-sigterm"])
def test_cancellation_mid_command_returns_quickly(env, workdir, ignore_term):
    """The call returns at once, even when the command ignores SIGTERM (it then gets SIGKILL when
    the grace period ends, after the call returned)."""
    token = CancellationToken()
    pidfile = workdir / "pid"
    cancelled_at: list[float] = []
    threading.Timer(0.3, lambda: (cancelled_at.append(time.monotonic()), token.cancel())).start()
    trap = "trap '' TERM; " if ignore_term else ""
    result = env.exec_command(f"{trap}sleep 60 & echo $! > {pidfile}; wait", 60_000, cancel=token)
    returned = time.monotonic() - cancelled_at[0]
    assert returned < 0.5
    assert result.cancelled and not result.timed_out
    assert_all_dead([int(_wait_for_file(pidfile))], within=KILL_GRACE_SECONDS + 3 if ignore_term else 1)


def test_fifty_megabytes_of_output_do_not_deadlock(env):
    started = time.monotonic()
    # 50 MB on stdout and 5 MB on stderr at the same time: a naive reader would block on one pipe.
    result = env.exec_command("yes 0123456789abcdef | head -c 50000000; yes e | head -c 5000000 >&2", 60_000)
    assert time.monotonic() - started < 20
    assert result.exit_code == 0
    assert len(result.stdout) < 3 * env.max_capture_bytes  # memory stays bounded
    assert result.stdout.startswith("0123456789abcdef\n")
    # the marker says exactly what the capture dropped: 50 MB minus the 1 MiB head and 1 MiB tail
    dropped = 50_000_000 - 2 * env.max_capture_bytes
    assert f"lines ({dropped} bytes) were removed from the middle" in result.stdout
    hole = result.stdout_parts[1]
    assert (hole.bytes, hole.lines) == (dropped, 50_000_000 // 17 - result.stdout.count("\n") + 2)
    assert "bytes) were removed from the middle" in result.stderr  # plus yes's "Broken pipe" notes


def test_secrets_are_invisible_to_commands(workdir, monkeypatch):
    monkeypatch.setenv("PHI_TEST_API_KEY", "sk-very-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-secret")
    monkeypatch.setenv("db_password", "hunter2")
    monkeypatch.setenv("PHI_TEST_VISIBLE", "visible")
    env = LocalExecutionEnvironment(str(workdir))
    result = env.exec_command("env", 5000)
    assert "sk-very-secret" not in result.stdout
    assert "tok-secret" not in result.stdout
    assert "hunter2" not in result.stdout
    assert "PHI_TEST_VISIBLE=visible" in result.stdout
    # explicitly passed variables are the caller's choice
    assert env.exec_command("echo $X_TOKEN", 5000, env_vars={"X_TOKEN": "given"}).stdout == "given\n"


def test_env_policies():
    source = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "CUSTOM": "1", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k"}
    assert filter_environment(source, "inherit_all") == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "CUSTOM": "1"}
    assert filter_environment(source, "core_only") == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}
    assert filter_environment(source, "none") == {}
    assert filter_environment(source, "inherit_all", secret_patterns=())["GITHUB_TOKEN"] == "t"
    with pytest.raises(ConfigError):
        filter_environment(source, "everything")


def test_core_only_policy_in_a_real_command(workdir, monkeypatch):
    monkeypatch.setenv("PHI_TEST_CUSTOM", "custom")
    env = LocalExecutionEnvironment(str(workdir), env_policy="core_only")
    out = env.exec_command("echo ${PHI_TEST_CUSTOM:-unset}; echo $HOME", 5000).stdout.split("\n")
    assert out[0] == "unset"
    assert out[1] == os.environ["HOME"]


def test_non_utf8_output_is_replaced_not_fatal(env):
    result = env.exec_command("printf 'ok \\377\\376 done\\n'", 5000)
    assert result.stdout == "ok \ufffd\ufffd done\n"


def test_background_process_holding_pipe_does_not_hang(env):
    started = time.monotonic()
    result = env.exec_command("sleep 5 & echo foreground", 10_000)
    assert result.stdout == "foreground\n"
    assert time.monotonic() - started < 2.0


def test_file_operations(env, workdir):
    env.write_file("a/b/c.txt", "line1\nline2\nline3\n")
    assert (workdir / "a/b/c.txt").read_text() == "line1\nline2\nline3\n"
    assert env.read_file("a/b/c.txt", offset=2, limit=1) == "line2\n"
    assert env.read_bytes("a/b/c.txt").startswith(b"line1")
    assert env.file_exists("a/b/c.txt") and env.is_dir("a") and env.file_size("a/b/c.txt") == 18
    entries = env.list_directory(".", depth=3)
    assert [e.path for e in entries] == ["a", "a/b", "a/b/c.txt"]
    assert entries[2].size == 18 and not entries[2].is_dir
    with pytest.raises(IsADirectoryError):
        env.delete_file("a")
    env.delete_file("a/b/c.txt")
    assert not env.file_exists("a/b/c.txt")
    with pytest.raises(FileNotFoundError):
        env.list_directory("missing")


def test_glob_is_sorted_newest_first(env, workdir):
    for i, name in enumerate(["old.py", "mid.py", "sub/new.py"]):
        path = workdir / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("x")
        os.utime(path, (1000 + i * 100, 1000 + i * 100))
    (workdir / ".git").mkdir()
    (workdir / ".git" / "hidden.py").write_text("x")
    assert env.glob("**/*.py") == [str(workdir / "sub/new.py"), str(workdir / "mid.py"), str(workdir / "old.py")]
    with pytest.raises(FileNotFoundError):
        env.glob("*", "missing")


def test_read_only_wrapper(env, workdir):
    ro = ReadOnlyEnvironment(env)
    with pytest.raises(PermissionError, match="read-only"):
        ro.write_file("x.txt", "data")
    with pytest.raises(PermissionError):
        ro.delete_file("x.txt")
    assert not (workdir / "x.txt").exists()
    assert ro.exec_command("echo hi", 5000).stdout == "hi\n"
    assert ro.working_directory() == str(workdir)
    with pytest.raises(PermissionError):
        ReadOnlyEnvironment(env, allow_commands=False).exec_command("echo hi", 5000)


def test_logging_wrapper_logs_commands_but_not_env_values(env, caplog):
    logged = LoggingEnvironment(env)
    with caplog.at_level(logging.INFO, logger="phi.tools.environment.log"):
        result = logged.exec_command("echo $SECRET_VALUE_TOKEN", 5000, env_vars={"SECRET_VALUE_TOKEN": "s3cr3t"})
        logged.write_file("f.txt", "abc")
    assert result.stdout == "s3cr3t\n"
    text = caplog.text
    assert "exec: echo $SECRET_VALUE_TOKEN" in text and "exit: 0" in text and "write: f.txt (3 bytes)" in text
    assert "s3cr3t" not in text
    assert "s3cr3t" not in repr(env)
