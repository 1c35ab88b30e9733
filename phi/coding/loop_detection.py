"""Loop detection for the coding layer (SPEC §14 CODE-7; seed 004 §2.10).

Each tool call is reduced to a signature: its name plus a hash of its arguments in canonical JSON
(keys sorted at every level, no insignificant whitespace), so two calls with the same arguments in a
different key order are the same call. :func:`detect_loop` follows the seed's
algorithm: it looks only at the last ``window`` signatures, needs the window to be full, and reports
a loop when the window repeats its first 1, 2 or 3 signatures over and over. Where the seed skips a
pattern length that does not divide the window, phi lets the window end part-way through a
repetition (``A B C A B C A B C A`` is a cycle of three in a window of ten): the seed's prose asks
for "the same 2-3 calls cycling" to be caught, and with the default window of 10 its pseudocode
could never see a cycle of three. For lengths that divide the window the two agree exactly. A
pattern must fill the window at least twice, so a short window is not a loop just by holding one
copy of itself.

:class:`LoopDetector` keeps the recent signatures of one session and returns the warning text
(a steering message, seed 004 §2.10) when a loop shows; after a warning it starts afresh, so the next warning needs
another full window of repeating calls.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from typing import Sequence

__all__ = ["tool_call_signature", "detect_loop", "loop_warning", "LoopDetector", "PATTERN_LENGTHS"]

#: The cycle lengths the seed checks, shortest first.
PATTERN_LENGTHS = (1, 2, 3)


def _canonical_json(arguments: object) -> str:
    # repr for anything JSON cannot express (arguments normally come from JSON, so this is a guard)
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def tool_call_signature(name: str, arguments: object) -> str:
    """``"{name}:{sha256 of the canonical JSON of arguments}"``; key order does not matter."""
    digest = hashlib.sha256(_canonical_json(arguments).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{name}:{digest}"


def _check_window(window: int) -> None:
    # the int check stays: detect_loop and LoopDetector take the window from callers without a type checker
    if (isinstance(window, bool)
            or not isinstance(window, int) or window < 2):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"loop detection window must be an integer of at least 2, got {window!r}")


def detect_loop(signatures: Sequence[str], window: int = 10) -> bool:
    """Whether the last ``window`` signatures repeat a pattern of 1, 2 or 3 calls (seed 004 §2.10)."""
    _check_window(window)
    if len(signatures) < window:
        return False
    recent = [signatures[i] for i in range(len(signatures) - window, len(signatures))]
    for length in PATTERN_LENGTHS:
        if window < 2 * length:
            continue
        # periodic with period ``length``: every call equals the one ``length`` places before it
        if all(recent[i] == recent[i - length] for i in range(length, window)):
            return True
    return False


def loop_warning(window: int) -> str:
    """The steering text injected when a loop is detected: what happened and to try something else."""
    return (f"Loop detected: the last {window} tool calls follow a repeating pattern. "
            "Try a different approach.")


class LoopDetector:
    """The recent tool-call signatures of one session; ``record`` each call in call order."""

    def __init__(self, window: int = 10) -> None:
        _check_window(window)
        self.window = window
        self._recent: deque[str] = deque(maxlen=window)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LoopDetector(window={self.window}, recorded={len(self._recent)})"

    def record(self, name: str, arguments: object) -> str | None:
        """Add one call; the warning text if the window now holds a loop (then forget it), else None."""
        signature = tool_call_signature(name, arguments)
        with self._lock:
            self._recent.append(signature)
            if not detect_loop(self._recent, self.window):
                return None
            self._recent.clear()
        return loop_warning(self.window)

    def reset(self) -> None:
        """Forget every recorded call (e.g. when the user submits new input)."""
        with self._lock:
            self._recent.clear()

    @property
    def signatures(self) -> list[str]:
        """The recorded signatures, oldest first (at most ``window``)."""
        with self._lock:
            return list(self._recent)
