"""Tool output truncation (SPEC §9.2; seed 004 §5.1-5.3).

One pass applies both the character limit and the line limit and leaves exactly one marker per
removed region that says how many lines and bytes it stands for, so nothing is removed silently and
no marker is cut away by a later step. ``head_tail`` keeps the first and the last part of the output
(half of each limit each; the end is where build summaries and test totals are), ``tail`` keeps only
the end, ``head`` only the beginning (listings and search results). Cuts fall on line boundaries, unless that would waste more than half of the character
budget (very long lines are cut in the middle instead).

Text can arrive with holes already in it: :class:`Omitted` stands for bytes a producer dropped
before the text was built (a command's output beyond its capture buffer). When a cut covers a hole,
the hole's bytes and lines are added to the cut's marker; a hole outside every cut keeps its own
marker. Per-tool defaults follow seed 004 §5.2/§5.3; every limit can be overridden per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, Union

HEAD_TAIL = "head_tail"
TAIL = "tail"
HEAD = "head"
MODES = (HEAD_TAIL, TAIL, HEAD)

#: Default character limit and mode per tool name (seed 004 §5.2). Listings and search results keep
#: their head, unlike the seed's ``tail``: they are ordered (newest first, by path), their tools
#: already stop at a result limit and say so at the end, and a tail would drop exactly the entries
#: the order put first (SPEC §9.2).
DEFAULT_TOOL_LIMITS: dict[str, int] = {
    "read_file": 50_000, "read_many_files": 50_000, "shell": 30_000, "bash": 30_000,
    "grep": 20_000, "search": 20_000, "glob": 20_000, "list_dir": 20_000, "list_files": 20_000,
    "edit_file": 10_000, "apply_patch": 10_000, "write_file": 1_000, "spawn_agent": 20_000,
}
DEFAULT_TRUNCATION_MODES: dict[str, str] = {
    "read_file": HEAD_TAIL, "read_many_files": HEAD_TAIL, "shell": HEAD_TAIL, "bash": HEAD_TAIL,
    "grep": HEAD, "search": HEAD, "glob": HEAD, "list_dir": HEAD, "list_files": HEAD,
    "edit_file": TAIL, "apply_patch": TAIL, "write_file": TAIL, "spawn_agent": HEAD_TAIL,
}
#: Default line limit per tool name (seed 004 §5.3); tools not listed have none.
DEFAULT_LINE_LIMITS: dict[str, int | None] = {
    "shell": 256, "bash": 256, "grep": 200, "search": 200, "glob": 500, "list_files": 500, "list_dir": 500,
    "read_file": None, "read_many_files": None, "edit_file": None,
}
FALLBACK_LIMIT = 30_000
FALLBACK_MODE = HEAD_TAIL


@dataclass(frozen=True)
class Omitted:
    """A hole in a text: ``bytes`` bytes containing ``lines`` newlines were dropped here."""

    bytes: int
    lines: int


Part = Union[str, Omitted]


def _where(saved_to: str | None) -> str:
    if saved_to is None:
        return "The full output is available in the event stream."
    return f"The full output was saved to {saved_to}; read or search that file for the parts you need."


def marker(hole: Omitted, at_start: bool, at_end: bool = False, saved_to: str | None = None) -> str:
    """The line standing for ``hole``: at the start, at the end or in the middle of the text."""
    if at_start:
        return (f"[WARNING: Tool output was truncated. The first {hole.lines} lines ({hole.bytes} bytes) were "
                f"removed. {_where(saved_to)}]")
    if at_end:
        return (f"[WARNING: Tool output was truncated. The last {hole.lines} lines ({hole.bytes} bytes) were "
                f"removed. {_where(saved_to)}]")
    return (f"[WARNING: Tool output was truncated. {hole.lines} lines ({hole.bytes} bytes) were removed "
            f"from the middle. {_where(saved_to)} "
            "If you need to see specific parts, re-run the tool with more targeted parameters.]")


def render(parts: Sequence[Part], saved_to: str | None = None) -> str:
    """The text of ``parts`` with a marker line for every hole (naming ``saved_to``, the file with the
    full output, when there is one)."""
    out: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
            continue
        at_start = not any(out)
        if out and not out[-1].endswith("\n") and not at_start:
            out.append("\n")
        out.append(marker(part, at_start, i == len(parts) - 1 and not at_start, saved_to))
        if i + 1 < len(parts):
            out.append("\n")
    return "".join(out)


def _head_cut(text: str, chars: float, lines: float) -> int:
    """How much of ``text`` fits ``chars`` characters and ``lines`` newlines, ending on a line end
    when one is in the second half of the budget."""
    limit = int(min(len(text), chars))
    pos = count = 0
    while count < lines:
        found = text.find("\n", pos, limit)
        if found < 0:
            break
        pos, count = found + 1, count + 1
    if count >= lines or limit == len(text):
        return pos if count >= lines else limit
    found = text.rfind("\n", 0, limit)
    return found + 1 if found >= 0 and found + 1 >= limit // 2 else limit


def _tail_cut(text: str, chars: float, lines: float) -> int:
    """Where the part of ``text``'s end that fits ``chars`` and ``lines`` begins (on a line start
    when one is in the first half of the budget)."""
    low = int(max(0, len(text) - chars))
    pos = len(text) - 1 if text.endswith("\n") else len(text)
    count = 0
    while count < lines:
        found = text.rfind("\n", low, pos)
        if found < 0:
            break
        count += 1
        if count >= lines:
            return found + 1
        pos = found
    if low == 0:
        return 0
    found = text.find("\n", low)
    if 0 <= found < len(text) - 1 and len(text) - found - 1 >= (len(text) - low) // 2:
        return found + 1
    return low


def _walk(parts: Sequence[Part], chars: float, lines: float, from_end: bool) -> tuple[int, int]:
    """(part index, offset) where the kept head ends / the kept tail begins."""
    order = range(len(parts) - 1, -1, -1) if from_end else range(len(parts))
    for i in order:
        part = parts[i]
        if not isinstance(part, str):
            continue
        cut = _tail_cut(part, chars, lines) if from_end else _head_cut(part, chars, lines)
        kept = part[cut:] if from_end else part[:cut]
        if (cut > 0) if from_end else (cut < len(part)):
            return i, cut
        chars -= len(kept)
        lines -= kept.count("\n")
    return (0, 0) if from_end else (len(parts), 0)


def _size(parts: Sequence[Part]) -> tuple[int, int]:
    texts = [p for p in parts if isinstance(p, str)]
    return sum(len(t) for t in texts), sum(t.count("\n") for t in texts) + 1


def clip(parts: Sequence[Part], max_chars: int | None, max_lines: int | None, mode: str = HEAD_TAIL) -> list[Part]:
    """``parts`` cut to ``max_chars`` characters and ``max_lines`` lines; removed regions become holes."""
    if mode not in MODES:
        raise ValueError(f"unknown truncation mode {mode!r}; use one of {', '.join(MODES)}")
    if max_chars is not None and max_chars < 0:
        raise ValueError("max_chars must be >= 0")
    if max_lines is not None and max_lines < 1:
        raise ValueError("max_lines must be >= 1")
    chars, lines = _size(parts)
    if (max_chars is None or chars <= max_chars) and (max_lines is None or lines <= max_lines):
        return list(parts)
    c_budget = float("inf") if max_chars is None else max_chars
    l_budget = float("inf") if max_lines is None else max_lines
    if mode == HEAD_TAIL:
        head_end = _walk(parts, c_budget // 2, l_budget // 2, from_end=False)
        tail_start = _walk(parts, c_budget - c_budget // 2, l_budget - l_budget // 2, from_end=True)
    elif mode == HEAD:
        head_end = _walk(parts, c_budget, l_budget, from_end=False)
        tail_start = (len(parts), 0)
    else:
        head_end = (0, 0)
        tail_start = _walk(parts, c_budget, l_budget, from_end=True)
    if head_end >= tail_start:
        return list(parts)
    return _assemble(parts, head_end, tail_start)


def _assemble(parts: Sequence[Part], head_end: tuple[int, int], tail_start: tuple[int, int]) -> list[Part]:
    (hi, ho), (ti, to) = head_end, tail_start
    kept: list[Part] = list(parts[:hi])
    removed: list[Part] = []
    for i in range(hi, ti + 1 if ti < len(parts) else ti):
        part = parts[i]
        start = ho if i == hi else 0
        end = to if i == ti else None
        if isinstance(part, str):
            if i == hi and start:
                kept.append(part[:start])
            removed.append(part[start:end])
        else:
            removed.append(part)
    size = sum(len(p.encode("utf-8", "replace")) if isinstance(p, str) else p.bytes for p in removed)
    newlines = sum(p.count("\n") if isinstance(p, str) else p.lines for p in removed)
    last = next((p for p in reversed(removed) if p != ""), "")
    if ti >= len(parts) and isinstance(last, str) and not last.endswith("\n"):
        newlines += 1  # the removed end holds a last line without a newline: it is a line too
    kept.append(Omitted(size, newlines))
    if ti < len(parts):
        first = parts[ti]
        kept.append(first[to:] if isinstance(first, str) else first)
        kept.extend(parts[ti + 1:])
    return [p for p in kept if p != ""]


def truncate_output(output: str, max_chars: int, mode: str = HEAD_TAIL) -> str:
    """Character truncation with one marker saying how many lines and bytes were removed."""
    return render(clip([output], max_chars, None, mode))


def truncate_lines(output: str, max_lines: int) -> str:
    """Line truncation keeping the first and last lines (seed 004 §5.3)."""
    return render(clip([output], None, max_lines, HEAD_TAIL))


def tool_limits(
    tool_name: str,
    limits: Mapping[str, int] | None = None,
    line_limits: Mapping[str, int | None] | None = None,
    modes: Mapping[str, str] | None = None,
) -> tuple[int, int | None, str]:
    """(max characters, max lines, mode) for ``tool_name`` with the overrides applied."""
    max_chars = (limits or {}).get(tool_name, DEFAULT_TOOL_LIMITS.get(tool_name, FALLBACK_LIMIT))
    mode = (modes or {}).get(tool_name, DEFAULT_TRUNCATION_MODES.get(tool_name, FALLBACK_MODE))
    if line_limits is not None and tool_name in line_limits:
        max_lines = line_limits[tool_name]
    else:
        max_lines = DEFAULT_LINE_LIMITS.get(tool_name)
    return max_chars, max_lines, mode


def truncate_tool_output(
    output: str | Sequence[Part],
    tool_name: str,
    limits: Mapping[str, int] | None = None,
    line_limits: Mapping[str, int | None] | None = None,
    modes: Mapping[str, str] | None = None,
) -> str:
    """The tool's output as the model sees it: both limits applied in one pass (see module docs)."""
    parts = [output] if isinstance(output, str) else list(output)
    max_chars, max_lines, mode = tool_limits(tool_name, limits, line_limits, modes)
    return render(clip(parts, max_chars, max_lines, mode))
