"""The second actor for files, continued (SPEC §9.1 "Read before write"; review of issue 31 items 6
and 7): apply_patch's Add File / Move to / Delete File pass the same read-before-write check as
write_file; a second save landing after phi's ``RENAME_EXCHANGE`` is never removed; a file phi cannot
read is never overwritten; a file deleted since the read is not silently recreated; a read-only file
is not replaced; a ``chmod`` made during the write is kept.

The user is a real process (the ``user_edit`` editor of test_second_actor_files). Moments inside a
write are placed through fs_safe's seams (``_before_replace``, ``_set_aside``) and, for the moment
right after the exchange, by wrapping ``fs_safe._rename2`` — never by timing.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from phi.errors import ToolError
from phi.tools import coding_tools, fs_safe
from phi.tools.apply_patch import ApplyPatchTool, PatchApplyError

from .test_second_actor_files import leftovers, renameat2_works, tools_of, user_edit


def patch(*ops: str) -> dict[str, str]:
    return {"patch": "*** Begin Patch\n" + "\n".join(ops) + "\n*** End Patch"}


def kept_copies(directory: Path, name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in directory.iterdir() if p.name.startswith(name + ".phi-kept-")}


# -- finding 1: apply_patch follows read-before-write ---------------------------------------------

def test_apply_patch_does_not_add_move_onto_or_delete_a_file_the_model_never_read(env, ctx, workdir: Path):
    tools = tools_of(coding_tools(env))
    (workdir / "notes.txt").write_text("the user's notes\n")
    (workdir / "a.py").write_text("x = 1\n")
    (workdir / "b.py").write_text("the user's b.py\n")
    (workdir / "c.py").write_text("the user's c.py\n")
    cases = [
        patch("*** Add File: fresh.txt", "+new", "*** Add File: notes.txt", "+model"),
        patch("*** Update File: a.py", "*** Move to: b.py", "@@", "-x = 1", "+x = 2"),
        patch("*** Delete File: c.py"),
    ]
    for args in cases:
        with pytest.raises(PatchApplyError, match="already exists and has not been read in this session"):
            tools["apply_patch"].execute(args, ctx)
    # nothing changed, not even the patch's first operation (the check runs before the first change)
    assert not (workdir / "fresh.txt").exists()
    assert [(workdir / n).read_text() for n in ("notes.txt", "a.py", "b.py", "c.py")] == [
        "the user's notes\n", "x = 1\n", "the user's b.py\n", "the user's c.py\n"]
    # once read, each goes through
    for name in ("notes.txt", "b.py", "c.py"):
        tools["read_file"].execute({"file_path": name}, ctx)
    for args in cases:
        tools["apply_patch"].execute(args, ctx)
    assert (workdir / "notes.txt").read_text() == "model\n" and (workdir / "fresh.txt").read_text() == "new\n"
    assert (workdir / "b.py").read_text() == "x = 2\n" and not (workdir / "a.py").exists()
    assert not (workdir / "c.py").exists()


def test_apply_patch_does_not_delete_or_overwrite_a_file_changed_since_it_was_read(env, ctx, workdir: Path):
    tools = tools_of(coding_tools(env))
    for name in ("c.py", "d.py"):
        (workdir / name).write_text(f"{name} = 1\n")
        tools["read_file"].execute({"file_path": name}, ctx)
        user_edit(workdir / name, f"{name} = 2\n")  # same size, mtime put back
    (workdir / "e.py").write_text("e = 1\n")
    for args in (patch("*** Delete File: c.py"), patch("*** Add File: d.py", "+model"),
                 patch("*** Update File: e.py", "*** Move to: d.py", "@@", "-e = 1", "+e = 2")):
        with pytest.raises(PatchApplyError, match="has changed since it was last read"):
            tools["apply_patch"].execute(args, ctx)
    assert (workdir / "c.py").read_text() == "c.py = 2\n" and (workdir / "d.py").read_text() == "d.py = 2\n"
    assert (workdir / "e.py").read_text() == "e = 1\n"


def test_apply_patch_knows_what_its_own_earlier_operations_wrote(env, ctx, workdir: Path):
    tools = tools_of(coding_tools(env))
    tools["apply_patch"].execute(patch("*** Add File: n.txt", "+one", "*** Update File: n.txt", "@@", "-one",
                                       "+two", "*** Delete File: n.txt", "*** Add File: n.txt", "+three"), ctx)
    assert (workdir / "n.txt").read_text() == "three\n"
    tools["write_file"].execute({"file_path": "n.txt", "content": "four\n"}, ctx)  # known: phi wrote it


def test_the_bare_apply_patch_tool_keeps_codex_behaviour(env, ctx, workdir: Path):
    """Without a ToolSession (the tool the differential fuzz against codex runs) nothing is required."""
    (workdir / "notes.txt").write_text("old\n")
    (workdir / "gone.txt").write_text("old\n")
    ApplyPatchTool(env).execute(patch("*** Add File: notes.txt", "+new", "*** Delete File: gone.txt"), ctx)
    assert (workdir / "notes.txt").read_text() == "new\n" and not (workdir / "gone.txt").exists()


@pytest.mark.parametrize("op", ["add", "move"])
def test_a_file_created_while_apply_patch_creates_it_is_kept(env, ctx, workdir: Path,
                                                            monkeypatch: pytest.MonkeyPatch, op: str):
    if not renameat2_works(workdir):
        pytest.skip("renameat2 is not available here")
    tools = tools_of(coding_tools(env))
    (workdir / "a.py").write_text("x = 1\n")
    target = workdir / "new.py"

    def seam(path: str, checked: bool) -> None:
        if checked and path == str(target) and not target.exists():
            user_edit(target, "the user's file\n")

    monkeypatch.setattr(fs_safe, "_before_replace", seam)
    args = (patch("*** Add File: new.py", "+model") if op == "add" else
            patch("*** Update File: a.py", "*** Move to: new.py", "@@", "-x = 1", "+x = 2"))
    with pytest.raises(PatchApplyError, match="was created by someone else"):
        tools["apply_patch"].execute(args, ctx)
    assert target.read_text() == "the user's file\n" and (workdir / "a.py").read_text() == "x = 1\n"
    assert leftovers(workdir) == []


def test_a_file_saved_again_while_apply_patch_deletes_it_is_kept(env, ctx, workdir: Path,
                                                                monkeypatch: pytest.MonkeyPatch):
    """The file is renamed aside before its check: a save made by name then is a new file, kept; and
    when the aside one had changed as well, it is kept beside it rather than put back over the save."""
    tools = tools_of(coding_tools(env))
    target = workdir / "c.py"
    target.write_text("c = 1\n")
    tools["read_file"].execute({"file_path": "c.py"}, ctx)
    monkeypatch.setattr(fs_safe, "_set_aside", lambda path: user_edit(target, "c = saved by name\n"))
    tools["apply_patch"].execute(patch("*** Delete File: c.py"), ctx)  # it deleted what the model read
    assert target.read_text() == "c = saved by name\n" and leftovers(workdir) == []

    tools["read_file"].execute({"file_path": "c.py"}, ctx)
    aside: list[str] = []
    with open(target, "r+") as held:  # a program holding the file open, writing to it later

        def second_actor(path: str) -> None:
            aside.append(path)
            held.write("c = written through an open descriptor\n")  # lands in the file set aside
            held.flush()
            user_edit(target, "c = newest\n")  # and a save by name: a new file at the name

        monkeypatch.setattr(fs_safe, "_set_aside", second_actor)
        with pytest.raises(PatchApplyError, match=r"changed by someone else.*kept beside it as c\.py\.phi-kept-"):
            tools["apply_patch"].execute(patch("*** Delete File: c.py"), ctx)
    assert aside == [str(target)]
    assert target.read_text() == "c = newest\n"
    assert list(kept_copies(workdir, "c.py").values()) == ["c = written through an open descriptor\n"]
    assert leftovers(workdir) == []


# -- finding 2: a second save after the exchange is never removed ---------------------------------

@pytest.mark.parametrize("how", ["inplace", "rename"])
def test_a_second_save_right_after_the_exchange_is_kept(env, ctx, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture, how: str):
    """Save A lands after the final check (into the old file), save B right after the exchange, by name
    (in place: into the file phi put there; or by rename). B stays at the name, A is kept beside it."""
    if not renameat2_works(workdir):
        pytest.skip("renameat2 is not available here")
    target = workdir / "app.py"
    target.write_text("x = 1\n")
    tools = tools_of(coding_tools(env))
    tools["read_file"].execute({"file_path": "app.py"}, ctx)
    monkeypatch.setattr(fs_safe, "_before_replace",
                        lambda path, checked: user_edit(target, "x = A\n") if checked else None)
    real_rename2 = fs_safe._rename2
    saves: list[str] = []

    def rename2(dir_fd: int, src: str, dst: str, flags: int) -> bool:
        done = real_rename2(dir_fd, src, dst, flags)
        if done and flags == fs_safe._RENAME_EXCHANGE and not saves:
            saves.append(dst)
            user_edit(target, "x = B\n", how)
        return done

    monkeypatch.setattr(fs_safe, "_rename2", rename2)
    with caplog.at_level(logging.WARNING, logger="phi.tools.fs_safe"):
        with pytest.raises(ToolError, match=r"was changed by someone else.*kept beside it as app\.py\.phi-kept-"):
            tools["write_file"].execute({"file_path": "app.py", "content": "x = 3\n"}, ctx)
    assert saves == ["app.py"]
    assert target.read_text() == "x = B\n"
    ((name, text),) = kept_copies(workdir, "app.py").items()
    assert text == "x = A\n" and leftovers(workdir) == []
    assert any(name in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_phis_own_file_is_removed_only_while_it_holds_exactly_what_phi_wrote(env, ctx, workdir: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    """Save A after the check: phi's file is swapped back out. Nothing else happened, so it is removed
    (no copy kept, the name holds A) — the ordinary refusal of test_second_actor_files."""
    if not renameat2_works(workdir):
        pytest.skip("renameat2 is not available here")
    target = workdir / "app.py"
    target.write_text("x = 1\n")
    tools = tools_of(coding_tools(env))
    tools["read_file"].execute({"file_path": "app.py"}, ctx)
    monkeypatch.setattr(fs_safe, "_before_replace",
                        lambda path, checked: user_edit(target, "x = A\n") if checked else None)
    with pytest.raises(ToolError) as caught:
        tools["write_file"].execute({"file_path": "app.py", "content": "x = 3\n"}, ctx)
    assert "kept beside" not in str(caught.value)
    assert target.read_text() == "x = A\n" and kept_copies(workdir, "app.py") == {} and leftovers(workdir) == []


# -- finding 3: a file that cannot be read is not overwritten -------------------------------------

UNREADABLE = textwrap.dedent("""
    import sys
    from phi.concurrency.cancel import CancellationToken
    from phi.loop.tool import ToolContext
    from phi.tools import coding_tools
    from phi.tools.environment import LocalExecutionEnvironment
    tools = {t.name: t for t in coding_tools(LocalExecutionEnvironment(sys.argv[1]))}
    ctx = ToolContext("c", "t", CancellationToken())
    for name, args in (("write_file", {"file_path": "secret.txt", "content": "model"}),
                       ("apply_patch",
                        {"patch": "*** Begin Patch\\n*** Add File: secret.txt\\n+model\\n*** End Patch"})):
        try:
            tools[name].execute(args, ctx)
            print(name, "WROTE")
        except Exception as exc:
            print(name, "REFUSED", exc)
