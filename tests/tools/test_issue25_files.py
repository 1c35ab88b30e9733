"""Issue 25 items 10-14 and 16: read before write, listings that keep their head, fast globbing,
file names with newlines, commands that end with what they started, the full output kept whole.

Each test fails on the code before the issue. Item 15 (guardrails) is in test_issue25_guardrails.py.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from phi import ScriptedProvider, ScriptedResponse
from phi.coding import EventKind, Session, SessionConfig, create_profile
from phi.coding.pipeline import shape_for_model
from phi.errors import ToolError
from phi.tools import ToolSession, coding_tools, default_tools
from phi.tools.environment import LocalExecutionEnvironment
from phi.tools.find_files import GlobTool, ListDirTool
from phi.tools.listing import quote_path, unquote_path
from phi.tools.search import GrepTool
from phi.tools.shell import BashTool, ShellTool
from phi.tools.write_file import WriteFileTool

from .conftest import pid_alive

MARKER = re.compile(r"\[WARNING: Tool output was truncated\. (?:The (?:first|last) )?(\d+) lines \((\d+) bytes\)")


def tools_of(found: list) -> dict:
    return {t.name: t for t in found}


# -- item 10: read before write -------------------------------------------------------------------

def test_write_and_edit_refuse_a_file_never_read(env, ctx, workdir: Path):
    (workdir / "notes.txt").write_text("the user's text\n")
    tools = tools_of(default_tools(env))
    with pytest.raises(ToolError, match="has not been read in this session"):
        tools["write_file"].execute({"path": "notes.txt", "content": "overwritten"}, ctx)
    with pytest.raises(ToolError, match="has not been read"):
        tools["edit_file"].execute({"path": "notes.txt", "old_text": "user", "new_text": "model"}, ctx)
    assert (workdir / "notes.txt").read_text() == "the user's text\n"
    assert "Created" in tools["write_file"].execute({"path": "fresh.txt", "content": "new"}, ctx).text
    tools["read_file"].execute({"path": "notes.txt", "offset": 1, "limit": 1}, ctx)  # a partial read counts
    tools["edit_file"].execute({"path": "notes.txt", "old_text": "user", "new_text": "model"}, ctx)
    assert (workdir / "notes.txt").read_text() == "the model's text\n"


def test_a_change_made_since_the_read_is_not_overwritten(env, ctx, workdir: Path):
    target = workdir / "app.py"
    target.write_text("x = 1\n")
    tools = tools_of(coding_tools(env))
    tools["read_file"].execute({"file_path": "app.py"}, ctx)
    target.write_text("x = 1\ny = 2  # added by the user\n")
    for name, args in (("edit_file", {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 3"}),
                       ("write_file", {"file_path": "app.py", "content": "x = 3\n"})):
        with pytest.raises(ToolError, match="has changed since it was last read"):
            tools[name].execute(args, ctx)
    assert target.read_text() == "x = 1\ny = 2  # added by the user\n"
    tools["read_file"].execute({"file_path": "app.py"}, ctx)
    tools["edit_file"].execute({"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 3"}, ctx)
    assert target.read_text() == "x = 3\ny = 2  # added by the user\n"


def test_a_touch_or_the_models_own_writes_do_not_need_a_new_read(env, ctx, workdir: Path):
    tools = tools_of(coding_tools(env))
    tools["write_file"].execute({"file_path": "a.txt", "content": "one\n"}, ctx)
    tools["edit_file"].execute({"file_path": "a.txt", "old_string": "one", "new_string": "two"}, ctx)
    os.utime(workdir / "a.txt", (1, 1))  # same content, another time: allowed
    tools["edit_file"].execute({"file_path": "a.txt", "old_string": "two", "new_string": "three"}, ctx)
    tools["apply_patch"].execute({"patch": "*** Begin Patch\n*** Add File: b.txt\n+bee\n*** End Patch"}, ctx)
    tools["edit_file"].execute({"file_path": "b.txt", "old_string": "bee", "new_string": "wasp"}, ctx)
    assert (workdir / "a.txt").read_text() == "three\n" and (workdir / "b.txt").read_text() == "wasp\n"


def test_the_rule_is_per_session_and_can_be_turned_off(env, ctx, workdir: Path):
    (workdir / "f.txt").write_text("v1\n")
    first, second = tools_of(coding_tools(env)), tools_of(coding_tools(env))
    first["read_file"].execute({"file_path": "f.txt"}, ctx)
    with pytest.raises(ToolError, match="has not been read"):  # another session has not read it
        second["write_file"].execute({"file_path": "f.txt", "content": "v2\n"}, ctx)
    blind = tools_of(coding_tools(env, session=ToolSession(require_read_before_write=False)))
    blind["write_file"].execute({"file_path": "f.txt", "content": "v2\n"}, ctx)
    WriteFileTool(env=env).execute({"path": "f.txt", "content": "v3\n"}, ctx)  # a lone tool: no record to check
    assert (workdir / "f.txt").read_text() == "v3\n"


def _session_run(root: Path, calls: list[tuple[str, dict]], config: SessionConfig | None = None) -> list[dict]:
    provider = ScriptedProvider([*(ScriptedResponse.tool_call(n, a) for n, a in calls), "done"])
    session = Session(create_profile("anthropic", provider=provider), LocalExecutionEnvironment(str(root)), config)
    ends: list[dict] = []
    session.subscribe(lambda e: ends.append(e.data) if e.kind == EventKind.TOOL_CALL_END else None)
    session.submit("go")
    session.close()
    return ends


def test_coding_sessions_require_a_read_by_default(workdir: Path):
    (workdir / "cfg.ini").write_text("a=1\n")
    edit = ("edit_file", {"file_path": "cfg.ini", "old_string": "a=1", "new_string": "a=2"})
    (refused,) = _session_run(workdir, [edit])
    assert refused["is_error"] and "has not been read" in refused["error"]
    assert (workdir / "cfg.ini").read_text() == "a=1\n"
    read, done = _session_run(workdir, [("read_file", {"file_path": "cfg.ini"}), edit])
    assert not done["is_error"] and (workdir / "cfg.ini").read_text() == "a=2\n"
    (off,) = _session_run(workdir, [("edit_file", {"file_path": "cfg.ini", "old_string": "a=2", "new_string": "a=3"})],
                          SessionConfig(require_read_before_write=False))
    assert not off["is_error"] and (workdir / "cfg.ini").read_text() == "a=3\n"


# -- item 11: long listings keep their head -------------------------------------------------------

def test_a_long_glob_keeps_the_newest_files_and_counts_the_rest(env, ctx, workdir: Path):
    for i in range(3000):
        path = workdir / f"file_{i:05d}.txt"
        path.write_text("")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    result = GlobTool(env=env).execute({"pattern": "*.txt"}, ctx)
    lines = result.text.split("\n")
    assert lines[0] == "file_02999.txt" and lines[1] == "file_02998.txt"  # the newest, not cut away
    shown = result.details["shown"]
    assert lines[shown - 1] == f"file_{3000 - shown:05d}.txt" and "WARNING" not in result.text
    assert lines[-1] == f"... ({3000 - shown} more files not shown)" and len(result.text) <= 20_000
    assert result.details["full_output"].split("\n")[999] == "file_02000.txt"


def test_a_long_directory_listing_keeps_its_top(env, ctx, workdir: Path):
    for i in range(1500):
        (workdir / f"entry_{i:04d}_{'x' * 20}.dat").write_text("")
    result = ListDirTool(env=env).execute({}, ctx)
    lines = result.text.split("\n")
    assert lines[1].strip().startswith("entry_0000_") and "WARNING" not in result.text
    assert lines[-1].startswith(f"... ({1500 - result.details['shown']} more entries not shown")


# -- item 12: glob through rg --files and the pruned walk agree ------------------------------------

@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("pattern", ["**/*.py", "src/**/*.py", "**/.hidden/*.py", "**", "**/[ab]*.py",
                                     "**/test_?.py", "src/**", "**/deep/**/*.py"])
def test_glob_backends_agree(workdir: Path, pattern: str):
    for rel in ("a.py", "src/b.py", "src/pkg/test_1.py", "src/pkg/deep/x/y/z.py", "src/.hidden/h.py",
                ".hidden/top.py", "node_modules/dep/n.py", ".git/objects/g.py", "src/node_modules/m.py",
                "bin/tool", "src/new\nline.py", "src/deep/ok.py"):
        path = workdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    (workdir / "link.py").symlink_to("a.py")
    (workdir / "src" / "loop").symlink_to("..")
    os.mkfifo(workdir / "src" / "pipe.py")
    by_rg = LocalExecutionEnvironment(str(workdir), glob_backend="rg").glob(pattern)
    by_walk = LocalExecutionEnvironment(str(workdir), glob_backend="scandir").glob(pattern)
    assert sorted(by_rg) == sorted(by_walk)
    names = {os.path.relpath(p, workdir) for p in by_walk}
    assert not names & {"node_modules/dep/n.py", ".git/objects/g.py", "link.py", "src/pipe.py"}
    if pattern == "**/*.py":
        assert names == {"a.py", "src/b.py", "src/pkg/test_1.py", "src/pkg/deep/x/y/z.py", "src/new\nline.py",
                         "src/deep/ok.py"}


# -- item 13: names with a newline ----------------------------------------------------------------

@pytest.mark.parametrize("backend", ["rg", "grep"])
def test_newline_names_are_quoted_in_grep_and_listings(env, ctx, workdir: Path, backend: str):
    if backend == "rg" and shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed")
    (workdir / "evil\nsrc:1:fake.py").write_text("needle\n")
    (workdir / "plain.py").write_text("needle\n")
    content = GrepTool(env=env, backend=backend).execute({"pattern": "needle"}, ctx).text.split("\n")
    assert content == ['"evil\\nsrc:1:fake.py":1:needle', "plain.py:1:needle"]
    files = GrepTool(env=env, backend=backend).execute({"pattern": "needle", "output_mode": "files_with_matches"},
                                                        ctx).text.split("\n")
    assert files == ['"evil\\nsrc:1:fake.py"', "plain.py"]
    listed = GlobTool(env=env).execute({"pattern": "*.py"}, ctx).text.split("\n")
    assert sorted(listed) == ['"evil\\nsrc:1:fake.py"', "plain.py"]
    assert '  "evil\\nsrc:1:fake.py" (7 B)' in ListDirTool(env=env).execute({}, ctx).text.split("\n")


def test_quoting_is_reversible():
    for name in ["plain.py", "a\nb", 'q"uote', "back\\slash", "tab\there", "\x01ctl", "bad\udcffbyte", "é.txt"]:
        quoted = quote_path(name)
        assert "\n" not in quoted and (quoted == name or unquote_path(quoted) == name)
    assert quote_path("é.txt") == "é.txt" and unquote_path("plain.py") is None


# -- item 14: commands end with what they started ----------------------------------------------------

DAEMONS = ("sleep 301 & echo $! >> pids; setsid sleep 302 & echo $! >> pids; "
           "nohup sleep 303 >/dev/null 2>&1 & echo $! >> pids; "
           "( (sleep 304 & echo $! >> pids) & ); python3 -c 'import os, subprocess; "
           "p = subprocess.Popen([\"sleep\", \"305\"], start_new_session=True); open(\"pids\", \"a\").write(f\"{p.pid}\\n\")'; "
           "sleep 0.2; echo started")


def _pids(workdir: Path) -> list[int]:
    return [int(line) for line in (workdir / "pids").read_text().split()]


@pytest.mark.parametrize("tool", [ShellTool, BashTool])
def test_processes_a_command_leaves_behind_end_with_it(env, ctx, workdir: Path, tool):
    result = tool(env=env).execute({"command": DAEMONS}, ctx)
    assert "started" in result.text
    pids = _pids(workdir)
    assert len(pids) == 5
    deadline = time.monotonic() + 5
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if pid_alive(p)] == []
    assert "stdin is /dev/null" in tool(env=env).description


def test_a_background_command_runs_until_the_session_ends(env, ctx, workdir: Path):
    session = ToolSession()
    shell = ShellTool(env=env, session=session)
    result = shell.execute({"command": "echo up; sleep 300 & echo $! > pids; wait", "run_in_background": True}, ctx)
    assert result.details["background"] is True
    time.sleep(0.5)
    (child,) = _pids(workdir)
    assert pid_alive(result.details["pid"]) and pid_alive(child)
    assert open(result.details["output_path"]).read() == "up\n"
    session.close()
    assert not pid_alive(child) and not os.path.exists(result.details["output_path"])


# -- item 16: the full output is full, and counts are exact ------------------------------------------

BIG = "python3 -c \"import sys; [sys.stdout.write('line %07d ' % i + 'x' * 40 + '\\n') for i in range(60000)]\""
BIG_TEXT = "".join("line %07d " % i + "x" * 40 + "\n" for i in range(60000))  # 3,060,000 characters


def test_an_output_over_the_cap_is_saved_whole(env, ctx, workdir: Path):
    session = ToolSession()
    result = ShellTool(env=env, session=session).execute({"command": BIG}, ctx)
    path = result.details["full_output_path"]
    saved = open(path).read()
    assert saved.startswith(BIG_TEXT) and saved[len(BIG_TEXT):].startswith("[exit code: 0")
    assert "full_output" not in result.details and oct(os.stat(path).st_mode & 0o777) == "0o600"
    found = MARKER.search(result.text)
    head = result.text[:found.start()]
    tail = result.text[result.text.index("]\n", found.start()) + 2:]
    assert int(found.group(2)) == len(saved.encode()) - len(head.encode()) - len(tail.encode())
    assert int(found.group(1)) == saved.count("\n") - head.count("\n") - tail.count("\n")
    assert path in result.text  # the model is told where the whole output is
    session.close()
    assert not os.path.exists(path)


def test_a_sessions_own_cut_counts_exactly(env, ctx, workdir: Path):
    session = ToolSession()
    result = ShellTool(env=env, session=session).execute({"command": BIG}, ctx)
    saved = open(result.details["full_output_path"]).read()
    shaped = shape_for_model(result, "shell", {"shell": 4000}, {})
    found = MARKER.search(shaped.text)
    head = shaped.text[:found.start()]
    tail = shaped.text[shaped.text.index("]\n", found.start()) + 2:]
    assert int(found.group(2)) == len(saved.encode()) - len(head.encode()) - len(tail.encode())
    assert int(found.group(2)) > 3_000_000  # not the size of an earlier marker ("2 lines (225 bytes)")
    assert int(found.group(1)) == saved.count("\n") - head.count("\n") - tail.count("\n")
    session.close()


def test_tool_call_end_names_the_file(workdir: Path):
    (end,) = _session_run(workdir, [("shell", {"command": BIG})])
    assert end["truncated"] and os.path.exists(end["output_path"]) is False  # removed with the session
    assert end["output"] == end["model_output"] and end["output_path"] in end["model_output"]
