"""Output truncation (SPEC §9.2)."""

from __future__ import annotations

import re

import pytest

from phi.tools.truncation import (
    DEFAULT_LINE_LIMITS, DEFAULT_TOOL_LIMITS, Omitted, clip, render, truncate_lines, truncate_output,
    truncate_tool_output,
)

MARKER = re.compile(r"\[WARNING: Tool output was truncated\. (?:The (?:first|last) )?(\d+) lines \((\d+) bytes\) were removed")


def removed(text: str) -> tuple[int, int]:
    """(lines, bytes) summed over every marker in ``text``."""
    found = [(int(a), int(b)) for a, b in MARKER.findall(text)]
    return sum(f[0] for f in found), sum(f[1] for f in found)


def test_short_output_is_untouched():
    assert truncate_output("abc", 3) == "abc"
    assert truncate_lines("a\nb", 2) == "a\nb"


def test_head_tail_keeps_both_ends_with_marker():
    out = truncate_output("A" * 50 + "B" * 50, 20, "head_tail")
    assert out.startswith("A" * 10 + "\n[WARNING: Tool output was truncated. "
                          "0 lines (80 bytes) were removed from the middle.")
    assert out.endswith("]\n" + "B" * 10)
    assert "The full output is available in the event stream." in out


def test_tail_keeps_the_end():
    out = truncate_output("x" * 10 + "END", 3, "tail")
    assert out == ("[WARNING: Tool output was truncated. The first 0 lines (10 bytes) were removed. "
                   "The full output is available in the event stream.]\nEND")


def test_unknown_mode_and_bad_limits():
    with pytest.raises(ValueError):
        truncate_output("abcdef", 2, "middle")
    with pytest.raises(ValueError):
        truncate_output("abc", -1)
    with pytest.raises(ValueError):
        truncate_lines("a", 0)


def test_line_truncation_cuts_whole_lines_and_counts_them():
    text = "\n".join(str(i) for i in range(10))
    out = truncate_lines(text, 4)
    assert out.startswith("0\n1\n[WARNING: Tool output was truncated. 6 lines (12 bytes) were removed")
    assert out.endswith("]\n8\n9")


def test_both_limits_leave_one_exact_marker():
    # two enormous lines: the line limit alone would let them through
    huge = ("x" * 1_000_000 + "\n") * 2
    out = truncate_tool_output(huge, "shell")
    assert len(out) < DEFAULT_TOOL_LIMITS["shell"] + 500
    assert out.count("[WARNING") == 1 and removed(out)[1] == len(huge) - out.count("x") - 1
    many = "\n".join(f"l{i}" for i in range(1000))
    out = truncate_tool_output(many, "shell")
    lines = out.split("\n")
    assert len(lines) == DEFAULT_LINE_LIMITS["shell"] + 1 and out.count("[WARNING") == 1
    assert lines[0] == "l0" and lines[-1] == "l999"
    assert removed(out)[0] == 1000 - DEFAULT_LINE_LIMITS["shell"]


def test_marker_counts_are_exact_for_any_cut():
    text = "".join(f"line {i} {'é' * (i % 7)}\n" for i in range(5000))
    for chars, lines in ((30_000, 256), (1000, None), (100_000, 40), (50, 3)):
        out = truncate_tool_output(text, "t", limits={"t": chars}, line_limits={"t": lines})
        marker = MARKER.search(out)
        head, tail = out[: marker.start()], out[out.index("]\n", marker.start()) + 2:]
        gone_lines, gone_bytes = removed(out)
        assert head.endswith("\n")  # short lines: every cut falls on a line boundary
        assert len(text.encode()) - gone_bytes == len(head.encode()) + len(tail.encode())
        assert text.count("\n") - gone_lines == head.count("\n") + tail.count("\n")


def test_holes_are_folded_into_the_cut_that_covers_them():
    parts = ["head\n" * 10, Omitted(5_000_000, 70_000), "tail\n" * 10]
    out = render(clip(parts, 20, None, "head_tail"))
    assert out.count("[WARNING") == 1
    lines, size = removed(out)
    assert lines == 70_000 + 20 - out.count("head\n") - out.count("tail\n")
    assert size == 5_000_000 + 100 - 5 * (out.count("head\n") + out.count("tail\n"))
    # a hole no cut touches keeps its own marker
    assert render(parts).count("[WARNING") == 1 and removed(render(parts)) == (70_000, 5_000_000)


def test_defaults_and_overrides():
    assert DEFAULT_TOOL_LIMITS["read_file"] == 50_000 and DEFAULT_TOOL_LIMITS["write_file"] == 1_000
    assert DEFAULT_LINE_LIMITS["grep"] == 200 and DEFAULT_LINE_LIMITS["read_file"] is None
    text = "y" * 2000
    assert truncate_tool_output(text, "write_file").startswith("[WARNING")
    assert truncate_tool_output(text, "write_file", limits={"write_file": 5000}) == text
    lines = "\n".join("z" for _ in range(300))
    assert truncate_tool_output(lines, "grep", line_limits={"grep": None}) == lines
    assert removed(truncate_tool_output(lines, "grep"))[0] == 100  # search results keep their head
    assert truncate_tool_output(lines, "grep").startswith("z\nz\n")
    assert truncate_tool_output("q" * 40_000, "unknown_tool").startswith("q" * 15_000)
