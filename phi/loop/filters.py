"""Input filters: checks on a prompt before the run starts (SPEC LOOP-2).

A filter is an object with ``filter(text) -> FilterResult`` or a plain callable ``text -> FilterResult``
(``None`` counts as pass). The loop runs them in order on the prompts' user text (text blocks joined
with newlines): the first ``reject`` ends the run before any model call; every ``warn`` text is
appended to the last user prompt as a ``[Warning: ...]`` line.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable


class FilterResult(NamedTuple):  # a NamedTuple: cheap to define, and this module loads with the first run
    """An input filter's verdict (SPEC LOOP-2): ``action`` is ``"pass"``, ``"warn"`` (``text`` is added
    to the last prompt as a ``[Warning: text]`` line) or ``"reject"`` (``text`` is the reason; the
    run ends). Build one with ``passed()``, ``warn(text)`` or ``reject(reason)``."""

    action: str = "pass"  # "pass" | "warn" | "reject"
    text: str = ""

    @classmethod
    def passed(cls) -> FilterResult:
        return cls("pass")

    @classmethod
    def warn(cls, text: str) -> FilterResult:
        return cls("warn", text)

    @classmethod
    def reject(cls, reason: str) -> FilterResult:
        return cls("reject", reason)


@runtime_checkable
class InputFilter(Protocol):
    """A check on the prompts' user text before a run starts (SPEC LOOP-2): ``filter(text)`` returns a
    :class:`FilterResult` (None counts as pass). A plain callable ``text -> FilterResult`` works too."""

    def filter(self, text: str) -> FilterResult:
        ...


def run_filter(flt: Any, text: str) -> FilterResult:
    """Apply one filter (object or callable) and normalise its answer."""
    result = flt.filter(text) if hasattr(flt, "filter") else flt(text)
    if result is None:
        return FilterResult.passed()
    if not isinstance(result, FilterResult):
        raise TypeError(f"input filter {flt!r} returned {result!r}; return a phi.FilterResult")
    return result
