"""apply_patch parser leniency, matching rules, confinement, the tool, and a parser fuzz (SPEC §9.5).

The behaviours below were measured against codex's apply_patch (see notes in PROVENANCE.md of the
scenario fixtures); the end-to-end scenarios themselves are in test_apply_patch_scenarios.py.
"""

from __future__ import annotations


import pytest
from hypothesis import given, settings, strategies as st

from phi.errors import ToolCancelled, ToolError
from phi.tools.apply_patch import ApplyPatchTool, PatchApplyError, apply_patch, derive_new_contents
from phi.tools.patch_parser import (
    AddFile, ChunkLine, DeleteFile, PatchParseError, UpdateChunk, UpdateFile, parse_patch,
)
from phi.tools.text_match import seek_sequence


def P(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def C(*lines: str, ctx: str | None = None, eof: bool = False) -> UpdateChunk:
    """A chunk from patch-style lines (" ctx", "-old", "+new")."""
    return UpdateChunk(ctx, [ChunkLine(line[0], line[1:]) for line in lines], eof)


# -- parser ------------------------------------------------------------------------------------

def test_parse_all_operations():
    hunks = parse_patch(P("*** Add File: a.txt", "+one", "+two", "*** Delete File: b.txt",
                          "*** Update File: c.txt", "*** Move to: d.txt", "@@ def f():", "-    pass",
                          "+    return 1"))
    assert hunks == [
        AddFile("a.txt", "one\ntwo\n"), DeleteFile("b.txt"),
        UpdateFile("c.txt", "d.txt", [C("-    pass", "+    return 1", ctx="def f():")]),
    ]


def test_parse_leniency():
    # CRLF, padded markers and headers, a first chunk without @@, blank lines between chunks
    text = " *** Begin Patch \r\n  *** Update File: x.py\r\n import a\r\n+import b\r\n\r\n@@\r\n-c\r\n*** End Patch  \r\n"
    [hunk] = parse_patch(text)
    assert hunk.path == "x.py"
    assert hunk.chunks == [C(" import a", "+import b", " "), C("-c")]
    heredoc = "<<'EOF'\n" + P("*** Add File: h.txt", "+x") + "EOF\n"
    assert parse_patch(heredoc) == [AddFile("h.txt", "x\n")]
    eof = parse_patch(P("*** Update File: t", "@@", "-a", "+b", "*** End of File   "))
    assert eof[0].chunks[0].is_end_of_file is True
    assert parse_patch(P("*** Add File: empty.txt")) == [AddFile("empty.txt", "")]
    assert parse_patch(P()) == []


@pytest.mark.parametrize("text, message", [
    ("", "The last line of the patch must be '*** End Patch'"),
    ("bad", "The first line of the patch must be '*** Begin Patch'"),
    ("*** Begin Patch\n*** Add File: x\n+y", "The last line of the patch must be '*** End Patch'"),
    ("*** begin patch\n*** End Patch", "The first line"),
    ('<<"EOF\'\n*** Begin Patch\n*** End Patch\nEOF', "The first line"),
    (P("*** Frobnicate File: foo"), "line 2: '*** Frobnicate File: foo' is not a valid hunk header"),
    (P("*** Update File: foo.txt"), "line 2: Update file hunk for path 'foo.txt' is empty"),
    (P("*** Update File: f", "@@", "-a", "@@ ctx"), "Update hunk does not contain any lines"),
    (P("*** Update File: f", "@@ a", "@@ b", "-x"), "line 4: Unexpected line found in update hunk: '@@ b'"),
    (P("*** Update File: f", "@@", "-a", "x", "-b"), "Expected update hunk to start with a @@ context marker, got: 'x'"),
    (P("*** Update File: f", "@@", "*** End of File"), "Update hunk does not contain any lines"),
])
def test_parse_errors(text, message):
    with pytest.raises(PatchParseError) as info:
        parse_patch(text)
    assert message in str(info.value)


def test_indented_move_is_a_context_line():
    [hunk] = parse_patch(P("*** Update File: f", " *** Move to: g", "-a"))
    assert hunk.move_path is None and hunk.chunks[0].old_lines == ["*** Move to: g", "a"]
    assert hunk.chunks[0].new_lines == ["*** Move to: g"]


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_fuzz_arbitrary_text_only_raises_parse_error(text):
    try:
        parse_patch(text)
    except PatchParseError:
        pass


_LINE = st.one_of(
    st.sampled_from(["*** Begin Patch", "*** End Patch", "*** Add File: a", "*** Delete File: b",
                     "*** Update File: c", "*** Move to: d", "@@", "@@ ctx", "*** End of File", "", " ",
                     "<<EOF", "EOF", "  *** Update File: e "]),
    st.text(alphabet="+- @*\r\t\u00a0\u2014x", max_size=6),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, max_size=12))
