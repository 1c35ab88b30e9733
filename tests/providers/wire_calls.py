"""Replies that call tools, in the wire form of every protocol phi speaks (for tests that need a
server which answers with tool calls whatever the request asked for).

The event shapes follow the recorded streams in ``tests/fixtures/real-streams`` (SOURCES.md there):
Anthropic ``content_block_*`` with ``input_json_delta``, Chat Completions ``tool_calls`` deltas,
Responses ``function_call`` items, Gemini/Vertex ``functionCall`` parts, Bedrock event-stream
frames (``contentBlockStart.start.toolUse``), and the proxy's ``toolcall_*`` events.
"""

from __future__ import annotations

import json
from typing import Any

from phi.providers.eventstream import encode_message
from phi.providers.model_config import ModelConfig

from .conftest import Reply

PROTOCOLS = ["anthropic", "openai", "openai_responses", "azure_openai", "google", "google_vertex", "bedrock",
             "proxy"]

Call = tuple[str, str, dict[str, Any]]  # (id, name, arguments)


def model_for(api: str, url: str) -> ModelConfig:
    return {
        "anthropic": lambda: ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=url),
        "openai": lambda: ModelConfig.openai("gpt-4.1", api_key="sk-test", base_url=url),
        "openai_responses": lambda: ModelConfig.openai_responses("gpt-4.1", api_key="sk-test", base_url=url),
        "azure_openai": lambda: ModelConfig.azure_openai("deploy", api_key="az-test", base_url=url + "/openai/v1"),
        "google": lambda: ModelConfig.google("gemini-test", api_key="g-test", base_url=url),
        "google_vertex": lambda: ModelConfig.vertex("gemini-test", project="p", access_token="ya29.t", base_url=url),
        "bedrock": lambda: ModelConfig.bedrock("us.anthropic.claude-test-v1:0", api_key="br-test", base_url=url),
        "proxy": lambda: ModelConfig.proxy(url + "/stream", "m", token="proxy-token"),
    }[api]()


def _named_sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _data_sse(events: list[Any], separator: str = "\n\n") -> bytes:
    return "".join(f"data: {json.dumps(e)}{separator}" for e in events).encode()


def _anthropic(text: str, calls: list[Call]) -> bytes:
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}]
    index = 0
    if text:
        events += [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                   {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                   {"type": "content_block_stop", "index": 0}]
        index = 1
    for n, (call_id, name, args) in enumerate(calls, index):
        events += [{"type": "content_block_start", "index": n,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}},
                   {"type": "content_block_delta", "index": n,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}},
                   {"type": "content_block_stop", "index": n}]
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use" if calls else "end_turn"},
                "usage": {"output_tokens": 9}},
               {"type": "message_stop"}]
    return _named_sse(events)


def _chat(text: str, calls: list[Call]) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": text or None})]
    for n, (call_id, name, args) in enumerate(calls):
        chunks.append(chunk({"tool_calls": [{"index": n, "id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        chunks.append(chunk({"tool_calls": [{"index": n, "function": {"arguments": json.dumps(args)}}]}))
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    return _data_sse(chunks) + b"data: [DONE]\n\n"


def _responses(text: str, calls: list[Call]) -> bytes:
    head = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-4.1", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": head}]
    output: list[dict[str, Any]] = []
    if text:
        part = {"type": "output_text", "annotations": [], "text": text}
        item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        events += [{"type": "response.output_item.added", "output_index": 0,
                    "item": {**item, "status": "in_progress", "content": []}},
                   {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0,
                    "delta": text},
                   {"type": "response.output_item.done", "output_index": 0, "item": item}]
        output.append(item)
    for n, (call_id, name, args) in enumerate(calls, len(output)):
        item = {"id": f"fc_{n}", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": call_id, "name": name}
        done = {**item, "status": "completed", "arguments": json.dumps(args)}
        events += [{"type": "response.output_item.added", "output_index": n, "item": item},
                   {"type": "response.function_call_arguments.delta", "output_index": n, "item_id": f"fc_{n}",
                    "delta": json.dumps(args)},
                   {"type": "response.output_item.done", "output_index": n, "item": done}]
        output.append(done)
    usage = {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}
    events.append({"type": "response.completed", "response": {**head, "status": "completed", "output": output,
                                                              "usage": usage}})
    return _named_sse(events)


def _gemini(text: str, calls: list[Call]) -> bytes:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": name, "args": args}} for _, name, args in calls]
    return _data_sse([{"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                       "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9,
                                         "totalTokenCount": 14}}], "\r\n\r\n")


def _bedrock(text: str, calls: list[Call]) -> bytes:
    def frame(kind: str, payload: dict[str, Any]) -> bytes:
        return encode_message({":message-type": "event", ":event-type": kind, ":content-type": "application/json"},
                              json.dumps(payload).encode())

    body = frame("messageStart", {"role": "assistant"})
    index = 0
    if text:
        body += frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})
        body += frame("contentBlockStop", {"contentBlockIndex": 0})
        index = 1
    for n, (call_id, name, args) in enumerate(calls, index):
        body += frame("contentBlockStart", {"contentBlockIndex": n,
                                            "start": {"toolUse": {"toolUseId": call_id, "name": name}}})
        body += frame("contentBlockDelta", {"contentBlockIndex": n, "delta": {"toolUse": {"input": json.dumps(args)}}})
        body += frame("contentBlockStop", {"contentBlockIndex": n})
    body += frame("messageStop", {"stopReason": "tool_use" if calls else "end_turn"})
    body += frame("metadata", {"usage": {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14}, "metrics": {}})
    return body


def _proxy(text: str, calls: list[Call]) -> bytes:
    events: list[dict[str, Any]] = [{"type": "start"}]
    index = 0
    if text:
        events += [{"type": "text_start", "contentIndex": 0}, {"type": "text_delta", "contentIndex": 0, "delta": text},
                   {"type": "text_end", "contentIndex": 0}]
        index = 1
    for n, (call_id, name, args) in enumerate(calls, index):
        events += [{"type": "toolcall_start", "contentIndex": n, "id": call_id, "toolName": name},
                   {"type": "toolcall_delta", "contentIndex": n, "delta": json.dumps(args)},
                   {"type": "toolcall_end", "contentIndex": n}]
    events.append({"type": "done", "reason": "toolUse" if calls else "stop", "usage": {"input": 5, "output": 9}})
    return _data_sse(events)


_ENCODERS = {"anthropic": _anthropic, "openai": _chat, "openai_responses": _responses, "azure_openai": _responses,
             "google": _gemini, "google_vertex": _gemini, "bedrock": _bedrock, "proxy": _proxy}


def reply(api: str, text: str = "", calls: list[Call] | None = None) -> Reply:
    """A streamed reply of protocol ``api`` with ``text`` and then the tool ``calls``."""
    body = _ENCODERS[api](text, list(calls or []))
    if api == "bedrock":
        return Reply(body, content_type="application/vnd.amazon.eventstream")
    return Reply(body, content_type="text/event-stream" if api in ("google", "google_vertex")
                 else "text/event-stream; charset=utf-8")
