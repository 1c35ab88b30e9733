"""Every built-in tool's parameter schema is valid JSON Schema and is enforced by the loop's
validation (SPEC §9.3, §9.4)."""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import pytest

from phi.loop.tool import AgentTool
from phi.tools import coding_tools, default_tools

ALL_TOOLS = default_tools() + coding_tools()

GOOD = {
    "bash": {"command": "ls", "timeout": 5},
    "read_file": [{"path": "a.txt", "offset": 1, "limit": 10}, {"file_path": "a.txt", "offset": 2}],
    "write_file": [{"path": "a", "content": ""}, {"file_path": "a", "content": "x"}],
    "edit_file": [{"path": "a", "old_text": "x", "new_text": "y"},
                  {"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": True}],
    "list_files": {"path": ".", "pattern": "*.py", "max_depth": 2},
    "search": {"pattern": "x", "path": ".", "include": "*.py", "case_sensitive": False},
    "shell": {"command": "ls", "timeout_ms": 100, "description": "list"},
    "grep": {"pattern": "x", "glob_filter": "*.py", "case_insensitive": True, "max_results": 5, "output_mode": "count"},
    "glob": {"pattern": "**/*.py", "path": "src"},
    "list_dir": {"path": ".", "depth": 3},
    "read_many_files": {"paths": ["a", "*.md"]},
    "apply_patch": {"patch": "*** Begin Patch\n*** End Patch"},
}
BAD = {
    "bash": [{}, {"command": 3}, {"command": "ls", "timeout": 0}, {"command": "ls", "extra": 1}, {"command": ""}],
    "read_file": [{}, {"path": "a", "offset": 0}, {"path": "a", "limit": "5"}, {"file_path": "a", "offset": -1}],
    "write_file": [{"path": "a"}, {"content": "x"}, {"file_path": "a", "content": 5}],
    "edit_file": [{"path": "a", "old_text": "x"}, {"file_path": "a", "old_string": "", "new_string": "y"},
                  {"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}],
    "list_files": [{"max_depth": 0}, {"path": 1}, {"bogus": True}],
    "search": [{}, {"pattern": "x", "case_sensitive": "no"}],
    "shell": [{}, {"command": "ls", "timeout_ms": 0}, {"command": "ls", "timeout_ms": 1.5}],
    "grep": [{}, {"pattern": "x", "output_mode": "lines"}, {"pattern": "x", "max_results": 0}],
    "glob": [{}, {"pattern": ""}],
    "list_dir": [{"depth": 0}, {"depth": 11}],
    "read_many_files": [{}, {"paths": []}, {"paths": "a"}],
    "apply_patch": [{}, {"patch": None}],
}


def _tools_named(name):
    return [t for t in ALL_TOOLS if t.name == name]


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda t: f"{type(t).__name__}")
def test_schema_is_valid_and_strict(tool):
    assert isinstance(tool, AgentTool)
    jsonschema.Draft202012Validator.check_schema(tool.parameters)
    assert tool.parameters["type"] == "object"
    assert tool.parameters["additionalProperties"] is False
    assert tool.description and tool.label


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_and_bad_arguments(name):
    tools = _tools_named(name)
    goods = GOOD[name] if isinstance(GOOD[name], list) else [GOOD[name]]
    for tool in tools:
        accepted = [g for g in goods if not list(jsonschema.Draft202012Validator(tool.parameters).iter_errors(g))]
        assert accepted, f"{type(tool).__name__} accepted none of {goods}"
        for bad in BAD[name]:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(bad, tool.parameters, cls=jsonschema.Draft202012Validator)


def test_loop_validation_rejects_bad_arguments():
    from phi.loop.arguments import validate_arguments

    for tool in ALL_TOOLS:
        for bad in BAD[tool.name]:
            reason = validate_arguments(tool, bad)
            if reason is None:
                # only arguments meant for the other variant of a same-named tool may pass
                assert tool.name in ("read_file", "write_file", "edit_file"), (tool, bad)
        assert validate_arguments(tool, {"__unexpected__": 1}) is not None


def test_default_and_coding_tool_sets():
    names = [t.name for t in default_tools()]
    assert names == ["bash", "read_file", "write_file", "edit_file", "list_files", "search"]
    assert len(set(names)) == 6
    coding = [t.name for t in coding_tools()]
    assert coding == ["read_file", "write_file", "edit_file", "shell", "grep", "glob", "list_dir",
                      "read_many_files", "apply_patch"]
    with pytest.raises(TypeError):
        default_tools(bogus=1)
    tools = default_tools(deny_patterns=["x"], allowed_roots=["/tmp"])
    assert tools[0].deny_patterns == ["x"] and tools[2].allowed_roots == ["/tmp"]


def test_importing_phi_tools_is_light():
    code = ("import sys, phi.tools; from phi.tools import default_tools; default_tools(); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('requests', 'jsonschema', 'yaml')]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_tools_run_through_the_agent_loop(env, workdir):
    """End to end: the loop validates arguments against the schemas and runs the real tools."""
    from phi.agent import Agent
    from phi.providers.mock import ScriptedProvider, ScriptedResponse
    from phi.types import ToolResultMessage

    script = [
        ScriptedResponse.tool_call("bash", {"command": "echo via-loop > out.txt; cat out.txt"}, "c1"),
        ScriptedResponse.tool_call("bash", {"command": "ls", "timeout": "soon"}, "c2"),
        ScriptedResponse.tool_call("write_file", {"path": "../escape.txt", "content": "x"}, "c3"),
        ScriptedResponse.text("done"),
    ]
    agent = Agent(provider=ScriptedProvider(script), tools=default_tools(env))
    result = agent.run("go", timeout=60)
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True, True]
    assert results[0].text == "Exit code: 0\nvia-loop\n"
    assert results[1].text.startswith("Invalid arguments for tool bash:")
    assert "outside the allowed directories" in results[2].text
    assert (workdir / "out.txt").read_text() == "via-loop\n"
