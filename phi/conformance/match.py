"""Matching rules of the conformance suite (SPEC §10; phi/conformance/suite/README.md "Matching").

An expected value matches an actual value when:

- it is an object: every key it lists matches the actual object's value for that key (keys it does
  not list are not checked; a key expected to be ``null`` matches a missing key);
- it is a list: the actual value is a list of the same length whose items match pairwise;
- it is an object with a single ``$``-key, it is a matcher: ``{"$any": true}``,
  ``{"$absent": true}`` (missing or null), ``{"$startswith": s}``, ``{"$contains": s}``,
  ``{"$regex": pattern}`` (Python ``re.search``), ``{"$type": "string"|"number"|...}``;
- otherwise: equal JSON values (``1`` equals ``1.0``; ``true`` is not ``1``).

Sequences (events, hooks) may contain ``{"unordered": [...]}`` groups: the next ``len(group)``
actual items must match the group's items in some order.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator, Sequence, TypeGuard

from ..json_values import is_array, is_object

MATCHERS = ("$any", "$absent", "$startswith", "$contains", "$regex", "$type")
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def is_matcher(value: object) -> TypeGuard[dict[str, Any]]:
    return is_object(value) and len(value) == 1 and next(iter(value)) in MATCHERS


def mismatches(expected: object, actual: object, path: str = "") -> Iterator[str]:
    """Yield one readable line per difference (empty when ``actual`` matches ``expected``)."""
    if is_matcher(expected):
        (name, arg), = expected.items()
        if not _matcher_ok(name, arg, actual):
            yield f"{path or '.'}: expected {name} {_short(arg)}, got {_short(actual)}"
        return
    if is_object(expected):
        if not is_object(actual):
            yield f"{path or '.'}: expected an object, got {_short(actual)}"
            return
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else key
            if key not in actual:
                if value is None or (is_matcher(value) and next(iter(value)) in ("$absent", "$any")):
                    continue
                yield f"{sub}: missing (expected {_short(value)})"
                continue
            yield from mismatches(value, actual[key], sub)
        return
    if is_array(expected):
        if not is_array(actual):
            yield f"{path or '.'}: expected a list, got {_short(actual)}"
            return
        if len(expected) != len(actual):
            yield f"{path or '.'}: expected {len(expected)} items, got {len(actual)}: {_short(actual, 300)}"
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from mismatches(e, a, f"{path}[{i}]")
        return
    if not _scalar_equal(expected, actual):
        yield f"{path or '.'}: expected {_short(expected)}, got {_short(actual)}"


def matches(expected: object, actual: object) -> bool:
    return next(mismatches(expected, actual), None) is None


def _scalar_equal(expected: object, actual: object) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual)


def _matcher_ok(name: str, arg: Any, actual: object) -> bool:
    if name == "$any":
        return True
    if name == "$absent":
        return actual is None
    if name == "$type":
        kind = _JSON_TYPES.get(arg)
        if kind is None:
            return False
        if arg in ("number", "integer") and isinstance(actual, bool):
            return False
        return isinstance(actual, kind)
    if not isinstance(actual, str):
        return False
    if name == "$startswith":
        return actual.startswith(arg)
    if name == "$contains":
        return arg in actual
    if name == "$regex":
        return re.search(arg, actual) is not None
    return False


def _short(value: object, limit: int = 160) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- sequences


def expand_length(expected: Sequence[object]) -> int:
    """How many actual items an expected sequence stands for."""
    return sum(len(item["unordered"]) if _is_group(item) else 1 for item in expected)


def _is_group(item: object) -> TypeGuard[dict[str, list[Any]]]:
    return is_object(item) and set(item) == {"unordered"} and is_array(item["unordered"])


def sequence_mismatches(expected: Sequence[object], actual: Sequence[object], name: str) -> list[str]:
    """Compare a sequence with ``unordered`` groups; returns readable problems (first few only)."""
    problems: list[str] = []
    if expand_length(expected) != len(actual):
        problems.append(f"{name}: expected {expand_length(expected)} items, got {len(actual)}")
    position = 0
    for item in expected:
        if position >= len(actual):
            problems.append(f"{name}[{position}]: missing (expected {_short(item)})")
            break
        if _is_group(item):
            group = item["unordered"]
            window = actual[position:position + len(group)]
            if len(window) < len(group) or _assign(group, window) is None:
                problems.append(
                    f"{name}[{position}..{position + len(group) - 1}]: no order of the unordered group matches "
                    f"(expected {_short(group, 400)}, got {_short(window, 400)})"
                )
                break
            position += len(group)
            continue
        diff = list(mismatches(item, actual[position], f"{name}[{position}]"))
        if diff:
            problems.extend(diff[:6])
            break
        position += 1
    return problems


def _assign(group: Sequence[object], window: Sequence[object]) -> list[int] | None:
    """A permutation mapping each expected item to a distinct actual item, or None."""
    used: list[bool] = [False] * len(window)
    chosen: list[int] = []

    def search(i: int) -> bool:
        if i == len(group):
            return True
        for j, item in enumerate(window):
            if not used[j] and matches(group[i], item):
                used[j] = True
                chosen.append(j)
                if search(i + 1):
                    return True
                used[j] = False
                chosen.pop()
        return False

    return chosen if search(0) else None
