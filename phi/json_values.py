"""Narrowing decoded JSON to typed containers (support module, no SPEC section).

``isinstance(value, dict)`` tells a type checker only ``dict[Unknown, Unknown]``; JSON objects always
have string keys, so these guards say so once instead of a ``cast`` at every use.
"""

from __future__ import annotations

from typing import Any, TypeGuard

JsonObject = dict[str, Any]
"""A decoded JSON object."""


def is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True when ``value`` is a decoded JSON object (a ``dict``)."""
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[list[Any]]:
    """True when ``value`` is a decoded JSON array (a ``list``)."""
    return isinstance(value, list)


def as_object(value: object) -> dict[str, Any] | None:
    """``value`` when it is a JSON object, else ``None``."""
    return value if is_object(value) else None


def as_array(value: object) -> list[Any] | None:
    """``value`` when it is a JSON array, else ``None``."""
    return value if is_array(value) else None
