"""Session events of the coding layer (SPEC §14 CODE-2; seed 004 §2.9, §5.5): what a :class:`~phi.coding.Session`
tells its host, in order, each with the session id and a timestamp.

These are not a second event system: every event a session emits while it processes input is
derived from one event of the core loop (:mod:`phi.events`) by :mod:`phi.coding.event_bridge`;
only the lifecycle events (``SESSION_START``, ``SESSION_END``) and the limit notice (``TURN_LIMIT``)
come from the session itself.

``TOOL_CALL_END`` carries the tool's full output (``data["output"]``) even when the model was given
a truncated copy (``data["truncated"]`` is then True and ``data["model_output"]`` is that copy).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any


class EventKind(str, enum.Enum):
    """Every kind of seed 004 §2.9, plus ``WARNING`` for the context-usage signal of §5.5."""

    SESSION_START = "session_start"
    SESSION_END = "session_end"
    USER_INPUT = "user_input"
    ASSISTANT_TEXT_START = "assistant_text_start"
    ASSISTANT_TEXT_DELTA = "assistant_text_delta"
    ASSISTANT_TEXT_END = "assistant_text_end"
    TOOL_CALL_START = "tool_call_start"
    TOOL_CALL_OUTPUT_DELTA = "tool_call_output_delta"
    TOOL_CALL_END = "tool_call_end"
    STEERING_INJECTED = "steering_injected"
    TURN_LIMIT = "turn_limit"
    LOOP_DETECTION = "loop_detection"
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class SessionEvent:
    """One event: ``kind``, the emitting session's id, a unix timestamp (seconds) and its data."""

    kind: EventKind
    session_id: str
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    timestamp: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "session_id", "timestamp" (RFC 3339), "data"}``; data values are JSON-ready."""
        from ..events import format_timestamp

        return {"kind": self.kind.value, "session_id": self.session_id,
                "timestamp": format_timestamp(self.timestamp), "data": self.data}

    def __repr__(self) -> str:
        shown = {k: (v[:60] + "..." if isinstance(v, str) and len(v) > 63 else v) for k, v in self.data.items()}
        return f"SessionEvent({self.kind.name}, {shown})"


__all__ = ["EventKind", "SessionEvent"]
