"""Identifiers: agent and session ids are random UUID version 4 strings; loop ids are
``{session_id}.{config_id}.{N}`` (SPEC LOOP-13), split by :func:`loop_key` and :func:`loop_number`.

Made here from ``os.urandom`` rather than with the ``uuid`` module, whose import (it loads
``platform``) would cost every ``import phi`` a few milliseconds for one function.
"""

from __future__ import annotations

import os


def loop_key(loop_id: str) -> str:
    """``{session_id}.{config_id}`` of a loop id ``{session_id}.{config_id}.{N}``."""
    return loop_id.rpartition(".")[0]


def loop_number(loop_id: str) -> int:
    """N of a loop id (0 when its last part is not a number)."""
    number = loop_id.rpartition(".")[2]
    return int(number) if number.isdigit() else 0


def random_uuid() -> str:
    """A random (version 4, RFC 4122 variant) UUID in its canonical 8-4-4-4-12 hex form."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
