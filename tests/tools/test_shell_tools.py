"""bash (phi-core) and shell (coding) tools (SPEC §9.3, §9.4)."""

from __future__ import annotations

import threading
import time

import pytest

from phi.loop.tool import ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.errors import ToolCancelled, ToolError
from phi.tools.shell import DEFAULT_DENY_PATTERNS, BashTool, ShellTool, find_denied


def text(result) -> str:
    return result.content[0].text


def test_bash_happy_path(env, ctx):
    result = BashTool(env=env).execute({"command": 'echo "hello"'}, ctx)
    assert text(result) == "Exit code: 0\nhello\n"
    assert result.details["exit_code"] == 0 and result.details["success"] is True


def test_bash_stderr_sections_and_failure_is_not_an_error(env, ctx):
    result = BashTool(env=env).execute({"command": "echo out; echo bad >&2; exit 2"}, ctx)
    assert text(result) == "Exit code: 2\nSTDOUT:\nout\nSTDERR:\nbad\n"
    assert result.details == {"exit_code": 2, "success": False, "duration_ms": result.details["duration_ms"]}


@pytest.mark.parametrize("command", ["rm -rf /", "sudo rm -rf / --x", "RM  -Rf   ~", "mkfs.ext4 /dev/sda1",
                                     ":(){ :|:& };:", "dd if=/dev/zero of=/dev/sda", "git push --force origin main",
                                     "echo x; shutdown -h now"])
def test_deny_patterns_block_before_spawning(env, ctx, workdir, command):
    with pytest.raises(ToolError, match="Command blocked"):
        BashTool(env=env).execute({"command": command + f"; touch {workdir}/ran"}, ctx)
    assert not (workdir / "ran").exists()


def test_deny_patterns_do_not_block_ordinary_commands():
    for command in ["rm -rf /tmp/build", "rm -rf ./dist", "echo shutdown-notes", "git push origin main", "ls /"]:
        assert find_denied(command, DEFAULT_DENY_PATTERNS) is None, command


def test_custom_deny_list(env, ctx):
    tool = BashTool(env=env, deny_patterns=["curl "])
    with pytest.raises(ToolError, match="curl"):
        tool.execute({"command": "curl http://example.com"}, ctx)
    assert text(tool.execute({"command": "echo rm -rf /"}, ctx)).startswith("Exit code: 0")


def test_confirm_fn(env, ctx, workdir):
    seen = []
    tool = BashTool(env=env, confirm_fn=lambda cmd: seen.append(cmd) or False)
    with pytest.raises(ToolError, match="Command was not confirmed by the user."):
        tool.execute({"command": f"touch {workdir}/x"}, ctx)
    assert seen == [f"touch {workdir}/x"] and not (workdir / "x").exists()
    assert BashTool(env=env, confirm_fn=lambda cmd: True).execute({"command": "true"}, ctx).details["success"]


def test_bash_timeout(env, ctx):
    with pytest.raises(ToolError, match="Command timed out after 1s") as info:
        BashTool(env=env).execute({"command": "echo early; sleep 30", "timeout": 1}, ctx)
    assert "early" in str(info.value)


def test_bash_output_cap_per_stream_keeps_head_and_tail(env, ctx):
    tool = BashTool(env=env, max_output_bytes=1000, max_chars=100_000, max_lines=10_000)
    result = tool.execute({"command": "head -c 5000 /dev/zero | tr '\\0' a; printf END"}, ctx)
    out = text(result)
    assert out.startswith("Exit code: 0\n" + "a" * 500 + "\n[WARNING: Tool output was truncated. 0 lines (4003 bytes)")
    assert out.endswith("]\n" + "a" * 497 + "END")


def test_bash_huge_output_is_truncated_with_marker(env, ctx):
    result = BashTool(env=env).execute({"command": "yes line | head -c 50000000"}, ctx)
    out = text(result)
    assert len(out) < 40_000
    assert "[WARNING: Tool output was truncated." in out or "lines omitted" in out
    assert result.details["truncated_output"] is True


def test_bash_cancellation(env, workdir):
    token = CancellationToken()
    ctx = ToolContext("c", "bash", token)
    threading.Timer(0.3, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(ToolCancelled):
        BashTool(env=env).execute({"command": "sleep 30"}, ctx)
    assert time.monotonic() - started < 2.5


def test_cancelled_before_start_spawns_nothing(env, cancelled_ctx, workdir):
    with pytest.raises(ToolCancelled):
        BashTool(env=env).execute({"command": f"touch {workdir}/ran"}, cancelled_ctx)
    with pytest.raises(ToolCancelled):
        ShellTool(env=env).execute({"command": f"touch {workdir}/ran"}, cancelled_ctx)
    assert not (workdir / "ran").exists()


def test_shell_happy_path(env, ctx):
    progress = []
    ctx.on_progress = progress.append
    result = ShellTool(env=env).execute({"command": "echo out; echo err >&2; exit 1", "description": "demo"}, ctx)
    out = text(result)
    assert out.startswith("out\nerr\n[exit code: 1, duration: ")
    assert result.details["exit_code"] == 1 and result.details["success"] is False
    assert progress == ["demo"]


def test_shell_timeout_message_and_partial_output(env, ctx):
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        ShellTool(env=env).execute({"command": "echo partial; sleep 30", "timeout_ms": 200}, ctx)
    assert time.monotonic() - started < 2.0
    message = str(info.value)
    assert message.startswith("partial\n")
    assert "[ERROR: Command timed out after 200ms. Partial output is shown above.\n" in message
    assert "setting the timeout_ms parameter.]" in message


def test_shell_default_and_capped_timeouts(env, ctx):
    tool = ShellTool(env=env, default_timeout_ms=150, max_timeout_ms=300)
    with pytest.raises(ToolError, match="after 150ms"):
        tool.execute({"command": "sleep 5"}, ctx)
    with pytest.raises(ToolError, match="after 300ms"):
        tool.execute({"command": "sleep 5", "timeout_ms": 60_000}, ctx)
    assert ShellTool().default_timeout_ms == 10_000 and ShellTool().max_timeout_ms == 600_000


def test_shell_blocks_denied_and_empty_commands(env, ctx):
    with pytest.raises(ToolError, match="Command blocked"):
        ShellTool(env=env).execute({"command": "rm -rf ~"}, ctx)
    with pytest.raises(ToolError, match="must not be empty"):
        ShellTool(env=env).execute({"command": "   "}, ctx)


def test_shell_reports_missing_working_directory(env, ctx):
    with pytest.raises(ToolError, match="Could not run the command"):
        ShellTool(env=env, working_dir="does/not/exist").execute({"command": "true"}, ctx)


def test_shell_does_not_leak_secrets(workdir, ctx, monkeypatch):
    from phi.tools.environment import LocalExecutionEnvironment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    result = ShellTool(env=LocalExecutionEnvironment(str(workdir))).execute({"command": "env"}, ctx)
    assert "sk-should-not-leak" not in text(result)
