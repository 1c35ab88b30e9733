"""read_file, write_file, edit_file and read_many_files — phi-core and coding variants (SPEC §9.3, §9.4)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from phi.errors import ToolCancelled, ToolError
from phi.tools.edit_file import CodingEditFileTool, EditFileTool, find_similar_text
from phi.tools.environment import LocalExecutionEnvironment, ReadOnlyEnvironment
from phi.tools.read_file import CodingReadFileTool, ReadFileTool
from phi.tools.read_many_files import ReadManyFilesTool
from phi.tools.write_file import CodingWriteFileTool, WriteFileTool
from phi.types import ImageContent

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def text(result) -> str:
    return result.content[0].text


@pytest.fixture
def sample(workdir: Path) -> Path:
    path = workdir / "sample.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    return path


# -- read_file ---------------------------------------------------------------------------------

def test_core_read_numbered_with_header(env, ctx, sample):
    result = ReadFileTool(env=env).execute({"path": "sample.txt"}, ctx)
    lines = text(result).split("\n")
    assert lines[0] == "File: sample.txt (lines 1-10 of 10)"
    assert lines[1] == "  1 | line 1" and lines[10] == " 10 | line 10"
    assert result.details == {"path": "sample.txt", "total_lines": 10}


def test_core_read_offset_limit(env, ctx, sample):
    result = ReadFileTool(env=env).execute({"path": str(sample), "offset": 3, "limit": 2}, ctx)
    assert text(result) == "File: sample.txt (lines 3-4 of 10)\n  3 | line 3\n  4 | line 4"


def test_read_errors(env, ctx, workdir, sample):
    tool = ReadFileTool(env=env)
    with pytest.raises(ToolError, match="File not found: nope.txt"):
        tool.execute({"path": "nope.txt"}, ctx)
    (workdir / "dir").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        tool.execute({"path": "dir"}, ctx)
    with pytest.raises(ToolError, match="past the end"):
        tool.execute({"path": "sample.txt", "offset": 50}, ctx)


def test_read_too_large(env, ctx, workdir):
    (workdir / "big.txt").write_text("x\n" * 1000)
    tool = ReadFileTool(env=env, max_bytes=100)
    with pytest.raises(ToolError, match="File too large.*offset/limit"):
        tool.execute({"path": "big.txt"}, ctx)
    assert "lines 1-2 of 1000" in text(tool.execute({"path": "big.txt", "limit": 2}, ctx))


def test_read_binary_file_is_an_error(env, ctx, workdir):
    (workdir / "blob.bin").write_bytes(b"\x00\x01\x02binary\xff")
    with pytest.raises(ToolError, match="binary file"):
        ReadFileTool(env=env).execute({"path": "blob.bin"}, ctx)
    with pytest.raises(ToolError, match="binary file"):
        CodingReadFileTool(env=env).execute({"file_path": "blob.bin"}, ctx)


def test_read_invalid_utf8_is_replaced(env, ctx, workdir):
    (workdir / "latin.txt").write_bytes(b"caf\xe9\n")
    assert text(CodingReadFileTool(env=env).execute({"file_path": "latin.txt"}, ctx)) == "  1 | caf\ufffd"


def test_read_image_as_base64(env, ctx, workdir):
    (workdir / "pic.PNG").write_bytes(PNG)
    result = ReadFileTool(env=env).execute({"path": "pic.PNG"}, ctx)
    image = result.content[1]
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG
    assert result.details["mime_type"] == "image/png"
    (workdir / "photo.jpg").write_bytes(b"\xff\xd8" + b"0" * 100)
    with pytest.raises(ToolError, match="Image too large"):
        ReadFileTool(env=env, max_image_bytes=10).execute({"path": "photo.jpg"}, ctx)
    assert CodingReadFileTool(env=env).execute({"file_path": "photo.jpg"}, ctx).content[1].mime_type == "image/jpeg"


def test_read_cancelled_before_io(env, cancelled_ctx, sample):
    with pytest.raises(ToolCancelled):
        ReadFileTool(env=env).execute({"path": "sample.txt"}, cancelled_ctx)
    with pytest.raises(ToolCancelled):
        CodingReadFileTool(env=env).execute({"file_path": "sample.txt"}, cancelled_ctx)


def test_coding_read_default_limit_and_continuation(env, ctx, workdir):
    (workdir / "long.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))
    result = CodingReadFileTool(env=env).execute({"file_path": "long.txt"}, ctx)
    out = text(result)
    assert out.startswith("   1 | 1\n")
    assert "2000 | 2000\n[... 500 more lines; read on with offset=2001]" in out
    assert result.details["lines_read"] == 2000
    tail = text(CodingReadFileTool(env=env).execute({"file_path": "long.txt", "offset": 2499}, ctx))
    assert tail == "2499 | 2499\n2500 | 2500"
    (workdir / "empty.txt").write_text("")
    assert text(CodingReadFileTool(env=env).execute({"file_path": "empty.txt"}, ctx)) == "(empty file)"


def test_coding_read_huge_file_truncated_head_tail(env, ctx, workdir):
    (workdir / "wide.txt").write_text(("w" * 40_000 + "\n") * 3)
    out = text(CodingReadFileTool(env=env).execute({"file_path": "wide.txt"}, ctx))
    assert "[WARNING: Tool output was truncated." in out and len(out) < 51_000


# -- write_file --------------------------------------------------------------------------------

def test_write_creates_parents(env, ctx, workdir):
    result = WriteFileTool(env=env).execute({"path": "a/b/c.txt", "content": "héllo"}, ctx)
    assert (workdir / "a/b/c.txt").read_text() == "héllo"
    assert result.details == {"path": "a/b/c.txt", "bytes": 6, "created": True}
    result = CodingWriteFileTool(env=env).execute({"file_path": str(workdir / "a/b/c.txt"), "content": "x"}, ctx)
    assert text(result) == "Wrote 1 bytes to a/b/c.txt" and result.details["created"] is False


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/phi-escape-test.txt", "sub/../../escape.txt"])
def test_write_confined_to_working_directory(env, ctx, workdir, path):
    with pytest.raises(ToolError, match="outside the allowed directories"):
        WriteFileTool(env=env).execute({"path": path, "content": "x"}, ctx)
    assert not (workdir.parent / "escape.txt").exists()


def test_write_symlink_escape_refused(env, ctx, workdir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "link").symlink_to(outside)
    with pytest.raises(ToolError, match="outside"):
        CodingWriteFileTool(env=env).execute({"file_path": "link/x.txt", "content": "x"}, ctx)


def test_write_allowed_roots_option(env, ctx, tmp_path):
    other = tmp_path / "other"
    tool = WriteFileTool(env=env, allowed_roots=[str(tmp_path)])
    tool.execute({"path": str(other / "x.txt"), "content": "ok"}, ctx)
    assert (other / "x.txt").read_text() == "ok"
    wide_env = LocalExecutionEnvironment(env.working_directory(), allowed_write_roots=[str(tmp_path)])
    WriteFileTool(env=wide_env).execute({"path": "../y.txt", "content": "ok"}, ctx)
    assert (tmp_path / "y.txt").exists()


def test_write_errors_and_cancellation(env, ctx, cancelled_ctx, workdir):
    (workdir / "adir").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        WriteFileTool(env=env).execute({"path": "adir", "content": "x"}, ctx)
    with pytest.raises(ToolError, match="Permission denied"):
        WriteFileTool(env=ReadOnlyEnvironment(env)).execute({"path": "r.txt", "content": "x"}, ctx)
    with pytest.raises(ToolCancelled):
        WriteFileTool(env=env).execute({"path": "c.txt", "content": "x"}, cancelled_ctx)
    assert not (workdir / "c.txt").exists()


# -- edit_file ---------------------------------------------------------------------------------

def test_core_edit_happy_path(env, ctx, sample):
    result = EditFileTool(env=env).execute({"path": "sample.txt", "old_text": "line 3\nline 4\n",
                                            "new_text": "three\n"}, ctx)
    assert "line 2\nthree\nline 5" in sample.read_text()
    assert result.details["path"] == "sample.txt"
    assert result.details["old_lines"] == 3 and result.details["new_lines"] == 2
    assert "at line 3" in text(result)


def test_edit_zero_matches_gives_hint(env, ctx, sample):
    with pytest.raises(ToolError) as info:
        EditFileTool(env=env).execute({"path": "sample.txt", "old_text": "lime 7", "new_text": "x"}, ctx)
    message = str(info.value)
    assert message.startswith("old_text not found in sample.txt. Did you mean (line 7):")
    assert "  7 | line 7" in message
    with pytest.raises(ToolError, match="Read the file"):
        EditFileTool(env=env).execute({"path": "sample.txt", "old_text": "zzzzqqq", "new_text": "x"}, ctx)


def test_edit_multiple_matches_is_an_error(env, ctx, sample):
    before = sample.read_text()
    with pytest.raises(ToolError, match="old_text matches 10 locations in sample.txt. Include more"):
        EditFileTool(env=env).execute({"path": "sample.txt", "old_text": "line", "new_text": "x"}, ctx)
    with pytest.raises(ToolError, match="old_string matches 2 locations.*replace_all"):
        CodingEditFileTool(env=env).execute({"file_path": "sample.txt", "old_string": "line 1", "new_string": "x"}, ctx)
    assert sample.read_text() == before


def test_coding_edit_replace_all(env, ctx, sample):
    result = CodingEditFileTool(env=env).execute({"file_path": "sample.txt", "old_string": "line",
                                                  "new_string": "row", "replace_all": True}, ctx)
    assert sample.read_text().count("row") == 10 and result.details["replacements"] == 10
    assert "(10 replacements)" in text(result)


def test_coding_edit_whitespace_tolerant_fallback_reports_match(env, ctx, workdir):
    path = workdir / "code.py"
    path.write_text("def f():\n    return  “hello”\n")
    result = CodingEditFileTool(env=env).execute({"file_path": "code.py", "old_string": 'return "hello"',
                                                  "new_string": "return 'bye'"}, ctx)
    assert path.read_text() == "def f():\n    return 'bye'\n"
    assert result.details["fuzzy"] is True
    assert "no exact match" in text(result) and "return  “hello”" in text(result)
    # the strict phi-core tool does not fall back
    path.write_text("a  b\n")
    with pytest.raises(ToolError, match="not found"):
        EditFileTool(env=env).execute({"path": "code.py", "old_text": "a b", "new_text": "c"}, ctx)


def test_coding_edit_fuzzy_ambiguity_is_an_error(env, ctx, workdir):
    (workdir / "f.txt").write_text("a  b\na\tb\n")
    with pytest.raises(ToolError, match="matches 2 locations when ignoring whitespace"):
        CodingEditFileTool(env=env).execute({"file_path": "f.txt", "old_string": "a b", "new_string": "c"}, ctx)


def test_edit_errors(env, ctx, workdir, sample):
    tool = CodingEditFileTool(env=env)
    with pytest.raises(ToolError, match="File not found"):
        tool.execute({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}, ctx)
    with pytest.raises(ToolError, match="identical"):
        tool.execute({"file_path": "sample.txt", "old_string": "line 2", "new_string": "line 2"}, ctx)
    with pytest.raises(ToolError, match="must not be empty"):
        tool.execute({"file_path": "sample.txt", "old_string": "", "new_string": "b"}, ctx)
    (workdir / "bin.dat").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ToolError, match="not valid UTF-8"):
        tool.execute({"file_path": "bin.dat", "old_string": "a", "new_string": "b"}, ctx)
    with pytest.raises(ToolError, match="outside the allowed"):
        tool.execute({"file_path": "/etc/hostname", "old_string": "a", "new_string": "b"}, ctx)


def test_edit_cancelled_before_io(env, cancelled_ctx, sample):
    before = sample.read_text()
    with pytest.raises(ToolCancelled):
        EditFileTool(env=env).execute({"path": "sample.txt", "old_text": "line 2", "new_text": "x"}, cancelled_ctx)
    with pytest.raises(ToolCancelled):
        CodingEditFileTool(env=env).execute({"file_path": "sample.txt", "old_string": "line 2", "new_string": "x"},
                                            cancelled_ctx)
    assert sample.read_text() == before


def test_find_similar_text():
    assert find_similar_text("alpha\nbeta\ngamma\n", "gamna") == (3, "  3 | gamma")
    assert find_similar_text("alpha\n", "\n\n") is None
    assert find_similar_text("alpha\n", "zzzzzzzz") is None


# -- read_many_files ---------------------------------------------------------------------------

def test_read_many_files(env, ctx, workdir):
    (workdir / "src").mkdir()
    (workdir / "src/a.py").write_text("A = 1\n")
    (workdir / "src/b.py").write_text("B = 2\n")
    (workdir / "notes.md").write_text("# notes\n")
    (workdir / "blob.bin").write_bytes(b"\x00\x00")
    result = ReadManyFilesTool(env=env).execute({"paths": ["src/*.py", "notes.md", "blob.bin", "missing.txt"]}, ctx)
    out = text(result)
    assert "--- src/a.py ---\nA = 1" in out and "--- src/b.py ---\nB = 2" in out and "--- notes.md ---\n# notes" in out
    assert "blob.bin (" in out and "missing.txt (File not found" in out
    assert result.details["files"] == ["src/a.py", "src/b.py", "notes.md"]


def test_read_many_files_errors(env, ctx, cancelled_ctx):
    with pytest.raises(ToolError, match="No files could be read"):
        ReadManyFilesTool(env=env).execute({"paths": ["*.nothing"]}, ctx)
    with pytest.raises(ToolCancelled):
        ReadManyFilesTool(env=env).execute({"paths": ["x"]}, cancelled_ctx)
