"""The coding layer's command sandbox (SPEC §14 CODE-11): workspace-write by default, and the
honest fallback where the machine cannot sandbox — every command approved, or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from phi.coding import EventKind, Session, SessionConfig, create_anthropic_profile
from phi.providers.mock import ScriptedProvider
from phi.tools import LocalExecutionEnvironment, SandboxPolicy, SandboxStatus, sandbox_status

from .helpers import call, collect, of_kind

STATUS = sandbox_status()


def run(workspace: Path, script: list[object], config: SessionConfig,
        env: LocalExecutionEnvironment | None = None) -> tuple[Session, list[object]]:
    session = Session(create_anthropic_profile(provider=ScriptedProvider(script)),
                      env or LocalExecutionEnvironment(str(workspace)), config)
    events, _ = collect(session, "work")
    session.close()
    return session, events


def ends(events: list[object]) -> dict[str, dict[str, object]]:
    return {e.data["call_id"]: e.data for e in of_kind(events, EventKind.TOOL_CALL_END)}  # type: ignore[attr-defined]


@pytest.mark.skipif(not STATUS.available, reason=f"no sandbox here: {STATUS.describe()}")
def test_a_session_sandboxes_commands_to_the_workspace_by_default(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "out"
    workspace.mkdir()
    outside.mkdir()
    script = [call("shell", "s", command=f"echo in > in.txt; echo out > {outside}/x.txt; echo $?"), "done"]
    session, events = run(workspace, script, SessionConfig())
    assert session.sandbox.policy.mode == "workspace-write" and not session.sandbox.unconfined
    assert "workspace-write, network off" in session.sandbox.describe()
    assert (workspace / "in.txt").read_text() == "in\n"
    assert not (outside / "x.txt").exists()
    assert "Read-only file system" in str(ends(events)["s"])


def test_an_environment_that_chose_its_sandbox_keeps_it(tmp_path: Path) -> None:
    env = LocalExecutionEnvironment(str(tmp_path), sandbox="full")
    session, _ = run(tmp_path, ["done"], SessionConfig(), env)
    assert env.sandbox.mode == "full" and session.sandbox.policy.mode == "full"
    env2 = LocalExecutionEnvironment(str(tmp_path))
    session2, _ = run(tmp_path, ["done"], SessionConfig(sandbox=SandboxPolicy("read-only", network=True)), env2)
    assert env2.sandbox == SandboxPolicy("read-only", network=True) == session2.sandbox.policy


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    import phi.coding.sandboxing as sandboxing

    monkeypatch.setattr(sandboxing, "sandbox_status", lambda: SandboxStatus(reason="test kernel"))


def test_without_a_sandbox_and_no_approval_every_command_is_refused(tmp_path: Path, no_sandbox: None) -> None:
    script = [call("shell", "s", command="echo ran > ran.txt"), call("read_file", "r", file_path="ran.txt"), "done"]
    session, events = run(tmp_path, script, SessionConfig())
    assert session.sandbox.unconfined
    assert "no sandbox on this machine (test kernel)" in session.sandbox.describe()
    shell = ends(events)["s"]
    assert shell["is_error"] and "cannot be sandboxed on this machine" in str(shell["error"])
    assert not (tmp_path / "ran.txt").exists()


def test_without_a_sandbox_each_command_goes_to_the_approval_callback(tmp_path: Path, no_sandbox: None) -> None:
    asked: list[str | None] = []

    def approve(request: object) -> bool:
        asked.append(getattr(request, "command"))
        return getattr(request, "command") == "echo yes > yes.txt"

    script = [call("shell", "a", command="echo yes > yes.txt"), call("shell", "b", command="echo no > no.txt"), "done"]
    _, events = run(tmp_path, script, SessionConfig(approval=approve))
    assert asked == ["echo yes > yes.txt", "echo no > no.txt"]
    assert (tmp_path / "yes.txt").exists() and not (tmp_path / "no.txt").exists()
    assert ends(events)["b"]["is_error"]


def test_a_bad_sandbox_setting_is_a_config_error() -> None:
    from phi.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown sandbox mode"):
        SessionConfig(sandbox="workspace").check()
