"""Tool output truncation (SPEC §9.2; seed 004 §5.1-5.3).

Character truncation always runs first (it bounds size even for a file of two 10 MB lines), then an
optional line truncation for readability. Both keep the head and the tail (``head_tail``) or only the
tail (``tail``) and say exactly how much was removed. Per-tool defaults follow seed 004 §5.2/§5.3 for
the coding tools; the phi-core tools (bash, search, list_files, ...) get the defaults of the coding
tool they correspond to. Every limit can be overridden per call of :func:`truncate_tool_output`.
"""

from __future__ import annotations

from typing import Mapping

HEAD_TAIL = "head_tail"
TAIL = "tail"

#: Default character limit and mode per tool name (seed 004 §5.2).
DEFAULT_TOOL_LIMITS: dict[str, int] = {
    "read_file": 50_000, "read_many_files": 50_000, "shell": 30_000, "bash": 30_000,
    "grep": 20_000, "search": 20_000, "glob": 20_000, "list_dir": 20_000, "list_files": 20_000,
    "edit_file": 10_000, "apply_patch": 10_000, "write_file": 1_000, "spawn_agent": 20_000,
}
DEFAULT_TRUNCATION_MODES: dict[str, str] = {
    "read_file": HEAD_TAIL, "read_many_files": HEAD_TAIL, "shell": HEAD_TAIL, "bash": HEAD_TAIL,
    "grep": TAIL, "search": TAIL, "glob": TAIL, "list_dir": TAIL, "list_files": TAIL,
    "edit_file": TAIL, "apply_patch": TAIL, "write_file": TAIL, "spawn_agent": HEAD_TAIL,
}
#: Default line limit per tool name (seed 004 §5.3); tools not listed have none.
DEFAULT_LINE_LIMITS: dict[str, int | None] = {
    "shell": 256, "bash": 256, "grep": 200, "search": 200, "glob": 500, "list_files": 500, "list_dir": 500,
    "read_file": None, "read_many_files": None, "edit_file": None,
}
FALLBACK_LIMIT = 30_000
FALLBACK_MODE = HEAD_TAIL


def truncate_output(output: str, max_chars: int, mode: str = HEAD_TAIL) -> str:
    """Character truncation with the seed's warning markers."""
    if max_chars < 0:
        raise ValueError("max_chars must be >= 0")
    if len(output) <= max_chars:
        return output
    removed = len(output) - max_chars
    if mode == HEAD_TAIL:
        half = max_chars // 2
        tail = output[len(output) - half:] if half else ""
        return (
            output[:half]
            + f"\n\n[WARNING: Tool output was truncated. {removed} characters were removed from the middle. "
            "The full output is available in the event stream. "
            "If you need to see specific parts, re-run the tool with more targeted parameters.]\n\n"
            + tail
        )
    if mode == TAIL:
        tail = output[len(output) - max_chars:] if max_chars else ""
        return (
            f"[WARNING: Tool output was truncated. First {removed} characters were removed. "
            "The full output is available in the event stream.]\n\n" + tail
        )
    raise ValueError(f"unknown truncation mode {mode!r}; use {HEAD_TAIL!r} or {TAIL!r}")


def truncate_lines(output: str, max_lines: int) -> str:
    """Line truncation keeping the first and last lines (seed 004 §5.3)."""
    if max_lines < 1:
        raise ValueError("max_lines must be >= 1")
    lines = output.split("\n")
    if len(lines) <= max_lines:
        return output
    head_count = max_lines // 2
    tail_count = max_lines - head_count
    omitted = len(lines) - head_count - tail_count
    return "\n".join(lines[:head_count]) + f"\n[... {omitted} lines omitted ...]\n" + "\n".join(lines[-tail_count:])


def truncate_tool_output(
    output: str,
    tool_name: str,
    limits: Mapping[str, int] | None = None,
    line_limits: Mapping[str, int | None] | None = None,
    modes: Mapping[str, str] | None = None,
) -> str:
    """The full pipeline: character truncation, then line truncation, with per-tool overrides."""
    max_chars = (limits or {}).get(tool_name, DEFAULT_TOOL_LIMITS.get(tool_name, FALLBACK_LIMIT))
    mode = (modes or {}).get(tool_name, DEFAULT_TRUNCATION_MODES.get(tool_name, FALLBACK_MODE))
    result = truncate_output(output, max_chars, mode)
    if line_limits is not None and tool_name in line_limits:
        max_lines = line_limits[tool_name]
    else:
        max_lines = DEFAULT_LINE_LIMITS.get(tool_name)
    if max_lines is not None:
        result = truncate_lines(result, max_lines)
    return result
