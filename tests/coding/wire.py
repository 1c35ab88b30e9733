"""Scripted models over the real wire protocols, for the coding-layer tests.

A :class:`ScriptedModelServer` is the replay server of ``tests/providers`` (a raw HTTP/1.1 server on
127.0.0.1) whose replies are computed from each request: the conversation is recognised by its
first user text, and its n-th request gets the n-th turn of that conversation's script, encoded in
the protocol the request came in:

* OpenAI Responses (``POST /v1/responses``): ``event:``/``data:`` SSE with ``response.created`` …
  ``response.output_item.added`` (message / function_call), ``response.output_text.delta``,
  ``response.function_call_arguments.delta``, ``response.output_item.done``, ``response.completed``;
* Anthropic Messages (``POST /v1/messages``): ``message_start``, ``content_block_start``
  (text / tool_use), ``ping``, ``text_delta`` / ``input_json_delta``, ``content_block_stop``,
  ``message_delta``, ``message_stop``;
* Gemini (``POST /v1beta/models/M:streamGenerateContent?alt=sse``): ``data:`` chunks separated by
  CRLF CRLF with ``candidates[0].content.parts`` (text, functionCall) and ``usageMetadata``.

The event shapes (field names, ids, usage blocks, chunking of arguments) are those of the recorded
streams in ``tests/fixtures/real-streams`` (see SOURCES.md there). A turn may be a callable that
receives the parsed request body, to react to what the session sent (a sub-agent id, a result).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
from providers.conftest import Recorded, ReplayServer, Reply

_ids = itertools.count(1)


@dataclass
class Call:
    name: str
    args: dict[str, Any] | str  # a str is sent as it is (e.g. broken JSON), where the protocol carries text
    id: str = ""

    @property
    def arguments_text(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args)

    def __post_init__(self) -> None:
        if not self.id:
            self.id = f"call_{next(_ids):04d}"


@dataclass
class Turn:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    hang: bool = False  # send the first text delta, then nothing more until the client goes away


TurnSpec = "Turn | Callable[[dict[str, Any]], Turn]"


def _chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


# --------------------------------------------------------------------------- OpenAI Responses


def responses_sse(turn: Turn, model: str = "gpt-5.2-codex") -> bytes:
    rid = f"resp_{next(_ids):032x}"
    seq = itertools.count()
    out: list[str] = []

    def event(kind: str, **data: Any) -> None:
        payload = {"type": kind, **data, "sequence_number": next(seq)}
        out.append(f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n")

    head = {"id": rid, "object": "response", "created_at": 1778037182, "status": "in_progress", "error": None,
            "incomplete_details": None, "model": model, "output": [], "parallel_tool_calls": True,
            "reasoning": {"effort": "low", "summary": None}, "store": False, "tool_choice": "auto", "usage": None}
    event("response.created", response=head)
    event("response.in_progress", response=head)
    output: list[dict[str, Any]] = []
    index = 0
    if turn.text:
        mid = f"msg_{next(_ids):032x}"
        event("response.output_item.added", item={"id": mid, "type": "message", "status": "in_progress",
                                                   "content": [], "role": "assistant"}, output_index=index)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        event("response.content_part.added", content_index=0, item_id=mid, output_index=index, part=part)
        for piece in _chunks(turn.text, 7):
            event("response.output_text.delta", content_index=0, delta=piece, item_id=mid, logprobs=[],
                  obfuscation="x", output_index=index)
        event("response.output_text.done", content_index=0, item_id=mid, logprobs=[], output_index=index,
              text=turn.text)
        done_part = {**part, "text": turn.text}
        event("response.content_part.done", content_index=0, item_id=mid, output_index=index, part=done_part)
        item = {"id": mid, "type": "message", "status": "completed", "content": [done_part], "role": "assistant"}
        event("response.output_item.done", item=item, output_index=index)
        output.append(item)
        index += 1
    for call in turn.calls:
        fid = f"fc_{next(_ids):032x}"
        arguments = call.arguments_text
        item = {"id": fid, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call.id,
                "name": call.name}
        event("response.output_item.added", item=item, output_index=index)
        for piece in _chunks(arguments, 9):
            event("response.function_call_arguments.delta", delta=piece, item_id=fid, obfuscation="y",
                  output_index=index)
        event("response.function_call_arguments.done", arguments=arguments, item_id=fid, output_index=index)
        done = {**item, "status": "completed", "arguments": arguments}
        event("response.output_item.done", item=done, output_index=index)
        output.append(done)
        index += 1
    usage = {"input_tokens": 58, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 23,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 81}
    event("response.completed", response={**head, "status": "completed", "output": output, "usage": usage})
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- Anthropic Messages


def anthropic_sse(turn: Turn, model: str = "claude-sonnet-4-5-20250929") -> bytes:
    out: list[str] = []

    def event(kind: str, **data: Any) -> None:
        out.append(f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, separators=(',', ':'))}\n\n")

    event("message_start", message={"id": f"msg_{next(_ids):024x}", "type": "message", "role": "assistant",
                                    "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
                                    "usage": {"input_tokens": 377, "cache_creation_input_tokens": 0,
                                              "cache_read_input_tokens": 0, "output_tokens": 1}})
    index = 0
    if turn.text:
        event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        out.append('event: ping\ndata: {"type": "ping"}\n\n')
        for piece in _chunks(turn.text, 11):
            event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        event("content_block_stop", index=index)
        index += 1
    for call in turn.calls:
        event("content_block_start", index=index,
              content_block={"type": "tool_use", "id": call.id, "name": call.name, "input": {}})
        event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": ""})
        for piece in _chunks(call.arguments_text, 8):
            event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        event("content_block_stop", index=index)
        index += 1
    event("message_delta", delta={"stop_reason": "tool_use" if turn.calls else "end_turn", "stop_sequence": None},
          usage={"output_tokens": 65})
    event("message_stop")
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- Gemini


def gemini_sse(turn: Turn, model: str = "gemini-2.5-pro") -> bytes:
    chunks: list[dict[str, Any]] = []
    response_id = f"{next(_ids):024x}"
    usage = {"promptTokenCount": 52, "totalTokenCount": 52, "promptTokensDetails": [{"modality": "TEXT",
                                                                                      "tokenCount": 52}]}
    for piece in (_chunks(turn.text, 13) if turn.text else []):
        chunks.append({"candidates": [{"content": {"parts": [{"text": piece}], "role": "model"}}],
                       "usageMetadata": usage, "modelVersion": model, "responseId": response_id})
    if turn.calls:
        parts = [{"functionCall": {"name": c.name, "args": c.args}} for c in turn.calls]
        chunks.append({"candidates": [{"content": {"parts": parts, "role": "model"}}], "usageMetadata": usage,
                       "modelVersion": model, "responseId": response_id})
    final = {"promptTokenCount": 52, "candidatesTokenCount": 5, "totalTokenCount": 57}
    if chunks:
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        chunks[-1]["usageMetadata"] = final
    else:
        chunks.append({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP"}],
                       "usageMetadata": final, "modelVersion": model, "responseId": response_id})
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks).encode("utf-8")


# --------------------------------------------------------------------------- requests


def protocol_of(path: str) -> str:
    if path.endswith("/responses"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    if ":streamGenerateContent" in path:
        return "gemini"
    raise AssertionError(f"unexpected request path {path}")


def first_user_text(protocol: str, body: dict[str, Any]) -> str:
    if protocol == "openai":
        for item in body["input"]:
            if item.get("role") == "user":
                return item["content"][0]["text"]
    elif protocol == "anthropic":
        content = body["messages"][0]["content"]
        return content if isinstance(content, str) else next(b["text"] for b in content if b["type"] == "text")
    else:
        return body["contents"][0]["parts"][0]["text"]
    raise AssertionError("no user message in the request")


def user_texts(protocol: str, body: dict[str, Any]) -> list[str]:
    """Every user-role text of a request, in order (prompts, steering, loop warnings)."""
    texts: list[str] = []
    if protocol == "openai":
        for item in body["input"]:
            if item.get("role") == "user":
                texts += [p["text"] for p in item["content"] if p.get("type") == "input_text"]
    elif protocol == "anthropic":
        for message in body["messages"]:
            if message["role"] == "user":
                content = message["content"]
                texts += [content] if isinstance(content, str) else [b["text"] for b in content if b["type"] == "text"]
    else:
        for content in body["contents"]:
            if content["role"] == "user":
                texts += [p["text"] for p in content["parts"] if "text" in p]
    return texts


def tool_outputs(protocol: str, body: dict[str, Any]) -> list[str]:
    """The tool results a request carries, in order (what the model was given)."""
    out: list[str] = []
    if protocol == "openai":
        out = [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    elif protocol == "anthropic":
        for message in body["messages"]:
            content = message["content"]
            for block in content if isinstance(content, list) else []:
                if block["type"] == "tool_result":
                    inner = block["content"]
                    out.append(inner if isinstance(inner, str) else "".join(b.get("text", "") for b in inner))
    else:
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionResponse" in part:
                    response = part["functionResponse"]["response"]
                    out.append(response.get("output", response.get("error", "")))
    return out


ENCODERS = {"openai": responses_sse, "anthropic": anthropic_sse, "gemini": gemini_sse}


class ScriptedModelServer(ReplayServer):
    """A replay server whose replies come from per-conversation scripts (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, list[Any]] = {}
        self.seen: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self._script_lock = threading.Lock()
        self.responder = self._respond_scripted

    def script(self, first_user_text: str, *turns: Any) -> ScriptedModelServer:
        """Turns for the conversation whose first user message starts with ``first_user_text``."""
        with self._script_lock:
            self.scripts[first_user_text] = list(turns)
        return self

    def _respond_scripted(self, request: Recorded) -> Reply:
        protocol = protocol_of(request.path)
        body = request.json()
        first = first_user_text(protocol, body)
        with self._script_lock:
            key = next((k for k in sorted(self.scripts, key=len, reverse=True) if first.startswith(k)), None)
            if key is None:
                return _error(protocol, f"no script for a conversation starting {first[:60]!r}")
            history = self.seen.setdefault(key, [])
            history.append((protocol, body))
            index = len(history) - 1
            turns = self.scripts[key]
        if index >= len(turns):
            return _error(protocol, f"script {key[:40]!r} has {len(turns)} turns; request {index + 1} came")
        turn = turns[index]
        if callable(turn):
            turn = turn(body)
        encoded = ENCODERS[protocol](turn)
        if turn.hang:
            return Reply(_first_delta(protocol, encoded), hang_at_end=True)
        return Reply(encoded)

    def requests_of(self, key: str) -> list[dict[str, Any]]:
        with self._script_lock:
            return [body for _, body in self.seen.get(key, [])]


