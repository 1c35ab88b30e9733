"""Parser of the apply_patch ("v4a") format (SPEC §9.5; seed 004 Appendix A).

Accepts exactly what codex's reference parser accepts, with the same leniency: the whole text is
trimmed; the ``*** Begin Patch`` / ``*** End Patch`` markers and the file-operation headers may be
padded with whitespace; a ``<<EOF`` / ``<<'EOF'`` / ``<<"EOF"`` heredoc wrapper is unwrapped; CRLF
input works; the first chunk of an update may omit its ``@@`` line; blank lines between chunks are
skipped; ``*** End of File`` anchors a chunk at the end of the file. Anything else raises
:class:`PatchParseError` — the only exception :func:`parse_patch` raises for any input string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..errors import ToolError

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
CONTEXT_MARKER = "@@ "
EMPTY_CONTEXT_MARKER = "@@"
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')

# Unicode White_Space, which is what the reference implementation's trim() removes.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


class PatchError(ToolError):
    """A patch could not be parsed or applied."""


class PatchParseError(PatchError, ValueError):
    """The patch text is not valid; ``line_number`` (1-based) says where, when known."""

    def __init__(self, message: str, line_number: int | None = None) -> None:
        self.line_number = line_number
        self.reason = message
        if line_number is None:
            super().__init__(f"Invalid patch: {message}")
        else:
            super().__init__(f"Invalid patch hunk on line {line_number}: {message}")


@dataclass
class UpdateChunk:
    change_context: str | None = None
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)
    is_end_of_file: bool = False


@dataclass
class AddFile:
    path: str
    contents: str


@dataclass
class DeleteFile:
    path: str


@dataclass
class UpdateFile:
    path: str
    move_path: str | None
    chunks: list[UpdateChunk]


Hunk = Union[AddFile, DeleteFile, UpdateFile]


def _trim(text: str) -> str:
    return text.strip(WHITESPACE)


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` with one trailing ``\\r`` dropped per line (no final empty line)."""
    if not text:
        return []
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()
    return [p[:-1] if p.endswith("\r") else p for p in pieces]


def _check_boundaries(lines: list[str]) -> list[str]:
    """The lines between the markers; raises if the first/last lines are not the markers."""
    first = _trim(lines[0]) if lines else None
    last = _trim(lines[-1]) if lines else None
    if first == BEGIN_PATCH and last == END_PATCH and len(lines) >= 2:
        return lines[1:-1]
    if first == BEGIN_PATCH and last == END_PATCH:  # a single line cannot be both markers
        raise PatchParseError("The last line of the patch must be '*** End Patch'")
    if first is not None and first != BEGIN_PATCH:
        raise PatchParseError("The first line of the patch must be '*** Begin Patch'")
    raise PatchParseError("The last line of the patch must be '*** End Patch'")


def _body_lines(lines: list[str]) -> list[str]:
    try:
        return _check_boundaries(lines)
    except PatchParseError as strict_error:
        if len(lines) >= 4 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            return _check_boundaries(lines[1:-1])
        raise strict_error


def parse_patch(text: str) -> list[Hunk]:
    """Parse patch text into hunks (file operations), in patch order."""
    if not isinstance(text, str):
        raise PatchParseError(f"patch must be a string, got {type(text).__name__}")
    body = _body_lines(split_lines(_trim(text)))
    hunks: list[Hunk] = []
    index, line_number = 0, 2
    while index < len(body):
        hunk, consumed = _parse_hunk(body[index:], line_number)
        hunks.append(hunk)
        index += consumed
        line_number += consumed
    return hunks


def _parse_hunk(lines: list[str], line_number: int) -> tuple[Hunk, int]:
    header = _trim(lines[0])
    if header.startswith(ADD_FILE):
        contents, consumed = [], 1
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            contents.append(line[1:] + "\n")
            consumed += 1
        return AddFile(header[len(ADD_FILE):], "".join(contents)), consumed
    if header.startswith(DELETE_FILE):
        return DeleteFile(header[len(DELETE_FILE):]), 1
    if header.startswith(UPDATE_FILE):
        return _parse_update(header[len(UPDATE_FILE):], lines, line_number)
    raise PatchParseError(
        f"'{header}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
        "'*** Delete File: {path}', '*** Update File: {path}'",
        line_number,
    )


def _parse_update(path: str, lines: list[str], line_number: int) -> tuple[UpdateFile, int]:
    rest = lines[1:]
    consumed = 1
    move_path = None
    if rest and rest[0].startswith(MOVE_TO):
        move_path = rest[0][len(MOVE_TO):]
        rest, consumed = rest[1:], consumed + 1
    chunks: list[UpdateChunk] = []
    while rest:
        if _trim(rest[0]) == "":
            rest, consumed = rest[1:], consumed + 1
            continue
        if rest[0].startswith("*"):
            break
        chunk, used = _parse_chunk(rest, line_number + consumed, allow_missing_context=not chunks)
        chunks.append(chunk)
        rest, consumed = rest[used:], consumed + used
    if not chunks:
        raise PatchParseError(f"Update file hunk for path '{path}' is empty", line_number)
    return UpdateFile(path, move_path, chunks), consumed


def _parse_chunk(lines: list[str], line_number: int, allow_missing_context: bool) -> tuple[UpdateChunk, int]:
    first = lines[0]
    if first == EMPTY_CONTEXT_MARKER:
        chunk, start = UpdateChunk(), 1
    elif first.startswith(CONTEXT_MARKER):
        chunk, start = UpdateChunk(change_context=first[len(CONTEXT_MARKER):]), 1
    elif allow_missing_context:
        chunk, start = UpdateChunk(), 0
    else:
        raise PatchParseError(f"Expected update hunk to start with a @@ context marker, got: '{first}'", line_number)
    if start >= len(lines):
        raise PatchParseError("Update hunk does not contain any lines", line_number + 1)
    parsed = 0
    for line in lines[start:]:
        if line.rstrip(WHITESPACE) == END_OF_FILE:
            if parsed == 0:
                raise PatchParseError("Update hunk does not contain any lines", line_number + 1)
            chunk.is_end_of_file = True
            parsed += 1
            break
        if line == "":
            chunk.old_lines.append("")
            chunk.new_lines.append("")
        elif line[0] == " ":
            chunk.old_lines.append(line[1:])
            chunk.new_lines.append(line[1:])
        elif line[0] == "+":
            chunk.new_lines.append(line[1:])
        elif line[0] == "-":
            chunk.old_lines.append(line[1:])
        else:
            if parsed == 0:
                raise PatchParseError(
                    f"Unexpected line found in update hunk: '{line}'. Every line should start with "
                    "' ' (context line), '+' (added line), or '-' (removed line)",
                    line_number + 1,
                )
            break
        parsed += 1
    return chunk, parsed + start
