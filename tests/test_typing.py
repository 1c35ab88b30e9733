"""Typed end to end (issues 21, 33): the README's own example passes ``mypy --strict`` with real types — an
event narrows on ``event.type`` and ``phi``'s names are not ``Any`` — and a mistake in it is caught; the
public entry points reveal their types under mypy and pyright alike (tests/typing/public_api.py), and
both catch the two mistakes planted in a user program. (``scripts/test`` also runs both checkers on
``phi/`` and ``examples/`` and ``scripts/typecheck-docs`` on every docs block.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy", reason="mypy is in the test extra (pip install -e .[test])")


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Example"):]
    match = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert match is not None, "README.md has no python block under ## Example"
    return match.group(1)


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "example.py"
    program.write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "setup.cfg"),
                           "--cache-dir", str(ROOT / ".cache" / "mypy"), str(program)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def pyright(tmp_path: Path, source: str, name: str = "example.py") -> dict[str, Any]:
    """pyright's JSON report (strict mode, Python 3.10) on ``source`` saved as ``name``."""
    import json
    import shutil

    found = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if found is None:
        pytest.skip("pyright is in the test extra (pip install -e .[test])")
    program = tmp_path / name
    program.write_text(source, encoding="utf-8")
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({
        "typeCheckingMode": "strict", "pythonVersion": "3.10", "extraPaths": [str(ROOT)]}), encoding="utf-8")
    done = subprocess.run([found, "--pythonpath", sys.executable, "--outputjson", str(program)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_readme_example_passes_mypy_strict(tmp_path: Path) -> None:
    done = mypy(tmp_path, readme_example())
    assert done.returncode == 0, done.stdout + done.stderr


def test_names_have_their_real_types_and_events_narrow(tmp_path: Path) -> None:
    checks = readme_example() + '''
reveal_type(add)
reveal_type(result.usage)
for seen in agent.prompt("again"):
    if seen.type == "ToolExecutionEnd":
        reveal_type(seen)
    seen.delta  # not every event has a delta: an error
'''
    done = mypy(tmp_path, checks)
    out = done.stdout
    assert 'Revealed type is "phi.tools.function_tool.DecoratedTool[[a: int, b: int], int]"' in out, out
    assert 'Revealed type is "phi.types.Usage"' in out
    assert 'Revealed type is "phi.events.ToolExecutionEnd"' in out
    assert re.search(r'Item "AgentStart" of "AgentStart \| AgentEnd \| .*" has no attribute "delta"', out), out
    assert "Any" not in "".join(line for line in out.splitlines() if "Revealed type" in line)


# ---------------------------------------------------------------------------------- revealed types (issue 33)

PUBLIC_API = ROOT / "tests" / "typing" / "public_api.py"


def expected_reveals() -> dict[int, str]:
    """line -> the type its ``# reveals:`` comment names."""
    lines = PUBLIC_API.read_text(encoding="utf-8").splitlines()
    return {n: line.split("# reveals:", 1)[1].strip() for n, line in enumerate(lines, 1) if "# reveals:" in line}


def short(type_text: str) -> str:
    """A revealed type without module paths, a TypedDict by its name, any callable as ``a function``."""
    text = re.sub(r"TypedDict\(([\w.]+), \{.*\}\)", r"\1", type_text)
    text = re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", text)
    if text.startswith("def ") or "->" in text:
        return "a function"
    return text


def check_reveals(revealed: dict[int, str]) -> None:
    expected = expected_reveals()
    assert set(revealed) == set(expected), f"reveal_type lines seen {sorted(revealed)}, written {sorted(expected)}"
    wrong = {line: (short(revealed[line]), want) for line, want in expected.items() if short(revealed[line]) != want}
    assert not wrong, "revealed (got, written): " + repr(wrong)
    leaked = {line: text for line, text in revealed.items() if "Any" in text and "Any" not in expected[line]}
    assert not leaked, f"Any in a public entry point's type: {leaked}"


def test_public_entry_points_reveal_their_types_under_mypy(tmp_path: Path) -> None:
    done = mypy(tmp_path, PUBLIC_API.read_text(encoding="utf-8"))
    assert " error: " not in done.stdout, done.stdout
    revealed = {int(m.group(1)): m.group(2) for m in re.finditer(r':(\d+): note: Revealed type is "(.*)"', done.stdout)}
    check_reveals(revealed)


def test_public_entry_points_reveal_their_types_under_pyright(tmp_path: Path) -> None:
    report = pyright(tmp_path, PUBLIC_API.read_text(encoding="utf-8"), "public_api.py")
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert not errors, errors
    revealed = {}
    for diagnostic in report["generalDiagnostics"]:
        match = re.match(r'Type of ".*" is "(.*)"$', diagnostic["message"], flags=re.S)
        if match:
            revealed[diagnostic["range"]["start"]["line"] + 1] = match.group(1)
    check_reveals(revealed)


PLANTED = '''
from dataclasses import dataclass
from phi import Agent, ScriptedProvider, tool

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@dataclass
class Answer:
    city: str

agent = Agent(provider=ScriptedProvider([]), tools=[add])
total: int = add("1", 2)  # planted: a str where the tool's function takes an int
answer = agent.run_structured("Which city?", Answer)
population: int = answer.city  # planted: the structured answer's field is a str
'''


def planted_lines() -> set[int]:
    return {n for n, line in enumerate(PLANTED.splitlines(), 1) if "# planted:" in line}


def test_mypy_catches_both_planted_mistakes_in_a_user_program(tmp_path: Path) -> None:
    done = mypy(tmp_path, PLANTED)
    flagged = {int(m.group(1)) for m in re.finditer(r":(\d+): error: ", done.stdout)}
    assert flagged == planted_lines(), done.stdout


def test_pyright_catches_both_planted_mistakes_in_a_user_program(tmp_path: Path) -> None:
    report = pyright(tmp_path, PLANTED)
    flagged = {d["range"]["start"]["line"] + 1 for d in report["generalDiagnostics"] if d["severity"] == "error"}
    assert flagged == planted_lines(), report["generalDiagnostics"]
