"""How listings show paths and how long they may get (SPEC §9.2, §9.4).

* :func:`quote_path` — one path per line, always: a name with a newline (or another control
  character, a backslash, a double quote, or bytes that are not UTF-8) is shown in double quotes with
  C-style escapes, the way git shows such names: ``"dir/a\\nb.txt"``. A path shown without quotes is
  exactly the name; :func:`unquote_path` turns a quoted one back into it, and the file tools accept
  either form.
* :func:`fitting` — how many entries of a listing fit the tool's character and line limits, so a
  long listing keeps its *first* entries and ends with a note saying exactly how many were left out.
"""

from __future__ import annotations

import re
from typing import Sequence

__all__ = ["quote_path", "unquote_path", "fitting", "NOTE_ROOM"]

_NEEDS_QUOTES = re.compile('[\x00-\x1f\x7f"\\\\\ud800-\udfff]')
_SIMPLE = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_ESCAPE = re.compile(r'\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[\\"ntr])')
#: Characters kept free for the closing note ("... (N more files not shown; ...)").
NOTE_ROOM = 200


def _escape(ch: str) -> str:
    simple = _SIMPLE.get(ch)
    if simple is not None:
        return simple
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode carries it
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return ch


def quote_path(path: str) -> str:
    """``path`` as one line: unchanged when it needs no quoting, else quoted and escaped."""
    if _NEEDS_QUOTES.search(path) is None:
        return path
    return '"' + "".join(_escape(ch) for ch in path) + '"'


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] == "x":
        value = int(code[1:], 16)
        return chr(value) if value < 0x80 else chr(0xDC00 + value)
    if code[0] == "u":
        return chr(int(code[1:], 16))
    return {"n": "\n", "t": "\t", "r": "\r"}.get(code, code)


def unquote_path(text: str) -> str | None:
    """The name a :func:`quote_path` form stands for, or None when ``text`` is not one."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    body = text[1:-1]
    if re.search(r'(?<!\\)(?:\\\\)*"', body):  # an unescaped quote inside: not our form
        return None
    return _ESCAPE.sub(_unescape, body)


def fitting(lines: Sequence[str], max_chars: int, max_lines: int | None, reserve_lines: int = 1) -> int:
    """How many of ``lines`` (joined with newlines) fit ``max_chars`` characters less :data:`NOTE_ROOM`
    and ``max_lines`` lines less ``reserve_lines`` (for a header or a note)."""
    if sum(len(line) + 1 for line in lines) <= max_chars and (max_lines is None or len(lines) <= max_lines):
        return len(lines)
    budget = max(0, max_chars - NOTE_ROOM)
    line_budget = len(lines) if max_lines is None else max(0, max_lines - reserve_lines)
    used = 0
    for count, line in enumerate(lines):
        if count >= line_budget:
            return count
        used += len(line) + 1
        if used > budget:
            return count
    return len(lines)
