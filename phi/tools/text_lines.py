"""Selecting a range of lines from a file in bounded memory (SPEC §9.3/§9.4 ``read_file``).

:func:`scan_lines` reads a binary stream in 1 MiB chunks: lines before the range are skipped by
counting newlines, lines inside it are kept until ``max_bytes`` of them are collected, and the rest
of the file is only counted. Memory stays at about one chunk plus ``max_bytes`` whatever the file's
size or the length of its lines. Lines split on ``\\n`` with one trailing ``\\r`` dropped (the same
rule as :func:`phi.tools.patch_parser.split_lines`); invalid UTF-8 becomes U+FFFD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Callable

__all__ = ["LineRange", "scan_lines", "CHUNK_BYTES"]

CHUNK_BYTES = 1 << 20


@dataclass
class LineRange:
    first: int                                        # 1-based number of lines[0] (the requested offset)
    lines: list[str] = field(default_factory=list[str])
    total: int = 0                                    # lines in the whole file
    next_line: int | None = None                      # first requested line left out by the byte budget
    cut_bytes: int = 0                                # bytes cut off the end of a single over-long line


class _Collector:
    def __init__(self, first: int, end: int | None, max_bytes: int) -> None:
        self.range = LineRange(first)
        self.end = end            # exclusive line number, None for "to the end"
        self.max_bytes = max_bytes
        self.used = 0
        self.current = bytearray()
        self.current_len = 0

    def wants(self, line_no: int) -> bool:
        return (line_no >= self.range.first and (self.end is None or line_no < self.end)
                and self.range.next_line is None)

    def add(self, piece: bytes) -> None:
        room = self.max_bytes - self.used + 1 - len(self.current)
        if room > 0:
            self.current += piece[:room]
        self.current_len += len(piece)

    def finish_line(self, line_no: int) -> None:
        data = bytes(self.current)
        if data.endswith(b"\r"):
            data = data[:-1]
        if self.used + self.current_len > self.max_bytes:
            if self.range.lines:
                self.range.next_line = line_no
            else:  # one line longer than the whole budget: show its beginning
                self.range.cut_bytes = self.current_len - self.max_bytes
                self.range.lines.append(data[: self.max_bytes].decode("utf-8", errors="replace"))
                self.range.next_line = line_no + 1
        else:
            self.range.lines.append(data.decode("utf-8", errors="replace"))
            self.used += self.current_len
        self.current = bytearray()
        self.current_len = 0


def _skip_to(chunk: bytes, pos: int, count: int) -> int:
    """Position after the ``count``-th newline at or after ``pos`` (the caller made sure it exists)."""
    for _ in range(count):
        pos = chunk.index(b"\n", pos) + 1
    return pos


def scan_lines(
    fh: BinaryIO,
    offset: int = 1,
    limit: int | None = None,
    max_bytes: int = 1 << 20,
    check: Callable[[], None] | None = None,
) -> LineRange:
    """Lines ``offset`` .. ``offset + limit - 1`` of ``fh`` (at most ``max_bytes`` of them) and the total."""
    first = max(offset, 1)
    out = _Collector(first, None if limit is None else first + max(limit, 0), max_bytes)
    line_no = 1
    last = b""
    while True:
        if check is not None:
            check()
        chunk = fh.read(CHUNK_BYTES)
        if not chunk:
            break
        last = chunk[-1:]
        pos = 0
        while pos < len(chunk):
            if not out.wants(line_no):
                newlines = chunk.count(b"\n", pos)
                need = first - line_no if line_no < first else newlines + 1
                if newlines < need:
                    line_no += newlines
                    break
                pos = _skip_to(chunk, pos, need)
                line_no += need
                continue
            end = chunk.find(b"\n", pos)
            out.add(chunk[pos: end if end >= 0 else len(chunk)])
            if end < 0:
                break
            out.finish_line(line_no)
            line_no += 1
            pos = end + 1
    if last not in (b"", b"\n"):
        if out.wants(line_no):
            out.finish_line(line_no)
        out.range.total = line_no
    else:
        out.range.total = line_no - 1
    return out.range
