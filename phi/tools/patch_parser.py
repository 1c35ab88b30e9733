"""Parser of the apply_patch ("v4a") format (SPEC §9.5; seed 004 Appendix A).

Accepts exactly what codex 0.169.0's parser accepts (measured against the binary): the whole text
is trimmed, CRLF normalised to LF and then split into lines (one more trailing ``\\r`` dropped per
line); the ``*** Begin Patch`` / ``*** End Patch`` markers and the file-operation headers may be
padded with whitespace; a ``<<EOF`` / ``<<'EOF'`` / ``<<"EOF"`` heredoc wrapper is unwrapped; an
``*** End Patch`` where a file operation could start ends the patch early if only blank lines and
the final marker follow it (a doubled end marker is accepted). In an
update, ``*** End of File`` lines right after the header are ignored, ``*** Move to:`` (trailing
whitespace ignored) comes next, and the first chunk may omit its ``@@`` line; ``@@`` lines are
right-trimmed, so ``@@ ctx  `` seeks ``ctx``. A blank line inside or before a chunk is an empty
context line; only after a chunk closed by ``*** End of File`` are whitespace-only lines skipped.
Anything else raises :class:`PatchParseError` — the only exception :func:`parse_patch` raises for
any input string.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Union

from ..errors import ToolError
from .text_match import (
    WHITESPACE,  # Unicode White_Space: what the reference implementation's trim() removes
)

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


class ChunkLine(NamedTuple):
    """One line of an update chunk: ``op`` is ``" "`` (context), ``"-"`` (removed) or ``"+"`` (added)."""

    op: str
    text: str


@dataclass
class UpdateChunk:
    change_context: str | None = None
    lines: list[ChunkLine] = field(default_factory=list[ChunkLine])
    is_end_of_file: bool = False

    @property
    def old_lines(self) -> list[str]:
        """The lines the chunk expects in the file: context and removed lines, in order."""
        return [line.text for line in self.lines if line.op != "+"]

    @property
    def new_lines(self) -> list[str]:
        """The lines the chunk leaves: context and added lines, in order."""
        return [line.text for line in self.lines if line.op != "-"]


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


def split_patch_lines(text: str) -> list[str]:
    """The patch's lines: CRLF first normalised to LF, then :func:`split_lines` (as codex 0.169 does).

    So a line ending in ``\\r\\r\\n`` loses both carriage returns; a lone ``\\r`` inside a line stays.
    """
    return split_lines(text.replace("\r\n", "\n"))


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
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers without a type checker
        raise PatchParseError(f"patch must be a string, got {type(text).__name__}")
    body = _body_lines(split_patch_lines(_trim(text)))
    hunks: list[Hunk] = []
    index, line_number = 0, 2
    while index < len(body):
        if _trim(body[index]) == END_PATCH:  # an early end marker: only blank lines may follow it
            if any(_trim(line) for line in body[index + 1:]):
                raise PatchParseError("The last line of the patch must be '*** End Patch'")
            break
        hunk, consumed = _parse_hunk(body[index:], line_number)
        hunks.append(hunk)
        index += consumed
        line_number += consumed
    return hunks


def _parse_hunk(lines: list[str], line_number: int) -> tuple[Hunk, int]:
    header = _trim(lines[0])
    if header.startswith(ADD_FILE):
        contents: list[str] = []
        consumed = 1
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


def _is_end_of_file(line: str) -> bool:
    return line.rstrip(WHITESPACE) == END_OF_FILE


def _skippable(line: str, chunks: list[UpdateChunk]) -> bool:
    """Lines the update parser passes over between chunks (codex 0.169's rules, measured).

    Before the first chunk only ``*** End of File`` lines are ignored (a blank line there is an
    empty context line of the first chunk); after a chunk closed by ``*** End of File``,
    whitespace-only lines are skipped. Anywhere else a blank line belongs to a chunk.
    """
    if not chunks:
        return _is_end_of_file(line)
    return chunks[-1].is_end_of_file and _trim(line) == ""


def _parse_update(path: str, lines: list[str], line_number: int) -> tuple[UpdateFile, int]:
    consumed = 1
    while consumed < len(lines) and _is_end_of_file(lines[consumed]):
        consumed += 1
    rest = lines[consumed:]
    move_path = None
    if rest and rest[0].rstrip(WHITESPACE).startswith(MOVE_TO):
        move_path = rest[0].rstrip(WHITESPACE)[len(MOVE_TO):]
        rest, consumed = rest[1:], consumed + 1
    chunks: list[UpdateChunk] = []
    while rest:
        if _skippable(rest[0], chunks):
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


def _chunk_header(line: str) -> tuple[bool, str | None]:
    """Whether ``line`` is an ``@@`` header (trailing whitespace ignored) and its context text."""
    header = line.rstrip(WHITESPACE)
    if header == EMPTY_CONTEXT_MARKER:
        return True, None
    if header.startswith(CONTEXT_MARKER):
        return True, header[len(CONTEXT_MARKER):]
    return False, None


def _parse_chunk(lines: list[str], line_number: int, allow_missing_context: bool) -> tuple[UpdateChunk, int]:
    is_header, context = _chunk_header(lines[0])
    if not is_header and not allow_missing_context:
        raise PatchParseError(f"Expected update hunk to start with a @@ context marker, got: '{lines[0]}'", line_number)
    chunk, start = UpdateChunk(change_context=context), 1 if is_header else 0
    if start >= len(lines):
        raise PatchParseError("Update hunk does not contain any lines", line_number + start)
    parsed = 0
    for line in lines[start:]:
        if _is_end_of_file(line):
            if parsed == 0:
                raise PatchParseError("Update hunk does not contain any lines", line_number + start)
            chunk.is_end_of_file = True
            parsed += 1
            break
        if line == "":
            chunk.lines.append(ChunkLine(" ", ""))
        elif line[0] in " +-":
            chunk.lines.append(ChunkLine(line[0], line[1:]))
        else:
            if parsed == 0:
                raise PatchParseError(
                    f"Unexpected line found in update hunk: '{line}'. Every line should start with "
                    "' ' (context line), '+' (added line), or '-' (removed line)",
                    line_number + start,
                )
            break
        parsed += 1
    return chunk, parsed + start
