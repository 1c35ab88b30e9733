"""The new text of a file updated by apply_patch chunks (SPEC §9.5), as codex 0.169 computes it.

The file is split into lines at ``\\r\\n``, ``\\n`` and lone ``\\r``; each line keeps its own ending.
Chunks are located in patch order, each at or after the end of the previous one, with
:func:`~phi.tools.text_match.seek_sequence` (exact first, then more and more tolerant of whitespace
and typographic punctuation); an ``*** End of File`` chunk only at the very end, and never over
lines an earlier chunk used. A chunk without expected lines is appended at the end of the file.
Context lines are only located: they keep the file's own text and ending, however loosely the
patch quoted them. Every run of removed/added lines becomes one replacement; replacements are
applied in order of where they start (patch order at the same start). Added lines take the file's
preferred ending (that of its first line; LF when it has none) and every line of the result ends
with a line break. Whatever cannot be located raises :class:`PatchApplyError`; nothing is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from .patch_parser import ChunkLine, PatchError, UpdateChunk
from .text_match import seek_sequence

__all__ = ["PatchApplyError", "derive_new_contents", "split_source_lines"]


class PatchApplyError(PatchError):
    """A parsed patch could not be applied to the files (missing file, context not found, ...)."""


_LINE_BREAK = re.compile(r"\r\n|\n|\r")


def split_source_lines(text: str) -> list[tuple[str, str]]:
    """A file's lines as (text, ending): ``\\r\\n``, ``\\n``, a lone ``\\r``, or '' for an unterminated last line."""
    lines: list[tuple[str, str]] = []
    position = 0
    for match in _LINE_BREAK.finditer(text):
        lines.append((text[position:match.start()], match.group()))
        position = match.end()
    if position < len(text):
        lines.append((text[position:], ""))
    return lines


@dataclass
class _Replacement:
    """Replace ``length`` file lines starting at ``start`` (an index into the original) with ``lines``."""

    start: int
    length: int = 0
    lines: list[str] = field(default_factory=list[str])


def _chunk_label(index: int, chunk: UpdateChunk) -> str:
    label = f"hunk {index + 1}"
    return label + (f" (@@ {chunk.change_context})" if chunk.change_context else "")


def _drop_last(lines: list[ChunkLine], side: str) -> list[ChunkLine]:
    """``lines`` without the last line of one side ("-": the expected lines, "+": the new lines).

    A context line belongs to both sides; losing one makes it an addition or a removal.
    """
    index = max(i for i, line in enumerate(lines) if line.op in (" ", side))
    out = lines[:index] + lines[index + 1:]
    if lines[index].op == " ":
        out.insert(index, ChunkLine("+" if side == "-" else "-", lines[index].text))
    return out


def _locate(lines: list[str], chunk: UpdateChunk, cursor: int) -> tuple[int | None, list[ChunkLine]]:
    """Where the chunk's expected lines start, and the chunk lines that matched there.

    As in codex: when the expected lines end with an empty line and are not found, that line
    (and the last new line, if empty too) is dropped and the search repeated.
    """
    entries = list(chunk.lines)
    found = seek_sequence(lines, chunk.old_lines, cursor, chunk.is_end_of_file)
    if found is None and chunk.old_lines[-1] == "":
        entries = _drop_last(entries, "-")
        if chunk.new_lines and chunk.new_lines[-1] == "":
            entries = _drop_last(entries, "+")
        old = [line.text for line in entries if line.op != "+"]
        found = seek_sequence(lines, old, cursor, chunk.is_end_of_file)
    return found, entries


def _replacements(entries: list[ChunkLine], start: int) -> list[_Replacement]:
    """One replacement per run of removed/added lines between context lines of a located chunk."""
    out: list[_Replacement] = []
    position = start
    run: _Replacement | None = None
    for op, text in entries:
        if op == " ":
            run = None
            position += 1
            continue
        if run is None:
            run = _Replacement(position)
            out.append(run)
        if op == "-":
            run.length += 1
            position += 1
        else:
            run.lines.append(text)
    return out


def _plan(lines: list[str], chunks: Sequence[UpdateChunk], path: str) -> list[_Replacement]:
    """Locate every chunk (in patch order, each after the previous one) and list its replacements.

    Context lines are only located: they stay as the file has them. Replacements are ordered by
    where they start; at the same start, patch order (pure additions all start at the end).
    """
    plan: list[_Replacement] = []
    cursor = 0
    for number, chunk in enumerate(chunks):
        if chunk.change_context is not None:
            found = seek_sequence(lines, [chunk.change_context], cursor, False)
            if found is None:
                raise PatchApplyError(
                    f"Failed to find context '{chunk.change_context}' in {path} ({_chunk_label(number, chunk)})")
            cursor = found + 1
        if not chunk.old_lines:  # a pure addition goes to the end of the file
            plan.append(_Replacement(len(lines), 0, chunk.new_lines))
            continue
        found, entries = _locate(lines, chunk, cursor)
        if found is None:
            raise PatchApplyError(
                f"Failed to find expected lines in {path} ({_chunk_label(number, chunk)}):\n" + "\n".join(chunk.old_lines))
        plan += _replacements(entries, found)
        cursor = found + sum(1 for line in entries if line.op != "+")
    return sorted(plan, key=lambda replacement: replacement.start)


def derive_new_contents(original: str, chunks: Sequence[UpdateChunk], path: str = "<file>") -> str:
    """The text of a file after applying ``chunks`` to ``original``.

    Untouched and context lines keep their own text and line ending; new lines get the file's
    preferred ending (that of its first line, LF if it has none); every line ends with a line break.
    """
    source = split_source_lines(original)
    preferred = source[0][1] if source and source[0][1] else "\n"
    out: list[str] = []
    done = 0
    for replacement in _plan([text for text, _ in source], chunks, path):
        out += [text + (ending or preferred) for text, ending in source[done:replacement.start]]
        out += [line + preferred for line in replacement.lines]
        done = replacement.start + replacement.length
    out += [text + (ending or preferred) for text, ending in source[done:]]
    return "".join(out)
