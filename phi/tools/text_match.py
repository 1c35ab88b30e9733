"""Tolerant text matching shared by apply_patch and edit_file (SPEC §9.4, §9.5).

:func:`seek_sequence` finds a run of lines in a file the way codex's apply_patch does: exact match
first, then ignoring trailing whitespace, then ignoring surrounding whitespace, then additionally
treating typographic dashes, quotes and spaces as their ASCII equivalents — each pass over the whole
range before the next, looser one. An end-of-file search tries only the last window, and only when
it does not start before the given position. :func:`fuzzy_find` does the character-level equivalent for
edit_file: whitespace runs collapse to one space and the same Unicode punctuation is normalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

_PUNCTUATION = {
    **{chr(c): "-" for c in range(0x2010, 0x2016)}, "\u2212": "-",
    **{chr(c): "'" for c in range(0x2018, 0x201C)},
    **{chr(c): '"' for c in range(0x201C, 0x2020)},
    "\u00a0": " ", **{chr(c): " " for c in range(0x2002, 0x200B)}, "\u202f": " ", "\u205f": " ", "\u3000": " ",
}
PUNCTUATION_TABLE = str.maketrans(_PUNCTUATION)
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def normalise_punctuation(text: str) -> str:
    return text.translate(PUNCTUATION_TABLE)


_PASSES: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: s.rstrip(WHITESPACE),
    lambda s: s.strip(WHITESPACE),
    lambda s: normalise_punctuation(s.strip(WHITESPACE)),
)


def seek_sequence(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    """Index of the first window of ``lines`` at or after ``start`` that matches ``pattern``.

    With ``eof`` only the window ending at the last line is tried, and only if it starts at or after
    ``start`` (so an end-of-file chunk never overlaps an earlier one). Returns None when nothing matches.
    """
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    first = max(start, last) if eof else start
    for norm in _PASSES:
        wanted = [norm(p) for p in pattern]
        for i in range(first, last + 1):
            if all(norm(lines[i + j]) == wanted[j] for j in range(len(pattern))):
                return i
    return None


@dataclass
class FuzzyMatch:
    start: int  # character offsets into the original text
    end: int

    def text(self, source: str) -> str:
        return source[self.start:self.end]


def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    """Whitespace runs → one space, punctuation → ASCII; plus each output char's source index."""
    out: list[str] = []
    index: list[int] = []
    in_space = False
    for i, ch in enumerate(normalise_punctuation(text)):
        if ch in WHITESPACE:
            if not in_space:
                out.append(" ")
                index.append(i)
            in_space = True
            continue
        in_space = False
        out.append(ch)
        index.append(i)
    return "".join(out), index


def fuzzy_find(source: str, needle: str) -> list[FuzzyMatch]:
    """Non-overlapping matches of ``needle`` in ``source`` modulo whitespace and Unicode punctuation."""
    norm_needle, _ = _normalise_with_map(needle)
    norm_needle = norm_needle.strip(" ")
    if not norm_needle:
        return []
    norm_source, index = _normalise_with_map(source)
    matches: list[FuzzyMatch] = []
    pos = norm_source.find(norm_needle)
    while pos != -1:
        last = pos + len(norm_needle) - 1
        matches.append(FuzzyMatch(index[pos], index[last] + 1))
        pos = norm_source.find(norm_needle, pos + len(norm_needle))
    return matches
