"""Keeping a tool's argument schema small enough to send to a model (SPEC §12.2, OAPI-5).

A schema whose compact JSON is longer than ``OpenApiConfig.max_schema_bytes`` is reduced, in this
order, until it fits:

1. ``description`` and ``title`` are dropped everywhere except on the tool's own arguments;
2. the ``$defs`` are inlined up to a number of ``$ref`` hops (the most that fits, counting down from
   :data:`MAX_HOPS`), and a reference further down becomes a permissive placeholder that keeps the
   target's ``type`` and says the schema was omitted.

The result is still a valid JSON Schema and accepts every value the full one accepts, so the loop's
validation never refuses a call the API would take. The change is logged.
"""

from __future__ import annotations

import json
from typing import Any

from ..json_values import is_array, is_object
from ..log import get_logger

log = get_logger(__name__)

MAX_HOPS = 6
_DOCS = ("description", "title")


class _TooBig(Exception):
    pass


def size_of(schema: Any) -> int:
    return len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False))


def fit_schema(parameters: dict[str, Any], limit: int | None, where: str) -> dict[str, Any]:
    """``parameters`` reduced (as the module docstring says) to at most ``limit`` bytes of JSON."""
    if limit is None:
        return parameters
    full = size_of(parameters)
    if full <= limit:
        return parameters
    slim = dict(parameters)
    slim["properties"] = {k: _without_docs(v, keep_top=True) for k, v in parameters["properties"].items()}
    if "$defs" in slim:
        slim["$defs"] = {k: _without_docs(v) for k, v in parameters["$defs"].items()}
    size = size_of(slim)
    if size <= limit:
        log.info("%s: argument schema of %d bytes shortened to %d by dropping nested descriptions", where, full, size)
        return slim
    best = _inlined(slim, 0, None)
    for hops in range(1, MAX_HOPS + 1):
        try:
            candidate = _inlined(slim, hops, limit)
        except _TooBig:
            break
        if size_of(candidate) > limit:
            break
        best = candidate
    log.info("%s: argument schema of %d bytes shortened to %d; deeper parts allow any value", where, full,
             size_of(best))
    return best


def _without_docs(node: Any, keep_top: bool = False) -> Any:
    if is_object(node):
        return {k: (v if keep_top and k in _DOCS else _without_docs(v)) for k, v in node.items()
                if keep_top or k not in _DOCS or not isinstance(v, str)}
    if is_array(node):
        return [_without_docs(v) for v in node]
    return node


def _inlined(parameters: dict[str, Any], hops: int, limit: int | None) -> dict[str, Any]:
    """``parameters`` without ``$defs``: references followed up to ``hops`` deep, then placeholders.
    Raises _TooBig as soon as the output passes ``limit`` (the doubling of a deeper copy is cut short)."""
    defs = parameters.get("$defs", {})
    budget = [limit * 2 if limit is not None else None]

    def spend(amount: int) -> None:
        if budget[0] is not None:
            budget[0] -= amount
            if budget[0] < 0:
                raise _TooBig

    def walk(node: Any, depth: int) -> Any:
        if is_array(node):
            spend(2)
            return [walk(v, depth) for v in node]
        if not is_object(node):
            spend(len(node) + 2 if isinstance(node, str) else 6)
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref[len("#/$defs/"):]
            rest = {k: walk(v, depth) for k, v in node.items() if k != "$ref"}
            target = defs.get(key, {})
            if depth >= hops:
                target = _placeholder(key, target)
            else:
                target = walk(target, depth + 1)
            return _merge(target, rest)
        spend(2 + sum(len(k) + 3 for k in node))
        return {k: walk(v, depth) if k != "enum" and k != "const" and k != "default" else v for k, v in node.items()}

    out = {k: walk(v, 0) for k, v in parameters.items() if k not in ("$defs", "properties")}
    out["properties"] = {k: walk(v, 0) for k, v in parameters["properties"].items()}
    return {k: out[k] for k in parameters if k in out}


def _placeholder(key: str, target: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"description": f"{key} (schema omitted to keep this tool small)"}
    if is_object(target) and isinstance(target.get("type"), (str, list)):
        out["type"] = target["type"]
    return out


def _merge(target: Any, rest: dict[str, Any]) -> Any:
    if not rest:
        return target
    if is_object(target) and not set(target) & set(rest):
        return {**target, **rest}
    return {"allOf": [target], **rest}