""")


def test_a_file_the_model_cannot_read_is_not_overwritten(workdir: Path):
    secret = workdir / "secret.txt"
    secret.write_text("data phi cannot read\n")
    secret.chmod(0o200)
    command = [sys.executable, "-c", UNREADABLE, str(workdir)]
    if os.geteuid() == 0:  # root reads everything: run as root without the capabilities that allow it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv")
        command = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *command]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["write_file", "REFUSED"], ["apply_patch", "REFUSED"]], lines
    assert all("cannot be read (Permission denied)" in line for line in lines)
    secret.chmod(0o600)
    assert secret.read_text() == "data phi cannot read\n"


# -- minor findings: a deletion, a read-only file, a chmod meanwhile -------------------------------

def test_a_file_deleted_since_it_was_read_is_not_silently_recreated(env, ctx, workdir: Path):
    target = workdir / "gone.py"
    target.write_text("old\n")
    tools = tools_of(coding_tools(env))
    tools["read_file"].execute({"file_path": "gone.py"}, ctx)
    subprocess.run(["rm", str(target)], check=True)
    with pytest.raises(ToolError, match="was deleted by someone else .* since it was last read"):
        tools["write_file"].execute({"file_path": "gone.py", "content": "model\n"}, ctx)
    assert not target.exists()
    tools["write_file"].execute({"file_path": "gone.py", "content": "model\n"}, ctx)  # told once: now a create
    assert target.read_text() == "model\n"
    tools["write_file"].execute({"file_path": "never-read.py", "content": "new\n"}, ctx)  # a create as ever


@pytest.mark.parametrize("tool", ["write_file", "edit_file", "apply_patch"])
def test_a_read_only_file_is_not_replaced(env, ctx, workdir: Path, tool: str):
    target = workdir / "ro.cfg"
    target.write_text("locked=1\n")
    target.chmod(0o444)
    tools = tools_of(coding_tools(env))
    tools["read_file"].execute({"file_path": "ro.cfg"}, ctx)
    args = {"write_file": {"file_path": "ro.cfg", "content": "locked=0\n"},
            "edit_file": {"file_path": "ro.cfg", "old_string": "locked=1", "new_string": "locked=0"},
            "apply_patch": patch("*** Update File: ro.cfg", "@@", "-locked=1", "+locked=0")}[tool]
    with pytest.raises(ToolError, match=r"read-only: no one may write it, mode 0444"):
        tools[tool].execute(args, ctx)
    assert target.read_text() == "locked=1\n" and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert leftovers(workdir) == []


def test_a_chmod_made_during_the_write_is_kept(env, ctx, workdir: Path, monkeypatch: pytest.MonkeyPatch):
    target = workdir / "run.sh"
    target.write_text("echo hi\n")
    target.chmod(0o644)
    tools = tools_of(coding_tools(env))
    tools["read_file"].execute({"file_path": "run.sh"}, ctx)
    monkeypatch.setattr(fs_safe, "_before_replace", lambda path, checked: subprocess.run(
        ["chmod", "755", str(target)], check=True) if checked else None)
    tools["write_file"].execute({"file_path": "run.sh", "content": "echo ho\n"}, ctx)
    assert target.read_text() == "echo ho\n" and stat.S_IMODE(target.stat().st_mode) == 0o755
    # made read-only meanwhile: refused, as a read-only file is
    tools["read_file"].execute({"file_path": "run.sh"}, ctx)
    monkeypatch.setattr(fs_safe, "_before_replace", lambda path, checked: subprocess.run(
        ["chmod", "444", str(target)], check=True) if checked else None)
    with pytest.raises(ToolError, match="read-only"):
        tools["write_file"].execute({"file_path": "run.sh", "content": "echo again\n"}, ctx)
    assert target.read_text() == "echo ho\n" and leftovers(workdir) == []
