"""Checking every line a driver writes (SPEC §10; suite README.md §2, DRIVERS.md §3).

Each line of a fixture's output must be one JSON object of a kind README §2 lists, with the shape
``$defs/line`` of ``schema/event.schema.json`` gives it: events in their SPEC §3 JSON (the
timestamps EVT-1 asks for, ``child_loop_id`` on ``ToolExecutionEnd``), messages in their SPEC §2
JSON (an assistant message's ``model`` and ``provider``), no property the protocol does not
define. Events must also keep the rules a schema cannot state (:func:`event_rules`).

:func:`check_lines` parses the lines once and returns the objects the runner can sort by kind and
a :class:`LineProblem` per thing wrong, naming the line (counted from 1 in the fixture's output,
without protocol 2's ``hello`` and ``done``), the event type or line kind, the JSON pointer of the
field and the reason. The schema is compiled once per process (:mod:`.jsoncheck`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from ..json_values import is_object
from .jsoncheck import MAX_DEPTH, Issue, compile_schema, load_json, lone_surrogates, pointer, show, too_deep

#: at most this many problems are listed per line; the rest are counted
PER_LINE = 4
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class LineProblem:
    """One thing wrong with one line of a driver's output."""

    line: int
    label: str  # the event type (``child_event MessageEnd``) or the line's kind; "" when not an object
    where: str  # JSON pointer into the line; "" for the line as a whole
    reason: str
    #: the line breaks the protocol itself (not JSON, not an object, ...) rather than the schema's
    #: shape, so ``--lenient-events`` does not excuse it
    protocol: bool = False

    def __str__(self) -> str:
        head = f"line {self.line}" + (f" ({self.label})" if self.label else "")
        return f"{head}: {self.where}: {self.reason}" if self.where else f"{head}: {self.reason}"


@dataclass
class CheckedLines:
    """A fixture's output read: ``items`` are the lines that are objects of a known kind (also
    when malformed otherwise, so a lenient run can still compare them), in order."""

    items: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    problems: list[LineProblem] = field(default_factory=list[LineProblem])


def check_lines(lines: list[str]) -> CheckedLines:
    """Parse and check one fixture's output lines (blank lines are skipped)."""
    check, kinds = _line_check()
    out = CheckedLines()
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        bad = _NOT_UTF8.search(text)  # the reader keeps bytes that are not UTF-8 as lone surrogates
        if bad:
            at = bad.start()
            around = text[max(0, at - 30):at + 30].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            out.problems.append(LineProblem(number, "", "", f"not UTF-8: byte 0x{ord(bad.group()) - 0xDC00:02x} at "
                                            f"character {at + 1}, in {show(around, 80)}", protocol=True))
            continue
        if too_deep(text):
            out.problems.append(LineProblem(number, "", "", f"nested more than {MAX_DEPTH} deep (README §2): "
                                            f"{show(text, 80)}", protocol=True))
            continue
        try:
            item, repeated = load_json(text)
        except (ValueError, RecursionError) as error:
            out.problems.append(LineProblem(number, "", "", f"not JSON ({error}): {show(text, 80)}", protocol=True))
            continue
        if not is_object(item):
            out.problems.append(LineProblem(number, "", "", f"not a JSON object: {show(item, 80)}", protocol=True))
            continue
        if repeated:  # which of the values counts is up to each JSON reader: the line says nothing for sure
            out.problems += [LineProblem(number, _label(item), pointer([*where, key]),
                                         "this key appears more than once in its object", protocol=True)
                             for where, key in repeated]
            continue
        unpaired = lone_surrogates(text, item)
        if unpaired:  # nothing could print or report such a string
            out.problems += [LineProblem(number, "", pointer(where).encode("ascii", "backslashreplace").decode(),
                                         "a \\u escape of half a surrogate pair: not a Unicode character (not UTF-8)",
                                         protocol=True) for where in unpaired[:PER_LINE]]
            continue
        issues = check(item) or event_rules(item)
        label = _label(item)
        out.problems += [LineProblem(number, label, where, reason) for where, reason in issues[:PER_LINE]]
        if len(issues) > PER_LINE:
            out.problems.append(LineProblem(number, label, "", f"{len(issues) - PER_LINE} more problem(s) in this line"))
        if item.get("kind") in kinds:
            out.items.append(item)
    return out


def event_rules(item: dict[str, Any]) -> list[Issue]:
    """What SPEC asks of an event beyond its schema (the line is valid against the schema)."""
    event = item.get("event") if item.get("kind") in ("event", "child_event") else None
    if not is_object(event):
        return []
    if event["type"] == "ToolExecutionEnd":
        own, results = event.get("child_loop_id"), event["result"].get("child_loop_id")
        if own != results:
            return [("/event/child_loop_id", f"expected {show(results)}, the result's child_loop_id "
                     f"(ToolExecutionEnd repeats it, SPEC TOOL-12), got {show(own)}")]
    elif event["type"] == "MessageUpdate":
        delta, content = event["delta"], event["message"]["content"]
        index = int(delta["index"])  # an integer to the schema, which 1.0 is too
        if index >= len(content) or content[index].get("type") != delta["type"]:
            return [("/event/delta/index", f"the message snapshot has no {delta['type']} block {index} "
                     f"(SPEC EVT-6: index names a content block; the snapshot has {len(content)})")]
    return []


def _label(item: dict[str, Any]) -> str:
    kind = item.get("kind")
    if not isinstance(kind, str):
        return ""
    event = item.get("event")
    kind_of_event = event.get("type") if is_object(event) else None
    if kind in ("event", "child_event") and isinstance(kind_of_event, str):
        return kind_of_event if kind == "event" else f"child_event {kind_of_event}"
    return kind


@lru_cache(maxsize=1)
def _line_check() -> tuple[Callable[[Any], list[Issue]], frozenset[str]]:
    """The compiled check of ``$defs/line`` and the line kinds it knows."""
    from . import suite_files

    schema = json.loads((suite_files() / "schema" / "event.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    kinds = frozenset(defs[ref["$ref"].rsplit("/", 1)[-1]]["properties"]["kind"]["const"]
                      for ref in defs["line"]["oneOf"])
    return compile_schema(schema, "/$defs/line"), kinds


__all__ = ["PER_LINE", "CheckedLines", "LineProblem", "check_lines", "event_rules"]
