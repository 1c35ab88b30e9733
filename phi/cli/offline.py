"""``phi --offline``: a scripted model, so anyone can try the command without a key or a network
(SPEC §15 CLI-1).

It answers every input in two steps, streamed a few characters at a time like a real model: first
some thinking and a ``glob`` call listing the working directory, then, with the tool's result in
hand, a short answer naming what it found and quoting the input. An input of the form
``write PATH: TEXT`` makes it write ``TEXT`` to ``PATH`` instead (to see approval prompts and diffs);
when the call was refused or failed, the answer says so, with the tool's reason, and never that it
wrote the file.
"""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, Any

from ..providers.mock import ScriptedProvider
from ..types import AssistantMessage, ToolResultMessage, UserMessage

if TYPE_CHECKING:
    from ..concurrency.cancel import CancellationToken
    from ..providers.base import StreamConfig, StreamEventSink

_WRITE = re.compile(r"\s*write\s+(\S+)\s*:\s*(.*)\Z", re.S | re.I)


def _chunks(text: str, size: int = 6) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class OfflineModel:
    """A StreamProvider (``stream(config, on_event, cancel)``) that plays the replies above."""

    provider_id = "offline"

    def __init__(self, chunk_delay_ms: float = 12.0) -> None:
        self.chunk_delay_ms = chunk_delay_ms
        self._ids = itertools.count(1)

    def _reply(self, config: StreamConfig) -> dict[str, Any]:
        messages = config.messages
        last = messages[-1] if messages else None
        question = next((m.text for m in reversed(messages) if isinstance(m, UserMessage)), "")
        usage = {"input": 40 * len(messages) + len(config.system_prompt) // 4, "output": 30}
        if isinstance(last, ToolResultMessage):
            found = last.text.strip()
            listing = ", ".join(found.splitlines()[:8]) or "nothing"
            if last.is_error:  # refused, or failed: never claimed done
                reason = " ".join(found.split())[:200].rstrip(". ") or "no reason given"
                verb = f"did not {'write the file' if last.tool_name == 'write_file' else 'look'}: {reason}"
            else:
                verb = "wrote the file" if last.tool_name == "write_file" else f"found: {listing}"
            text = (f"I am phi's offline model: no network, a scripted reply. I {verb}. You asked: "
                    f"\u201c{question.strip()[:200]}\u201d. Set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY "
                    "to talk to a real model.")
            return {"blocks": [{"type": "text", "chunks": _chunks(text)}], "usage": usage}
        call_id = f"offline_{next(self._ids)}"
        write = _WRITE.match(question)
        if write:
            call = {"type": "toolCall", "id": call_id, "name": "write_file",
                    "arguments": {"file_path": write.group(1), "content": write.group(2).rstrip() + "\n"}}
            thought = f"The user wants {write.group(1)} written."
            opening = f"Writing {write.group(1)}. "
        else:
            call = {"type": "toolCall", "id": call_id, "name": "glob", "arguments": {"pattern": "*"}}
            thought = "Let me look at the working directory first."
            opening = "Looking around. "
        return {"blocks": [{"type": "thinking", "chunks": _chunks(thought)},
                           {"type": "text", "chunks": _chunks(opening)}, call], "usage": usage}

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        # a scripted reply starts at once; then it streams at a reading pace
        reply = {**self._reply(config), "chunk_delay_ms": self.chunk_delay_ms, "first_chunk_delay_ms": 0}
        return ScriptedProvider([reply], provider_id="offline", model=config.model_config.id).stream(
            config, on_event, cancel)


__all__ = ["OfflineModel"]
