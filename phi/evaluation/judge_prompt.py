"""Fitting an LLM judge's prompt into its context budget (SPEC §13.3 EVAL-6; seed 000
REQ-202, REQ-208).

Every candidate response must be in front of the judge at once, so when the prior conversation and
the responses are too long together they are shortened — never the query, never the scaffolding of
the prompt. A text is shortened through three tiers, each applied to the previous one's result,
stopping at the first that fits its allowance:

1. its last 80 lines (a marker line says how many came before);
2. of those, the first and the last paragraph (a marker says how many paragraphs were left out);
3. a hard cut to the allowance: the start and the end of the text, around a marker.

:func:`compact_for_judge` runs two iterations. Iteration 1 shortens only the prior conversation,
into what the untouched responses leave. Iteration 2, if that is not enough, shortens the prior
conversation and every response independently, each into its fair share of the budget (the budget
divided by the number of texts, with what short texts do not need handed on to the longer ones).
The judge's decision applies to the branches themselves: their messages are never changed.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

__all__ = ["TAIL_LINES", "compact_for_judge", "fair_shares", "fit_text", "keep_ends", "keep_first_last_paragraph",
           "keep_last_lines"]

TAIL_LINES = 80

Count = Callable[[str], int]

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def keep_last_lines(text: str, lines: int = TAIL_LINES) -> str:
    """Tier 1: the last ``lines`` lines, after a line saying how many were left out."""
    parts = text.split("\n")
    if len(parts) <= lines:
        return text
    return "\n".join([f"[... {len(parts) - lines} earlier lines omitted ...]", *parts[-lines:]])


def keep_first_last_paragraph(text: str) -> str:
    """Tier 2: the first and the last paragraph (paragraphs are separated by blank lines)."""
    paragraphs = [p.strip("\n") for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    if len(paragraphs) <= 2:
        return text
    return f"{paragraphs[0]}\n\n[... {len(paragraphs) - 2} paragraphs omitted ...]\n\n{paragraphs[-1]}"


def keep_ends(text: str, limit: int, count: Count) -> str:
    """Tier 3: the start and the end of ``text`` around a marker, cut until ``count`` of it is at
    most ``limit`` (if even the marker alone is over, the marker alone)."""
    if count(text) <= limit:
        return text
    keep = min(len(text), max(limit, 0) * 4)  # a first guess at four characters per token
    while keep > 0:
        head, tail = text[: (keep + 1) // 2], text[len(text) - keep // 2:]
        cut = f"{head}\n[... {len(text) - keep} characters omitted ...]\n{tail}"
        used = count(cut)
        if used <= limit:
            return cut
        keep = min(keep - 1, keep * limit // used)
    return f"[... {len(text)} characters omitted ...]"


def fit_text(text: str, limit: int, count: Count) -> str:
    """``text`` shortened through the three tiers until ``count`` of it is at most ``limit``."""
    if count(text) <= limit:
        return text
    text = keep_last_lines(text)
    if count(text) <= limit:
        return text
    text = keep_first_last_paragraph(text)
    if count(text) <= limit:
        return text
    return keep_ends(text, limit, count)


def fair_shares(sizes: Sequence[int], total: int) -> list[int]:
    """Split ``total`` among texts of ``sizes``: each gets ``total / N`` at most, and what a shorter
    text does not need is shared among the longer ones (so nothing short is cut needlessly)."""
    shares = [0] * len(sizes)
    remaining = max(total, 0)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for done, i in enumerate(order):
        shares[i] = min(sizes[i], remaining // (len(sizes) - done))
        remaining -= shares[i]
    return shares


def compact_for_judge(prior: str, responses: Sequence[str], room: int, count: Count) -> tuple[str, list[str], bool]:
    """Shorten ``prior`` and ``responses`` until their token counts sum to at most ``room``.

    Returns the (possibly shortened) prior conversation, the responses, and whether they fit.
    """
    responses = list(responses)

    def size(texts: Sequence[str]) -> int:
        return sum(count(t) for t in texts if t)

    if size([prior, *responses]) <= room:
        return prior, responses, True
    if prior:  # iteration 1: the prior conversation only, into what the responses leave
        shortened = fit_text(prior, room - size(responses), count)
        if size([shortened, *responses]) <= room:
            return shortened, responses, True
    # iteration 2: every text on its own, into its fair share
    texts = [prior, *responses] if prior else responses
    shares = fair_shares([count(t) for t in texts], room)
    fitted = [fit_text(t, share, count) for t, share in zip(texts, shares)]
    if prior:
        prior, fitted = fitted[0], fitted[1:]
    return prior, fitted, size([prior, *fitted]) <= room