def test_fuzz_patch_shaped_text_only_raises_parse_error(lines):
    try:
        hunks = parse_patch("\n".join(lines))
    except PatchParseError:
        return
    for hunk in hunks:
        assert isinstance(hunk, (AddFile, DeleteFile, UpdateFile))
        if isinstance(hunk, UpdateFile):
            assert hunk.chunks


# -- matching ----------------------------------------------------------------------------------

def test_seek_sequence_passes():
    lines = ["a  ", "  b", "c \u2014 d", "x"]
    assert seek_sequence(lines, ["a"], 0, False) == 0          # trailing whitespace
    assert seek_sequence(lines, ["b"], 0, False) == 1          # surrounding whitespace
    assert seek_sequence(lines, ["c - d"], 0, False) == 2      # Unicode dash
    assert seek_sequence(lines, [], 3, False) == 3
    assert seek_sequence(lines, ["x", "y"], 0, False) is None
    assert seek_sequence(["q"] * 2, ["z"] * 3, 0, False) is None
    assert seek_sequence(["k", "k", "k"], ["k"], 0, True) == 2
    assert seek_sequence(["a", "b", "c"], ["b", "c"], 2, True) is None  # EOF window before the cursor


def test_derive_new_contents_rules():
    assert derive_new_contents("one\r\ntwo\r\nthree\r\n", [C("-two", "+TWO")]) == "one\r\nTWO\r\nthree\r\n"
    assert derive_new_contents("a\nb\nc", [C("-b", "+B")]) == "a\nB\nc\n"
    assert derive_new_contents("a\nb\nc\n", [C("+x", ctx="a")]) == "a\nb\nc\nx\n"  # pure add appends
    assert derive_new_contents("    bar\n", [C("-bar", "+baz")]) == "baz\n"  # inserted as written
    assert derive_new_contents("it’s “quoted”\n", [C("-it's \"quoted\"", "+plain")]) == "plain\n"
    assert derive_new_contents("k\nk\n", [C("-k", "+last", eof=True)]) == "k\nlast\n"
    assert derive_new_contents("k\nk\n", [C("-k", "+first")]) == "first\nk\n"
    assert derive_new_contents("x\ny\n", [C("-y", "+z", " ")]) == "x\nz\n"  # trailing empty retried
    assert derive_new_contents("", [C("+new")]) == "new\n"


def test_derive_errors_name_file_and_hunk():
    with pytest.raises(PatchApplyError, match=r"Failed to find context 'nope' in f.py \(hunk 1 \(@@ nope\)\)"):
        derive_new_contents("a\n", [C("-a", "+b", ctx="nope")], "f.py")
    with pytest.raises(PatchApplyError, match=r"Failed to find expected lines in f.py \(hunk 2\):\nzzz"):
        derive_new_contents("a\nb\n", [C("-a", "+A"), C("-zzz", "+q")], "f.py")
    with pytest.raises(PatchApplyError, match="expected lines"):  # chunks must be in file order
        derive_new_contents("a\nb\n", [C("-b", "+B"), C("-a", "+A")], "f.py")
    with pytest.raises(PatchApplyError, match="expected lines"):  # EOF marker: only the last window
        derive_new_contents("a\nb\n", [C("-a", "+A", eof=True)], "f.py")


# -- applying and confinement ------------------------------------------------------------------

def test_apply_reports_files(env, workdir):
    (workdir / "m.txt").write_text("old\n")
    (workdir / "d.txt").write_text("bye\n")
    result = apply_patch(P("*** Add File: n/a.txt", "+hi", "*** Update File: m.txt", "*** Move to: moved.txt",
                           "@@", "-old", "+new", "*** Delete File: d.txt"), env)
    assert result.summary() == "Success. Updated the following files:\nA n/a.txt\nM moved.txt\nD d.txt"
    assert (workdir / "moved.txt").read_text() == "new\n" and not (workdir / "m.txt").exists()


