"""Hostile variants of the real recordings, for the untrusted-field tests (issue 10 item 4).

Each recording of tests/fixtures/real-streams/ is decoded into its events; a mutation replaces one
value somewhere in one event's JSON with something a buggy or hostile server might send (a string
count, a float, a list where text belongs, a huge index, NaN-free numbers of every size, nesting,
``null``...), deletes a key, or repeats an event. The variant is re-encoded in the recording's own
framing and parsed offline with the providers' exact policy (:func:`phi.providers.http.parse_body`).

The rule checked: a parser either raises :class:`ProviderError` or returns a message that
round-trips unchanged through strict JSON (``allow_nan=False``) and ``message_from_json``.
Used by tests/providers/test_untrusted_fields.py and scripts/fuzz/provider_differential.py.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

from phi.providers.eventstream import EventStreamDecoder, encode_message
from phi.providers.sse import iter_sse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real-streams"

HOSTILE: list[Any] = ["", "12", "many", "-3", 0, -5, 7, 1.5, -0.0, 1e308, 2 ** 70, True, False, None, [], ["a", 1],
                      {}, {"type": "text", "text": 3}, [{"type": "text", "text": "hi"}], "\u0000\ud7ff\u2028", "lone \ud800",
                      "$.a[99999999999]", "$" + ".a" * 300, {"a": {"b": {"c": [1, [2, {"d": None}]]}}}]


class Event:
    """One event of a stream: SSE (``name`` + ``data`` text) or event-stream (``headers``)."""

    def __init__(self, name: str | None, data: Any, headers: dict[str, str] | None = None) -> None:
        self.name = name
        self.data = data  # parsed JSON, or the raw text when it is not JSON ("[DONE]")
        self.headers = headers


def family_of(name: str) -> str:
    return name.split("__")[0]


def recordings() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".txt", ".jsonl", ".bin"))


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def events_of(name: str) -> list[Event]:
    raw = (FIXTURES / name).read_bytes()
    if name.endswith(".bin"):
        frames = EventStreamDecoder().feed(raw)
        return [Event(None, _json_or_text(f.payload.decode("utf-8")), {k: str(v) for k, v in f.headers.items()})
                for f in frames]
    if name.endswith(".jsonl"):
        named = not family_of(name) in ("gemini", "vertex")
        out = []
        for line in raw.decode("utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                out.append(Event(data.get("type") if named else None, data))
        return out
    return [Event(e.event if e.event != "message" else None, _json_or_text(e.data)) for e in iter_sse([raw])]


def encode(events: list[Event]) -> bytes:
    parts: list[bytes] = []
    for event in events:
        text = event.data if isinstance(event.data, str) else json.dumps(event.data)
        if event.headers is not None:
            parts.append(encode_message(event.headers, text.encode("utf-8")))
        else:
            head = f"event: {event.name}\n" if event.name else ""
            parts.append(f"{head}data: {text}\n\n".encode("utf-8"))
    return b"".join(parts)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (containers and leaves)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, prefix + (i,))
    return found


def mutate(rng: random.Random, events: list[Event]) -> list[Event]:
    """One hostile change (see the module docstring)."""
    events = [Event(e.name, copy.deepcopy(e.data), e.headers) for e in events]
    candidates = [i for i, e in enumerate(events) if isinstance(e.data, (dict, list))]
    if not candidates:
        return events
    i = rng.choice(candidates)
    if rng.random() < 0.05:
        events.insert(i, Event(events[i].name, copy.deepcopy(events[i].data), events[i].headers))
        return events
    paths = [p for p in _paths(events[i].data) if p]
    if not paths:
        return events
    path = rng.choice(paths)
    parent = events[i].data
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and rng.random() < 0.15:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(HOSTILE))
    return events


def parser_for(name: str, sink: Any) -> Any:
    """The parser a provider uses for this recording's family."""
    from phi.providers.anthropic import AnthropicParser
    from phi.providers.bedrock import ConverseStreamParser
    from phi.providers.google import GeminiParser
    from phi.providers.http import make_builder
    from phi.providers.model_config import ModelConfig
    from phi.providers.openai import ChatCompletionsParser
    from phi.providers.openai_responses import ResponsesParser

    family = family_of(name)
    builder = make_builder(sink, "m", family)
    if family == "anthropic":
        return AnthropicParser(builder)
    if family in ("openai_chat", "openai_compat"):
        return ChatCompletionsParser(builder, ModelConfig.openai_compatible("https://llm.example/v1", "m"))
    if family in ("openai_responses", "azure_responses"):
        return ResponsesParser(builder)
    if family in ("gemini", "vertex"):
        return GeminiParser(builder, "vertex-fc" if family == "vertex" else "google-fc")
    if family == "bedrock":
        return ConverseStreamParser(builder)
    raise AssertionError(name)


def chunks_of(rng: random.Random, body: bytes, sizes: tuple[int, ...] = (7, 64, 4096, 1 << 20)) -> list[bytes]:
    size = rng.choice(sizes)
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


def round_trips(message: Any) -> bool:
    """The message survives strict JSON written as UTF-8 (as ``save_messages`` and checkpoints do)
    and ``message_from_json`` unchanged."""
    from phi.types import message_from_json, message_to_json

    data = json.dumps(message_to_json(message), allow_nan=False, ensure_ascii=False).encode("utf-8")
    return message_from_json(json.loads(data)) == message


def check_variant(name: str, body: bytes, chunks: list[bytes]) -> str:
    """Parse one variant; return "error" / "message", or raise AssertionError on a rule breach."""
    from phi.providers.base import ProviderError
    from phi.providers.http import parse_body

    events: list[Any] = []
    parser = parser_for(name, events.append)
    try:
        message = parse_body(parser, chunks)
    except ProviderError as error:
        assert isinstance(error.message, str) and isinstance(str(error), str)
        return "error"
    assert round_trips(message), message
    for event in events[:: max(1, len(events) // 8)] + events[-1:]:  # a sample of the snapshots
        assert round_trips(event.partial), event.partial
    return "message"
