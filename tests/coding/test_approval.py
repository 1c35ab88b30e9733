"""The approval gate (seed 004 §8 made real, between VALIDATE and EXECUTE), plan mode, and the
scoped environment sub-agents use."""

from __future__ import annotations

import pytest

from phi.coding import (
    ApprovalDecision,
    EventKind,
    RegisteredTool,
    ScopedEnvironment,
    Session,
    SessionConfig,
    SmartApproval,
    create_anthropic_profile,
    create_openai_profile,
    deny_changes,
)
from phi.errors import ToolError
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment
from phi.types import ToolDefinition

from .helpers import call, collect, of_kind


def run(tmp_path, script, config, profile_factory=create_anthropic_profile):
    provider = ScriptedProvider(script)
    session = Session(profile_factory(provider=provider), LocalExecutionEnvironment(str(tmp_path)), config)
    events, result = collect(session, "work")
    return session, provider, events, result


def test_smart_policy_allows_reads_and_asks_for_writes_and_commands(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    asked = []

    def ask(request):
        asked.append((request.tool_name, request.kind, request.command))
        return request.tool_name == "shell"  # the user allows the command, not the write

    script = [call("read_file", "r", file_path="a.txt"), call("write_file", "w", file_path="b.txt", content="b"),
              call("shell", "s", command="echo ok > c.txt"), call("grep", "g", pattern="a"), "done"]
    session, provider, events, result = run(tmp_path, script, SessionConfig(approval=SmartApproval(ask)))
    assert asked == [("write_file", "write", None), ("shell", "execute", "echo ok > c.txt")]
    ends = {e.data["call_id"]: e.data for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert not ends["r"]["is_error"] and not ends["s"]["is_error"] and not ends["g"]["is_error"]
    assert ends["w"]["is_error"] and ends["w"]["error"].startswith("The write_file call was denied by the user.")
    assert not (tmp_path / "b.txt").exists() and (tmp_path / "c.txt").read_text() == "ok\n"
    # the model is told, and can react
    denied = next(m for m in provider.calls[2].messages if m.role == "toolResult" and m.tool_call_id == "w")
    assert denied.is_error and "denied by the user" in denied.text
    assert result.text == "done"


def test_a_decision_carries_a_reason_and_a_broken_policy_fails_closed(tmp_path):
    script = [call("write_file", "w", file_path="x.txt", content="x"), call("shell", "s", command="true"), "ok"]

    def policy(request):
        if request.tool_name == "shell":
            raise RuntimeError("policy service down")
        return ApprovalDecision(False, "not on Fridays")

    _, _, events, _ = run(tmp_path, script, SessionConfig(approval=policy))
    errors = {e.data["call_id"]: e.data["error"] for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert errors["w"].startswith("The write_file call was denied by the user: not on Fridays.")
    assert "the approval check failed (RuntimeError: policy service down)" in errors["s"]
    assert not (tmp_path / "x.txt").exists()


def test_allowed_commands_skip_the_question(tmp_path):
    asked = []
    policy = SmartApproval(lambda r: asked.append(r.command) or False, allowed_commands=("git status",))
    script = [call("shell", "a", command=["git", "status"]), call("shell", "b", command=["rm", "x"]), "ok"]
    _, _, events, _ = run(tmp_path, script, SessionConfig(approval=policy), create_openai_profile)
    assert asked == ["rm x"]


def test_plan_mode_offers_only_read_tools_and_refuses_changes(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    provider = ScriptedProvider([call("write_file", "w", file_path="b.txt", content="b"),
                                 call("read_file", "r", file_path="a.txt"), call("sneaky", "s"), "plan ready"])
    profile = create_anthropic_profile(provider=provider)
    sneaky = ToolDefinition("sneaky", "A read tool that tries to write.", {"type": "object", "properties": {}})
    profile.tool_registry.register(RegisteredTool(sneaky, lambda a, env: env.write_file("c.txt", "c"), kind="read"))
    session = Session(profile, LocalExecutionEnvironment(str(tmp_path)), SessionConfig(plan_mode=True))
    events, result = collect(session, "plan it")
    assert [t.name for t in provider.calls[0].tools] == ["read_file", "grep", "glob", "sneaky"]
    errors = {e.data["call_id"]: e.data.get("error") for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert errors["w"] == "Tool write_file not found" and errors["r"] is None
    assert "read-only mode" in errors["s"]  # the environment itself refuses writes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert result.text == "plan ready"


def test_deny_changes_keeps_reads(tmp_path):
    script = [call("read_file", "r", file_path="missing"), call("edit_file", "e", file_path="f", old_string="a",
                                                                 new_string="b"), "ok"]
    _, _, events, _ = run(tmp_path, script, SessionConfig(approval=deny_changes))
    errors = {e.data["call_id"]: e.data["error"] for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert errors["r"] == "File not found: missing"  # it ran
    assert "no changes are allowed" in errors["e"]


def test_scoped_environment_resolves_and_confines_to_its_subdirectory(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "top.txt").write_text("top\n")
    inner = LocalExecutionEnvironment(str(tmp_path))
    scoped = ScopedEnvironment(inner, "pkg")
    pkg = str(tmp_path / "pkg")
    assert scoped.working_directory() == pkg and scoped.allowed_write_roots == (pkg,)
    scoped.write_file("mod.py", "x = 1\n")
    assert (tmp_path / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert scoped.read_file("../top.txt").startswith("top")  # reads are not confined
    with pytest.raises(PermissionError):
        scoped.write_file("../escape.txt", "no")
    assert scoped.exec_command("pwd", 5_000).stdout.strip() == str(tmp_path / "pkg")
    assert scoped.glob("*.py") == [str(tmp_path / "pkg" / "mod.py")]
    assert scoped.platform() == inner.platform()
    with pytest.raises(ToolError, match="not a directory"):
        ScopedEnvironment(inner, "nope")


def test_plan_mode_can_be_switched_between_inputs(tmp_path):
    """Plan first, then act: turning plan mode off gives the write tools and a writable environment
    back for the next input; turning it on again takes them away."""
    provider = ScriptedProvider([call("write_file", "w1", file_path="plan.txt", content="p"), "planned",
                                 call("write_file", "w2", file_path="done.txt", content="d"), "done",
                                 call("shell", "s", command="touch later.txt"), "planned again"])
    config = SessionConfig(plan_mode=True)
    session = Session(create_anthropic_profile(provider=provider), LocalExecutionEnvironment(str(tmp_path)), config)
    ends = []
    session.subscribe(lambda e: ends.append(e.data) if e.kind == EventKind.TOOL_CALL_END else None)
    session.submit("plan")
    config.plan_mode = False
    session.submit("act")
    config.plan_mode = True
    session.submit("plan more")
    assert [e.get("error") for e in ends] == ["Tool write_file not found", None, "Tool shell not found"]
    assert "write_file" in [t.name for t in provider.calls[2].tools]
    assert "write_file" not in [t.name for t in provider.calls[4].tools]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done.txt"]
    assert session.execution_env.working_directory() == str(tmp_path)
