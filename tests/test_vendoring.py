"""phi vendored under another name (issue 21): ``phi/`` copied to ``app/_vendor/phi`` and run in a fresh
virtual environment that has nothing but phi's three runtime dependencies.

The README example (with a scripted model and a real tool call), the reference conformance driver on a
few fixtures and an MCP stdio connection to the official SDK's server all run there, and nothing
named ``phi`` at top level is ever imported. A second copy without the leaves a vendoring user deletes
(``cli/``, ``coding/``, ``export/``) runs the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ("requests>=2.28", "jsonschema>=4.0", "pyyaml>=6.0")
SDK_SERVER = ROOT / "tests" / "mcp" / "sdk_server.py"
LEAVES = ("cli", "coding", "export")

# Runs inside the fresh environment, from the directory that holds ``app/``.
PROGRAM = r'''
import json, sys
from app._vendor.phi import Agent, ScriptedProvider, ScriptedResponse, tool
from app._vendor.phi.mcp import McpToolset

@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b

script = ScriptedProvider([ScriptedResponse.tool_call("add", {"a": 19, "b": 23}, "c1"), "It is 42.", "84."])
agent = Agent(provider=script, system_prompt="You are a careful calculator.", tools=[add])
text, tool_lines = [], []
for event in agent.prompt("What is 19 + 23?"):
    if event.type == "MessageUpdate" and event.delta.kind == "text":
        text.append(event.delta.delta)
    elif event.type == "ToolExecutionEnd":
        tool_lines.append(f"{event.tool_name} -> {event.result.content[0].text}")
result = agent.run("And times two?")

server_python, server_script = sys.argv[1], sys.argv[2]
mcp_script = ScriptedProvider([ScriptedResponse.tool_call("sdk__add", {"a": 40, "b": 2}, "m1"), "42."])
with Agent(provider=mcp_script, tool_sources=[McpToolset.stdio(server_python, [server_script], prefix="sdk",
                                                               timeout=30)]) as mcp_agent:
    mcp_result = mcp_agent.run("Add 40 and 2.")
mcp_tool = [m.text for m in mcp_agent.messages if m.role == "toolResult"]

print(json.dumps({
    "text": "".join(text), "tools": tool_lines, "second": result.text, "outcome": result.outcome.value,
    "mcp": mcp_tool, "mcp_outcome": mcp_result.outcome.value,
    "top_level_phi": sorted(m for m in sys.modules if m == "phi" or m.startswith("phi.")),
    "modules": sorted({type(m).__module__ for m in (agent, add)}),
}))
'''


def clean_python(cache: Path) -> Path:
    """A virtual environment with only the runtime dependencies (made once, then reused)."""
    key = hashlib.sha256(f"{sys.version}{RUNTIME}".encode()).hexdigest()[:12]
    home = cache / f"vendor-venv-{key}"
    python = home / "bin" / "python"
    if not (home / ".complete").is_file():
        shutil.rmtree(home, ignore_errors=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *RUNTIME],
                       check=True, timeout=600)
        (home / ".complete").write_text("ok")
    return python


@pytest.fixture(scope="module")
def python() -> Path:
    cache = Path(os.environ.get("PHI_TEST_CACHE") or Path.home() / ".cache" / "phi-test")
    try:
        return clean_python(cache)
    except (subprocess.SubprocessError, OSError) as error:
        pytest.skip(f"cannot make a fresh virtual environment with {', '.join(RUNTIME)}: {error}")


def vendor(tmp: Path, drop: tuple[str, ...] = ()) -> Path:
    """``phi/`` copied to ``tmp/app/_vendor/phi`` (without ``drop``); returns ``tmp``."""
    target = tmp / "app" / "_vendor" / "phi"
    shutil.copytree(ROOT / "phi", target, ignore=shutil.ignore_patterns("__pycache__"))
    for leaf in drop:
        shutil.rmtree(target / leaf)
    for package in (tmp / "app", tmp / "app" / "_vendor"):
        (package / "__init__.py").write_text("")
    return tmp


def run_in(python: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_environment_has_only_the_runtime_dependencies(python: Path) -> None:
    listed = json.loads(run_in(python, ROOT.parent, "-m", "pip", "list", "--format", "json").stdout)
    names = {row["name"].lower() for row in listed}
    assert {"requests", "jsonschema", "pyyaml"} <= names
    assert not {"phi-agent", "mcp", "pytest", "hypothesis"} & names
    probe = run_in(python, ROOT.parent, "-c", "import phi")
    assert probe.returncode != 0 and "No module named 'phi'" in probe.stderr


@pytest.mark.parametrize("drop", [(), LEAVES], ids=["whole-package", "without-leaves"])
def test_vendored_phi_runs_the_readme_example_an_mcp_server_and_conformance_fixtures(
        python: Path, tmp_path: Path, drop: tuple[str, ...]) -> None:
    home = vendor(tmp_path, drop)
    program = tmp_path / "program.py"
    program.write_text(PROGRAM, encoding="utf-8")
    done = run_in(python, home, str(program), sys.executable, str(SDK_SERVER))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tools"] == ["add -> 42"] and report["text"] == "It is 42."
    assert (report["second"], report["outcome"]) == ("84.", "completed")
    assert (report["mcp"], report["mcp_outcome"]) == (["42"], "completed")
    assert report["top_level_phi"] == []
    assert report["modules"] == ["app._vendor.phi.agent.agent", "app._vendor.phi.tools.function_tool"]

    suite = run_in(python, home, "-m", "app._vendor.phi.conformance", "run", "--only", "s*", "--jobs", "2")
    assert suite.returncode == 0, suite.stdout + suite.stderr
    assert " 0 failed" in suite.stdout and "subagent-delegates-and-links" in suite.stdout
