"""What each profile's own tools do when the model calls them with the reference agent's parameters
(seed 004 §3.4–3.6): Claude Code's grep output modes and newest-first glob, gemini-cli's
read_many_files / list_dir / expected_replacements / 0-based offsets, codex's argv shell with workdir
and 1-based offsets. Each call goes through a real session (validation, approval, truncation)."""

from __future__ import annotations

import os
import time

import pytest

from phi.coding import EventKind, Session, SessionConfig, create_profile
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment


def run_tool(profile_id: str, root, name: str, **args):
    """The TOOL_CALL_END data of one ``name(**args)`` call made by a model of ``profile_id``."""
    provider = ScriptedProvider([ScriptedResponse.tool_call(name, args), "done"])
    # one call per session: a file is edited unread (read-before-write is tested in tests/tools)
    session = Session(create_profile(profile_id, provider=provider), LocalExecutionEnvironment(str(root)),
                      SessionConfig(require_read_before_write=False))
    ends = []
    session.subscribe(lambda e: ends.append(e.data) if e.kind == EventKind.TOOL_CALL_END else None)
    session.submit(f"call {name}")
    session.close()
    (end,) = ends
    return end


@pytest.fixture
def tree(tmp_path):
    files = {"src/old.py": "import os\nTODO = 1\n", "src/new.py": "todo = 2\nTODO = 3\nTODO = 4\n",
             "src/mid.py": "print('x')\n", "README.md": "TODO: docs\n"}
    for index, (name, text) in enumerate(files.items()):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    now = time.time()
    for age, name in ((300, "src/old.py"), (100, "src/mid.py"), (10, "src/new.py")):
        os.utime(tmp_path / name, (now - age, now - age))
    return tmp_path


def test_anthropic_grep_output_modes_and_case(tree):
    files = run_tool("anthropic", tree, "grep", pattern="TODO", glob="*.py")
    assert not files["is_error"] and sorted(files["output"].split()) == ["src/new.py", "src/old.py"]
    content = run_tool("anthropic", tree, "grep", pattern="TODO", glob="*.py", output_mode="content")
    assert "TODO = 3" in content["output"] and "TODO = 1" in content["output"] and "todo = 2" not in content["output"]
    counts = run_tool("anthropic", tree, "grep", pattern="todo", output_mode="count", **{"-i": True})
    lines = sorted(counts["output"].splitlines())
    assert any(line.startswith("src/new.py") and line.endswith("3") for line in lines), lines
    assert any(line.startswith("README.md") and line.endswith("1") for line in lines), lines


@pytest.mark.parametrize("profile_id", ["openai", "anthropic", "gemini"])
def test_glob_lists_the_newest_first(profile_id, tree):
    end = run_tool(profile_id, tree, "glob", pattern="**/*.py")
    assert end["output"].splitlines() == ["src/new.py", "src/mid.py", "src/old.py"]


def test_gemini_read_many_files_list_dir_and_zero_based_offset(tree):
    many = run_tool("gemini", tree, "read_many_files", include=["src/*.py", "README.md"])
    out = many["output"]
    assert all(name in out for name in ("src/old.py", "src/new.py", "src/mid.py", "README.md"))
    assert "TODO: docs" in out and "print('x')" in out
    listing = run_tool("gemini", tree, "list_dir", dir_path=".", depth=2)
    assert "src/" in listing["output"] and "new.py" in listing["output"] and "README.md" in listing["output"]
    second_line = run_tool("gemini", tree, "read_file", file_path="src/new.py", offset=1, limit=1)
    assert "TODO = 3" in second_line["output"] and "todo = 2" not in second_line["output"]


def test_gemini_replace_needs_the_expected_number_of_occurrences(tree):
    refused = run_tool("gemini", tree, "edit_file", file_path="src/new.py", old_string="TODO", new_string="DONE")
    assert refused["is_error"] and "Expected 1 occurrence(s)" in refused["error"] and "found 2" in refused["error"]
    assert (tree / "src/new.py").read_text() == "todo = 2\nTODO = 3\nTODO = 4\n"
    done = run_tool("gemini", tree, "edit_file", file_path="src/new.py", old_string="TODO", new_string="DONE",
                    expected_replacements=2)
    assert not done["is_error"] and (tree / "src/new.py").read_text() == "todo = 2\nDONE = 3\nDONE = 4\n"


def test_openai_argv_shell_with_workdir_and_one_based_offset(tree):
    end = run_tool("openai", tree, "shell", command=["bash", "-lc", "pwd; ls"], workdir="src")
    assert end["output"].splitlines()[0] == str(tree / "src") and "new.py" in end["output"]
    first_line = run_tool("openai", tree, "read_file", file_path="src/new.py", offset=1, limit=1)
    assert "todo = 2" in first_line["output"] and "TODO = 3" not in first_line["output"]
    listed = run_tool("openai", tree, "grep", pattern="TODO", include="*.py")
    assert sorted(listed["output"].split()) == ["src/new.py", "src/old.py"]
