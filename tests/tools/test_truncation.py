"""Output truncation (SPEC §9.2)."""

from __future__ import annotations

import pytest

from phi.tools.truncation import (
    DEFAULT_LINE_LIMITS, DEFAULT_TOOL_LIMITS, truncate_lines, truncate_output, truncate_tool_output,
)


def test_short_output_is_untouched():
    assert truncate_output("abc", 3) == "abc"
    assert truncate_lines("a\nb", 2) == "a\nb"


def test_head_tail_keeps_both_ends_with_marker():
    out = truncate_output("A" * 50 + "B" * 50, 20, "head_tail")
    assert out.startswith("A" * 10 + "\n\n[WARNING: Tool output was truncated. 80 characters were removed from the middle.")
    assert out.endswith("]\n\n" + "B" * 10)
    assert "The full output is available in the event stream." in out


def test_tail_keeps_the_end():
    out = truncate_output("x" * 10 + "END", 3, "tail")
    assert out == ("[WARNING: Tool output was truncated. First 10 characters were removed. "
                   "The full output is available in the event stream.]\n\nEND")


def test_unknown_mode_and_bad_limits():
    with pytest.raises(ValueError):
        truncate_output("abcdef", 2, "middle")
    with pytest.raises(ValueError):
        truncate_output("abc", -1)
    with pytest.raises(ValueError):
        truncate_lines("a", 0)


def test_line_truncation():
    text = "\n".join(str(i) for i in range(10))
    assert truncate_lines(text, 4) == "0\n1\n[... 6 lines omitted ...]\n8\n9"


def test_character_truncation_runs_before_line_truncation():
    # two enormous lines: the line limit alone would let them through
    huge = ("x" * 1_000_000 + "\n") * 2
    out = truncate_tool_output(huge, "shell")
    assert len(out) < DEFAULT_TOOL_LIMITS["shell"] + 500
    many = "\n".join("l" for _ in range(1000))
    out = truncate_tool_output(many, "shell")
    assert "lines omitted" in out and len(out.split("\n")) == DEFAULT_LINE_LIMITS["shell"] + 1


def test_defaults_and_overrides():
    assert DEFAULT_TOOL_LIMITS["read_file"] == 50_000 and DEFAULT_TOOL_LIMITS["write_file"] == 1_000
    assert DEFAULT_LINE_LIMITS["grep"] == 200 and DEFAULT_LINE_LIMITS["read_file"] is None
    text = "y" * 2000
    assert truncate_tool_output(text, "write_file").startswith("[WARNING")
    assert truncate_tool_output(text, "write_file", limits={"write_file": 5000}) == text
    lines = "\n".join("z" for _ in range(300))
    assert truncate_tool_output(lines, "grep", line_limits={"grep": None}) == lines
    assert "omitted" in truncate_tool_output(lines, "grep")
    assert truncate_tool_output("q" * 40_000, "unknown_tool").startswith("q" * 15_000)
