"""Agent snapshots on disk, the resume point of an interrupted run, and auto origin/continue (seed 000
"Session & Loop Identity — Future Scenarios": HITL resume, checkpoint restore, auto origin/continue;
SPEC §11 AGENT-6, AGENT-7).

An :class:`AgentSnapshot` holds what resuming needs — the conversation, the agent's identity, its
loop counters and last loop id, the system prompt and, for the record, which model it used — and
nothing of the caller's environment: no API key, no base URL, no headers. ``save`` writes it
atomically (a crash mid-save leaves the previous file); ``load`` refuses anything that is not a
snapshot with a :class:`~phi.errors.DecodeError` naming the file.

After ``agent.restore(snapshot)`` in another process, ``agent.continue_loop("branch")`` (or
``agent.resume()``) starts a run whose ``parent_loop_id`` is the snapshot's last loop id: the
ancestry chain survives the process boundary.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..errors import DecodeError, InvalidContinue
from ..json_values import is_object
from ..types import AssistantMessage, ExtensionMessage, StopReason, ToolResultMessage

FORMAT = "phi.agent_snapshot/1"
_ABORTED_RESULT = "Tool execution aborted."  # what the loop answers an unfinished call with (SPEC LOOP-5)


@dataclass
class AgentSnapshot:
    """A restorable, secret-free snapshot of an agent (``Agent.checkpoint()``)."""

    messages: list[dict[str, Any]]
    agent_id: str
    session_id: str
    loop_counters: dict[str, int]
    last_loop_id: str | None
    created_at: float = field(default_factory=time.time)
    system_prompt: str = ""
    model: dict[str, str] = field(default_factory=dict[str, str])  # {id, api, provider}: informative, never restored
    config_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: Any, where: str = "snapshot") -> AgentSnapshot:
        if not is_object(data) or data.get("format") != FORMAT:
            raise DecodeError(where, data if not is_object(data) else data.get("format"),
                              f"an agent snapshot (format {FORMAT!r})")
        try:
            snapshot = cls(**{k: v for k, v in data.items() if k != "format"})
        except TypeError as error:
            raise DecodeError(where, sorted(data), f"the fields of an agent snapshot ({error})") from None
        # cls() checked the field names only, so the values are still whatever the file held: checked in
        # data, where each of these fields (none has a default) is the very object the snapshot now holds
        if not isinstance(data["messages"], list) or not isinstance(data["loop_counters"], dict) \
                or not isinstance(data["agent_id"], str) or not isinstance(data["session_id"], str):
            raise DecodeError(where, sorted(data), "messages (a list), loop_counters (an object) and string ids")
        from ..types import messages_from_json

        messages_from_json(snapshot.messages)  # every message must decode, or the snapshot is refused now
        return snapshot

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the snapshot as JSON, atomically: a temp file beside it, fsync, then rename. Every
        secret phi knows of in the conversation is written as ``***`` (SPEC §17 OTEL-11)."""
        from ..providers.secret_registry import redact_encoded

        target = Path(path)
        data = self.to_json()
        text = redact_encoded(data, _dumps(data), _dumps)[1]
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AgentSnapshot:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except ValueError as error:
            raise DecodeError(str(path), "<file>", f"JSON ({error})") from None
        return cls.from_json(data, str(path))



def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)


def resume_point(messages: Sequence[Any]) -> int:
    """How many messages to keep to resume an interrupted run: a trailing reply that was aborted or
    failed is dropped, and so is a tool-calling reply whose calls were cut short by an abort, with
    its results — the model redoes that step. Raises InvalidContinue when the history, so cut, does
    not await a reply (it is empty, or it ends with a finished reply)."""
    end = len(messages)
    while end:
        last = messages[end - 1]
        if isinstance(last, ExtensionMessage):
            end -= 1
        elif isinstance(last, AssistantMessage) and last.stop_reason in (StopReason.ABORTED, StopReason.ERROR):
            end -= 1
        elif isinstance(last, ToolResultMessage):
            start = end
            while start and isinstance(messages[start - 1], ToolResultMessage):
                start -= 1
            if not any(m.text == _ABORTED_RESULT and m.is_error for m in messages[start:end]):
                break
            end = max(start - 1, 0)  # the results and the reply that asked for them
        else:
            break
    if end == 0 or isinstance(messages[end - 1], AssistantMessage):
        raise InvalidContinue("nothing to resume: the history does not end with input awaiting a reply "
                              "(send a new prompt instead)")
    return end

