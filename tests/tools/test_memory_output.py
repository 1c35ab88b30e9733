"""Bounded memory and honest output (issue 10 item 12)."""

from __future__ import annotations

import os
import re
import tracemalloc
from pathlib import Path

import pytest

from phi.errors import ToolError
from phi.tools._common import FULL_OUTPUT_MAX_CHARS
from phi.tools.edit_file import CodingEditFileTool, fuzzy_regex
from phi.tools.read_file import CodingReadFileTool, ReadFileTool
from phi.tools.read_many_files import ReadManyFilesTool
from phi.tools.search import GrepTool, SearchTool
from phi.tools.shell import BashTool, ShellTool
from phi.tools.text_match import fuzzy_find

MARKER = re.compile(r"\[WARNING: Tool output was truncated\. (\d+) lines \((\d+) bytes\) were removed from the middle")


def peak_memory(call) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_edit_file_has_a_size_limit(env, ctx, workdir):
    (workdir / "big.txt").write_bytes(b"x = 1\n" * (11 * 1024 * 1024 // 6))
    with pytest.raises(ToolError, match="File too large: big.txt is .* the limit is 10485760 bytes"):
        CodingEditFileTool(env=env).execute({"file_path": "big.txt", "old_string": "x = 1", "new_string": "y"}, ctx)


def test_tolerant_edit_memory_is_a_small_multiple_of_the_file(env, ctx, workdir):
    body = "".join(f"value_{i} = {i}\n" for i in range(250_000))
    path = workdir / "big.py"
    path.write_text(body + "greeting = “hello”\n")
    size = path.stat().st_size
    tool = CodingEditFileTool(env=env)
    result, peak = peak_memory(lambda: tool.execute(
        {"file_path": "big.py", "old_string": 'greeting = "hello"', "new_string": "greeting = 'bye'"}, ctx))
    assert result.details["fuzzy"] is True and path.read_text().endswith("greeting = 'bye'\n")
    assert peak < 6 * size, f"peak {peak} bytes for a {size}-byte file"


@pytest.mark.parametrize("source, needle", [
    ("a  b\na\tb\n", "a b"), ("x = “q” ; y", 'x = "q" ;'), ("—dash— and -dash-", "-dash-"),
    ("  lead\u00a0space  ", " lead space "), ("no match here", "absent"), ("a\u2003\u2003b", "a\nb"),
])
def test_regex_match_equals_the_reference_tolerant_match(source, needle):
    pattern = fuzzy_regex(needle)
    ours = [m.span() for m in pattern.finditer(source)] if pattern else []
    assert ours == [(m.start, m.end) for m in fuzzy_find(source, needle)]


def test_full_output_over_the_limit_is_saved_whole(env, ctx, workdir):
    """Issue 25 item 16: past FULL_OUTPUT_MAX_CHARS the full output is a file, not a cut string."""
    for i in range(5):
        (workdir / f"f{i}.txt").write_text(f"{i}" * 900_000 + "\n")
    result = ReadManyFilesTool(env=env).execute({"paths": ["f*.txt"]}, ctx)
    assert result.details["truncated_output"] is True and "full_output" not in result.details
    path = result.details["full_output_path"]
    full = open(path, encoding="utf-8").read()
    assert len(full) == 4_500_083 > FULL_OUTPUT_MAX_CHARS and result.details["full_output_bytes"] == 4_500_083
    assert full.startswith("--- f0.txt ---\n0000") and full.endswith("4444") and "WARNING" not in full
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    # the model's marker counts exactly what it does not show, and names the file
    shown = result.text
    found = MARKER.search(shown)
    # the cuts fall inside lines, so render added one "\n" before the marker
    head, tail = shown[:found.start() - 1], shown[shown.index("]\n", found.start()) + 2:]
    assert int(found.group(2)) == 4_500_083 - len(head.encode()) - len(tail.encode())
    assert int(found.group(1)) == full.count("\n") - head.count("\n") - tail.count("\n")
    assert path in shown


def _numbers(text: str) -> list[int]:
    return [int(line) for line in text.split("\n") if line.isdigit()]


@pytest.mark.parametrize("tool_class", [BashTool, ShellTool])
def test_long_output_keeps_the_summary_and_counts_what_it_dropped(env, ctx, tool_class):
    command = "seq 1 1000000; echo 'TOTAL 1000000'"
    args = {"command": command, "timeout": 60} if tool_class is BashTool else {"command": command, "timeout_ms": 60_000}
    out = tool_class(env=env).execute(args, ctx).content[0].text
    assert "TOTAL 1000000" in out  # the end of the output, where summaries are, is kept
    assert len(MARKER.findall(out)) == 1
    lines, removed = map(int, MARKER.search(out).groups())
    head, tail = out[: MARKER.search(out).start()], out[MARKER.search(out).end():]
    first_hidden = max(_numbers(head)) + 1
    last_hidden = min(_numbers(tail)) - 1
    assert _numbers(head) == list(range(1, first_hidden)) and _numbers(tail) == list(range(last_hidden + 1, 1_000_001))
    assert lines == last_hidden - first_hidden + 1
    assert removed == sum(len(str(i)) + 1 for i in range(first_hidden, last_hidden + 1))


@pytest.fixture
def many_matches(workdir: Path) -> Path:
    path = workdir / "m.txt"
    path.write_text("".join(f"match {i}\n" for i in range(1, 300_001)))  # ~3.7 MB of results
    return path


@pytest.mark.parametrize("output_mode", ["content", "files_with_matches", "count"])
def test_search_with_many_matches_returns_whole_lines(env, ctx, many_matches, output_mode):
    result = GrepTool(env=env, backend="grep").execute({"pattern": "match", "output_mode": output_mode}, ctx)
    lines = result.content[0].text.split("\n")
    if output_mode == "content":
        assert lines[:100] == [f"m.txt:{i}:match {i}" for i in range(1, 101)]
        assert lines[100].startswith("[results limited to 100") and result.details["truncated"] is True
    else:
        assert lines == ["m.txt" if output_mode == "files_with_matches" else "m.txt:300000"]
    out = SearchTool(env=env, backend="grep").execute({"pattern": "match"}, ctx).content[0].text
    assert out.split("\n")[:200] == [f"m.txt:{i}:match {i}" for i in range(1, 201)]


def test_search_cuts_an_enormous_matching_line(env, ctx, workdir):
    (workdir / "min.js").write_text("var a=1;" * 100_000 + "\n")
    out = GrepTool(env=env, backend="grep").execute({"pattern": "var"}, ctx).content[0].text
    assert out.startswith("min.js:1:var a=1;") and "[... line cut: 798002 more bytes]" in out and len(out) < 3000


@pytest.fixture
def large_log(workdir: Path) -> Path:
    path = workdir / "log.txt"
    with open(path, "w") as fh:
        for block in range(64):
            fh.write("".join(f"{block:02d}-{i:06d} {'.' * 48}\n" for i in range(16_384)))
    return path


def test_ranged_read_of_a_large_file_streams(env, ctx, large_log):
    assert large_log.stat().st_size > 61_000_000
    result, peak = peak_memory(lambda: ReadFileTool(env=env).execute(
        {"path": "log.txt", "offset": 900_000, "limit": 3}, ctx))
    out = result.content[0].text
    assert out.split("\n")[0] == "File: log.txt (lines 900000-900002 of 1048576)"
    assert out.split("\n")[1] == f"900000 | 54-{900_000 - 1 - 54 * 16_384:06d} {'.' * 48}"
    assert peak < 6 * 1024 * 1024
    tail = CodingReadFileTool(env=env).execute({"file_path": "log.txt", "offset": 1_048_576}, ctx).content[0].text
    assert tail == f"1048576 | 63-016383 {'.' * 48}"
    with pytest.raises(ToolError, match="offset 1048577 is past the end of log.txt, which has 1048576 lines"):
        ReadFileTool(env=env).execute({"path": "log.txt", "offset": 1_048_577}, ctx)
    with pytest.raises(ToolError, match="File too large: log.txt is 6.* Use offset/limit"):
        ReadFileTool(env=env).execute({"path": "log.txt"}, ctx)


def test_ranged_read_output_is_bounded_and_says_how_to_continue(env, ctx, workdir):
    (workdir / "wide.txt").write_text("".join(f"{i} {'w' * 99}\n" for i in range(1, 1001)))
    out = ReadFileTool(env=env, max_bytes=1000).execute({"path": "wide.txt", "offset": 5, "limit": 100}, ctx)
    text = out.content[0].text
    assert text.startswith("File: wide.txt (lines 5-13 of 1000)")
    assert text.endswith("[output limited to 1000 bytes; read on with offset=14]")
    (workdir / "one.txt").write_text("z" * 5000)
    text = ReadFileTool(env=env, max_bytes=1000).execute({"path": "one.txt", "limit": 1}, ctx).content[0].text
    assert "1 | " + "z" * 1000 in text and "[line 1 is longer than 1000 bytes; 4000 bytes of it are not shown]" in text
