"""Reading fields of untrusted server payloads (SPEC PROV-1, PROV-2; DESIGN §8 "bad input gets a typed error").

Whatever a parser puts into a message must have the type the message JSON requires (SPEC DATA-6), so
that a history always round-trips through ``message_to_json`` / ``message_from_json``. The rules:

* **Text** (deltas, ids, names, signatures, redacted payloads): a string, or absent/``null`` for
  "nothing"; anything else is a :class:`ProviderError` of kind ``api`` naming the field.
* **Objects and lists** the parser walks into: the right container, or the same ``api`` error.
* **Token counts** are coerced, never trusted: a non-negative integer is kept; a finite
  non-negative float or a string of digits is converted; anything else (negative, ``true``,
  ``"many"``, a list) counts as 0. A usage never makes a run fail.
* **Tool arguments** given as an object must be a JSON object nested at most
  :data:`MAX_DEPTH` levels (deeper values could not be saved and loaded back).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..json_values import is_array, is_object
from ..types import Usage
from .base import MAX_DEPTH, ErrorKind, ProviderError, depth


def malformed(field: str, value: object, expected: str) -> ProviderError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ProviderError(ErrorKind.API, f"malformed stream event: {field} should be {expected}, got {shown}")


def text(value: object, field: str) -> str:
    """A string field; ``None`` (absent or ``null``) reads as ``""``."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    raise malformed(field, value, "a string")


def obj(value: object, field: str) -> dict[str, Any]:
    """An object field; ``None`` reads as ``{}``."""
    if is_object(value):
        return value
    if value is None:
        return {}
    raise malformed(field, value, "an object")


def array(value: object, field: str) -> list[Any]:
    """A list field; ``None`` reads as ``[]``."""
    if is_array(value):
        return value
    if value is None:
        return []
    raise malformed(field, value, "a list")


def count(value: object) -> int:
    """A token count (see the module docstring): always a non-negative ``int``."""
    if type(value) is int:
        return value if value >= 0 else 0
    if type(value) is float:
        return int(value) if math.isfinite(value) and value >= 0 else 0
    if type(value) is str and value.isascii() and value.strip().isdigit():
        return int(value.strip())
    return 0


def usage(input: object = 0, output: object = 0, reasoning: object = 0, cache_read: object = 0,
          cache_write: object = 0, total: object = None) -> Usage:
    """A :class:`Usage` from server counts; ``total`` defaults to the sum of the parts."""
    inp, out, read, write = count(input), count(output), count(cache_read), count(cache_write)
    total_count = count(total) if total is not None else 0
    return Usage(inp, out, count(reasoning), read, write, total_count or inp + out + read + write)


def arguments(value: object, field: str) -> dict[str, Any]:
    """Tool arguments given as an object (not streamed text)."""
    if value is None:
        return {}
    if not is_object(value):
        raise malformed(field, value, "an object")
    if depth(value) > MAX_DEPTH:
        raise malformed(field, "(nested object)", f"nested at most {MAX_DEPTH} levels")
    return value


def arguments_text(value: object, field: str) -> str:
    """A streamed argument fragment: a string; an object (some compatible servers send one) is
    serialised; ``None`` is nothing."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    if is_object(value):
        return json.dumps(arguments(value, field))
    raise malformed(field, value, "a string")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if is_array(value):
        return [without_lone_surrogates(item) for item in value]
    if is_object(value):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    return value
