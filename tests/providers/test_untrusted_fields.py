"""Issue 10 item 4: every field read from a server is type-checked or coerced, and whatever a
parser produces round-trips through the message JSON (see hostile.py for the rule)."""

from __future__ import annotations

import json
import random
import time

import pytest

from phi.providers.base import ErrorKind, ProviderError
from phi.providers.google import GeminiParser
from phi.providers.http import make_builder, parse_body
from phi.providers.model_config import ModelConfig
from phi.providers.openai import ChatCompletionsParser
from phi.types import Usage

from .conftest import Collector
from .hostile import check_variant, chunks_of, encode, events_of, mutate, recordings, round_trips


@pytest.mark.parametrize("name", recordings())
def test_every_recording_round_trips(name) -> None:
    body = encode(events_of(name))
    assert check_variant(name, body, [body]) in ("message", "error")


@pytest.mark.parametrize("name", recordings())
def test_hostile_variants_raise_or_round_trip(name) -> None:
    """A slice of the mutation fuzz (scripts/fuzz/provider_differential.py runs many more)."""
    rng = random.Random(f"issue10-{name}")
    events = events_of(name)
    outcomes = set()
    for _ in range(24):
        body = encode(mutate(rng, events))
        outcomes.add(check_variant(name, body, chunks_of(rng, body)))
    assert outcomes  # every variant was either a ProviderError or a message that round-trips


def chat(*chunks) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def parse_chat(body: bytes):
    parser = ChatCompletionsParser(make_builder(Collector(), "m", "mistral"), ModelConfig.preset("mistral", "m"))
    return parse_body(parser, [body])


@pytest.mark.parametrize("total,want", [("130", 130), (130.0, 130), ("lots", 13), (-4, 13), ([1], 13), (True, 13)])
def test_usage_counts_are_coerced(total, want) -> None:
    body = chat({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]},
                {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3.0, "total_tokens": total}})
    message = parse_chat(body)
    assert message.usage == Usage(10, 3, 0, 0, 0, want) and round_trips(message)
    assert message.usage + message.usage == Usage(20, 6, 0, 0, 0, 2 * want)  # the loop sums usages


def test_mistral_list_valued_content_becomes_text_and_thinking() -> None:
    """Mistral's reasoning models send ``delta.content`` as a list of typed parts."""
    body = chat({"choices": [{"index": 0, "delta": {"content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}]}]}}]},
                {"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "Paris."},
                                                                 {"type": "reference", "ids": [1]}]},
                              "finish_reason": "stop"}]})
    message = parse_chat(body)
    assert message.text == "Paris." and message.content[0].thinking == "Let me think." and round_trips(message)


@pytest.mark.parametrize("content", [7, {"text": "x"}, [{"type": "text", "text": 7}], [3]])
def test_ill_typed_content_is_an_api_error(content) -> None:
    with pytest.raises(ProviderError) as info:
        parse_chat(chat({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": "stop"}]}))
    assert info.value.kind == ErrorKind.API and "malformed" in info.value.message


def test_huge_partial_args_index_is_refused_at_once() -> None:
    """A Vertex jsonPath index of 10^11 used to pad a list until MemoryError."""
    parts = [{"functionCall": {"name": "f", "willContinue": True}},
             {"functionCall": {"partialArgs": [{"jsonPath": "$.a[99999999999]", "stringValue": "x"}],
                               "willContinue": True}}]
    body = b"".join(b"data: " + json.dumps({"candidates": [{"content": {"parts": [p]}}]}).encode() + b"\n\n"
                    for p in parts)
    began = time.monotonic()
    with pytest.raises(ProviderError) as info:
        parse_body(GeminiParser(make_builder(Collector(), "m", "google_vertex"), "vertex-fc"), [body])
    assert time.monotonic() - began < 1 and "index" in info.value.message


@pytest.mark.parametrize("args", ["[" * 5000 + "]" * 5000, '{"a":' * 150 + "1" + "}" * 150, '{"x": NaN}'])
def test_tool_arguments_that_could_not_be_saved_are_kept_raw(args) -> None:
    """Arguments nested too deep (or not JSON: NaN) stay raw text, so the history still saves."""
    body = chat({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "id": "c1", "function": {"name": "f", "arguments": args}}]}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    message = parse_chat(body)
    assert message.tool_calls[0].arguments == {"__raw_arguments": args} and round_trips(message)


def test_deeply_nested_event_is_an_api_error_not_a_crash() -> None:
    body = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    with pytest.raises(ProviderError) as info:
        parse_chat(body)
    assert info.value.kind == ErrorKind.API


def test_lone_surrogate_escapes_become_replacement_characters() -> None:
    """``"\\ud800"`` is valid JSON text but no UTF-8 file can hold the string it decodes to."""
    body = (b'data: {"choices":[{"index":0,"delta":{"content":"a\\ud800b \\ud83d\\ude00"},"finish_reason":"stop"}]}\n\n'
            b"data: [DONE]\n\n")
    message = parse_chat(body)
    assert message.text == "a\ufffdb \U0001f600" and round_trips(message)
