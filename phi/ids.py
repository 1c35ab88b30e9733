"""Random identifiers: agent and session ids are UUID version 4 strings (SPEC LOOP-13).

Made here from ``os.urandom`` rather than with the ``uuid`` module, whose import (it loads
``platform``) would cost every ``import phi`` a few milliseconds for one function.
"""

from __future__ import annotations

import os


def random_uuid() -> str:
    """A random (version 4, RFC 4122 variant) UUID in its canonical 8-4-4-4-12 hex form."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