@pytest.mark.parametrize("target", ["link/f.txt", "./f.txt", "sub/../f.txt"])
def test_a_move_onto_the_same_file_keeps_it(env, workdir, target):
    # through a symlinked directory or a roundabout path, the destination is the source itself
    (workdir / "f.txt").write_text("a\n")
    (workdir / "link").symlink_to(".")
    (workdir / "sub").mkdir()
    apply_patch(P("*** Update File: f.txt", f"*** Move to: {target}", "@@", "-a", "+A"), env)
    assert (workdir / "f.txt").read_text() == "A\n"


def test_a_move_onto_a_hard_link_of_the_file_moves_it(env, workdir):
    (workdir / "f.txt").write_text("a\n")
    (workdir / "hard.txt").hardlink_to(workdir / "f.txt")
    apply_patch(P("*** Update File: f.txt", "*** Move to: hard.txt", "@@", "-a", "+A"), env)
    assert (workdir / "hard.txt").read_text() == "A\n" and not (workdir / "f.txt").exists()


def test_apply_empty_patch_fails(env):
    with pytest.raises(PatchApplyError, match="No files were modified."):
        apply_patch(P(), env)


@pytest.mark.parametrize("header", ["*** Add File: ../outside.txt", "*** Add File: /tmp/phi-outside.txt",
                                    "*** Delete File: ../victim.txt", "*** Update File: ../victim.txt"])
def test_apply_confined_to_working_directory(env, workdir, header):
    (workdir.parent / "victim.txt").write_text("keep\n")
    (workdir / "inside.txt").write_text("")
    lines = [header] + (["@@", "-keep", "+gone"] if "Update" in header else ["+x"] if "Add" in header else [])
    patch = P("*** Add File: inside-first.txt", "+1", *lines)
    with pytest.raises(ToolError, match="outside the allowed directories"):
        apply_patch(patch, env)
    assert not (workdir / "inside-first.txt").exists()  # checked before any change
    assert (workdir.parent / "victim.txt").read_text() == "keep\n"


def test_apply_move_outside_refused_and_allowed_roots(env, workdir, tmp_path):
    (workdir / "f.txt").write_text("a\n")
    patch = P("*** Update File: f.txt", "*** Move to: ../g.txt", "@@", "-a", "+b")
    with pytest.raises(ToolError, match="outside"):
        apply_patch(patch, env)
    apply_patch(patch, env, allowed_roots=[str(tmp_path)])
    assert (tmp_path / "g.txt").read_text() == "b\n"


def test_apply_errors(env, workdir):
    with pytest.raises(PatchApplyError, match="Failed to read file to update .*missing.txt"):
        apply_patch(P("*** Update File: missing.txt", "@@", "-a", "+b"), env)
    (workdir / "dir").mkdir()
    with pytest.raises(PatchApplyError, match="Failed to delete file dir"):
        apply_patch(P("*** Delete File: dir"), env)
    (workdir / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(PatchApplyError, match="not valid UTF-8"):
        apply_patch(P("*** Update File: bin", "@@", "-a", "+b"), env)
    with pytest.raises(PatchApplyError, match=r"Already applied before this failure: A ok.txt"):
        apply_patch(P("*** Add File: ok.txt", "+x", "*** Delete File: nope.txt"), env)


def test_tool_happy_path_error_and_cancel(env, ctx, cancelled_ctx, workdir):
    tool = ApplyPatchTool(env=env)
    result = tool.execute({"patch": P("*** Add File: t.txt", "+x")}, ctx)
    assert result.content[0].text == "Success. Updated the following files:\nA t.txt"
    assert result.details == {"added": ["t.txt"], "modified": [], "deleted": []}
    with pytest.raises(ToolError, match="Invalid patch"):
        tool.execute({"patch": "nonsense"}, ctx)
    with pytest.raises(ToolCancelled):
        tool.execute({"patch": P("*** Add File: c.txt", "+x")}, cancelled_ctx)
    assert not (workdir / "c.txt").exists()