_FIRST_DELTA = {"openai": b'"response.output_text.delta"', "anthropic": b'"text_delta"', "gemini": b'"text"'}


def _first_delta(protocol: str, encoded: bytes) -> bytes:
    """The stream up to and including its first text delta event (a model that stalls mid-reply)."""
    start = encoded.index(_FIRST_DELTA[protocol])
    end = re.compile(rb"\r?\n\r?\n").search(encoded, start)
    assert end is not None
    return encoded[:end.end()]


def _error(protocol: str, message: str) -> Reply:
    """A 400 (never retried) naming the scripting problem, so a broken test fails fast and clearly."""
    return Reply(json.dumps({"error": {"type": "invalid_request_error", "message": message}}).encode(),
                 status=400, content_type="application/json")


__all__ = ["Call", "Turn", "ScriptedModelServer", "responses_sse", "anthropic_sse", "gemini_sse", "user_texts",
           "tool_outputs", "first_user_text"]


def protocol_from_body(body: dict[str, Any]) -> str:
    """Which protocol a parsed request body belongs to (for callable turns)."""
    return "openai" if "input" in body else "anthropic" if "messages" in body else "gemini"


@pytest.fixture
def server():
    """A :class:`ScriptedModelServer`, closed after the test."""
    srv = ScriptedModelServer()
    yield srv
    srv.close()


def system_prompt_of(protocol: str, body: dict[str, Any]) -> str:
    """The system prompt a request carries (Responses ``instructions``, Anthropic ``system``,
    Gemini ``systemInstruction``)."""
    if protocol == "openai":
        return body.get("instructions", "")
    if protocol == "anthropic":
        system = body.get("system", "")
        return system if isinstance(system, str) else "".join(block["text"] for block in system)
    return "".join(part["text"] for part in body.get("systemInstruction", {}).get("parts", []))
