"""search (phi-core), grep, glob, list_files and list_dir (SPEC §9.3, §9.4)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from phi.errors import ToolCancelled, ToolError
from phi.tools.find_files import GlobTool, ListDirTool, ListFilesTool
from phi.tools.search import GrepTool, SearchTool

HAVE_RG = shutil.which("rg") is not None
BACKENDS = [pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")), "grep"]


def text(result) -> str:
    return result.content[0].text


@pytest.fixture
def tree(workdir: Path) -> Path:
    (workdir / "src").mkdir()
    (workdir / "src/main.py").write_text("import os\n\ndef main():\n    return 42\n")
    (workdir / "src/util.py").write_text("def helper():\n    return 'Main'\n")
    (workdir / "README.md").write_text("# Project\nmain entry point\n")
    (workdir / "node_modules").mkdir()
    (workdir / "node_modules/dep.py").write_text("def main(): pass\n")
    (workdir / ".git").mkdir()
    (workdir / ".git/config").write_text("main\n")
    return workdir


@pytest.mark.parametrize("backend", BACKENDS)
def test_search_finds_lines(env, ctx, tree, backend):
    result = SearchTool(env=env, backend=backend).execute({"pattern": r"def \w+\("}, ctx)
    assert text(result).split("\n") == ["src/main.py:3:def main():", "src/util.py:1:def helper():"]
    assert result.details == {"matches": 2, "truncated": False}


@pytest.mark.parametrize("backend", BACKENDS)
def test_search_case_and_include(env, ctx, tree, backend):
    tool = SearchTool(env=env, backend=backend)
    out = text(tool.execute({"pattern": "main", "case_sensitive": False, "include": "*.py"}, ctx)).split("\n")
    assert out == ["src/main.py:3:def main():", "src/util.py:2:    return 'Main'"]
    out = text(tool.execute({"pattern": "main", "path": "README.md"}, ctx))
    assert out == "README.md:2:main entry point"


@pytest.mark.parametrize("backend", BACKENDS)
def test_search_no_match_and_errors(env, ctx, tree, backend):
    tool = SearchTool(env=env, backend=backend)
    result = tool.execute({"pattern": "zzz_nothing"}, ctx)
    assert text(result).startswith("No matches found") and result.details["matches"] == 0
    with pytest.raises(ToolError, match="Search failed"):
        tool.execute({"pattern": "(unclosed"}, ctx)
    with pytest.raises(ToolError, match="File not found"):
        tool.execute({"pattern": "x", "path": "missing"}, ctx)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_modes_and_max_results(env, ctx, tree, backend):
    tool = GrepTool(env=env, backend=backend)
    for i in range(30):
        (tree / f"src/gen{i:02}.py").write_text("needle\nneedle\n")
    result = tool.execute({"pattern": "needle", "max_results": 5}, ctx)
    lines = text(result).split("\n")
    assert lines[:5] == ["src/gen00.py:1:needle", "src/gen00.py:2:needle", "src/gen01.py:1:needle",
                         "src/gen01.py:2:needle", "src/gen02.py:1:needle"]
    assert "results limited to 5" in lines[5] and result.details["truncated"] is True
    files = text(tool.execute({"pattern": "needle", "output_mode": "files_with_matches", "max_results": 100}, ctx))
    assert files.split("\n")[:2] == ["src/gen00.py", "src/gen01.py"] and len(files.split("\n")) == 30
    counts = text(tool.execute({"pattern": "needle", "output_mode": "count", "glob_filter": "gen0*.py"}, ctx))
    assert counts.split("\n")[0] == "src/gen00.py:2" and len(counts.split("\n")) == 10
    out = text(tool.execute({"pattern": "MAIN", "case_insensitive": True, "path": "src"}, ctx))
    assert out.split("\n") == ["main.py:3:def main():", "util.py:2:    return 'Main'"]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed (the grep fallback is tested below)")
def test_rg_is_preferred_when_installed(env, ctx, tree):
    (tree / ".gitignore").write_text("ignored.py\n")
    (tree / "ignored.py").write_text("def main(): pass\n")
    # rg honours .gitignore (grep does not): proves the auto backend chose rg
    auto = text(GrepTool(env=env).execute({"pattern": "def main"}, ctx))
    assert "ignored.py" not in auto
    assert "ignored.py" in text(GrepTool(env=env, backend="grep").execute({"pattern": "def main"}, ctx))


def test_grep_fallback_when_rg_missing(env, ctx, tree, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    out = text(SearchTool(env=env).execute({"pattern": "return 42"}, ctx))
    assert out == "src/main.py:4:    return 42"


def test_search_cancelled_before_execution(env, cancelled_ctx, tree):
    with pytest.raises(ToolCancelled):
        SearchTool(env=env).execute({"pattern": "main"}, cancelled_ctx)
    with pytest.raises(ToolCancelled):
        GrepTool(env=env).execute({"pattern": "main"}, cancelled_ctx)


# -- list_files --------------------------------------------------------------------------------

def test_list_files(env, ctx, tree):
    (tree / "target").mkdir()
    (tree / "target/out.o").write_text("")
    result = ListFilesTool(env=env).execute({}, ctx)
    assert text(result).split("\n") == ["README.md", "src/main.py", "src/util.py"]
    assert result.details == {"total": 3, "shown": 3, "truncated": False}
    assert text(ListFilesTool(env=env).execute({"pattern": "*.md"}, ctx)) == "README.md"
    assert text(ListFilesTool(env=env).execute({"max_depth": 1}, ctx)) == "README.md"
    assert text(ListFilesTool(env=env).execute({"path": "src"}, ctx)) == "main.py\nutil.py"


def test_list_files_truncation_and_errors(env, ctx, cancelled_ctx, workdir):
    for i in range(12):
        (workdir / f"f{i:02}.txt").write_text("")
    result = ListFilesTool(env=env, max_results=5).execute({}, ctx)
    assert text(result).endswith("... (7 more files not shown; narrow the path or pattern)")
    assert {k: result.details[k] for k in ("total", "shown", "truncated")} == {"total": 12, "shown": 5, "truncated": True}
    assert result.details["full_output"].split("\n") == [f"f{i:02}.txt" for i in range(12)]
    with pytest.raises(ToolError, match="Directory not found"):
        ListFilesTool(env=env).execute({"path": "nope"}, ctx)
    with pytest.raises(ToolError, match="Not a directory"):
        ListFilesTool(env=env).execute({"path": "f00.txt"}, ctx)
    with pytest.raises(ToolCancelled):
        ListFilesTool(env=env).execute({}, cancelled_ctx)
    assert "No files found" in text(ListFilesTool(env=env).execute({"pattern": "*.none"}, ctx))


def test_list_files_timeout(env, ctx, workdir):
    class SlowEnv:
        def __getattr__(self, name):
            return getattr(env, name)

        def exec_command(self, command, timeout_ms, working_dir=None, env_vars=None, **kw):
            return env.exec_command("sleep 5", timeout_ms, working_dir, env_vars, **kw)

    with pytest.raises(ToolError, match="timed out after 0s"):
        ListFilesTool(env=SlowEnv(), timeout_ms=200).execute({}, ctx)


# -- glob and list_dir -------------------------------------------------------------------------

def test_glob_newest_first(env, ctx, tree):
    os.utime(tree / "src/main.py", (1000, 1000))
    os.utime(tree / "src/util.py", (2000, 2000))
    result = GlobTool(env=env).execute({"pattern": "**/*.py"}, ctx)
    assert text(result).split("\n") == ["src/util.py", "src/main.py"]  # node_modules and .git skipped
    assert result.details == {"total": 2, "shown": 2, "truncated": False}
    assert text(GlobTool(env=env).execute({"pattern": "*.py", "path": "src"}, ctx)).split("\n") == ["src/util.py", "src/main.py"]
    assert text(GlobTool(env=env).execute({"pattern": "*.rs"}, ctx)).startswith("No files matching")
    with pytest.raises(ToolError, match="Directory not found"):
        GlobTool(env=env).execute({"pattern": "*", "path": "missing"}, ctx)
    limited = GlobTool(env=env, max_results=1).execute({"pattern": "**/*.py"}, ctx)
    assert text(limited).endswith("(1 more files not shown)") and limited.details["truncated"]


def test_list_dir_depth(env, ctx, tree):
    out = text(ListDirTool(env=env).execute({}, ctx)).split("\n")
    assert out[0] == "./" and "  src/" in out and "  README.md (27 B)" in out
    assert not any("main.py" in line for line in out)
    deep = text(ListDirTool(env=env).execute({"depth": 2}, ctx)).split("\n")
    assert "    main.py (37 B)" in deep
    assert not any("dep.py" in line for line in deep)  # node_modules is listed, not descended
    with pytest.raises(ToolError, match="Directory not found"):
        ListDirTool(env=env).execute({"path": "nope"}, ctx)


def test_glob_and_list_dir_cancelled(env, cancelled_ctx, tree):
    with pytest.raises(ToolCancelled):
        GlobTool(env=env).execute({"pattern": "*"}, cancelled_ctx)
    with pytest.raises(ToolCancelled):
        ListDirTool(env=env).execute({}, cancelled_ctx)
